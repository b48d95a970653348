"""Lab 3's grading: the napkin's constant from the derivation (on sizes the child never sees), the
least-squares fit and spread over the student's own sweep, the single-block M and the paper's
blocks; no answer may call fl.footprint, fl.blocks or fl.run (they would answer exercises 1, 3
and 4)."""
import math

import flashlab as fl
from flashlab.labkit import near, number, whole
from flashlab.labkit import attempt, function
from flashlab.labkit import lab3 as KIT

from .core import Check

LAB, SOURCE = 3, "lab3_m_sweep"
NAPKIN = 8   # K and V (2 N d elements) re-read once per row block, T_r = N / B = 4 N d / M


def params(g):
    P = KIT.draw(g)
    P["_hidden"] = {"napkin": [KIT.napkin_case(g) for _ in range(3)]}
    return P


def napkin(P, napkin):
    fn = function("napkin", napkin)
    for N, d, M in P["_hidden"]["napkin"]:
        what = f"napkin({N}, {d}, {M})"
        x = KIT.law(N, d, M)
        got = number(what, attempt(what, fn, N, d, M))
        if near(got, NAPKIN * x, 1e-6):
            continue
        c = got / x
        measured = fl.run("flash2", N=N, d=d, M=M).total / x
        if near(c, NAPKIN / 2, 1e-6):
            why = "both K and V are re-read per row block: 2 N d elements each time"
        elif near(c, NAPKIN * 2, 1e-6):
            why = "only K and V are re-read per row block (Q and O cross once); T_r = 4 N d / M"
        elif 0.9 * measured <= c <= 1.1 * measured:
            why = ("that is what the machine measures, not what the napkin gives: derive it from "
                   "T_r = N / B with 4 B d = M and the reads of K and V per row block")
        else:
            why = "count the elements of K and V read per row block, times T_r = N / B with B = M / 4d"
        return [f"{what} = {got:.6g} (constant {c:.4g}): {why}"]
    return []


def fit(P, c_fit, spread):
    N, d, M0 = P["sweep"]
    Ms = KIT.grid(M0)
    s = KIT.sweep(N, d, M0)
    problems, entries = KIT.fit_entries(c_fit)
    for a, c in entries:
        r = KIT.ratios(P, a)
        want = sum(r) / len(r)
        if near(c, want):
            continue
        other = "flash2" if a == "flash1" else "flash1"
        every = KIT.ratios(P, a, Ms)
        rg = KIT.regime(N, d, Ms)
        if near(c, sum(every) / len(every)):
            why = (f"that fits all {len(Ms)} points of the sweep; the paper's range d <= M <= Nd "
                   f"has {len(rg)} of them")
        elif near(c, math.exp(sum(map(math.log, r)) / len(r))):
            why = "that averages the logarithms (a geometric mean): minimise the squares of the ratios' residuals"
        elif near(c, sum(s[a, M].total * KIT.law(N, d, M) for M in rg) / sum(KIT.law(N, d, M) ** 2 for M in rg)):
            why = ("that minimises sum (total - c x)^2, which weighs the points with the largest x "
                   "(smallest M) most; here every point weighs the same: minimise sum (total/x - c)^2")
        elif near(c, sum(KIT.ratios(P, other)) / len(r)):
            why = f"that is {other}'s constant"
        else:
            why = "minimise sum over the range of (total_i / x_i - c)^2 and solve for c"
        problems.append(f"c_fit[{a!r}] = {c}: {why}")
    sp = number("spread", spread)
    r = KIT.ratios(P, "flash2")
    if not near(sp, max(r) / min(r)):
        every = KIT.ratios(P, "flash2", Ms)
        why = ("that is over the whole sweep, not the paper's range" if near(sp, max(every) / min(every))
               else "that is smallest over largest: the spread is >= 1" if near(sp, min(r) / max(r))
               else "the largest ratio total/x over the range divided by the smallest")
        problems.append(f"spread = {sp}: {why}")
    return problems


def m_flat_key(n, d):
    """The smallest M at which flash2 uses one row block (a binary search on fl.blocks)."""
    lo, hi = 1, fl.footprint("flash2", d, n, n) * 2
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if KIT.one_block(n, d, mid) else (mid + 1, hi)
    return lo


def flat(P, M_flat):
    n, d = P["flat"]
    M = whole("M_flat", M_flat)
    want = m_flat_key(n, d)
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


CHECKS = [
    Check("lab3.napkin", ("napkin",), cells=(1,), grade=napkin),
    Check("lab3.fit", ("c_fit", "spread"), cells=(2,), grade=fit),
    Check("lab3.flat", ("M_flat",), cells=(3,), grade=flat),
    Check("lab3.paper-blocks", ("paper_Bc", "paper_Br", "paper_need", "paper_fits"), cells=(4,),
          grade=lambda P, **v: KIT.paper_blocks.problems(P, *v.values())),
]
