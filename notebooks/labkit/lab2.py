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

from . import Wrong, attempt, check, function, mapping, rng, student_id, whole

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


def params(student=""):
    """Sizes for the student: 'cases' (N, d, M) for the predictions, 'trace' (N, d, M) for the
    trace exercise, 'own' (N, d, M) for the student's flash2."""
    s = student_id(student)
    if not s:
        return {"cases": [(256, 16, 4096), (300, 16, 2000), (1000, 32, 8192)],
                "trace": (64, 8, 384), "own": (160, 16, 2000)}
    g = rng("lab2", s)
    cases = [(g.randrange(200, 400), 16, g.randrange(1500, 5000)),
             (g.randrange(401, 1200), 32, g.randrange(6000, 12000)),
             (g.randrange(100, 200), 8, g.randrange(600, 1500))]
    return {"cases": cases, "trace": (g.choice([48, 56, 64, 72, 80]), 8, g.choice([320, 384, 448])),
            "own": (g.randrange(100, 200), g.choice([8, 16]), g.randrange(1200, 3000))}


def _per_tile(events, algo, kind, tensor):
    c = Counter((e["tile_r"], e["tile_c"]) for e in events
                if e["algo"] == algo and e["event"] == kind and e["tensor"] == tensor)
    return set(c.values())


def answers(student=""):
    """Expected values: the machine's counts for the cases, the trace's per-tile numbers, and the
    block size of the student's flash2."""
    p = params(student)
    N, d, M = p["trace"]
    ev = fl.trace("flash1,flash2", N=N, d=d, M=M)
    per = {k: _per_tile(ev, *spec) for k, spec in TRACE_ANSWERS.items()}
    N2, d2, M2 = p["own"]
    own = fl.run("flash2", N=N2, d=d2, M=M2)
    return {"cases": {algo: [fl.run(algo, N=n, d=dd, M=m).tensors for n, dd, m in p["cases"]]
                      for algo in ("standard", "flash2")},
            "trace": {k: min(v) for k, v in per.items()}, "trace_uniform": all(len(v) == 1 for v in per.values()),
            "B": own.Br, "own_counts": own.tensors}


def _prediction_problems(algo, predict, cases):
    problems = []
    for N, d, M in cases:
        r = fl.run(algo, N=N, d=d, M=M)
        guess = attempt(f"{predict.__name__}({N}, {d}, {r.Br}, {r.Bc})", predict, N, d, r.Br, r.Bc)
        guess = mapping(f"{predict.__name__}({N}, {d}, {r.Br}, {r.Bc})", guess)
        for name, (rd, wr) in r.tensors.items():
            g = guess.get(name)
            if g is None:
                problems.append(f"N={N} d={d} M={M}: no prediction for tensor {name}")
                continue
            try:
                g = (whole(f"{name} reads", g[0]), whole(f"{name} writes", g[1])) if len(g) == 2 else None
            except (TypeError, KeyError):
                g = None
            if g is None:
                problems.append(f"N={N} d={d} M={M}: {name} must map to a pair (reads, writes)")
            elif g != (rd, wr):
                which = [w for w, a, b in (("reads", g[0], rd), ("writes", g[1], wr)) if a != b]
                problems.append(f"N={N} d={d} M={M} (Br={r.Br}, Bc={r.Bc}): {name} {' and '.join(which)} "
                                f"differ from the machine's count: {HINTS[algo][name]}")
        for name in set(guess) - set(r.tensors):
            problems.append(f"{algo} has no HBM tensor {name}")
        if problems:
            break
    return problems


@check("lab2.standard")
def standard(student, predict_standard):
    return _prediction_problems("standard", function("predict_standard", predict_standard),
                                params(student)["cases"])


@check("lab2.flash2")
def flash2(student, predict_flash2):
    return _prediction_problems("flash2", function("predict_flash2", predict_flash2),
                                params(student)["cases"])


TRACE_ANSWERS = {"flash2_K_loads": ("flash2", "load", "K"), "flash1_Q_loads": ("flash1", "load", "Q"),
                 "flash1_O_stores": ("flash1", "store", "O")}


