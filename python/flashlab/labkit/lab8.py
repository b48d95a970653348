"""Lab 8 (design a schedule, graded): the student's case, the validity of a schedule and its
score against `flashlab optimize`'s best schedule and its lower bound.

A schedule is valid when, run on a compute machine of capacity M (which refuses anything
larger) on random inputs, it stores O and L equal to the exact reference (the oracle's own mask,
each query head against its K/V head) to 1e-12.  The values live in the machine (flmachine): the
schedule can only compute O through the machine's operations on SRAM buffers, so a valid
schedule keeps on chip what a real kernel keeps (an O accumulator, a score tile, the row
statistics, at its own block sizes), and its traffic and SRAM peak are what the machine saw.  The
optimum and the lower bound are read from the CLI (`flashlab optimize --format csv`), never typed
here.
"""
import csv
import io
import math
import random

import flashlab as fl
from flashlab import flmachine

from . import Wrong, check, for_students, function, rng, student_id

KINDS = ("causal", "decode", "gqa")


def draw(g):
    """A case from g: kind ('causal', 'decode' or 'gqa'), Nq, Nk (0: Nq), d, M, heads, kv_heads,
    causal corner."""
    kind = g.choice(KINDS)
    if kind == "causal":
        n = g.choice([192, 224, 256, 288])
        return dict(kind=kind, Nq=n, Nk=n, d=32, M=g.randrange(3000, 6000, 100),
                    heads=1, kv_heads=1, causal="bottom-right")
    if kind == "decode":
        return dict(kind=kind, Nq=g.choice([16, 24, 32]), Nk=g.choice([384, 448, 512]), d=32,
                    M=g.randrange(3000, 6000, 100), heads=1, kv_heads=1, causal="bottom-right")
    return dict(kind=kind, Nq=g.choice([96, 128, 160]), Nk=0, d=32, M=g.randrange(3000, 6000, 100),
                heads=g.choice([4, 8]), kv_heads=g.choice([1, 2]), causal="none")


def params(student=""):
    """The student's case (draw); '' gives the handout's: causal, N = 256, d = 32, M = 4000."""
    s = student_id(student)
    if not s:
        return dict(kind="causal", Nq=256, Nk=256, d=32, M=4000, heads=1, kv_heads=1, causal="bottom-right")
    return draw(rng("lab8", s))


def nk(case):
    return case["Nk"] or case["Nq"]


def inputs(case, seed):
    """Q, O-sized, K, V inputs of the case (lists of rows, uniform in [-1, 1)), from seed."""
    g = random.Random(seed)
    rows = lambda n: [[g.uniform(-1, 1) for _ in range(case["d"])] for _ in range(n)]
    H, Hk = case["heads"], case["kv_heads"]
    return rows(H * case["Nq"]), rows(Hk * nk(case)), rows(Hk * nk(case))


def expected(case, q, k, v):
    """The reference (O, L) of every query head, packed by head, from flmachine.reference."""
    H, Hk, Nq, Nk = case["heads"], case["kv_heads"], case["Nq"], nk(case)
    G = H // Hk
    O, L = [], []
    for h in range(H):
        g = h // G
        o, l = flmachine.reference(q[h * Nq:(h + 1) * Nq], k[g * Nk:(g + 1) * Nk], v[g * Nk:(g + 1) * Nk],
                                   case["causal"])
        O += o
        L += l
    return O, L


def run_schedule(case, my_schedule, seed):
    """Runs my_schedule(m, T, case) on a compute machine of capacity M holding the case's HBM
    tensors, packed by head: Q, O (heads * Nq x d), K, V (kv_heads * Nk x d), L (heads * Nq x 1,
    fp32), and the case's mask for m.mask and m.tile_kind.  Returns (flmachine.Result, inputs);
    Wrong when the schedule raises or the machine refuses a call."""
    q, k, v = inputs(case, seed)
    H, d = case["heads"], case["d"]

    def schedule(m, Q, K, V, O, L):
        my_schedule(m, {"Q": Q, "K": K, "V": V, "O": O, "L": L}, dict(case))
    try:
        r = flmachine.run(schedule, case["M"], {"Q": q, "K": k, "V": v},
                          {"O": (H * case["Nq"], d), "L": (H * case["Nq"], 1, 4)},
                          mask=(case["Nq"], nk(case), case["causal"], -1, -1), name="my_schedule")
    except fl.FlashlabError as e:
        raise Wrong(f"my_schedule: the machine refused a call: {for_students(e)}")
    except Exception as e:
        raise Wrong(f"my_schedule raised {type(e).__name__}: {e}")
    return r, (q, k, v)


def validity(case, r, ins):
    """The first rows (at most three) whose O or L is not the reference's, as messages."""
    O, L = expected(case, *ins)
    out = []
    for i, (got, want, lg, lw) in enumerate(zip(r.outputs["O"], O, r.outputs["L"], L)):
        scale = max(1.0, max(abs(x) for x in want))
        if any(math.isnan(x) or abs(x - y) > 1e-12 * scale for x, y in zip(got, want)):
            h, row = divmod(i, case["Nq"])
            out.append(f"head {h}, query {row}: O is not the reference's (an O accumulator, the score tile "
                       f"and the row statistics must be computed on chip for every kept key, and O stored)")
        elif not (lg[0] == lw or abs(lg[0] - lw) <= 1e-12 * max(1.0, abs(lw))):
            h, row = divmod(i, case["Nq"])
            out.append(f"head {h}, query {row}: L = {lg[0]} is not the reference's logsumexp")
        if len(out) >= 3:
            break
    return out


_optimized = {}


def optimize_row(case):
    """The row of `flashlab optimize --format csv` for the case (a dict of strings; each case run
    once per process)."""
    key = repr(sorted(case.items()))
    if key not in _optimized:
        _optimized[key] = _optimize_row(case)
    return _optimized[key]


