"""Lab 5 (backward and recomputation): checks against the machine's backward runs (fl.run with
pass_='bwd' and 'fwd+bwd') and a trace of what each backward reads."""
import flashlab as fl

from . import Wrong, attempt, boolean, check, function, mapping, near, number, rng, student_id, whole

KEPT = ("Q", "K", "V", "O", "dO")


def params(student=""):
    """'cases' (N, d, M) for exercise 1, 'saved' (N, d) for exercise 2, 'traffic' (N, d, M) for 3."""
    s = student_id(student)
    if not s:
        return {"cases": [(1000, 64, 98304), (512, 32, 20000), (300, 16, 5000)],
                "saved": (1024, 64), "traffic": (4096, 64, 98304)}
    g = rng("lab5", s)
    return {"cases": [(g.randrange(600, 1200), 64, 98304), (g.randrange(300, 600), 32, g.randrange(12000, 30000)),
                      (g.randrange(100, 300), 16, g.randrange(3000, 8000))],
            "saved": (g.choice([512, 768, 1024, 2048]), g.choice([32, 64, 128])),
            "traffic": (g.choice([2048, 4096, 8192]), 64, 98304)}


def saved_by(algo, N, d):
    """Tensors the backward reads and never writes, beyond Q, K, V, O, dO, with their sizes in
    elements (extents seen in the trace of the run)."""
    extent = {}

    def ev(e):
        if e.tensor:
            r, c = extent.get(e.tensor, (0, 0))
            extent[e.tensor] = (max(r, e.r0 + e.nr), max(c, e.c0 + e.nc))
    r = fl.run(algo, N=N, d=d, M=98304, pass_="bwd", trace=ev)
    return {t: extent[t][0] * extent[t][1] for t, (rd, wr) in r.tensors.items()
            if rd > 0 and wr == 0 and t not in KEPT}


def answers(student=""):
    p = params(student)
    N, d, M = p["traffic"]
    s = fl.run("standard", N=N, d=d, M=M, pass_="fwd+bwd")
    f = fl.run("flash2", N=N, d=d, M=M, pass_="fwd+bwd")
    return {"saved_standard": saved_by("standard", *p["saved"]), "saved_flash2": saved_by("flash2", *p["saved"]),
            "ratio": f.total / s.total, "recompute_adds_traffic": f.total > s.total}


@check("lab5.flash2-bwd")
def flash2_bwd(student, predict_flash2_bwd):
    fn = function("predict_flash2_bwd", predict_flash2_bwd)
    for N, d, M in params(student)["cases"]:
        r = fl.run("flash2", N=N, d=d, M=M, pass_="bwd")
        what = f"predict_flash2_bwd({N}, {d}, {r.bwd_Br}, {r.bwd_Bc})"
        guess = mapping(what, attempt(what, fn, N, d, r.bwd_Br, r.bwd_Bc))
        problems = []
        for t, want in r.tensors.items():
            g = guess.get(t)
            try:
                g = (whole(f"{t} reads", g[0]), whole(f"{t} writes", g[1]))
            except (TypeError, IndexError, KeyError):
                problems.append(f"{what}: {t} must map to a pair (reads, writes)")
                continue
            if g != want:
                which = [w for w, a, b in (("reads", g[0], want[0]), ("writes", g[1], want[1])) if a != b]
                problems.append(f"N={N} d={d} (Br={r.bwd_Br}, Bc={r.bwd_Bc}): {t} {' and '.join(which)} "
                                f"differ from the machine's count")
        if problems:
            return problems
    return []


@check("lab5.saved")
def saved(student, saved_standard, saved_flash2):
    N, d = params(student)["saved"]
    problems = []
    for name, mine, algo in (("saved_standard", saved_standard, "standard"),
                             ("saved_flash2", saved_flash2, "flash2")):
        mine = mapping(name, mine)
        truth = saved_by(algo, N, d)
        if set(mine) != set(truth):
            problems.append(f"{name}: you name {sorted(mine)}; {algo}'s backward reads, without "
                            f"writing, {len(truth)} other tensor(s) than {', '.join(KEPT)}")
            continue
        for t in truth:
            if whole(f"{name}[{t!r}]", mine[t]) != truth[t]:
                problems.append(f"{name}[{t!r}] = {mine[t]} elements at N = {N}: check its shape")
    return problems


@check("lab5.traffic")
def traffic(student, ratio, recompute_adds_traffic):
    N, d, M = params(student)["traffic"]
    s = fl.run("standard", N=N, d=d, M=M, pass_="fwd+bwd")
    f = fl.run("flash2", N=N, d=d, M=M, pass_="fwd+bwd")
    problems = []
    x = number("ratio", ratio)
    if not near(x, f.total / s.total):
        why = ("that is standard over flash2: divide flash2's total by standard's" if near(x, s.total / f.total)
               else "that is the forward pass alone: use pass_='fwd+bwd'" if near(x, f.fwd_total / s.fwd_total)
               else "divide flash2's fwd+bwd total by standard's")
        problems.append(f"ratio = {x} (N = {N}): {why}")
    if boolean("recompute_adds_traffic", recompute_adds_traffic) != (f.total > s.total):
        problems.append("recompute_adds_traffic: compare the two totals again")
    return problems
