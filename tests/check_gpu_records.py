#!/usr/bin/env python3
"""check_gpu_records.py: the recorded GPU results of the kernels against today's model.

The GPU machine keeps nothing and CI has no GPU, so what the kernels' byte counters measured lives
in figures/data/.  This test re-runs the model (the `flashlab count` CLI, fl_run) on every recorded
case and requires:
  1. gpu_validate_v{V}.csv for every rung V of the fast library (kernels/ladder/ladder.def),
     gpu_validate_all.csv and gpu_validate_recheck.csv (versions 1-11,
     natively; the second rerun on the current library) and
     gpu_validate_ptx80.csv (the compute_80 PTX build): for every case, today's model reads and
     writes (elements) equal the recorded model columns, and the recorded counters equal them
     (status ok): if the model's counting changes, the kernels' measured counts no longer confirm
     it, and this fails; the two full records must hold every version (1-11; 1-9 and 11 from the
     PTX);
  2. gpu_fig2.csv: for every configuration, today's model bytes for all 1,024 heads equal the
     recorded counter bytes;
  3. gpu_ncu_versions.csv (versions 1-11) and gpu_ncu_versions_12_13.csv: every rung of the
     ladder (ladder.def), forward and backward, within 1% of its counters, and the counted bytes equal to today's model bytes;
  4. gpu_ncu_same_bytes.csv (lab 10): versions 7, 10 and 12 of a d count the same bytes, equal to
     today's model, and Nsight Compute's SM reads are within 1% of the counted reads of all heads;
  5. the summaries (bench/summarize_*.py) and the figure scripts (gnuplot) still read the CSVs
     (the recorded shapes and the odd ones);
  6. gpu_sdpa_v12_run{1,2,...}.csv (forward) and gpu_sdpa_v13_run{1,2}.csv (backward), every
     ratio and verdict recomputed from the raw columns (median_ms, rel_err and the max-error
     columns, bench/sdpa_rules.py), the stored ratio_vs_* and acc_ok required to agree: each
     version on all 64 benchmark shapes in every run, every row accurate and at least as fast as
     SDPA's FA2 measured beside it, version 12's best tile a shape at least as fast as cuDNN; every
     run of a version timed the same way (its `# timing:` line); the README and docs/performance.md
     state the ranges over all runs of the best tile a shape, for that version and no other,
     followed by the method ("1.30-1.57x FA2 and 0.69-0.97x cuDNN, timed sequentially"); every run
     tied to its kernel's source (its `# kernel source:` line: the hash of the source at the commit
     it names, equal to today's or led to it by kernels/same_code.csv); and performance.md quotes
     bench/summarize_sdpa.py's summary lines of each pair of runs as it prints them today;
  7. docs/performance.md: every table is a generated block that bench/records.py prints from the
     records today, and every number of its prose is one of those blocks' numbers.
     tests/check_gpu_records_test.py plants wrong records and pages of each kind that this must catch.

  PYTHONPATH=bench python3 tests/check_gpu_records.py FLASHLAB_CLI SOURCE_DIR [--no-figures]
"""
import csv
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile

import kernel_source   # bench/, on PYTHONPATH (ctest sets it)
import ladder
import sdpa_rules
import sdpa_timing
import records as records_page   # bench/records.py
from model_cli import count, kernel_footprint


def rows_of(path):
    with open(path) as f:
        return [r for r in csv.DictReader(l for l in f if not l.startswith("#"))]


def runs_of(data, version):
    """The full benchmark runs of a version on record: gpu_sdpa_v<version>_run<k>.csv, k = 1, 2, ...
    in order."""
    names = [f for f in os.listdir(data) if re.fullmatch(rf"gpu_sdpa_v{version}_run\d+\.csv", f)]
    return sorted(names, key=lambda f: int(re.search(r"run(\d+)", f).group(1)))


# The benchmark records held to a rule: (version, pass, least ratio to cuDNN of the best tile a
# shape, None: no floor).  Version 12's floor is the issue's rule, which the README states.
RUN_RULES = ((12, "fwd", 1.0), (13, "bwd", None))

# ---- the rules of the benchmark records: recompute, timing line, claims per version, source tie
# (check_runs and the functions below it; tests/check_gpu_records_test.py plants a fault of each kind)

