"""Lab 6 (real kernels, measured vs model): parameters, checks and figures.

A student works on rows of the recorded GPU runs (figures/data/gpu_*.csv) picked for them: one
kernel's byte-counter rows (a version and a pass), the Nsight Compute rows of some profiled runs,
and a few rows of other kernels for exercise 1.  The checks hold the student's model of a kernel
against what the kernels' own byte counters recorded, and the student's counts against the
student's own model: nothing here computes a model of a kernel.
"""
import flashlab as fl

from . import Skip, Wrong, attempt, check, function, near, number, rng, student_id, whole
from . import figures
from .data import read_measurements, recorded  # noqa: F401 (read_measurements: the notebook's)

NCU_PICK = 12   # Nsight Compute rows per student (of those recorded)


def kernel_args(r):
    """The model arguments of a recorded row (newer tables name the corner and Nk; older ones
    have causal 0/1, where 1 was the kernels' only corner, bottom-right)."""
    return dict(algo=r["algo"], N=int(r["N"]), d=int(r["d"]), Br=int(r["Br"]), Bc=int(r["Bc"]),
                causal=r.get("corner") or ("none" if r.get("causal", "0") in ("0", "") else "bottom-right"),
                Nk=int(r.get("Nk") or r["N"]),
                elem_bytes={"fp16": 2, "bf16": 2, "fp32": 4}.get(r.get("dtype"), 2),
                pass_=r.get("pass") or "fwd")


def comparable(rows):
    """The rows with byte counters, model columns and an ok status."""
    return [r for r in rows if "gpu_reads" in r and r.get("model_reads") and r.get("status", "ok").startswith("ok")]


def with_counters(rows):
    """Every row with byte counters and model columns, whatever its status."""
    return [r for r in rows if "gpu_reads" in r and r.get("model_reads")]


def profiled(rows):
    """The rows of an Nsight Compute profile (DRAM and the model's read bytes)."""
    return [r for r in rows if r.get("dram_read_B") and r.get("model_read_B")]


def _all_rows():
    return [dict(r, source=name) for name, (prov, rows) in recorded().items() for r in rows]


def groups():
    """{(version, pass): [rows with counters]} over every recorded file."""
    out = {}
    for r in with_counters(_all_rows()):
        out.setdefault((r.get("version") or "0", r.get("pass") or "fwd"), []).append(r)
    return out


def draw(g):
    """A student's rows from g: 'kernel' (version, pass) and 'rows' (a sample of that kernel's
    recorded rows, 40 to 120, whatever their status) for exercise 2; 'kernels' (six ok rows of
    other kernels) for exercise 1; 'ncu' (a sample of the Nsight Compute rows) for exercise 3."""
    gs = groups()
    keys = sorted(gs, key=lambda k: (int(k[0]), k[1]))
    if not keys:
        return {"kernel": None, "rows": [], "kernels": [], "ncu": []}
    key = g.choice(keys)
    rows = gs[key]
    pick = sorted(g.sample(range(len(rows)), min(len(rows), g.randrange(40, 121))))
    others = [k for k in keys if k != key]
    kernels = [g.choice(comparable(gs[k]) or gs[k]) for k in g.sample(others, min(6, len(others)))]
    ncu = profiled(_all_rows())
    return {"kernel": list(key), "rows": [rows[i] for i in pick], "kernels": kernels,
            "ncu": [ncu[i] for i in sorted(g.sample(range(len(ncu)), min(NCU_PICK, len(ncu))))]}


def params(student=""):
    """The student's rows (draw); '' gives the handout's (draw's first pick of a fixed generator)."""
    return draw(rng("lab6", student_id(student)))


def _model(what, fn, a):
    got = attempt(what, fn, **a)
    if got is None:
        raise Wrong("model_for_kernel: no model yet (it returned None)")
    for k in ("Br", "Bc", "M", "reads", "writes", "read_bytes"):
        if not hasattr(got, k):
            raise Wrong(f"{what}: expected what fl.run returns, got a {type(got).__name__}")
    return got


