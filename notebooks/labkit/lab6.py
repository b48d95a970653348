"""Lab 6 (real kernels, measured vs model): checks.  A kernel's model is its schedule run with
its blocks forced on an SRAM of exactly its tiles' footprint (fl.footprint), computed here with
the C library for every recorded row."""
import flashlab as fl

from . import Skip, Wrong, attempt, check, function, near, number, whole
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
