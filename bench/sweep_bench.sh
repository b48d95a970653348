#!/usr/bin/env bash
# sweep_bench.sh: speed of the count-only machine and of the default report sweep.
#
#   bench/sweep_bench.sh [FLASHLAB] [REPEATS]      (defaults: build/flashlab, 3)
#
# Prints, for the best of REPEATS runs (both are single-threaded: one core), wall time and CPU
# time (user + sys; on a machine shared with other jobs CPU time is the fairer number):
#   1. machine: one count-only run with many tile events (flash1, N = 65536, d = 128, M = 4096:
#      613,707,198 events): tile events per second;
#   2. sweep: the default sweep of `flashlab report` (3 schedules, N = 512..65536, d = 64,128,
#      M = 4096..N*d, x2): wall time, configurations per second, tile events per second.
# Targets: the sweep under 10 s on one core; the machine at >= 1e8 tile events/s.
# Record results in bench/RESULTS.md with the date, commit and machine.
set -eu
FL=${1:-build/flashlab}
REPEATS=${2:-3}
[ -x "$FL" ] || { echo "sweep_bench.sh: $FL is not an executable (build first)" >&2; exit 2; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
TIMEFORMAT='%R %U %S'
min() { awk -v x="$1" -v y="$2" 'BEGIN { print (x < y ? x : y) }'; }
# timed CMD...: prints "wall cpu" of CMD (stdout of CMD goes to $TMP/out)
timed() { { time "$@" > "$TMP/out"; } 2>&1 | awk 'END { printf "%s %.3f\n", $1, $2 + $3 }'; }

mw=1e9; mc=1e9; sw=1e9; sc=1e9
for i in $(seq "$REPEATS"); do
  read -r w c < <(timed "$FL" count --algo flash1 --N 65536 --d 128 --M 4096 --format csv)
  cp "$TMP/out" "$TMP/one.csv"
  mw=$(min "$w" "$mw"); mc=$(min "$c" "$mc")
  read -r w c < <(timed "$FL" sweep --N 512:65536:x2 --d 64,128 --M 4096:8388608:x2 --M-upto-Nd --output "$TMP/sweep.csv")
  sw=$(min "$w" "$sw"); sc=$(min "$c" "$sc")
done

events1=$(awk -F, '!/^#/ && $1 != "algo" { print $13 }' "$TMP/one.csv")
rows=$(awk -F, '!/^#/ && $1 != "algo" { n++ } END { print n }' "$TMP/sweep.csv")
skipped=$(grep -c '^# skipped:' "$TMP/sweep.csv" || true)
events=$(awk -F, '!/^#/ && $1 != "algo" { e += $13 } END { printf "%.0f", e }' "$TMP/sweep.csv")

echo "flashlab sweep benchmark: $($FL --version), best of $REPEATS single-threaded runs, $(nproc) cores"
awk -v w="$mw" -v c="$mc" -v e="$events1" 'BEGIN {
  printf "machine: flash1 N=65536 d=128 M=4096: %d tile events\n", e
  printf "         wall %.3f s = %.3g tile events/s; CPU %.3f s = %.3g tile events/s (target >= 1e8)\n", w, e / w, c, e / c }'
awk -v w="$sw" -v c="$sc" -v r="$rows" -v k="$skipped" -v e="$events" 'BEGIN {
  printf "sweep:   default report sweep: %d configurations (%d skipped), %.4g tile events\n", r, k, e
  printf "         wall %.3f s = %.1f configurations/s, %.3g tile events/s\n", w, r / w, e / w
  printf "         CPU  %.3f s = %.1f configurations/s, %.3g tile events/s (target < 10 s)\n", c, r / c, e / c }'