# How a claim states the method its records were timed with (sdpa_timing.parse's (order, cache)):
# the README's and docs/performance.md's ranges of a version are followed by ", timed <phrase>".
METHOD_PHRASE = sdpa_timing.PHRASE
LEDGER = os.path.join("kernels", "same_code.csv")


def claims(src):
    """(README.md, docs/performance.md), each with its whitespace collapsed: the texts whose claims
    check_runs reads (performance.md's quoted summary lines are single lines, which collapsing keeps)."""
    with open(os.path.join(src, "README.md")) as f:
        readme = " ".join(f.read().split())
    with open(os.path.join(src, "docs", "performance.md")) as f:
        return readme, " ".join(f.read().split())


def record_of(path):
    """(provenance lines, rows) of a benchmark CSV."""
    with open(path) as f:
        lines = f.readlines()
    return [l.rstrip("\n") for l in lines if l.startswith("#")], list(csv.DictReader(l for l in lines if not l.startswith("#")))


def stale_columns(rows, derived):
    """The stored ratio_vs_fa2, ratio_vs_cudnn, tflops and acc_ok cells that are not what the raw
    columns give (sdpa_rules.recompute): [(impl, shape, column, stored, recomputed)].  The stored
    numbers have 6 significant digits: a ratio or TFLOP/s within 1e-4 relative agrees."""
    out = []
    for r in rows:
        d = derived[id(r)]
        for c in ("ratio_vs_fa2", "ratio_vs_cudnn", "tflops"):
            if c not in r:
                continue
            a, b = sdpa_rules.num(r[c]), d[c]
            if (a is None) != (b is None) or (a is not None and abs(a - b) > 1e-4 * abs(b)):
                out.append((r["impl"], sdpa_rules.shape_key(r), c, r[c], b))
        if r.get("acc_ok") not in (None, str(d["acc_ok"])):
            out.append((r["impl"], sdpa_rules.shape_key(r), "acc_ok", r["acc_ok"], d["acc_ok"]))
    return out


def timing_of(prov):
    """The (order, cache) of a record's `# timing:` line (sdpa_timing.parse), or None."""
    hits = [sdpa_timing.parse(l) for l in prov if l.startswith("# timing:")]
    return hits[0] if len(hits) == 1 else None


def claim_problems(where, text, version, ranges, method, commit=None):
    """What is wrong with text's claim of a version's ranges: the ranges must appear where the
    nearest "version N" before them is this version (not another's: swapped ranges fail), followed
    by ", <METHOD_PHRASE of the records' method>"; with commit, the words between "version N" and
    the ranges must name it (the claim is of the source at that commit, not today's)."""
    want = f"{ranges}, {METHOD_PHRASE[method]}"
    spots = [m.start() for m in re.finditer(re.escape(ranges), text)]
    if not spots:
        return [f"{where}: does not state version {version}'s recorded ranges, {want}"]
    anchored = []
    for p in spots:
        names = list(re.finditer(r"\b[Vv]ersion (\d+)\b", text[:p]))
        if names and int(names[-1].group(1)) == version:
            anchored.append((names[-1].start(), p))
    if not anchored:
        return [f"{where}: states version {version}'s ranges {ranges} for another version (swapped?)"]
    out = []
    for a, p in anchored:
        if not text[p:].startswith(want):
            out.append(f"{where}: version {version}'s ranges not followed by ', {METHOD_PHRASE[method]}' (the records' "
                       f"timing): '{text[p:p + len(want) + 20]}'")
        if commit and commit[:7] not in text[a:p]:
            out.append(f"{where}: version {version}'s claim does not name commit {commit[:7]}, the source it measured")
    return out


