#!/usr/bin/env bash
# test.sh: the README's test command.  Builds flashlab and runs the whole CPU test suite with
# ctest (GPU tests, labelled `gpu`, are skipped: CI has no GPU).  With FLASHLAB_SANITIZE=1 in
# the environment (CI sets it) it then repeats the suite in an ASan+UBSan build.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)

run_suite() { # $1 = build dir, rest = cmake args
  local dir=$1; shift
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
  (cd "$dir" && ctest -LE gpu --output-on-failure -j "$jobs")
}

run_suite build
if [ "${FLASHLAB_SANITIZE:-0}" = 1 ]; then
  echo "== the same suite under AddressSanitizer + UndefinedBehaviorSanitizer =="
  ASAN_OPTIONS=detect_leaks=1 run_suite build-sanitize -DFLASHLAB_SANITIZE=ON -DFLASHLAB_CUDA=OFF
fi
