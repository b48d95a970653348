#!/usr/bin/env bash
# device_run.sh: everything one call to the lent H200 does, in one script (the device keeps
# nothing between calls).  Run from the repository root (a copy of it); results go to $OUT.
#   STEPS: build (both builds), validate --quick, validate (the matrix, CSV), compute-sanitizer
#   memcheck + racecheck (--quick), ncu_traffic.sh (CSV), timing of a few cases;
#   issue 7 (the fast versions 7-9): fastbuild (harness with counters, libflashlab_kernels.so,
#   the CLI only), fastquick, fastval (their matrix, CSV), fastsan (memcheck + racecheck of them),
#   bench (bench/gpu_sdpa.py, CSV), fig2 (the GPT-2-medium table: bench/fig2.sh, CSV).
# Usage: OUT=/some/dir FLASHLAB_COMMIT=<hash> kernels/device_run.sh [steps...]   (default: all)
# (pass the commit: the git HEAD of the device's copy is not this checkout's; the CSVs record it)
set -uo pipefail
OUT=${OUT:?set OUT}
STEPS=${*:-"build quick validate memcheck racecheck ncu timing"}
L=$OUT/logs; mkdir -p "$L"   # packed into $OUT/logs.tgz at the end (8 files come back at most)
export FLASHLAB_COMMIT=${FLASHLAB_COMMIT:-$(cat .commit 2>/dev/null || echo unknown)}
log() { echo "=== $(date -u +%H:%M:%S) $*"; }
has() { [[ " $STEPS " == *" $1 "* ]]; }
# the device image has no GSL (sim/ needs it): a copy of the build machine's static GSL may travel
# in .gsl/ or .devwork/.gsl/ (include/, lib/); sets GSLOPT, the cmake options that use it
gsl_opts() {
  [ -d .gsl ] || { [ -d .devwork/.gsl ] && ln -s .devwork/.gsl .gsl; }
  GSLOPT=; [ -d .gsl ] && GSLOPT="-DGSL_ROOT_DIR=$PWD/.gsl -DGSL_INCLUDE_DIR=$PWD/.gsl/include -DGSL_LIBRARY=$PWD/.gsl/lib/libgsl.a -DGSL_CBLAS_LIBRARY=$PWD/.gsl/lib/libgslcblas.a"
}
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer /opt/nvidia/compute-sanitizer/compute-sanitizer 2>/dev/null | head -1)
{
  log "machine"; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
  nvcc --version | tail -2; cmake --version | head -1; echo "sanitizer: $SAN"
} 2>&1 | tee "$L/machine.txt"
if has build; then
  log build
  gsl_opts
  (cmake -S . -B build -DCMAKE_BUILD_TYPE=Release $GSLOPT && time cmake --build build -j16) >"$L/build.log" 2>&1 || { tail -40 "$L/build.log"; exit 1; }
  grep -E 'warning|error' "$L/build.log" | head -20
fi
if has fastbuild; then
  log fastbuild
  gsl_opts
  (cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DFLASHLAB_GPU_TIMING=OFF $GSLOPT &&
   time cmake --build build -j16 --target flashlab_gpu flashlab_kernels flashlab_cli) >"$L/build.log" 2>&1 || { tail -40 "$L/build.log"; exit 1; }
  grep -E 'warning|error' "$L/build.log" | head -20
fi
B=build
if has fastquick; then
  log "fast: validate --quick"
  : >"$L/failed_versions"   # versions that fail here are left out of the benchmark
  for v in ${FAST_VERSIONS:-7 8 9 10}; do
    timeout 120 $B/flashlab-gpu validate --quick --version $v --csv "$L/fast_quick_v$v.csv" >"$L/fast_quick_v$v.log" 2>&1
    rc=$?; echo "v$v rc=$rc: $(tail -1 "$L/fast_quick_v$v.log")"; grep -v ' ok$' "$L/fast_quick_v$v.log" | head -6
    [ $rc -eq 0 ] || echo -n "$v," >>"$L/failed_versions"
  done
