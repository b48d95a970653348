#!/usr/bin/env bash
# coverage.sh: source coverage of each fuzzer's corpus (clang source-based coverage).
#
#   fuzz/coverage.sh [NAME ...]     every fuzz_*.c (or the named ones)
#
# Builds the harnesses without sanitizers but with -fprofile-instr-generate -fcoverage-mapping
# (build-fuzzcov/), replays fuzz/corpus/NAME plus build-fuzz/corpus-new/NAME (what fuzz/run.sh
# found), and prints llvm-cov's line and branch coverage of the files each harness is aimed at.
# fuzz/RESULTS.md records the numbers.
set -euo pipefail
cd "$(dirname "$0")/.."
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for f in fuzz/fuzz_*.c; do n=$(basename "$f" .c); names+=("${n#fuzz_}"); done
fi
cmake -S . -B build-fuzzcov -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug -DFLASHLAB_FUZZ=ON \
  -DFLASHLAB_CUDA=OFF -DCMAKE_C_FLAGS="-fprofile-instr-generate -fcoverage-mapping" \
  -DCMAKE_EXE_LINKER_FLAGS="-fprofile-instr-generate" >/dev/null
cmake --build build-fuzzcov -j 2 --target $(printf 'fuzz_%s ' "${names[@]}") >/dev/null

# the sources each harness is aimed at
declare -A files=(
  [cli]="cli/main.c cli/args.c cli/cmd_count.c cli/cmd_example.c cli/cmd_trace.c"
  [list]="cli/listparse.c cli/args.c"
  [problem]="src/problem/problem.c src/run/run.c src/machine/machine.c src/schedules/standard.c src/schedules/flash1.c src/schedules/flash2.c"
  [softmax]="src/machine/ops.c reference/attention_ref.c"
  [variants]="src/problem/problem.c src/schedules/rules.c src/problem/segments.c src/mask/masks.c src/mask/heads.c src/schedules/flash_bwd.c"
  [decode]="src/schedules/decode.c src/run/run.c"
  [api]="src/run/run.c src/machine/ops.c src/mask/masks.c src/mask/heads.c src/problem/segments.c"
  [optimize_l2]="src/analysis/optimize.c src/analysis/l2.c src/analysis/gpu_order.c"
)
for n in "${names[@]}"; do
  dir=build-fuzzcov/prof/$n
  rm -rf "$dir" && mkdir -p "$dir"
  corpora=(fuzz/corpus/"$n")
  [ -d "build-fuzz/corpus-new/$n" ] && corpora+=("build-fuzz/corpus-new/$n")
  LLVM_PROFILE_FILE="$dir/%p.profraw" build-fuzzcov/fuzz/fuzz_"$n" -runs=0 "${corpora[@]}" >/dev/null 2>&1 || true
  llvm-profdata merge -sparse "$dir"/*.profraw -o "$dir/all.profdata"
  echo "== fuzz_$n ($(cat "${corpora[@]/%//*}" 2>/dev/null | wc -c) corpus bytes)"
  srcs=(); for f in ${files[$n]:-}; do srcs+=("$PWD/$f"); done
  llvm-cov report build-fuzzcov/fuzz/fuzz_"$n" -instr-profile="$dir/all.profdata" "${srcs[@]}" \
    | sed "s|$PWD/||" | awk 'NR == 1 || /^(src|cli|reference)\// || /^TOTAL/ {print "   " $0}'
done
