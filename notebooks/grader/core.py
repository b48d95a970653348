"""core.py: grading one submitted notebook of one lab.

The parameters are the grader's: drawn by the lab's own draw(g) (labkit) from a random.Random
seeded with HMAC-SHA256(instructor secret, "flashlab:<lab>:<student id>"), so a student cannot
compute them, and two students (or one student and the handout) get different ones.  The lab's
setup and given cells run as its source (notebooks/src/) has them; its answer cells as the student
wrote them (matched by cell id; in a notebook with none of the lab's ids, by their order among
the cells tagged "answer"); in one child
process (session.py), in the source's order; demonstrations and check cells do not run.  Then
each Check of the lab's spec fetches the variables it names from the child (a function stays
there and is called there) and grades them on this side, with the grader's parameters.  A call
into flashlab that the check does not allow fails the check, whatever the answer.  A lab's
params(g) may put under P["_hidden"] what only its checks see (the inputs a schedule is run on):
it is never sent to the child.
"""
import hashlib
import hmac
import pathlib
import random

HERE = pathlib.Path(__file__).resolve().parent
import build_notebooks   # notebooks/, beside the grader (on the path that finds the grader)

from .session import MISSING, ChildDied, Session, Unsendable  # noqa: E402

SETUP_TIMEOUT = 120.0   # seconds for the setup and given cells (a lab's data, its sweeps)
TIMEOUT = 30.0          # seconds for one answer cell or one call of a student's function


def grading_rng(secret, lab, student):
    """The random.Random a lab's grading parameters are drawn from: HMAC-SHA256 of the student's
    id under the instructor's secret (bytes)."""
    if not isinstance(secret, bytes) or len(secret) < 16:
        raise ValueError("the instructor secret must be at least 16 bytes")
    mac = hmac.new(secret, f"flashlab:{lab}:{str(student).strip()}".encode(), hashlib.sha256).digest()
    return random.Random(int.from_bytes(mac[:16], "big"))


class Check:
    """One graded check: cid (as the notebook's check prints it), the variables it reads from the
    student's namespace (names), the answer cells that define them (cells: 1-based among the
    lab's answer cells), the flashlab functions those cells and the student's functions may call
    (allow), and grade(P, **values) -> [problems] (empty: passed).  scored: instead of grade, a
    function returning (problems, points out of `points`)."""

    def __init__(self, cid, names, cells, grade=None, allow=(), points=1.0, scored=None):
        self.cid, self.names, self.cells, self.allow = cid, tuple(names), tuple(cells), tuple(allow)
        self.grade, self.scored, self.points = grade, scored, points


class Outcome:
    """A check's result for one student: passed, points of max_points, feedback lines."""

    def __init__(self, cid, passed, points, max_points, feedback):
        self.cid, self.passed, self.points, self.max_points = cid, passed, points, max_points
        self.feedback = feedback


def source_cells(stem):
    """[(role, cell id, code)] of a lab's setup, given and answer cells, in order, from its
    source: the exercise's text (answer cells: the untouched stub)."""
    src = build_notebooks.HERE / "src" / f"{stem}.py"
    out = []
    for i, (kind, flags, lines) in enumerate(build_notebooks.parse_cells(src.read_text())):
        role = next((r for r in ("setup", "given", "answer") if r in flags), None)
        if kind == "code" and role:
            code = "\n".join(build_notebooks.strip_blank(build_notebooks.select(lines, False)))
            out.append((role, f"{stem}-{i:02d}", code))
    return out


def submitted_cells(nb):
    """({cell id: code}, [code of the cells tagged answer, in order]) of a submitted notebook."""
    by_id, answers = {}, []
    for c in nb.get("cells", []):
        if c.get("cell_type") != "code":
            continue
        code = c.get("source", "")
        code = "".join(code) if isinstance(code, list) else str(code)
        if c.get("id"):
            by_id[str(c["id"])] = code
        if "answer" in (c.get("metadata", {}).get("tags") or []):
            answers.append(code)
    return by_id, answers


def _values(session, check):
    got = session.get(check.names, allow=check.allow)
    return {n: got.get(n, MISSING) for n in check.names}


def _unusable(check, values, errors):
    """Problems of variables that are not there or cannot be checked, naming the cell's error."""
    out = []
    for n, v in values.items():
        if v is MISSING:
            why = "; ".join(errors.get(c, "") for c in check.cells if errors.get(c)) or "its cell does not define it"
            out.append(f"{n} is not defined ({why})")
        elif isinstance(v, Unsendable):
            out.append(f"{n}: {v.why}")
    return out


