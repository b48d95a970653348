#!/usr/bin/env bash
# device_prepare.sh: what a GPU session does here, before its device calls, for bench/device_record.sh:
#   1. builds flashlab (the CLI: the model's bytes), flashlab-gpu (counters), flashlab-gpu-timing and
#      libflashlab_kernels.so for sm_90a only (nvcc 13.0 here and there), into BUILD_DIR;
#   2. packs them, with the shared libraries the CLI needs beyond the device image's (GSL), into
#      .devwork/bin.tar.xz, and the commit (with +dirty when the tree differs) into .devwork/commit;
#   3. fetches the wheels (bench/fetch_wheels.sh: .whl, .whl-dsl);
#   4. prints what each call carries and its size against the 64 MiB limit, the tree included;
#   5. dry-runs device_record.sh (DRY_RUN=1 OUT=a temporary folder) with PYTHON (default python3):
#      the staging, the install (the wheels into a temporary site and FlashAttention-4's import, where
#      PYTHON is a Python 3.12 with torch), up to the first command that needs the GPU.
# All of .devwork, .whl, .whl-dsl is git-ignored.  usage: [PYTHON=...] bash bench/device_prepare.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-device}
cmake -S . -B "$BUILD" -DFLASHLAB_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a -DFLASHLAB_AUX_CUDA_ARCHITECTURES=90a \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
nice cmake --build "$BUILD" -j "$(nproc)" --target flashlab_cli flashlab_gpu flashlab_gpu_timing flashlab_kernels
rm -rf .devwork/bin && mkdir -p .devwork/bin/lib
cp "$BUILD"/flashlab "$BUILD"/flashlab-gpu "$BUILD"/flashlab-gpu-timing "$BUILD"/libflashlab_kernels.so .devwork/bin/
for exe in .devwork/bin/flashlab .devwork/bin/flashlab-gpu; do
  ldd "$exe" | awk '/libgsl/ {print $3}' | while read -r lib; do cp -L "$lib" .devwork/bin/lib/; done
done
commit=$(git rev-parse --short=7 HEAD)
[ -z "$(git status --porcelain --untracked-files=no)" ] || commit="$commit+dirty"
echo "$commit" > .devwork/commit
tar -C .devwork -cJf .devwork/bin.tar.xz bin && rm -rf .devwork/bin
bash bench/fetch_wheels.sh
size() {  # bytes of the paths that exist among $@ (0 for none)
  local p have=()
  for p in "$@"; do [ -e "$p" ] && have+=("$p"); done
  if [ ${#have[@]} -eq 0 ]; then echo 0; else du -cb "${have[@]}" | tail -1 | cut -f1; fi
}
mapfile -t tracked < <(git ls-files)
tree_b=$(size "${tracked[@]}")
c1=$((tree_b + $(size .devwork .whl-dsl/part-00 .whl-dsl/SHA256SUMS .whl-dsl/NAME)))
c2=$((tree_b + $(size .whl-dsl/part-01 .whl-dsl/SHA256SUMS .whl-dsl/NAME)))
c3=$((tree_b + $(size .whl .whl-dsl/part-02 .whl-dsl/SHA256SUMS .whl-dsl/NAME .fa4cache)))
limit=$((64 * 1024 * 1024))
echo "call 1 carries .devwork .whl-dsl/part-00: $((c1 / 1048576)) MiB with the tree (limit 64)"
echo "call 2 carries .whl-dsl/part-01: $((c2 / 1048576)) MiB with the tree (limit 64)"
echo "call 3 carries .whl .whl-dsl/part-02 .fa4cache: $((c3 / 1048576)) MiB with the tree (limit 64)"
[ "$c1" -lt "$limit" ] && [ "$c2" -lt "$limit" ] && [ "$c3" -lt "$limit" ] || { echo "device_prepare: a call would carry more than 64 MiB" >&2; exit 1; }
[ -e .whl-dsl/part-03 ] && { echo "device_prepare: .whl-dsl has a fourth part: one more staging call" >&2; exit 1; }
dry=$(mktemp -d)
echo "dry run (DRY_RUN=1, OUT=$dry):"
OUT=$dry DRY_RUN=1 STAGE=$dry/stage SITE=$dry/site WORK=$dry/work PYTHON=${PYTHON:-python3} bash bench/device_record.sh stage install machine
rm -rf "$dry"