def source_problems(src, name, prov, version, ledger_rows, claim_commit_ok):
    """What is wrong with a record's tie to its kernel's source.  Its `# kernel source:` line
    (bench/kernel_source.py) states a sha256 and a commit: git's source of the version at that
    commit must hash so (where git can read the commit; a full clone can); and the hash must be
    today's source's, or lead to it through the ledger kernels/same_code.csv (each line's hashes
    checked at its commits the same way), or claim_commit_ok(commit) must hold (the claims name the
    commit: they are of that source, not today's).  Returns (problems, how it is tied)."""
    stated = kernel_source.parse(prov).get(version)
    if stated is None:
        return [f"{name}: no '# kernel source: version {version} ...' line"], None
    digest, commit = stated
    out = []
    shallow = subprocess.run(["git", "-C", src, "rev-parse", "--is-shallow-repository"], capture_output=True, text=True)
    history = shallow.returncode == 0 and shallow.stdout.strip() == "false"

    def at(c):
        h = commit_source_hash(src, c, version)
        if h is None and history:
            out.append(f"{name}: commit {c} is not in this repository's history")
        return h
    h = at(commit)
    if h is not None and h != digest:
        out.append(f"{name}: version {version}'s source at {commit} hashes {h[:16]}, the record states {digest[:16]}")
    today = kernel_source.source_hash(kernel_source.WorkingTree(src), version)[0]
    reach, how, grew = {digest}, "today's source", True
    while grew and today not in reach:
        grew = False
        for r in ledger_rows:
            if int(r["version"]) == version and r["from_sha256"] in reach and r["to_sha256"] not in reach:
                for c, want in ((r["from_commit"], r["from_sha256"]), (r["to_commit"], r["to_sha256"])):
                    got = at(c)
                    if got is not None and got != want:
                        out.append(f"{LEDGER}: version {version} at {c} hashes {got[:16]}, the ledger states {want[:16]}")
                reach.add(r["to_sha256"])
                how, grew = f"today's source through {LEDGER}", True
    if today not in reach:
        if claim_commit_ok(commit):
            how = f"the claims name commit {commit[:7]}"
        else:
            out.append(f"{name}: version {version}'s source then ({digest[:16]} at {commit}) is not today's ({today[:16]}) "
                       f"and {LEDGER} does not lead there: measure again, add what scripts/same_code.py finds, or "
                       f"have the claims name commit {commit[:7]}")
    return out, how


@functools.lru_cache(maxsize=None)
def commit_source_hash(src, commit, version):
    """kernel_source's hash of version's source at commit (a commit's contents never change), or
    None where git cannot read the commit."""
    tree = kernel_source.GitTree(src, commit)
    return kernel_source.source_hash(tree, version)[0] if tree.ok else None


def ledger_rows(src):
    path = os.path.join(src, LEDGER)
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(l for l in f if not l.startswith("#")))


