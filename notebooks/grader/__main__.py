"""python3 -m grader: grades submitted lab notebooks (the instructor's side; not in the handout).

    python3 -m grader secret FILE
        writes a new instructor secret (32 random bytes, hex) to FILE, which must not exist
    python3 -m grader grade --secret-file FILE --out DIR SUBMISSIONS...
        SUBMISSIONS: folders, one per student, named by the student's id, holding that student's
        lab notebooks (any file names; each notebook's lab is read from its cells); writes
        DIR/grades.csv (one row per student and check: student, lab, check, verdict, points,
        max_points, feedback) and DIR/totals.csv (student, lab, points, max_points)
    python3 -m grader grade --secret-file FILE --out DIR --student ID NOTEBOOK...
        the same for one student's notebooks
    python3 -m grader params --secret-file FILE --student ID --lab N
        prints the parameters the grader draws for that student and lab

Every check runs the student's code in a process of its own on parameters drawn from the id and
the secret (grader/core.py); the notebook's own outputs and check lines are never read.  Bad
input: one line naming it and the rule, exit status 2, nothing written.
"""
import argparse
import csv
import io
import json
import os
import pathlib
import re
import secrets
import sys
import tempfile

from . import labs
from .core import grade, grading_rng


def fail(msg):
    print(f"grader: {msg}", file=sys.stderr)
    return 2


def read_secret(path):
    p = pathlib.Path(path)
    if not p.is_file():
        raise ValueError(f"--secret-file {path}: no such file (make one: python3 -m grader secret FILE)")
    text = p.read_text().strip()
    if not re.fullmatch(r"[0-9a-fA-F]{32,}", text):
        raise ValueError(f"--secret-file {path}: must hold at least 32 hex digits (python3 -m grader secret FILE)")
    return bytes.fromhex(text if len(text) % 2 == 0 else text[:-1])


def lab_of(nb, path):
    """The lab spec a notebook belongs to: from its cells' ids (the source's stem), else its name."""
    stems = {spec.SOURCE: spec for spec in labs.SPECS.values()}
    for c in nb.get("cells", []):
        stem = str(c.get("id", "")).rsplit("-", 1)[0]
        if stem in stems:
            return stems[stem]
    m = re.match(r"lab(\d+)_", pathlib.Path(path).name)
    return labs.SPECS.get(int(m.group(1))) if m else None


def write_atomic(path, text):
    """Writes text to path through a temporary file in the same folder and a rename (no partial
    file); refuses a path that is a symbolic link."""
    path = pathlib.Path(path)
    if path.is_symlink():
        raise ValueError(f"{path}: is a symbolic link; choose another --out")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def submissions(a):
    """[(student id, notebook path)] from the command line."""
    if a.student is not None:
        sid = a.student.strip()
        if not sid:
            raise ValueError("--student: the id must not be empty")
        return [(sid, pathlib.Path(p)) for p in a.paths]
    out = []
    for d in a.paths:
        d = pathlib.Path(d)
        if not d.is_dir():
            raise ValueError(f"{d}: not a folder (give one folder per student, named by the id, or --student ID)")
        if not d.name.strip():
            raise ValueError(f"{d}: a folder name that is not an id")
        nbs = sorted(d.glob("*.ipynb"))
        if not nbs:
            print(f"grader: {d}: no notebooks; nothing graded for {d.name}", file=sys.stderr)
        out += [(d.name.strip(), p) for p in nbs]
    return out


def cmd_grade(a):
    secret = read_secret(a.secret_file)
    out = pathlib.Path(a.out)
    if not out.is_dir():
        raise ValueError(f"--out {out}: no such folder")
    rows, totals = [], {}
    for sid, path in submissions(a):
        try:
            nb = json.loads(path.read_text())
            if not isinstance(nb, dict):
                raise ValueError("not a notebook")
        except (OSError, ValueError) as e:
            raise ValueError(f"{path}: cannot be read as a notebook ({e})")
        spec = lab_of(nb, path)
        if spec is None:
            raise ValueError(f"{path}: not one of the labs (its cells are not a lab's, nor is its name lab<N>_...)")
        for o in grade(spec, nb, sid, secret):
            rows.append([sid, spec.LAB, o.cid, "PASS" if o.passed else "FAIL", f"{o.points:g}", f"{o.max_points:g}",
                         " | ".join(o.feedback)])
            t = totals.setdefault((sid, spec.LAB), [0.0, 0.0])
            t[0] += o.points
            t[1] += o.max_points
        print(f"grader: {sid}: lab {spec.LAB}: {totals[(sid, spec.LAB)][0]:g} of {totals[(sid, spec.LAB)][1]:g}")
    for name, header, body in (("grades.csv", ["student", "lab", "check", "verdict", "points", "max_points", "feedback"], rows),
                               ("totals.csv", ["student", "lab", "points", "max_points"],
                                [[s, l, f"{p:g}", f"{m:g}"] for (s, l), (p, m) in sorted(totals.items())])):
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(header)
        w.writerows(body)
        write_atomic(out / name, buf.getvalue())
    print(f"grader: wrote {out / 'grades.csv'} ({len(rows)} checks) and {out / 'totals.csv'}")
    return 0


def cmd_secret(a):
    p = pathlib.Path(a.file)
    if p.exists() or p.is_symlink():
        raise ValueError(f"{p}: exists; the secret is written to a new file only")
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32) + "\n")
    print(f"grader: wrote a new secret to {p} (keep it: the same secret gives the same parameters)")
    return 0


def cmd_params(a):
    secret = read_secret(a.secret_file)
    spec = labs.SPECS.get(a.lab)
    if spec is None:
        raise ValueError(f"--lab {a.lab}: must be one of {sorted(labs.SPECS)}")
    P = spec.params(grading_rng(secret, spec.LAB, a.student))
    print(repr(P))
    return 0


def main(argv):
    ap = argparse.ArgumentParser(prog="python3 -m grader", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("secret")
    s.add_argument("file")
    g = sub.add_parser("grade")
    g.add_argument("--secret-file", required=True)
    g.add_argument("--out", required=True)
    g.add_argument("--student")
    g.add_argument("paths", nargs="+")
    p = sub.add_parser("params")
    p.add_argument("--secret-file", required=True)
    p.add_argument("--student", required=True)
    p.add_argument("--lab", type=int, required=True)
    a = ap.parse_args(argv)
    try:
        return {"grade": cmd_grade, "secret": cmd_secret, "params": cmd_params}[a.cmd](a)
    except ValueError as e:
        return fail(str(e))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
