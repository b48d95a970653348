#!/usr/bin/env python3
"""check_counted_access.py: fails when kernel code reaches global memory other than through the
counted pointer types of kernels/common/counted.cuh, the one header allowed to.

    python3 scripts/check_counted_access.py [DIR]     check DIR (default: kernels/ and examples/ of
                                                      this checkout: a user's kernel keeps the rules)
    python3 scripts/check_counted_access.py --self-test
                                                      plant each kind of violation in a copy of
                                                      kernels/ and require that each one fails

Rules, over every .cu, .cuh, .h file under DIR except common/counted.cuh (comments removed; the
PTX rules read string literals, the others the code outside them):
  1. no load/store/atomic intrinsic: __ldg, __ldcg, __ldca, __ldcs, __ldlu, __ldcv, __stcg,
     __stcs, __stwb, __stwt, atomic*() (atomicAdd, atomicExch, ...);
  2. no PTX that touches global or generic memory in a string of PTX code (one with an operand %,
     an address [ or a statement end ;): ld/st/ldu/red/atom/prefetch
     with .global, or without a state space (generic: may be global), cp.async and cp.async.bulk
     copies (their commit and wait instructions move nothing and are allowed), multimem;
  3. a __global__ function's parameters are counted pointers (fl_gptr), counted tensor maps
     (fl_gtmap, __grid_constant__), the counter sink (fl_csink) or scalars: no raw pointer,
     reference or other type that could carry an address;
  4. no __device__ or __managed__ variable (global memory the kernel could touch by name).
Each finding is one line, FILE:LINE: rule: text.  Exit status 0 clean, 1 findings, 2 bad usage.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

ALLOWED = os.path.join("common", "counted.cuh")
EXTS = (".cu", ".cuh", ".h", ".hpp")

INTRINSICS = re.compile(r"\b(__ldg|__ldcg|__ldca|__ldcs|__ldlu|__ldcv|__stcg|__stcs|__stwb|__stwt|atomic[A-Z]\w*)\s*\(")
PTX_OPCODE = re.compile(r"(?<![\w.])(ld|st|ldu|red|atom|prefetch|cp|multimem)(\.[\w:]+)+")
PTX_MOVES_NOTHING = ("cp.async.commit_group", "cp.async.wait_group", "cp.async.wait_all",
                     "cp.async.bulk.commit_group", "cp.async.bulk.wait_group", "cp.async.mbarrier")
ON_CHIP_SPACES = (".shared", ".local", ".param", ".const")


def strip_comments(text):
    """text with // and /* */ comments blanked (newlines kept); string and char literals kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def split_strings(text):
    """(code with string literals blanked, [(offset, contents)]): adjacent literals (only white
    space between them) are joined, as the compiler joins them."""
    code, strings, i, n = [], [], 0, len(text)
    last_end = -1
    while i < n:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            if c == '"':
                if strings and last_end >= 0 and not text[last_end:i].strip():
                    strings[-1] = (strings[-1][0], strings[-1][1] + text[i + 1:j])
                else:
                    strings.append((i, text[i + 1:j]))
                last_end = j + 1
            code.append(c + " " * (j - i - 1) + (c if j < n else ""))
            i = j + 1
        else:
            code.append(c)
            i += 1
    return "".join(code), strings


def is_ptx(s):
    """A string literal that is PTX code: it has an operand (%), an address ([) or a statement end (;)."""
    return any(ch in s for ch in "%[;")


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def ptx_finding(op):
    """Why a PTX opcode touches global memory, or None."""
    if op.startswith(PTX_MOVES_NOTHING):
        return None
    head = op.split(".")[0]
    if head in ("cp", "multimem"):
        return "a copy or multimem instruction outside counted.cuh" if op.startswith(("cp.async", "cp.reduce", "multimem")) else None
    if ".global" in op:
        return "PTX access to global memory"
    if any(s in op for s in ON_CHIP_SPACES):
        return None
    return "PTX access to generic memory (may be global)"


# What a kernel may take: counted pointers, the counter sink, scalars.
KERNEL_PARAM = re.compile(r"^(const\s+)?(__grid_constant__\s+)?(fl_gptr\s*<.*>|fl_gtmap\s*<.*>|fl_csink|int|long|long long|unsigned|unsigned int|unsigned long|"
                          r"unsigned long long|float|double|bool|size_t|int64_t|uint64_t|int32_t|uint32_t)(\s+const)?\s+\w+$")


def split_params(params):
    """A parameter list split at the commas outside <> and ()."""
    out, depth, cur = [], 0, []
    for ch in params:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return out


def kernel_params(code):
    """[(offset, parameter text)] of every __global__ function in code (strings blanked)."""
    out = []
    for m in re.finditer(r"\b__global__\b", code):
        k = code.find("(", m.end())
        semi = code.find(";", m.end())
        brace = code.find("{", m.end())
        if k < 0 or (0 <= semi < k) or (0 <= brace < k):
            continue
        # skip __launch_bounds__(...) and similar attributes between __global__ and the name
        while True:
            before = code[m.end():k]
            if re.search(r"__launch_bounds__\s*$", before) or re.search(r"__maxnreg__\s*$", before):
                depth, j = 0, k
                while j < len(code):
                    depth += code[j] == "("
                    depth -= code[j] == ")"
                    if depth == 0:
                        break
                    j += 1
                k = code.find("(", j + 1)
                continue
            break
        depth, j = 0, k
        while j < len(code):
            depth += code[j] == "("
            depth -= code[j] == ")"
            if depth == 0:
                break
            j += 1
        out.append((k, code[k + 1:j]))
    return out


