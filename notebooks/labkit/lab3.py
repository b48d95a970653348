"""Lab 3 (the M sweep): the lab's sweep, parameters, expected answers and checks.

The sweep is the lab's, not the student's: N = 4096, d = 64, M = 1024 * 2^k (k = 0..10), and the
paper's range d <= M <= N d is fixed here, so a fit over other points cannot pass.
"""
import math

import flashlab as fl

from . import Wrong, boolean, check, mapping, near, number, rng, student_id, whole

N, D = 4096, 64
MS = [1024 * 2 ** k for k in range(11)]
REGIME = [M for M in MS if D <= M <= N * D]            # the paper's range, as the lab defines it
SMALL = [M for M in MS if 32 * D <= M <= 2 * D * D]     # the napkin's range
NAPKIN = 8   # K and V (2 N d elements) re-read once per row block, T_r = N / B = 4 N d / M


def law(M, n=N, d=D):
    return n * n * d * d / M


_sweep = {}


def sweep():
    """{(algo, M): the machine's total} over the lab's grid, for standard, flash1, flash2."""
    if not _sweep:
        for M in MS:
            for a in fl.CLASSIC:
                _sweep[a, M] = fl.run(a, N=N, d=D, M=M)
    return _sweep


def params(student=""):
    """'flat': (N, d) for exercise 3; 'paper': (d, M) for exercise 4."""
    s = student_id(student)
    if not s:
        return {"flat": (1024, 64), "paper": (128, 98304)}
    g = rng("lab3", s)
    return {"flat": (g.choice([512, 768, 1024, 1280, 1536]), g.choice([32, 64, 128])),
            "paper": (g.choice([64, 96, 128, 160, 256]), g.choice([49152, 98304, 114688]))}


def ratios(algo, Ms):
    s = sweep()
    return [s[algo, M].total / law(M) for M in Ms]


def fit(algo, Ms):
    """The equally weighted least-squares c of total ~ c N^2 d^2 / M over Ms."""
    r = ratios(algo, Ms)
    return sum(r) / len(r)


def m_flat(n, d):
    """The smallest M at which flash2 uses one row block, found by asking fl_blocks_choose."""
    lo, hi = 1, fl.footprint("flash2", d, n, n) * 2
    while lo < hi:
        mid = (lo + hi) // 2
        try:
            ok = fl.blocks("flash2", N=n, d=d, M=mid)["Br"] >= n
        except fl.FlashlabError:
            ok = False
        lo, hi = (lo, mid) if ok else (mid + 1, hi)
    return lo


def answers(student=""):
    p = params(student)
    d, M = p["paper"]
    b = fl.blocks("flash1", N=1024, d=d, M=M)
    r2 = ratios("flash2", REGIME)
    return {"c_napkin": NAPKIN, "c_fit": {a: fit(a, REGIME) for a in ("flash1", "flash2")},
            "spread": max(r2) / min(r2), "M_flat": m_flat(*p["flat"]),
            "paper_Bc": b["paper_Bc"], "paper_Br": b["paper_Br"], "paper_need": b["paper_footprint"],
            "paper_fits": b["paper_footprint"] <= M}


@check("lab3.napkin")
def napkin(student, c_napkin):
    c = number("c_napkin", c_napkin)
    measured = ratios("flash2", SMALL)
    if near(c, NAPKIN, 1e-6):
        return []
    if min(measured) * 0.97 <= c <= max(measured) * 1.03:
        why = ("that is what the machine measures, not what the napkin gives: derive it from "
               "T_r = N / B with 4 B d = M and the reads of K and V per row block")
    elif near(c, NAPKIN / 2, 1e-6):
        why = "both K and V are re-read per row block: 2 N d elements each time"
    elif near(c, NAPKIN * 2, 1e-6):
        why = "only K and V are re-read per row block (Q and O cross once); T_r = 4 N d / M"
    else:
        why = "count the elements of K and V read per row block, times T_r = N / B with B = M / 4d"
    return [f"c_napkin = {c}: {why}"]