def label(a):
    return (f"{a['algo']} {a['pass_']} N={a['N']} Nk={a['Nk']} d={a['d']} {a['causal']} {a['Br']}x{a['Bc']}")


@check("lab6.model")
def model(P, model_for_kernel):
    """The student's model of each of P's kernels (recorded rows of other versions) against what
    the kernel's byte counters recorded: blocks forced, M the footprint of its tiles, and the
    counts equal to the counters."""
    fn = function("model_for_kernel", model_for_kernel)
    if not P["kernels"]:
        raise Skip("no recorded byte-counter data (figures/data/gpu_*.csv with gpu_reads)")
    for r in P["kernels"]:
        a = kernel_args(r)
        what = f"model_for_kernel({label(a)})"
        got = _model(what, fn, a)
        if (got.Br, got.Bc) != (a["Br"], a["Bc"]):
            return [f"{what}: your model ran with blocks {got.Br}x{got.Bc}: force the kernel's (Br=, Bc=)"]
        M = fl.footprint(a["algo"], a["d"], a["Br"], a["Bc"], bwd=a["pass_"] == "bwd")
        if got.M != M:
            why = (" (that is the forward's footprint: a backward kernel holds the backward's buffers, bwd=True)"
                   if a["pass_"] == "bwd" and got.M == fl.footprint(a["algo"], a["d"], a["Br"], a["Bc"]) else "")
            return [f"{what}: M = {got.M}, the kernel's tiles take {M}{why}"]
        if (got.reads, got.writes) != (int(r["gpu_reads"]), int(r["gpu_writes"])):
            return [f"{what}: (reads, writes) = ({got.reads}, {got.writes}), the kernel's byte counters "
                    f"recorded ({r['gpu_reads']}, {r['gpu_writes']}): pass its mask, Nk, pass and element size too"]
    return []


@check("lab6.counters")
def counters(P, rows_compared, rows_equal, model_for_kernel):
    """rows_compared: P's rows with counters, model columns and an ok status; rows_equal: those
    whose counters equal the student's own model (checked against it here)."""
    rows = comparable(P["rows"])
    if not P["rows"]:
        raise Skip("no recorded byte-counter data (figures/data/gpu_*.csv with gpu_reads)")
    fn = function("model_for_kernel", model_for_kernel)
    problems = []
    n = whole("rows_compared", rows_compared)
    if n != len(rows):
        why = ("that counts every row with counters; rows whose status is not ok are not compared"
               if n == len(with_counters(P["rows"])) else "count the rows with a model and an ok status")
        problems.append(f"rows_compared = {n}: {why}")
    eq = whole("rows_equal", rows_equal)
    mine = 0
    for r in rows:
        m = _model("model_for_kernel", fn, kernel_args(r))
        mine += (m.reads, m.writes) == (int(r["gpu_reads"]), int(r["gpu_writes"]))
    if eq != mine:
        problems.append(f"rows_equal = {eq}: with your model_for_kernel, {'fewer' if eq > mine else 'more'} "
                        f"rows have counters equal to the model in both reads and writes")
    return problems


@check("lab6.ncu")
def ncu(P, min_dram_ratio, min_dram_row, model_for_kernel):
    """The row of P's Nsight Compute rows whose DRAM read bytes are smallest over the student's
    own model's read bytes, and that ratio."""
    rows = P["ncu"]
    if not rows:
        raise Skip("no recorded Nsight Compute data (figures/data/gpu_*.csv with dram_read_B)")
    fn = function("model_for_kernel", model_for_kernel)
    x = number("min_dram_ratio", min_dram_ratio)
    ratios = []
    for r in rows:
        m = _model("model_for_kernel", fn, kernel_args(r))
        ratios.append((float(r["dram_read_B"]) / m.read_bytes, (r["algo"], int(r["N"]), int(r["Br"]), int(r["Bc"]))))
    problems = []
    if not any(near(x, q) for q, _ in ratios):
        problems.append(f"min_dram_ratio = {x}: not dram_read_B over your model's read bytes (.read_bytes) "
                        f"for any of your rows")
    elif any(q < x * (1 - 1e-9) for q, _ in ratios):
        problems.append(f"min_dram_ratio = {x}: another of your rows has a smaller ratio")
    try:
        row = tuple(min_dram_row)
    except TypeError:
        row = None
    if row is None or not any(near(x, q) and row == k for q, k in ratios):
        problems.append(f"min_dram_row = {min_dram_row}: the (algo, N, Br, Bc) of the row with that ratio, "
                        f"N, Br, Bc as ints")
    return problems


