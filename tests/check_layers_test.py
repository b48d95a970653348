#!/usr/bin/env python3
"""check_layers_test.py: scripts/check_layers.py passes on the tree and fails on planted faults:
an upward import, a circle, the reference reaching the schedules, GSL outside analysis, a
kernel reaching a private header; a schedule named outside the registry (an enumerator in the
library, a name in the CLI or the binding), a typed list of schedules or a loop bounded by one in
a test, a test including a .c file.  Each fault is planted in a copy of the tree's sources."""
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "check_layers.py")


def run(root):
    p = subprocess.run([sys.executable, SCRIPT, root], capture_output=True, text=True)
    return p.returncode, p.stdout


def copy_tree():
    tmp = tempfile.mkdtemp(prefix="fl_layers_")
    for top in ("include", "src", "reference", "cli", "kernels", "tests"):
        shutil.copytree(os.path.join(ROOT, top), os.path.join(tmp, top),
                        ignore=shutil.ignore_patterns("*.o", "build*", "golden"))
    os.makedirs(os.path.join(tmp, "python", "flashlab"))
    shutil.copy(os.path.join(ROOT, "python", "flashlab", "__init__.py"), os.path.join(tmp, "python", "flashlab"))
    return tmp


def plant(root, rel, line):
    path = os.path.join(root, rel)
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(line + "\n" + text)


faults = [
    ("src/base/status.c", '#include <flashlab/run.h>', "imports point down"),
    ("src/machine/machine.c", '#include "mask/masks.c"', "imports point down"),
    ("reference/attention_ref.c", '#include <flashlab/problem.h>', "may include base only"),
    ("src/schedules/flash2.c", '#include "attention_ref.h"', "only run and above may"),
    ("src/run/run.c", '#include <gsl/gsl_fit.h>', "GSL belongs to the analysis module only"),
    ("kernels/harness/gpu_case.cu", '#include "problem/segments.h"', "private header"),
    ("include/flashlab/status.h", '#include "status.h"', "include circle"),
    # every list once: the registry is the only list of schedules
    ("src/analysis/optimize.c", "static const int planted_ = FL_ALGO_FLASH1;", "uses FL_ALGO_FLASH1"),
    ("cli/cmd_count.c", 'static const char *planted_ = "flash2";', 'names the schedule "flash2"'),
    ("python/flashlab/__init__.py", 'PLANTED = ("standard", 1)', "names the schedule 'standard'"),
    ("tests/unit/analysis/test_optimize.c",
     "static const fl_algo planted_[] = {FL_ALGO_FLASH1, FL_ALGO_FLASH2};", "types a list of schedules"),
    ("tests/unit/schedules/test_bwd.c", "static void planted_(void) { for (int a = 0; a <= FL_ALGO_FLASH2; a++); }",
     "bounds a loop by FL_ALGO_FLASH2"),
    ("tests/cli/test_cli.c", '#include "main.c"', "includes a .c file"),
]
code, out = run(ROOT)
ok = code == 0
print(f"clean tree: exit {code}" + ("" if ok else "\n" + out))
for rel, line, expect in faults:
    tmp = copy_tree()
    try:
        plant(tmp, rel, line)
        code, out = run(tmp)
        hit = code == 1 and expect in out
        print(f"planted {line!r} in {rel}: exit {code}, {'caught' if hit else 'MISSED'}")
        ok = ok and hit
    finally:
        shutil.rmtree(tmp)
sys.exit(0 if ok else 1)
