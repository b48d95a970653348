"""Lab 5 (backward and recomputation): parameters and checks against the machine's backward runs (fl.run with
pass_='bwd' and 'fwd+bwd') and a trace of what each backward reads; the figure of both passes'
traffic against M (figures/lab5_passes.gp) drawn from the student's sweep."""
import flashlab as fl

from . import Wrong, attempt, boolean, check, function, mapping, near, number, rng, student_id, whole
from . import figures

KEPT = ("Q", "K", "V", "O", "dO")
ALGOS = ("standard", "flash2")


FORCED_M = 60000   # the SRAM of the cases with forced blocks: room for any of their tiles


def draw(g):
    """Sizes from g: 'cases' (N, d, M, Br, Bc) for exercise 1 (the last forces the backward's blocks
    with Br != Bc), 'saved' (N, d) for exercise 2, 'traffic' (N, d, M) for 3, 'sweep' (N, d, M0)
    for exercise 4 (over M0 * 2^k, k = 0..10)."""
    br = g.randrange(12, 48)
    bc = br + g.choice([-1, 1]) * g.randrange(5, 12)
    return {"cases": [(g.randrange(600, 1200), 64, 98304, 0, 0),
                      (g.randrange(300, 600), 32, g.randrange(12000, 30000), 0, 0),
                      (g.randrange(150, 400), g.choice([8, 16]), FORCED_M, br, bc)],
            "saved": (g.randrange(256, 8193, 64), g.choice([32, 64, 128])),
            "traffic": (g.randrange(1024, 8193, 128), g.choice([32, 64, 128]), g.randrange(16384, 131073, 2048)),
            "sweep": (g.randrange(512, 1537, 32), g.choice([32, 64, 128]), g.randrange(1024, 2048))}


def params(student=""):
    """The student's sizes (draw); '' gives the handout's."""
    s = student_id(student)
    if not s:
        return {"cases": [(1000, 64, 98304, 0, 0), (512, 32, 20000, 0, 0), (300, 16, FORCED_M, 16, 40)],
                "saved": (1024, 64), "traffic": (4096, 64, 98304), "sweep": (1024, 64, 1024)}
    return draw(rng("lab5", s))


def grid(M0):
    """Exercise 4's M: M0 * 2^k, k = 0..10."""
    return [M0 * 2 ** k for k in range(11)]


def _sweep(N, d, Ms):
    """{algo: [(forward total, backward total) for M in Ms]} of standard and flash2, both passes
    on one machine (fl.run with pass_='fwd+bwd')."""
    out = {}
    for a in ALGOS:
        out[a] = []
        for M in Ms:
            r = fl.run(a, N=N, d=d, M=M, pass_="fwd+bwd")
            out[a].append((r.fwd_total, r.bwd_total))
    return out


def _crossing(passes, Ms, part=sum):
    """The smallest M of Ms at which flash2's part(fwd, bwd) is below standard's (None if none)."""
    for M, s, f in zip(Ms, passes["standard"], passes["flash2"]):
        if part(f) < part(s):
            return M
    return None


@check("lab5.flash2-bwd")
def flash2_bwd(P, predict_flash2_bwd, extra=()):
    fn = function("predict_flash2_bwd", predict_flash2_bwd)
    for N, d, M, Br, Bc in list(P["cases"]) + list(extra):
        r = fl.run("flash2", N=N, d=d, M=M, pass_="bwd", Br=Br, Bc=Bc)
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
                swap = " (Br and Bc play different parts: which one counts the key blocks?)" if r.bwd_Br != r.bwd_Bc else ""
                problems.append(f"N={N} d={d} (Br={r.bwd_Br}, Bc={r.bwd_Bc}): {t} {' and '.join(which)} "
                                f"differ from the machine's count{swap}")
        if problems:
            return problems
    return []


@check("lab5.saved")
def saved(P, saved_standard, saved_flash2):
    """Each schedule's backward, traced: the tensors it reads and never writes beyond Q, K, V, O,
    dO, and their sizes (the extents its tiles cover)."""
    N, d = P["saved"]
    problems = []
    for name, mine, algo in (("saved_standard", saved_standard, "standard"),
                             ("saved_flash2", saved_flash2, "flash2")):
        mine = mapping(name, mine)
        extent = {}

        def ev(e):
            if e.tensor:
                r, c = extent.get(e.tensor, (0, 0))
                extent[e.tensor] = (max(r, e.r0 + e.nr), max(c, e.c0 + e.nc))
        run = fl.run(algo, N=N, d=d, M=98304, pass_="bwd", trace=ev)
        kept = {t for t, (rd, wr) in run.tensors.items() if rd > 0 and wr == 0 and t not in KEPT}
        if set(mine) != kept:
            problems.append(f"{name}: you name {sorted(mine)}; {algo}'s backward reads, without "
                            f"writing, {len(kept)} other tensor(s) than {', '.join(KEPT)}")
            continue
        for t in kept:
            if whole(f"{name}[{t!r}]", mine[t]) != extent[t][0] * extent[t][1]:
                problems.append(f"{name}[{t!r}] = {mine[t]} elements at N = {N}: check its shape")
    return problems


