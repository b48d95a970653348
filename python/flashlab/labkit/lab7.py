"""Lab 7 (why the tiled kernel is fast): parameters, checks and the figure, on the recorded
Figure-2 run (figures/data/gpu_fig2.csv) and benchmarks against PyTorch (figures/data/gpu_sdpa*.csv).

A student works on kernels and a benchmark run picked for them.  The checks hold the student's
answers against the recorded columns (the counters' and the model's bytes recorded beside each
run, the throughput the benchmark measured) and against the library's runs; the figure
(figures/lab7_floors.gp) puts each kernel's runtime against the student's model bytes beside the
two floors."""
import flashlab as fl

from . import Skip, Wrong, attempt, check, function, near, number, numbers_list, rng, student_id
from . import figures
from .data import read_measurements

PEAK_FLOPS = 790e12   # FLOP/s: a dense bf16 matrix product on the H200 the data was recorded on
PEAK_BYTES = 4.3e12   # bytes/s: a device-to-device copy on the same H200 (read + written)
FIG2 = dict(B="64", H="16", N="1024", d="64", causal="0", dtype="fp16")   # GPT-2 medium, as recorded
BASELINES = ("sdpa-fa2", "sdpa-cudnn")
SHAPE = ("dtype", "d", "N", "causal")


def fig2():
    """The Figure-2 rows, each with its shape's columns (B, H, N, d, causal, dtype) added."""
    return [dict(FIG2, **r) for r in read_measurements(fl.data_dir() / "gpu_fig2.csv")[1]]


_files = {}


def sdpa_files():
    """{file name: rows} of the benchmark runs against SDPA (gpu_sdpa*.csv with impl, pass, tflops
    and acc_ok columns), read once per process."""
    d = fl.data_dir()
    if d not in _files:
        _files[d] = {}
        for p in sorted(d.glob("gpu_sdpa*.csv")):
            rows = read_measurements(p)[1]
            if rows and all(k in rows[0] for k in ("impl", "tflops", "acc_ok", "pass")):
                _files[d][p.name] = rows
    return _files[d]


_choices = {}


def bench_choices():
    """[(file, pass, baseline)] of the benchmark runs with a shape where an accurate flash2 of ours
    and the baseline were both measured in that pass."""
    d = fl.data_dir()
    if d not in _choices:
        files = sdpa_files()
        _choices[d] = [(n, p, b) for n in sorted(files) for p in ("fwd", "bwd") for b in BASELINES
                       if _worst(files[n], p, b) and _once(files[n], p, b)]
    return _choices[d]


def _once(rows, pass_, baseline):
    """True when the baseline was measured once per shape in that pass (a run of one series)."""
    seen = [shape(r) for r in rows if r["pass"] == pass_ and r["impl"] == baseline]
    return len(seen) == len(set(seen))


def ours(r):
    return r["impl"].startswith("ours")


def shape(r):
    return (r["dtype"], int(r["d"]), int(r["N"]), int(r["causal"]))


def draw(g):
    """A student's cases from g: 'floors' (B, H, N, d, causal, elem_bytes) for exercise 1; 'rows'
    (Figure-2 rows and our kernels' rows of the benchmark) for exercise 2; 'pair' (a standard and a
    tiled forward row of one shape of gpu_sdpa.csv) for exercise 3; 'bench' (a benchmark file, a
    pass, a baseline, and that pass's rows) for exercise 4."""
    floors = [(g.choice([1, 2, 4, 8, 16, 32, 64]), g.choice([8, 12, 16, 32]), g.choice([512, 1024, 2048, 4096, 8192]),
               g.choice([64, 128]), g.random() < 0.5, g.choice([2, 4])) for _ in range(2)]
    files = sdpa_files()
    main = [r for r in files.get("gpu_sdpa.csv", []) if ours(r)]
    f2 = fig2()
    rows = (g.sample(f2, min(3, len(f2))) if f2 else []) + (g.sample(main, min(5, len(main))) if main else [])
    pair = None
    fwd = [r for r in main if r["pass"] == "fwd"]
    tiled = [r for r in fwd if r["version"] not in ("8", "11")]
    if tiled:
        t = g.choice(tiled)
        std = [r for r in fwd if r["version"] == "8" and shape(r) == shape(t)]
        pair = [g.choice(std), t] if std else None
    choices = bench_choices()
    bench = None
    if choices:
        name, p, base = g.choice(choices)
        bench = {"file": name, "pass": p, "baseline": base, "rows": [r for r in files[name] if r["pass"] == p]}
    return {"floors": floors, "rows": rows, "pair": pair, "bench": bench}


