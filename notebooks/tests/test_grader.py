#!/usr/bin/env python3
"""test_grader.py: the grader's parts (unittest; ctest: notebooks_grader).  What crosses between
the grader and the student's process is plain data only (wire.py); the parameters are the
secret's and the id's alone; the student's process cannot load C code, start a process, signal
the grader, read outside the standard library and the data, or write anything, and it dies at
its time limit without taking the grade of the other checks with it; a call the check does not
allow is refused and recorded; `python3 -m grader` writes its two CSVs and refuses bad input with
one line and exit status 2, writing nothing."""
import csv
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import unittest

HERE = pathlib.Path(__file__).resolve().parent.parent
from grader import core, lab1, wire  # noqa: E402
from grader.session import ChildDied, Session  # noqa: E402
from run_all import time_scale  # noqa: E402

SCALE = time_scale()   # the sandbox's limit for work that must finish grows with the load

SECRET = b"0123456789abcdef0123"


class Wire(unittest.TestCase):
    def test_round_trip(self):
        v = {"a": (1, 2.5, float("inf")), 3: {(1, 2), (3, 4)}, (5, "x"): [None, True, "s", -0.0], "n": float("-inf")}
        self.assertEqual(wire.decode(json.loads(json.dumps(wire.encode(v)))), v)
        nan = wire.decode(wire.encode(float("nan")))
        self.assertNotEqual(nan, nan)

    def test_refuses_what_is_not_data(self):
        for bad in (object(), lambda: 1, open, type, b"bytes"):
            with self.assertRaises(wire.WireError):
                wire.encode(bad)
        deep = []
        for _ in range(wire.MAX_DEPTH + 2):
            deep = [deep]
        with self.assertRaises(wire.WireError):
            wire.encode(deep)
        for bad in ({"$x": 1}, {"a": 1, "b": 2}, {"$d": [[1]]}, {"$ref": ["chip", "t"]}):
            with self.assertRaises(wire.WireError):
                wire.decode(bad)

    def test_messages(self):
        r, w = os.pipe()
        wire.send(w, {"a": [1, 2]})
        self.assertEqual(wire.recv(r), {"a": [1, 2]})
        os.write(w, b"\x00\x00\x00\x03abc")
        with self.assertRaises(wire.WireError):
            wire.recv(r)
        os.write(w, (wire.MAX_MESSAGE + 1).to_bytes(4, "big"))
        with self.assertRaises(wire.WireError):
            wire.recv(r)
        os.close(w)
        with self.assertRaises(EOFError):
            wire.recv(r)
        os.close(r)


class Parameters(unittest.TestCase):
    def test_secret_and_id_alone(self):
        a = lab1.params(core.grading_rng(SECRET, 1, "ada"))
        self.assertEqual(a, lab1.params(core.grading_rng(SECRET, 1, " ada ")))
        self.assertNotEqual(a, lab1.params(core.grading_rng(SECRET, 1, "bob")))
        self.assertNotEqual(a, lab1.params(core.grading_rng(SECRET + b"x", 1, "ada")))
        self.assertNotEqual(repr(core.grading_rng(SECRET, 1, "ada").random()), repr(core.grading_rng(SECRET, 2, "ada").random()))
        from flashlab.labkit import lab1 as kit
        self.assertNotEqual(a["row"], kit.params("ada")["row"], "the grader's numbers are not the notebook's")
        with self.assertRaises(ValueError):
            core.grading_rng(b"short", 1, "ada")


class Sandbox(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        P = lab1.params(core.grading_rng(SECRET, 1, "ada"))
        cls.s = Session("lab1", "ada", {k: v for k, v in P.items() if k != "_hidden"},
                        timeout=5 * SCALE)

    @classmethod
    def tearDownClass(cls):
        cls.s.close()

    def refused(self, code, needle):
        err, _ = self.s.exec(code, "t", allow=())
        self.assertIsNotNone(err, code)
        self.assertIn(needle, err, code)

    def test_escapes_are_refused(self):
        self.refused("import ctypes", "not allowed")
        self.refused("import subprocess; subprocess.run(['true'])", "not allowed")
        self.refused("import os; os.system('true')", "not allowed")
        self.refused("import os; os.kill(os.getppid(), 0)", "not allowed")
        self.refused("open('/etc/hostname').read()", "not allowed")
        self.refused(f"open({str(HERE / 'grader' / 'core.py')!r}).read()", "not allowed")
        self.refused("open('x.txt', 'w')", "not allowed")
        self.refused("import os; os.listdir('/')", "not allowed")
        self.refused("import socket", "not allowed")
        self.refused("input()", "not available")
        self.assertTrue(self.s.alive)

    def test_reading_the_data_and_the_standard_library(self):
        err, out = self.s.exec("import json, statistics, fractions\nimport flashlab as fl\n"
                               "n = len(list(fl.data_dir().glob('gpu_*.csv')))\nprint(n)", "t", allow=())
        self.assertIsNone(err)
        self.assertGreater(int(out.strip()), 0)

    def test_the_library_only_as_allowed(self):
        before = len(self.s.violations)
        err, _ = self.s.exec("import flashlab as fl\nr = fl.run('flash2', N=64, d=8, M=1000)", "answer 9", allow=())
        self.assertIn("not available in this answer", err)
        self.assertEqual(self.s.violations[before:], [("answer 9", "run")])
        err, _ = self.s.exec("import flashlab as fl\nr = fl.run('flash2', N=64, d=8, M=1000)\nt = r.total", "answer 9",
                             allow=("run",))
        self.assertIsNone(err)
        import flashlab as fl
        self.assertEqual(self.s.get(["t"])["t"], fl.run("flash2", N=64, d=8, M=1000).total)
        err, _ = self.s.exec("import flashlab as fl\nfl.osm_step(None, [1], [[1]])", "answer 9", allow=("run",))
        self.assertIn("not available", err)
        self.assertIn(("answer 9", "osm_step"), self.s.violations)

    def test_parameters_are_the_graders(self):
        self.s.exec("from flashlab import labkit\nfrom flashlab.labkit import lab1\nSTUDENT = ''\nQ = lab1.params('')\n"
                    "from flashlab import labkit as k\nk.report = None", "t", allow=())
        Q = self.s.get(["Q"])["Q"]
        self.assertEqual(Q["row"], lab1.params(core.grading_rng(SECRET, 1, "ada"))["row"])
        self.assertNotIn("_hidden", Q)

    def test_time_limit(self):
        s = Session("lab1", "ada", {}, timeout=1.5)
        try:
            with self.assertRaises(ChildDied) as e:
                s.exec("while True: pass", "t", allow=())
            self.assertIn("time limit", str(e.exception))
            self.assertFalse(s.alive)
        finally:
            s.close()


def run_grader(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "grader", *map(str, args)], capture_output=True, text=True,
                          cwd=str(HERE), env=dict(os.environ, PYTHONPATH=os.pathsep.join(
                              [str(HERE)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])))