def check_runs(src, data, version, pass_, readme, perf, cudnn_floor=None, ledger=None):
    """The full benchmark runs of a version of record (runs_of: runs 1, 2, ... in pairs, one pass),
    every ratio and verdict recomputed from the raw columns (sdpa_rules: median_ms, rel_err and the
    max-error columns), never read from the stored ratio_vs_* and acc_ok, which must agree with them:
    all 64 shapes in each run, every row of ours accurate and at least as fast as SDPA's FA2 beside
    it; with cudnn_floor, the best tile of every shape at least that ratio to SDPA's cuDNN in every
    run (unrounded: 0.996 is not 1.00); every run timed the same way (its `# timing:` line); the
    README and docs/performance.md state the ranges over all runs of the best tile a shape
    ("A-Bx FA2 and C-Dx cuDNN, timed <method>") for this version (claim_problems); every run tied to
    its kernel's source (source_problems); and for each pair (1 and 2, 3 and 4, ...)
    bench/summarize_sdpa.py reads both completely and performance.md quotes its four summary
    lines as it prints them today.  Returns (differences, rows checked)."""
    bad, checked, best, methods, commits = 0, 0, [], set(), set()
    ledger = ledger_rows(src) if ledger is None else ledger
    runs = runs_of(data, version)
    if not runs or len(runs) % 2 or runs != [f"gpu_sdpa_v{version}_run{k}.csv" for k in range(1, len(runs) + 1)]:
        bad += 1
        print(f"version {version}: runs 1, 2, ... on record in pairs expected, found {runs}")
    for run in runs:
        prov, rows = record_of(os.path.join(data, run))
        derived = sdpa_rules.recompute(rows)
        stale = stale_columns(rows, derived)
        if stale:
            bad += 1
            print(f"{run}: {len(stale)} stored cells not what the raw columns give, e.g. {stale[:3]}")
        ours = [r for r in rows if r["impl"] == f"ours-v{version}-flash2" and r["pass"] == pass_]
        shapes = {}
        for r in ours:
            k = sdpa_rules.shape_key(r)
            if k not in shapes or (derived[id(r)]["tflops"] or 0) > (derived[id(shapes[k])]["tflops"] or 0):
                shapes[k] = r
        best += [derived[id(r)] for r in shapes.values()]
        slow = [r for r in ours if not derived[id(r)]["acc_ok"] or (derived[id(r)]["ratio_vs_fa2"] or 0) < 1.0]
        if len(shapes) != 64 or slow:
            bad += 1
            print(f"{run}: {len(shapes)} shapes of version {version} (64 expected); below FA2 or inaccurate: "
                  f"{[(sdpa_rules.shape_key(r), r['Br'], derived[id(r)]['ratio_vs_fa2'], derived[id(r)]['acc_ok']) for r in slow]}")
        if cudnn_floor is not None:
            under = [(k, derived[id(r)]["ratio_vs_cudnn"]) for k, r in shapes.items()
                     if (derived[id(r)]["ratio_vs_cudnn"] or 0) < cudnn_floor]
            if under:
                bad += 1
                print(f"{run}: version {version}'s best tile below {cudnn_floor}x cuDNN on {under}")
        method = timing_of(prov)
        if method is None:
            bad += 1
            print(f"{run}: no readable '# timing:' line")
        methods.add(method)
        commits.add((kernel_source.parse(prov).get(version) or (None, None))[1])
        checked += len(ours)
    if len(methods) > 1:
        bad += 1
        print(f"version {version}: its runs were timed differently: {sorted(methods, key=str)}")
    fa2, cu = ([d[k] for d in best if d[k]] for k in ("ratio_vs_fa2", "ratio_vs_cudnn"))
    ranges = f"{min(fa2):.2f}-{max(fa2):.2f}x FA2 and {min(cu):.2f}-{max(cu):.2f}x cuDNN" if fa2 and cu else "(no rows)"
    method = next(iter(methods)) if len(methods) == 1 and None not in methods else None
    commit = next(iter(commits)) if len(commits) == 1 else None
    tied = []
    for run in runs:
        prov, _ = record_of(os.path.join(data, run))
        problems, how = source_problems(src, run, prov, version, ledger, lambda c: method is not None and not any(
            claim_problems(w, t, version, ranges, method, c) for w, t in (("README.md", readme), ("docs/performance.md", perf))))
        for p in problems:
            bad += 1
            print(p)
        tied.append(how)
    named = commit if tied and all(h and h.startswith("the claims name") for h in tied) else None
    if method is not None:
        for where, text in (("README.md", readme), ("docs/performance.md", perf)):
            for p in claim_problems(where, text, version, ranges, method, named):
                bad += 1
                print(p)
    for a, b in zip(runs[0::2], runs[1::2]):
        out = subprocess.run([sys.executable, os.path.join(src, "bench", "summarize_sdpa.py"),
                              os.path.join(data, a), os.path.join(data, b), "--version", str(version)],
                             capture_output=True, text=True)
        quoted = [l for l in out.stdout.splitlines() if l.startswith((f"{pass_}:", f"cudnn-{pass_}", f"{pass_} ratio"))]
        if out.returncode != 0 or "|" not in out.stdout or "incomplete" in out.stdout:
            bad += 1
            print(f"summarize_sdpa.py {a} {b}: exit {out.returncode}\n{out.stdout[-500:]}{out.stderr[-500:]}")
        if len(quoted) != 4 or any(l not in perf for l in quoted):
            bad += 1
            print(f"docs/performance.md: the summary lines of {a} and {b} not quoted as summarize_sdpa.py prints them: {quoted}")
    print(f"version {version}: {len(runs)} runs, {METHOD_PHRASE.get(method, 'timing unread')}, tied by {sorted(set(map(str, tied)))}; "
          f"{ranges}")
    return bad, checked