def params(student=""):
    """The student's cases (draw); '' gives the handout's (a fixed generator's)."""
    return draw(rng("lab7", student_id(student)))


# ----------------------------------------------------------------------------------------------
# Checks (on the recorded columns and the library's runs)

@check("lab7.floors")
def floors(P, floors_fn):
    """floors(B, H, N, d, causal, elem_bytes): the FLOPs must be what the benchmark measured its
    throughput with (gpu_sdpa.csv's tflops x time), the fewest bytes the library's model with one
    query block less its L, and the two times those over the ceilings."""
    fn = function("floors", floors_fn)
    cases = list(P["floors"])
    fwd = [r for r in sdpa_files().get("gpu_sdpa.csv", []) if r["pass"] == "fwd"]
    bench = [r for r in fwd if r["causal"] == "0"][:2] + [r for r in fwd if r["causal"] == "1"][:2]
    for r in bench:
        cases.append((int(r["B"]), int(r["H"]), int(r["N"]), int(r["d"]), r["causal"] == "1", 2))
    for k, (B, H, N, d, cz, eb) in enumerate(cases):
        what = f"floors{(B, H, N, d, cz, eb)}"
        got = numbers_list(what, attempt(what, fn, B, H, N, d, cz, eb), 4)
        if k >= len(P["floors"]):
            r = bench[k - len(P["floors"])]
            measured = float(r["tflops"]) * 1e12 * float(r["median_ms"]) * 1e-3
            if not near(got[0], measured, 1e-5):
                return [f"{what}: flops = {got[0]:.6g}; the benchmark counted {measured:.6g} for this shape: "
                        f"two products of 2 N^2 d each per head, halved with the causal mask"]
            continue
        one = fl.run("flash2", N=N, d=d, Br=N, Bc=min(N, 64), M=fl.footprint("flash2", d, N, min(N, 64)),
                     batch=B, heads=H, elem_bytes=eb)
        fewest = one.bytes - one.tensors["L"][1] * one.elem_bytes["L"]
        if not near(got[1], fewest):
            return [f"{what}: min_bytes = {got[1]:.6g}: read Q, K, V and write O once, each element "
                    f"elem_bytes bytes"]
        if not (near(got[2] * PEAK_FLOPS, got[0] * 1e3) and near(got[3] * PEAK_BYTES, got[1] * 1e3)):
            return [f"{what}: the times are the FLOPs over PEAK_FLOPS and the bytes over PEAK_BYTES, in ms"]
    return []


@check("lab7.bytes")
def bytes_check(P, model_bytes):
    """model_bytes(row) must equal the model bytes recorded beside each of P's rows (which the
    kernels' byte counters equal)."""
    rows = P["rows"]
    if not rows:
        raise Skip("no recorded Figure-2 or benchmark data (figures/data/gpu_fig2.csv, gpu_sdpa.csv)")
    fn = function("model_bytes", model_bytes)
    for r in rows:
        what = f"model_bytes(v{r['version']} {r['pass']} {r['Br']}x{r['Bc']}, B={r['B']} H={r['H']} N={r['N']} d={r['d']})"
        got = attempt(what, fn, dict(r))
        if got is None:
            raise Wrong(f"{what} returned None: not written yet")
        if number(what, got) != int(r["model_bytes"]):
            return [f"{what} = {got}, the model recorded beside that run gives {r['model_bytes']}: its schedule "
                    f"with its tiles on an SRAM of exactly their footprint, for the row's batch and heads"]
    return []


@check("lab7.floor")
def floor(P, speedup, byte_ratio, std_tbps, tiled_tflops):
    """P's pair: the definitions of exercise 3 on the two rows' recorded columns."""
    if not P.get("pair"):
        raise Skip("no recorded benchmark of our standard and tiled kernels (figures/data/gpu_sdpa.csv)")
    s, t = P["pair"]
    ms_s, ms_t = float(s["median_ms"]), float(t["median_ms"])
    want = {"speedup": ms_s / ms_t, "byte_ratio": int(s["model_bytes"]) / int(t["model_bytes"]),
            "std_tbps": int(s["model_bytes"]) / (ms_s * 1e-3) / 1e12, "tiled_tflops": float(t["tflops"])}
    got = {"speedup": speedup, "byte_ratio": byte_ratio, "std_tbps": std_tbps, "tiled_tflops": tiled_tflops}
    return [f"{k} = {got[k]}: not what the two rows and their model bytes give" for k in got
            if not near(number(k, got[k]), want[k], 1e-4)]


