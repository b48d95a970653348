#!/usr/bin/env python3
"""same_code.py: does a kernel version's source at one commit compile to the same device code as at
another?  The evidence behind kernels/same_code.csv, the ledger through which
tests/check_gpu_records.py ties a benchmark record, taken on the source of one commit, to today's
source when the two differ only where the device code does not (a comment, a renamed template, a
refactor of the host interface).

For each commit: the version's ladder file (kernels/ladder/vNN_*.cu, as bench/kernel_source.py
finds it) is compiled from `git archive` of the commit to sm_90a PTX (nvcc -std=c++17 -O3, the fast
library's flags without -lineinfo; -I kernels/common, kernels/harness, include, kernels/ladder),
then normalized: every mangled name (_Z...) replaced by its order of first appearance, comment
lines dropped.  Equal normalized PTX is the same device code for the same ptxas.  The host code
(the launch: grid, tile choice) is NOT compared: a change there must be measured again.

  PYTHONPATH=bench python3 scripts/same_code.py VERSION FROM TO [--add]   compare; with --add, append the ledger
                                                         line when the PTX is the same
  PYTHONPATH=bench python3 scripts/same_code.py --check                   re-verify every line of the ledger

Exit 0: the same (or every line verified); 1: different (or a line fails); 2: bad input; 77: no
nvcc, or git cannot read a commit (a shallow clone): nothing was compared.
"""
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
import kernel_source   # bench/, on PYTHONPATH (ctest sets it)

LEDGER = os.path.join(ROOT, "kernels", "same_code.csv")
COLUMNS = ("version", "from_commit", "from_sha256", "to_commit", "to_sha256", "ptx_sha256", "nvcc")


class Skip(Exception):
    """Nothing can be compared here (exit 77)."""


def nvcc():
    for c in (shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if c and os.access(c, os.X_OK):
            return c
    raise Skip("nvcc not found")


def nvcc_release(exe):
    out = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"release ([\d.]+), V([\d.]+)", out)
    return m.group(2) if m else "unknown"


def normalize(ptx):
    """PTX with mangled names replaced by their order of first appearance and comments dropped."""
    names = {}

    def rep(m):
        return f"F{names.setdefault(m.group(0), len(names))}"
    text = "\n".join(line for line in ptx.splitlines() if not line.lstrip().startswith("//"))
    return re.sub(r"_Z\w+", rep, text)


def commit_ptx(exe, commit, version):
    """(normalized PTX sha256, source sha256) of the version at commit."""
    tree = kernel_source.GitTree(ROOT, commit)
    if not tree.ok:
        raise Skip(f"git cannot read commit {commit} here")
    src_hash, _ = kernel_source.source_hash(tree, version)
    ladder = kernel_source.ladder_file(tree, version)
    if ladder is None:
        raise ValueError(f"commit {commit}: no kernels/ladder/v{int(version):02d}_*.cu")
    tmp = tempfile.mkdtemp(prefix="fl_same_code_")
    try:
        arch = subprocess.run(["git", "-C", ROOT, "archive", commit, "kernels", "include"], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=arch, check=True)
        inc = [f"-I{os.path.join(tmp, d)}" for d in ("kernels/common", "kernels/harness", "include", "kernels/ladder")]
        out = os.path.join(tmp, "k.ptx")
        p = subprocess.run([exe, "-std=c++17", "-O3", "-gencode", "arch=compute_90a,code=compute_90a", *inc, "-ptx",
                            os.path.join(tmp, ladder), "-o", out], capture_output=True, text=True)
        if p.returncode != 0:
            raise ValueError(f"commit {commit}: nvcc failed: {p.stderr.strip()[-300:]}")
        with open(out) as f:
            return hashlib.sha256(normalize(f.read()).encode()).hexdigest(), src_hash
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def read_ledger(path=LEDGER):
    """The ledger's lines as dicts of COLUMNS ([] when it does not exist)."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        lines = [line for line in f if not line.startswith("#")]
    head = lines[0].strip().split(",")
    return [dict(zip(head, line.strip().split(","))) for line in lines[1:] if line.strip()]


def compare(version, a, b, add):
    exe = nvcc()
    pa, ha = commit_ptx(exe, a, version)
    pb, hb = commit_ptx(exe, b, version)
    full = {c: subprocess.run(["git", "-C", ROOT, "rev-parse", "--short=7", c], capture_output=True, text=True).stdout.strip()
            for c in (a, b)}
    print(f"version {version}: {a} source {ha[:16]} PTX {pa[:16]}; {b} source {hb[:16]} PTX {pb[:16]}: "
          f"{'the same device code' if pa == pb else 'DIFFERENT device code'}")
    if pa != pb:
        return 1
    if add:
        if ha == hb:
            print("same_code: the sources are the same; no line needed")
            return 0
        line = ",".join([str(int(version)), full[a], ha, full[b], hb, pa, nvcc_release(exe)])
        with open(LEDGER, "a") as f:
            f.write(line + "\n")
        print(f"added to {os.path.relpath(LEDGER, ROOT)}: {line}")
    return 0


def check():
    exe = nvcc()
    bad = 0
    lines = read_ledger()
    for r in lines:
        v = r["version"]
        pa, ha = commit_ptx(exe, r["from_commit"], v)
        pb, hb = commit_ptx(exe, r["to_commit"], v)
        ok = pa == pb == r["ptx_sha256"] and ha == r["from_sha256"] and hb == r["to_sha256"]
        print(f"version {v} {r['from_commit']} -> {r['to_commit']}: {'verified' if ok else 'DIFFERS'}"
              + ("" if ok else f" (PTX {pa[:12]} {pb[:12]} vs {r['ptx_sha256'][:12]}; sources {ha[:12]} {hb[:12]})"))
        bad += not ok
    print(f"same_code: {len(lines)} ledger lines, {bad} differ")
    return 1 if bad else 0


def main(argv):
    try:
        if argv == ["--check"]:
            return check()
        args = [x for x in argv if x != "--add"]
        if len(args) != 3 or not args[0].isdigit():
            print("usage: same_code.py VERSION FROM TO [--add] | --check", file=sys.stderr)
            return 2
        return compare(args[0], args[1], args[2], "--add" in argv)
    except Skip as e:
        print(f"same_code: {e}: nothing compared", file=sys.stderr)
        return 77
    except ValueError as e:
        print(f"same_code: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
