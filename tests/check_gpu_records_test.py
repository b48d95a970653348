#!/usr/bin/env python3
"""check_gpu_records_test.py: check_gpu_records.check_runs passes on the recorded benchmark runs of
versions 12 and 13 and fails on plausible wrong records planted in a copy of them: a shape of
version 12 at 0.996x cuDNN (which a range rounded to two places still prints as 1.00), a missing
cuDNN ratio, an inaccurate row, a missing shape, a backward row below FA2, a ratio the README's
range does not cover, missing or unpaired runs, and a summary line misquoted in performance.md.

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
    """A change for edit: field set to value on the rows of ours of version at shape (the first
    such row only, with first_only); there must be one."""
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
    """A change for edit: the rows of ours of version at shape left out."""
    return lambda rows: [r for r in rows if not ours_of(version, shape)(r)]


def in_data(name, change):
    """A plant: the copy of the record name in the data folder edited by change; the texts kept."""
    def plant(d, readme, perf):
        edit(os.path.join(d, name), change)
        return readme, perf
    return plant


def removed(*names):
    """A plant: the copies of the records names removed from the data folder; the texts kept."""
    def plant(d, readme, perf):
        for n in names:
            os.remove(os.path.join(d, n))
        return readme, perf
    return plant


# A plausible wrong record (or doc) each; check_all_runs must find a difference in every one.
PLANTS = [
    ("v12 at 0.996x cuDNN on one shape of run 4 (prints as 1.00)",
     in_data("gpu_sdpa_v12_run4.csv", set_field(12, SHAPE, "ratio_vs_cudnn", "0.996"))),
    ("v12 without a cuDNN ratio on one shape",
     in_data("gpu_sdpa_v12_run2.csv", set_field(12, SHAPE, "ratio_vs_cudnn", ""))),
    ("v12 row outside the accuracy rule", in_data("gpu_sdpa_v12_run1.csv", set_field(12, SHAPE, "acc_ok", "0", True))),
    ("v12 run without one shape", in_data("gpu_sdpa_v12_run2.csv", drop_shape(12, SHAPE))),
    ("v13 backward row below FA2",
     in_data("gpu_sdpa_v13_run2.csv", set_field(13, ("fp16", "128", "4096", "0"), "ratio_vs_fa2", "0.98", True))),
    ("v12 ratio to FA2 outside the README's range",
     in_data("gpu_sdpa_v12_run1.csv", set_field(12, SHAPE, "ratio_vs_fa2", "2.61"))),
    ("v12 with one run only", removed("gpu_sdpa_v12_run2.csv", "gpu_sdpa_v12_run3.csv", "gpu_sdpa_v12_run4.csv")),
    ("v12 without run 2 (runs 1, 3, 4)", removed("gpu_sdpa_v12_run2.csv")),
    ("v12 with three runs (run 3 without its pair)", removed("gpu_sdpa_v12_run4.csv")),
    ("performance.md quoting a cuDNN minimum of runs 3 and 4 that summarize_sdpa.py does not print",
     lambda d, readme, perf: (readme, perf.replace("cudnn-fwd: ratio min 1.007,", "cudnn-fwd: ratio min 1.017,"))),
]


def main():
    readme, perf = cgr.claims(SRC)
    names = cgr.runs_of(DATA, 12) + cgr.runs_of(DATA, 13)
    failures = 0
    tmp = tempfile.mkdtemp(prefix="fl_records_")
    try:
        def check(plant):
            """The differences check_all_runs finds in a fresh copy of the records with plant applied."""
            d = os.path.join(tmp, "data")
            shutil.rmtree(d, ignore_errors=True)
            os.mkdir(d)
            for n in names:
                shutil.copy(os.path.join(DATA, n), d)
            texts = plant(d, readme, perf)
            with contextlib.redirect_stdout(io.StringIO()):
                return cgr.check_all_runs(SRC, d, *texts)[0]
        clean = check(lambda d, readme, perf: (readme, perf))
        print(f"the records as they are: {clean} differences (0 expected)")
        failures += clean != 0
        for what, plant in PLANTS:
            bad = check(plant)
            print(f"{what}: {'caught' if bad else 'NOT CAUGHT'}")
            failures += bad == 0
    finally:
        shutil.rmtree(tmp)
    print(f"check_gpu_records_test: {len(PLANTS)} planted faults, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
