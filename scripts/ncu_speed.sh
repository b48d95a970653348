#!/usr/bin/env bash
# ncu_speed.sh: Nsight Compute's view of why kernels that move the same bytes run at different
# speeds (lab 10): versions 7, 10 and 12 of the flash2 forward on the same tiles, the same shape.
#
# usage: scripts/ncu_speed.sh LIB FLASHLAB_GPU OUT_DIR [CONFIG_FILE]
#   LIB           libflashlab_kernels.so (the timing build: counters compiled out)
#   FLASHLAB_GPU  the counters build, for each configuration's counted bytes (one head)
#   OUT_DIR       receives raw_<version>_<d>.csv (ncu --page raw, one launch), counters.txt,
#                 query.txt (the metric names this ncu knows), command.txt
#   CONFIG_FILE   lines "version dtype d Br Bc N nbh causal" (default kernels/ncu_speed.conf)
#
# Each configuration runs bench/run_forward.py (3 launches; ncu profiles the third, after two
# warm-ups) under ncu --cache-control all --clock-control none (caches flushed before the
# launch, clocks as found, never set), with the sections that explain a runtime: SpeedOfLight,
# ComputeWorkloadAnalysis (pipe utilisation), WarpStateStats (stall reasons), SchedulerStats
# (issue slots), InstructionStats, Occupancy, MemoryWorkloadAnalysis, and the traffic metrics of
# scripts/ncu_traffic.sh, plus every tensor-pipe cycles metric this ncu lists.
# scripts/ncu_speed_table.py turns the raw files into figures/data/gpu_ncu_same_bytes.csv.
set -euo pipefail
LIB=${1:?usage: scripts/ncu_speed.sh LIB FLASHLAB_GPU OUT_DIR [CONFIG_FILE]}
GPU=${2:?usage: scripts/ncu_speed.sh LIB FLASHLAB_GPU OUT_DIR [CONFIG_FILE]}
OUT=${3:?usage: scripts/ncu_speed.sh LIB FLASHLAB_GPU OUT_DIR [CONFIG_FILE]}
HERE=$(cd "$(dirname "$0")/.." && pwd)
CONF=${4:-$HERE/kernels/ncu_speed.conf}
# shellcheck source=scripts/ncu_common.sh
. "$HERE/scripts/ncu_common.sh"
ncu_find ncu_speed.sh
[ -f "$CONF" ] || { echo "ncu_speed.sh: $CONF: no such configuration file" >&2; exit 2; }
mkdir -p "$OUT"
"$NCU" --query-metrics >"$OUT/query.txt" 2>&1 || true
TENSOR=$(grep -o '^ *sm__pipe_tensor[a-z0-9_]*cycles_active\b' "$OUT/query.txt" | tr -d ' ' | sort -u |
         sed 's/$/.avg.pct_of_peak_sustained_active/' | paste -sd, - || true)
MET=l1tex__m_xbar2l1tex_read_sectors_mem_lg_op_ld.sum,l1tex__m_xbar2l1tex_read_sectors.sum,lts__t_sectors_srcunit_tex_op_read.sum
MET=$MET,lts__t_sectors_srcunit_tex_op_write.sum,dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed.sum
[ -n "$TENSOR" ] && MET=$MET,$TENSOR
{
  echo "commit: ${FLASHLAB_COMMIT:-unknown}"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
  echo "ncu: $("$NCU" --version | tail -1)"
  echo "ncu options: --cache-control all --clock-control none --launch-skip 2 --launch-count 1 --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section InstructionStats --section Occupancy --section MemoryWorkloadAnalysis --metrics $MET --print-units base --csv --page raw"
  echo "command: $0 $*"
} >"$OUT/command.txt"
: >"$OUT/counters.txt"
grep -v -E '^\s*(#|$)' "$CONF" | while read -r ver dtype d Br Bc N nbh causal; do
  name=v${ver}_d${d}_${Br}x${Bc}_N${N}_c${causal}
  args="run --version $ver --algo flash2 --dtype $dtype --N $N --d $d --Br $Br --Bc $Bc --no-check"
  [ "$causal" = 1 ] && args="$args --causal"
  echo "$name $("$GPU" $args | grep '^bytes:')" >>"$OUT/counters.txt" || echo "ncu_speed.sh: counters run failed: $args" >&2
  "$NCU" --cache-control all --clock-control none -k 'regex:^fl_(fast|wg|ws)_fwd' --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
    --section InstructionStats --section Occupancy --section MemoryWorkloadAnalysis --metrics "$MET" \
    --print-units base --csv --page raw \
    python3 "$HERE/bench/run_forward.py" "$LIB" $ver $dtype $d $Br $Bc $N $nbh $causal 3 >"$OUT/raw_$name.csv" 2>"$OUT/raw_$name.err" ||
    echo "ncu_speed.sh: ncu failed on $name (see raw_$name.err)" >&2
  echo "ncu_speed.sh: $name: $(grep -c '^"' "$OUT/raw_$name.csv" || true) csv lines"
done