def check_all_runs(src, data, readme, perf, ledger=None):
    """check_runs over RUN_RULES: (differences, rows checked)."""
    bad, checked = 0, 0
    for version, pass_, floor in RUN_RULES:
        b_, n_ = check_runs(src, data, version, pass_, readme, perf, floor, ledger)
        bad += b_
        checked += n_
    return bad, checked


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    cli, src = sys.argv[1], sys.argv[2]
    data = os.path.join(src, "figures", "data")
    bad = 0
    checked = 0
    cache = {}

    def model(algo, N, d, Br, Bc, M, dtype, pass_, corner=None, Nk=None):
        key = (algo, N, d, Br, Bc, M, dtype, pass_, corner, Nk)
        if key not in cache:
            cache[key] = count(cli, algo, N, d, Br, Bc, M, dtype, pass_, corner, Nk)
        return cache[key]

    # a record of each rung of the fast library (ladder.def's lib rungs), and three of the whole
    # ladder as it was (versions 1-11)
    records = [f"gpu_validate_v{v}.csv" for v in ladder.versions(src, lib=True)] + [
        "gpu_validate_all.csv", "gpu_validate_ptx80.csv", "gpu_validate_recheck.csv"]
    for name in records:
        versions = set()
        if not os.path.exists(os.path.join(data, name)):  # a rung of ladder.def not yet validated on a GPU
            bad += 1
            print(f"{name}: no such record (flashlab-gpu validate --version V --csv figures/data/{name})")
            continue
        for r in rows_of(os.path.join(data, name)):
            corner = {"none": None, "top-left": "top-left", "bottom-right": "bottom-right"}[r["corner"]]
            m = model(r["algo"], r["N"], r["d"], r["Br"], r["Bc"], r["M_eff"], r["dtype"], r["pass"], corner, r["Nk"])
            want = (int(r["model_reads"]), int(r["model_writes"]))
            got = (int(m["hbm_reads"]), int(m["hbm_writes"]))
            gpu = (int(r["gpu_reads"]), int(r["gpu_writes"]))
            if got != want or gpu != want or not r["status"].startswith("ok"):
                bad += 1
                print(f"{name}: v{r['version']} {r['tag']} {r['algo']} {r['pass']} N={r['N']} d={r['d']} {r['Br']}x{r['Bc']}: "
                      f"model now {got}, recorded model {want}, kernel counters {gpu}, status {r['status']}")
            versions.add(int(r["version"]))
            checked += 1
        need = {"gpu_validate_all.csv": set(range(1, 12)), "gpu_validate_recheck.csv": set(range(1, 12)),
                "gpu_validate_ptx80.csv": set(range(1, 12)) - {10}}.get(name)
        if need and versions != need:
            bad += 1
            print(f"{name}: versions {sorted(versions)}, expected {sorted(need)}")
    print(f"check_gpu_records: {checked} recorded validation cases against today's model")
    seen = set()
    for r in rows_of(os.path.join(data, "gpu_ncu_versions.csv")) + rows_of(os.path.join(data, "gpu_ncu_versions_12_13.csv")):
        m = model(r["algo"], r["N"], r["d"], r["Br"], r["Bc"], r["M_eff"], r["dtype"], r["pass"])
        counted = int(r["counter_read_B"]) + int(r["counter_write_B"])
        if r["ok"] != "1" or int(m["hbm_bytes"]) != counted:
            bad += 1
            print(f"gpu_ncu_versions*.csv: v{r['version']} {r['pass']}: ok {r['ok']} (read {r['read_ratio']}, write "
                  f"{r['write_ratio']}), model bytes now {m['hbm_bytes']}, counted {counted}")
        seen.add((int(r["version"]), r["pass"]))
        checked += 1
    if {v for v, _ in seen} != set(ladder.versions(src)) or {p for _, p in seen} != {"fwd", "bwd"}:
        bad += 1
        print(f"gpu_ncu_versions*.csv: covers {sorted(seen)}, not every version")
    same = {}
    for r in rows_of(os.path.join(data, "gpu_ncu_same_bytes.csv")):
        N, d, br, bc = int(r["N"]), int(r["d"]), int(r["Br"]), int(r["Bc"])
        m = count(cli, "flash2", N, d, br, bc, kernel_footprint(cli, "flash2", d, br, bc, False), r["dtype"], "fwd")
        counted = int(r["counter_read_B_per_head"]) + int(r["counter_write_B_per_head"])
        sm_ratio = int(r["sm_read_B"]) / (int(r["heads"]) * int(r["counter_read_B_per_head"]))
        same.setdefault(d, set()).add(counted)
        if int(m["hbm_bytes"]) != counted or r["counter_read_B_per_head"] != r["model_read_B_per_head"] or abs(sm_ratio - 1) > 0.01:
            bad += 1
            print(f"gpu_ncu_same_bytes.csv: v{r['version']} d={d}: model bytes now {m['hbm_bytes']}, counted {counted}, "
                  f"ncu SM reads / counted reads {sm_ratio:.4f}")
        checked += 1
    if not same or any(len(v) != 1 for v in same.values()):
        bad += 1
        print(f"gpu_ncu_same_bytes.csv: the versions of a d do not move the same counted bytes: {same}")
    for r in rows_of(os.path.join(data, "gpu_fig2.csv")):
        v = int(r["version"])
        algo = "standard" if v in (8, 11) else "flash2"
        bwd = r["pass"] == "bwd"
        br, bc, d = int(r["Br"]), int(r["Bc"]), 64
        m = count(cli, algo, 1024, d, br, bc, kernel_footprint(cli, algo, d, br, bc, bwd), "fp16", r["pass"],
                  batch=64, heads=16)
        if int(m["hbm_bytes"]) != int(r["counter_bytes"]) or r["counter_bytes"] != r["model_bytes"]:
            bad += 1
            print(f"fig2 v{v} {r['pass']} {br}x{bc}: model now {m['hbm_bytes']} B, recorded counters {r['counter_bytes']}")
        checked += 1
    b_, n_ = check_all_runs(src, data, *claims(src))
    bad += b_
    checked += n_
    # docs/performance.md: every generated table as bench/records.py prints it from the records,
    # every number of its prose one of those tables' numbers
    for line in records_page.check_page(os.path.join(src, "docs", "performance.md")):
        bad += 1
        print(line)
    print(f"check_gpu_records: {checked} cases checked in all, {bad} differ")
    # the summaries and figures still read the records (those of versions 12 and 13: check_runs)
    for script, args in (("summarize_sdpa.py", ["gpu_sdpa.csv", "gpu_sdpa_run1.csv"]),
                         ("summarize_sdpa.py", ["gpu_sdpa_odd_run1.csv", "gpu_sdpa_odd_run2.csv"]),
                         ("summarize_fig2.py", ["gpu_fig2.csv"])):
        out = subprocess.run([sys.executable, os.path.join(src, "bench", script)] +
                             [a if a.startswith("-") or a.isdigit() else os.path.join(data, a) for a in args],
                             capture_output=True, text=True)
        if out.returncode != 0 or "|" not in out.stdout or "incomplete" in out.stdout:
            bad += 1
            print(f"{script}: exit {out.returncode}\n{out.stdout[-500:]}{out.stderr[-500:]}")
    if "--no-figures" not in sys.argv and shutil.which("gnuplot"):
        tmp = tempfile.mkdtemp()
        try:
            figs = [("gpu_tflops_vs_N.gp", "pass='fwd'; dt='bf16'"), ("gpu_tflops_vs_N.gp", "pass='bwd'; dt='bf16'; odd=1"), ("gpu_tflops_vs_N.gp", "pass='fwd'; dt='fp16'; v12=1"),
                    ("gpu_tflops_vs_N.gp", "pass='bwd'; dt='fp16'; v13=1"),
                    ("gpu_fig2_runtime_vs_bytes.gp", "")]
            for i, (gp, extra) in enumerate(figs):
                out_png = os.path.join(tmp, f"{i}_" + gp.replace(".gp", ".png"))
                e = f"fmt='png'; out='{out_png}'; {extra}"
                p = subprocess.run(["gnuplot", "-e", e, os.path.join("figures", gp)], cwd=src, capture_output=True, text=True)
                if p.returncode != 0 or not os.path.exists(out_png) or os.path.getsize(out_png) < 10000 or p.stderr.strip():
                    bad += 1
                    print(f"{gp}: gnuplot exit {p.returncode}: {p.stderr.strip()[:300]}")
        finally:
            shutil.rmtree(tmp)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