fi
if has fastval; then
  log "fast: validate (matrix)"
  for v in ${FAST_VERSIONS:-7 8 9 10}; do
    timeout 400 $B/flashlab-gpu validate --version $v --csv "$OUT/gpu_validate_v$v.csv" >"$L/fastval_v$v.log" 2>&1; echo "v$v rc=$?"
    grep -v ' ok$' "$L/fastval_v$v.log" | head -10; tail -1 "$L/fastval_v$v.log"
  done
fi
if has fastsan; then
  log "fast: memcheck, racecheck"
  for t in ${SAN_TOOLS:-memcheck racecheck}; do
    for v in ${FAST_VERSIONS:-7 8 9 10}; do
      timeout ${SAN_TIMEOUT:-90} "$SAN" --tool $t $B/flashlab-gpu validate --quick --version $v --dtype fp16 --d 64 >"$L/fast_${t}_v$v.log" 2>&1
      echo "$t v$v rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$L/fast_${t}_v$v.log" | tail -1)"
    done
  done
fi
if has bench; then
  log "bench: ours vs SDPA"
  SKIP=$(cat "$L/failed_versions" 2>/dev/null)
  PYTHONUNBUFFERED=1 timeout ${BENCH_TIMEOUT:-500} python3 bench/gpu_sdpa.py --lib $B/libflashlab_kernels.so --flashlab $B/flashlab \
    --csv "$OUT/gpu_sdpa.csv" ${SKIP:+--skip-versions ${SKIP%,}} ${BENCH_ARGS:-} >"$L/bench.log" 2>&1; echo "bench rc=$?"
  grep -E 'gpu_sdpa:|Error|error' "$L/bench.log" | head -10; sed -n '/^shape/,$p' "$L/bench.log"
