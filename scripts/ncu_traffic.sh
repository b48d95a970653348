#!/usr/bin/env bash
# ncu_traffic.sh: hardware traffic of the kernels, read with Nsight Compute, beside the model.
#
# usage: scripts/ncu_traffic.sh BUILD_DIR OUT_CSV [CONFIG_FILE]
#
# For each configuration (algo dtype N d Br Bc [bwd]; one per line of CONFIG_FILE, or the
# built-in list below) it
#   1. runs the counters build (BUILD_DIR/flashlab-gpu run --no-check) to get the model's bytes
#      (fl_run) and the byte counters' bytes, read and written;
#   2. runs the timing build (counters compiled out) under ncu with
#        --cache-control all --clock-control none  (caches flushed before each kernel; clocks as
#                                                    found: we never change them)
#      collecting, for every kernel of the schedule (names fl_*), summed over the kernels:
#        lts__t_sectors_srcunit_tex_op_read.sum  x 32 B   SM <- L2 reads (loads, TMA alike)
#        lts__t_sectors_srcunit_tex_op_write.sum x 32 B   SM -> L2 writes
#        dram__bytes_read.sum, dram__bytes_write.sum      HBM traffic (L2 misses, write-backs)
#        l1tex__m_xbar2l1tex_read_sectors_mem_lg_op_ld.sum x 32 B   sectors the SMs received from
#                                                   L2 for their loads (the SM end of the link; the
#                                                   L2's request coalescer can serve several SMs'
#                                                   identical requests with one L2 lookup, which the
#                                                   lts__ counter then counts once)
# and writes one CSV row with the ratios to the model.  Expect the SM<->L2 bytes to equal the
# model up to 32-byte sector rounding (rows that do not start on a sector boundary); DRAM bytes
# are the model's only when the data re-read is far larger than the 60 MB L2 (see
# docs/validation.md).  ncu may live under /opt/nvidia/nsight-compute/*/ncu (not on PATH).
set -euo pipefail
BUILD=${1:?usage: scripts/ncu_traffic.sh BUILD_DIR OUT_CSV [CONFIG_FILE]}
OUT=${2:?usage: scripts/ncu_traffic.sh BUILD_DIR OUT_CSV [CONFIG_FILE]}
CONF=${3:-}
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | sort | tail -1 || true)
if [ -z "$NCU" ] || [ ! -x "$NCU" ]; then
  echo "ncu_traffic.sh: Nsight Compute (ncu) not found on PATH or under /opt/nvidia/nsight-compute" >&2
  exit 77
fi
METRICS=lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,dram__bytes_read.sum,dram__bytes_write.sum,l1tex__m_xbar2l1tex_read_sectors_mem_lg_op_ld.sum

configs() {
  if [ -n "$CONF" ]; then grep -v '^#' "$CONF"; return; fi
  # the M_eff sweep at N = 4096, d = 64, fp16 (the headline figure), every schedule and tile
  for t in "16 16" "32 32" "64 64" "128 64"; do echo "flash2 fp16 4096 64 $t"; done
  for t in "16 16" "32 32" "64 64" "64 128"; do echo "flash1 fp16 4096 64 $t"; done
  for t in "16 16" "32 32" "64 64" "64 128"; do echo "standard fp16 4096 64 $t"; done
  # ragged rows (N = 1000: rows of S, P start off sector boundaries)
  echo "standard fp16 1000 64 64 64"
  echo "flash2 fp16 1000 64 64 64"
  # well above the 60 MB L2: S and P of 16384^2 fp16 are 512 MB each; K, V of 131072 x 128 fp32
  # are 64 MB each
  echo "standard fp16 16384 64 64 64"
  echo "flash2 fp32 131072 128 64 64"
  # the backward (its kernels only: the forward that saves O and L runs first, not profiled)
  echo "flash2 fp16 4096 64 32 32 bwd"
  echo "flash2 fp16 4096 64 64 64 bwd"
  echo "flash1 fp16 4096 64 32 32 bwd"
  echo "standard fp16 4096 64 64 64 bwd"
}

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
{
  echo "# ncu_traffic.sh: Nsight Compute SM<->L2 and DRAM bytes of the kernels vs the model (fl_run) and the byte counters"
  echo "# commit: ${FLASHLAB_COMMIT:-unknown}"
  echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "# gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
  echo "# ncu: $("$NCU" --version | tail -1)"
  echo "# ncu options: --cache-control all --clock-control none --kernel-name regex:^fl_ --metrics $METRICS --print-units base (bwd rows: only the backward's kernels)"
  echo "# l2_* = lts__t_sectors_srcunit_tex_op_* x 32 B; sm_read_B = l1tex__m_xbar2l1tex_read_sectors_mem_lg_op_ld x 32 B; sums over the schedule's kernels of one run (flashlab-gpu-timing run --no-check)"
  echo "# ratios are to the byte counters' bytes, which equal the model's element for element (flashlab-gpu validate); they equal the model's bytes too except flash1's fp32 running O (model: storage type)"
  echo "# flag_polls: flash1's hand-off polls in the counters run (4 B each, one 32 B sector each at L2; not in the model; their number varies run to run)"
  echo "algo,pass,dtype,N,d,Br,Bc,M_eff,model_read_B,model_write_B,counter_read_B,counter_write_B,flag_polls,l2_read_B,l2_write_B,dram_read_B,dram_write_B,sm_read_B,l2_read_ratio,l2_write_ratio,dram_read_ratio,dram_write_ratio,sm_read_ratio"
} >"$OUT.tmp"

