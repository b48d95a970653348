#!/usr/bin/env bash
# parallel_bench.sh: --jobs 1 against --jobs 2 (or JOBS) on the main job and on a sweep of 1,000
# configurations; the outputs must be byte for byte the same.
#
#   bench/parallel_bench.sh [FLASHLAB] [REPEATS] [JOBS]     (defaults: build/flashlab, 3, 2)
#
# (Then, when a C compiler and the build's libflashlab.a are there, bench/pool_makespan.c: the
# speedup an idle machine can give, replayed from each task's own CPU time; see that file.)
#
# Workloads:
#   report  `flashlab report --out DIR` (the main job: table, the default sweep, fits, figure (g)'s
#           grid, worked examples, every figure and its data); its stdout and every file of DIR
#           are compared between the two --jobs;
#   sweep   `flashlab sweep --algo flash1,flash2 --N 4096:65536:x2 --d 16,32,64,128
#           --M 4096:102400:+4096` = 2 x 5 x 4 x 25 = 1,000 configurations; its CSV is compared.
# For each, REPEATS runs alternating --jobs 1 and --jobs JOBS, each timed for wall and CPU
# (user + sys, the process and its children: gnuplot).  Printed: the load average before and
# after, every run, and per --jobs the best and the median wall and CPU; the speedup (best wall
# of --jobs 1 / best wall of --jobs JOBS, and the same for the medians), the parallel efficiency
# (speedup / JOBS) and the CPU ratio (CPU with JOBS / CPU with 1: the cost of running in
# parallel).  On a machine shared with other jobs the wall times measure the other jobs too: run
# it when `uptime` shows a load below the core count, and repeat.  Record results in
# bench/RESULTS.md with the date, commit, machine and load.
set -eu
FL=${1:-build/flashlab}
REPEATS=${2:-3}
JOBS=${3:-2}
[ -x "$FL" ] || { echo "parallel_bench.sh: $FL is not an executable (build first)" >&2; exit 2; }
FL=$(cd "$(dirname "$FL")" && pwd)/$(basename "$FL")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
TIMEFORMAT='%R %U %S'
SWEEP=(sweep --algo flash1,flash2 --N 4096:65536:x2 --d 16,32,64,128 --M 4096:102400:+4096)

# run NAME JOBS: one timed run of workload NAME; prints "wall cpu"; leaves its output in $TMP/NAME.JOBS
run() {
  local name=$1 j=$2 out="$TMP/$1.$2"
  rm -rf "$out" && mkdir -p "$out"
  if [ "$name" = report ]; then
    { time "$FL" report --out "$out/dir" --jobs "$j" > "$out/stdout"; } 2>&1 | awk 'END { printf "%s %.2f\n", $1, $2 + $3 }'
    sed -i "s|$out/dir|DIR|g" "$out/stdout" # the directory is named in the text
  else
    { time "$FL" "${SWEEP[@]}" --jobs "$j" > "$out/stdout" 2>/dev/null; } 2>&1 | awk 'END { printf "%s %.2f\n", $1, $2 + $3 }'
  fi
}

stats() { # stats FILE: "best median" of the numbers in FILE
  sort -g "$1" | awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.2f %.2f\n", v[1], m }'
}

echo "flashlab parallel benchmark: $("$FL" --version), $REPEATS runs each of --jobs 1 and --jobs $JOBS, $(nproc) cores"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
status=0
for name in sweep report; do
  : > "$TMP/$name.w1"; : > "$TMP/$name.c1"; : > "$TMP/$name.wj"; : > "$TMP/$name.cj"; same="outputs identical"
  for i in $(seq "$REPEATS"); do
    read -r w c < <(run "$name" 1); echo "$w" >> "$TMP/$name.w1"; echo "$c" >> "$TMP/$name.c1"
    echo "  $name run $i --jobs 1:  wall $w s, CPU $c s (load $(cut -d' ' -f1 /proc/loadavg))"
    read -r w c < <(run "$name" "$JOBS"); echo "$w" >> "$TMP/$name.wj"; echo "$c" >> "$TMP/$name.cj"
    echo "  $name run $i --jobs $JOBS:  wall $w s, CPU $c s (load $(cut -d' ' -f1 /proc/loadavg))"
    if ! diff -r "$TMP/$name.1" "$TMP/$name.$JOBS" > /dev/null; then
      echo "  $name: the outputs of --jobs 1 and --jobs $JOBS DIFFER"; status=1; same="OUTPUTS DIFFER"
    fi
  done
  read -r w1 w1m < <(stats "$TMP/$name.w1"); read -r c1 c1m < <(stats "$TMP/$name.c1")
  read -r wj wjm < <(stats "$TMP/$name.wj"); read -r cj cjm < <(stats "$TMP/$name.cj")
  awk -v n="$name" -v j="$JOBS" -v w1="$w1" -v w1m="$w1m" -v c1="$c1" -v c1m="$c1m" -v wj="$wj" -v wjm="$wjm" \
      -v cj="$cj" -v cjm="$cjm" -v same="$same" 'BEGIN {
    printf "%s: --jobs 1: wall best %.2f s, median %.2f s; CPU best %.2f s, median %.2f s\n", n, w1, w1m, c1, c1m
    printf "%s: --jobs %d: wall best %.2f s, median %.2f s; CPU best %.2f s, median %.2f s\n", n, j, wj, wjm, cj, cjm
    printf "%s: speedup %.2fx (best), %.2fx (median); parallel efficiency %.0f%%; CPU ratio %.2f; %s\n",
           n, w1 / wj, w1m / wjm, 100 * w1 / wj / j, cj / c1, same }'
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

# the model: each task's CPU time replayed on JOBS workers (bench/pool_makespan.c)
SRC=$(cd "$(dirname "$0")/.." && pwd)
LIB=$(dirname "$FL")/src/libflashlab.a
if command -v cc > /dev/null && [ -f "$LIB" ] &&
   cc -std=gnu11 -O2 -I"$SRC/include" -I"$SRC/include/flashlab" "$SRC/bench/pool_makespan.c" "$LIB" -lgsl -lgslcblas -lm \
      -lpthread -o "$TMP/pool_makespan" 2> /dev/null; then
  "$TMP/pool_makespan" "$JOBS" > "$TMP/model" || true
  grep -v '^report_parallel' "$TMP/model" | sed 's/^/model: /'
  read -r _ pc _ pm < <(grep '^report_parallel' "$TMP/model")
  read -r c1 _ < <(stats "$TMP/report.c1")
  awk -v c="$c1" -v pc="$pc" -v pm="$pm" -v j="$JOBS" 'BEGIN {
    printf "model: report: %.2f s CPU in all (best --jobs 1 run), %.2f s of it serial; predicted wall on an idle %d-core machine %.2f s: speedup %.2fx\n",
           c, c - pc, j, c - pc + pm, c / (c - pc + pm) }'
fi
exit $status
