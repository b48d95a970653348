"""Lab 6 (real kernels, measured vs model): checks and figures.  A kernel's model is its schedule
run with its blocks forced on an SRAM of exactly its tiles' footprint (fl.footprint), computed
here with the C library for every recorded row; the figures set the recorded byte counters
(per kernel version) and Nsight Compute's bytes beside those models."""
import flashlab as fl

from . import Skip, Wrong, attempt, check, function, near, number, whole
from . import figures
from .data import recorded

KERNELS = [("flash2", 4096, 128, 64, 64, "fwd"), ("flash1", 4096, 64, 64, 128, "fwd"),
           ("standard", 1000, 64, 64, 64, "fwd"), ("flash2", 1000, 64, 128, 64, "fwd"),
           ("flash2", 1000, 64, 32, 32, "bwd")]


def kernel_args(r):
    """The model arguments of a recorded row (newer tables name the corner and Nk; older ones
    have causal 0/1, where 1 was the kernels' only corner, bottom-right)."""
    return dict(algo=r["algo"], N=int(r["N"]), d=int(r["d"]), Br=int(r["Br"]), Bc=int(r["Bc"]),
                causal=r.get("corner") or ("none" if r.get("causal", "0") in ("0", "") else "bottom-right"),
                Nk=int(r.get("Nk") or r["N"]),
                elem_bytes={"fp16": 2, "bf16": 2, "fp32": 4}.get(r.get("dtype"), 2),
                pass_=r.get("pass") or "fwd")


_models = {}


def library_model(a):
    """The model of a kernel row, straight from the C library (each configuration once)."""
    key = tuple(sorted(a.items()))
    if key not in _models:
        _models[key] = fl.run(a["algo"], N=a["N"], d=a["d"], Br=a["Br"], Bc=a["Bc"], elem_bytes=a["elem_bytes"],
                              M=fl.footprint(a["algo"], a["d"], a["Br"], a["Bc"], bwd=a["pass_"] == "bwd"),
                              causal=a["causal"], pass_=a["pass_"], Nk=a["Nk"])
    return _models[key]


def counter_rows():
    return [r for _, (prov, rows) in recorded().items() for r in rows
            if "gpu_reads" in r and r.get("model_reads") and r.get("status", "ok").startswith("ok")]


def ncu_rows():
    return [r for _, (prov, rows) in recorded().items() for r in rows
            if r.get("dram_read_B") and r.get("model_read_B")]


def answers(student=""):
    rows = counter_rows()
    equal = sum((library_model(kernel_args(r)).reads, library_model(kernel_args(r)).writes)
                == (int(r["gpu_reads"]), int(r["gpu_writes"])) for r in rows)
    best = None
    for r in ncu_rows():
        ratio = float(r["dram_read_B"]) / library_model(kernel_args(r)).read_bytes
        if best is None or ratio < best[0]:
            best = (ratio, (r["algo"], int(r["N"]), int(r["Br"]), int(r["Bc"])))
    return {"rows_compared": len(rows), "rows_equal": equal,
            "min_dram_ratio": best[0] if best else None, "min_dram_row": best[1] if best else None}


@check("lab6.model")
def model(student, model_for_kernel):
    fn = function("model_for_kernel", model_for_kernel)
    for algo, N, d, Br, Bc, ps in KERNELS:
        want = library_model(dict(algo=algo, N=N, d=d, Br=Br, Bc=Bc, causal="none", Nk=N,
                                  elem_bytes=2, pass_=ps))
        what = f"model_for_kernel({algo!r}, {N}, {d}, {Br}, {Bc}, pass_={ps!r})"
        try:
            got = attempt(what, fn, algo, N, d, Br, Bc, pass_=ps)
        except Wrong as w:
            if ps == "bwd" and "backward" in str(w):
                raise Wrong(f"{w} (a backward kernel holds the backward's buffers: fl.footprint(..., bwd=True))")
            raise
        if got is None:
            raise Wrong("model_for_kernel: no model yet (it returned None)")
        if not isinstance(got, fl.RunResult):
            raise Wrong(f"{what}: expected what fl.run returns, got a {type(got).__name__}")
        if (got.Br, got.Bc) != (Br, Bc):
            return [f"{algo} {Br}x{Bc}: your model ran with blocks {got.Br}x{got.Bc}: force them (Br=, Bc=)"]
        if got.M != want.M:
            why = (" (that is the forward's footprint: a backward kernel holds the backward's buffers, bwd=True)"
                   if ps == "bwd" and got.M == fl.footprint(algo, d, Br, Bc) else "")
            return [f"{algo} {ps} {Br}x{Bc}: M = {got.M}, the kernel's tiles take {want.M}{why}"]
        if (got.reads, got.writes) != (want.reads, want.writes):
            return [f"{algo} {ps} {Br}x{Bc} N={N}: (reads, writes) differ from the model of that kernel"]
    return []