def check_file(path, rel):
    text = strip_comments(open(path, encoding="utf-8", errors="replace").read())
    code, strings = split_strings(text)
    found = []
    for m in INTRINSICS.finditer(code):
        found.append((line_of(text, m.start()), "load/store/atomic intrinsic", m.group(1)))
    for off, s in strings:
        if not is_ptx(s):
            continue
        for m in PTX_OPCODE.finditer(s):
            why = ptx_finding(m.group(0))
            if why:
                found.append((line_of(text, off), why, m.group(0)))
    for off, params in kernel_params(code):
        for p in split_params(params):
            p = " ".join(p.split())
            if not p or p == "void":
                continue
            if "*" in p or "&" in p:
                found.append((line_of(text, off), "raw pointer parameter of a kernel", p))
            elif not KERNEL_PARAM.match(p):
                found.append((line_of(text, off), "kernel parameter of a type that may hold a pointer", p))
    for m in re.finditer(r"\b(__device__|__managed__)\b", code):
        rest = code[m.end():]
        stop = re.search(r"[;{(]", rest)
        if stop and stop.group(0) == ";" or (stop and stop.group(0) == "(" and "=" in rest[:stop.start()]):
            found.append((line_of(text, m.start()), "__device__ variable", " ".join(rest[:stop.start()].split())))
    return [f"{rel}:{ln}: {why}: {what}" for ln, why, what in found]


def check_tree(root):
    findings, nfiles = [], 0
    for dirpath, _, files in os.walk(root):
        for f in sorted(files):
            if not f.endswith(EXTS):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root)
            if rel == ALLOWED:
                continue
            nfiles += 1
            findings += check_file(path, rel)
    return findings, nfiles


# Each planted file holds one violation; the check must fail on every one.
PLANTED = {
    "raw_ldcg.cu": "__global__ void k(fl_gptr<const float, 0> a, fl_csink g) { float x = __ldcg(&y); }\n",
    "raw_pointer_param.cu": "__global__ void __launch_bounds__(128) k(const float *__restrict__ q, int n) {}\n",
    "raw_red_global.cuh": 'inline __device__ void f(float *p) { asm volatile("red.global.add.f32 [%0], 1.0;" :: "l"(p)); }\n',
    "raw_cp_async.cuh": 'inline __device__ void f(void *s, const void *g) { asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(0), "l"(g)); }\n',
    "raw_generic_ld.cuh": 'inline __device__ unsigned f(const unsigned *p) { unsigned v; asm volatile("ld.volatile.u32 %0, [%1];" : "=r"(v) : "l"(p)); return v; }\n',
    "raw_atomic.cu": "inline __device__ void f(float *p) { atomicAdd(p, 1.f); }\n",
    "raw_device_variable.cu": "__device__ float scratch[64];\n",
    "raw_struct_param.cu": "struct args { float *p; };\n__global__ void k(args a, int n) {}\n",
    "raw_tensormap_param.cu": "__global__ void k(const __grid_constant__ CUtensorMap m, int n) {}\n",
    "raw_tma.cuh": 'inline __device__ void f() { asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::); }\n',
}


def self_test(src):
    bad = 0
    clean, n = check_tree(src)
    if clean:
        print(f"self-test: the kernels themselves fail the check ({len(clean)} findings); fix them first")
        for f in clean:
            print("  " + f)
        return 1
    for name, body in PLANTED.items():
        tmp = tempfile.mkdtemp()
        try:
            dst = os.path.join(tmp, "kernels")
            shutil.copytree(src, dst)
            with open(os.path.join(dst, "ladder", name), "w") as f:
                f.write("/* a planted violation */\n" + body)
            found, _ = check_tree(dst)
            hit = [f for f in found if f.startswith(os.path.join("ladder", name))]
            rc = subprocess.run([sys.executable, os.path.abspath(__file__), dst], capture_output=True).returncode
            if not hit or rc != 1:
                bad += 1
                print(f"self-test: FAIL: {name} was not caught (exit {rc})")
            else:
                print(f"self-test: caught {hit[0]}")
        finally:
            shutil.rmtree(tmp)
    print(f"self-test: {len(PLANTED)} planted violations, {len(PLANTED) - bad} caught; the {n} files of {src} clean")
    return 1 if bad else 0


def main():
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kernels")
    args = sys.argv[1:]
    if args[:1] == ["--self-test"]:
        return self_test(os.path.normpath(args[1] if len(args) > 1 else here))
    if len(args) > 1 or (args and args[0].startswith("-")):
        print(__doc__, file=sys.stderr)
        return 2
    root = os.path.normpath(args[0] if args else here)
    if not os.path.isdir(root):
        print(f"check_counted_access: {root}: not a directory", file=sys.stderr)
        return 2
    if not os.path.isfile(os.path.join(root, ALLOWED)):
        print(f"check_counted_access: {root}: no {ALLOWED} (the counted pointer header)", file=sys.stderr)
        return 2
    findings, n = check_tree(root)
    examples = os.path.normpath(os.path.join(here, "..", "examples"))
    if not args and os.path.isdir(examples):
        more, m = check_tree(examples)
        findings, n = findings + [os.path.join("..", "examples", f) for f in more], n + m
    for f in findings:
        print(f)
    print(f"check_counted_access: {n} files, {len(findings)} raw global accesses outside {ALLOWED}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