configs | while read -r algo dtype N d Br Bc pass; do
  [ -z "$algo" ] && continue
  args="run --algo $algo --dtype $dtype --N $N --d $d --Br $Br --Bc $Bc --no-check"
  kre='regex:^fl_'
  if [ "${pass:-fwd}" = bwd ]; then # the backward's kernels only (not the forward run first)
    args="$args --bwd"
    case $algo in
      flash2) kre='regex:^fl_(flash2_bwd_pre|flash_bwd)' ;;
      flash1) kre='regex:^fl_(flash1_bwd_init|flash_bwd)' ;;
      standard) kre='regex:^fl_std_(nt|nn|dsoftmax)' ;;
    esac
  else pass=fwd; fi
  line=$("$BUILD/flashlab-gpu" $args | grep '^bytes:') || { echo "ncu_traffic.sh: counters run failed: $args" >&2; exit 1; }
  "$NCU" --cache-control all --clock-control none --kernel-name "$kre" --metrics "$METRICS" \
    --print-units base --csv --page raw "$BUILD/flashlab-gpu-timing" $args >"$TMP/ncu.csv" 2>"$TMP/ncu.err" ||
    { echo "ncu_traffic.sh: ncu failed on $args:" >&2; cat "$TMP/ncu.err" >&2; exit 1; }
  python3 - "$TMP/ncu.csv" "$line" "$algo,$pass,$dtype,$N,$d,$Br,$Bc" >>"$OUT.tmp" <<'EOF'
import csv, sys
path, line, key = sys.argv[1], sys.argv[2], sys.argv[3]
kv = dict(x.split('=') for x in line.split()[1:])
rows = [r for r in csv.reader(l for l in open(path) if l.startswith('"'))]
head = rows[0]
col = {m: head.index(m) for m in ('lts__t_sectors_srcunit_tex_op_read.sum', 'lts__t_sectors_srcunit_tex_op_write.sum',
                                  'dram__bytes_read.sum', 'dram__bytes_write.sum',
                                  'l1tex__m_xbar2l1tex_read_sectors_mem_lg_op_ld.sum')}
tot = dict.fromkeys(col, 0.0)
n = 0
for r in rows[1:]:
    try:
        vals = {m: float(r[c].replace(',', '')) for m, c in col.items()}
    except ValueError:
        continue  # the units row
    n += 1
    for m in col: tot[m] += vals[m]
if n == 0:
    sys.exit('ncu_traffic.sh: no kernel rows in the ncu output')
l2r = tot['lts__t_sectors_srcunit_tex_op_read.sum'] * 32
l2w = tot['lts__t_sectors_srcunit_tex_op_write.sum'] * 32
dr, dw = tot['dram__bytes_read.sum'], tot['dram__bytes_write.sum']
smr = tot['l1tex__m_xbar2l1tex_read_sectors_mem_lg_op_ld.sum'] * 32
cr, cw = int(kv['counter_read']), int(kv['counter_write'])
print(f"{key},{kv['M_eff']},{kv['model_read']},{kv['model_write']},{cr},{cw},{kv['polls']},{l2r:.0f},{l2w:.0f},{dr:.0f},{dw:.0f},{smr:.0f},"
      f"{l2r/cr:.6f},{l2w/cw:.6f},{dr/cr:.6f},{dw/cw:.6f},{smr/cr:.6f}")
EOF
  tail -1 "$OUT.tmp"
done
mv "$OUT.tmp" "$OUT"
