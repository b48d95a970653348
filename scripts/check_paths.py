#!/usr/bin/env python3
"""check_paths.py: every repository path that a comment, a doc or a script names must exist.

Read: the files git tracks or would add (docs, comments and code alike), except recorded data
(figures/data/, docs/journal/data/, tests/golden/, fuzz corpora) and records of the past
(docs/journal/*.md, fuzz/RESULTS.md), which name files as they were then (git log finds them;
only their links are checked).  Three kinds of names:

  1. a path from the repository root, starting with one of its top folders (kernels/, docs/,
     figures/, src/, include/, tests/, scripts/, bench/, notebooks/, cli/, reference/, fuzz/,
     python/, examples/) or
     with a folder the repository no longer has (sim/): it must name a file or folder; a pattern
     ('*', '?', '{a,b}', '<x>', 'NN' standing for digits, '...') must match at least one file;
  2. a bare C or CUDA file name (name.c, .h, .cu, .cuh) outside a path: some file of the
     repository must have that name (a renamed file's old name is caught here);
  3. a relative link of a Markdown file, [text](target) or ![](target): it must exist relative to
     the file.

Names that are not paths of this repository (another project's file, an output a command
creates) are listed in FOREIGN with the reason.  Exit 1 with one line per missing name (file,
line, name), 0 when all exist; --self-test plants a wrong name of each kind in a copy and requires
each caught.

    python3 scripts/check_paths.py [ROOT]
    python3 scripts/check_paths.py --self-test
"""
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tempfile

import check_main  # scripts/, beside this file

TOPS = ("kernels", "docs", "figures", "src", "include", "tests", "scripts", "bench", "notebooks", "cli",
        "reference", "fuzz", "python", "sim", "examples")
TEXT = (".md", ".c", ".h", ".cu", ".cuh", ".py", ".sh", ".gp", ".txt", ".cmake", ".def", ".conf", ".json", ".yml",
        ".yaml", ".toml", ".ipynb")
SKIP = ("figures/data/", "tests/golden/", "fuzz/corpus", "docs/journal/data/")
# Records of the past, which name files as they were then (git log finds them): only their links
# are checked.
HISTORY = ("docs/journal/", "fuzz/RESULTS.md")
# Names that are not files of this repository: name -> (why, the files that may name it; empty:
# any file).
FOREIGN = {
    "llm.c": ("karpathy/llm.c, a project the ladder's style follows", ()),
    "kernel_backward.h": ("PyTorch's memory-efficient attention (xFormers) source", ()),
    "flash_bwd_kernel.h": ("FlashAttention-2's source", ()),
    "flash_fwd_launch_template.h": ("FlashAttention-2's source", ()),
    "flash_bwd_launch_template.h": ("FlashAttention-2's source", ()),
    "kernel_forward.h": ("PyTorch's memory-efficient attention (xFormers) source", ()),
    "timeout-posix.c": ("BoxFort's source (Criterion's sandbox)", ()),
    "test_planted.c": ("a file tests/check_no_criterion_timeout.cmake writes", ("tests/CMakeLists.txt",)),
    "src/libflashlab.so": ("inside a build folder", ("python/flashlab/__init__.py",)),
    "cli/flashlab": ("inside a build folder", ("python/flashlab/__init__.py",)),
    "include/flashlab/version.h": ("generated in the build folder from include/flashlab/version.h.in",
                                   ("CMakeLists.txt", "src/CMakeLists.txt")),
    "include/flashlab/cuda": ("a folder of the install prefix, written by `cmake --install`",
                              ("cmake/install.cmake", "docs/install.md")),
    "version.h": ("generated in the build folder from include/flashlab/version.h.in", ()),
    "app.c": ("the reader's own program in an install example", ("README.md", "docs/install.md")),
    "python/tutorials/06-fused-attention.py": ("Triton's tutorial (triton-lang/triton)", ()),
    "bench/l2_probe": ("a binary built from bench/l2_probe.cu, not tracked", ()),
    "prototypes.c": ("a file the binding's check writes in a temporary folder", ("python/flashlab/__init__.py",)),
    "notebooks/X": ("a pattern of a docstring (a notebook file X)", ("notebooks/tests/test_citations.py",)),
    "reference/masks.h": ("a name the citation test feeds its scanner; output text of src/ (printed by `flashlab "
                          "example`, recorded in its goldens) left to src/'s refactoring",
                          ("notebooks/tests/test_citations.py", "src/analysis/examples_masks_heads.c")),
    "kernels/NOTES.md": ("a name the citation test feeds its scanner", ("notebooks/tests/test_citations.py",)),
    "kernels/ladder/v14_copy.cu": ("a planted fault", ("scripts/check_ladder.py",)),
    "kernels/ladder/v99_missing.cu": ("a planted fault", ("scripts/check_paths.py",)),
    "sim/sched_flash2.c": ("a planted fault", ("scripts/check_paths.py",)),
    "closed_variants.c": ("a planted fault", ("scripts/check_paths.py",)),
    "figures/data/gpu_sdpa_v99_*.csv": ("a planted fault", ("scripts/check_paths.py",)),
    "../figures/no_such_figure.png": ("a planted fault", ("scripts/check_paths.py",)),
    "kernels/ladder/vNN_test_rung.cu": ("the test rung scripts/cuda_arch_matrix.sh adds to a copy",
                                        ("scripts/cuda_arch_matrix.sh",)),
    "reference/heads.h": ("output text of src/ (printed by `flashlab example`, recorded in its goldens) left to "
                          "src/'s refactoring", ("src/analysis/examples_masks_heads.c",)),
}


