#!/usr/bin/env python3
"""make_handout.py: the student-only layout, a folder outside the repository holding what a
student needs and nothing else:

    DEST/lab*.ipynb           the exercises (with --solutions: the solution notebooks too)
    DEST/flashlab.py          the binding; DEST/flmachine.py the machine a student's schedule
                              programs; DEST/labkit/ the parameters, checks and the step viewer
    DEST/libflashlab.so       the built library;  DEST/flashlab  the built CLI
    DEST/figures/             style.gp, term.gp, the trace scripts, the labs' figure scripts
                              (lab*.gp), trace_strip.png, and data/gpu_*.csv, third_party_ncu.csv
                              and third_party_ncu_run4_sdpa_bwd.csv, and the study's models of
                              them, third_party_explained*.csv (labs 6, 7, 9, 10)
    DEST/docs/labs/           the handouts and background.md (not instructor.md)

    python3 notebooks/make_handout.py DEST --lib build/src/libflashlab.so --cli build/flashlab

flashlab.py finds the library, the CLI and figures/ beside itself, so the notebooks run from DEST
with no environment variables (ctest: notebooks_handout runs the solutions there).  Not shipped:
the grader (notebooks/grader/), the solutions, the lab sources, the instructor's guide.
"""
import argparse
import os
import pathlib
import shutil
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
INSTRUCTOR_ONLY = ("instructor.md",)


def make(dest, lib, cli, solutions=False):
    dest = pathlib.Path(dest)
    if dest.resolve().is_relative_to(ROOT.resolve()):
        raise SystemExit(f"make_handout: {dest} is inside the repository; choose a folder outside it")
    dest.mkdir(parents=True, exist_ok=True)
    for nb in sorted(HERE.glob("lab*.ipynb")):
        shutil.copy(nb, dest)
    if solutions:
        for nb in sorted((HERE / "solutions").glob("lab*.ipynb")):
            shutil.copy(nb, dest)
    for py in ("flashlab.py", "flmachine.py"):
        shutil.copy(HERE / py, dest)
    shutil.copytree(HERE / "labkit", dest / "labkit", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(lib, dest / "libflashlab.so")
    shutil.copy(cli, dest / "flashlab")
    os.chmod(dest / "flashlab", 0o755)
    fig = dest / "figures"
    (fig / "data").mkdir(parents=True, exist_ok=True)
    for gp in ("style.gp", "term.gp", "trace_setup.gp", "trace_frame.gp", "trace_anim.gp", "trace_strip.gp"):
        shutil.copy(ROOT / "figures" / gp, fig)
    for gp in sorted((ROOT / "figures").glob("lab*.gp")):   # the labs' figures (labkit.figures)
        shutil.copy(gp, fig)
    for pattern in ("gpu_*.csv", "third_party_ncu.csv", "third_party_ncu_run4_sdpa_bwd.csv",   # labs 6, 7, 9, 10's data
                    "third_party_explained.csv", "third_party_explained_run4.csv"):
        for csv in sorted((ROOT / "figures" / "data").glob(pattern)):
            shutil.copy(csv, fig / "data")
    shutil.copy(ROOT / "figures" / "trace_strip.png", fig)   # shown by docs/labs/lab2.md
    docs = dest / "docs" / "labs"   # the handouts, at the paths the notebooks cite; not the
    docs.mkdir(parents=True, exist_ok=True)   # instructor's guide (it holds the answers)
    for md in sorted((ROOT / "docs" / "labs").glob("*.md")):
        if md.name not in INSTRUCTOR_ONLY:
            shutil.copy(md, docs)
    return dest


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dest")
    ap.add_argument("--lib", required=True, help="the built libflashlab.so")
    ap.add_argument("--cli", required=True, help="the built flashlab CLI")
    ap.add_argument("--solutions", action="store_true", help="add the solution notebooks (for testing)")
    a = ap.parse_args(argv)
    for f in (a.lib, a.cli):
        if not pathlib.Path(f).is_file():
            print(f"make_handout: {f}: no such file (build flashlab first)", file=sys.stderr)
            return 2
    print("make_handout: wrote", make(a.dest, a.lib, a.cli, a.solutions))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
