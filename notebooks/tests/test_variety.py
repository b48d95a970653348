#!/usr/bin/env python3
"""test_variety.py: every graded check has at least 50 distinct expected values over 200 student
ids (ctest: notebooks_variety).  A check's expected value for an id is what the solution gives on
the grader's parameters of that id (drawn with a fixed test secret: grader/core.py): the values
of the variables the check reads, and what the solution's functions return when the check calls
them (on the parameters, probes and hidden cases the check uses: recorded while the check runs
here, in this process).  The checks of a schedule (labs 1, 2 and 8) count what determines the
outputs and counts their schedules are held to: the rows, sizes and input seed the grader runs
them on (and lab 8's optimum); lab 9's model counts the rows its function is called on (the
model's bytes are a function of them).  The library's runs are memoized for the test's speed."""
import unittest

from grader import labs  # noqa: E402
from grader.core import grading_rng  # noqa: E402
from flashlab.labkit import _problems  # noqa: E402
from solutions_again import with_params  # noqa: E402
import flashlab as fl  # noqa: E402

_runs, _run = {}, fl.run


def _memo_run(*a, **k):
    key = repr((a, sorted(k.items())))
    if "trace" in k:
        return _run(*a, **k)
    if key not in _runs:
        _runs[key] = _run(*a, **k)
    return _runs[key]


fl.run = _memo_run

SECRET = bytes.fromhex("ab" * 32)
IDS = [f"student{k:03d}" for k in range(200)]
NEEDED = 50
INPUTS = {"lab1.own-tiling": lambda P: P["_hidden"]["rows"],
          "lab2.own-schedule": lambda P: (P["own"], P["_hidden"]["seed"]),
          "lab8.design": lambda P: (sorted((k, v) for k, v in P.items() if k != "_hidden"), P["_hidden"]["seed"]),
          "lab9.model": lambda P: [(r["shape"], r["B"], r["H"], r["N"]) for r in P["fa2"] + P["_hidden"]["fa2"]]}


class Recorder:
    """Wraps a solution's function: every call's arguments and result are kept."""

    def __init__(self, fn, log):
        self.fn, self.log, self.__name__ = fn, log, getattr(fn, "__name__", "fn")

    def __call__(self, *a, **k):
        out = self.fn(*a, **k)
        self.log.append(repr(out) if not hasattr(out, "reads") else repr((out.reads, out.writes, out.M)))
        return out


def fingerprint(lab, check, P, ns):
    if check.cid in INPUTS:
        return repr(INPUTS[check.cid](P))
    log, values = [], {}
    for n in check.names:
        v = ns[n]
        values[n] = Recorder(v, log) if callable(v) and not isinstance(v, type) else v
    if check.scored:
        res = check.scored(P, **values)
        problems = res[0]
    else:
        problems, _ = _problems(check.grade, (P,), values)
    assert not problems, f"{check.cid}: the solution fails: {problems}"
    return repr([repr(v) for k, v in values.items() if not isinstance(v, Recorder)] + log)


class Variety(unittest.TestCase):
    def test_fifty_of_two_hundred(self):
        short = []
        for lab, spec in labs.SPECS.items():
            seen = {c.cid: set() for c in spec.CHECKS}
            for k, sid in enumerate(IDS):
                P = spec.params(grading_rng(SECRET, lab, sid))
                shown = {a: b for a, b in P.items() if a != "_hidden"}
                ns = None if all(c.cid in INPUTS for c in spec.CHECKS) else with_params(lab, shown)
                for c in spec.CHECKS:
                    seen[c.cid].add(fingerprint(lab, c, P, ns))
            for cid, s in seen.items():
                print(f"{cid}: {len(s)} distinct expected values over {len(IDS)} ids")
                if len(s) < NEEDED:
                    short.append(f"{cid}: {len(s)} < {NEEDED}")
        self.assertEqual(short, [])


if __name__ == "__main__":
    unittest.main()