def _optimize_row(case):
    args = ["optimize", "--N", case["Nq"], "--d", case["d"], "--M", case["M"], "--format", "csv"]
    if case["Nk"]:
        args += ["--Nk", case["Nk"]]
    if case["causal"] != "none":
        args += ["--causal", case["causal"]]
    if case["heads"] > 1:
        args += ["--heads", case["heads"], "--kv-heads", case["kv_heads"]]
    text = "\n".join(l for l in fl.cli(*args).splitlines() if not l.startswith("#"))
    return next(csv.DictReader(io.StringIO(text)))


def optimum(case):
    """(best_total, lower_bound, best_algo, Br, Bc) from `flashlab optimize --format csv`."""
    row = optimize_row(case)
    return int(row["best_total"]), int(row["lower_bound"]), row["best_algo"], int(row["Br"]), int(row["Bc"])


def points(total, best):
    """The rubric's 10 points: 10 at or below the optimum, falling linearly to 0 at twice it."""
    return max(0.0, min(10.0, 10.0 * (2 * best - total) / best))


def grade(case, my_schedule, seed, total=None):
    """Runs the schedule on the case; returns (problems, report lines, points or None); total, a
    list, receives the elements it moved."""
    try:
        r, ins = run_schedule(case, my_schedule, seed)
    except Wrong as w:
        return [str(w)], [], None
    if total is not None:
        total.append(r.total)
    problems = validity(case, r, ins)
    if problems:
        return problems, [], 0.0
    best, bound, algo, Br, Bc = optimum(case)
    pts = points(r.total, best)
    lines = [f"case {case['kind']}: Nq={case['Nq']} Nk={nk(case)} d={case['d']} M={case['M']} "
             f"heads={case['heads']} kv_heads={case['kv_heads']} causal={case['causal']}",
             f"your schedule: {r.total} elements moved, SRAM peak {r.sram_peak} of {case['M']}",
             f"flashlab optimize: best {best} ({algo}, Br={Br}, Bc={Bc}); lower bound {bound}",
             f"gap to the optimum {r.total / best:.3f}x, to the lower bound {r.total / bound:.3f}x: "
             f"{pts:.1f} of 10 points"]
    return [], lines, pts


def score(case, my_schedule, seed):
    """(problems, points out of 10, elements moved or None) of a schedule: no points unless
    valid, PASS from 5 points."""
    total = []
    problems, _, pts = grade(case, my_schedule, seed, total)
    if not problems and pts < 5.0:
        problems = [f"a valid schedule, but {pts:.1f} of 10 points: it moves more than 1.5x the optimum; "
                    f"skip what the mask removes and choose the blocks for M"]
    return problems, pts or 0.0, (total or [None])[0]


@check("lab8.design")
def design(case, my_schedule):
    fn = function("my_schedule", my_schedule)
    problems, lines, pts = grade(case, fn, rng("lab8-inputs", repr(case)).randrange(1 << 30))
    for line in lines:
        print(line)
    if not problems and pts < 5.0:
        problems.append(f"a valid schedule, but {pts:.1f} of 10 points: it moves more than 1.5x the "
                        f"optimum; skip what the mask removes and choose the blocks for M")
    return problems


TENSORS = ("Q", "K", "V", "O", "L")


def figure(case, my_schedule, show=True, keep=None, fmt="png"):
    """Draws figures/lab8_traffic.gp: the student's schedule's traffic split by tensor (reads and
    writes), beside what `flashlab optimize` reports for the case: its best schedule, flash2 and
    flash1 with their own blocks, and the lower bound.  Draws nothing (and says why) when the
    schedule raises, is refused by the machine or is not valid; never raises on the student's
    function.  Returns the figure's path or None."""
    if not callable(my_schedule):
        print("(no figure: write my_schedule first)")
        return None
    try:
        r, ins = run_schedule(case, my_schedule, rng("lab8-inputs", repr(case)).randrange(1 << 30))
    except Wrong as w:
        print(f"(no figure: {w})")
        return None
    if validity(case, r, ins):
        print("(no figure: the schedule is not valid yet; the check above says where)")
        return None
    counts, total = r.counts, r.total
    row = optimize_row(case)
    parts = [counts.get(t, (0, 0)) for t in TENSORS]
    lines = [("yours", *[x for rw in parts for x in rw]),
             (f"optimize ({row['best_algo']} {row['Br']}x{row['Bc']})", int(row["best_total"])),
             ("flash2, its blocks", int(row["flash2_total"])),
             ("flash1, its blocks", int(row["flash1_total"])),
             ("lower bound", int(row["lower_bound"]))]
    zeros = [0] * (2 * len(TENSORS))
    data = "".join(f'"{name}" ' + " ".join(map(str, list(vals) + [0] if name == "yours" else zeros + list(vals))) + "\n"
                   for name, *vals in lines)
    print(f"your schedule: {total} elements; by tensor (reads, writes): "
          + ", ".join(f"{t} {rw}" for t, rw in zip(TENSORS, parts)))
    print(f"optimize's best {row['best_total']} ({row['best_algo']}, Br={row['Br']}, Bc={row['Bc']}); "
          f"flash2 {row['flash2_total']}, flash1 {row['flash1_total']} with their own blocks; "
          f"lower bound {row['lower_bound']}")
    from . import figures
    title = (f"{case['kind']}: Nq = {case['Nq']}, Nk = {nk(case)}, d = {case['d']}, M = {case['M']}, "
             f"heads {case['heads']}/{case['kv_heads']}")
    return figures.draw("lab8_traffic.gp", {"data": data}, show=show, keep=keep, fmt=fmt, title=title)
