#!/usr/bin/env bash
# device_run.sh: everything one call to the lent GPU machine does, in one script (the machine
# keeps nothing between calls).  Run it from a directory holding the binaries built on the build
# machine (nothing is compiled on the GPU machine) and the scripts they need:
#
#   bin/flashlab-gpu          counters build, machine code for sm_75 ... sm_90a
#   bin/flashlab-gpu-ptx80    counters build, compute_80 PTX only (compiled by the driver at load)
#   bin/flashlab-gpu-timing   counters compiled out (Nsight Compute)
#   bin/libflashlab_kernels.so, bin/flashlab   (the benchmark and the model's bytes)
#   kernels/, scripts/ncu_traffic.sh, bench/, notebooks/src/lab6_real_kernels.py, .commit
#
# Usage: OUT=/some/dir kernels/device_run.sh [steps...]
# Steps (default: all, in this order; each bounded by a timeout, results under $OUT):
#   machine   GPU, driver, tools; `flashlab-gpu list` natively and under CUDA_FORCE_PTX_JIT=1
#   validate  the full validation matrix, one process per version, natively (sm_90a machine code),
#             and at the same time under CUDA_FORCE_PTX_JIT=1 with the compute_80 PTX binary,
#             and lab 6's live cell (kernels/run_lab6_live.py)
#   ncu       scripts/ncu_traffic.sh over kernels/ncu_versions.conf: Nsight Compute against the
#             counters for every version, forward and backward
#   bench     versions 8-11 (whose code or registers changed) against SDPA FA2 (bench/gpu_sdpa.py)
#   memcheck  compute-sanitizer memcheck of versions 8 and 11 (fp16, d = 64, quick)
# Everything is written under $WORK and packed into $OUT/results.tgz after every step (the call
# returns at most 8 files, and a step cut off by the call's time limit keeps what came before).
set -uo pipefail
OUT=${OUT:?set OUT}
B=${B:-bin}
STEPS=${*:-"machine validate ncu bench memcheck"}
WORK=${WORK:-/tmp/flashlab-device}
L=$WORK/logs; mkdir -p "$L" "$WORK/native" "$WORK/jit"
pack() { tar -C "$WORK" -czf "$OUT/results.tgz.tmp" . && mv "$OUT/results.tgz.tmp" "$OUT/results.tgz"; }
export FLASHLAB_COMMIT=${FLASHLAB_COMMIT:-$(cat .commit 2>/dev/null || echo unknown)}
export PYTHONUNBUFFERED=1
log() { echo "=== $(date -u +%H:%M:%S) $*"; }
has() { [[ " $STEPS " == *" $1 "* ]]; }
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | sort | tail -1)
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer /opt/nvidia/compute-sanitizer/compute-sanitizer 2>/dev/null | head -1)
VERSIONS=${VERSIONS:-"1 2 3 4 5 6 7 8 9 10 11 12 13"}

if has machine; then
  log machine
  { nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
    nvcc --version 2>/dev/null | tail -2; echo "ncu: $NCU"; echo "sanitizer: $SAN"; ldd "$B/flashlab-gpu" | grep -v -E 'linux-vdso|ld-linux'
    "$B/flashlab-gpu" list
    echo "--- the compute_80 PTX binary, CUDA_FORCE_PTX_JIT=1:"; CUDA_FORCE_PTX_JIT=1 "$B/flashlab-gpu-ptx80" list
  } >"$L/machine.txt" 2>&1
  head -24 "$L/machine.txt"; grep -A14 'compute_80 PTX' "$L/machine.txt" | head -16
  pack
fi

if has validate; then
  log "validate: natively and under CUDA_FORCE_PTX_JIT=1 (compute_80 PTX), one process a version; lab 6 live"
  for v in $VERSIONS; do
    (timeout ${VAL_TIMEOUT:-270} "$B/flashlab-gpu" validate --version $v --csv "$WORK/native/gpu_validate_v$v.csv" \
       >"$L/native_v$v.log" 2>&1; echo "native v$v rc=$?" >>"$L/rc.txt") &
    (CUDA_FORCE_PTX_JIT=1 timeout ${VAL_TIMEOUT:-270} "$B/flashlab-gpu-ptx80" validate --version $v \
       --csv "$WORK/jit/gpu_validate_v$v.csv" >"$L/jit_v$v.log" 2>&1; echo "jit v$v rc=$?" >>"$L/rc.txt") &
  done
  (FLASHLAB_GPU=$PWD/$B/flashlab-gpu timeout ${VAL_TIMEOUT:-270} python3 kernels/run_lab6_live.py \
     notebooks/src/lab6_real_kernels.py >"$WORK/lab6_live.txt" 2>&1; echo "lab6 rc=$?" >>"$L/rc.txt") &
  wait
  sort -V "$L/rc.txt"
  for f in "$L"/native_v*.log "$L"/jit_v*.log; do echo "$(basename $f .log): $(tail -1 $f)"; done | sort -V
  grep -h -v ' ok$' "$L"/native_v*.log "$L"/jit_v*.log | grep -v -E '^flashlab-gpu validate:|skipped \(does not run' | head -20
  tail -4 "$WORK/lab6_live.txt"
  pack
fi

if has ncu; then
  log "ncu: every version against its counters"
  if [ -n "$NCU" ]; then
    timeout ${NCU_TIMEOUT:-170} scripts/ncu_traffic.sh "$B" "$WORK/gpu_ncu_versions.csv" kernels/ncu_versions.conf \
      >"$L/ncu.log" 2>&1; echo "ncu rc=$?"; tail -16 "$L/ncu.log"
  else
    echo "no ncu"
  fi
  pack
fi

if has bench; then
  log "bench: versions 8-11 against SDPA FA2"
  timeout ${BENCH_TIMEOUT:-60} python3 bench/gpu_sdpa.py --lib "$B/libflashlab_kernels.so" --flashlab "$B/flashlab" \
    --csv "$WORK/gpu_sdpa_v8_v9_v10_v11.csv" --quick --backends sdpa-fa2 --only-versions 8,9,10,11 --reps 20 \
    >"$L/bench.log" 2>&1; echo "bench rc=$?"; sed -n '/^shape/,$p' "$L/bench.log" | head -12
  pack
fi

if has memcheck && [ -n "$SAN" ]; then
  log "memcheck: versions 8, 11"
  for v in 8 11; do
    timeout ${SAN_TIMEOUT:-30} "$SAN" --tool memcheck "$B/flashlab-gpu" validate --quick --version $v --dtype fp16 --d 64 \
      >"$L/memcheck_v$v.log" 2>&1
    echo "memcheck v$v rc=$?: $(grep -E 'ERROR SUMMARY' "$L/memcheck_v$v.log" | tail -1)"
  done
fi
log done
pack
