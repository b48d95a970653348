#!/bin/sh
# test_handout.sh PYTHON LIB CLI: builds the student-only layout in a temporary folder outside the
# repository (make_handout.py --solutions) and runs every solution notebook there, with no
# FLASHLAB_* variables and no PYTHONPATH: the binding must find the library, the CLI, the figure
# style and the recorded data beside itself.  ctest: notebooks_handout.
set -eu
PY=$1; LIB=$2; CLI=$3
HERE=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d /tmp/fl_handout.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
"$PY" "$HERE/make_handout.py" "$TMP/handout" --lib "$LIB" --cli "$CLI" --solutions
cd "$TMP/handout"
env -u FLASHLAB_LIB -u FLASHLAB_CLI -u FLASHLAB_STUDENT -u PYTHONPATH \
    "$PY" "$HERE/run_all.py" --isolated --no-skip --expect pass --limit "${NB_LIMIT:-60}" ./*_solution.ipynb
# --no-skip must catch a check that does not find its data: lab 9 without its recorded measurements.
rm figures/data/third_party_ncu.csv
if env -u FLASHLAB_LIB -u FLASHLAB_CLI -u FLASHLAB_STUDENT -u PYTHONPATH \
    "$PY" "$HERE/run_all.py" --isolated --no-skip --expect pass --limit "${NB_LIMIT:-60}" \
    ./lab9_other_kernels_solution.ipynb; then
    echo "test_handout: lab 9 without its data passed under --no-skip"; exit 1
fi
echo "test_handout: lab 9 without its data fails under --no-skip, as it must"
