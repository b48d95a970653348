#!/usr/bin/env python3
"""test_checks.py: the notebooks' own checks (labkit), on the numbers a student practises on.
Every check passes the solutions' answers (taken from the labs' sources: solutions_again.py) for
several student ids, also rounded to 6 significant digits where the answer is a number; fails
untouched answers; never raises whatever the answer's type; and the checks that test a property
instead of an expected value (labs 3, 6, 7: nothing here holds those answers) fail planted wrong
answers with the hint that names the mistake.  The grader's checks, on parameters a student never
sees, are tested by grading_battery.py (unittest; ctest: notebooks_checks)."""
import math
import pathlib
import unittest

HERE_ROOT = pathlib.Path(__file__).resolve().parents[2]
from grader import labs  # noqa: E402
from solutions_again import solution  # noqa: E402

STUDENTS = ("", "ada", "grace")
WEIRD = ("12", [1, "x"], {"a": 1}, float("nan"), lambda *a, **k: 1 / 0, object())


def sig6(x):
    """x rounded to 6 significant digits (what a student copies from a printout)."""
    if isinstance(x, (list, tuple)):
        return type(x)(sig6(v) for v in x)
    if isinstance(x, dict):
        return {k: sig6(v) for k, v in x.items()}
    return float(f"{x:.6g}") if isinstance(x, float) and math.isfinite(x) else x


def local(lab, cid):
    """(the labkit check of cid, the grader's Check of it)."""
    spec = labs.SPECS[lab]
    c = next(c for c in spec.CHECKS if c.cid == cid)
    kit = spec.KIT
    fn = next(getattr(kit, n) for n in dir(kit) if getattr(getattr(kit, n), "cid", None) == cid)
    return fn, c


def arguments(lab, check, student):
    ns = solution(lab, student)
    P = ns.get("P", ns.get("case"))
    return P, [ns[n] for n in check.names]


class Every(unittest.TestCase):
    """Every check of every lab: the solution passes for several ids; None fails; nothing raises."""

    def test_solutions_pass_untouched_fail_nothing_raises(self):
        for lab, spec in labs.SPECS.items():
            for check in spec.CHECKS:
                fn, c = local(lab, check.cid)
                for st in STUDENTS:
                    P, args = arguments(lab, c, st)
                    self.assertEqual(fn.problems(P, *args), [], f"{c.cid} ({st!r}) should pass the solution")
                P, args = arguments(lab, c, "ada")
                self.assertTrue(fn.problems(P, *[None] * len(args)), f"{c.cid} passes None")
                for k in range(len(args)):
                    for w in WEIRD:
                        bad = list(args)
                        bad[k] = w
                        self.assertIsInstance(fn.problems(P, *bad), list, f"{c.cid}: {w!r} as argument {k}")

    def test_rounded_numbers_pass(self):
        for lab, cid in ((1, "lab1.tile-one"), (1, "lab1.tile-two"), (1, "lab1.rescales"), (5, "lab5.traffic"),
                         (7, "lab7.floor"), (9, "lab9.reductions")):
            fn, c = local(lab, cid)
            for st in STUDENTS:
                P, args = arguments(lab, c, st)
                args = [sig6(a) if not callable(a) else a for a in args]
                self.assertEqual(fn.problems(P, *args), [], f"{cid} ({st!r}) rounded to 6 digits")


