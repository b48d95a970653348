#!/usr/bin/env bash
# device_record.sh: the record of the fast kernels on the GPU machine, against SDPA's FlashAttention-2
# and cuDNN backends and FlashAttention-4, in one call of at most 10 minutes (the machine keeps
# nothing between sessions; /work/.library/device/README.md has the limits).
#
# The session, step by step:
#   here:   bash bench/device_prepare.sh   builds for sm_90a into .devwork/bin.tar.xz with the commit
#           (.devwork/commit), fetches the wheels (bench/fetch_wheels.sh: .whl, .whl-dsl) and dry-runs
#           this script; it prints what each call carries and how big that is (64 MiB at most a call)
#   call 1: carry [".devwork", ".whl-dsl/part-00", ".whl-dsl/SHA256SUMS", ".whl-dsl/NAME"]
#           command: bash bench/device_record.sh stage install machine validate sanitize
#   call 2: carry [".whl-dsl/part-01", ".whl-dsl/SHA256SUMS", ".whl-dsl/NAME"]
#           command: bash bench/device_record.sh stage install ncu
#   call 3: carry [".whl", ".whl-dsl/part-02", ".whl-dsl/SHA256SUMS", ".whl-dsl/NAME", ".fa4cache"]
#           command: RUN_S=150 bash bench/device_record.sh stage install machine fa4warm bench1 bench2 cold
#           each while the machine is still warm from the call before (30 s): staged files live on
#           that machine only; if it went back, start again at call 1.  Steps the deadline left out
#           (each says so): a fourth call naming them (bash bench/device_record.sh install wide ...).
#           Calls 1-3 of 2026-12-05 (docs/journal/runs.md, runs 55-57) took 42, 49 and 421 s.
#
# Steps (default: every step but stage, in this order; each bounded by its timeout and by what is left
# of DEADLINE, 570 s from the start: a step whose budget no longer fits is skipped and says so):
#   stage     copies this call's carried parts (.whl-dsl/part-*, .devwork) to $STAGE on the machine
#   install   unpacks the binaries; installs .whl into $SITE (pip --no-index --no-deps --target) and,
#             when every part of .whl-dsl is staged and verifies, the DSL's CUDA 13 libraries; imports
#             flash_attn.cute (FlashAttention-4) or says why not
#   machine   GPU, driver, clocks, tools, package versions
#   fa4warm   FlashAttention-4 compiled for every configuration of the record (dtype, d, causal, both
#             passes, deterministic backward) into its on-disk cache $FA4_CACHE, saved to $OUT
#   bench1, bench2   the record set (64 shapes: --shapes all) timed interleaved: versions 12 (forward)
#             and 13 (backward) beside sdpa-fa2, sdpa-cudnn, fa4, fa4-det, both versions in one run
#             (gpu_sdpa_record_run1.csv, _run2.csv; copied to figures/data as each version's runs)
#   cold      the same, the L2 flushed before every call (--cold; gpu_sdpa_record_cold_run1.csv)
#   ncu       Nsight Compute against the counters: kernels/ncu_record.conf (causal, odd N) and
#             bench/ncu_heads.conf (many heads), versions 12 and 13
#   validate  flashlab-gpu validate, versions 12, 13 and the readable rungs they build on (7, 10)
#   sanitize  compute-sanitizer memcheck, racecheck and synccheck of validate --quick, versions 12 and 13
#   wide      the baselines and ours on d = 256 and N = 512 and 8192 too (--shapes wide --d 64,128,256)
# Results under $WORK, packed into $OUT/record.tgz after every step; $OUT/summary.txt last.
#
# DRY_RUN=1 (no GPU): runs what needs none (stage, install with $PYTHON, the files' checks) and stops
# at the first command that needs the GPU, printing it; DRY_RUN=all prints every step's GPU commands
# without running any.  usage: OUT=DIR [DRY_RUN=1|all] [PYTHON=python3] bash bench/device_record.sh [steps...]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
OUT=${OUT:?set OUT (the device sets it)}
DRY_RUN=${DRY_RUN:-}
PYTHON=${PYTHON:-python3}
START=$(date +%s)
DEADLINE=${DEADLINE:-570}
RUN_S=${RUN_S:-110}   # one timed run of the record set (about 90 s without FlashAttention-4)
STAGE=${STAGE:-/tmp/flashlab-stage}
SITE=${SITE:-/tmp/flashlab-site}
WORK=${WORK:-/tmp/flashlab-record}
B=$WORK/bin
FA4_CACHE=${FA4_CACHE:-$PWD/.fa4cache}
STEPS=${*:-"install machine fa4warm bench1 bench2 cold ncu validate sanitize wide"}
L=$WORK/logs
mkdir -p "$L" "$WORK/data" "$STAGE"
export FLASHLAB_COMMIT=${FLASHLAB_COMMIT:-$(cat .devwork/commit "$STAGE/.devwork/commit" 2>/dev/null | head -1)}
FLASHLAB_COMMIT=${FLASHLAB_COMMIT:-unknown}
export PYTHONUNBUFFERED=1 FLASH_ATTENTION_CUTE_DSL_CACHE_ENABLED=1 FLASH_ATTENTION_CUTE_DSL_CACHE_DIR=$FA4_CACHE
# pip --target does not run the .pth file by which nvidia-cutlass-dsl puts its dsl_packages (the cutlass
# module) on the path: name that folder too
export PYTHONPATH=$SITE:$SITE/nvidia_cutlass_dsl/dsl_packages${PYTHONPATH:+:$PYTHONPATH}
SUMMARY=$WORK/summary.txt
log() { echo "=== $(date -u +%H:%M:%S) +$(($(date +%s) - START))s $*" | tee -a "$SUMMARY"; }
pack() { [ -n "$DRY_RUN" ] && return 0; tar -C "$WORK" -czf "$OUT/record.tgz.tmp" data logs summary.txt 2>/dev/null &&
         mv "$OUT/record.tgz.tmp" "$OUT/record.tgz"; cp "$SUMMARY" "$OUT/summary.txt" 2>/dev/null || true; }
