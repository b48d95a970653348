"""Lab 2 (counting HBM traffic): parameters, expected answers and checks.

The counts are the machine's (fl.run executes the schedule, count-only); the trace is the CLI's
(`flashlab trace`); the student's own flash2 runs on a compute machine, sealed (HBM reachable
only through load and store), and is compared with the reference (fl_ref_attention) and with
the project's flash2 tensor by tensor.
"""
import math
import random
from collections import Counter

import flashlab as fl

from flashlab import flmachine

from . import Wrong, attempt, check, for_students, function, mapping, rng, student_id, whole

HINTS = {
    "standard": {"Q": "Q_i is loaded once per row block (the blocks hold whole rows: Bd = d)",
                 "K": "K is re-read for every row block of Q: T_r = ceil(N / Br) times",
                 "V": "V is re-read for every row block of P: T_r times",
                 "O": "O is written once and never read",
                 "S": "S is written once by step 1 and read once by step 2",
                 "P": "P is written once by step 2 and read once by step 3"},
    "flash2": {"Q": "Q_i is loaded once, for its row block",
               "K": "every K_j is loaded once per row block: T_r = ceil(N / Br) times in all",
               "V": "every V_j is loaded once per row block, like K_j",
               "O": "O_i is written once, after its row block's inner loop; it is never read",
               "L": "L holds one number per row, written once"},
}


FORCED_M = 60000   # the SRAM of the cases with forced blocks: room for any of their tiles


def draw(g):
    """Sizes from g: 'cases' (N, d, M, Br, Bc) for the predictions (Br = Bc = 0: the schedule's own
    block rule; the last case forces blocks with Br != Bc, so that a swap shows), 'trace' (N, d, M)
    for the trace exercise, 'own' (N, d, M) for the student's flash2."""
    br = g.randrange(12, 40)
    bc = br + g.choice([-1, 1]) * g.randrange(5, 12)
    cases = [(g.randrange(200, 400), 16, g.randrange(1500, 5000), 0, 0),
             (g.randrange(401, 1200), 32, g.randrange(6000, 12000), 0, 0),
             (g.randrange(150, 400), g.choice([8, 16]), FORCED_M, br, bc)]
    return {"cases": cases, "trace": (g.randrange(64, 321, 8), 4, g.randrange(200, 1400)),
            "own": (g.randrange(100, 200), g.choice([8, 16]), g.randrange(1200, 3000))}


def params(student=""):
    """The student's sizes (draw); '' gives the handout's."""
    s = student_id(student)
    if not s:
        return {"cases": [(256, 16, 4096, 0, 0), (300, 16, 2000, 0, 0), (280, 8, FORCED_M, 24, 40)],
                "trace": (64, 8, 384), "own": (160, 16, 2000)}
    return draw(rng("lab2", s))


def _per_tile(events, algo, kind, tensor):
    c = Counter((e["tile_r"], e["tile_c"]) for e in events
                if e["algo"] == algo and e["event"] == kind and e["tensor"] == tensor)
    return set(c.values())


def _prediction_problems(algo, predict, cases):
    problems = []
    for N, d, M, Br, Bc in cases:
        r = fl.run(algo, N=N, d=d, M=M, Br=Br, Bc=Bc)
        what = f"{predict.__name__}({N}, {d}, {r.Br}, {r.Bc})"
        guess = mapping(what, attempt(what, predict, N, d, r.Br, r.Bc))
        for name, (rd, wr) in r.tensors.items():
            g = guess.get(name)
            if g is None:
                problems.append(f"N={N} d={d}: no prediction for tensor {name}")
                continue
            try:
                g = (whole(f"{name} reads", g[0]), whole(f"{name} writes", g[1])) if len(g) == 2 else None
            except (TypeError, KeyError):
                g = None
            if g is None:
                problems.append(f"N={N} d={d}: {name} must map to a pair (reads, writes)")
            elif g != (rd, wr):
                which = [w for w, a, b in (("reads", g[0], rd), ("writes", g[1], wr)) if a != b]
                swap = " (Br and Bc play different parts: which one counts the row blocks?)" if r.Br != r.Bc else ""
                problems.append(f"N={N} d={d} (Br={r.Br}, Bc={r.Bc}): {name} {' and '.join(which)} "
                                f"differ from the machine's count: {HINTS[algo][name]}{swap}")
        for name in set(guess) - set(r.tensors):
            problems.append(f"{algo} has no HBM tensor {name}")
        if problems:
            break
    return problems


