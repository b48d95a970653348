"""Lab 6's grading: the student's model of kernels the child never sees (masks, Nq != Nk,
non-square tiles, both passes) against the library's model of them; the counts of exercises 2 and
3 over the student's rows with a few counters and DRAM bytes changed (so that numbers known from
the recorded data do not pass), against the library's model."""
import flashlab as fl
from flashlab.labkit import Wrong, attempt, function, near, number, whole
from flashlab.labkit import lab6 as KIT

from .core import Check

LAB, SOURCE = 6, "lab6_real_kernels"


def model_key(a):
    """The model of a kernel with arguments a: its schedule with its tiles forced on an SRAM of
    exactly their footprint (the backward's for a backward kernel)."""
    return fl.run(a["algo"], N=a["N"], d=a["d"], Br=a["Br"], Bc=a["Bc"], elem_bytes=a["elem_bytes"],
                  M=fl.footprint(a["algo"], a["d"], a["Br"], a["Bc"], bwd=a["pass_"] == "bwd"),
                  causal=a["causal"], pass_=a["pass_"], Nk=a["Nk"])


_models = {}


def model_of(a):
    key = tuple(sorted(a.items()))
    if key not in _models:
        _models[key] = model_key(a)
    return _models[key]


def kernel_config(g):
    """Arguments of a kernel that the library models (drawn until one is accepted)."""
    while True:
        N = g.randrange(64, 769, 16)
        a = dict(algo=g.choice(["standard", "flash1", "flash2"]), N=N, d=g.choice([32, 64]),
                 Br=g.choice([16, 32, 48, 64]), Bc=g.choice([16, 32, 64, 96]),
                 causal=g.choice(["none", "top-left", "bottom-right"]),
                 Nk=g.choice([N, g.randrange(64, 1025, 16)]), elem_bytes=2, pass_=g.choice(["fwd", "bwd"]))
        try:
            model_of(a)
            return a
        except fl.FlashlabError:
            continue


def params(g):
    P = KIT.draw(g)
    P["rows"] = [dict(r) for r in P["rows"]]
    P["ncu"] = [dict(r) for r in P["ncu"]]
    ok = [r for r in KIT.comparable(P["rows"])]
    for r in g.sample(ok, min(len(ok), g.randrange(1, 5))):   # counters that no longer equal the model
        r["gpu_reads"] = str(int(r["gpu_reads"]) + g.randrange(8, 200))
    if ok:   # and a row recorded with another status, which is not compared
        g.choice(ok)["status"] = "FAIL (a row the grader marks)"
    for r in P["ncu"]:
        r["dram_read_B"] = repr(float(r["dram_read_B"]) * g.uniform(0.6, 1.6))
    P["_hidden"] = {"kernels": [kernel_config(g) for _ in range(4)]}
    return P


def model(P, model_for_kernel):
    fn = function("model_for_kernel", model_for_kernel)
    for a in [KIT.kernel_args(r) for r in P["kernels"]] + P["_hidden"]["kernels"]:
        want = model_of(a)
        what = f"model_for_kernel({KIT.label(a)})"
        got = attempt(what, fn, **a)
        if got is None:
            raise Wrong("model_for_kernel: no model yet (it returned None)")
        if not all(hasattr(got, k) for k in ("Br", "Bc", "M", "reads", "writes")):
            raise Wrong(f"{what}: expected what fl.run returns, got a {type(got).__name__}")
        if (got.Br, got.Bc) != (a["Br"], a["Bc"]):
            return [f"{what}: your model ran with blocks {got.Br}x{got.Bc}: force them (Br=, Bc=)"]
        if got.M != want.M:
            why = (" (that is the forward's footprint: a backward kernel holds the backward's buffers, bwd=True)"
                   if a["pass_"] == "bwd" and got.M == fl.footprint(a["algo"], a["d"], a["Br"], a["Bc"]) else "")
            return [f"{what}: M = {got.M}, the kernel's tiles take {want.M}{why}"]
        if (got.reads, got.writes) != (want.reads, want.writes):
            why = ""
            for k, v in (("causal", "none"), ("Nk", a["N"]), ("pass_", "fwd"), ("elem_bytes", 2)):
                if a[k] != v:
                    try:
                        if (lambda m: (m.reads, m.writes))(model_of(dict(a, **{k: v}))) == (got.reads, got.writes):
                            why = f": that is the model without the kernel's {k} = {a[k]!r}"
                    except fl.FlashlabError:
                        pass
            return [f"{what}: (reads, writes) differ from the model of that kernel{why}"]
    return []


def counters(P, rows_compared, rows_equal, model_for_kernel):
    rows = KIT.comparable(P["rows"])
    problems = []
    n = whole("rows_compared", rows_compared)
    if n != len(rows):
        why = ("that counts every row with counters; rows whose status is not ok are not compared"
               if n == len(KIT.with_counters(P["rows"])) else "count your kernel's rows with a model and an ok status")
        problems.append(f"rows_compared = {n}: {why}")
    want = sum((model_of(KIT.kernel_args(r)).reads, model_of(KIT.kernel_args(r)).writes)
               == (int(r["gpu_reads"]), int(r["gpu_writes"])) for r in rows)
    eq = whole("rows_equal", rows_equal)
    if eq != want:
        why = ("every compared row counted as equal: compare each row's counters with the model, in reads and writes"
               if eq == len(rows) else "recomputing the model with the C library gives another number")
        problems.append(f"rows_equal = {eq}: {why}")
    return problems


def ncu(P, min_dram_ratio, min_dram_row, model_for_kernel):
    best = min(((float(r["dram_read_B"]) / model_of(KIT.kernel_args(r)).read_bytes,
                 (r["algo"], int(r["N"]), int(r["Br"]), int(r["Bc"]))) for r in P["ncu"]), default=None)
    if best is None:
        return []
    problems = []
    x = number("min_dram_ratio", min_dram_ratio)
    if not near(x, best[0]):
        recorded = min(float(r["dram_read_ratio"]) for r in P["ncu"] if r.get("dram_read_ratio"))
        why = ("that is a recorded ratio column; divide dram_read_B by your model's read bytes"
               if near(x, recorded, 1e-3) else "divide dram_read_B by the model's read bytes (.read_bytes) and take the smallest")
        problems.append(f"min_dram_ratio = {x}: {why}")
    try:
        row = tuple(min_dram_row)
    except TypeError:
        row = None
    if row != best[1]:
        problems.append(f"min_dram_row = {min_dram_row}: the (algo, N, Br, Bc) of that row, N, Br, Bc as ints")
    return problems


ALLOW = ("run", "footprint")
CHECKS = [
    Check("lab6.model", ("model_for_kernel",), cells=(1,), allow=ALLOW, grade=model),
    Check("lab6.counters", ("rows_compared", "rows_equal", "model_for_kernel"), cells=(1, 2), allow=ALLOW,
          grade=counters),
    Check("lab6.ncu", ("min_dram_ratio", "min_dram_row", "model_for_kernel"), cells=(1, 3), allow=ALLOW, grade=ncu),
]