@check("lab3.fit")
def fit_check(student, c_fit, spread):
    c_fit = mapping("c_fit", c_fit)
    problems = []
    for a in ("flash1", "flash2"):
        if a not in c_fit:
            problems.append(f"c_fit has no entry {a!r}")
            continue
        c = number(f"c_fit[{a!r}]", c_fit[a])
        want = fit(a, REGIME)
        if near(c, want):
            continue
        r = ratios(a, REGIME)
        other = "flash2" if a == "flash1" else "flash1"
        if near(c, fit(a, MS)):
            why = (f"that fits all {len(MS)} points of the sweep; the paper's range d <= M <= Nd "
                   f"has {len(REGIME)} of them")
        elif near(c, math.exp(sum(map(math.log, r)) / len(r))):
            why = "that averages the logarithms (a geometric mean): minimise the squares of the ratios' residuals"
        elif near(c, sum(sweep()[a, M].total * law(M) for M in REGIME) / sum(law(M) ** 2 for M in REGIME)):
            why = ("that minimises sum (total - c x)^2, which weighs the points with the largest x "
                   "(smallest M) most; here every point weighs the same: minimise sum (total/x - c)^2")
        elif near(c, fit(other, REGIME)):
            why = f"that is {other}'s constant"
        else:
            why = "minimise sum over the range of (total_i / x_i - c)^2 and solve for c"
        problems.append(f"c_fit[{a!r}] = {c}: {why}")
    s = number("spread", spread)
    r = ratios("flash2", REGIME)
    if not near(s, max(r) / min(r)):
        why = ("that is over the whole sweep, not the paper's range" if near(s, max(ratios("flash2", MS)) / min(ratios("flash2", MS)))
               else "that is smallest over largest: the spread is >= 1" if near(s, min(r) / max(r))
               else "the largest ratio total/x over the range divided by the smallest")
        problems.append(f"spread = {s}: {why}")
    return problems


@check("lab3.flat")
def flat(student, M_flat):
    n, d = params(student)["flat"]
    M = whole("M_flat", M_flat)
    want = m_flat(n, d)
    if M == want:
        return []
    if M == n * d:
        why = "N d is where the Theta law's range ends; one row block needs all of flash2's buffers at B = N"
    elif M == 4 * n * d + n * n:
        why = "the two row vectors m_i and l_i (B x 1 each) are buffers too"
    elif M == 4 * n * d:
        why = "the score tile S_ij (B x B) is a buffer too"
    elif M < want:
        why = "at that M flash2's block is still smaller than N"
    else:
        why = "a smaller M already gives one row block"
    return [f"M_flat = {M} (N = {n}, d = {d}): {why}"]


@check("lab3.paper-blocks")
def paper_blocks(student, paper_Bc, paper_Br, paper_need, paper_fits):
    d, M = params(student)["paper"]
    b = fl.blocks("flash1", N=1024, d=d, M=M)
    problems = []
    Bc = whole("paper_Bc", paper_Bc)
    if Bc != b["paper_Bc"]:
        problems.append(f"paper_Bc = {Bc}: " + ("the paper rounds M/4d up (ceil), not down"
                                                 if Bc == M // (4 * d) else "B_c = ceil(M / 4d)"))
    Br = whole("paper_Br", paper_Br)
    if Br != b["paper_Br"]:
        problems.append(f"paper_Br = {Br}: B_r = min(B_c, d)")
    need = whole("paper_need", paper_need)
    if need != b["paper_footprint"]:
        problems.append(f"paper_need = {need}: 2 B_c d + 2 B_r d + B_r B_c + 6 B_r with the paper's "
                        f"B_c and B_r")
    fits = boolean("paper_fits", paper_fits)
    if fits != (b["paper_footprint"] <= M):
        problems.append(f"paper_fits = {fits}: compare what the buffers need with M = {M}")
    return problems
