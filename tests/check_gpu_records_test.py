#!/usr/bin/env python3
"""check_gpu_records_test.py: check_gpu_records.check_runs passes on the recorded benchmark runs of
versions 12 and 13 and fails on plausible wrong records planted in a copy of them: a shape of
version 12 at 0.996x cuDNN (which a range rounded to two places still prints as 1.00), a missing
cuDNN ratio, an inaccurate row, a missing shape, a backward row below FA2, a ratio the README's
range does not cover, and missing runs.

  python3 tests/check_gpu_records_test.py SOURCE_DIR
"""
import contextlib
import csv
import io
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_gpu_records as cgr  # noqa: E402

SRC = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(SRC, "figures", "data")
SHAPE = ("bf16", "64", "1024", "1")   # the thinnest margin over cuDNN on record


def edit(path, change):
    """Rewrites the CSV at path (its # lines kept) with change(rows) -> rows."""
    with open(path) as f:
        lines = f.readlines()
    head = [l for l in lines if l.startswith("#")]
    rows = list(csv.DictReader(l for l in lines if not l.startswith("#")))
    cols = list(rows[0])
    rows = change(rows)
    with open(path, "w") as f:
        f.writelines(head)
        w = csv.DictWriter(f, cols, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def ours_of(version, shape):
    """A predicate: the row is one of ours of version at shape."""
    return lambda r: r["impl"] == f"ours-v{version}-flash2" and (r["dtype"], r["d"], r["N"], r["causal"]) == shape


def set_field(version, shape, field, value, first_only=False):
    def change(rows):
        hit = False
        for r in rows:
            if ours_of(version, shape)(r) and not (first_only and hit):
                r[field] = value
                hit = True
        assert hit, (version, shape)
        return rows
    return change


def drop_shape(version, shape):
    return lambda rows: [r for r in rows if not ours_of(version, shape)(r)]


def check(data, readme, perf):
    """The differences check_runs finds over versions 12 and 13, as the test of record runs it."""
    bad = 0
    with contextlib.redirect_stdout(io.StringIO()):
        for version, pass_, floor in ((12, "fwd", 1.0), (13, "bwd", None)):
            bad += cgr.check_runs(SRC, data, version, pass_, readme, perf, floor)[0]
    return bad


def main():
    with open(os.path.join(SRC, "README.md")) as f:
        readme = " ".join(f.read().split())
    with open(os.path.join(SRC, "docs", "performance.md")) as f:
        perf = f.read()
    names = cgr.runs_of(DATA, 12) + cgr.runs_of(DATA, 13)
    plants = [
        ("v12 at 0.996x cuDNN on one shape (prints as 1.00)",
         lambda d: edit(os.path.join(d, cgr.runs_of(d, 12)[-1]), set_field(12, SHAPE, "ratio_vs_cudnn", "0.996"))),
        ("v12 without a cuDNN ratio on one shape",
         lambda d: edit(os.path.join(d, "gpu_sdpa_v12_run2.csv"), set_field(12, SHAPE, "ratio_vs_cudnn", ""))),
        ("v12 row outside the accuracy rule",
         lambda d: edit(os.path.join(d, "gpu_sdpa_v12_run1.csv"), set_field(12, SHAPE, "acc_ok", "0", True))),
        ("v12 run without one shape",
         lambda d: edit(os.path.join(d, "gpu_sdpa_v12_run2.csv"), drop_shape(12, SHAPE))),
        ("v13 backward row below FA2",
         lambda d: edit(os.path.join(d, "gpu_sdpa_v13_run2.csv"),
                        set_field(13, ("fp16", "128", "4096", "0"), "ratio_vs_fa2", "0.98", True))),
        ("v12 ratio to FA2 outside the README's range",
         lambda d: edit(os.path.join(d, "gpu_sdpa_v12_run1.csv"), set_field(12, SHAPE, "ratio_vs_fa2", "2.61"))),
        ("v12 with one run only",
         lambda d: [os.remove(os.path.join(d, n)) for n in cgr.runs_of(d, 12)[1:]]),
        ("v12 without run 2 (runs 1, 3, ...)", lambda d: os.remove(os.path.join(d, "gpu_sdpa_v12_run2.csv"))),
    ]
    failures = 0
    tmp = tempfile.mkdtemp(prefix="fl_records_")
    try:
        def fresh():
            d = os.path.join(tmp, "data")
            shutil.rmtree(d, ignore_errors=True)
            os.mkdir(d)
            for n in names:
                shutil.copy(os.path.join(DATA, n), d)
            return d
        clean = check(fresh(), readme, perf)
        print(f"the records as they are: {clean} differences (0 expected)")
        failures += clean != 0
        for what, plant in plants:
            d = fresh()
            plant(d)
            bad = check(d, readme, perf)
            print(f"{what}: {'caught' if bad else 'NOT CAUGHT'}")
            failures += bad == 0
    finally:
        shutil.rmtree(tmp)
    print(f"check_gpu_records_test: {len(plants)} planted faults, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
