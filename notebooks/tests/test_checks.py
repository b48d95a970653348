#!/usr/bin/env python3
"""test_checks.py: every lab check (labkit) passes right answers, also rounded to 6 significant
digits and for several student ids; fails untouched answers; fails at least three plausible wrong
answers each with the hint that names the mistake; and never raises, whatever the answer's type
(unittest; ctest: notebooks_checks).  Right answers come from labkit's answers(), computed with
the C library; the right functions are the solutions' (written again here)."""
import math
import pathlib
import re
import sys
import tempfile
import unittest
from unittest import mock

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import flashlab as fl  # noqa: E402
from labkit import grading, lab1, lab2, lab3, lab4, lab5, lab6, lab7, lab9, lab10  # noqa: E402

STUDENTS = ("", "ada", "grace")
NEG = float("-inf")


def sig6(x):
    """x rounded to 6 significant digits (as the CLI prints it)."""
    if isinstance(x, (list, tuple)):
        return type(x)(sig6(v) for v in x)
    if isinstance(x, dict):
        return {k: sig6(v) for k, v in x.items()}
    return float(f"{x:.6g}") if isinstance(x, float) else x


class Checks(unittest.TestCase):
    def passes(self, chk, *args):
        self.assertEqual(chk.problems(*args), [], f"{chk.cid} should pass")

    def fails(self, chk, *args, hint):
        probs = chk.problems(*args)
        self.assertTrue(probs, f"{chk.cid} should fail for {args[1:]!r:.200}")
        self.assertTrue(any(hint in p for p in probs), f"{chk.cid}: hint {hint!r} not in {probs}")


# ----------------------------------------------------------------------------------------------
def online_softmax(m, S, V, O, tiles):
    dv, T = V.cols, max(tiles)
    s_b, v_b, o_b = m.alloc("s", 1, T), m.alloc("v", T, dv), m.alloc("o", 1, dv)
    mx, l, u, c0 = NEG, 0.0, [0.0] * dv, 0
    for t in tiles:
        m.load(s_b, S, 0, c0, 1, t)
        m.load(v_b, V, c0, 0, t, dv)
        c0 += t
        s, v = s_b.read(1, t)[0], v_b.read(t, dv)
        if max(s) == NEG:
            continue
        mn = max(mx, max(s))
        a = 0.0 if mx == NEG else math.exp(mx - mn)
        l, u = a * l, [a * x for x in u]
        for sj, vj in zip(s, v):
            if sj != NEG:
                e = math.exp(sj - mn)
                l += e
                u = [x + e * y for x, y in zip(u, vj)]
        mx = mn
    o_b.write([[x / l for x in u] if l > 0 else [0.0] * dv])
    m.store(o_b, O, 0, 0, 1, dv)


def two_pass(m, S, V, O, tiles):
    """A plain two-pass softmax over the tiles: every tile loaded twice."""
    dv, T = V.cols, max(tiles)
    s_b, v_b, o_b = m.alloc("s", 1, T), m.alloc("v", T, dv), m.alloc("o", 1, dv)
    mx, c0 = NEG, 0
    for t in tiles:
        m.load(s_b, S, 0, c0, 1, t)
        mx = max([mx] + s_b.read(1, t)[0])
        c0 += t
    l, u, c0 = 0.0, [0.0] * dv, 0
    for t in tiles:
        m.load(s_b, S, 0, c0, 1, t)
        m.load(v_b, V, c0, 0, t, dv)
        for sj, vj in zip(s_b.read(1, t)[0], v_b.read(t, dv)):
            if sj != NEG:
                e = math.exp(sj - mx)
                l += e
                u = [x + e * y for x, y in zip(u, vj)]
        c0 += t
    o_b.write([[x / l for x in u] if l > 0 else [0.0] * dv])
    m.store(o_b, O, 0, 0, 1, dv)


def whole_row(m, S, V, O, tiles):
    """Ignores tile_sizes: loads the whole row at once."""
    n, dv = S.cols, V.cols
    s_b = m.alloc("s", 1, n)
    m.load(s_b, S, 0, 0, 1, n)


def no_rescale(m, S, V, O, tiles):
    dv, T = V.cols, max(tiles)
    s_b, v_b, o_b = m.alloc("s", 1, T), m.alloc("v", T, dv), m.alloc("o", 1, dv)
    mx, l, u, c0 = NEG, 0.0, [0.0] * dv, 0
    for t in tiles:
        m.load(s_b, S, 0, c0, 1, t)
        m.load(v_b, V, c0, 0, t, dv)
        c0 += t
        s, v = s_b.read(1, t)[0], v_b.read(t, dv)
        if max(s) == NEG:
            continue
        mx = max(mx, max(s))
        for sj, vj in zip(s, v):
            if sj != NEG:
                e = math.exp(sj - mx)
                l += e
                u = [x + e * y for x, y in zip(u, vj)]
    o_b.write([[x / l for x in u] if l > 0 else [0.0] * dv])
    m.store(o_b, O, 0, 0, 1, dv)


def peeks_hbm(m, S, V, O, tiles):
    """Reads the scores straight from HBM instead of through tiles."""
    S.read()


class Lab1(Checks):
    def test_right_and_rounded(self):
        for st in STUDENTS:
            a = lab1.answers(st)
            for r in (a, sig6(a)):
                self.passes(lab1.tile_one, st, r["m1"], r["l1"], r["u1"])
                self.passes(lab1.tile_two, st, r["m1"], r["l1"], r["u1"], r["a2"], r["m2"], r["l2"], r["u2"], r["O"])
                self.passes(lab1.rescales, st, r["factors"])
            self.passes(lab1.own_tiling, st, online_softmax)

    def test_untouched(self):
        self.fails(lab1.tile_one, "", None, None, None, hint="not answered yet")
        self.fails(lab1.tile_two, "", None, None, None, None, None, None, None, None, hint="not answered yet")
        self.fails(lab1.rescales, "", None, hint="not answered yet")
        self.fails(lab1.own_tiling, "", None, hint="not written yet")
        stub = lambda m, S, V, O, t: None
        self.fails(lab1.own_tiling, "", stub, hint="S tiles loaded")

    def test_tile_one_mistakes(self):
        a = lab1.answers("")
        raw = sum(math.exp(s) for s in a["scores"][0:2])
        self.fails(lab1.tile_one, "", a["m1"], raw, a["u1"], hint="sum of e^s")
        self.fails(lab1.tile_one, "", a["m1"], a["l1"], [x / a["l1"] for x in a["u1"]], hint="NOT yet divided")
        self.fails(lab1.tile_one, "", max(a["scores"]), a["l1"], a["u1"], hint="whole row")
        self.fails(lab1.tile_one, "", "2", a["l1"], a["u1"], hint="remove the quotes")
        self.fails(lab1.tile_one, "", a["m1"], a["l1"], 3.0, hint="list of 2 numbers")

    def test_tile_two_mistakes(self):
        a = lab1.answers("")
        base = [a["m1"], a["l1"], a["u1"]]
        new = sum(math.exp(s - a["m2"]) for s in a["scores"][2:4])
        self.fails(lab1.tile_two, "", *base, 1 / a["a2"], a["m2"], a["l2"], a["u2"], a["O"], hint="at most 1")
        self.fails(lab1.tile_two, "", *base, a["a2"], a["m2"], a["l1"] + new, a["u2"], a["O"], hint="without rescaling")
        self.fails(lab1.tile_two, "", *base, a["a2"], a["m2"], a["l2"], a["O"], a["O"], hint="state before that division")
        self.fails(lab1.tile_two, "", *base, a["a2"], a["m2"], a["l2"], a["u2"], a["u2"], hint="divide by l2")
        rest = [a["a2"], a["m2"], a["l2"], a["u2"], a["O"]]
        self.fails(lab1.tile_two, "", a["m1"], -a["l1"], a["u1"], *rest, hint="positive sum l1")
        self.fails(lab1.tile_two, "", a["m1"], 0.0, a["u1"], *rest, hint="positive sum l1")
        self.fails(lab1.tile_two, "", float("inf"), a["l1"], a["u1"], *rest, hint="finite maximum")

    def test_tile_two_from_the_students_own_state(self):
        a = lab1.answers("")
        m1, l1, u1 = a["m1"], a["l1"] * 1.5, a["u1"]      # a wrong tile-one l, carried on correctly
        st = fl.OsmState(2, m=m1, l=l1, u=u1)
        a2 = fl.osm_step(st, a["scores"][2:4], a["values"][2:4])
        probs = lab1.tile_two.problems("", m1, l1, u1, a2, st.m, st.l, st.u, fl.osm_finish(st))
        self.assertEqual(len(probs), 1)
        self.assertIn("exercise 1", probs[0])

    def test_rescales_mistakes(self):
        f = lab1.answers("")["factors"]
        self.fails(lab1.rescales, "", [1.0] + f[1:], hint="empty state")
        self.fails(lab1.rescales, "", f[:2] + [1.0] + f[3:], hint="new maximum")
        self.fails(lab1.rescales, "", f[:3] + [0.5], hint="not a new maximum")
        self.fails(lab1.rescales, "", {"a": 1}, hint="list of 4 numbers")

    def test_own_tiling_mistakes(self):
        self.fails(lab1.own_tiling, "", two_pass, hint="two-pass")
        self.fails(lab1.own_tiling, "", whole_row, hint="as one tile")
        self.fails(lab1.own_tiling, "", no_rescale, hint="rescale")
        self.fails(lab1.own_tiling, "", peeks_hbm, hint="only through load and store")
        self.fails(lab1.own_tiling, "", 42, hint="expected a function")