def foreign(name, rel):
    why, where = FOREIGN.get(name, (None, ()))
    return why is not None and (not where or rel in where or rel == "scripts/check_paths.py")


PATH = re.compile(r"(?<![\w./~$-])((?:%s)/[\w.*?{}<>,/+-]*[\w*}>])" % "|".join(TOPS))
BARE = re.compile(r"(?<![\w./~$-])([A-Za-z_][\w-]*\.(?:c|h|cu|cuh))\b(?![/\w-]|\.\w)")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def tracked(root):
    """The files git tracks or would add under root (relative paths)."""
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=root, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"git ls-files in {root}: {out.stderr.strip()}")
    return sorted(f for f in out.stdout.split("\n") if f and os.path.isfile(os.path.join(root, f)))


def as_glob(name):
    """A named path as a glob pattern: braces, angle brackets, capitals (NAME), NN and ... stand
    for anything."""
    g = re.sub(r"\{[^}]*\}|<[^>]*>|\.\.\.|\b[A-Z]{2,}\b", "*", name)  # NAME, WHAT: placeholders
    return re.sub(r"N+(?=[_.*])|(?<=v)N+", lambda m: "?" * len(m.group(0)), g)


def exists(root, files, dirs, name, here=""):
    """name exists from the root or from the folder `here` of the file naming it or a folder above
    it (CMake's relative paths, a module's own tests/); a pattern matches a file or folder."""
    name = name.rstrip("/.,")
    while True:
        if os.path.exists(os.path.join(root, here, name)):
            return True
        if not here:
            break
        here = os.path.dirname(here)
    pat = as_glob(name)
    if pat != name or any(c in name for c in "*?"):
        return any(fnmatch.fnmatch(f, pat) or fnmatch.fnmatch(f, pat + "/*") for f in files) or \
            any(fnmatch.fnmatch(d, pat) for d in dirs)
    return False


def comment(rel, line):
    """The line may hold a comment or prose: any line of a doc; in code, a line with a comment
    marker or inside a block comment (approximated: starting with '*'), where file names are
    named rather than used."""
    if not rel.endswith((".c", ".h", ".cu", ".cuh", ".py", ".sh")):
        return True
    t = line.strip()
    return t.startswith(("*", "/*", "//", "#")) or "/*" in line or "//" in line or " # " in line or \
        (rel.endswith(".py") and not re.search(r"[=(\[]", t))


