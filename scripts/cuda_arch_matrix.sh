#!/usr/bin/env bash
# cuda_arch_matrix.sh: compile-only check (no GPU) that the kernel ladder builds for every NVIDIA
# GPU generation a class may have, and that each target holds the real kernels of exactly the
# versions whose instructions it has (kernels/common/arch.cuh: a stub that traps for the others).
#
# usage: scripts/cuda_arch_matrix.sh [BUILD_DIR] [ARCHS]
#   BUILD_DIR  default build-archs
#   ARCHS      default "75 80 86 89 90a": T4; A100; RTX 30, A10; RTX 40, L4, L40; H100, H200
#              (add 100 for the B200, planned; wgmma is sm_90a's, so version 10 is a stub there)
#
# The build is of a copy of the working tree (BUILD_DIR/tree: the files git tracks or would add)
# with a test-only rung added the way any rung is added, one file and one line: the file a copy of
# version 3 renamed (kernels/ladder/vNN_test_rung.cu, NN the next version), the line its FL_RUNG in
# kernels/ladder/ladder.def.  The copy is checked to differ from the tree by exactly that file and
# that line, and the rung must be compiled for every target and listed by `flashlab-gpu --list`
# (which needs no GPU): adding a rung touches nothing else.
#
# One CMake build: flashlab-gpu (with counters) and examples/'s my-attention (a user's kernel with
# the counters) for all ARCHS as machine code (sm_XX, no PTX), their per-architecture PTX kept; flashlab-gpu-timing and libflashlab_kernels.so for sm_90a only (the
# kernels are the same code, without counters).  Then, for every rung of ladder.def and every
# target, the PTX of each of its kernels is read: a kernel is a stub when it traps.  The expected
# set comes from the file's own FL_V_NEEDS (the definition its kernel guards use): FL_NEED_BASE on
# every target, FL_NEED_SM80 from sm_80 on, FL_NEED_SM90A on sm_90a only.  Prints the version x
# target table; exit 1 on a compile error, a version that is a stub where it should be real or
# real where it cannot be, a test rung not built, not listed or not added by one file and one
# line, or my-attention without its kernel's machine code for every target.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-build-archs}
ARCHS=${2:-"75 80 86 89 90a"}
jobs=$(nproc 2>/dev/null || echo 2)
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] ||
  { echo "cuda_arch_matrix: nvcc not found: nothing to check" >&2; exit 77; }