@check("lab2.trace")
def trace(student, flash2_K_loads, flash1_Q_loads, flash1_O_stores):
    N, d, M = params(student)["trace"]
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


def flash2_machine(N, d, M, seed):
    """A compute machine with flash2's HBM tensors Q, K, V, O (N x d) and L (N x 1, fp32), the
    inputs written; returns (machine, tensors, inputs)."""
    m = fl.Machine(M=M, mode="compute", name="my_flash2")
    T = {t: m.tensor(t, N, d) for t in "QKVO"}
    T["L"] = m.tensor("L", N, 1, elem_bytes=4)
    q, k, v = inputs(N, d, seed)
    T["Q"].write(q)
    T["K"].write(k)
    T["V"].write(v)
    return m, T, (q, k, v)


def run_flash2(fn, N, d, M, B, seed=1, trace=None):
    """Runs fn(m, Q, K, V, O, L, N, d, B) sealed on flash2_machine; returns (O, L, counts, peak,
    events)."""
    m, T, _ = flash2_machine(N, d, M, seed)
    events = []
    m.set_trace(lambda e: (events.append(e), trace and trace(m, e)))
    try:
        with m.sealed():
            attempt("my_flash2", fn, m, T["Q"], T["K"], T["V"], T["O"], T["L"], N, d, B)
        return T["O"].read(), [r[0] for r in T["L"].read()], m.counts(), m.sram_peak, events
    finally:
        m.close()


def _rel(a, b):
    fa = [x for r in a for x in r]
    fb = [x for r in b for x in r]
    if any(math.isnan(x) for x in fa):
        return float("nan")
    return max(abs(x - y) for x, y in zip(fa, fb)) / max(max(abs(y) for y in fb), 1e-300)


@check("lab2.own-schedule")
def own_schedule(student, B, my_flash2):
    N, d, M = params(student)["own"]
    ref = fl.run("flash2", N=N, d=d, M=M)
    B = whole("B", B)
    fn = function("my_flash2", my_flash2)
    if B != ref.Br:
        fits = fl.footprint("flash2", d, B, B) <= M if B >= 1 else False
        return [f"B = {B}: " + ("the buffers of a larger block still fit in M" if fits else
                                "flash2's buffers for that block do not fit in M (eq. F2)")]
    seed = rng("lab2-inputs", student_id(student)).randrange(1 << 30)
    O, L, counts, peak, _ = run_flash2(fn, N, d, M, B, seed=seed)
    q, k, v = inputs(N, d, seed)
    O_ref, L_ref = fl.attention_ref(q, k, v)
    problems = []
    for t, want in ref.tensors.items():
        got = counts.get(t)
        if got == want:
            continue
        rd, wr = got
        if t == "O" and wr > want[1]:
            why = "O_i is written more than once: store it once per row block, after the inner loop"
        elif t in "KV" and rd < want[0]:
            why = f"{t}_j must be loaded for every row block (flash2 keeps no K/V between row blocks)"
        elif rd > want[0] or wr > want[1]:
            why = "it moves more than flash2: is a tile loaded twice, or a full-size last block used?"
        else:
            why = "it moves less than flash2 does"
        problems.append(f"tensor {t}: your schedule moved (reads, writes) = {got}, not flash2's: {why}")
    if peak != ref.sram_peak:
        problems.append(f"SRAM peak {peak}, flash2's is {ref.sram_peak}: allocate flash2's buffers "
                        f"(Q_i, O_i, K_j, V_j, S_ij, m_i, l_i)")
    e = _rel(O, O_ref)
    if not e <= 1e-12:
        problems.append(f"O differs from the exact reference (relative error {e:.2e} > 1e-12): "
                        + ("NaN: a -inf - (-inf) or 0/0" if math.isnan(e) else
                           "scale the scores by 1/sqrt(d), rescale O_i and l_i by e^(m_old - m_new) "
                           "when the row maximum grows, and divide by l_i at the end"))
    eL = _rel([L], [L_ref])
    if not eL <= 1e-12:
        problems.append(f"L differs from the reference's logsumexp (relative error {eL:.2e}): "
                        f"L_i = m_i + log(l_i)")
    return problems
