#!/usr/bin/env bash
# fig2.sh BUILD OUT_CSV: the paper's Figure 2 on the GPU machine (bench/fig2.py): one pass of
# every configuration under Nsight Compute (HBM and SM<->L2 bytes of each whole launch), then the
# timed pass with the model's and the counters' bytes, merged into OUT_CSV.
set -uo pipefail
B=${1:?build dir}; CSV=${2:?output csv}
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | sort | tail -1)
TMP=$(mktemp -d)
if [ -n "$NCU" ]; then
  "$NCU" --cache-control all --clock-control none --kernel-name regex:'^fl_' --csv --page raw \
    --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,gpu__time_duration.sum \
    python3 bench/fig2.py --lib "$B/libflashlab_kernels.so" --ncu-pass >"$TMP/ncu.csv" 2>"$TMP/ncu.err" || { echo "fig2: ncu failed"; tail -5 "$TMP/ncu.err"; }
  cp "$TMP/ncu.csv" "${CSV%.csv}_ncu_raw.csv"
fi
python3 bench/fig2.py --lib "$B/libflashlab_kernels.so" --flashlab "$B/flashlab" --gpu "$B/flashlab-gpu" \
  --ncu-csv "$TMP/ncu.csv" --csv "$CSV"
