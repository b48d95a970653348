#!/usr/bin/env bash
# device_v14.sh: versions 13, 14 and 15 (14 deterministic) of the backward on the GPU machine, in one
# call of at most 6 minutes, from binaries built here (bench/device_prepare.sh: .devwork/bin.tar.xz).
#
#   here:   ONLY_BUILD=1 bash bench/device_prepare.sh   (builds for sm_90a, packs .devwork; no wheels)
#           OUT=$(mktemp -d) DRY_RUN=all bash bench/device_v14.sh   (every GPU command it would run)
#   call:   carry [".devwork"]   command: bash bench/device_v14.sh   (timeout_s 400)
#
# Steps (each bounded by its timeout and by what is left of DEADLINE, 340 s from the start; a step
# whose budget no longer fits is skipped and says so):
#   install   unpacks the binaries into $WORK/bin
#   machine   GPU, driver, clocks, torch and cuDNN versions
#   validate  flashlab-gpu validate --version 13, 14, 15 (counters against the model, values against
#             the fp64 reference: the validation matrix, causal and not, odd N; one head a case),
#             one process each, at once -> gpu_validate_v{13,14,15}.csv
#   same      versions 15 and 14 run three times on the same inputs (bench/same_grads.py, all heads
#             of two shapes, causal and not): 15's dQ, dK, dV must be bitwise the same every run;
#             14's dQ may differ (the order of its reductions), its dK and dV may not
#   bench1    the record set (64 shapes: --shapes all; B x 16 heads, odd N among them), backward only,
#             versions 13, 14, 15 beside sdpa-fa2 and sdpa-cudnn, interleaved and rotated; accuracy of
#             every implementation on ALL heads after the timing -> gpu_sdpa_v14_run1.csv (and a copy
#             named gpu_sdpa_v15_run1.csv: the records check reads a version's runs by name)
#   bench2    the same again (a second run: the spread the ratios are read against) -> _run2.csv
#   ncu       Nsight Compute against the counters, versions 14 and 15 (kernels/ncu_versions.conf's
#             rows of 14 and 15) -> gpu_ncu_versions_14_15.csv
# then the summary: each version's ranges against cuDNN and FA2 (bench/summarize_sdpa.py) and a
# table of the backward's median ms a shape (bench/bwd_table.py) in $OUT/summary.txt; every CSV
# and log in $OUT (data/, logs/).
#
# DRY_RUN=1 (no GPU): runs what needs none and stops at the first command that needs the GPU,
# printing it; DRY_RUN=all prints every step's GPU commands without running any.
# usage: OUT=DIR [DRY_RUN=1|all] [PYTHON=python3] bash bench/device_v14.sh [steps...]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
OUT=${OUT:?set OUT (the device sets it)}
DRY_RUN=${DRY_RUN:-}
PYTHON=${PYTHON:-python3}
START=$(date +%s)
DEADLINE=${DEADLINE:-340}
WORK=${WORK:-/tmp/flashlab-v14}
B=$WORK/bin
L=$OUT/logs
D=$OUT/data
STEPS=${*:-"install machine validate same bench1 bench2 ncu"}
mkdir -p "$L" "$D" "$WORK"
export FLASHLAB_COMMIT=${FLASHLAB_COMMIT:-$(cat .devwork/commit 2>/dev/null | head -1)}
FLASHLAB_COMMIT=${FLASHLAB_COMMIT:-unknown}
export PYTHONUNBUFFERED=1
SUMMARY=$OUT/summary.txt
VERSIONS="13 14 15"
# shellcheck source=bench/device_steps.sh
. bench/device_steps.sh  # the working directory is the repository root (cd above)
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | sort | tail -1 || true)
BENCH=(--lib "$B/libflashlab_kernels.so" --flashlab "$B/flashlab" --shapes all --no-fwd --only-versions "${VERSIONS// /,}"
       --backends "sdpa-fa2,sdpa-cudnn" --warmup-ms 20 --rep-ms 50 --min-reps 20)
: >"$SUMMARY"
log "device_v14.sh: steps $STEPS; commit $FLASHLAB_COMMIT; deadline ${DEADLINE}s${DRY_RUN:+; DRY_RUN=$DRY_RUN}"

