#!/usr/bin/env python3
"""check_gpu_records_test.py: check_gpu_records.check_all_runs passes on the recorded benchmark
runs of versions 12 and 13 and fails, for the reason expected, on plausible wrong records planted
in a copy of them (or in the texts and the ledger it reads):
  the times: a shape of version 12 at 0.996x cuDNN (which a range rounded to two places still prints
    as 1.00); cuDNN's median_ms halved with the stored ratios left as they were (the stored
    ratio_vs_* are not trusted); cuDNN's backward time halved in a record made consistent (the
    ranges move); a missing cuDNN time; a row outside the accuracy rule; a missing shape; a backward
    below FA2; a ratio the README's range does not cover;
  the stored columns: an acc_ok or a ratio that the raw columns contradict;
  the timing: a run's `# timing:` line changed, a claim stating another method than its records,
    a performance.md claim without its method;
  the claims: ranges swapped between versions in the README or in performance.md;
  the source: a record's kernel hash or commit wrong, its `# kernel source:` line missing, the
    ledger's line gone or wrong;
  the runs: missing or unpaired runs, a summary line misquoted in performance.md;
  the page (records.check_page): a number of performance.md's prose no table holds, an edited
    table row, a range's upper end, a block of a command not bench/records.py's, no blocks.
And two variants it must accept: the records as they are, and version 13 tied through its claims
naming the commit it measured instead of the ledger.

  python3 tests/check_gpu_records_test.py SOURCE_DIR
"""
import contextlib
import csv
import io
import os
import shutil
import sys
import tempfile

import check_gpu_records as cgr   # beside this file
import records   # bench/, on PYTHONPATH (ctest sets it)
import sdpa_rules

SRC = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(SRC, "figures", "data")
SHAPE = ("bf16", "64", "1024", "1")   # the thinnest margin over cuDNN on record
BWD_SHAPE = ("fp16", "128", "4096", "0")
V12_RANGES, V13_RANGES = "1.53-2.46x FA2 and 1.00-1.31x cuDNN", "1.30-1.57x FA2 and 0.69-0.97x cuDNN"