@check("lab2.standard")
def standard(P, predict_standard):
    return _prediction_problems("standard", function("predict_standard", predict_standard), P["cases"])


@check("lab2.flash2")
def flash2(P, predict_flash2):
    return _prediction_problems("flash2", function("predict_flash2", predict_flash2), P["cases"])


TRACE_ANSWERS = {"flash2_K_loads": ("flash2", "load", "K"), "flash1_Q_loads": ("flash1", "load", "Q"),
                 "flash1_O_stores": ("flash1", "store", "O")}


@check("lab2.trace")
def trace(P, flash2_K_loads, flash1_Q_loads, flash1_O_stores):
    N, d, M = P["trace"]
    events = fl.trace("flash1,flash2", N=N, d=d, M=M)
    given = {"flash2_K_loads": flash2_K_loads, "flash1_Q_loads": flash1_Q_loads,
             "flash1_O_stores": flash1_O_stores}
    why = {"flash2_K_loads": "count the row blocks: each one streams every K tile past its Q_i",
           "flash1_Q_loads": "count the key blocks: each one streams every Q tile past its K_j, V_j",
           "flash1_O_stores": "once per key block, and once more: line 2 writes O = 0 to HBM first"}
    problems = []
    for name, (algo, kind, tensor) in TRACE_ANSWERS.items():
        seen = _per_tile(events, algo, kind, tensor)
        g = whole(name, given[name])
        if seen != {g}:
            problems.append(f"{name} = {g}: not what the trace shows; {why[name]}")
    return problems


# ----------------------------------------------------------------------------------------------
# Exercise 4: the student's flash2, computing and counting

def inputs(N, d, seed):
    """Q, K, V (N x d lists of rows), uniform in [-1, 1), from a seed."""
    g = random.Random(seed)
    return [[[g.uniform(-1, 1) for _ in range(d)] for _ in range(N)] for _ in range(3)]


def run_flash2(fn, N, d, M, Br, Bc, seed):
    """Runs fn(m, Q, K, V, O, L, N, d, Br, Bc) on a compute machine of capacity M with flash2's HBM
    tensors (Q, K, V, O: N x d; L: N x 1, fp32) and inputs from seed: (flmachine.Result, inputs).
    Wrong when fn raises or the machine refuses a call."""
    q, k, v = inputs(N, d, seed)
    try:
        r = flmachine.run(fn, M, {"Q": q, "K": k, "V": v}, {"O": (N, d), "L": (N, 1, 4)}, N, d, Br, Bc,
                          name="my_flash2")
    except fl.FlashlabError as e:
        raise Wrong(f"my_flash2 with Br = {Br}, Bc = {Bc}: the machine refused a call: {for_students(e)}")
    except Exception as e:
        raise Wrong(f"my_flash2 with Br = {Br}, Bc = {Bc} raised {type(e).__name__}: {e}")
    return r, (q, k, v)


def _rel(a, b):
    fa = [x for r in a for x in r]
    fb = [x for r in b for x in r]
    if any(math.isnan(x) for x in fa):
        return float("nan")
    return max(abs(x - y) for x, y in zip(fa, fb)) / max(max(abs(y) for y in fb), 1e-300)


