"""Lab 8 (design a schedule, graded): the student's case, the validity check from the trace,
and the score against `flashlab optimize`'s best schedule and its lower bound.

A schedule is valid when, run on a count-only machine of capacity M (which refuses anything
larger), it brings every kept (query, key) pair on chip together: for each query head h, query
row i and key j that the mask keeps, some moment has row i of head h's Q, and row j of K and of
V of h's K/V head, resident in SRAM at once; and it stores O and L for every query row after the
last such moment.  That is what any exact attention schedule must do, whatever its loop order.
The optimum and the lower bound are read from the CLI (`flashlab optimize --format csv`), never
typed here.
"""
import csv
import io

import flashlab as fl

from . import Wrong, attempt, check, function, rng, student_id

KINDS = ("causal", "decode", "gqa")


def params(student=""):
    """The student's case: kind ('causal', 'decode' or 'gqa'), Nq, Nk, d, M, heads, kv_heads,
    causal corner."""
    s = student_id(student)
    g = rng("lab8", s)
    kind = "causal" if not s else g.choice(KINDS)
    if kind == "causal":
        n = 256 if not s else g.choice([192, 224, 256, 288])
        return dict(kind=kind, Nq=n, Nk=n, d=32, M=4000 if not s else g.randrange(3000, 6000, 100),
                    heads=1, kv_heads=1, causal="bottom-right")
    if kind == "decode":
        return dict(kind=kind, Nq=g.choice([16, 24, 32]), Nk=g.choice([384, 448, 512]), d=32,
                    M=g.randrange(3000, 6000, 100), heads=1, kv_heads=1, causal="bottom-right")
    return dict(kind=kind, Nq=g.choice([96, 128, 160]), Nk=0, d=32, M=g.randrange(3000, 6000, 100),
                heads=g.choice([4, 8]), kv_heads=g.choice([1, 2]), causal="none")


def nk(case):
    return case["Nk"] or case["Nq"]


def machine(case):
    """A count-only machine of capacity M with the case's HBM tensors, packed by head: Q, O
    (heads * Nq x d), K, V (kv_heads * Nk x d), L (heads * Nq x 1, fp32)."""
    m = fl.Machine(M=case["M"], name="my_schedule")
    H, Hk, d = case["heads"], case["kv_heads"], case["d"]
    T = {"Q": m.tensor("Q", H * case["Nq"], d), "K": m.tensor("K", Hk * nk(case), d),
         "V": m.tensor("V", Hk * nk(case), d), "O": m.tensor("O", H * case["Nq"], d),
         "L": m.tensor("L", H * case["Nq"], 1, elem_bytes=4)}
    return m, T


