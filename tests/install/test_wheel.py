#!/usr/bin/env python3
"""test_wheel.py: the wheel works on a fresh machine, with no repository in sight.

    test_wheel.py --version VERSION --cli BUILD_CLI [--keep DIR]

  1. builds the wheel from the repository (pip wheel: scikit-build-core, pyproject.toml; without
     build isolation where scikit-build-core is installed already);
  2. checks it is one wheel for every Python 3 (py3-none-<platform>), and that what it runs
     (libflashlab.so, the CLI) needs no shared library beyond the C library's own (libc, libm,
     the loader): no GSL; prints its size and, where auditwheel is installed, `auditwheel show`;
  3. installs it into a fresh virtual environment outside the repository, with nothing of the
     repository on any path (no PYTHONPATH, no FLASHLAB_*, the current folder a temporary one);
  4. from there: `import flashlab` loads the packaged library, and __version__, the wheel's
     metadata, `python -m flashlab --version` and the console script `flashlab --version` say
     VERSION; `python -m flashlab report --no-figures` prints what the build's CLI prints;
  5. writes a student's folder (notebooks/make_handout.py --solutions --wheel), installs the
     notebook runner (nbclient, nbformat, ipykernel) into the venv and runs every lab's solution
     there with notebooks/run_all.py (--no-skip --expect pass, no student id: the handouts'
     worked examples): each must pass every check.
Planted faults, which must be caught: a library needing libgsl or libgslcblas; lab 9 with its
recorded data removed from the installed package (a check that SKIPS fails under --no-skip).
Exit status 0 when all hold, 1 with a line per failure.
"""
import argparse
import glob
import importlib.util
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

import make_handout                  # notebooks/, on PYTHONPATH (ctest sets it)
from time_scale import time_scale    # tests/support, on PYTHONPATH
from verdict import fail, finish, planted   # beside this file

ROOT = pathlib.Path(__file__).resolve().parents[2]
SYSTEM_LIBS = re.compile(r"^(libc\.so\.6|libm\.so\.6|ld-linux[-\w.]*\.so\.\d+)$")