@check("lab5.traffic")
def traffic(P, ratio, recompute_adds_traffic):
    N, d, M = P["traffic"]
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


def _pairs(passes, MS):
    """The student's sweep as {algo: [(fwd, bwd) as ints]}, or Wrong saying what was expected."""
    passes = mapping("passes", passes)
    out = {}
    for a in ALGOS:
        if a not in passes:
            raise Wrong(f"passes: expected the keys {', '.join(map(repr, ALGOS))}; {a!r} is missing")
        v = passes[a]
        if isinstance(v, (str, bytes, dict)) or not hasattr(v, "__iter__"):
            raise Wrong(f"passes[{a!r}]: expected a list of (fwd, bwd) pairs, one per M of Ms")
        v = list(v)
        if len(v) != len(MS):
            raise Wrong(f"passes[{a!r}]: {len(v)} entries; expected one (fwd, bwd) pair per M of Ms ({len(MS)})")
        try:
            out[a] = [(whole(f"passes[{a!r}] fwd", x[0]), whole(f"passes[{a!r}] bwd", x[1])) for x in v]
        except (TypeError, IndexError, KeyError):
            raise Wrong(f"passes[{a!r}]: each entry must be a pair (fwd_total, bwd_total)")
    return out


@check("lab5.sweep")
def sweep_check(P, passes, M_cross):
    N, d, M0 = P["sweep"]
    MS = grid(M0)
    mine = _pairs(passes, MS)
    truth = _sweep(N, d, MS)
    problems = []
    for a in ALGOS:
        for M, g, w in zip(MS, mine[a], truth[a]):
            if g == w:
                continue
            if g == (w[1], w[0]):
                why = "fwd and bwd are swapped: (r.fwd_total, r.bwd_total)"
            elif g[1] == 0:
                why = "the backward is 0: run both passes, pass_='fwd+bwd'"
            elif g[1] == w[0] + w[1]:
                why = "the second number is the fwd+bwd total; give the backward alone (r.bwd_total)"
            elif g[0] == w[0] + w[1]:
                why = "the first number is the fwd+bwd total; give the forward alone (r.fwd_total)"
            else:
                why = f"not what the machine counts at N = {N}, d = {d} (your sizes)"
            problems.append(f"passes[{a!r}] at M = {M}: {g}: {why}")
            break
    if problems:
        return problems
    if M_cross is None:
        raise Wrong("M_cross is not answered yet")
    x = whole("M_cross", M_cross)
    want = _crossing(truth, MS)
    if x != want:
        if x not in MS:
            why = "it must be one of Ms"
        elif x == _crossing(truth, MS, part=lambda p: p[0]):
            why = "that is where the forward passes cross; compare the fwd + bwd totals"
        elif want is not None and x < want:
            why = "there flash2 still moves more than standard: the smallest M where it moves less"
        else:
            why = "the smallest M of Ms where flash2's fwd + bwd total is below standard's"
        problems.append(f"M_cross = {M_cross}: {why}")
    return problems


def figure(passes, N, d, M0, M_cross=None, show=True, keep=None, fmt="png"):
    """Draws figures/lab5_passes.gp from a sweep {algo: [(fwd, bwd)]} over MS (the student's:
    checked by lab5.sweep): each pass's traffic against M, and the backward over the forward.
    Prints why when the sweep is not usable; never raises on the student's data.  Returns the
    figure's path or None."""
    MS = grid(M0)
    try:
        data = _pairs(passes, MS)
    except Wrong as w:
        print(f"(no figure: {w})")
        return None
    rows = [(M, *data["standard"][k], *data["flash2"][k]) for k, M in enumerate(MS)]
    cross = M_cross if isinstance(M_cross, int) and not isinstance(M_cross, bool) and M_cross in MS else 0
    return figures.draw("lab5_passes.gp", {"data": figures.table(rows)}, show=show, keep=keep, fmt=fmt,
                        N=N, d=d, cross=cross)
