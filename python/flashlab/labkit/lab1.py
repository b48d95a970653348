"""Lab 1 (online softmax by hand): parameters and checks.

What a check compares with comes from the C library: fl_osm_step (fl.osm_step) for the states and
factors, fl_ref_softmax_row (fl.softmax_row) for outputs, and the machine (flmachine.run) for the
student's tiled schedule, whose trace is read for the tiles it loads.
"""
import math

import flashlab as fl
from flashlab import flmachine

from . import Wrong, check, for_students, function, near, near_list, number, numbers_list, rng, student_id

NEG = float("-inf")
EXAMPLE_B = ([1.0, 2.0, 3.0, 0.0], [[10.0, 0.0], [0.0, 10.0], [5.0, 5.0], [9.0, 1.0]])
EXAMPLE_A = ([2.0, 1.0, 4.0, 3.0], [[1.0, 0.0], [0.0, 1.0], [2.0, 0.0], [0.0, 2.0]])


def _score(g, lo, hi):
    return round(g.uniform(lo, hi), 2)


def draw(g):
    """A student's rows from g: 'row' (scores, values) for exercises 1-2 (two tiles of two, the
    second with a larger maximum) and 'stream' for exercise 3 (tiles of one, one or two new maxima
    after the first score)."""
    t1 = [_score(g, -2, 2), _score(g, -2, 2)]
    while t1[0] == t1[1]:
        t1[1] = _score(g, -2, 2)
    big = round(max(t1) + g.uniform(0.25, 2.5), 2)
    t2 = [big, _score(g, -2.5, big - 0.01)]
    g.shuffle(t2)
    vals = [[round(g.uniform(0, 10), 1), round(g.uniform(0, 10), 1)] for _ in range(4)]
    while True:
        st = [_score(g, -2, 5) for _ in range(4)]
        news = sum(1 for k in range(1, 4) if st[k] > max(st[:k]))
        if len(set(st)) == 4 and 1 <= news <= 2:
            break
    svals = [[round(g.uniform(0, 3), 1), round(g.uniform(0, 3), 1)] for _ in range(4)]
    return {"row": (t1 + t2, vals), "stream": (st, svals)}


def params(student=""):
    """The student's rows (draw); '' gives the handout's: worked example B's row for exercises 1-2,
    worked example A's for exercise 3."""
    s = student_id(student)
    return {"row": EXAMPLE_B, "stream": EXAMPLE_A} if not s else draw(rng("lab1", s))


def _state_after_tile_one(P):
    scores, values = P["row"]
    st = fl.OsmState(2)
    fl.osm_step(st, scores[0:2], values[0:2])
    return st


@check("lab1.tile-one")
def tile_one(P, m1, l1, u1):
    scores, values = P["row"]
    st = _state_after_tile_one(P)
    problems = []
    m1 = number("m1", m1)
    if not near(m1, st.m):
        problems.append(f"m1 = {m1}: " + ("that is the maximum of the whole row; the state has seen "
                                          "only tile one" if m1 == max(scores) else
                                          "m is the largest score seen so far (tile one only)"))
    l1 = number("l1", l1)
    raw = sum(math.exp(s) for s in scores[0:2])
    if not near(l1, st.l):
        problems.append(f"l1 = {l1}: " + ("that is the sum of e^s; l is the sum of e^(s - m1), shifted "
                                          "by the running maximum" if near(l1, raw) else
                                          "l is the sum over tile one of e^(s - m1)"))
    u1 = numbers_list("u1", u1, 2)
    if not near_list(u1, st.u):
        normed = [x / st.l for x in st.u]
        unshifted = [sum(math.exp(s) * v[c] for s, v in zip(scores[0:2], values[0:2])) for c in range(2)]
        why = ("that is u divided by l: u is NOT yet divided by l1 (that happens once, at the end)"
               if near_list(u1, normed) else
               "that uses e^s; u is sum_j e^(s_j - m1) * v_j" if near_list(u1, unshifted) else
               "u is sum_j e^(s_j - m1) * v_j over tile one, not yet divided by l1")
        problems.append(f"u1 = {u1}: {why}")
    return problems