def edit(path, change, head_change=None):
    """Rewrites the CSV at path with change(rows) -> rows (and head_change(# lines) -> # lines)."""
    with open(path) as f:
        lines = f.readlines()
    head = [l for l in lines if l.startswith("#")]
    rows = list(csv.DictReader(l for l in lines if not l.startswith("#")))
    cols = list(rows[0])
    rows = change(rows) if change else rows
    head = head_change(head) if head_change else head
    with open(path, "w") as f:
        f.writelines(head)
        w = csv.DictWriter(f, cols, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def consistent(rows):
    """The stored tflops, ratios and acc_ok made what the raw columns give (a consistent record)."""
    d = sdpa_rules.recompute(rows)
    for r in rows:
        for c in ("tflops", "ratio_vs_fa2", "ratio_vs_cudnn", "acc_ok"):
            v = d[id(r)][c]
            r[c] = "" if v is None else (f"{v:.6g}" if isinstance(v, float) else str(v))
    return rows


def at(impl, shape, pass_=None):
    """A predicate: the row is impl's at shape (dtype, d, N, causal) (and pass)."""
    return lambda r: r["impl"] == impl and (r["dtype"], r["d"], r["N"], r["causal"]) == shape and (pass_ is None or r["pass"] == pass_)


def set_cells(pred, field, value, first_only=False, fix=False):
    """A change: field set to value (a function of the row, or a string) on the rows pred selects
    (the first only, with first_only); with fix, the stored derived columns made consistent."""
    def change(rows):
        hit = 0
        for r in rows:
            if pred(r) and not (first_only and hit):
                r[field] = value(r) if callable(value) else value
                hit += 1
        assert hit, (field, value)
        return consistent(rows) if fix else rows
    return change


def ms_of(rows, pred):
    return float(next(r for r in rows if pred(r))["median_ms"])


def ratio_to(impl_ref, shape, pass_, ratio):
    """A value function: ours' median_ms such that impl_ref's time over it is ratio."""
    box = {}

    def value(r):
        return f"{box['ref'] / ratio:.6g}"

    def change(rows):
        box["ref"] = ms_of(rows, at(impl_ref, shape, pass_))
        return rows
    return value, change


def in_data(name, change=None, head_change=None):
    """A plant: the copy of the record name edited."""
    def plant(d, ctx):
        edit(os.path.join(d, name), change, head_change)
    return plant


def with_ref(name, impl_ref, version, shape, pass_, ratio):
    """A plant: every row of ours of version at shape timed at ratio to impl_ref, consistently."""
    value, prime = ratio_to(impl_ref, shape, pass_, ratio)
    return in_data(name, lambda rows: set_cells(at(f"ours-v{version}-flash2", shape, pass_), "median_ms", value, fix=True)(prime(rows)))


def removed(*names):
    def plant(d, ctx):
        for n in names:
            os.remove(os.path.join(d, n))
    return plant


def text(key, old, new):
    """A plant: old replaced by new in the README's or performance.md's collapsed text (it must be there)."""
    def plant(d, ctx):
        assert old in ctx[key], (key, old)
        ctx[key] = ctx[key].replace(old, new)
    return plant


def swap(key):
    def plant(d, ctx):
        t = ctx[key].replace(V12_RANGES, "\0").replace(V13_RANGES, V12_RANGES).replace("\0", V13_RANGES)
        ctx[key] = t
    return plant


def head_sub(old, new):
    return lambda head: [l.replace(old, new) for l in head]


def ledger(change):
    def plant(d, ctx):
        ctx["ledger"] = change([dict(r) for r in ctx["ledger"]])
    return plant


def both(*plants):
    def plant(d, ctx):
        for p in plants:
            p(d, ctx)
    return plant


V12_SRC = "965432a6f45b9d308bf8a3956c1d6cc45843515e9c1bcefe9883d40d26a1fd3a"
# (what, plant, a piece of the message the check must print for it)
PLANTS = [
    ("v12 at 0.996x cuDNN on one shape of run 4 (prints as 1.00)",
     with_ref("gpu_sdpa_v12_run4.csv", "sdpa-cudnn", 12, SHAPE, "fwd", 0.996), "below 1.0x cuDNN"),
    ("cuDNN's median_ms halved in run 1, the stored ratios left",
     in_data("gpu_sdpa_v12_run1.csv", set_cells(at("sdpa-cudnn", SHAPE), "median_ms", lambda r: f"{float(r['median_ms']) / 2:.6g}")),
     "below 1.0x cuDNN"),
    ("cuDNN's backward median_ms halved in v13 run 2, the record made consistent",
     in_data("gpu_sdpa_v13_run2.csv", set_cells(at("sdpa-cudnn", BWD_SHAPE, "bwd"), "median_ms",
                                                 lambda r: f"{float(r['median_ms']) / 2:.6g}", fix=True)),
     "does not state version 13's recorded ranges"),
    ("v12 without cuDNN's time on one shape",
     in_data("gpu_sdpa_v12_run2.csv", set_cells(at("sdpa-cudnn", SHAPE), "median_ms", "", fix=True)), "below 1.0x cuDNN"),
    ("a stale acc_ok: 0 where the raw columns pass",
     in_data("gpu_sdpa_v12_run1.csv", set_cells(at("ours-v12-flash2", SHAPE), "acc_ok", "0", True)), "stored cells not what the raw"),
    ("a stale acc_ok: 1 kept where rel_err was raised past the rule",
     in_data("gpu_sdpa_v12_run3.csv", set_cells(at("ours-v12-flash2", SHAPE), "rel_err", "0.0099", True)), "inaccurate"),
    ("a stale ratio_vs_cudnn: 1.2 where the times give 1.0",
     in_data("gpu_sdpa_v12_run2.csv", set_cells(at("ours-v12-flash2", SHAPE), "ratio_vs_cudnn", "1.2", True)), "stored cells not what the raw"),
    ("v12 row outside the accuracy rule (a consistent record)",
     in_data("gpu_sdpa_v12_run1.csv", set_cells(at("ours-v12-flash2", SHAPE), "rel_err", "0.0099", True, fix=True)), "inaccurate"),
    ("v12 run without one shape",
     in_data("gpu_sdpa_v12_run2.csv", lambda rows: [r for r in rows if not at("ours-v12-flash2", SHAPE)(r)]), "63 shapes"),
    ("v13 backward row below FA2", with_ref("gpu_sdpa_v13_run2.csv", "sdpa-fa2", 13, BWD_SHAPE, "bwd", 0.98), "below FA2"),
    ("v12 ratio to FA2 outside the README's range", with_ref("gpu_sdpa_v12_run1.csv", "sdpa-fa2", 12, SHAPE, "fwd", 2.61),
     "does not state version 12's recorded ranges"),
    ("v12 run 3's timing line says sequential",
     in_data("gpu_sdpa_v12_run3.csv", None, head_sub("# timing: interleaved:", "# timing: sequential:")), "timed differently"),
    ("v13's timing lines say interleaved (the README: sequentially)",
     both(*(in_data(f"gpu_sdpa_v13_run{k}.csv", None, head_sub("# timing: CUDA events", "# timing: interleaved: CUDA events"))
            for k in (1, 2))), "not followed by ', timed interleaved'"),
    ("the README says v13 was timed interleaved",
     text("readme", f"{V13_RANGES}, timed sequentially", f"{V13_RANGES}, timed interleaved"), "README.md: version 13's ranges not followed"),
    ("performance.md states v12's ranges without the method",
     text("perf", f"{V12_RANGES}, timed interleaved", f"{V12_RANGES}, as measured"), "docs/performance.md: version 12's ranges not followed"),
    ("the README's ranges swapped between versions 12 and 13", swap("readme"), "README.md: states version 12's ranges"),
    ("performance.md's ranges swapped between versions 12 and 13", swap("perf"), "docs/performance.md: states version 13's ranges"),
    ("v13 run 1's kernel hash not its source's",
     in_data("gpu_sdpa_v13_run1.csv", None, head_sub("sha256 09d88d1208bc5b6f", "sha256 19d88d1208bc5b6f")), "the record states 19d88d"),
    ("v12 run 3's kernel commit not the one whose source it states",
     in_data("gpu_sdpa_v12_run3.csv", None, head_sub("at commit 90b678d", "at commit 0fb5475")), "source at 0fb5475 hashes"),
    ("v12 run 2 without its kernel source line",
     in_data("gpu_sdpa_v12_run2.csv", None, lambda h: [l for l in h if "kernel source:" not in l]), "no '# kernel source"),
    ("the ledger without version 13's line", ledger(lambda rows: [r for r in rows if r["version"] != "13"]),
     "does not lead there"),
    ("the ledger's version 13 line with a wrong source hash",
     ledger(lambda rows: [dict(r, from_sha256=V12_SRC) if r["version"] == "13" else r for r in rows]), "does not lead there"),
    ("the ledger's version 13 line with a wrong commit",
     ledger(lambda rows: [dict(r, to_commit="0fb5475") if r["version"] == "13" else r for r in rows]), "the ledger states"),
    ("v12 with one run only", removed("gpu_sdpa_v12_run2.csv", "gpu_sdpa_v12_run3.csv", "gpu_sdpa_v12_run4.csv"), "in pairs expected"),
    ("v12 without run 2 (runs 1, 3, 4)", removed("gpu_sdpa_v12_run2.csv"), "in pairs expected"),
    ("v12 with three runs (run 3 without its pair)", removed("gpu_sdpa_v12_run4.csv"), "in pairs expected"),
    ("performance.md quoting a cuDNN minimum of runs 3 and 4 that summarize_sdpa.py does not print",
     text("perf", "cudnn-fwd: ratio min 1.007,", "cudnn-fwd: ratio min 1.017,"), "not quoted as summarize_sdpa.py prints them"),
]
# Variants the check must accept: 0 differences.
ACCEPTED = [
    ("the records as they are", lambda d, ctx: None),
    ("v13 tied by its claims naming commit b99712b, the ledger without its line",
     both(ledger(lambda rows: [r for r in rows if r["version"] != "13"]),
          text("readme", "backward (version 13, the same machinery)", "backward (version 13 as of b99712b, the same machinery)"),
          text("perf", "version 13's backward (", "version 13's backward (commit b99712b, "))),
]


# A wrong docs/performance.md each (old text, new text); records.check_page must report it.
PAGE_PLANTS = [
    ("a ratio of the prose that no table holds", "least ratio 1.004", "least ratio 1.006"),
    ("an edited table row", "| 64 | no | 16 | 1.032-1.314 |", "| 64 | no | 16 | 1.032-1.324 |"),
    ("the upper end of a range in the prose", "(0.693-0.840)", "(0.693-0.850)"),
    ("a block of a command that is not bench/records.py's", "<!-- records: python3 bench/records.py rungs -->",
     "<!-- records: python3 bench/summarize_fig2.py rungs -->"),
    ("a time in the prose no table holds", "in 4.54 ms", "in 4.45 ms"),
    ("every generated block dropped", "<!-- records:", "<!-- dropped:"),
]


def check_page_plants(tmp):
    """records.check_page on docs/performance.md (no difference expected) and on each PAGE_PLANTS
    copy (a difference expected); returns the failures."""
    page = os.path.join(SRC, "docs", "performance.md")
    text = open(page, encoding="utf-8").read()
    failures = len(records.check_page(page))
    print(f"docs/performance.md as it is: {failures} differences (0 expected)")
    for what, old, new in PAGE_PLANTS:
        if old not in text:
            print(f"{what}: the page no longer has {old!r} to plant it in")
            failures += 1
            continue
        copy = os.path.join(tmp, "performance.md")
        with open(copy, "w", encoding="utf-8") as f:
            f.write(text.replace(old, new))
        bad = records.check_page(copy)
        print(f"{what}: {'caught: ' + bad[0] if bad else 'NOT CAUGHT'}")
        failures += not bad
    return failures


def main():
    readme, perf = cgr.claims(SRC)
    base_ledger = cgr.ledger_rows(SRC)
    names = cgr.runs_of(DATA, 12) + cgr.runs_of(DATA, 13)
    failures = 0
    tmp = tempfile.mkdtemp(prefix="fl_records_")
    try:
        def check(plant):
            """(differences, printed) of check_all_runs on a fresh copy of the records with plant applied."""
            d = os.path.join(tmp, "data")
            shutil.rmtree(d, ignore_errors=True)
            os.mkdir(d)
            for n in names:
                shutil.copy(os.path.join(DATA, n), d)
            ctx = dict(readme=readme, perf=perf, ledger=[dict(r) for r in base_ledger])
            plant(d, ctx)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                bad = cgr.check_all_runs(SRC, d, ctx["readme"], ctx["perf"], ctx["ledger"])[0]
            return bad, out.getvalue()
        for what, plant in ACCEPTED:
            bad, out = check(plant)
            print(f"accepted, {what}: {bad} differences (0 expected)")
            if bad:
                print(out)
            failures += bad != 0
        for what, plant, expect in PLANTS:
            bad, out = check(plant)
            ok = bad > 0 and expect in out
            print(f"{what}: {'caught' if ok else 'NOT CAUGHT' if not bad else 'caught, but not for its reason'}")
            if not ok:
                print(f"  expected '{expect}' in:\n{out}")
            failures += not ok
        failures += check_page_plants(tmp)
    finally:
        shutil.rmtree(tmp)
    print(f"check_gpu_records_test: {len(PLANTS) + len(PAGE_PLANTS)} planted faults, {len(ACCEPTED)} accepted variants, "
          f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
