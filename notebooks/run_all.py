#!/usr/bin/env python3
"""run_all.py: executes course notebooks top to bottom (nbclient) and reads their check cells.

    python3 run_all.py --expect pass notebooks/solutions/*.ipynb
    python3 run_all.py --expect fail notebooks/lab*.ipynb

Every code cell tagged "check" must print at least one line "CHECK <id>: PASS|FAIL|SKIP" (made
by flashlab.check; SKIP only where the data a check needs does not exist here, e.g. no recorded
GPU measurements, and never for every check of a notebook).  --expect pass: every check passes (the solutions).  --expect fail: every check
fails (the untouched exercises: a check that passes with no answer given checks nothing).
--expect any: only run.  Any error in any cell, a check cell that prints no CHECK line, or a
notebook slower than --limit seconds times the time scale fails the run (exit 1).  The time
scale is the repository's tests/support/time_scale.py where it is importable (ctest puts it on
PYTHONPATH: FLASHLAB_TIME_SCALE, else the load per CPU, at least 1), so a loaded machine does
not fail a correct notebook; 1 elsewhere.  The notebooks run in their own folder with this
environment: `import flashlab` finds the installed package, or the repository's python/ through
PYTHONPATH (ctest sets it, with FLASHLAB_LIB and FLASHLAB_CLI).
"""
import argparse
import os
import pathlib
import re
import shutil
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent


def time_scale():
    """tests/support/time_scale.py's factor where it is on the path (ctest); 1 elsewhere."""
    try:
        from time_scale import time_scale as scale
    except ImportError:
        return 1.0
    return scale()
CHECK = re.compile(r"^CHECK (\S+): (PASS|FAIL|SKIP)\s*$", re.M)
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def execute(nb, path, limit):
    """Runs nb top to bottom in a fresh python3 kernel.  The kernel talks over IPC sockets in a
    private temporary folder (no TCP ports to race for when ctest runs notebooks in parallel);
    a kernel that dies before running any cell is started once more.  Returns an error message
    or None."""
    import jupyter_client
    import nbclient
    for attempt in (1, 2):
        tmp = tempfile.mkdtemp(prefix="fl_nb_")
        km = jupyter_client.KernelManager(kernel_name="python3", transport="ipc", ip=os.path.join(tmp, "k"))
        client = nbclient.NotebookClient(nb, km=km, timeout=int(limit) + 1, kernel_name="python3",
                                         resources={"metadata": {"path": str(path.parent)}})
        try:
            client.execute()
            return None
        except Exception as e:  # CellExecutionError, DeadKernelError, timeouts: all failures
            started = any(c.get("execution_count") for c in nb.cells if c.cell_type == "code")
            if attempt == 1 and not started:
                print(f"{path.name}: the kernel did not start ({type(e).__name__}); starting it once more")
                continue
            first = ANSI.sub("", str(e)).strip().splitlines()
            return "execution failed: " + "\n    ".join(first[-25:])
        finally:
            if km.has_kernel:
                km.shutdown_kernel(now=True)
            shutil.rmtree(tmp, ignore_errors=True)


def run(path, expect, limit, no_skip=False):
    import nbformat
    nb = nbformat.read(str(path), as_version=4)
    problems = []
    t0 = time.monotonic()
    err = execute(nb, path, limit)
    if err:
        problems.append(err)
    secs = time.monotonic() - t0
    if secs > limit:
        problems.append(f"took {secs:.1f} s, more than the limit of {limit:.0f} s")
    results = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or "check" not in cell.metadata.get("tags", []):
            continue
        text = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")
        found = CHECK.findall(text)
        if not found and not problems:
            problems.append(f"check cell {i} printed no CHECK line")
        for cid, verdict in found:
            results.append((cid, verdict))
            if verdict == "SKIP":
                if no_skip:
                    problems.append(f"check {cid} SKIPS, though the data it needs ships with the labs "
                                    f"(--no-skip): the notebook does not find it")
                continue
            if expect == "pass" and verdict != "PASS":
                detail = text.split(f"CHECK {cid}: FAIL", 1)[1].strip().splitlines()[:3]
                problems.append(f"check {cid} FAILS with the solution: {' / '.join(detail)}")
            if expect == "fail" and verdict != "FAIL":
                problems.append(f"check {cid} PASSES with the untouched exercise (it checks nothing)")
    npass = sum(v == "PASS" for _, v in results)
    nskip = sum(v == "SKIP" for _, v in results)
    if results and nskip == len(results):
        problems.append("every check skipped: nothing was checked")
    print(f"{path.name}: {secs:.1f} s, {len(results)} checks: {npass} pass, "
          f"{len(results) - npass - nskip} fail" + (f", {nskip} skipped (no data here)" if nskip else "") +
          f" -> {'OK' if not problems else 'FAILED'} (expected: {expect})")
    for p in problems:
        print("   ", p)
    return not problems


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--expect", choices=("pass", "fail", "any"), default="any")
    ap.add_argument("--limit", type=float, default=60.0, help="seconds per notebook [60]")
    ap.add_argument("--student", help="run with this student id (sets FLASHLAB_STUDENT, which "
                    "labkit.student() reads in each notebook's first cell)")
    ap.add_argument("--no-skip", action="store_true",
                    help="a SKIP fails the run: the recorded data ships here (the repository, the "
                    "student-only layout), so a check that skips did not find it")
    ap.add_argument("notebooks", nargs="+", type=pathlib.Path)
    a = ap.parse_args()
    try:
        import nbclient, nbformat, ipykernel  # noqa: F401
    except ImportError as e:
        print(f"run_all: {e}: install the notebook runner (scripts/install-deps.sh, or "
              f"python3 -m pip install nbclient nbformat ipykernel)")
        return 1
    for var in ("FLASHLAB_LIB", "FLASHLAB_CLI"):  # the notebooks run in their own folder
        if os.environ.get(var):
            os.environ[var] = str(pathlib.Path(os.environ[var]).resolve())
    if a.student is not None:
        os.environ["FLASHLAB_STUDENT"] = a.student
    try:
        limit = a.limit * time_scale()
    except ValueError as e:
        print(f"run_all: {e}")
        return 1
    ok = all([run(p.resolve(), a.expect, limit, a.no_skip) for p in a.notebooks])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
