#!/usr/bin/env bash
# run.sh: build the libFuzzer harnesses (preset `fuzz`: clang, ASan + UBSan) and run each for a
# set time, one after another, on one core.
#
#   fuzz/run.sh                 every fuzz_*.c for 600 s each
#   fuzz/run.sh 60 cli problem  the named harnesses (fuzz_cli, fuzz_problem) for 60 s each
#
# The corpus of each harness lives in fuzz/corpus/NAME/ (in git); new interesting inputs found
# during a run go to a scratch directory (build-fuzz/corpus-new/NAME/), not into the repo: merge
# them with `fuzz_NAME -merge=1 fuzz/corpus/NAME build-fuzz/corpus-new/NAME` when worth keeping.
# A crash is written to build-fuzz/artifacts/; turn it into a regression test (tests/errors/test_errors_regress.c)
# and copy it into fuzz/corpus/NAME/regress-WHAT.  Logs: build-fuzz/logs/NAME.log; the last
# lines of each log (runs, exec/s, coverage) are what fuzz/RESULTS.md records.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-600}
shift || true
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for f in fuzz/fuzz_*.c; do n=$(basename "$f" .c); names+=("${n#fuzz_}"); done
fi

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz --target $(printf 'fuzz_%s ' "${names[@]}")
mkdir -p build-fuzz/artifacts build-fuzz/logs
status=0
for n in "${names[@]}"; do
  bin=build-fuzz/fuzz/fuzz_$n
  dict=(); [ -f "fuzz/$n.dict" ] && dict=(-dict="fuzz/$n.dict")
  mkdir -p "fuzz/corpus/$n" "build-fuzz/corpus-new/$n"
  echo "== fuzz_$n for ${secs}s (log: build-fuzz/logs/$n.log)"
  if ! "$bin" "${dict[@]}" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
       -print_final_stats=1 -close_fd_mask=1 -artifact_prefix=build-fuzz/artifacts/"$n"- \
       "build-fuzz/corpus-new/$n" "fuzz/corpus/$n" >"build-fuzz/logs/$n.log" 2>&1; then
    echo "   FINDING: see build-fuzz/logs/$n.log and build-fuzz/artifacts/"; status=1
  fi
  grep -E '^(#[0-9]+[[:space:]]+DONE|Done|stat::number_of_executed_units|stat::average_exec_per_sec)' \
    "build-fuzz/logs/$n.log" | sed 's/^/   /' || true
done
exit $status