class Command(unittest.TestCase):
    def setUp(self):
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix="fl_grader_"))

    def tearDown(self):
        import shutil
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_secret_grade_csv(self):
        sec = self.tmp / "secret"
        self.assertEqual(run_grader("secret", sec).returncode, 0)
        self.assertEqual(oct(sec.stat().st_mode & 0o777), "0o600")
        p = run_grader("secret", sec)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1)
        subs = self.tmp / "subs"
        for sid, nb in (("ada", "solutions/lab1_online_softmax_solution.ipynb"), ("bob", "lab1_online_softmax.ipynb")):
            (subs / sid).mkdir(parents=True)
            (subs / sid / "mine.ipynb").write_text((HERE / nb).read_text())
        out = self.tmp / "out"
        out.mkdir()
        p = run_grader("grade", "--secret-file", sec, "--out", out, subs / "ada", subs / "bob")
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = list(csv.DictReader((out / "grades.csv").read_text().splitlines()))
        self.assertEqual([r["check"] for r in rows[:4]], [c.cid for c in lab1.CHECKS])
        self.assertEqual({(r["student"], r["verdict"]) for r in rows}, {("ada", "PASS"), ("bob", "FAIL")})
        self.assertTrue(all(r["feedback"] for r in rows if r["verdict"] == "FAIL"))
        totals = list(csv.DictReader((out / "totals.csv").read_text().splitlines()))
        self.assertEqual([(t["student"], t["points"], t["max_points"]) for t in totals], [("ada", "4", "4"), ("bob", "0", "4")])

    def test_bad_input_is_one_line_and_nothing_written(self):
        sec = self.tmp / "secret"
        sec.write_text("ab" * 32)
        out = self.tmp / "out"
        out.mkdir()
        junk = self.tmp / "junk.ipynb"
        junk.write_text("not json")
        other = self.tmp / "other.ipynb"
        other.write_text(json.dumps({"cells": []}))
        for args in (("grade", "--secret-file", self.tmp / "none", "--out", out, "--student", "a", junk),
                     ("grade", "--secret-file", sec, "--out", self.tmp / "nowhere", "--student", "a", junk),
                     ("grade", "--secret-file", sec, "--out", out, "--student", "a", junk),
                     ("grade", "--secret-file", sec, "--out", out, "--student", "a", other),
                     ("grade", "--secret-file", sec, "--out", out, "--student", " ", other),
                     ("grade", "--secret-file", sec, "--out", out, junk),
                     ("params", "--secret-file", sec, "--student", "a", "--lab", "11")):
            p = run_grader(*args)
            self.assertEqual(p.returncode, 2, args)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
            self.assertTrue(p.stderr.startswith("grader: "), p.stderr)
        self.assertEqual(list(out.iterdir()), [])
        (self.tmp / "short").write_text("abcd")
        p = run_grader("params", "--secret-file", self.tmp / "short", "--student", "a", "--lab", "1")
        self.assertEqual(p.returncode, 2)


class Cells(unittest.TestCase):
    def test_a_missing_answer_cell_and_one_that_raises(self):
        nb = json.loads((HERE / "solutions" / "lab1_online_softmax_solution.ipynb").read_text())
        cells = [c for c in nb["cells"] if "answer" in c.get("metadata", {}).get("tags", [])]
        nb["cells"].remove(cells[2])
        cells[0]["source"] = "m1 = 1 / 0"
        res = {o.cid: o for o in core.grade(lab1, nb, "ada", SECRET)}
        self.assertFalse(res["lab1.tile-one"].passed)
        self.assertIn("ZeroDivisionError", " ".join(res["lab1.tile-one"].feedback))
        self.assertFalse(res["lab1.rescales"].passed)
        self.assertTrue(res["lab1.own-tiling"].passed, res["lab1.own-tiling"].feedback)


if __name__ == "__main__":
    unittest.main()