if has install; then
  log install
  mkdir -p "$B"
  if [ -f .devwork/bin.tar.xz ]; then
    tar -xJf .devwork/bin.tar.xz -C "$WORK" && chmod +x "$B"/flashlab* && echo "binaries: $(ls "$B" | tr '\n' ' ')" | tee -a "$SUMMARY"
  else
    echo "no .devwork/bin.tar.xz: run bench/device_prepare.sh here and carry .devwork" | tee -a "$SUMMARY"
    exit 2
  fi
  for f in bench/gpu_sdpa.py bench/same_grads.py bench/summarize_sdpa.py bench/bwd_table.py scripts/ncu_traffic.sh kernels/ncu_versions.conf; do
    [ -f "$f" ] || { echo "MISSING $f" | tee -a "$SUMMARY"; exit 2; }
  done
  for v in $VERSIONS; do "$PYTHON" bench/kernel_source.py "$v" | tee -a "$SUMMARY"; done
fi
[ -d "$B/lib" ] && export LD_LIBRARY_PATH=$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

if has machine; then
  log machine
  gpu 30 "$L/machine.txt" bash -c "nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv;
    $B/flashlab-gpu list | grep -E '^ *(13|14|15) ';
    $PYTHON -c 'import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version(), torch.cuda.get_device_name(0))'"
  head -8 "$L/machine.txt" | tee -a "$SUMMARY"
fi

if has validate && fits 100 validate; then
  log "validate: versions $VERSIONS, one process each, at once"
  for v in $VERSIONS; do
    gpu 90 "$L/validate_v$v.log" "$B/flashlab-gpu" validate --version "$v" --csv "$D/gpu_validate_v$v.csv" &
  done
  wait
  for v in $VERSIONS; do echo "validate v$v: $(tail -1 "$L/validate_v$v.log" 2>/dev/null)" | tee -a "$SUMMARY"; done
fi

if has same && fits 80 same; then
  log "same: versions 15 and 14 run three times on the same inputs, dQ, dK, dV compared bitwise"
  for v in 15 14; do
    gpu 40 "$L/same_v$v.log" "$PYTHON" bench/same_grads.py "$B/libflashlab_kernels.so" "$v" --shapes quick --runs 3
    echo "same v$v rc=$? (15 must be 0; 14 may differ in dQ only): $(tail -1 "$L/same_v$v.log" 2>/dev/null)" | tee -a "$SUMMARY"
    grep -h DIFFERENT "$L/same_v$v.log" 2>/dev/null | head -4 | tee -a "$SUMMARY"
  done
fi

for run in bench1 bench2; do
  if has $run && fits 140 $run; then
    k=${run#bench}
    log "$run: the record set, backward, versions $VERSIONS, sdpa-fa2, sdpa-cudnn, interleaved -> gpu_sdpa_v14_run$k.csv"
    gpu 140 "$L/$run.log" "$PYTHON" bench/gpu_sdpa.py "${BENCH[@]}" --csv "$D/gpu_sdpa_v14_run$k.csv"
    echo "$run rc=$?" | tee -a "$SUMMARY"
    # the same run is version 15's (and 13's again): tests/check_gpu_records.py reads a version's runs by name
    [ -f "$D/gpu_sdpa_v14_run$k.csv" ] && cp "$D/gpu_sdpa_v14_run$k.csv" "$D/gpu_sdpa_v15_run$k.csv"
  fi
done

if has ncu && fits 60 ncu; then
  log "ncu: versions 14 and 15 against the counters (kernels/ncu_versions.conf)"
  if [ -n "$NCU" ] || [ -n "$DRY_RUN" ]; then
    grep -E '^(14|15) ' kernels/ncu_versions.conf >"$WORK/ncu_14_15.conf"
    gpu 55 "$L/ncu.log" scripts/ncu_traffic.sh "$B" "$D/gpu_ncu_versions_14_15.csv" "$WORK/ncu_14_15.conf"
    echo "ncu rc=$?" | tee -a "$SUMMARY"; tail -4 "$L/ncu.log" 2>/dev/null | tee -a "$SUMMARY"
  else
    echo "no ncu" | tee -a "$SUMMARY"
  fi
fi

if [ -z "$DRY_RUN" ]; then
  runs=$(ls "$D"/gpu_sdpa_v14_run[12].csv 2>/dev/null)
  if [ -n "$runs" ]; then
    for v in $VERSIONS; do
      # shellcheck disable=SC2086
      "$PYTHON" bench/summarize_sdpa.py $runs --version "$v" >"$L/summary_v$v.txt" 2>&1
      grep -E '^(bwd|cudnn)' "$L/summary_v$v.txt" | sed "s/^/v$v /" | tee -a "$SUMMARY"
    done
    # shellcheck disable=SC2086
    "$PYTHON" bench/bwd_table.py $runs --versions "${VERSIONS// /,}" | tee -a "$SUMMARY"
  fi
fi
log done
