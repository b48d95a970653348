#!/usr/bin/env python3
"""test_nokey.py: what a student has holds no answer key (ctest: notebooks_nokey).  The student's
folder is built (make_handout.py) in a temporary folder; with the installed package's files
(make_handout.package_files()) it must have no `answers` command, no grader, no solution, no
instructor's guide, and none of the grader's answer functions; its text files (code, notebooks,
handouts, figure scripts; not the recorded measurements, which the labs read) must
not contain any expected value of any graded check, for the handout's worked examples and for
several students (the solutions' answers on each one's notebook numbers, rendered as a student
would see them: in full, to 6, 5 and 4 significant digits); and no public function of labkit or
flmachine that takes nothing, a student id or a student's parameters may return one."""
import contextlib
import inspect
import io
import math
import pathlib
import re
import shutil
import tempfile
import unittest

HERE = pathlib.Path(__file__).resolve().parent.parent
import make_handout   # notebooks/, on PYTHONPATH (ctest sets it)
from grader import labs  # noqa: E402
from flashlab.labkit import _problems  # noqa: E402
from solutions_again import with_params  # noqa: E402

STUDENTS = ("", "ada", "student042")
TEXT = (".py", ".ipynb", ".md", ".gp", ".txt")


def numbers(v, out):
    """The numbers inside a value (nested lists, tuples, dicts, sets, run results)."""
    if isinstance(v, bool) or v is None:
        return out
    if isinstance(v, (int, float)):
        out.append(v)
    elif isinstance(v, dict):
        for x in v.values():
            numbers(x, out)
    elif isinstance(v, (list, tuple, set)):
        for x in v:
            numbers(x, out)
    elif hasattr(v, "reads"):
        numbers([v.reads, v.writes], out)
    return out


def renderings(x):
    """How an expected number would appear in a file: specific enough to mean something (floats
    of 4 significant digits and more, whole numbers of 5 digits and more that are not powers of
    two: the labs' sizes are)."""
    if isinstance(x, int) or (isinstance(x, float) and x.is_integer() and abs(x) < 1e15):
        n = abs(int(x))
        return {str(int(x))} if n >= 10000 and n & (n - 1) else set()
    if not math.isfinite(x):
        return set()
    out = {repr(x)} | {f"{x:.{k}g}" for k in (6, 5, 4)}
    return {s for s in out if len(re.sub(r"[^0-9]", "", s.split("e")[0]).strip("0")) >= 4}


class Log:
    def __init__(self, fn, log):
        self.fn, self.log, self.__name__ = fn, log, getattr(fn, "__name__", "fn")

    def __call__(self, *a, **k):
        out = self.fn(*a, **k)
        self.log.append(out)
        return out


def expected(lab, student):
    """The expected values of lab's checks on a student's notebook numbers: the solution's
    variables, and what its functions return when the notebook's checks call them."""
    spec = labs.SPECS[lab]
    P = spec.KIT.params(student)
    ns = with_params(lab, P)
    vals = []
    for c in spec.CHECKS:
        kit = next(getattr(spec.KIT, n) for n in dir(spec.KIT) if getattr(getattr(spec.KIT, n), "cid", None) == c.cid)
        log, args = [], []
        for n in c.names:
            v = ns[n]
            args.append(Log(v, log) if callable(v) and not isinstance(v, type) else v)
            if not callable(v):
                vals.append(v)
        with contextlib.redirect_stdout(io.StringIO()):
            _problems(kit, (P, *args), {})
        vals += log
    return P, numbers(vals, [])


class NoKey(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = pathlib.Path(tempfile.mkdtemp(prefix="fl_nokey_"))
        cls.dest = make_handout.make(cls.tmp / "handout")
        cls.package = make_handout.package_files()
        cls.files = {p.relative_to(cls.dest).as_posix(): p.read_text(errors="replace")
                     for p in cls.dest.rglob("*") if p.suffix in TEXT}
        cls.files.update({f"flashlab/{k}": p.read_text(errors="replace")
                          for k, p in cls.package.items() if p.suffix in TEXT})
        cls.expected = {(lab, st): expected(lab, st) for lab in labs.SPECS for st in STUDENTS}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_no_key_files(self):
        self.assertNotIn("labkit/__main__.py", self.package, "an answers command")
        self.assertFalse((self.dest / "grader").exists())
        self.assertFalse([k for k in self.package if k.startswith("grader") or "solution" in k])
        self.assertFalse(list(self.dest.rglob("*solution*")))
        self.assertFalse((self.dest / "docs" / "labs" / "instructor.md").exists())
        self.assertTrue(self.files, "no text files in the layout")

    def test_no_answer_functions_by_name(self):
        keys = set()
        for lab in labs.SPECS:
            src = (HERE / "grader" / f"lab{lab}.py").read_text()
            keys |= set(re.findall(r"^def (\w*key\w*)\(", src, re.M))
        keys |= {"answers", "NAPKIN"}
        found = [f"{p}: {k}" for p, text in self.files.items() for k in sorted(keys)
                 if re.search(rf"\bdef {k}\b|\b{k}\s*=", text)]
        self.assertEqual(found, [], "the grader's answer functions in the student layout")

    def test_no_expected_value_in_any_file(self):
        found = []
        for (lab, st), (P, vals) in self.expected.items():
            given = set(numbers(P, []))   # a parameter the notebook shows is no answer
            for x in vals:
                if x in given:
                    continue
                for s in renderings(x):
                    pat = re.compile(rf"(?<![\w.]){re.escape(s)}(?![\w])")
                    found += [f"lab {lab} ({st!r}): {s} in {p}"
                              for p, text in self.files.items() if pat.search(text)]
        self.maxDiff = None
        self.assertEqual(sorted(set(found)), [])

    def test_no_public_function_returns_an_answer(self):
        import importlib
        from flashlab import flmachine
        hits = []
        for (lab, st), (P, vals) in self.expected.items():
            want = {round(x, 9) for x in vals if isinstance(x, (int, float)) and renderings(x)}
            mods = [importlib.import_module(f"flashlab.labkit.lab{lab}"), flmachine]
            for mod in mods:
                for name, fn in inspect.getmembers(mod, inspect.isfunction):
                    if name.startswith("_") or fn.__module__ != mod.__name__:
                        continue
                    try:
                        n = len([p for p in inspect.signature(fn).parameters.values()
                                 if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)])
                    except (TypeError, ValueError):
                        continue
                    for args in ([()] if n == 0 else [(P,), (st,)] if n == 1 else []):
                        try:
                            with contextlib.redirect_stdout(io.StringIO()):
                                out = fn(*args)
                        except Exception:
                            continue
                        if args and out is args[0]:
                            continue   # the argument itself (a function that passes its input on)
                        got = {round(x, 9) for x in numbers(out, [])} & want
                        if got and getattr(fn, "cid", None) is None and name not in ("params", "draw"):
                            hits.append(f"{mod.__name__}.{name}{args!r:.40}: {sorted(got)[:3]}")
        self.assertEqual(hits, [])


if __name__ == "__main__":
    unittest.main()