# ----------------------------------------------------------------------------------------------
# Figures (from the rows and the student's model)

SCHEDULES = {"standard": 1, "flash1": 2, "flash2": 3}   # style.gp's line styles


def counter_table(rows, model_for_kernel):
    """Each row with counters and a model (whatever its status) as (version, counters / model in
    elements, ok, model total), the model the student's."""
    out = []
    for r in with_counters(rows):
        m = model_for_kernel(**kernel_args(r))
        got = int(r["gpu_reads"]) + int(r["gpu_writes"])
        out.append((int(r.get("version") or 0), got / (m.reads + m.writes),
                    int(r.get("status", "ok").startswith("ok")), m.reads + m.writes))
    return out


def counter_figure(rows, model_for_kernel, show=True, keep=None, fmt="png"):
    """Draws figures/lab6_counters.gp: each row's counters over the student's model, per kernel
    version (ok rows and rows recorded with another status apart); prints the same per version.
    Returns (figure path or None, rows); no figure without rows or a working model."""
    if not callable(model_for_kernel):
        print("(no figure: write model_for_kernel first)")
        return None, []
    try:
        rows = counter_table(rows, model_for_kernel)
    except Exception as e:
        print(f"(no figure: model_for_kernel raised {type(e).__name__}: {e})")
        return None, []
    if not rows:
        print("no recorded byte counters here: no figure")
        return None, rows
    per = {}
    for v, ratio, ok, _ in rows:
        n, eq, bad = per.get(v, (0, 0, 0))
        per[v] = (n + 1, eq + (ratio == 1.0), bad + (not ok))
    print(f"{'version':>7} | {'rows':>5} {'counters = model':>16} {'status not ok':>13}")
    for v in sorted(per):
        print(f"{v:7d} | {per[v][0]:5d} {per[v][1]:16d} {per[v][2]:13d}")
    data = figures.table((v + ((k * 0.618034) % 1 - 0.5) * 0.6, ratio, ok) for k, (v, ratio, ok, _) in enumerate(rows))
    counts = figures.table((v, n, eq) for v, (n, eq, bad) in sorted(per.items()))
    hi = max(r[1] for r in rows)
    lo = min(r[1] for r in rows)
    path = figures.draw("lab6_counters.gp", {"data": data, "counts": counts}, show=show, keep=keep, fmt=fmt,
                        vmax=max(per), ymax=max(1.02, hi + 0.2 * (hi - 1) + 0.01), ymin=min(0.98, lo - 0.01))
    return path, rows


def ncu_figure(rows, model_for_kernel, show=True, keep=None, fmt="png"):
    """Draws figures/lab6_ncu.gp: the read bytes the byte counters, Nsight Compute's L2 sectors
    and its DRAM bytes saw against the student's model's, per profiled run.  Returns (path or
    None, rows)."""
    if not callable(model_for_kernel):
        print("(no figure: write model_for_kernel first)")
        return None, []
    out = []
    try:
        for r in profiled(rows):
            m = model_for_kernel(**kernel_args(r))
            out.append((m.read_bytes, float(r["counter_read_B"]), float(r["l2_read_B"]), float(r["dram_read_B"]),
                        SCHEDULES.get(r["algo"], 3), 2 if r.get("pass") == "bwd" else 1))
    except Exception as e:
        print(f"(no figure: model_for_kernel raised {type(e).__name__}: {e})")
        return None, []
    if not out:
        print("no recorded Nsight Compute data here: no figure")
        return None, out
    return figures.draw("lab6_ncu.gp", {"data": figures.table(out)}, show=show, keep=keep, fmt=fmt), out
