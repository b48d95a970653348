"""labkit: the course labs' parameters, local checks and figures, over the binding (flashlab).

A check is a function that returns the list of what is wrong with an answer (empty: PASS).  It
compares the answer with what the C library gives (the binding: the machine, the reference, the
mask and head rules) or with the recorded measurements, and it never raises: an answer of the
wrong type, or one that makes the check itself fail, is reported as one FAIL line saying what was
expected.  In a notebook a check is called as `lab1.tile_one(P, m1, l1, u1)`, which prints

    CHECK lab1.tile-one: PASS            or      CHECK lab1.tile-one: FAIL
                                                   - what is wrong, and the usual mistake

(notebooks/run_all.py reads these lines).  `lab1.tile_one.problems(...)` returns the list
without printing.

Parameters: every lab's draw(g) draws its sizes and inputs from a random.Random g, and
params(student) is draw(rng(lab, student)), so two students get different numbers ('' gives the
handout's worked example).  These are the numbers a student practises on.  The grade is not
given here: the instructor's grader runs the student's cells again, in a process of its own, on
parameters drawn by the same draw() from a generator keyed by an instructor secret, and grades
what they compute there.  So an answer must be computed from the parameters, not typed; and
nothing in this package holds an expected answer (a check computes what it compares with from the
library at run time, or tests a property the answer must have).
"""
import functools
import hashlib
import math
import numbers
import random
import re
import sys

import flashlab as fl

TOL = 1e-5   # relative tolerance for answers computed by hand (6 significant digits pass)


class Wrong(Exception):
    """Raised by the answer readers below: the message is the FAIL line."""


class Skip(Exception):
    """Raised by a check whose data does not exist here (no recorded GPU measurements)."""


def report(cid, problems, skip=None):
    """Prints the CHECK line (and one line per problem) that run_all.py reads."""
    if skip:
        print(f"CHECK {cid}: SKIP")
        print("  - " + skip)
        return
    print(f"CHECK {cid}: {'FAIL' if problems else 'PASS'}")
    for p in problems:
        print("  - " + p)


_DOCS = re.compile(r"\(?\s*(?:see )?docs/(?!labs/)[\w./-]+\.md,?\s*(?=eq\.|§|\))|docs/(?!labs/)[\w./-]+\.md")


def for_students(text):
    """text with its citations of the project's documents that a student's folder does not hold
    (the C library's messages name the repository's documents under docs/, outside docs/labs)
    taken out; an equation label stays (the labs' ones are in background.md)."""
    def sub(m):
        if m.group(0).startswith("("):
            return "("
        return "" if m.group(0).rstrip().endswith(",") or m.end() < len(m.string) and m.string[m.end():].startswith("eq.") \
            else "the project's documentation"
    return _DOCS.sub(sub, str(text)).replace("( eq.", "(eq.")


def _problems(fn, args, kwargs):
    """(problems, skip reason) of a check function; any exception becomes one problem."""
    try:
        out = fn(*args, **kwargs)
    except Skip as s:
        return [], str(s)
    except Wrong as w:
        return [str(w)], None
    except fl.FlashlabError as e:
        return [f"the C library refused what your answer asked for: {for_students(e)}"], None
    except Exception as e:   # a check never raises: it says what went wrong
        return [f"the check could not use your answer ({type(e).__name__}: {e})"], None
    return [p for p in (out or []) if p], None


def check(cid):
    """Makes a problem-listing function a check: calling it prints the CHECK lines; .problems()
    returns the list; .cid is the id."""
    def deco(fn):
        @functools.wraps(fn)
        def printed(*args, **kwargs):
            problems, skip = _problems(fn, args, kwargs)
            report(cid, problems, skip)
        printed.problems = lambda *a, **k: _problems(fn, a, k)[0]
        printed.skipped = lambda *a, **k: _problems(fn, a, k)[1]
        printed.cid = cid
        return printed
    return deco


# ----------------------------------------------------------------------------------------------
# Reading answers: the right type or one line saying what was expected

def _shown(v):
    s = repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


def number(name, v):
    """A real number (int or float, not bool, not a string) as a float."""
    if v is None:
        raise Wrong(f"{name} is not answered yet")
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        hint = " (remove the quotes)" if isinstance(v, str) else ""
        raise Wrong(f"{name} = {_shown(v)}: expected one number, got a {type(v).__name__}{hint}")
    v = float(v)
    if math.isnan(v):
        raise Wrong(f"{name} is NaN: look for -inf - (-inf) or 0/0 in your computation")
    return v


def whole(name, v):
    """A whole number: an int, or a float with no fractional part (1.312768e6 is fine)."""
    x = number(name, v)
    if math.isinf(x) or x != int(x):
        raise Wrong(f"{name} = {_shown(v)}: expected a whole number (a count of elements)")
    return int(x)


def boolean(name, v):
    if v is None:
        raise Wrong(f"{name} is not answered yet")
    if not isinstance(v, bool):
        raise Wrong(f"{name} = {_shown(v)}: expected True or False, got a {type(v).__name__}")
    return v


def numbers_list(name, v, n=None):
    """A list (or tuple) of n real numbers, as floats."""
    if v is None:
        raise Wrong(f"{name} is not answered yet")
    if isinstance(v, (str, bytes, dict)) or not hasattr(v, "__iter__"):
        raise Wrong(f"{name} = {_shown(v)}: expected a list of {n or 'some'} numbers, got a {type(v).__name__}")
    v = list(v)
    if n is not None and len(v) != n:
        raise Wrong(f"{name} = {_shown(v)}: expected a list of {n} numbers, got {len(v)}")
    return [number(f"{name}[{i}]", x) for i, x in enumerate(v)]


def mapping(name, v):
    if v is None:
        raise Wrong(f"{name} is not answered yet")
    if not isinstance(v, dict):
        raise Wrong(f"{name} = {_shown(v)}: expected a dict, got a {type(v).__name__}")
    return v


def function(name, v):
    if v is None:
        raise Wrong(f"{name} is not written yet")
    if not callable(v):
        raise Wrong(f"{name} = {_shown(v)}: expected a function, got a {type(v).__name__}")
    return v


def near(a, b, rel=TOL):
    """|a - b| <= rel * max(|b|, tiny): a hand-computed a against the library's b."""
    if math.isinf(b) or math.isinf(a):
        return a == b
    return abs(a - b) <= rel * max(abs(b), 1e-12)


def near_list(a, b, rel=TOL):
    return len(a) == len(b) and all(near(x, y, rel) for x, y in zip(a, b))


def attempt(what, fn, *args, **kwargs):
    """Calls a student's function; Wrong with a one-line message if it raises."""
    try:
        return fn(*args, **kwargs)
    except fl.FlashlabError as e:
        raise Wrong(f"{what}: the machine refused it: {for_students(e)}")
    except Exception as e:
        raise Wrong(f"{what}: your function raised {type(e).__name__}: {e}")


# ----------------------------------------------------------------------------------------------
# Per-student parameters

def rng(lab, student):
    """A random.Random seeded from (lab, student id): the same numbers on every machine."""
    if not isinstance(student, str):
        student = str(student)
    digest = hashlib.sha256(f"flashlab:{lab}:{student.strip()}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "little"))


def student_id(student):
    """A student id as the checks use it: stripped; '' is the handout's worked example."""
    if student is None:
        return ""
    return str(student).strip()


def student(default=""):
    """The student id a notebook uses: $FLASHLAB_STUDENT when set (the instructor's runner and
    the tests set it), else the id written in the notebook."""
    import os
    return student_id(os.environ.get("FLASHLAB_STUDENT", default))
