#!/usr/bin/env bash
# test_device_v14.sh: bench/device_v14.sh and bench/bwd_table.py without a GPU.
#   1. device_v14.sh, DRY_RUN=all in a copy of the tree with stub binaries: validates versions 13,
#      14 and 15, runs 14 and 15 again on the same inputs (bench/same_grads.py), times them on the record set (--shapes all) beside sdpa-fa2 and sdpa-cudnn, twice,
#      and runs ncu on kernels/ncu_versions.conf's rows of 14 and 15 (both there); its step
#      deadline is within 6 minutes; without .devwork it stops with exit 2 and one line;
#   2. bwd_table.py's range of version 13 against cuDNN on its record equals bench/summarize_sdpa.py's
#      (two computations from the raw columns); with cuDNN's time of one shape halved in a copy, the
#      range moves (it is recomputed, not read); bad input: exit 2, one line.
#   bash tests/bench/test_device_v14.sh SOURCE_DIR
set -uo pipefail
SRC=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
PY=${PYTHON:-python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
check() {  # check NAME CONDITION-RESULT(0 pass) DETAIL
  if [ "$2" = 0 ]; then echo "PASS $1"; else echo "FAIL $1: $3"; fails=$((fails + 1)); fi
}
mkdir -p "$T/tree/kernels" "$T/stub/bin" "$T/tree/.devwork"
cp -r "$SRC/bench" "$SRC/scripts" "$T/tree/"
cp -r "$SRC/kernels/ladder" "$SRC/kernels/common" "$T/tree/kernels/"
cp "$SRC/kernels/ncu_versions.conf" "$T/tree/kernels/"
for f in flashlab flashlab-gpu flashlab-gpu-timing libflashlab_kernels.so; do echo stub >"$T/stub/bin/$f"; done
tar -C "$T/stub" -cJf "$T/tree/.devwork/bin.tar.xz" bin
OUT=$T/out DRY_RUN=all WORK=$T/work PYTHON=$PY bash "$T/tree/bench/device_v14.sh" >"$T/dry.txt" 2>&1
rc=$?
d=$(cat "$T/dry.txt")
ok=1
for v in 13 14 15; do [[ "$d" == *"validate --version $v --csv"* ]] || ok=0; done
for v in 14 15; do [[ "$d" == *"bench/same_grads.py $T/work/bin/libflashlab_kernels.so $v "* ]] || ok=0; done
[ "$(grep -c -- '--shapes all --no-fwd --only-versions 13,14,15 --backends sdpa-fa2,sdpa-cudnn' "$T/dry.txt")" = 2 ] || ok=0
[ "$(grep -cE '^(14|15) flash2 ' "$T/work/ncu_14_15.conf" 2>/dev/null)" = 2 ] || ok=0
check "dry run: validate 13-15, same_grads of 14 and 15, two timed runs of the record set, ncu rows of 14 and 15" "$([ $rc = 0 ] && [ $ok = 1 ]; echo $?)" "rc $rc: $d"
deadline=$(grep -oE 'deadline [0-9]+s' "$T/dry.txt" | grep -oE '[0-9]+')
check "the deadline ($deadline s; a step starts only when its timeout fits before it) within 6 minutes" \
  "$([ -n "$deadline" ] && [ "$deadline" -le 360 ]; echo $?)" "$deadline"
rm -rf "$T/tree/.devwork" "$T/out"
OUT=$T/out DRY_RUN=all WORK=$T/work2 PYTHON=$PY bash "$T/tree/bench/device_v14.sh" >"$T/nodev.txt" 2>&1
rc=$?
check "without .devwork: exit 2, says so" "$([ $rc = 2 ] && grep -q 'no .devwork/bin.tar.xz' "$T/nodev.txt"; echo $?)" "rc $rc"

rec=$SRC/figures/data/gpu_sdpa_v13_run1.csv
want=$("$PY" "$SRC/bench/summarize_sdpa.py" "$rec" --version 13 | sed -n 's/^cudnn-bwd: ratio min \([0-9.]*\), max \([0-9.]*\) over \([0-9]*\) shapes$/\1-\2x over \3 shapes/p')
got=$("$PY" "$SRC/bench/bwd_table.py" "$rec" --versions 13 | sed -n 's/^v13 vs cuDNN: //p')
check "bwd_table's v13 range ($got) is summarize_sdpa's ($want)" "$([ -n "$want" ] && [ "$got" = "$want" ]; echo $?)" "differ"
"$PY" - "$rec" "$T/halved.csv" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines(True)
out, done = [], False
for l in lines:
    c = l.split(",")
    if not done and not l.startswith("#") and c[0] == "sdpa-cudnn" and c[2] == "bwd" and c[7] == "64" and c[6] == "4096":
        c[11] = f"{float(c[11]) / 2:.6g}"
        l, done = ",".join(c), True
    out.append(l)
open(sys.argv[2], "w").writelines(out)
PY
moved=$("$PY" "$SRC/bench/bwd_table.py" "$T/halved.csv" --versions 13 | sed -n 's/^v13 vs cuDNN: //p')
check "cuDNN's time halved on one shape: the range moves ($moved)" "$([ -n "$moved" ] && [ "$moved" != "$got" ]; echo $?)" "not moved"
"$PY" "$SRC/bench/bwd_table.py" "$T/none.csv" --versions 13 >/dev/null 2>"$T/err"
rc=$?
check "a missing CSV: exit 2, one line" "$([ $rc = 2 ] && [ "$(wc -l <"$T/err")" = 1 ]; echo $?)" "rc $rc"
"$PY" "$SRC/bench/bwd_table.py" "$rec" >/dev/null 2>"$T/err"
rc=$?
check "no --versions: exit 2, one line" "$([ $rc = 2 ] && [ "$(wc -l <"$T/err")" = 1 ]; echo $?)" "rc $rc"
echo "test_device_v14: $fails failures"
[ $fails = 0 ]
