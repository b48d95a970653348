#!/usr/bin/env python3
"""make_handout.py: the student's folder, outside the repository: the notebooks and the handouts.
The code they run is the installed package `flashlab` (pip install the wheel, docs/install.md):
the binding, flmachine, labkit, the library, the CLI, the figure scripts and the recorded data.

    DEST/lab*.ipynb           the exercises (with --solutions: the solution notebooks too)
    DEST/docs/labs/           the handouts and background.md (not instructor.md)
    DEST/figures/trace_strip.png   the picture docs/labs/lab2.md shows
    DEST/flashlab-*.whl       with --wheel: the wheel to install (pip install DEST/flashlab-*.whl)

    python3 notebooks/make_handout.py DEST [--wheel dist/flashlab-0.1.0-py3-none-linux_x86_64.whl]

Not shipped: the grader (notebooks/grader/), the solutions, the lab sources, the instructor's
guide.  package_files() lists what the installed package holds, for the tests of what a student
has (notebooks_citations, notebooks_nokey); ctest wheel_fresh_venv installs the wheel into a fresh
virtual environment and runs every solution from such a folder.
"""
import argparse
import glob
import pathlib
import shutil
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
PACKAGE = ROOT / "python" / "flashlab"
INSTRUCTOR_ONLY = ("instructor.md",)


def make(dest, solutions=False, wheel=None):
    """Writes the student's folder DEST (outside the repository); returns its path."""
    dest = pathlib.Path(dest)
    if dest.resolve().is_relative_to(ROOT.resolve()):
        raise SystemExit(f"make_handout: {dest} is inside the repository; choose a folder outside it")
    dest.mkdir(parents=True, exist_ok=True)
    for nb in sorted(HERE.glob("lab*.ipynb")):
        shutil.copy(nb, dest)
    if solutions:
        for nb in sorted((HERE / "solutions").glob("lab*.ipynb")):
            shutil.copy(nb, dest)
    (dest / "figures").mkdir(exist_ok=True)
    shutil.copy(ROOT / "figures" / "trace_strip.png", dest / "figures")   # shown by docs/labs/lab2.md
    docs = dest / "docs" / "labs"   # the handouts, at the paths the notebooks cite; not the
    docs.mkdir(parents=True, exist_ok=True)   # instructor's guide (it holds the answers)
    for md in sorted((ROOT / "docs" / "labs").glob("*.md")):
        if md.name not in INSTRUCTOR_ONLY:
            shutil.copy(md, docs)
    if wheel:
        shutil.copy(wheel, dest)
    return dest


def package_files():
    """{path inside the installed package: the repository file it comes from}: python/flashlab/'s
    modules and the files python/package_data.txt lists (the built library and CLI left out)."""
    files = {p.relative_to(PACKAGE).as_posix(): p for p in sorted(PACKAGE.rglob("*"))
             if p.is_file() and "__pycache__" not in p.parts}
    for line in (ROOT / "python" / "package_data.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            for f in sorted(glob.glob(str(ROOT / line.strip()))):
                files[pathlib.Path(f).relative_to(ROOT).as_posix()] = pathlib.Path(f)
    return files


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dest")
    ap.add_argument("--wheel", help="the built wheel, copied into DEST for the students to install")
    ap.add_argument("--solutions", action="store_true", help="add the solution notebooks (for testing)")
    a = ap.parse_args(argv)
    if a.wheel and not pathlib.Path(a.wheel).is_file():
        print(f"make_handout: --wheel {a.wheel}: no such file (build it: pip wheel . -w dist)", file=sys.stderr)
        return 2
    print("make_handout: wrote", make(a.dest, a.solutions, a.wheel))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
