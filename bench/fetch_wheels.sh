#!/usr/bin/env bash
# fetch_wheels.sh: the wheels a GPU session carries to the device machine for FlashAttention-4, fetched
# here (the device reaches no registry) for the device's Python 3.12 on x86-64, pinned with their
# sha256 in bench/device_wheels.txt:
#   .whl/      the wheels (about 9 MB) that bench/device_record.sh installs (pip --no-index --no-deps
#              --target); carry it (the device README's Notes);
#   .whl-dsl/  nvidia-cutlass-dsl-libs-cu13 (the CUDA 13 flavour of the DSL's compiler, 88 MiB as a
#              wheel: alone over the 64 MiB one call carries) split as it is into parts of 30 MiB
#              (part-00 .. part-02), with SHA256SUMS of the parts and NAME, the wheel's file name; each
#              call carries one part and bench/device_record.sh stage keeps it on the machine, which
#              joins and installs the wheel once all parts are there (device_record.sh's header says
#              the calls).  Nothing is recompressed: the wheel's own sha256 (bench/device_wheels.txt)
#              is checked again on the machine.
# Both folders are git-ignored.  Run from the repository root; needs pip and split (a folder that
# verifies is kept).
#   usage: bash bench/fetch_wheels.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PLAT=(--only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 --abi abi3 --abi none
      --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64
      --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any)
LIBS=nvidia-cutlass-dsl-libs-cu13==4.8.1
LIBS_SHA=50191a381d8cc1393373ae0bc879b0aefa9a256c23c22d4fa1c2fe3dfe57bc90
mkdir -p .whl .whl-dsl
grep -v '^#' bench/device_wheels.txt > .whl/requirements.txt
python3 -m pip download -q --no-deps --require-hashes "${PLAT[@]}" -d .whl -r .whl/requirements.txt
rm -f .whl/requirements.txt
n=$(ls .whl/*.whl | wc -l)
[ "$n" -eq "$(grep -c '^[a-z]' bench/device_wheels.txt)" ] || { echo "fetch_wheels: $n wheels in .whl, not one a line of bench/device_wheels.txt (an old one left?)" >&2; exit 1; }
if (cd .whl-dsl && [ -f SHA256SUMS ] && [ -f NAME ] && sha256sum -c --quiet SHA256SUMS); then
  echo "fetch_wheels: .whl-dsl verifies (SHA256SUMS): kept"
else
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  echo "$LIBS --hash=sha256:$LIBS_SHA" > "$tmp/req.txt"
  python3 -m pip download -q --no-deps --require-hashes "${PLAT[@]}" -d "$tmp" -r "$tmp/req.txt"
  whl=$(cd "$tmp" && ls nvidia_cutlass_dsl_libs_cu13-*.whl)
  rm -f .whl-dsl/*
  split -b 30M -d -a 2 "$tmp/$whl" .whl-dsl/part-
  echo "$whl" > .whl-dsl/NAME
  (cd .whl-dsl && sha256sum part-* > SHA256SUMS)
fi
du -sh .whl .whl-dsl/part-*
echo "fetch_wheels: carry .whl in the call that installs, one .whl-dsl part (with .whl-dsl/SHA256SUMS and NAME) a call"