@check("lab1.tile-two")
def tile_two(P, m1, l1, u1, a2, m2, l2, u2, O):
    """Exercise 2 is checked from the student's own tile-one state (if it is a state), as the
    handout asks; O must then equal u2 / l2 of that state."""
    scores, values = P["row"]
    m1, l1, u1 = number("m1", m1), number("l1", l1), numbers_list("u1", u1, 2)
    if not (math.isfinite(m1) and math.isfinite(l1) and l1 > 0):
        return [f"m1 = {m1}, l1 = {l1}: after tile one the state has a finite maximum and a "
                f"positive sum l1 of e^(s - m1); fix exercise 1 first"]
    st = fl.OsmState(2, m=m1, l=l1, u=u1)
    a_c = fl.osm_step(st, scores[2:4], values[2:4])
    out = fl.osm_finish(st)
    problems = []
    a2 = number("a2", a2)
    if not near(a2, a_c):
        why = ("that is e^(m_new - m_old); the factor is e^(m_old - m_new), at most 1"
               if a_c > 0 and near(a2, 1 / a_c) else
               "the maximum changed, so the old state must be rescaled" if a2 == 1 else
               "the factor is e^(m1 - m2)")
        problems.append(f"a2 = {a2}: {why}")
    m2 = number("m2", m2)
    if not near(m2, st.m):
        problems.append(f"m2 = {m2}: the running maximum after both tiles")
    l2 = number("l2", l2)
    new = sum(math.exp(s - st.m) for s in scores[2:4])
    if not near(l2, st.l):
        problems.append(f"l2 = {l2}: " + ("the old l1 was added without rescaling: multiply it by a2 first"
                                          if near(l2, l1 + new) else
                                          "l2 = a2 * l1 + the new tile's sum of e^(s - m2)"))
    u2 = numbers_list("u2", u2, 2)
    if not near_list(u2, st.u):
        norel = [u1[c] + sum(math.exp(s - st.m) * v[c] for s, v in zip(scores[2:4], values[2:4]))
                 for c in range(2)]
        why = ("that is O = u2 / l2: u2 is the state before that division" if near_list(u2, out) else
               "the old u1 was added without rescaling: multiply it by a2 too (the same factor as l)"
               if near_list(u2, norel) else
               "u2 = a2 * u1 + the new tile's sum of e^(s - m2) * v")
        problems.append(f"u2 = {u2}: {why}")
    O = numbers_list("O", O, 2)
    if not near_list(O, out):
        why = ("that is u2 itself: divide by l2 at the end" if near_list(O, st.u) else
               "O = u2 / l2")
        problems.append(f"O = {O}: {why}")
    elif not problems and not near_list(O, fl.softmax_row(scores, values)):
        problems.append("your steps are right from your tile-one state, but that state is off "
                        "(exercise 1), so O is not softmax(scores) @ values")
    return problems


@check("lab1.rescales")
def rescales(P, factors):
    scores, values = P["stream"]
    factors = numbers_list("factors", factors, len(scores))
    st = fl.OsmState(2)
    problems = []
    for k, (f, s, v) in enumerate(zip(factors, scores, values)):
        want = fl.osm_step(st, [s], [v])
        if near(f, want) or (want == 0 and abs(f) < 1e-12):
            continue
        if k == 0:
            why = "the first tile finds an empty state (m = -inf): C returns e^(-inf) = 0"
        elif s > max(scores[:k]):
            why = "this score is a new maximum: the old state is rescaled by e^(m_old - m_new) < 1"
        else:
            why = "this score is not a new maximum: nothing is rescaled, the factor is 1"
        problems.append(f"tile {k + 1} (score {s}): you said {f}; {why}")
    return problems


# ----------------------------------------------------------------------------------------------
# Exercise 4: the student's online softmax as a schedule on the machine

def row_capacity(dv, tiles):
    """M of exercise 4: a tile of scores, its value rows, one output row, and the row's m and l
    (one element each): T + T dv + dv + 2 for the largest tile T."""
    T = max(tiles)
    return T + T * dv + dv + 2


def run_row(fn, scores, values, tiles):
    """Runs fn(m, S, V, O, tiles) on a compute machine of row_capacity holding one row: S (1 x n
    scores), V (n x dv), O (1 x dv).  Returns the flmachine.Result; Wrong when fn raises or the
    machine refuses a call."""
    dv = len(values[0])
    try:
        return flmachine.run(fn, row_capacity(dv, tiles), {"S": [list(scores)], "V": values}, {"O": (1, dv)},
                             list(tiles), name="my_online_softmax")
    except fl.FlashlabError as e:
        raise Wrong(f"the machine refused a call: {for_students(e)}")
    except Exception as e:
        raise Wrong(f"my_online_softmax raised {type(e).__name__}: {e}")