def problems(root):
    files = tracked(root)
    dirs = {os.path.dirname(f) for f in files}
    dirs |= {p for d in list(dirs) for p in [d[:i] for i in range(len(d)) if d[i] == "/"]}
    names = {os.path.basename(f) for f in files}
    bad = []
    for rel in files:
        if not rel.endswith(TEXT) and os.path.basename(rel) not in ("CMakeLists.txt",):
            continue
        if rel.startswith(SKIP):
            continue
        journal = rel.startswith(HISTORY)
        try:
            text = open(os.path.join(root, rel), encoding="utf-8").read()
        except UnicodeDecodeError:
            continue
        for n, line in enumerate(text.split("\n"), 1):
            if "://" in line:
                line = re.sub(r"\w+://\S+", " ", line)
            if not journal:
                for m in PATH.finditer(line):
                    p = m.group(1)
                    if line[m.end():m.end() + 1] in ("$", "{") or p.count("{") > p.count("}") or foreign(p, rel) or \
                            exists(root, files, dirs, p, os.path.dirname(rel)):
                        continue  # a name built from a variable, another project's, or there
                    bad.append(f"{rel}:{n}: {p} does not exist")
                for m in BARE.finditer("" if re.match(r"\s*#\s*include", line) or not comment(rel, line) else line):
                    b = m.group(1)
                    if b not in names and not foreign(b, rel):
                        bad.append(f"{rel}:{n}: {b}: no file of the repository has this name")
            if rel.endswith(".md"):
                for m in LINK.finditer(line):
                    t = m.group(1).split("#")[0]
                    if not t or t.startswith(("http", "mailto:")):
                        continue
                    if not foreign(t, rel) and not os.path.exists(os.path.normpath(os.path.join(root, os.path.dirname(rel), t))):
                        bad.append(f"{rel}:{n}: link {t} does not exist")
    return bad


def self_test(root):
    """Each kind of wrong name planted in a copy of the tracked files must be caught."""
    plants = [
        ("docs/architecture.md", "\nSee `kernels/ladder/v99_missing.cu`.\n", "kernels/ladder/v99_missing.cu does not exist"),
        ("include/flashlab/footprint.h", "\n/* the old sim/sched_flash2.c */\n", "sim/sched_flash2.c does not exist"),
        ("src/analysis/gpu_order.c", "\n/* see closed_variants.c */\n", "closed_variants.c: no file"),
        ("docs/architecture.md", "\n![x](../figures/no_such_figure.png)\n", "link ../figures/no_such_figure.png"),
        ("docs/architecture.md", "\nthe records `figures/data/gpu_sdpa_v99_*.csv`\n", "gpu_sdpa_v99_*.csv does not exist"),
    ]
    bad = 0
    with tempfile.TemporaryDirectory() as d:
        for f in tracked(root):
            os.makedirs(os.path.join(d, os.path.dirname(f)), exist_ok=True)
            shutil.copy2(os.path.join(root, f), os.path.join(d, f))
        subprocess.run(["git", "init", "-q", d], check=True)
        base = problems(d)
        if base:
            print(f"check_paths self-test: the copy fails before any fault: {base[:3]}")
            return 1
        for rel, text, says in plants:
            p = os.path.join(d, rel)
            old = open(p, encoding="utf-8").read()
            open(p, "w", encoding="utf-8").write(old + text)
            found = problems(d)
            open(p, "w", encoding="utf-8").write(old)
            hit = [f for f in found if says in f]
            if not hit:
                bad += 1
                print(f"check_paths self-test: not caught: {text.strip()} in {rel} ({found[:3]})")
            else:
                print(f"caught: {hit[0]}")
    print(f"check_paths self-test: {len(plants)} planted names, {len(plants) - bad} caught")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(check_main.main(sys.argv, __doc__, problems, self_test,
                             lambda root, bad: f"check_paths: {len(bad)} names of missing files"))