def _run_check(session, check, P, errors):
    values = _values(session, check)
    problems = _unusable(check, values, errors)
    points = 0.0
    if not problems:
        from flashlab.labkit import _problems
        if check.scored:
            box = []
            problems, _ = _problems(lambda: box.append(check.scored(P, **values)), (), {})
            if box:
                problems, points = list(box[0][0]), float(box[0][1])
        else:
            problems, _ = _problems(check.grade, (P,), values)
    labels = {f"answer {c}" for c in check.cells} | {f"call {n}" for n in check.names}
    used = sorted({what for phase, what in session.violations if phase in labels})
    if used:
        problems = [f"uses fl.{', fl.'.join(used)}: in this exercise the library's functions that give "
                    f"the answer are not allowed; compute it as the exercise asks"] + problems
        points = 0.0
    if problems:   # what the student's cells raised, if they did, says more than what is missing
        problems += [errors[c] for c in check.cells if errors.get(c) and errors[c] not in " ".join(problems)]
    passed = not problems
    if check.scored is None:
        points = check.points if passed else 0.0
    return Outcome(check.cid, passed, points, check.points, problems)


def _start(spec, student, P, cells, by_id, answers, skip):
    """A session with every cell run but the answer cells in skip ({index: why}): (session,
    {answer index: error}).  ChildDied names the answer cell it died in (.cell), or none."""
    shown = {k: v for k, v in P.items() if k != "_hidden"}   # what the checks keep to themselves stays here
    session = Session(spec.KIT.__name__.split(".")[-1], student, shown, timeout=getattr(spec, "TIMEOUT", TIMEOUT))
    errors, k = dict(skip), 0
    ids = any(cid in by_id for role, cid, _ in cells)   # else the cells are matched by their order
    try:
        for role, cid, code in cells:
            if role == "answer":
                k += 1
                mine = by_id.get(cid) if ids else (answers[k - 1] if k - 1 < len(answers) else None)
                if mine is None:
                    errors[k] = "the cell is missing from the notebook"
                if mine is None or k in skip:
                    continue
                allow = tuple(sorted({a for c in spec.CHECKS if k in c.cells for a in c.allow}))
                try:
                    err, _ = session.exec(mine, f"answer {k}", allow)
                except ChildDied as e:
                    e.cell = k
                    raise
                if err:
                    errors[k] = f"answer cell {k} raised {err}"
            else:
                err, out = session.exec(code, f"{role} cell", None, SETUP_TIMEOUT)
                if err:
                    raise RuntimeError(f"the lab's own {role} cell failed while grading: {err}\n{out[-500:]}")
    except BaseException:
        session.close()
        raise
    return session, errors


def _session(spec, student, P, cells, by_id, answers):
    """_start, skipping every answer cell that kills the process (over its time limit, say)."""
    skip = {}
    while True:
        try:
            return _start(spec, student, P, cells, by_id, answers, skip)
        except ChildDied as e:
            k = getattr(e, "cell", None)
            if k is None or k in skip:
                raise
            skip[k] = f"answer cell {k} did not finish: {e}"


def grade(spec, nb, student, secret):
    """[Outcome] of every check of spec's lab for one student's notebook (a dict as nbformat
    reads it)."""
    P = spec.params(grading_rng(secret, spec.LAB, student))
    cells = source_cells(spec.SOURCE)
    by_id, answers = submitted_cells(nb)
    outcomes, session, broken = [], None, None
    try:
        for check in spec.CHECKS:
            if broken is None and (session is None or not session.alive):
                if session is not None:
                    session.close()
                try:   # the first time, or again after a call of a student's function killed it
                    session, errors = _session(spec, student, P, cells, by_id, answers)
                except ChildDied as e:
                    broken, session = f"your cells did not finish: {e}", None
            if broken:
                outcomes.append(Outcome(check.cid, False, 0.0, check.points, [broken]))
                continue
            try:
                outcomes.append(_run_check(session, check, P, errors))
            except ChildDied as e:
                outcomes.append(Outcome(check.cid, False, 0.0, check.points, [f"your code did not finish: {e}"]))
    finally:
        if session is not None:
            session.close()
    return outcomes
