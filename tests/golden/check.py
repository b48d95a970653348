#!/usr/bin/env python3
"""check.py: re-runs every command of the golden files and compares its output.

    tests/golden/check.py CLI SOURCE_DIR [--jobs N]

CLI is the built flashlab binary, SOURCE_DIR the source tree (its tests/golden/*.txt are read).
Each command is run as record.py ran it (golden.py) and its record - exit status, stdout,
stderr, files written, after the provenance filter - must equal the recorded one.  A differing
command prints a unified diff (at most 40 lines); the exit status is 1 when any command differs,
0 otherwise.  A command whose setup cannot run here (mknod when not root) is reported and
skipped, as tests/test_errors_catalogue.c skips it.
"""
import argparse
import difflib
import glob
import os
import sys
import time

import golden   # beside this file

MAX_DIFF_LINES = 40


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cli")
    ap.add_argument("source_dir")
    ap.add_argument("--jobs", type=int, default=None)
    a = ap.parse_args()
    t0 = time.time()
    files = sorted(glob.glob(os.path.join(a.source_dir, "tests", "golden", "*.txt")))
    todo = []
    for path in files:
        for cmd, rec in golden.parse(path):
            todo.append((os.path.basename(path), cmd, rec))
    if not todo:
        print("check.py: no golden records under %s/tests/golden" % a.source_dir)
        return 1
    results = golden.run_all([c for _, c, _ in todo], a.cli, a.jobs)
    differ, skipped, per_file = 0, 0, {}
    for (name, cmd, want), (got, setup_failed) in zip(todo, results):
        per_file[name] = per_file.get(name, 0) + 1
        if setup_failed and not any(ln.startswith(golden.HEAD + "setup failed") for ln in want):
            skipped += 1
            print("SKIP %s: its setup cannot run here (%s)" % (cmd.line, cmd.setup))
            continue
        if got == want:
            continue
        differ += 1
        print("DIFF %s: %s" % (name, cmd.line))
        diff = list(difflib.unified_diff(want, got, "recorded", "now", lineterm="", n=2))
        for ln in diff[:MAX_DIFF_LINES]:
            print("    " + ln)
        if len(diff) > MAX_DIFF_LINES:
            print("    ... (%d more diff lines)" % (len(diff) - MAX_DIFF_LINES))
    summary = ", ".join("%s %d" % (n, k) for n, k in per_file.items())
    print("golden outputs: %d commands (%s) in %.1f s; %d differ, %d skipped"
          % (len(todo), summary, time.time() - t0, differ, skipped))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