has() { [[ " $STEPS " == *" $1 "* ]]; }
left() { echo $((DEADLINE - ($(date +%s) - START))); }
# fits BUDGET STEP: whether BUDGET seconds are left of the deadline (else the step is skipped, said so)
fits() { if [ "$(left)" -ge "$1" ]; then return 0; fi; log "$2 SKIPPED: $1 s needed, $(left) s left (run it in a later call)"; return 1; }
# gpu TIMEOUT LOGFILE CMD...: a command that needs the GPU, bounded by TIMEOUT, its output in LOGFILE;
# DRY_RUN=1 stops at the first one, DRY_RUN=all only prints it
gpu() {
  local t=$1 logf=$2; shift 2
  if [ -n "$DRY_RUN" ]; then
    echo "would run (timeout ${t}s, log $logf): $*" | tee -a "$SUMMARY"
    if [ "$DRY_RUN" = 1 ]; then log "dry run: stopped at the first command that needs the GPU"; exit 0; fi
    return 0
  fi
  timeout "$t" "$@" >"$logf" 2>&1
  local rc=$?
  echo "rc=$rc ($t s max): $*" >>"$L/rc.txt"
  return $rc
}
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | sort | tail -1 || true)
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null | head -1 || true)
BENCH=(--lib "$B/libflashlab_kernels.so" --flashlab "$B/flashlab" --shapes all --only-versions "12,13"
       --backends "sdpa-fa2,sdpa-cudnn,fa4,fa4-det" --warmup-ms 20 --rep-ms 50 --min-reps 20)
: >"$SUMMARY"
log "device_record.sh: steps $STEPS; commit $FLASHLAB_COMMIT; deadline ${DEADLINE}s${DRY_RUN:+; DRY_RUN=$DRY_RUN}"

if has stage; then
  log stage
  for p in .whl-dsl/part-* .whl-dsl/SHA256SUMS .whl-dsl/NAME; do
    [ -f "$p" ] && mkdir -p "$STAGE/.whl-dsl" && cp "$p" "$STAGE/.whl-dsl/" && echo "staged $p" | tee -a "$SUMMARY"
  done
  [ -d .devwork ] && cp -r .devwork "$STAGE/" && echo "staged .devwork" | tee -a "$SUMMARY"
  ls -la "$STAGE" "$STAGE/.whl-dsl" 2>/dev/null | tee -a "$SUMMARY"
fi