def clean_env(**extra):
    """The environment of a fresh machine: nothing that points at the repository or a build."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("FLASHLAB_") and k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    if "FLASHLAB_TIME_SCALE" in os.environ:   # the time limits' factor (tests/support/time_scale.py)
        env["FLASHLAB_TIME_SCALE"] = os.environ["FLASHLAB_TIME_SCALE"]
    env.update(extra)
    return env


def run(cmd, what, cwd, env=None, show=False):
    """stdout of cmd, or None (after a FAIL naming what) when it exits non-zero."""
    p = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env or clean_env(), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT if show else subprocess.PIPE, text=True)
    if show:
        print(p.stdout, end="", flush=True)
    if p.returncode != 0:
        fail(f"{what}: exit status {p.returncode}\n  $ {' '.join(map(str, cmd))}\n"
             f"{(p.stdout or '')[-2000:]}{(p.stderr or '')[-3000:]}")
        return None
    return p.stdout


def needed(path):
    """The shared libraries an ELF file names (readelf -d: NEEDED)."""
    out = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def foreign(libs):
    return [l for l in libs if not SYSTEM_LIBS.match(l)]


def build_wheel(tmp):
    dist = tmp / "dist"
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", dist, ROOT]
    if importlib.util.find_spec("scikit_build_core"):   # installed: no need to fetch it
        cmd.insert(4, "--no-build-isolation")
    if run(cmd, "pip wheel (the wheel's build)", cwd=tmp, env=clean_env()) is None:
        return None
    wheels = glob.glob(str(dist / "flashlab-*.whl"))
    return pathlib.Path(wheels[0]) if len(wheels) == 1 else None


def inspect_wheel(whl, version, tmp):
    if not re.fullmatch(rf"flashlab-{re.escape(version)}-py3-none-[a-z0-9_]+\.whl", whl.name):
        fail(f"{whl.name}: expected flashlab-{version}-py3-none-<platform>.whl (wheel.py-api = py3)")
    with zipfile.ZipFile(whl) as z:
        names = z.namelist()
        z.extractall(tmp / "unpacked")
    for f in ("flashlab/__init__.py", "flashlab/__main__.py", "flashlab/libflashlab.so", "flashlab/flashlab",
              "flashlab/figures/style.gp", "flashlab/labkit/__init__.py"):
        if f not in names:
            fail(f"{whl.name} holds no {f}")
    for f in ("flashlab/libflashlab.so", "flashlab/flashlab"):
        p = tmp / "unpacked" / f
        if p.exists() and foreign(needed(p)):
            fail(f"{f} in the wheel needs {foreign(needed(p))}: not installed on a fresh machine")
    size = whl.stat().st_size
    unpacked = sum(p.stat().st_size for p in (tmp / "unpacked").rglob("*") if p.is_file())
    print(f"test_wheel: {whl.name}: {size / 1e6:.2f} MB ({unpacked / 1e6:.2f} MB unpacked, {len(names)} files)")
    if importlib.util.find_spec("auditwheel"):
        out = run([sys.executable, "-m", "auditwheel", "show", whl], "auditwheel show", cwd=tmp)
        print("auditwheel show:", out, sep="\n")
    else:
        print("test_wheel: auditwheel is not installed here; the NEEDED entries were checked with readelf")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--version", required=True)
    ap.add_argument("--cli", required=True, help="the build's flashlab, whose report the wheel's must equal")
    ap.add_argument("--keep", help="build the wheel into this folder and keep it")
    a = ap.parse_args(argv)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="fl_wheel."))
    try:
        whl = build_wheel(tmp)
        if whl is None:
            fail("no wheel was built")
            return 1
        inspect_wheel(whl, a.version, tmp)
        if a.keep:
            shutil.copy(whl, a.keep)

        venv, work = tmp / "venv", tmp / "work"
        work.mkdir()
        if run([sys.executable, "-m", "venv", venv], "python -m venv", cwd=work) is None:
            return 1
        py = venv / "bin" / "python"
        if run([py, "-m", "pip", "install", "-q", "--no-index", whl], "pip install the wheel", cwd=work) is None:
            return 1

        probe = ("import flashlab, importlib.metadata as m, sys; "
                 "print(flashlab.__version__, m.version('flashlab'), flashlab.LIB_PATH, flashlab.cli_path(), "
                 "flashlab.data_dir(), sep='\\n'); "
                 f"print(any(p and '{ROOT}' in p for p in sys.path))")
        out = (run([py, "-c", probe], "import flashlab in the fresh venv", cwd=work) or "").splitlines()
        site = str(venv)
        if len(out) != 6 or out[:2] != [a.version, a.version] or not all(o.startswith(site) for o in out[2:5]) \
                or out[5] != "False":
            fail(f"the installed package: expected version {a.version} twice, the library, CLI and data "
                 f"under {site}, and no repository on sys.path; got {out}")
        for cmd in ([py, "-m", "flashlab", "--version"], [venv / "bin" / "flashlab", "--version"]):
            v = run(cmd, " ".join(map(str, cmd[-2:])), cwd=work)
            if v is not None and v.strip() != f"flashlab {a.version}":
                fail(f"{' '.join(map(str, cmd))} says {v.strip()!r}")
        report = run([py, "-m", "flashlab", "report", "--no-figures"], "python -m flashlab report --no-figures",
                     cwd=work)
        want = run([a.cli, "report", "--no-figures"], "the build's flashlab report --no-figures", cwd=work)
        if report is not None and want is not None:
            if report != want:
                fail("python -m flashlab report --no-figures differs from the build's flashlab report")
            else:
                passed = re.search(r"^\s*((\d+) of \2 pass)$", report, re.M)
                if not passed:
                    fail("the report's worked examples do not all pass")
                else:
                    print(f"test_wheel: python -m flashlab report --no-figures: {len(report.splitlines())} "
                          f"lines, equal to the build's; {passed.group(1)}")

        # the labs' solutions, from the student's folder (make_handout.py), with no student id
        # (the handouts' worked examples): python -m pip install the wheel from there, as a student does
        dest = make_handout.make(work / "student", solutions=True, wheel=whl)
        solutions = sorted(dest.glob("lab*_solution.ipynb"))
        limit = str(60 * time_scale())
        runner = [py, ROOT / "notebooks" / "run_all.py", "--no-skip", "--expect", "pass", "--limit", limit]
        if run([py, "-m", "pip", "install", "-q", "nbclient", "nbformat", "ipykernel"],
               "pip install the notebook runner into the venv", cwd=work) is not None:
            labs_ok = run([*runner, *solutions], f"the {len(solutions)} lab solutions from the installed wheel",
                          cwd=dest, show=True) is not None
            # and --no-skip catches a check that does not find its data: lab 9 without its measurements
            data = pathlib.Path((run([py, "-c", "import flashlab; print(flashlab.data_dir())"], "data_dir",
                                     cwd=work) or "/nonexistent").strip())
            (data / "third_party_ncu.csv").unlink(missing_ok=True)
            p = subprocess.run([str(c) for c in runner] + [str(dest / "lab9_other_kernels_solution.ipynb")],
                               cwd=dest, env=clean_env(), capture_output=True, text=True)
            caught_no_data = p.returncode != 0 and "SKIPS" in p.stdout
        else:
            labs_ok, caught_no_data = False, True

        # planted faults
        caught = {"a library needing libgsl": bool(foreign(["libm.so.6", "libgsl.so.27", "libc.so.6"]))
                  and not foreign(["libm.so.6", "libc.so.6", "ld-linux-x86-64.so.2"]),
                  "a library needing libgslcblas": bool(foreign(["libgslcblas.so.0"])),
                  "lab 9 without its recorded data (--no-skip)": caught_no_data}
        planted(caught)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return finish("test_wheel", f"the wheel installs into a fresh venv and runs the report and "
                  f"{len(solutions)} lab solutions there{'' if labs_ok else ' (not the labs)'}; "
                  f"{len(caught)} planted faults caught")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
