#!/usr/bin/env python3
"""check_one_line.py SOURCE BUILD: a new schedule is one file plus one registry line.

Builds SOURCE into BUILD (a scratch folder) with -DFLASHLAB_TEST_SCHEDULES=SOURCE/tests/extra,
which adds tests/extra/flash2_rev.c and the one line of tests/extra/schedules.def to the
registry, and changes no other file.  Then flash2-rev must appear everywhere the registry reaches:
`flashlab schedules`, `count --algo flash2-rev` (equal to flash2's counts: it moves what flash2
moves), `sweep --algo all`, optimize's family (fl_opt.family, read by a small C program built
against the library), `report --no-figures`'s tables, the Python binding (ALGOS, CLASSIC, a
compute run within 1e-12 of the reference) and the conformance suite (test_registry of BUILD).
Exit 0 when all hold; one line per failure otherwise.

check_one_line.py SOURCE BUILD --no-build: the checks alone, on a build that exists (ctest runs
them on the plain build, without the test schedule, and expects every check but the last to
fail: a check that a missing schedule passes would prove nothing)."""
import os
import subprocess
import sys

SRC, BUILD = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
BUILD_IT = "--no-build" not in sys.argv[3:]
NAME = "flash2-rev"
bad = []


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        bad.append(what)


if BUILD_IT:
    cfg = run(["cmake", "-S", SRC, "-B", BUILD, "-DFLASHLAB_CUDA=OFF", "-DCMAKE_BUILD_TYPE=Release",
               "-DFLASHLAB_TEST_SCHEDULES=" + os.path.join(SRC, "tests", "extra")])
    if cfg.returncode:
        sys.exit("check_one_line: cmake failed:\n" + cfg.stderr[-2000:])
    b = run(["cmake", "--build", BUILD, "-j", "2", "--target", "flashlab_cli", "flashlab", "test_registry"])
    if b.returncode:
        sys.exit("check_one_line: the build failed:\n" + (b.stdout + b.stderr)[-3000:])
cli = os.path.join(BUILD, "flashlab")
lib = os.path.join(BUILD, "src", "libflashlab.so")

out = run([cli, "schedules", "--format", "csv"]).stdout
row = [l for l in out.splitlines() if l.startswith(NAME + ",")]
check(row and row[0].startswith(NAME + ",yes,O2,O1,"), "flashlab schedules lists it in all and in the family")

a = run([cli, "count", "--algo", NAME + ",flash2", "--N", "300", "--d", "16", "--M", "5000", "--causal",
         "bottom-right", "--heads", "4", "--kv-heads", "2", "--pass", "fwd+bwd", "--format", "csv"]).stdout
rows = [r.split(",") for r in a.splitlines()[1:]]
check(len(rows) == 2 and rows[0][0] == NAME and rows[0][6:9] == rows[1][6:9],
      "count --algo flash2-rev runs and moves what flash2 moves")

s = run([cli, "sweep", "--algo", "all", "--N", "64,128", "--d", "16", "--M", "4000", "--format", "csv"]).stdout
check(sum(l.startswith(NAME + ",") for l in s.splitlines()) == 2, "sweep --algo all has its rows")

prog = os.path.join(BUILD, "family.c")
with open(prog, "w") as f:
    f.write('#include <stdio.h>\n#include <flashlab/optimize.h>\n#include <flashlab/schedule.h>\n'
            'int main(void) { fl_problem p = fl_problem_default(); fl_opt o; p.N = 64; p.d = 8; p.M = 2000;\n'
            '  if (fl_optimize(&p, 1, FL_OPT_MAX_WORK, &o)) return 1;\n'
            '  for (int i = 0; i < o.nfamily; i++) printf("%s\\n", fl_algo_name(o.family[i])); return 0; }\n')
cc = run(["cc", "-std=c11", "-I", os.path.join(SRC, "include"), "-I", os.path.join(SRC, "include", "flashlab"),
          prog, "-o", prog[:-2], lib, "-Wl,-rpath," + os.path.dirname(lib), "-lm"])
fam = run([prog[:-2]]).stdout.split() if not cc.returncode else []
check(NAME in fam, "optimize searches it (its family: %s)" % " ".join(fam))

r = run([cli, "report", "--no-figures", "--out", os.path.join(BUILD, "report-out")]).stdout
table = r.split("Slope of HBM traffic")[0]
check(NAME in table, "report --no-figures has it in the GPT-2 table")
check(any(NAME in l for l in r.splitlines() if "optimum (Br x Bc)" in l), "report's per-regime table has its column")

py = run([sys.executable, "-c",
          "import flashlab as fl\n"
          f"assert {NAME!r} in fl.ALGOS and {NAME!r} in fl.CLASSIC\n"
          f"r = fl.run({NAME!r}, mode='compute', N=70, d=8, M=4000, causal='bottom-right')\n"
          "assert r.rel_err <= 1e-12, r.rel_err\n"],
         env=dict(os.environ, FLASHLAB_LIB=lib, PYTHONPATH=os.path.join(SRC, "python")))
check(py.returncode == 0, "the binding lists it and runs it against the reference" + (": " + py.stderr[-300:] if py.returncode else ""))

t = run([os.path.join(BUILD, "tests", "test_registry"), "--jobs", "2"])
check(t.returncode == 0, "the conformance suite passes with it" + ("" if not t.returncode else ": " + t.stderr[-500:]))

print(f"check_one_line: {len(bad)} failure(s)")
sys.exit(1 if bad else 0)