if has install; then
  log install
  mkdir -p "$B" "$SITE"
  tarball=$(ls .devwork/bin.tar.xz "$STAGE/.devwork/bin.tar.xz" 2>/dev/null | head -1)
  if [ -n "$tarball" ]; then
    tar -xJf "$tarball" -C "$WORK" && chmod +x "$B"/flashlab* && echo "binaries from $tarball: $(ls "$B" | tr '\n' ' ')" | tee -a "$SUMMARY"
  else
    echo "no .devwork/bin.tar.xz (bench/device_prepare.sh): building here" | tee -a "$SUMMARY"
    gpu 300 "$L/build.log" bash -c "cmake -S . -B /tmp/flashlab-build -DFLASHLAB_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a \
      -DFLASHLAB_AUX_CUDA_ARCHITECTURES=90a -DCMAKE_BUILD_TYPE=Release && cmake --build /tmp/flashlab-build -j16 --target \
      flashlab_cli flashlab_gpu flashlab_gpu_timing flashlab_kernels && cp /tmp/flashlab-build/{flashlab,flashlab-gpu,flashlab-gpu-timing,libflashlab_kernels.so} $B/"
  fi
  [ -d "$B/lib" ] && export LD_LIBRARY_PATH=$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  if ls .whl/*.whl >/dev/null 2>&1; then
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl \
      >"$L/pip.log" 2>&1 && echo "installed $(ls .whl/*.whl | wc -l) wheels into $SITE" | tee -a "$SUMMARY" ||
      { echo "pip install failed: $(tail -2 "$L/pip.log")" | tee -a "$SUMMARY"; }
  else
    echo "no .whl: FlashAttention-4 left out" | tee -a "$SUMMARY"
  fi
  dsl=$STAGE/.whl-dsl
  mkdir -p "$dsl"
  [ -d .whl-dsl ] && cp .whl-dsl/part-* .whl-dsl/SHA256SUMS .whl-dsl/NAME "$dsl/" 2>/dev/null
  if [ -f "$dsl/SHA256SUMS" ] && [ -f "$dsl/NAME" ] && (cd "$dsl" && sha256sum -c --quiet SHA256SUMS 2>/dev/null); then
    # the parts join into the wheel whose sha256 bench/device_wheels.txt pins (checked first); it is
    # unpacked into $SITE, not pip-installed: pip --target skips a top-level folder that exists already
    # (nvidia_cutlass_dsl/, from libs-base), and this wheel only adds files under it
    whl=$WORK/$(cat "$dsl/NAME")
    pin=$(grep -o 'nvidia-cutlass-dsl-libs-cu13==[^ ]* --hash=sha256:[0-9a-f]*' bench/device_wheels.txt | sed 's/.*sha256://')
    cat "$dsl"/part-* >"$whl" && [ "$(sha256sum <"$whl" | cut -d' ' -f1)" = "$pin" ] &&
      "$PYTHON" -m zipfile -e "$whl" "$SITE" >>"$L/pip.log" 2>&1 &&
      echo "the DSL's CUDA 13 libraries ($(cat "$dsl/NAME"), sha256 as pinned) installed into $SITE" | tee -a "$SUMMARY" ||
      echo "the DSL's CUDA 13 libraries: the joined wheel is not the pinned one or did not install: $(tail -2 "$L/pip.log")" | tee -a "$SUMMARY"
  else
    echo "the DSL's CUDA 13 libraries: parts missing or not verifying in $dsl ($(ls "$dsl" 2>/dev/null | tr '\n' ' ')): FlashAttention-4 will not import" | tee -a "$SUMMARY"
  fi
  "$PYTHON" -c "import flash_attn.cute, importlib.metadata as m; print('flash_attn.cute imports: flash-attn-4', m.version('flash-attn-4'), 'nvidia-cutlass-dsl', m.version('nvidia-cutlass-dsl'))" \
    >"$L/fa4_import.log" 2>&1; echo "$(tail -1 "$L/fa4_import.log")" | tee -a "$SUMMARY"
  for f in kernels/ncu_record.conf bench/ncu_heads.conf scripts/ncu_traffic.sh bench/ncu_heads.sh bench/gpu_sdpa.py; do
    [ -f "$f" ] || echo "MISSING $f" | tee -a "$SUMMARY"
  done
  "$PYTHON" bench/kernel_source.py 12 | tee -a "$SUMMARY"
  "$PYTHON" bench/kernel_source.py 13 | tee -a "$SUMMARY"
  pack
fi

if has machine; then
  log machine
  gpu 30 "$L/machine.txt" bash -c "nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv;
    nvcc --version | tail -2; echo ncu: $NCU; echo sanitizer: $SAN; $B/flashlab-gpu list;
    $PYTHON -c 'import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version(), torch.cuda.get_device_name(0))'"
  head -6 "$L/machine.txt" | tee -a "$SUMMARY"
  pack
fi

if has fa4warm && fits 120 fa4warm; then
  log "fa4warm: FlashAttention-4 compiled into $FA4_CACHE"
  gpu 120 "$L/fa4warm.log" "$PYTHON" bench/gpu_sdpa.py --shapes all --N 1000,1024 --backends fa4,fa4-det --reps 1 --warmup 0 \
    --csv "$WORK/data/fa4warm.csv" --clock-period-ms 0
  echo "fa4warm rc=$?: $(grep -c '^gpu_sdpa: fa4' "$L/fa4warm.log" 2>/dev/null) refusals; cache $(du -sh "$FA4_CACHE" 2>/dev/null | cut -f1)" | tee -a "$SUMMARY"
  [ -z "$DRY_RUN" ] && [ -d "$FA4_CACHE" ] && tar -C "$(dirname "$FA4_CACHE")" -czf "$WORK/fa4cache.tgz" "$(basename "$FA4_CACHE")" &&
    [ "$(stat -c %s "$WORK/fa4cache.tgz")" -lt 16000000 ] && cp "$WORK/fa4cache.tgz" "$OUT/"
  pack
fi

for run in bench1 bench2 cold; do
  if has $run && fits "$RUN_S" $run; then
    k=${run#bench}; extra=(); name=gpu_sdpa_record_run$k.csv
    [ $run = cold ] && { extra=(--cold); name=gpu_sdpa_record_cold_run1.csv; }
    log "$run: the record set, $([ $run = cold ] && echo cold || echo interleaved, warm) -> $name"
    gpu "$RUN_S" "$L/$run.log" "$PYTHON" bench/gpu_sdpa.py "${BENCH[@]}" "${extra[@]}" --csv "$WORK/data/$name"
    echo "$run rc=$?" | tee -a "$SUMMARY"
    sed -n '/^shape/,$p' "$L/$run.log" 2>/dev/null | head -40 >>"$SUMMARY"
    pack
  fi
done
if [ -z "$DRY_RUN" ] && [ -f "$WORK/data/gpu_sdpa_record_run1.csv" ] && [ -f "$WORK/data/gpu_sdpa_record_run2.csv" ]; then
  for v in 12 13; do
    "$PYTHON" bench/summarize_sdpa.py "$WORK/data/gpu_sdpa_record_run1.csv" "$WORK/data/gpu_sdpa_record_run2.csv" --version $v \
      >"$L/summary_v$v.txt" 2>&1 && grep -E '^(fwd|bwd|cudnn|fa4)' "$L/summary_v$v.txt" | sed "s/^/v$v /" | tee -a "$SUMMARY"
  done
fi

if has ncu && fits 120 ncu; then
  log "ncu: versions 12 and 13 on the record shapes (causal, odd N, many heads) against the counters"
  if [ -n "$NCU" ] || [ -n "$DRY_RUN" ]; then
    gpu 60 "$L/ncu_record.log" scripts/ncu_traffic.sh "$B" "$WORK/data/gpu_ncu_record_shapes.csv" kernels/ncu_record.conf
    echo "ncu_traffic rc=$?" | tee -a "$SUMMARY"; tail -4 "$L/ncu_record.log" 2>/dev/null | tee -a "$SUMMARY"
    gpu 60 "$L/ncu_heads.log" bench/ncu_heads.sh "$B" "$WORK/data/gpu_ncu_record_heads.csv" bench/ncu_heads.conf
    echo "ncu_heads rc=$?" | tee -a "$SUMMARY"; tail -4 "$L/ncu_heads.log" 2>/dev/null | tee -a "$SUMMARY"
  else
    echo "no ncu" | tee -a "$SUMMARY"
  fi
  pack
fi

if has validate && fits 100 validate; then
  log "validate: versions 12, 13, 7, 10, one process each, at once"
  for v in 12 13 7 10; do
    gpu 90 "$L/validate_v$v.log" "$B/flashlab-gpu" validate --version $v --csv "$WORK/data/gpu_validate_v$v.csv" &
  done
  wait
  for v in 12 13 7 10; do echo "validate v$v: $(tail -1 "$L/validate_v$v.log" 2>/dev/null)" | tee -a "$SUMMARY"; done
  pack
fi

if has sanitize && fits 130 sanitize; then
  log "sanitize: memcheck, racecheck, synccheck of validate --quick, versions 12 and 13"
  if [ -n "$SAN" ] || [ -n "$DRY_RUN" ]; then
    for tool in memcheck racecheck synccheck; do
      for v in 12 13; do
        gpu 60 "$L/${tool}_v$v.log" "${SAN:-compute-sanitizer}" --tool $tool --error-exitcode 9 "$B/flashlab-gpu" validate --quick --version $v &
      done
      wait
      for v in 12 13; do echo "$tool v$v: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$L/${tool}_v$v.log" 2>/dev/null | tail -1)" | tee -a "$SUMMARY"; done
    done
  else
    echo "no compute-sanitizer" | tee -a "$SUMMARY"
  fi
  pack
fi

if has wide && fits 140 wide; then
  log "wide: d = 256 and N = 512, 8192 beside the record set's d and N"
  gpu 140 "$L/wide.log" "$PYTHON" bench/gpu_sdpa.py --lib "$B/libflashlab_kernels.so" --flashlab "$B/flashlab" --shapes wide \
    --N 512,8192,1000,16384 --d 64,128,256 --only-versions 12,13 --backends sdpa-fa2,sdpa-cudnn,fa4,fa4-det \
    --warmup-ms 10 --rep-ms 30 --csv "$WORK/data/gpu_sdpa_wide_run1.csv"
  echo "wide rc=$?" | tee -a "$SUMMARY"
  pack
fi
log "done"
pack