def tiling_problems(r, tiles, n):
    """What the trace says about the order of the tiles: S and V each loaded once per tile, in
    the tiling's order, and O stored once, after the last load."""
    want, c0 = [], 0
    for t in tiles:
        want.append((c0, t))
        c0 += t
    events = r.events
    s_loads = [(e.c0, e.nc) for e in events if e.kind == "load" and e.tensor == "S"]
    v_loads = [(e.r0, e.nr) for e in events if e.kind == "load" and e.tensor == "V"]
    stores = [i for i, e in enumerate(events) if e.kind == "store" and e.tensor == "O"]
    last_load = max([i for i, e in enumerate(events) if e.kind == "load"], default=-1)
    problems = []
    if s_loads != want:
        if len(s_loads) == 2 * len(want) and sorted(s_loads) == sorted(want * 2):
            problems.append("every tile of S is loaded twice: that is a two-pass softmax (a pass for the "
                            "maximum, a pass for the sums); the online recurrence reads each score once")
        elif len(s_loads) == 1 and s_loads[0] == (0, n) and len(want) > 1:
            problems.append("S is loaded as one tile: stream it in the tiles of tile_sizes")
        else:
            problems.append(f"S tiles loaded (start, size) = {s_loads}; the tiling asks for {want}, "
                            f"in that order, once each")
    if v_loads != want:
        problems.append(f"V tiles loaded (start row, rows) = {v_loads}; the tiling asks for {want}, "
                        f"in that order, once each")
    if len(stores) != 1:
        problems.append(f"O is stored {len(stores)} times: store it once, at the end")
    elif stores[0] < last_load:
        problems.append("O is stored before the last tile is loaded")
    return problems


ROW_CASES = [
    ("two tiles of two", EXAMPLE_B[0], EXAMPLE_B[1], [2, 2],
     "tile two has a larger maximum: rescale l and O by e^(m_old - m_new) before adding it (max_rescale)"),
    ("tiles 1 + 3", EXAMPLE_B[0], EXAMPLE_B[1], [1, 3],
     "a later tile has a larger maximum: rescale l and O by e^(m_old - m_new) before adding it"),
    ("huge scores", [1000.0, 1001.0, 999.0], [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], [1, 2],
     "exp(1000) overflows: take every exponent relative to the running maximum (exp_diff)"),
    ("masked first tile", [NEG, NEG, 0.5, 2.0], EXAMPLE_A[1], [2, 2],
     "a tile of only -inf scores contributes nothing"),
    ("masked middle key", [0.25, NEG, 1.5], [[1.0], [100.0], [-1.0]], [2, 1],
     "a -inf score contributes e^(-inf) = 0"),
    ("fully masked row", [NEG, NEG, NEG], [[1.0], [2.0], [3.0]], [1, 2],
     "a row with no kept key outputs zeros (rule M0: div_rows gives 0 where l = 0)"),
    ("uneven 3 + 1 + 4", [0.3, -1.2, 2.5, 0.0, 1.1, -0.7, 2.4, 0.9],
     [[float(k), 8.0 - k, 0.5 * k] for k in range(8)], [3, 1, 4],
     "when a later tile has a larger maximum, rescale both l and O by e^(m_old - m_new)"),
]


def random_rows(g, k=2):
    """k rows of g's: 5-9 random scores in tiles of 1-3, two value columns."""
    cases = []
    for i in range(k):
        n = g.randrange(5, 10)
        tiles = []
        while sum(tiles) < n:
            tiles.append(min(g.randrange(1, 4), n - sum(tiles)))
        s = [round(g.uniform(-3, 3), 3) for _ in range(n)]
        v = [[round(g.uniform(-2, 2), 3) for _ in range(2)] for _ in range(n)]
        cases.append((f"row {i + 1} of random scores, tiles {'+'.join(map(str, tiles))}", s, v, tiles,
                      "when a later tile has a larger maximum, rescale both l and O"))
    return cases


@check("lab1.own-tiling")
def own_tiling(P, fn, cases=None):
    """fn on the fixed rows and on rows of P's own (cases: the grader's, instead)."""
    fn = function("my_online_softmax", fn)
    problems = []
    for name, s, v, tiles, hint in (cases if cases is not None else ROW_CASES + random_rows(rng("lab1-rows", repr(P)))):
        try:
            r = run_row(fn, s, v, tiles)
        except Wrong as w:
            problems.append(f"{name}: {w}")
            break
        order = tiling_problems(r, tiles, len(s))
        if order:
            problems += [f"{name}: {p}" for p in order]
            break
        got, want = r.outputs["O"][0], fl.softmax_row(s, v)
        if any(math.isnan(x) for x in got):
            problems.append(f"{name}: O = {got} holds NaN: {hint}")
        elif not all(abs(a - b) <= 1e-12 * max(1.0, abs(b)) for a, b in zip(got, want)):
            problems.append(f"{name}: O = {got}, softmax(scores) @ values = {want} ({hint})")
            if "max_rescale" not in r.ops:
                problems.append("the schedule never calls max_rescale: the running maximum is never "
                                "updated, nor l and O rescaled when it grows")
    return problems