real=""
for a in $ARCHS; do real="$real${real:+;}$a-real"; done
aux=90a-real
case " $ARCHS " in *" 90a "*) ;; *) aux=${ARCHS##* }-real ;; esac
KEEP=$PWD/$DIR/keep-ptx
TREE=$PWD/$DIR/tree
rm -rf "$KEEP"
mkdir -p "$TREE"
# The copy (the files git tracks or would add) with the test rung: a copy of version 3 renamed, and
# its line in the list.  A file is rewritten only when its content changed (so its modification
# time says so and the build in $DIR/build stays incremental and right); files gone are removed.
# Then the copy must differ from the tree by exactly that file and that line.
test_v=$(PYTHONPATH=bench python3 -c 'import ladder; print(ladder.versions()[-1] + 1)')
NN=$(printf %02d "$test_v")
rung=kernels/ladder/v${NN}_test_rung.cu
changed=$(git ls-files -co --exclude-standard | python3 -c '
import filecmp, os, re, sys
tree, rung, NN, v = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
repo = sorted(f for f in set(sys.stdin.read().split("\n")) - {""} if os.path.isfile(f))
want = {f: open(f, "rb").read() for f in repo}
v3 = want["kernels/ladder/v03_flash2_fwd.cu"].decode()
v3 = v3.replace("FL_LADDER_FILE(03,", "FL_LADDER_FILE(%s," % NN).replace("{&FL_FLASH2_FWD, 3,", "{&FL_FLASH2_FWD, %s," % v)
want[rung] = re.sub(r"fl_flash2_fwd\b", "fl_test_rung_fwd", v3.replace("v03_", "v%s_" % NN)).encode()
d = "kernels/ladder/ladder.def"
want[d] = want[d].replace(b"#undef FL_RUNG\n",
                          b"FL_RUNG(%s, v%s_test_rung, 0, 0, \"test only: a copy of version 3\")\n#undef FL_RUNG\n"
                          % (NN.encode(), NN.encode()), 1)
have = {os.path.relpath(os.path.join(r, f), tree) for r, _, fs in os.walk(tree) for f in fs}
for f in have - set(want):
    os.remove(os.path.join(tree, f))
for f, b in want.items():
    p = os.path.join(tree, f)
    if not os.path.isfile(p) or open(p, "rb").read() != b:
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as o:
            o.write(b)
copy = {os.path.relpath(os.path.join(r, f), tree) for r, _, fs in os.walk(tree) for f in fs}
out = ["added " + f for f in sorted(copy - set(repo))] + ["removed " + f for f in sorted(set(repo) - copy)]
out += ["changed " + f for f in sorted(copy & set(repo)) if not filecmp.cmp(f, os.path.join(tree, f), shallow=False)]
print(";".join(out))' "$TREE" "$rung" "$NN" "$test_v")
lines=$(diff kernels/ladder/ladder.def "$TREE/kernels/ladder/ladder.def" | grep -c '^[<>]' || true)
added=$(diff kernels/ladder/ladder.def "$TREE/kernels/ladder/ladder.def" | grep -c '^>' || true)
if [ "$changed" != "added $rung;changed kernels/ladder/ladder.def" ] || [ "$lines" != 1 ] || [ "$added" != 1 ]; then
  echo "cuda_arch_matrix: the test rung is not one file and one line: $changed ($lines lines of ladder.def)" >&2
  exit 1
fi
echo "cuda_arch_matrix: test rung $test_v added as one file ($rung) and one line of ladder.def"
start=$(date +%s)
cmake -S "$TREE" -B "$DIR/build" -DCMAKE_BUILD_TYPE=Release -DFLASHLAB_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=$real" \
  "-DFLASHLAB_AUX_CUDA_ARCHITECTURES=$aux" "-DFLASHLAB_KEEP_PTX_DIR=$KEEP" >/dev/null
cmake --build "$DIR/build" -j "$jobs" --target flashlab_gpu flashlab_gpu_timing flashlab_kernels flashlab_example_attn
end=$(date +%s)
echo "cuda_arch_matrix: built for $ARCHS in $((end - start)) s ($jobs jobs)"
for a in $ARCHS; do # examples/: nvcc -keep leaves one cubin per target, which must hold the kernel
  cubin=$KEEP/examples/my_attention.compute_$a.cubin
  [ -f "$cubin" ] && grep -aq my_attn_fwd "$cubin" ||
    { echo "cuda_arch_matrix: my-attention (examples/) has no machine code of my_attn_fwd for sm_$a ($cubin)" >&2; exit 1; }
done
echo "cuda_arch_matrix: my-attention (examples/) holds my_attn_fwd for $ARCHS"
list=$("$DIR/build/flashlab-gpu" --list) || { echo "cuda_arch_matrix: flashlab-gpu --list failed" >&2; exit 1; }
if ! grep -q "^$test_v  *v${NN}_test_rung.cu " <<<"$list" || ! grep -qE "^flash2 +fwd +$test_v " <<<"$list"; then
  echo "cuda_arch_matrix: flashlab-gpu --list does not list the test rung $test_v and its kernels:" >&2
  echo "$list" >&2
  exit 1
fi
echo "cuda_arch_matrix: flashlab-gpu --list lists test rung $test_v ($(grep -cE "^flash2 +fwd +$test_v " <<<"$list") kernels)"
check() { # $1 = the ladder folder (ladder.def, the sources' FL_V_NEEDS); prints the table, exit 1 on a mismatch
PYTHONPATH=bench python3 - "$KEEP" "$1" $ARCHS <<'EOF'
import os, re, sys
import ladder as lad
keep, ladder, archs = sys.argv[1], sys.argv[2], sys.argv[3:]
NEED = {"FL_NEED_BASE": 750, "FL_NEED_SM80": 800, "FL_NEED_SM90A": 901}
def has(need, arch):
    num = int(arch.rstrip("a")) * 10
    return (num == 900 and arch.endswith("a")) if need == 901 else num >= need
bad = 0
print("version  needs          " + "".join(f"{a:>8}" for a in archs))
for rung in lad.rungs_of(os.path.join(ladder, "ladder.def")):
    src = os.path.join(ladder, rung.stem + ".cu")
    base = rung.stem
    m = re.search(r"#define\s+FL_V_NEEDS\s+(FL_NEED_\w+)", open(src).read())
    if not m:
        print(f"{base}: no FL_V_NEEDS"); bad += 1; continue
    need = NEED[m.group(1)]
    row = []
    for a in archs:
        ptx = os.path.join(keep, f"{base}.compute_{a}.ptx")
        if len(archs) == 1 and not os.path.exists(ptx):  # one target: nvcc keeps base.ptx
            ptx = os.path.join(keep, f"{base}.ptx")
        if not os.path.exists(ptx):
            row.append("MISSING"); bad += 1; continue
        text = open(ptx).read()
        kernels = re.findall(r"\.entry\s+(\S+)\((.*?)\n\}", text, re.S)
        kernels = [(n, b) for n, b in kernels if "probe_kernel" not in n]
        stubs = sum(1 for _, b in kernels if re.search(r"\btrap;", b))
        want_real = has(need, a)
        if not kernels:
            row.append("NONE"); bad += 1
        elif want_real and stubs == 0:
            row.append("real")
        elif not want_real and stubs == len(kernels):
            row.append("stub")
        else:
            row.append(f"WRONG({stubs}/{len(kernels)})"); bad += 1
    print(f"{base[:3]:<8} {m.group(1)[8:]:<14} " + "".join(f"{c:>8}" for c in row))
print("cuda_arch_matrix: " + ("every version real where its instructions exist, a stub elsewhere" if not bad
                              else f"{bad} mismatches"))
sys.exit(1 if bad else 0)
EOF
}
check "$TREE/kernels/ladder"
# The check itself, against plausible wrong declarations (no compiling: the same PTX, a copy of the
# sources with version 7 claiming sm_75 and version 10 claiming sm_80): it must fail.
WRONG=$(mktemp -d)
cp "$TREE"/kernels/ladder/* "$WRONG"/
sed -i 's/#define FL_V_NEEDS FL_NEED_SM80/#define FL_V_NEEDS FL_NEED_BASE/' "$WRONG"/v07_*.cu
sed -i 's/#define FL_V_NEEDS FL_NEED_SM90A/#define FL_V_NEEDS FL_NEED_SM80/' "$WRONG"/v10_*.cu
if check "$WRONG" >"$WRONG/out.txt"; then
  echo "cuda_arch_matrix: the check passed sources whose FL_V_NEEDS is wrong" >&2; rm -rf "$WRONG"; exit 1
fi
echo "cuda_arch_matrix: self-test: wrong FL_V_NEEDS caught in $(grep -c WRONG "$WRONG/out.txt") versions"
rm -rf "$WRONG"
