#!/usr/bin/env bash
# check_installed.sh: the counted pointer types are usable from an installed flashlab alone.
# Installs BUILD_DIR's headers into a temporary prefix (cmake --install --component cuda_headers:
# the CMakeLists.txt's install rule) and compiles examples/my_attention.cu
# (compile only, sm_80) with nothing on its include path but PREFIX/include/flashlab/cuda and
# PREFIX/include.  Then the check itself: with one installed header removed the compile must fail.
# Exit 0 it compiles, 1 it does not (or the check passed without the header), 77 no nvcc.
#   usage: examples/check_installed.sh BUILD_DIR
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: check_installed.sh BUILD_DIR}
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[ -x "$nvcc" ] || { echo "check_installed: nvcc not found: nothing to compile"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" --component cuda_headers >/dev/null
inc=$tmp/prefix/include
compile() { "$nvcc" -std=c++17 -DFL_COUNTERS -arch=sm_80 -I "$inc/flashlab/cuda" -I "$inc" -c \
                    "$src/examples/my_attention.cu" -o "$tmp/my_attention.o" 2>"$tmp/err"; }
if ! compile; then
  echo "check_installed: my_attention.cu does not compile against the installed headers:" >&2
  head -5 "$tmp/err" >&2
  exit 1
fi
echo "check_installed: my_attention.cu compiles against $(ls "$inc/flashlab/cuda" | tr '\n' ' ')in PREFIX/include/flashlab/cuda"
rm "$inc/flashlab/cuda/arch.cuh"
if compile; then
  echo "check_installed: it compiled without the installed arch.cuh: the include path is not the installed one" >&2
  exit 1
fi
echo "check_installed: without the installed arch.cuh it does not compile (the check reads the install)"