class Properties(unittest.TestCase):
    """The checks that hold no expected value catch planted wrong answers by the property they test."""

    def fails(self, fn, P, *args, hint):
        probs = fn.problems(P, *args)
        self.assertTrue(probs, f"{fn.cid} should fail")
        self.assertTrue(any(hint in p for p in probs), f"{fn.cid}: hint {hint!r} not in {probs}")

    def test_lab3(self):
        from flashlab.labkit import lab3
        P = lab3.params("ada")
        law = lab3.law
        self.fails(lab3.napkin_check, P, lambda N, d, M: 12 * law(N, d, M), hint="below the machine")
        self.fails(lab3.napkin_check, P, lambda N, d, M: 7.5 * law(N, d, M), hint="not a whole number")
        self.fails(lab3.napkin_check, P, lambda N, d, M: 8 * N * d * d / M, hint="c N^2 d^2 / M")
        ns = solution(3, "ada")
        c, spread = ns["c_fit"], ns["spread"]
        self.fails(lab3.fit_check, P, dict(c, flash2=c["flash2"] * 1.01), spread, hint="derivative")
        every = lab3.ratios(P, "flash1", lab3.grid(P["sweep"][2]))
        self.fails(lab3.fit_check, P, dict(c, flash1=sum(every) / len(every)), spread, hint="all 11 points")
        self.fails(lab3.fit_check, P, c, 1 / spread, hint="at least 1")
        n, d = P["flat"]
        self.fails(lab3.flat, P, 4 * n * d + n * n, hint="which of its buffers")
        self.fails(lab3.flat, P, 4 * n * d + n * n + 3 * n, hint="a smaller M")
        self.fails(lab3.flat, P, n * d, hint="Theta law")

    def test_lab6(self):
        from flashlab.labkit import lab6
        ns = solution(6, "ada")
        P, model = ns["P"], ns["model_for_kernel"]
        unforced = lambda algo, N, d, Br, Bc, **k: model(algo, N, d, Br * 2, Bc, **k)
        self.fails(lab6.model, P, unforced, hint="force the kernel's")
        no_mask = lambda algo, N, d, Br, Bc, causal="none", elem_bytes=2, pass_="fwd", Nk=None: model(algo, N, d, Br, Bc, pass_=pass_)
        if any(lab6.kernel_args(r)["causal"] != "none" or lab6.kernel_args(r)["Nk"] != lab6.kernel_args(r)["N"] for r in P["kernels"]):
            self.fails(lab6.model, P, no_mask, hint="pass its mask")
        n, eq = ns["rows_compared"], ns["rows_equal"]
        self.fails(lab6.counters, P, n + 1, eq, model, hint="rows_compared")
        self.fails(lab6.counters, P, n, eq - 1, model, hint="rows_equal")
        self.fails(lab6.ncu, P, ns["min_dram_ratio"] * 1.5, ns["min_dram_row"], model, hint="min_dram_ratio")
        self.fails(lab6.ncu, P, ns["min_dram_ratio"], ("flash9", 1, 2, 3), model, hint="min_dram_row")

    def test_lab7(self):
        from flashlab.labkit import lab7
        ns = solution(7, "ada")
        P, floors = ns["P"], ns["floors"]
        self.fails(lab7.floors, P, lambda B, H, N, d, c, eb: floors(B, H, N, d, False, eb), hint="halved with the causal")
        self.fails(lab7.floors, P, lambda B, H, N, d, c, eb: floors(B, H, N, d, c, 1), hint="elem_bytes")
        self.fails(lab7.bytes_check, P, lambda r: ns["model_bytes"](r) + 2, hint="the model recorded beside")
        self.fails(lab7.floor, P, 1 / ns["speedup"], ns["byte_ratio"], ns["std_tbps"], ns["tiled_tflops"], hint="speedup")
        self.fails(lab7.sdpa_check, P, ns["worst_ratio"] * 1.1, ns["worst_shape"], hint="worst_ratio")


class InstructorValues(unittest.TestCase):
    """docs/labs/instructor.md's lab 1 values (`name = value` in backquotes) pass the notebook's
    checks for the handout's numbers (no student id)."""

    def test_lab1(self):
        import re
        from flashlab.labkit import lab1
        text = (HERE_ROOT / "docs" / "labs" / "instructor.md").read_text()
        part = text[text.index("**Lab 1.**"):text.index("**Lab 2.**")].replace("\n", " ")
        v = {k: eval(x) for k, x in re.findall(r"`(\w+) = ([^`]+)`", part)}
        P = lab1.params("")
        self.assertEqual(lab1.tile_one.problems(P, v["m1"], v["l1"], v["u1"]), [])
        self.assertEqual(lab1.tile_two.problems(P, v["m1"], v["l1"], v["u1"], v["a2"], v["m2"], v["l2"], v["u2"], v["O"]), [])
        self.assertEqual(lab1.rescales.problems(P, v["factors"]), [])


class NoKey(unittest.TestCase):
    """labkit has no answers command and no answers() any more."""

    def test_no_answers(self):
        import importlib
        from flashlab import labkit
        with self.assertRaises(ImportError):
            importlib.import_module("labkit.__main__")
        for lab in range(1, 11):
            self.assertFalse(hasattr(importlib.import_module(f"flashlab.labkit.lab{lab}"), "answers"), lab)
        self.assertFalse(hasattr(labkit, "answers"))


if __name__ == "__main__":
    unittest.main()
