#!/usr/bin/env python3
"""run_lab6_live.py: runs lab 6's live-measurement cell, verbatim, outside Jupyter (on the GPU
machine, where the notebook's other cells need the C library, which the cell itself does not).

    FLASHLAB_GPU=build/flashlab-gpu python3 kernels/run_lab6_live.py notebooks/src/lab6_real_kernels.py

The lab's source is split at its '# %%' cell markers; this script executes, unchanged, the
function read_measurements from the first code cell and the code cell under '## Live
measurements', with the names they use (os, shutil, subprocess, tempfile, pathlib, fl.ROOT and
the dict recorded) provided, then prints what the live run added to recorded.
"""
import pathlib
import sys
import types


def cells(src):
    """The lab's cells: (marker line, body) in order."""
    out, cur, head = [], [], None
    for line in src.splitlines():
        if line.startswith("# %%"):
            if head is not None:
                out.append((head, "\n".join(cur)))
            head, cur = line, []
        else:
            cur.append(line)
    if head is not None:
        out.append((head, "\n".join(cur)))
    return out


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    src = pathlib.Path(sys.argv[1]).read_text()
    cs = cells(src)
    live = None
    for i, (head, body) in enumerate(cs):
        if "## Live measurements" in body:
            live = next(b for h, b in cs[i + 1:] if h.strip() == "# %%")
            break
    first = next(b for h, b in cs if h.strip() == "# %%" and "def read_measurements" in b)
    fn = first[first.index("def read_measurements"):]
    fn = fn[:fn.index("\nDATA")] if "\nDATA" in fn else fn
    if live is None:
        print("run_lab6_live: no '## Live measurements' cell in the lab", file=sys.stderr)
        return 2
    import csv, io, os, shutil, subprocess, tempfile  # noqa: E401  (the names the cells use)
    fl = types.SimpleNamespace(ROOT=pathlib.Path(__file__).resolve().parent.parent)
    env = dict(csv=csv, io=io, os=os, shutil=shutil, subprocess=subprocess, tempfile=tempfile, pathlib=pathlib,
               fl=fl, recorded={})
    exec(fn, env)
    print("---- the live cell, as the lab has it ----\n" + live.strip() + "\n---- its output ----", flush=True)
    exec(live, env)
    rec = env["recorded"].get("live")
    print("---- recorded['live'] ----")
    if not rec:
        print("nothing: the live run did not produce a CSV")
        return 1
    prov, rows = rec
    status = {}
    for r in rows:
        status[r["status"]] = status.get(r["status"], 0) + 1
    print(f"{len(rows)} rows; status counts {status}; provenance:")
    for p in prov:
        print("   ", p)
    return 0 if rows and all(r["status"].startswith("ok") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
