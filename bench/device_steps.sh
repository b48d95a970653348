# device_steps.sh: the step helpers of the device scripts (bench/device_record.sh, device_v14.sh),
# sourced after they set START (date +%s at the start), DEADLINE (seconds), STEPS (the steps to
# run, space-separated), SUMMARY (the summary file), L (the logs folder) and DRY_RUN ("", 1, all).
#   log MSG...            a timestamped line (+seconds since START) into SUMMARY and stdout
#   has STEP              whether STEP is among STEPS
#   left                  the seconds left of DEADLINE
#   fits BUDGET STEP      whether BUDGET seconds are left (else the step is skipped, said so)
#   gpu TIMEOUT LOG CMD   a command that needs the GPU, bounded by TIMEOUT, its output in LOG, its
#                         exit status in $L/rc.txt; DRY_RUN=1 stops at the first one, DRY_RUN=all
#                         only prints it
# shellcheck shell=bash
log() { echo "=== $(date -u +%H:%M:%S) +$(($(date +%s) - START))s $*" | tee -a "$SUMMARY"; }
has() { [[ " $STEPS " == *" $1 "* ]]; }
left() { echo $((DEADLINE - ($(date +%s) - START))); }
fits() { if [ "$(left)" -ge "$1" ]; then return 0; fi; log "$2 SKIPPED: $1 s needed, $(left) s left (run it in a later call)"; return 1; }
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