fi
if has profile; then  # ours vs SDPA FA2 under ncu, side by side: forward, then backward
  log "profile: ours vs FA2"
  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | sort | tail -1)
  # PROFILE_ARGS: one pair's arguments of bench/profile_pair.py (default: the two below)
  if [ -n "${PROFILE_ARGS:-}" ]; then pairs=("$PROFILE_ARGS"); else pairs=("--tile 128x64" "--bwd --tile 64x64"); fi
  for pa in "${pairs[@]}"; do
    f=$OUT/ncu_pair$(echo "$pa" | tr -d ' -').txt
    # PROFILE_FILTER: ncu's kernel selection (default: ours and FA2's by name)
    filter=(${PROFILE_FILTER:-}); [ ${#filter[@]} -gt 0 ] || filter=(--kernel-name 'regex:^fl_fast_(fwd|bwd)$|flash_fwd_kernel|flash_bwd_dq_dk_dv')
    timeout 300 "$NCU" --cache-control all --clock-control none "${filter[@]}" \
      --section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats --section LaunchStats \
      --section Occupancy --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section SourceCounters \
      python3 bench/profile_pair.py --lib $B/libflashlab_kernels.so $pa >"$f" 2>&1; echo "ncu $pa rc=$?"
    grep -E '^  [a-zA-Z_]|Duration|Registers Per|Achieved Occ|Theoretical Occ|Executed Ipc A|Issue Slots Busy|Compute \(SM\) Th|No Eligible|Local|Shared Memory Config' "$f" | head -40
  done
  (command -v cuobjdump >/dev/null && cuobjdump -sass $B/libflashlab_kernels.so > "$L/sass.txt") 2>&1
fi
if has v3quick; then  # version 3 after the Nq > Nk bottom-right fix (aab0ce7), never re-measured before
  log "v3 quick (flash2 forward, Nq != Nk)"
  timeout 200 $B/flashlab-gpu validate --quick --version 3 --csv "$L/v3_quick.csv" 2>&1 | grep -v ' ok$' | tail -5
fi
if has fig2; then
  log "fig2: GPT-2 medium"
  timeout 400 bash bench/fig2.sh $B "$OUT/gpu_fig2.csv" >"$L/fig2.log" 2>&1; echo "fig2 rc=$?"; tail -25 "$L/fig2.log"
fi
if has quick; then log "validate --quick"; timeout 300 $B/flashlab-gpu validate --quick --csv "$OUT/gpu_quick.csv" 2>&1 | tail -12; fi
if has validate; then
  log "validate (matrix)"
  timeout 420 $B/flashlab-gpu validate --csv "$OUT/gpu_validate.csv" >"$L/validate.log" 2>&1; echo "rc=$?"
  grep -v ' ok$' "$L/validate.log" | head -30; tail -2 "$L/validate.log"
fi
if has memcheck; then
  log memcheck
  timeout 420 "$SAN" --tool memcheck --leak-check full $B/flashlab-gpu validate --quick >"$L/memcheck.log" 2>&1; echo "rc=$?"
  tail -4 "$L/memcheck.log"
fi
if has racecheck; then
  log racecheck
  timeout 420 "$SAN" --tool racecheck $B/flashlab-gpu validate --quick ${RACE_ONLY:-} >"$L/racecheck.log" 2>&1; echo "rc=$?"
  tail -4 "$L/racecheck.log"
fi
if has ncu; then
  log ncu
  timeout 500 scripts/ncu_traffic.sh $B "$OUT/gpu_ncu.csv" ${NCU_CONF:-} 2>&1 | tail -30
fi
if has diag; then  # why SM<->L2 sectors differ from the counters: L1 view and L2 request coalescing
  log diag
  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | sort | tail -1)
  "$NCU" --query-metrics --chip gh100 >"$L/ncu_metrics_gh100.txt" 2>&1 || true
  grep -E '(lrc__|lts__t_sectors_srcunit_ltcfabric|l1tex__m_xbar2l1tex_read_sectors|l1tex__t_sectors_pipe_lsu_mem_global_op_ld)' "$L/ncu_metrics_gh100.txt" | head -40
  for m in l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum \
           l1tex__m_xbar2l1tex_read_sectors_mem_lg_op_ld.sum lts__t_requests_srcunit_tex_op_read.sum \
           lts__t_sectors_srcunit_ltcfabric_op_read.sum lrc__t_sectors.sum lrc__t_sectors_op_read.sum lts__t_sectors_op_read.sum; do
    for cfg in "flash2 --Br 64 --Bc 64" "flash2 --Br 16 --Bc 16" "flash1 --Br 64 --Bc 128"; do
      v=$("$NCU" --cache-control all --clock-control none --kernel-name regex:^fl_ --metrics $m --print-units base --csv --page raw \
          $B/flashlab-gpu-timing run --algo $cfg --dtype fp16 --N 4096 --d 64 --no-check 2>&1 | tail -n +1 | python3 -c "
import csv,sys
rows=[r for r in csv.reader(l for l in sys.stdin if l.startswith('\"'))]
if not rows or '$m' not in rows[0]: print('n/a'); sys.exit()
c=rows[0].index('$m'); t=0
for r in rows[1:]:
    try: t+=float(r[c].replace(',',''))
    except ValueError: pass
print(int(t))")
      echo "diag $cfg $m $v"
    done
  done 2>&1 | tee "$L/ncu_diag.txt"
fi
if has timing; then
  log timing
  for a in "flash2 --Br 64 --Bc 64" "flash2 --Br 128 --Bc 64" "flash1 --Br 64 --Bc 128" "standard --Br 64 --Bc 64"; do
    for N in 4096 16384; do
      timeout 120 $B/flashlab-gpu-timing run --algo $a --dtype fp16 --N $N --d 128 --reps 10 --no-check | grep -E 'median|run '
    done
  done 2>&1 | tee "$L/timing.txt"
  for N in 4096 16384; do
    timeout 120 $B/flashlab-gpu-timing run --algo flash2 --bwd --Br 32 --Bc 32 --dtype fp16 --N $N --d 128 --reps 5 --no-check | grep -E 'median|run '
  done 2>&1 | tee -a "$L/timing.txt"
fi
log done
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$L"
