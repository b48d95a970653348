"""Lab 3 (the M sweep): parameters and checks.

A student's sweep is flash1, flash2 and standard at their (N, d) over M = M0 * 2^k (k = 0..10);
the paper's range d <= M <= N d is the lab's.  The checks compare with the machine's counts
(fl.run), the library's block rules (fl.blocks) and footprints, and test the properties an answer
must have; the napkin's constant is the derivation's, which no check here states.
"""
import flashlab as fl

from . import attempt, boolean, check, function, mapping, near, number, rng, student_id, whole

STEPS = 11   # M = M0 * 2^k, k = 0 .. STEPS - 1


def draw(g):
    """Sizes from g: 'sweep' (N, d, M0) of exercise 2's sweep, 'napkin' [(N, d, M)] of exercise 1
    (32 d <= M <= 2 d^2), 'flat' (N, d) of exercise 3, 'paper' (d, M) of exercise 4."""
    d = g.choice([32, 64])
    return {"sweep": (g.randrange(1536, 8193, 256), d, g.randrange(1024, 2049, 64)),
            "napkin": [napkin_case(g) for _ in range(2)],
            "flat": (g.randrange(256, 2049, 32), g.choice([32, 48, 64, 96, 128])),
            "paper": (g.choice([64, 80, 96, 112, 128, 160, 192, 256]), g.randrange(32768, 131073, 4096))}


def napkin_case(g):
    """(N, d, M) with 32 d <= M <= 2 d^2: where flash2's block holds several rows, well below d."""
    d = g.choice([64, 96, 128])
    return (g.randrange(1024, 4097, 128), d, g.randrange(32 * d, 2 * d * d + 1, 64))


def params(student=""):
    """The student's sizes (draw); '' gives the handout's."""
    s = student_id(student)
    if not s:
        return {"sweep": (4096, 64, 1024), "napkin": [(4096, 64, 4096), (2048, 128, 16384)],
                "flat": (1024, 64), "paper": (128, 98304)}
    return draw(rng("lab3", s))


def grid(M0):
    return [M0 * 2 ** k for k in range(STEPS)]


def regime(N, d, Ms):
    """The points of the sweep in the paper's range d <= M <= N d."""
    return [M for M in Ms if d <= M <= N * d]


def law(N, d, M):
    return N * N * d * d / M


_sweeps = {}


def sweep(N, d, M0):
    """{(algo, M): the machine's result} for standard, flash1, flash2 over grid(M0) (each sweep
    run once per process)."""
    key = (N, d, M0)
    if key not in _sweeps:
        _sweeps[key] = {(a, M): fl.run(a, N=N, d=d, M=M) for M in grid(M0) for a in fl.CLASSIC}
    return _sweeps[key]


def ratios(P, algo, Ms=None):
    """total / (N^2 d^2 / M) of algo over Ms (default: the paper's range of P's sweep)."""
    N, d, M0 = P["sweep"]
    s = sweep(N, d, M0)
    return [s[algo, M].total / law(N, d, M) for M in (Ms or regime(N, d, grid(M0)))]


@check("lab3.napkin")
def napkin_check(P, napkin):
    """napkin(N, d, M) -> flash2's traffic by the napkin: must fall like N^2 d^2 / M, with a
    whole-number constant, within a quarter below the machine's count and not above it."""
    fn = function("napkin", napkin)
    problems = []
    for N, d, M in P["napkin"]:
        what = f"napkin({N}, {d}, {M})"
        est = number(what, attempt(what, fn, N, d, M))
        count = fl.run("flash2", N=N, d=d, M=M).total
        c = est / law(N, d, M)
        for (n2, d2, m2), k in (((2 * N, d, M), 4), ((N, 2 * d, 2 * M), 2), ((N, d, 2 * M), 0.5)):
            other = number(f"napkin({n2}, {d2}, {m2})", attempt("napkin", fn, n2, d2, m2))
            if not near(other, k * est, 1e-6):
                problems.append(f"napkin({n2}, {d2}, {m2}) = {other} is not {k} x napkin({N}, {d}, {M}): the "
                                f"napkin's traffic is c N^2 d^2 / M")
                return problems
        if not near(c, round(c), 1e-6):
            problems.append(f"{what}: your constant c = {c:.4g} is not a whole number: the napkin counts tensors "
                            f"re-read and the row blocks, T_r = N / B with 4 B d = M")
        elif not 0.75 * count <= est <= count:
            problems.append(f"{what} = {est:.6g}, the machine counts {count}: the napkin should come a little "
                            f"below the machine (it drops the rounding of B and Q, O); count the elements of K "
                            f"and V read per row block, times T_r")
        if problems:
            break
    return problems


def fit_entries(c_fit):
    """(problems, [(schedule, c)]) of an answer c_fit = {"flash1": c, "flash2": c}."""
    c_fit = mapping("c_fit", c_fit)
    problems, out = [], []
    for a in ("flash1", "flash2"):
        if a not in c_fit:
            problems.append(f"c_fit has no entry {a!r}")
        else:
            out.append((a, number(f"c_fit[{a!r}]", c_fit[a])))
    return problems, out


def fit_problems(P, c_fit, spread):
    """The least-squares conditions over the paper's range of P's sweep, without the fit itself:
    for each schedule sum_i (r_i - c) = 0 (the derivative of sum_i (r_i - c)^2), and the spread is
    a largest ratio over a smallest."""
    N, d, M0 = P["sweep"]
    problems, entries = fit_entries(c_fit)
    for a, c in entries:
        r = ratios(P, a)
        if abs(sum(x - c for x in r)) > 1e-6 * sum(r):
            every = ratios(P, a, grid(M0))
            why = (f"that fits all {len(every)} points of the sweep; the paper's range d <= M <= N d "
                   f"has {len(r)} of them" if abs(sum(x - c for x in every)) <= 1e-6 * sum(every) else
                   "c does not make sum over the range of (total_i / x_i - c)^2 smallest: its derivative, "
                   "-2 sum (total_i / x_i - c), is not zero there")
            problems.append(f"c_fit[{a!r}] = {c}: {why}")
    s = number("spread", spread)
    r = ratios(P, "flash2")
    if not (s >= 1 and any(near(s, x / y) for x in r for y in r) and all(x / y <= s * (1 + 1e-9) for x in r for y in r)):
        problems.append(f"spread = {s}: flash2's largest ratio total/x over the paper's range divided by its "
                        f"smallest (at least 1)")
    return problems


@check("lab3.fit")
def fit_check(P, c_fit, spread):
    return fit_problems(P, c_fit, spread)


def one_block(n, d, M):
    """True when flash2 uses a single row block (Br >= n) at SRAM M (the library's block rule)."""
    try:
        return fl.blocks("flash2", N=n, d=d, M=M)["Br"] >= n
    except fl.FlashlabError:
        return False


@check("lab3.flat")
def flat(P, M_flat):
    n, d = P["flat"]
    M = whole("M_flat", M_flat)
    if M >= 1 and one_block(n, d, M) and not one_block(n, d, M - 1):
        return []
    if M == n * d:
        why = "N d is where the Theta law's range ends; one row block needs all of flash2's buffers at B = N"
    elif M < 1 or not one_block(n, d, M):
        why = ("at that M flash2's block is still smaller than N: which of its buffers (eq. F2) did you "
               "leave out?")
    else:
        why = "a smaller M already gives one row block"
    return [f"M_flat = {M} (N = {n}, d = {d}): {why}"]


@check("lab3.paper-blocks")
def paper_blocks(P, paper_Bc, paper_Br, paper_need, paper_fits):
    d, M = P["paper"]
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
