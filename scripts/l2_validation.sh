#!/usr/bin/env bash
# l2_validation.sh: the three-level model (flashlab l2) against the DRAM reads ncu measured on
# the H200 (figures/data/gpu_ncu.csv, gpu_ncu_bwd.csv): one row per measured configuration,
# predicted vs measured dram__bytes_read.sum and the error.  One set of machine parameters for
# every row (60 MiB, 32-byte sectors, LRU, 132 SMs, occupancy from shared memory and threads).
#   usage: scripts/l2_validation.sh [BUILD_DIR] > figures/data/l2_validation.csv
# Writes to stdout; docs/l2_model.md explains the columns.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cli=${1:-$root/build}/flashlab
data=$root/figures/data
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
prov() { grep -m1 '^# commit:' "$1" | sed 's/# commit: //'; }

echo "# l2_validation.sh: flashlab l2 (three-level model: HBM, L2, SRAM) vs ncu dram__bytes_read.sum on the H200"
echo "# measured: figures/data/gpu_ncu.csv (kernels at commit $(prov "$data/gpu_ncu.csv")), figures/data/gpu_ncu_bwd.csv (commit $(prov "$data/gpu_ncu_bwd.csv")); ncu --cache-control all (L2 emptied before each kernel)"
echo "# predicted: flashlab l2 --algo A --pass P --N N --d D --Br BR --Bc BC --dtype T --format csv (defaults: --l2-mb 60 --sector 32 --sms 132, occupancy rule G3), at commit $commit, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "# error_pct = 100 (predicted - measured) / measured; two_level_pct: the same for the two-level model's HBM reads (model_read_B) taken as DRAM reads"
echo "# modelled: every row (standard, flash1, flash2; forward and backward; docs/l2_model.md)"
echo "algo,pass,dtype,N,d,Br,Bc,measured_dram_read_B,predicted_dram_read_B,error_pct,model_read_B,two_level_pct,measured_sm_read_B,predicted_sm_read_B,ctas_per_sm,waves"
seen=""
for f in "$data/gpu_ncu.csv" "$data/gpu_ncu_bwd.csv"; do
  while IFS=, read -r algo pass dtype N d Br Bc Meff mr mw cr cw polls l2r l2w dr dw smr rest; do
    key="$algo,$pass,$dtype,$N,$d,$Br,$Bc"
    case " $seen " in *" $key "*) continue ;; esac   # a configuration measured twice: its first row
    seen="$seen $key"
    out=$("$cli" l2 --algo "$algo" --pass "$pass" --N "$N" --d "$d" --Br "$Br" --Bc "$Bc" --dtype "$dtype" --format csv)
    per=$(echo "$out" | grep -v '^#' | awk -F, 'NR>1 && $8!="total" {s=s (s?"/":"") $10; w=w (w?"/":"") $11} END{print s "," w}')
    tot=$(echo "$out" | awk -F, '$8=="total"{print $14 "," $13}')
    pd=${tot%,*}; ps=${tot#*,}
    awk -v k="$key" -v m="$dr" -v p="$pd" -v mr="$mr" -v smr="$smr" -v ps="$ps" -v per="$per" \
      'BEGIN{printf "%s,%s,%s,%.1f,%s,%.1f,%s,%s,%s\n", k, m, p, 100*(p-m)/m, mr, 100*(mr-m)/m, smr, ps, per}'
  done < <(grep -v '^#' "$f" | tail -n +2)
done
