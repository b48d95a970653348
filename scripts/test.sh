#!/usr/bin/env bash
# test.sh: the README's test command.  Builds flashlab and runs the whole CPU test suite with
# ctest (GPU tests, labelled `gpu`, are skipped: CI has no GPU).  With FLASHLAB_SANITIZE=1 in
# the environment (CI sets it) it then repeats the suite in an ASan+UBSan build.  The kernels:
# no global memory access outside their counted pointers (scripts/check_counted_access.py, which
# must also catch planted violations), and, where nvcc is installed, the compile-only matrix of
# GPU architectures (scripts/cuda_arch_matrix.sh: every version for sm_75 ... sm_90a), which is
# then the only CUDA build (the suites above leave CUDA out).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)

run_suite() { # $1 = build dir, $2 = labels to exclude (ctest -LE), rest = cmake args
  local dir=$1 exclude=$2; shift 2
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
  (cd "$dir" && ctest -LE "$exclude" --output-on-failure -j "$jobs")
}

# build-test, not build: the README's first command builds build/ with the kernels, and this
# suite leaves CUDA out (the matrix below is CI's CUDA build), which must not stick to build/.
run_suite build-test gpu -DFLASHLAB_CUDA=OFF
python3 scripts/check_counted_access.py
python3 scripts/check_counted_access.py --self-test
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
  bash scripts/cuda_arch_matrix.sh build-archs
fi
if [ "${FLASHLAB_SANITIZE:-0}" = 1 ]; then
  echo "== the same suite under AddressSanitizer + UndefinedBehaviorSanitizer =="
  # The notebooks (Jupyter kernels) run in the normal build only; the binding's hostile cases
  # run here too (hostile_binding preloads the ASan runtime into the Python that loads the
  # sanitizer build of libflashlab).
  ASAN_OPTIONS=detect_leaks=1 run_suite build-sanitize 'gpu|notebooks' -DFLASHLAB_SANITIZE=ON -DFLASHLAB_CUDA=OFF
fi