def _worst(rows, pass_, baseline):
    """((dtype, d, N, causal), ours / baseline) of each shape of rows with an accurate flash2 of
    ours and the baseline measured, in pass pass_."""
    per = {}
    for r in rows:
        if r["pass"] != pass_:
            continue
        slot = per.setdefault(shape(r), [0.0, None])
        if ours(r) and "flash2" in r["impl"] and r["acc_ok"] == "1":
            slot[0] = max(slot[0], float(r["tflops"]))
        if r["impl"] == baseline:
            slot[1] = float(r["tflops"])
    return {k: o / b for k, (o, b) in per.items() if o and b}


@check("lab7.sdpa")
def sdpa_check(P, worst_ratio, worst_shape):
    if not P.get("bench"):
        raise Skip("no recorded benchmark (figures/data/gpu_sdpa*.csv)")
    b = P["bench"]
    name, pass_, base = b["file"], b["pass"], b["baseline"]
    ratios = _worst(b["rows"], pass_, base)
    if not ratios:
        raise Skip(f"figures/data/{name}: no shape with both an accurate flash2 of ours and {base} in the {pass_} pass")
    sh, want = min(ratios.items(), key=lambda kv: kv[1])
    problems = []
    if not near(number("worst_ratio", worst_ratio), want):
        problems.append(f"worst_ratio = {worst_ratio}: the smallest best-ours / {base} over the {pass_} shapes")
    if worst_shape is None or tuple(worst_shape) != sh:
        problems.append(f"worst_shape = {worst_shape}: (dtype, d, N, causal) of that shape, d, N, causal as ints")
    return problems


# ----------------------------------------------------------------------------------------------
# The figure: runtime against bytes, and the two floors

def figure(model_bytes, show=True, keep=None, fmt="png"):
    """Draws figures/lab7_floors.gp: every Figure-2 kernel's median runtime against the bytes
    model_bytes(row) gives it (the student's function: lab7.bytes checks it), with the byte floor
    (bytes over PEAK_BYTES) and each pass's arithmetic floor (its FLOPs over PEAK_FLOPS).  Prints
    why when there is no data or model_bytes does not give numbers; never raises on the student's
    function.  Returns the figure's path or None."""
    rows = fig2()
    if not rows:
        print("no recorded Figure-2 data (figures/data/gpu_fig2.csv): no figure")
        return None
    if not callable(model_bytes):
        print("(no figure: write model_bytes first)")
        return None
    data = []
    for r in rows:
        try:
            b = number("model_bytes(row)", attempt("model_bytes(row)", model_bytes, dict(r)))
        except Wrong as w:
            print(f"(no figure: {w})")
            return None
        data.append((int(r["version"]), 1 if r["pass"] == "fwd" else 2, b, float(r["median_ms"]),
                     float(r["gflop"]), int(r["Br"]), int(r["Bc"])))
    flops = {p: next(g for _, q, _, _, g, _, _ in data if q == p) for p in (1, 2) if any(q == p for _, q, *_ in data)}
    print(f"{'version':>7} {'pass':>4} {'tiles':>7} | {'model GB':>8} {'ms':>7} | {'bytes floor ms':>14} {'FLOP floor ms':>13}")
    for v, p, b, ms, g, br, bc in data:
        print(f"{v:7d} {'fwd' if p == 1 else 'bwd':>4} {f'{br}x{bc}':>7} | {b / 1e9:8.3f} {ms:7.3f} | "
              f"{b / PEAK_BYTES * 1e3:14.3f} {g * 1e9 / PEAK_FLOPS * 1e3:13.3f}")
    return figures.draw("lab7_floors.gp", {"data": figures.table(data)}, show=show, keep=keep, fmt=fmt,
                        peak_bytes=PEAK_BYTES, peak_flops=PEAK_FLOPS,
                        gflop_fwd=flops.get(1, 0.0), gflop_bwd=flops.get(2, 0.0))

