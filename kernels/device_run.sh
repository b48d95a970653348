#!/usr/bin/env bash
# device_run.sh: everything one call to the lent H200 does, in one script (the device keeps
# nothing between calls).  Run from the repository root (a copy of it); results go to $OUT.
#   STEPS: build (both builds), validate --quick, validate (the matrix, CSV), compute-sanitizer
#   memcheck + racecheck (--quick), ncu_traffic.sh (CSV), timing of a few cases.
# Usage: OUT=/some/dir kernels/device_run.sh [steps...]   (default: all)
set -uo pipefail
OUT=${OUT:?set OUT}
STEPS=${*:-"build quick validate memcheck racecheck ncu timing"}
export FLASHLAB_COMMIT=${FLASHLAB_COMMIT:-$(cat .commit 2>/dev/null || echo unknown)}
log() { echo "=== $(date -u +%H:%M:%S) $*"; }
has() { [[ " $STEPS " == *" $1 "* ]]; }
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer /opt/nvidia/compute-sanitizer/compute-sanitizer 2>/dev/null | head -1)
{
  log "machine"; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
  nvcc --version | tail -2; cmake --version | head -1; echo "sanitizer: $SAN"
} 2>&1 | tee "$OUT/machine.txt"
if has build; then
  log build
  (cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && time cmake --build build -j16) >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
  grep -E 'warning|error' "$OUT/build.log" | head -20
fi
B=build
if has quick; then log "validate --quick"; timeout 300 $B/flashlab-gpu validate --quick --csv "$OUT/gpu_quick.csv" 2>&1 | tail -12; fi
if has validate; then
  log "validate (matrix)"
  timeout 420 $B/flashlab-gpu validate --csv "$OUT/gpu_validate.csv" >"$OUT/validate.log" 2>&1; echo "rc=$?"
  grep -v ' ok$' "$OUT/validate.log" | head -30; tail -2 "$OUT/validate.log"
fi
if has memcheck; then
  log memcheck
  timeout 420 "$SAN" --tool memcheck --leak-check full $B/flashlab-gpu validate --quick >"$OUT/memcheck.log" 2>&1; echo "rc=$?"
  tail -4 "$OUT/memcheck.log"
fi
if has racecheck; then
  log racecheck
  timeout 420 "$SAN" --tool racecheck $B/flashlab-gpu validate --quick >"$OUT/racecheck.log" 2>&1; echo "rc=$?"
  tail -4 "$OUT/racecheck.log"
fi
if has ncu; then
  log ncu
  timeout 500 scripts/ncu_traffic.sh $B "$OUT/gpu_ncu.csv" ${NCU_CONF:-} 2>&1 | tail -30
fi
if has timing; then
  log timing
  for a in "flash2 --Br 64 --Bc 64" "flash2 --Br 128 --Bc 64" "flash1 --Br 64 --Bc 128" "standard --Br 64 --Bc 64"; do
    timeout 120 $B/flashlab-gpu-timing run --algo $a --dtype fp16 --N 4096 --d 128 --reps 20 --no-check | grep -E 'median|run '
  done 2>&1 | tee "$OUT/timing.txt"
fi
log done