def own_runs(P, seed):
    """The runs exercise 4 is checked on: (Br, Bc, M) with the square block that fits P's M, and
    non-square blocks (Br < Bc, and Br > Bc) on an SRAM of exactly their footprint."""
    N, d, M = P["own"]
    B = fl.run("flash2", N=N, d=d, M=M).Br
    g = random.Random(seed)
    a, b = g.randrange(max(1, B // 3), max(2, B)), min(N, g.randrange(B + 2, B + 12))
    return [(B, B, M)] + [(x, y, fl.footprint("flash2", d, x, y)) for x, y in ((a, b), (b, a))]


def flash2_problems(P, fn, seed):
    """What is wrong with fn as flash2, on P's sizes and inputs from seed."""
    N, d, _ = P["own"]
    for k, (Br, Bc, M) in enumerate(own_runs(P, seed)):
        ref = fl.run("flash2", N=N, d=d, M=M, Br=Br, Bc=Bc)
        r, (q, kk, v) = run_flash2(fn, N, d, M, Br, Bc, seed + k)
        O_ref, L_ref = fl.attention_ref(q, kk, v)
        problems = []
        for t, want in ref.tensors.items():
            got = r.counts.get(t)
            if got == want:
                continue
            rd, wr = got or (0, 0)
            if t == "O" and wr > want[1]:
                why = "O_i is written more than once: store it once per row block, after the inner loop"
            elif t in "KV" and rd > want[0] and Br != Bc and rd == N * d * -(-N // Bc):
                why = f"{t} is re-read once per block of Bc rows: the row blocks of Q are Br rows"
            elif t in "KV" and rd < want[0]:
                why = f"{t}_j must be loaded for every row block (flash2 keeps no K/V between row blocks)"
            elif rd > want[0] or wr > want[1]:
                why = "it moves more than flash2: is a tile loaded twice, or a full-size last block used?"
            else:
                why = "it moves less than flash2 does"
            problems.append(f"Br = {Br}, Bc = {Bc}: tensor {t}: your schedule moved (reads, writes) = {got}, "
                            f"not flash2's: {why}")
        if r.sram_peak != ref.sram_peak:
            problems.append(f"Br = {Br}, Bc = {Bc}: SRAM peak {r.sram_peak}, flash2's is {ref.sram_peak}: "
                            f"allocate flash2's buffers (Q_i, O_i: Br x d; K_j, V_j: Bc x d; S_ij: Br x Bc; "
                            f"m_i, l_i: Br x 1)")
        e = _rel(r.outputs["O"], O_ref)
        if not e <= 1e-12:
            problems.append(f"Br = {Br}, Bc = {Bc}: O differs from the exact reference (relative error {e:.2e} > "
                            f"1e-12): " + ("NaN: look for exp of -inf - (-inf)" if math.isnan(e) else
                                           "scale the scores by 1/sqrt(d), rescale O_i and l_i when the row "
                                           "maximum grows (max_rescale), and divide by l_i at the end"))
        eL = _rel([[x[0] for x in r.outputs["L"]]], [L_ref])
        if not eL <= 1e-12:
            problems.append(f"Br = {Br}, Bc = {Bc}: L differs from the reference's logsumexp (relative error "
                            f"{eL:.2e}): L_i = m_i + log(l_i) (lse)")
        if problems:
            return problems
    return []


@check("lab2.own-schedule")
def own_schedule(P, B, my_flash2, seed=None):
    """B must be flash2's square block for P's M; my_flash2 is run with it and with non-square
    blocks (seed: the grader's inputs; by default inputs of P's own)."""
    N, d, M = P["own"]
    B = whole("B", B)
    fn = function("my_flash2", my_flash2)
    want = fl.run("flash2", N=N, d=d, M=M).Br
    if B != want:
        fits = B >= 1 and fl.footprint("flash2", d, B, B) <= M
        return [f"B = {B}: " + ("the buffers of a larger block still fit in M" if fits else
                                "flash2's buffers for that block do not fit in M (eq. F2)")]
    return flash2_problems(P, fn, seed if seed is not None else rng("lab2-inputs", repr(P)).randrange(1 << 30))