@check("lab6.counters")
def counters(student, rows_compared, rows_equal):
    rows = counter_rows()
    if not rows:
        raise Skip("no recorded byte-counter data (figures/data/gpu_*.csv with gpu_reads)")
    a = answers(student)
    problems = []
    if whole("rows_compared", rows_compared) != a["rows_compared"]:
        problems.append(f"rows_compared = {rows_compared}: count the rows with a model and an ok status")
    if whole("rows_equal", rows_equal) != a["rows_equal"]:
        problems.append(f"rows_equal = {rows_equal}: recomputing the model with the C library gives another number")
    return problems


@check("lab6.ncu")
def ncu(student, min_dram_ratio, min_dram_row):
    if not ncu_rows():
        raise Skip("no recorded Nsight Compute data (figures/data/gpu_*.csv with dram_read_B)")
    a = answers(student)
    problems = []
    if not near(number("min_dram_ratio", min_dram_ratio), a["min_dram_ratio"]):
        problems.append(f"min_dram_ratio = {min_dram_ratio}: divide dram_read_B by the model's read bytes "
                        f"(.read_bytes of your model) and take the smallest")
    if min_dram_row is None or tuple(min_dram_row) != a["min_dram_row"]:
        problems.append(f"min_dram_row = {min_dram_row}: the (algo, N, Br, Bc) of that row, N, Br, Bc as ints")
    return problems


# ----------------------------------------------------------------------------------------------
# Figures (from the recorded data; every model recomputed with the C library)

SCHEDULES = {"standard": 1, "flash1": 2, "flash2": 3}   # style.gp's line styles


def counter_table(extra=None):
    """Every recorded row with byte counters and a model (whatever its status), as (version,
    counters / model in elements, ok, model total): the model recomputed with the C library.
    extra: more {name: (provenance, rows)} (the live run), beside the recorded files."""
    tables = dict(recorded())
    tables.update(extra or {})
    out = []
    for _, (prov, rows) in tables.items():
        for r in rows:
            if "gpu_reads" not in r or not r.get("model_reads"):
                continue
            m = library_model(kernel_args(r))
            got = int(r["gpu_reads"]) + int(r["gpu_writes"])
            out.append((int(r.get("version") or 0), got / (m.reads + m.writes),
                        int(r.get("status", "ok").startswith("ok")), m.reads + m.writes))
    return out


def counter_figure(extra=None, show=True, keep=None, fmt="png"):
    """Draws figures/lab6_counters.gp: each recorded row's counters over its model, per kernel
    version (ok rows and rows recorded with another status apart); prints the same per version.
    Returns (figure path or None, rows); no figure without recorded rows."""
    rows = counter_table(extra)
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
    # a deterministic spread of each version's points, so that many equal ratios stay visible
    data = figures.table((v + ((k * 0.618034) % 1 - 0.5) * 0.6, ratio, ok) for k, (v, ratio, ok, _) in enumerate(rows))
    counts = figures.table((v, n, eq) for v, (n, eq, bad) in sorted(per.items()))
    hi = max(r[1] for r in rows)
    lo = min(r[1] for r in rows)
    path = figures.draw("lab6_counters.gp", {"data": data, "counts": counts}, show=show, keep=keep, fmt=fmt,
                        vmax=max(per), ymax=max(1.02, hi + 0.2 * (hi - 1) + 0.01), ymin=min(0.98, lo - 0.01))
    return path, rows


def ncu_table():
    """The Nsight Compute rows as (model read bytes from the C library, byte counters' read
    bytes, L2 read bytes, DRAM read bytes, schedule style, 1 for fwd / 2 for bwd)."""
    out = []
    for r in ncu_rows():
        m = library_model(kernel_args(r))
        out.append((m.read_bytes, float(r["counter_read_B"]), float(r["l2_read_B"]), float(r["dram_read_B"]),
                    SCHEDULES.get(r["algo"], 3), 2 if r.get("pass") == "bwd" else 1))
    return out


def ncu_figure(show=True, keep=None, fmt="png"):
    """Draws figures/lab6_ncu.gp: the read bytes the byte counters, Nsight Compute's L2 sectors
    and its DRAM bytes saw against the model's, per recorded kernel run.  Returns (path or None,
    rows); no figure without recorded Nsight Compute rows."""
    rows = ncu_table()
    if not rows:
        print("no recorded Nsight Compute data here: no figure")
        return None, rows
    return figures.draw("lab6_ncu.gp", {"data": figures.table(rows)}, show=show, keep=keep, fmt=fmt), rows