class Coverage:
    """Follows a trace: which tensor rows each live buffer holds, which (query, key) pairs have
    been on chip together, and when each query row's O and L were last stored."""

    def __init__(self, case):
        self.case = case
        self.Nq, self.Nk = case["Nq"], nk(case)
        self.G = case["heads"] // case["kv_heads"]
        mk = fl.mask(self.Nq, self.Nk, case["causal"])
        self.need = [sum(1 << j for j in range(self.Nk) if fl.mask_keep(mk, i, j)) for i in range(self.Nq)]
        self.cov = [[0] * self.Nq for _ in range(case["heads"])]
        self.done = [[None] * self.Nq for _ in range(case["heads"])]
        self.stored = {"O": [[None] * self.Nq for _ in range(case["heads"])],
                       "L": [[None] * self.Nq for _ in range(case["heads"])]}
        self.held, self.t = {}, 0

    def __call__(self, e):
        self.t += 1
        if e.kind in ("alloc", "free"):
            self.held.pop(e.buf, None)
        elif e.kind == "load":
            self.held[e.buf] = (e.tensor, e.r0, e.nr)
            if e.tensor in "QKV":
                self._mark()
        elif e.kind == "store" and e.tensor in self.stored:
            for q in range(e.r0, e.r0 + e.nr):
                self.stored[e.tensor][q // self.Nq][q % self.Nq] = self.t

    def _rows(self, tensor):
        return [(r0, r0 + nr) for t, r0, nr in self.held.values() if t == tensor]

    def _mark(self):
        K, V = self._rows("K"), self._rows("V")
        both = []
        for a, b in K:
            for c, e in V:
                lo, hi = max(a, c), min(b, e)
                if lo < hi:
                    both.append((lo, hi))
        for q0, q1 in self._rows("Q"):
            for q in range(q0, q1):
                h, i = divmod(q, self.Nq)
                g = h // self.G
                mask = 0
                for lo, hi in both:
                    lo, hi = max(lo, g * self.Nk), min(hi, (g + 1) * self.Nk)
                    if lo < hi:
                        mask |= ((1 << (hi - g * self.Nk)) - 1) ^ ((1 << (lo - g * self.Nk)) - 1)
                if mask & ~self.cov[h][i]:
                    self.cov[h][i] |= mask
                    if self.done[h][i] is None and self.cov[h][i] & self.need[i] == self.need[i]:
                        self.done[h][i] = self.t

    def problems(self):
        """The first few rows that break the rule, as messages."""
        out = []
        for h in range(self.case["heads"]):
            for i in range(self.Nq):
                if self.done[h][i] is None:
                    missing = self.need[i] & ~self.cov[h][i]
                    j = (missing & -missing).bit_length() - 1
                    out.append(f"head {h}, query {i}: never on chip together with key {j} (of its "
                               f"K/V head {h // self.G}), which the mask keeps")
                else:
                    for t in ("O", "L"):
                        s = self.stored[t][h][i]
                        if s is None or s < self.done[h][i]:
                            out.append(f"head {h}, query {i}: {t} is not stored after its last key was seen")
                if len(out) >= 3:
                    return out
        return out


def optimize_row(case):
    """The row of `flashlab optimize --format csv` for the case (a dict of strings)."""
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


def run_schedule(case, my_schedule):
    """Runs the student's schedule on a fresh count-only machine for the case, following its
    trace.  Returns (coverage, per-tensor counts, total, SRAM peak); Wrong when it raises or the
    machine refuses a move."""
    m, T = machine(case)
    cov = Coverage(case)
    m.set_trace(cov)
    try:
        attempt("my_schedule", my_schedule, m, T, dict(case))
        return cov, m.counts(), m.reads + m.writes, m.sram_peak
    finally:
        m.close()


def grade(student, my_schedule):
    """Runs the student's schedule; returns (problems, report lines, points or None)."""
    case = params(student)
    try:
        cov, _, total, peak = run_schedule(case, my_schedule)
    except Wrong as w:
        return [str(w)], [], None
    problems = cov.problems()
    if problems:
        return problems, [], 0.0
    best, bound, algo, Br, Bc = optimum(case)
    pts = points(total, best)
    lines = [f"case {case['kind']}: Nq={case['Nq']} Nk={nk(case)} d={case['d']} M={case['M']} "
             f"heads={case['heads']} kv_heads={case['kv_heads']} causal={case['causal']}",
             f"your schedule: {total} elements moved, SRAM peak {peak} of {case['M']}",
             f"flashlab optimize: best {best} ({algo}, Br={Br}, Bc={Bc}); lower bound {bound}",
             f"gap to the optimum {total / best:.3f}x, to the lower bound {total / bound:.3f}x: "
             f"{pts:.1f} of 10 points"]
    if total < best:
        lines.append("below optimize's best: tell your instructor (the search missed your schedule)")
    return [], lines, pts


@check("lab8.design")
def design(student, my_schedule):
    fn = function("my_schedule", my_schedule)
    problems, lines, pts = grade(student, fn)
    for line in lines:
        print(line)
    if not problems and pts < 5.0:
        problems.append(f"a valid schedule, but {pts:.1f} of 10 points: it moves more than 1.5x the "
                        f"optimum; skip what the mask removes and choose the blocks for M")
    return problems


TENSORS = ("Q", "K", "V", "O", "L")


def figure(student, my_schedule, show=True, keep=None, fmt="png"):
    """Draws figures/lab8_traffic.gp: the student's schedule's traffic split by tensor (reads and
    writes), beside what `flashlab optimize` reports for the case: its best schedule, flash2 and
    flash1 with their own blocks, and the lower bound.  Draws nothing (and says why) when the
    schedule raises, is refused by the machine or is not valid; never raises on the student's
    function.  Returns the figure's path or None."""
    case = params(student)
    if not callable(my_schedule):
        print("(no figure: write my_schedule first)")
        return None
    try:
        cov, counts, total, _ = run_schedule(case, my_schedule)
    except Wrong as w:
        print(f"(no figure: {w})")
        return None
    if cov.problems():
        print("(no figure: the schedule is not valid yet; the check above says where)")
        return None
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
