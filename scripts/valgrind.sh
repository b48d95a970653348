#!/usr/bin/env bash
# valgrind.sh: valgrind memcheck over a set of flashlab CLI runs (successes and errors): no
# invalid read/write, no use of uninitialised values, no leak ("definitely" or "indirectly lost").
#
#   scripts/valgrind.sh            build build-valgrind (RelWithDebInfo) and check every run
#   scripts/valgrind.sh BUILD_DIR  use the flashlab binary already built in BUILD_DIR
#
# Prints one line per run (PASS/FAIL, exit status, valgrind's error count) and exits 1 if any run
# fails; the full log of each run is in $BUILD_DIR/valgrind/NN.log.  The result is recorded in
# fuzz/RESULTS.md.  An expected exit status of 2 is a bad input the catalogue (docs/errors.md)
# lists: valgrind must be as clean on the error path as on the normal one.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind.sh: valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }
dir=${1:-build-valgrind}
if [ $# -eq 0 ]; then
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFLASHLAB_CUDA=OFF >/dev/null
  cmake --build "$dir" -j 2 --target flashlab_cli >/dev/null
fi
bin=$dir/flashlab
mkdir -p "$dir/valgrind"

# expected-status|arguments (one CLI run a line; arguments split on spaces)
runs=$(cat <<'EOF'
0|--version
0|--help
0|count
0|count --algo all --N 1000 --d 64 --M 12345 --format csv --explain
0|count --algo flash1 --N 4096 --d 64 --M 65536 --format json
0|count --algo standard --N 3000 --d 128 --M 2048 --format table
0|run --algo all --N 130 --d 16 --M 1500 --format csv
0|run --algo flash2 --N 64 --d 64 --Br 7 --Bc 5 --seed 99 --format json
0|run --algo standard --N 200 --d 8 --M 150 --format table
0|run --algo flash2 --N 40 --Nk 57 --d 8 --causal bottom-right --window 5,2 --pass fwd+bwd --format csv
0|run --algo flash2-gqa --N 24 --d 8 --heads 6 --kv-heads 2 --batch 2 --pass fwd+bwd
0|run --algo flash1 --cu-seqlens-q 0,5,5,17 --cu-seqlens-k 0,9,9,30 --d 8 --causal top-left --format json
0|run --algo decode --N 3 --Nk 100 --page-size 16 --page-seed 7 --splits 3 --d 16
0|run --algo blocksparse --N 64 --d 8 --density 0.5 --M 2000
0|run --algo memeff --N 50 --d 8
0|run --algo softmax-online --N 30
0|sweep --algo flash1,flash2 --N 256:2048:x2 --d 64 --M 4096,16384 --Bc 16:64:+16
0|bound --N 512,1024,2048 --d 64 --M 4096:65536:x2
0|trace --algo flash2 --N 16 --d 4 --M 200 --format jsonl
0|example list
0|example two-tile
0|example nan-padding
2|
2|frobnicate
2|count --N 0
2|count --N 1.5
2|count --algo flash1,,flash2
2|count --M 100 --algo flash1
2|count --Br 4096 --algo flash2
2|count --N 3037000500 --d 3037000500 --M 2305843009213693951
2|run --N 100000
2|count --explain=yes
2|example
2|example nope
2|sweep --N 64:8:x2
2|sweep --N 1:4096:+1 --d 1:4096:+1
2|count --cu-seqlens-q 0,5,3
2|count --algo decode --N 4 --Nk 100 --page-size 16 --block-table 0,1,2,3,4,-1,5
2|count --algo flash2 --N 1000000 --heads 4096 --batch 4096
2|plot --out /proc/self
EOF
)

fail=0 i=0
while IFS='|' read -r want args; do
  i=$((i + 1))
  log=$(printf '%s/valgrind/%02d.log' "$dir" "$i")
  # shellcheck disable=SC2086
  set +e
  valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite,indirect \
    --errors-for-leak-kinds=definite,indirect --track-origins=yes --error-exitcode=99 \
    --log-file="$log" "$bin" $args >/dev/null 2>&1
  got=$?
  set -e
  errs=$(grep -o 'ERROR SUMMARY: [0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
  if [ "$got" = "$want" ] && [ "$errs" = 0 ]; then verdict=PASS; else verdict=FAIL; fail=1; fi
  printf '%s  status %s (want %s)  valgrind errors %s  flashlab %s\n' "$verdict" "$got" "$want" "$errs" "$args"
done <<<"$runs"
echo "valgrind.sh: $i runs, $([ $fail = 0 ] && echo 'all clean' || echo 'FAILURES above') ($(valgrind --version))"
exit $fail