# ----------------------------------------------------------------------------------------------
def cdiv(a, b):
    return -(-a // b)


def std_pred(N, d, Br, Bc):
    Tr = cdiv(N, Br)
    return {"Q": (N * d, 0), "K": (N * d * Tr, 0), "V": (N * d * Tr, 0), "O": (0, N * d),
            "S": (N * N, N * N), "P": (N * N, N * N)}


def f2_pred(N, d, Br, Bc):
    Tr = cdiv(N, Br)
    return {"Q": (N * d, 0), "K": (N * d * Tr, 0), "V": (N * d * Tr, 0), "O": (0, N * d), "L": (0, N)}


def make_flash2(rescale=True, store_inside=False, full_last=False):
    def fn(m, Q, K, V, O, L, N, d, B):
        Qi, Oi, Kj, Vj = (m.alloc(n, B, d) for n in ("Q_i", "O_i", "K_j", "V_j"))
        m.alloc("S_ij", B, B)
        mi, li = m.alloc("m_i", B, 1), m.alloc("l_i", B, 1)
        sc = 1 / math.sqrt(d)
        for r0 in range(0, N, B):
            br = B if full_last else min(B, N - r0)
            m.load(Qi, Q, r0, 0, br, d)
            q = Qi.read(br, d)
            o, mx, l = [[0.0] * d for _ in range(br)], [NEG] * br, [0.0] * br
            for c0 in range(0, N, B):
                bc = min(B, N - c0)
                m.load(Kj, K, c0, 0, bc, d)
                m.load(Vj, V, c0, 0, bc, d)
                k, v = Kj.read(bc, d), Vj.read(bc, d)
                for i in range(br):
                    s = [sc * sum(x * y for x, y in zip(q[i], k[j])) for j in range(bc)]
                    mn = max(mx[i], max(s))
                    a = math.exp(mx[i] - mn) if rescale else 1.0
                    p = [math.exp(x - mn) for x in s]
                    l[i] = a * l[i] + sum(p)
                    o[i] = [a * o[i][c] + sum(p[j] * v[j][c] for j in range(bc)) for c in range(d)]
                    mx[i] = mn
                if store_inside:
                    m.store(Oi, O, r0, 0, br, d)
            Oi.write([[x / l[i] for x in o[i]] for i in range(br)])
            mi.write([[mx[i] + math.log(l[i])] for i in range(br)])
            m.store(Oi, O, r0, 0, br, d)
            m.store(mi, L, r0, 0, br, 1)
    return fn


class Lab2(Checks):
    def test_right(self):
        for st in STUDENTS:
            a = lab2.answers(st)
            self.assertTrue(a["trace_uniform"], "every tile is moved equally often in the trace run")
            self.passes(lab2.standard, st, std_pred)
            self.passes(lab2.flash2, st, f2_pred)
            t = a["trace"]
            self.passes(lab2.trace, st, t["flash2_K_loads"], float(t["flash1_Q_loads"]), t["flash1_O_stores"])
            self.passes(lab2.own_schedule, st, a["B"], make_flash2())

    def test_untouched(self):
        self.fails(lab2.standard, "", lambda *a: None, hint="not answered yet")
        self.fails(lab2.flash2, "", None, hint="not written yet")
        self.fails(lab2.trace, "", None, None, None, hint="not answered yet")
        self.fails(lab2.own_schedule, "", None, lambda *a: None, hint="not answered yet")

    def test_prediction_mistakes(self):
        self.fails(lab2.standard, "", lambda N, d, Br, Bc: {**std_pred(N, d, Br, Bc), "K": (N * d, 0)},
                   hint="re-read for every row block")
        self.fails(lab2.standard, "", lambda N, d, Br, Bc: {**std_pred(N, d, Br, Bc), "S": (0, N * N)},
                   hint="read once by step 2")
        self.fails(lab2.flash2, "", lambda N, d, Br, Bc: {**f2_pred(N, d, Br, Bc), "L": (0, 0)}, hint="one number per row")
        self.fails(lab2.flash2, "", lambda N, d, Br, Bc: {**f2_pred(N, d, Br, Bc), "S": (0, 0)}, hint="no HBM tensor S")
        self.fails(lab2.flash2, "", lambda N, d, Br, Bc: 1 / 0, hint="ZeroDivisionError")

    def test_trace_mistakes(self):
        t = lab2.answers("")["trace"]
        self.fails(lab2.trace, "", t["flash2_K_loads"], t["flash1_Q_loads"], t["flash1_Q_loads"], hint="line 2")
        self.fails(lab2.trace, "", 1, t["flash1_Q_loads"], t["flash1_O_stores"], hint="row blocks")
        self.fails(lab2.trace, "", t["flash2_K_loads"], 8.5, t["flash1_O_stores"], hint="whole number")

    def test_own_schedule_mistakes(self):
        B = lab2.answers("")["B"]
        self.fails(lab2.own_schedule, "", B - 4, make_flash2(), hint="larger block still fit")
        self.fails(lab2.own_schedule, "", B, make_flash2(rescale=False), hint="rescale")
        self.fails(lab2.own_schedule, "", B, make_flash2(store_inside=True), hint="written more than once")
        self.fails(lab2.own_schedule, "", B, make_flash2(full_last=True), hint="out of bounds")


# ----------------------------------------------------------------------------------------------
class Lab3(Checks):
    def test_right_and_rounded(self):
        for st in STUDENTS:
            a = lab3.answers(st)
            for r in (a, sig6(a)):
                self.passes(lab3.napkin, st, r["c_napkin"])
                self.passes(lab3.fit_check, st, r["c_fit"], r["spread"])
            self.passes(lab3.flat, st, float(a["M_flat"]))
            self.passes(lab3.paper_blocks, st, a["paper_Bc"], a["paper_Br"], a["paper_need"], a["paper_fits"])

    def test_untouched(self):
        self.fails(lab3.napkin, "", None, hint="not answered yet")
        self.fails(lab3.fit_check, "", None, None, hint="not answered yet")
        self.fails(lab3.flat, "", None, hint="not answered yet")
        self.fails(lab3.paper_blocks, "", None, None, None, None, hint="not answered yet")

    def test_napkin_mistakes(self):
        self.fails(lab3.napkin, "", 9, hint="what the machine measures")
        self.fails(lab3.napkin, "", 4, hint="both K and V")
        self.fails(lab3.napkin, "", 16, hint="Q and O cross once")

    def test_fit_mistakes(self):
        a = lab3.answers("")
        allpts = {k: lab3.fit(k, lab3.MS) for k in ("flash1", "flash2")}
        self.fails(lab3.fit_check, "", allpts, a["spread"], hint="all 11 points")
        geo = {k: math.exp(sum(map(math.log, lab3.ratios(k, lab3.REGIME))) / len(lab3.REGIME)) for k in allpts}
        self.fails(lab3.fit_check, "", geo, a["spread"], hint="geometric mean")
        sw = lab3.sweep()
        ols = {k: sum(sw[k, M].total * lab3.law(M) for M in lab3.REGIME) / sum(lab3.law(M) ** 2 for M in lab3.REGIME)
               for k in allpts}
        self.fails(lab3.fit_check, "", ols, a["spread"], hint="every point weighs the same")
        self.fails(lab3.fit_check, "", a["c_fit"], 1 / a["spread"], hint="spread is >= 1")
        self.fails(lab3.fit_check, "", [1.0, 2.0], a["spread"], hint="expected a dict")

    def test_flat_and_paper_mistakes(self):
        self.fails(lab3.flat, "", 1024 * 64, hint="Theta law's range")
        self.fails(lab3.flat, "", 4 * 1024 * 64 + 1024 * 1024, hint="m_i and l_i")
        self.fails(lab3.flat, "", 4 * 1024 * 64, hint="S_ij")
        a = lab3.answers("")
        self.fails(lab3.paper_blocks, "", a["paper_Bc"], a["paper_Br"], a["paper_need"], 0, hint="True or False")
        self.fails(lab3.paper_blocks, "", 98304 // 512, a["paper_Br"], a["paper_need"] + 1, a["paper_fits"],
                   hint="2 B_c d")
        self.fails(lab3.paper_blocks, "", a["paper_Bc"], a["paper_Bc"], a["paper_need"], a["paper_fits"], hint="min(B_c, d)")
        self.fails(lab3.paper_blocks, "", a["paper_Bc"], a["paper_Br"], a["paper_need"], not a["paper_fits"],
                   hint="compare what the buffers need")


# ----------------------------------------------------------------------------------------------
class Lab4(Checks):
    def test_right(self):
        for st in STUDENTS:
            self.passes(lab4.decode_corner, st, lambda nq, nk: [[int(j <= i + nk - nq) for j in range(nk)] for i in range(nq)])
            self.passes(lab4.blind_tests, st, [(4, 4), (1, 1)])
            self.passes(lab4.window, st, lambda nq, nk, L, R: [[int((L < 0 or j >= i + nk - nq - L) and (R < 0 or j <= i + nk - nq + R))
                                                                 for j in range(nk)] for i in range(nq)])
            self.passes(lab4.varlen, st, lambda ls: [0] + [sum(ls[:k + 1]) for k in range(len(ls))])
            self.passes(lab4.gqa, st, lambda h, q, k: h // (q // k))

    def test_mistakes(self):
        none = lambda *a: None
        self.fails(lab4.decode_corner, "", none, hint="returned None")
        self.fails(lab4.decode_corner, "", lambda nq, nk: [[int(j <= i) for j in range(nk)] for i in range(nq)], hint="top-left")
        self.fails(lab4.decode_corner, "", lambda nq, nk: 7, hint="list of rows")
        self.fails(lab4.blind_tests, "", None, hint="not answered")
        self.fails(lab4.blind_tests, "", {(1, 1), (4, 4), (1, 8)}, hint="corners differ")
        self.fails(lab4.blind_tests, "", {(1, 1)}, hint="same mask")
        self.fails(lab4.window, "", lambda nq, nk, L, R: [[int((L < 0 or j >= i - L) and (R < 0 or j <= i + R)) for j in range(nk)]
                                                        for i in range(nq)], hint="shifted by Nk - Nq")
        self.fails(lab4.window, "", none, hint="returned None")
        self.fails(lab4.window, "", lambda *a: [[1]], hint="expected")
        self.fails(lab4.varlen, "", lambda ls: [sum(ls[:k + 1]) for k in range(len(ls))], hint="refuses")
        self.fails(lab4.varlen, "", lambda ls: [0, 0] + [sum(ls)] * (len(ls) - 1), hint="describe lengths")
        self.fails(lab4.varlen, "", none, hint="returned None")
        self.fails(lab4.gqa, "", lambda h, q, k: h % k, hint="interleaves")
        self.fails(lab4.gqa, "", lambda h, q, k: h // k, hint="the rule maps")
        self.fails(lab4.gqa, "", none, hint="returned None")


# ----------------------------------------------------------------------------------------------
def bwd_pred(N, d, Br, Bc):
    Tc, Nd = cdiv(N, Bc), N * d
    return {"Q": (Tc * Nd, 0), "K": (Nd, 0), "V": (Nd, 0), "O": (Nd, 0), "dO": (Nd + Tc * Nd, 0),
            "dQ": (Tc * Nd, Nd + Tc * Nd), "dK": (0, Nd), "dV": (0, Nd), "L": (Tc * N, 0), "D": (Tc * N, N)}


class Lab5(Checks):
    def test_right_and_rounded(self):
        for st in STUDENTS:
            a = lab5.answers(st)
            self.passes(lab5.flash2_bwd, st, bwd_pred)
            self.passes(lab5.saved, st, a["saved_standard"], a["saved_flash2"])
            self.passes(lab5.traffic, st, sig6(a["ratio"]), a["recompute_adds_traffic"])
            self.passes(lab5.sweep_check, st, a["passes"], a["M_cross"])
            # lists instead of tuples, counts as floats (1.2e7), M_cross as a float
            as_lists = {k: [[float(x) for x in p] for p in v] for k, v in a["passes"].items()}
            self.passes(lab5.sweep_check, st, as_lists, float(a["M_cross"]))

    def test_mistakes(self):
        a = lab5.answers("")
        self.fails(lab5.flash2_bwd, "", lambda *x: None, hint="not answered yet")
        self.fails(lab5.flash2_bwd, "", lambda N, d, Br, Bc: {**bwd_pred(N, d, Br, Bc), "dQ": (0, N * d)}, hint="dQ")
        self.fails(lab5.flash2_bwd, "", lambda N, d, Br, Bc: {**bwd_pred(N, d, Br, Bc), "O": (0, 0)}, hint="O reads")
        self.fails(lab5.saved, "", None, None, hint="not answered")
        self.fails(lab5.saved, "", {"P": 1024}, a["saved_flash2"], hint="check its shape")
        self.fails(lab5.saved, "", {"S": 1024 * 1024}, a["saved_flash2"], hint="you name")
        self.fails(lab5.traffic, "", None, None, hint="not answered")
        self.fails(lab5.traffic, "", 1 / a["ratio"], False, hint="standard over flash2")
        self.fails(lab5.traffic, "", a["ratio"], True, hint="compare the two totals")

    def test_sweep_mistakes(self):
        a = lab5.answers("")
        P, C = a["passes"], a["M_cross"]
        swap = lambda f: {k: [f(p) for p in v] for k, v in P.items()}
        self.fails(lab5.sweep_check, "", None, None, hint="not answered")
        self.fails(lab5.sweep_check, "", P, None, hint="M_cross is not answered")
        self.fails(lab5.sweep_check, "", swap(lambda p: (p[1], p[0])), C, hint="swapped")
        self.fails(lab5.sweep_check, "", swap(lambda p: (p[0] + p[1], 0)), C, hint="the backward is 0")
        self.fails(lab5.sweep_check, "", swap(lambda p: (p[0], p[0] + p[1])), C, hint="fwd+bwd total")
        self.fails(lab5.sweep_check, "", swap(lambda p: (p[0] + p[1], p[1])), C, hint="give the forward alone")
        self.fails(lab5.sweep_check, "", lab5.sweep(2048, 64), C, hint="your sizes")
        self.fails(lab5.sweep_check, "", {"standard": P["standard"]}, C, hint="'flash2' is missing")
        self.fails(lab5.sweep_check, "", {k: v[:-1] for k, v in P.items()}, C, hint="one (fwd, bwd) pair per M")
        self.fails(lab5.sweep_check, "", {k: 5 for k in P}, C, hint="list of (fwd, bwd) pairs")
        self.fails(lab5.sweep_check, "", {k: [1] * len(lab5.MS) for k in P}, C, hint="must be a pair")
        self.fails(lab5.sweep_check, "", [P], C, hint="expected a dict")
        fwd_cross = lab5.crossing(P, part=lambda p: p[0])
        self.assertNotEqual(fwd_cross, C)
        self.fails(lab5.sweep_check, "", P, fwd_cross, hint="forward passes cross")
        self.fails(lab5.sweep_check, "", P, C // 4, hint="still moves more")
        self.fails(lab5.sweep_check, "", P, C + 1, hint="one of Ms")
        self.fails(lab5.sweep_check, "", P, str(C), hint="remove the quotes")
        self.fails(lab5.sweep_check, "", P, 4 * C, hint="smallest M of Ms")
        # another student's sizes are not yours
        other = next(st for st in ("ada", "grace", "alan") if lab5.params(st)["sweep"] != lab5.params("")["sweep"])
        self.fails(lab5.sweep_check, other, P, C, hint="your sizes")


# ----------------------------------------------------------------------------------------------
def kernel_model(algo, N, d, Br, Bc, causal="none", elem_bytes=2, pass_="fwd", Nk=None):
    return fl.run(algo, N=N, d=d, M=fl.footprint(algo, d, Br, Bc, bwd=pass_ == "bwd"), Br=Br, Bc=Bc,
                  elem_bytes=elem_bytes, causal=causal, pass_=pass_, Nk=Nk or N)


class Lab6(Checks):
    def test_right(self):
        self.passes(lab6.model, "", kernel_model)
        a = lab6.answers("")
        if a["rows_compared"]:
            self.passes(lab6.counters, "", a["rows_compared"], a["rows_equal"])
            self.passes(lab6.ncu, "", sig6(a["min_dram_ratio"]), list(a["min_dram_row"]))
            self.fails(lab6.counters, "", a["rows_compared"] + 1, a["rows_equal"], hint="rows_compared")
            self.fails(lab6.counters, "", None, None, hint="not answered")
            self.fails(lab6.counters, "", a["rows_compared"], a["rows_equal"] - 2, hint="rows_equal")
            self.fails(lab6.ncu, "", a["min_dram_ratio"] * 2, a["min_dram_row"], hint="divide dram_read_B")
            self.fails(lab6.ncu, "", None, None, hint="not answered")
            self.fails(lab6.ncu, "", a["min_dram_ratio"], ("flash2", "4096", "16", "16"), hint="as ints")

    def test_model_mistakes(self):
        self.fails(lab6.model, "", lambda *a, **k: None, hint="returned None")
        self.fails(lab6.model, "", lambda algo, N, d, Br, Bc, **k: fl.run(algo, N=N, d=d, M=fl.footprint(algo, d, Br, Bc),
                                                                             pass_=k.get("pass_", "fwd")), hint="force them")
        self.fails(lab6.model, "", lambda algo, N, d, Br, Bc, causal="none", elem_bytes=2, pass_="fwd", Nk=None:
                   fl.run(algo, N=N, d=d, M=fl.footprint(algo, d, Br, Bc), Br=Br, Bc=Bc, pass_=pass_), hint="bwd=True")
        self.fails(lab6.model, "", lambda *a, **k: 42, hint="what fl.run returns")


class Lab7(Checks):
    def test_floors(self):
        def floors(B, H, N, d, causal=False, eb=2):
            f = 4.0 * B * H * N * N * d * (0.5 if causal else 1.0)
            b = 4.0 * B * H * N * d * eb
            return f, b, f / lab7.PEAK_FLOPS * 1e3, b / lab7.PEAK_BYTES * 1e3
        self.passes(lab7.floors, "", floors)
        self.passes(lab7.floors, "", lambda *a: sig6(list(floors(*a))))
        self.fails(lab7.floors, "", lambda B, H, N, d, c=False, eb=2: (2 * floors(B, H, N, d, c, eb)[0],) + floors(B, H, N, d, c, eb)[1:],
                   hint="two products")
        self.fails(lab7.floors, "", lambda B, H, N, d, c=False, eb=2: floors(B, H, N, d, c, 2), hint="element size")
        self.fails(lab7.floors, "", lambda *a: floors(*a)[:2], hint="list of 4 numbers")
        self.fails(lab7.floors, "", None, hint="not written")

    def test_recorded(self):
        a = lab7.answers("")
        if "speedup" not in a:
            self.skipTest("no recorded Figure-2 data")
        self.passes(lab7.bytes_check, "", lab7.lib_bytes)
        self.fails(lab7.bytes_check, "", lambda r: lab7.lib_bytes(r) // 64, hint="batch 64")
        self.fails(lab7.bytes_check, "", lambda r: None, hint="model_bytes = None")
        self.fails(lab7.bytes_check, "", lambda r: r["nope"], hint="KeyError")
        r = sig6({k: a[k] for k in ("speedup", "byte_ratio", "std_tbps", "tiled_tflops")})
        self.passes(lab7.floor, "", r["speedup"], r["byte_ratio"], r["std_tbps"], r["tiled_tflops"])
        self.fails(lab7.floor, "", r["byte_ratio"], r["speedup"], r["std_tbps"], r["tiled_tflops"], hint="speedup")
        self.fails(lab7.floor, "", None, None, None, None, hint="not answered")
        self.fails(lab7.floor, "", r["speedup"], r["byte_ratio"], r["std_tbps"] * 1e12, r["tiled_tflops"], hint="std_tbps")
        self.passes(lab7.sdpa_check, "", sig6(a["worst_ratio"]), list(a["worst_shape"]))
        self.fails(lab7.sdpa_check, "", 1 / a["worst_ratio"], a["worst_shape"], hint="smallest")
        self.fails(lab7.sdpa_check, "", a["worst_ratio"], None, hint="worst_shape")
        self.fails(lab7.sdpa_check, "", "1.14", a["worst_shape"], hint="remove the quotes")


# ----------------------------------------------------------------------------------------------
def design(skip=True, blocks=None, store=True, drop_last=False):
    def fn(m, T, case):
        Nq, d, H, Hk = case["Nq"], case["d"], case["heads"], case["kv_heads"]
        Nk = case["Nk"] or Nq
        _, _, algo, Br, Bc = grading.optimum(case)
        Br, Bc = blocks or (Br, Bc)
        G = H // Hk if algo == "flash2-gqa" and not blocks else 1
        mk = fl.mask(Nq, Nk, case["causal"])
        Qs = [m.alloc(f"Q{g}", Br, d) for g in range(G)]
        Os = [m.alloc(f"O{g}", Br, d) for g in range(G)]
        Kj, Vj = m.alloc("K_j", Bc, d), m.alloc("V_j", Bc, d)
        mi = m.alloc("m_i", G * Br, 1)
        for h0 in range(0, H, G):
            kv = h0 // (H // Hk)
            for r0 in range(0, Nq, Br):
                br = min(Br, Nq - r0)
                for g in range(G):
                    m.load(Qs[g], T["Q"], (h0 + g) * Nq + r0, 0, br, d)
                for c0 in range(0, Nk, Bc):
                    bc = min(Bc, Nk - c0)
                    if skip and fl.mask_tile(mk, r0, br, c0, bc) == "empty":
                        continue
                    if drop_last and c0 + bc == Nk:
                        continue
                    m.load(Kj, T["K"], kv * Nk + c0, 0, bc, d)
                    m.load(Vj, T["V"], kv * Nk + c0, 0, bc, d)
                for g in range(G):
                    if store:
                        m.store(Os[g], T["O"], (h0 + g) * Nq + r0, 0, br, d)
                    m.store(mi, T["L"], (h0 + g) * Nq + r0, 0, br, 1)
    return fn


class Lab8(Checks):
    def test_right(self):
        for st in STUDENTS + ("alan", "barbara"):
            self.passes(grading.design, st, design())

    def test_mistakes(self):
        self.fails(grading.design, "", None, hint="not written")
        self.fails(grading.design, "", lambda m, T, c: None, hint="never on chip together")
        self.fails(grading.design, "", design(store=False), hint="O is not stored")
        self.fails(grading.design, "", design(drop_last=True), hint="never on chip together")
        self.fails(grading.design, "", design(blocks=(4, 4)), hint="1.5x the optimum")

    def test_points(self):
        self.assertEqual(grading.points(100, 100), 10.0)
        self.assertEqual(grading.points(90, 100), 10.0)
        self.assertEqual(grading.points(150, 100), 5.0)
        self.assertEqual(grading.points(250, 100), 0.0)


# ----------------------------------------------------------------------------------------------
# Lab 9: the checks read the recorded Nsight Compute rows (figures/data/third_party_ncu.csv and
# run 4's third_party_ncu_run4_sdpa_bwd.csv, both in the repository), and so do these tests; the
# right functions are the solution's, written again.  Launch-model runs go through
# lab9.launch_row (the notebook's _launch_row), so each configuration runs once here.
SECTOR = 32
SPILL = "l1tex__t_sectors_pipe_lsu_mem_local_op_ld_lookup_miss.sum"
RED = ("lts__t_sectors_srcunit_tex_op_red_lookup_miss.sum", "lts__t_sectors_srcunit_ltcfabric_lookup_miss.sum",
       "lts__t_sectors_srcunit_ltcfabric_op_read_lookup_miss.sum")
ODD = (42, "x", None, [], {}, float("nan"), object(), (1, 2, 3))
ODD_FN = (lambda *a, **k: 1 / 0, lambda *a, **k: "abc", lambda *a, **k: [1, 2, 3], lambda *a, **k: float("nan"),
          lambda *a, **k: {"a": 1}, lambda *a, **k: float("inf"), lambda *a, **k: -1, lambda *a, **k: True)


def fa2_tiles(name):
    m = re.search(r"Flash_fwd_kernel_traits<(\d+), (\d+), (\d+)", name)
    return (int(m[2]), int(m[3])) if m else None


def sm_read(r):
    return float(r["l1tex__m_xbar2l1tex_read_sectors.sum"]) * SECTOR


def model_args(r, Br, Bc, family="fwd-q", causal=True, dtype=None):
    args = (family, "--batch", r["B"], "--heads", r["H"], "--N", r["N"], "--d", r["d"], "--Br", Br, "--Bc", Bc,
            "--dtype", dtype or r["dtype"])
    return args + (("--causal",) if causal and r["causal"] == "1" else ())


def model_sm_read_cli(r, Br, Bc, family="fwd-q"):
    """The solution's: the CLI itself, its CSV read here."""
    lines = [l for l in fl.cli("l2", "--launch", *model_args(r, Br, Bc, family), "--format", "csv").splitlines()
             if not l.startswith("#")]
    return int(dict(zip(lines[0].split(","), lines[1].split(",")))["sm_read_B"])


def make_model(causal=True, column="sm_read_B"):
    def fn(r, Br, Bc, family="fwd-q"):
        return int(lab9.launch_row(*model_args(r, Br, Bc, family, causal))[column])
    return fn


def cudnn_rows(r):
    return 64 * (int(r["launch__block_dim_x"]) // 128 - 1)


def twopass_model(r):
    """The notebook's, with its own arguments."""
    args = ("bwd-twopass", "--batch", r["B"], "--heads", r["H"], "--N", r["N"], "--d", r["d"], "--Br", "32", "--Bc", "128",
            "--Br2", "128", "--Bc2", "32") + (("--causal",) if r["causal"] == "1" else ())
    return int(lab9.launch_row(*args)["sm_read_B"])


def spill_corrected_ratio(r):
    return (sm_read(r) - float(r[SPILL]) * SECTOR) / twopass_model(r)


def make_red(tex=True, fabric=True, reads=False, scale=SECTOR):
    def reduction_misses(r):
        t, f, rd = (float(r[c]) for c in RED)
        return scale * (t * tex + f * fabric - rd * (fabric and not reads))
    return reduction_misses


def make_split(red=make_red(), over_whole=False, keep_red=False, inverted=False, swapped=False, whole_first=False):
    def dram_split(r):
        m = lab9.bwd_model(r)
        x, red_m, dram_m = red(r), float(m["red_miss_B"]), float(m["dram_read_B"])
        dram = float(r["dram__bytes_read.sum"])
        a = dram / dram_m if whole_first else x / red_m
        b = (dram - (0 if keep_red else x)) / (dram_m if over_whole else dram_m - red_m)
        if inverted:
            a, b = 1 / a, 1 / b
        return (b, a) if swapped else (a, b)
    return dram_split


class CheckEveryPlace(Checks):
    """Checks whose every answer is tested in every place with every odd value."""

    def never_raises(self, chk, *args):
        """Every odd value in each answer's place (the others right): a list of problems, never
        an exception, and never a pass."""
        for k in range(1, len(args)):
            for v in ODD + ODD_FN:
                probs = chk.problems(*args[:k], v, *args[k + 1:])
                self.assertIsInstance(probs, list)
                self.assertTrue(all(isinstance(p, str) for p in probs))
                self.assertTrue(probs, f"{chk.cid} passes with {v!r} in place {k}")


class Lab9(CheckEveryPlace):
    @classmethod
    def setUpClass(cls):
        cls.a = lab9.answers("")

    def test_recorded_data_is_here(self):
        self.assertTrue(lab9.fa2_rows() and lab9.cudnn_fwd_rows() and lab9.memeff_rows() and lab9.triton_rows())
        r = lab9.bwd_row()
        self.assertIsNotNone(r, "run 4's cuDNN backward at s6")
        # the model of that kernel is the launch the study ran (docs: flashlab l2 --launch ...)
        self.assertEqual(" ".join(lab9.bwd_args(r)), "bwd-kv --batch 1 --heads 16 --N 16384 --d 128 --Br 64 --Bc 128 "
                         "--dtype bf16 --persistent 132 --atomic-dq --l2-partitions 2")
        self.assertEqual((r["B"], r["H"], r["N"], r["d"], r["dtype"], r["causal"]), ("1", "16", "16384", "128", "bf16", "0"))
        # the notebook's twopass_model and the check run the same configuration (once)
        t = lab9.triton_rows()[0]
        self.assertEqual(lab9.twopass_args(t), ("bwd-twopass", "--batch", t["B"], "--heads", t["H"], "--N", t["N"], "--d",
                                                t["d"], "--Br", "32", "--Bc", "128", "--Br2", "128", "--Bc2", "32"))

    def test_expected_values(self):
        """What the lab says the data gives (the checks compute these; here they are pinned)."""
        a = self.a
        self.assertEqual(a["memeff_family"], "fwd-qkv")
        self.assertEqual(a["memeff_q_reads"], 16)
        self.assertEqual(set(a["cudnn_rows"].values()), {128})
        self.assertTrue(all(abs(x - 1) < 0.01 for x in a["spill_corrected_ratio"].values()))
        red, reads = a["dram_split"]
        self.assertAlmostEqual(red, 0.846, delta=0.001)
        self.assertAlmostEqual(reads, 0.941, delta=0.001)
        self.assertEqual(a["reduction_misses"], 32 * (3348888 + 8832756 - 5501592))

    def test_tiles(self):
        for st in STUDENTS:
            self.passes(lab9.tiles, st, fa2_tiles)
        self.passes(lab9.tiles, "", lambda n: list(fa2_tiles(n)) if fa2_tiles(n) else None)
        self.passes(lab9.tiles, "", lambda n: tuple(float(x) for x in fa2_tiles(n)) if fa2_tiles(n) else None)
        self.fails(lab9.tiles, "", lambda n: None, hint="the name has Flash_fwd_kernel_traits")
        self.fails(lab9.tiles, "", None, hint="not written yet")
        self.fails(lab9.tiles, "", lambda n: fa2_tiles(n)[::-1] if fa2_tiles(n) else None, hint="swapped")
        first_two = lambda n: tuple(int(x) for x in re.search(r"traits<(\d+), (\d+)", n).groups()) if "traits<" in n else None
        self.fails(lab9.tiles, "", first_two, hint="head dimension d")
        by_d = lambda n: ((128, 128) if "traits<64," in n else (128, 64)) if "traits<" in n else None   # a table, not the name
        self.fails(lab9.tiles, "", by_d, hint="another kernel's tiles")
        any_numbers = lambda n: tuple(int(x) for x in re.search(r"<[^<]*?(\d+), (\d+)", n).groups()[-2:])
        self.fails(lab9.tiles, "", any_numbers, hint="return None")
        no_guard = lambda n: (lambda m: (int(m[2]), int(m[3])))(re.search(r"Flash_fwd_kernel_traits<(\d+), (\d+), (\d+)", n))
        self.fails(lab9.tiles, "", no_guard, hint="return None")
        self.fails(lab9.tiles, "", lambda n: tuple(map(str, fa2_tiles(n))) if fa2_tiles(n) else None, hint="remove the quotes")
        self.never_raises(lab9.tiles, "", fa2_tiles)

    def test_model(self):
        self.passes(lab9.model, "", model_sm_read_cli)
        for st in STUDENTS:
            self.passes(lab9.model, st, make_model())
        self.passes(lab9.model, "", lambda *a, **k: float(make_model()(*a, **k)))
        self.fails(lab9.model, "", lambda *a, **k: None, hint="no model yet")
        self.fails(lab9.model, "", None, hint="not written yet")
        self.fails(lab9.model, "", make_model(causal=False), hint="the row's causal")
        self.fails(lab9.model, "", lambda r, Br, Bc, family="fwd-q": make_model()(r, Br, Bc, "fwd-qkv"), hint="fwd-qkv family")
        self.fails(lab9.model, "", make_model(column="dram_read_B"), hint="the column dram_read_B")
        self.fails(lab9.model, "", lambda r, Br, Bc, **k: int(sm_read(r)), hint="the measured value")
        self.fails(lab9.model, "", lambda *a, **k: str(make_model()(*a, **k)), hint="remove the quotes")
        self.fails(lab9.model, "", lambda r, Br, Bc: make_model()(r, Br, Bc) + 1, hint="gives")
        self.never_raises(lab9.model, "", make_model())

    def test_cudnn(self):
        for st in STUDENTS:
            self.passes(lab9.cudnn, st, cudnn_rows)
        self.passes(lab9.cudnn, "", lambda r: float(cudnn_rows(r)))
        self.fails(lab9.cudnn, "", lambda r: None, hint="returned None")
        self.fails(lab9.cudnn, "", None, hint="not written yet")
        self.fails(lab9.cudnn, "", lambda r: 64, hint="the name's 64")
        self.fails(lab9.cudnn, "", lambda r: 64 * int(r["launch__block_dim_x"]) // 128, hint="producer warpgroup")
        self.fails(lab9.cudnn, "", lambda r: int(r["launch__block_dim_x"]), hint="counts threads")
        self.fails(lab9.cudnn, "", lambda r: int(r["launch__block_dim_x"]) // 128, hint="counts warpgroups")
        self.fails(lab9.cudnn, "", lambda r: "128", hint="remove the quotes")
        self.never_raises(lab9.cudnn, "", cudnn_rows)

    def test_memeff(self):
        fam, q = self.a["memeff_family"], self.a["memeff_q_reads"]
        for st in STUDENTS:
            self.passes(lab9.memeff, st, fam, q)
        self.passes(lab9.memeff, "", fam, float(q))
        self.fails(lab9.memeff, "", None, None, hint="memeff_family is not answered yet")
        self.fails(lab9.memeff, "", None, None, hint="memeff_q_reads is not answered yet")
        other = next(f for f in lab9.FAMILIES if f != fam)
        self.fails(lab9.memeff, "", other, q, hint="reads each query tile once")
        self.fails(lab9.memeff, "", "flash2", q, hint="one of")
        self.fails(lab9.memeff, "", fam, 1, hint="once is the flash2 order")
        self.fails(lab9.memeff, "", fam, 1024, hint="not per key")
        self.fails(lab9.memeff, "", fam, 2 * q, hint="other reads")
        self.fails(lab9.memeff, "", fam, 64, hint="size of a key tile")
        self.fails(lab9.memeff, "", fam, str(q), hint="remove the quotes")
        self.fails(lab9.memeff, "", fam, q + 0.5, hint="whole number")
        self.never_raises(lab9.memeff, "", fam, q)

    def test_spills(self):
        for st in STUDENTS:
            self.passes(lab9.spills, st, spill_corrected_ratio)
        self.passes(lab9.spills, "", lambda r: sig6(spill_corrected_ratio(r)))
        self.fails(lab9.spills, "", lambda r: None, hint="returned None")
        self.fails(lab9.spills, "", None, hint="not written yet")
        self.fails(lab9.spills, "", lambda r: sm_read(r) / twopass_model(r), hint="raw ratio")
        self.fails(lab9.spills, "", lambda r: (sm_read(r) - float(r[SPILL])) / twopass_model(r), hint="32 bytes each")
        every = "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum"
        self.fails(lab9.spills, "", lambda r: (sm_read(r) - float(r[every]) * SECTOR) / twopass_model(r), hint="missed L1")
        self.fails(lab9.spills, "", lambda r: 1 / spill_corrected_ratio(r), hint="inverted")
        self.fails(lab9.spills, "", lambda r: 1.0, hint="twopass_model")
        self.never_raises(lab9.spills, "", spill_corrected_ratio)

    def test_reductions(self):
        right, split = make_red(), make_split()
        for st in STUDENTS:
            self.passes(lab9.reductions, st, right, split)
        self.passes(lab9.reductions, "", lambda r: sig6(right(r)), lambda r: sig6(split(r)))
        self.passes(lab9.reductions, "", right, lambda r: list(split(r)))
        self.passes(lab9.reductions, "", lambda r: int(right(r)), split)
        self.fails(lab9.reductions, "", lambda r: None, lambda r: None, hint="reduction_misses(row) returned None")
        self.fails(lab9.reductions, "", lambda r: None, lambda r: None, hint="dram_split(row) returned None")
        self.fails(lab9.reductions, "", None, None, hint="not written yet")
        # the reductions' misses: each mistake named, in reduction_misses and in a dram_split that uses it
        for wrong, hint in ((make_red(fabric=False), "add the fabric's misses that are not reads"),
                            (make_red(reads=True), "include reads"),
                            (make_red(scale=1), "32 bytes each"),
                            (make_red(tex=False), "homed on the reducing SM's side")):
            self.fails(lab9.reductions, "", wrong, split, hint=hint)
            probs = lab9.reductions.problems("", right, make_split(red=wrong))
            self.assertEqual(len(probs), 1, probs)
            self.assertIn(hint, probs[0])
            self.assertIn("dram_split", probs[0])
        # the split
        for kw, hint in ((dict(over_whole=True), "not the model's whole DRAM"),
                         (dict(keep_red=True), "out of the measured DRAM reads too"),
                         (dict(inverted=True), "inverted"),
                         (dict(swapped=True), "the reductions' ratio first"),
                         (dict(whole_first=True), "not the whole DRAM ratio")):
            self.fails(lab9.reductions, "", right, make_split(**kw), hint=hint)
        self.fails(lab9.reductions, "", lambda r: float(r["dram__bytes_read.sum"]), split, hint="all of the DRAM reads")
        self.fails(lab9.reductions, "", right, lambda r: split(r)[0], hint="list of 2 numbers")
        self.fails(lab9.reductions, "", right, lambda r: tuple(map(str, split(r))), hint="remove the quotes")
        self.fails(lab9.reductions, "", right, lambda r: (split(r)[0], 1.0), hint="dram_read_B - red_miss_B")
        self.never_raises(lab9.reductions, "", right, split)

    def test_without_the_recorded_data(self):
        """No recorded files: every check on them skips and says which file; exercise 1 still
        checks its two names."""
        with tempfile.TemporaryDirectory() as tmp, mock.patch.object(fl, "data_dir", lambda: pathlib.Path(tmp)):
            for chk, args in ((lab9.model, (make_model(),)), (lab9.cudnn, (cudnn_rows,)), (lab9.memeff, ("fwd-qkv", 16)),
                              (lab9.spills, (spill_corrected_ratio,))):
                self.assertIn("third_party_ncu.csv", chk.skipped("", *args) or "", chk.cid)
            self.assertIn("third_party_ncu_run4_sdpa_bwd.csv", lab9.reductions.skipped("", make_red(), make_split()) or "")
            self.passes(lab9.tiles, "", fa2_tiles)
            self.fails(lab9.tiles, "", lambda n: (64, 64), hint="return None")


# ----------------------------------------------------------------------------------------------
# Lab 10: the checks read the recorded profile of versions 7, 10 and 12 (figures/data/
# gpu_ncu_same_bytes.csv, in the repository), and so do these tests; the right functions are the
# solution's, written again here, and each wrong one is a mistake a student makes.
def l10_run(r, Br=None, Bc=None, N=None, heads=1, force=True):
    N, d = int(N or r["N"]), int(r["d"])
    Br, Bc = int(Br or r["Br"]), int(Bc or r["Bc"])
    if not force:
        return fl.run("flash2", N=N, d=d, M=fl.footprint("flash2", d, Br, Bc), heads=heads, elem_bytes=2)
    return fl.run("flash2", N=N, d=d, Br=Br, Bc=Bc, M=fl.footprint("flash2", d, Br, Bc), heads=heads, elem_bytes=2)


def l10_model_bytes(r):
    m = l10_run(r)
    return m.read_bytes, m.write_bytes


def l10_fewest_ms(r, heads=True, Br_N=True, peak=None, scale=1e3, with_l=True):
    m = l10_run(r, Br=r["N"] if Br_N else None, heads=int(r["heads"]) if heads else 1)
    b = m.bytes if with_l else m.bytes - m.tensors["L"][1] * 4
    return b / (peak or lab10.PEAK_BYTES) * scale


def l10_ms(r):
    return float(r["duration_ns"]) * 1e-6


def l10_speedups(rows, swap=False, inverted=False):
    t = lambda v, d: float(next(r for r in rows if r["version"] == v and int(r["d"]) == d)["duration_ns"])
    out = {}
    for d in (64, 128):
        a, b = t("7", d) / t("10", d), t("10", d) / t("12", d)
        if inverted:
            a, b = 1 / a, 1 / b
        out[d] = (b, a) if swap else (a, b)
    return out


def l10_predicted(r, schedulers=4, pct=100, sms=132, scale=1e3):
    return float(r["inst_executed"]) / (float(r["issue_active_pct"]) / pct * schedulers * sms * float(r["sm_clock_hz"])) * scale


def l10_parts(slow, fast, clock=True):
    f = lambda r, k: float(r[k])
    return (f(slow, "inst_executed") / f(fast, "inst_executed"), f(fast, "issue_active_pct") / f(slow, "issue_active_pct"),
            f(fast, "sm_clock_hz") / f(slow, "sm_clock_hz") if clock else 1.0)


def l10_per_cycle(r, pct=100, sms=132, active=True):
    cyc = (float(r["tensor_active_pct"]) / pct if active else 1.0) * float(r["duration_ns"]) * 1e-9 * float(r["sm_clock_hz"])
    return float(r["gflop"]) * 1e9 / sms / cyc


def l10_share(r, peak=989e12, scale=1.0):
    return float(r["gflop"]) * 1e9 / (float(r["duration_ns"]) * 1e-9) / peak * scale


def l10_tops(r, selected=False, reverse=True, prefix=""):
    st = {k[6:]: float(v) for k, v in r.items() if k.startswith("stall_") and (selected or k != "stall_selected")}
    return [prefix + n for n in sorted(st, key=st.get, reverse=reverse)[:2]]


def l10_drop(rows, per_inst=False, inverted=False, swap_d=False):
    row = lambda v, d: next(r for r in rows if r["version"] == v and int(r["d"]) == d)
    cyc = lambda r: float(r["stall_barrier"]) * (1.0 if per_inst else float(r["inst_executed"]))
    out = {d: cyc(row("12", d)) / cyc(row("10", d)) for d in (64, 128)}
    if inverted:
        out = {d: 1 / x for d, x in out.items()}
    return {64: out[128], 128: out[64]} if swap_d else out


class Lab10(CheckEveryPlace):
    @classmethod
    def setUpClass(cls):
        cls.rows = lab10.rows()
        cls.a = lab10.answers("")

    def setUp(self):
        if not self.rows:
            self.skipTest("no recorded profile (figures/data/gpu_ncu_same_bytes.csv)")

    def test_expected_values(self):
        """What the handout and the solution say the recorded data gives (the checks compute
        these; here they are pinned, so a new recording that changes them shows up)."""
        a = self.a
        self.assertEqual(len(self.rows), 6)
        for r in self.rows:
            self.assertEqual(l10_model_bytes(r), (int(r["counter_read_B_per_head"]), int(r["counter_write_B_per_head"])))
        self.assertEqual({a["model_bytes"][k] for k in a["model_bytes"] if "d = 64" in k}, {(34078720, 540672)})
        self.assertEqual({a["model_bytes"][k] for k in a["model_bytes"] if "d = 128" in k}, {(68157440, 1064960)})
        for d, (x, y) in ((64, (1.142, 1.201)), (128, (1.186, 1.627))):
            self.assertAlmostEqual(a["speedups"][d][0], x, delta=0.001)
            self.assertAlmostEqual(a["speedups"][d][1], y, delta=0.001)
        self.assertTrue(all(0.94 <= a["predicted_ms"][lab10.label(r)] / l10_ms(r) <= 0.97 for r in self.rows))
        self.assertTrue(all(abs(v - 2640) < 2 for k, v in a["flop_per_tensor_cycle"].items() if k.startswith("v7 ")))
        self.assertEqual(a["top_stalls"]["v10 d = 128 (128x64)"], ["barrier", "wait"])
        self.assertAlmostEqual(a["barrier_drop"][64], 0.572, delta=0.001)
        self.assertAlmostEqual(a["barrier_drop"][128], 0.309, delta=0.001)
        self.assertTrue(all(lab10.fewest_ms_of(r) / l10_ms(r) < 0.073 for r in self.rows))

    def test_same_bytes(self):
        for st in STUDENTS:
            self.passes(lab10.same_bytes, st, l10_model_bytes)
        self.passes(lab10.same_bytes, "", lambda r: list(l10_model_bytes(r)))
        self.passes(lab10.same_bytes, "", lambda r: tuple(float(x) for x in l10_model_bytes(r)))
        heads = lambda r: tuple(x * int(r["heads"]) for x in l10_model_bytes(r))
        self.fails(lab10.same_bytes, "", heads, hint="one head's")
        self.fails(lab10.same_bytes, "", lambda r: l10_model_bytes(r)[::-1], hint="swapped")
        self.fails(lab10.same_bytes, "", lambda r: (l10_run(r).reads, l10_run(r).writes), hint="elements")
        self.fails(lab10.same_bytes, "", lambda r: (lambda m: (m.read_bytes, m.write_bytes))(l10_run(r, Br=r["Bc"], Bc=r["Br"])),
                   hint="Br and Bc swapped")
        self.fails(lab10.same_bytes, "", lambda r: (lambda m: (m.read_bytes, m.write_bytes))(l10_run(r, force=False)),
                   hint="force the kernel's tiles")
        counters = lambda r: (int(r["counter_read_B_per_head"]), int(r["counter_write_B_per_head"]))
        self.fails(lab10.same_bytes, "", counters, hint="the bytes of the row as recorded")
        fixed_n = lambda r: (lambda m: (m.read_bytes, m.write_bytes))(l10_run(r, N=4096))
        self.fails(lab10.same_bytes, "", fixed_n, hint="changed this row's N")
        fixed_tiles = lambda r: (lambda m: (m.read_bytes, m.write_bytes))(l10_run(r, Br=128))
        self.fails(lab10.same_bytes, "", fixed_tiles, hint="changed this row's Br")
        self.fails(lab10.same_bytes, "", lambda r: l10_run(r).bytes, hint="list of 2 numbers")
        self.fails(lab10.same_bytes, "", lambda r: None, hint="returned None")
        self.fails(lab10.same_bytes, "", None, hint="not written yet")
        self.fails(lab10.same_bytes, "", 42, hint="expected a function")
        self.never_raises(lab10.same_bytes, "", l10_model_bytes)

    def test_floor(self):
        for st in STUDENTS:
            self.passes(lab10.floor, st, l10_fewest_ms)
        self.passes(lab10.floor, "", lambda r: sig6(l10_fewest_ms(r)))
        self.fails(lab10.floor, "", lambda r: l10_fewest_ms(r, heads=False), hint="that is one head")
        self.fails(lab10.floor, "", lambda r: l10_fewest_ms(r, Br_N=False), hint="single query block")
        self.fails(lab10.floor, "", lambda r: l10_fewest_ms(r, heads=False, Br_N=False), hint="one head, and the row's tiles")
        self.fails(lab10.floor, "", lambda r: l10_fewest_ms(r, scale=1), hint="not seconds")
        self.fails(lab10.floor, "", lambda r: l10_fewest_ms(r, with_l=False), hint="L (one fp32")
        self.fails(lab10.floor, "", lambda r: l10_fewest_ms(r, peak=4.8e12), hint="PEAK_BYTES")
        self.fails(lab10.floor, "", lambda r: l10_run(r, Br=r["N"], heads=int(r["heads"])).total / lab10.PEAK_BYTES * 1e3,
                   hint="elements")
        self.fails(lab10.floor, "", lambda r: (float(r["dram_read_B"]) + float(r["dram_write_B"])) / lab10.PEAK_BYTES * 1e3,
                   hint="Br = N and all heads")
        self.fails(lab10.floor, "", lambda r: str(l10_fewest_ms(r)), hint="remove the quotes")
        self.fails(lab10.floor, "", lambda r: None, hint="returned None")
        self.fails(lab10.floor, "", None, hint="not written yet")
        self.never_raises(lab10.floor, "", l10_fewest_ms)

    def test_speed(self):
        right = l10_speedups(self.rows)
        for st in STUDENTS:
            self.passes(lab10.speed, st, right)
        self.passes(lab10.speed, "", {d: list(v) for d, v in right.items()})
        self.passes(lab10.speed, "", {float(d): sig6(v) for d, v in right.items()})
        self.fails(lab10.speed, "", l10_speedups(self.rows, inverted=True), hint="inverted")
        self.fails(lab10.speed, "", l10_speedups(self.rows, swap=True), hint="swapped")
        self.fails(lab10.speed, "", {64: right[128], 128: right[64]}, hint="d = 128's speedups")
        t = lambda v, d: float(next(r for r in self.rows if r["version"] == v and int(r["d"]) == d)["duration_ns"])
        self.fails(lab10.speed, "", {d: (right[d][0], t("7", d) / t("12", d)) for d in right}, hint="not over v7")
        self.fails(lab10.speed, "", {str(d): v for d, v in right.items()}, hint="as ints")
        self.fails(lab10.speed, "", {float("nan"): right[64], 128: right[128]}, hint="as ints")
        self.fails(lab10.speed, "", {64: right[64]}, hint="one entry per recorded d")
        self.fails(lab10.speed, "", list(right.values()), hint="expected a dict")
        self.fails(lab10.speed, "", {d: v[0] for d, v in right.items()}, hint="list of 2 numbers")
        self.fails(lab10.speed, "", None, hint="not answered")
        self.never_raises(lab10.speed, "", right)

    def test_issue(self):
        for st in STUDENTS:
            self.passes(lab10.issue, st, l10_predicted, l10_parts)
        self.passes(lab10.issue, "", lambda r: sig6(l10_predicted(r)), lambda s, f: sig6(list(l10_parts(s, f))))
        for wrong, hint in ((lambda r: l10_predicted(r, schedulers=1), "4 schedulers"),
                            (lambda r: l10_predicted(r, pct=1), "is a percentage"),
                            (lambda r: l10_predicted(r, sms=1), "132 SMs issue at once"),
                            (lambda r: l10_predicted(r, sms=int(r["grid"])), "the grid's CTAs are not SMs"),
                            (l10_ms, "that is the measured time"),
                            (lambda r: l10_predicted(r, scale=1), "not seconds"),
                            (lambda r: None, "returned None")):
            self.fails(lab10.issue, "", wrong, l10_parts, hint=hint)
        for wrong, hint in ((lambda s, f: l10_parts(f, s), "inverted"),
                            (lambda s, f: l10_parts(s, f)[::-1], "the order is"),
                            (lambda s, f: l10_parts(s, f, clock=False), "the clocks were read, not set"),
                            (lambda s, f: (1 / l10_parts(s, f)[0],) + l10_parts(s, f)[1:], "the slower version's over"),
                            (lambda s, f: l10_parts(s, f)[:2], "list of 3 numbers"),
                            (lambda s, f: None, "returned None")):
            self.fails(lab10.issue, "", l10_predicted, wrong, hint=hint)
        self.fails(lab10.issue, "", None, None, hint="predicted_ms is not written yet")
        self.fails(lab10.issue, "", None, None, hint="speedup_parts is not written yet")
        self.never_raises(lab10.issue, "", l10_predicted, l10_parts)

    def test_tensor(self):
        for st in STUDENTS:
            self.passes(lab10.tensor, st, l10_per_cycle, l10_share)
        self.passes(lab10.tensor, "", lambda r: sig6(l10_per_cycle(r)), lambda r: sig6(l10_share(r)))
        for wrong, hint in ((lambda r: l10_per_cycle(r, pct=1), "tensor_active_pct is a percentage"),
                            (lambda r: l10_per_cycle(r, sms=1), "per SM"),
                            (lambda r: l10_per_cycle(r, active=False), "is *active*"),
                            (lambda r: None, "returned None")):
            self.fails(lab10.tensor, "", wrong, l10_share, hint=hint)
        for wrong, hint in ((lambda r: l10_share(r, scale=100), "not a percentage"),
                            (lambda r: l10_share(r, peak=790e12), "lab 7's"),
                            (lambda r: float(r["tensor_active_pct"]) / 100, "active share"),
                            (lambda r: float(r["tflops"]) / 1000, "over PEAK_DENSE")):
            self.fails(lab10.tensor, "", l10_per_cycle, wrong, hint=hint)
        self.fails(lab10.tensor, "", None, None, hint="flop_per_tensor_cycle is not written yet")
        self.never_raises(lab10.tensor, "", l10_per_cycle, l10_share)

    def test_tflops_column_is_right_too(self):
        """The CSV's own tflops column over the peak in TFLOP/s is the same answer (6 digits)."""
        self.passes(lab10.tensor, "", l10_per_cycle, lambda r: float(r["tflops"]) / 989)

    def test_stalls(self):
        right = l10_drop(self.rows)
        for st in STUDENTS:
            self.passes(lab10.stalls, st, l10_tops, right)
        self.passes(lab10.stalls, "", lambda r: tuple(l10_tops(r)), sig6(right))
        self.passes(lab10.stalls, "", lambda r: l10_tops(r, prefix="stall_"), {float(d): v for d, v in right.items()})
        self.fails(lab10.stalls, "", lambda r: l10_tops(r, selected=True), right, hint="'selected' is the issue itself")
        self.fails(lab10.stalls, "", lambda r: l10_tops(r)[::-1], right, hint="largest first")
        self.fails(lab10.stalls, "", lambda r: l10_tops(r, reverse=False), right, hint="not the smallest")
        self.fails(lab10.stalls, "", lambda r: ["wait", "barrier"], right, hint="the two largest")
        self.fails(lab10.stalls, "", lambda r: l10_tops(r)[0], right, hint="list of 2 reason names")
        self.fails(lab10.stalls, "", lambda r: ["wait", "nope"], right, hint="not a stall_* column")
        self.fails(lab10.stalls, "", l10_tops, l10_drop(self.rows, per_inst=True), hint="per issued instruction")
        self.fails(lab10.stalls, "", l10_tops, l10_drop(self.rows, inverted=True), hint="inverted")
        self.fails(lab10.stalls, "", l10_tops, l10_drop(self.rows, swap_d=True), hint="that is d = ")
        self.fails(lab10.stalls, "", l10_tops, None, hint="barrier_drop is not answered yet")
        self.fails(lab10.stalls, "", None, right, hint="top_stalls is not written yet")
        self.never_raises(lab10.stalls, "", l10_tops, right)

    def test_without_the_recorded_data(self):
        """No recorded file: every check skips and names it."""
        right = l10_drop(self.rows)
        with tempfile.TemporaryDirectory() as tmp, mock.patch.object(fl, "data_dir", lambda: pathlib.Path(tmp)):
            for chk, args in ((lab10.same_bytes, (l10_model_bytes,)), (lab10.floor, (l10_fewest_ms,)),
                              (lab10.speed, ({64: (1, 1), 128: (1, 1)},)), (lab10.issue, (l10_predicted, l10_parts)),
                              (lab10.tensor, (l10_per_cycle, l10_share)), (lab10.stalls, (l10_tops, right))):
                self.assertIn("gpu_ncu_same_bytes.csv", chk.skipped("", *args) or "", chk.cid)
            self.assertEqual(lab10.answers(""), {})


class InstructorKey(unittest.TestCase):
    """python3 -m labkit answers STUDENT [LAB] (docs/labs/instructor.md): every lab prints, labs
    with recorded data say they have no per-student parameters, a bad lab or usage is exit 2."""

    def run_main(self, *argv):
        import contextlib
        import io

        from labkit import __main__ as key
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = key.main(list(argv))
        return rc, out.getvalue(), err.getvalue()

    def test_every_lab(self):
        from labkit import __main__ as key
        self.assertEqual(sorted(key.LABS, key=int), [str(k) for k in range(1, 11)])
        for lab in ("1", "6", "7", "8", "10"):
            rc, out, _ = self.run_main("answers", "ada", lab)
            self.assertEqual(rc, 0, lab)
            self.assertTrue(out.startswith(f"lab {lab}: "), out[:80])
            self.assertIn("answers" if lab != "8" else "optimize", out)
        self.assertIn("no per-student parameters", self.run_main("answers", "ada", "10")[1])

    def test_bad_usage(self):
        for argv in ((), ("answers",), ("answer", "ada"), ("answers", "ada", "11"), ("answers", "ada", "1", "x")):
            rc, out, err = self.run_main(*argv)
            self.assertEqual((rc, out), (2, ""), argv)
            self.assertIn("labkit answers", err)


if __name__ == "__main__":
    unittest.main()
