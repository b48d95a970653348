"""Lab 7 (why the tiled kernel is fast): checks on the recorded Figure-2 and SDPA data; every
model byte count is recomputed with the C library.  The figure (figures/lab7_floors.gp) puts each
Figure-2 kernel's runtime against its model bytes (the student's model_bytes) beside the two
floors."""
import flashlab as fl

from . import Skip, Wrong, attempt, check, function, near, number, numbers_list
from . import figures
from .data import read_measurements

PEAK_FLOPS = 790e12   # FLOP/s: a dense bf16 matrix product on the H200 the data was recorded on
PEAK_BYTES = 4.3e12   # bytes/s: a device-to-device copy on the same H200 (read + written)
FLOOR_CASES = [(64, 16, 1024, 64, False, 2), (8, 16, 4096, 128, True, 2), (1, 1, 7, 3, False, 4)]


def fig2():
    return read_measurements(fl.data_dir() / "gpu_fig2.csv")[1]


def sdpa():
    return read_measurements(fl.data_dir() / "gpu_sdpa.csv")[1]


def schedule_of(row):
    return "standard" if row["version"] in ("8", "11") else "flash2"


def lib_bytes(row):
    algo, Br, Bc, bwd = schedule_of(row), int(row["Br"]), int(row["Bc"]), row["pass"] == "bwd"
    return fl.run(algo, N=1024, d=64, Br=Br, Bc=Bc, M=fl.footprint(algo, 64, Br, Bc, bwd=bwd),
                  batch=64, heads=16, elem_bytes=2, pass_=row["pass"]).bytes


def fastest(rows, version):
    rows = [r for r in rows if r["version"] == str(version)]
    return min(rows, key=lambda r: float(r["median_ms"])) if rows else None


def answers(student=""):
    rows, out = fig2(), {}
    s, t = fastest(rows, 8), fastest(rows, 10)
    if s and t:
        out.update(speedup=float(s["median_ms"]) / float(t["median_ms"]),
                   byte_ratio=lib_bytes(s) / lib_bytes(t),
                   std_tbps=lib_bytes(s) / (float(s["median_ms"]) * 1e-3) / 1e12,
                   tiled_tflops=float(t["gflop"]) * 1e9 / (float(t["median_ms"]) * 1e-3) / 1e12)
    ratios = {}
    for r in sdpa():
        if r["pass"] != "fwd":
            continue
        sh = (r["dtype"], int(r["d"]), int(r["N"]), int(r["causal"]))
        slot = ratios.setdefault(sh, [0.0, None])
        if r["impl"].startswith("ours") and "flash2" in r["impl"] and r["acc_ok"] == "1":
            slot[0] = max(slot[0], float(r["tflops"]))
        if r["impl"] == "sdpa-fa2":
            slot[1] = float(r["tflops"])
    full = [(k, v) for k, v in ratios.items() if v[0] and v[1]]
    if full:
        sh, (o, f) = min(full, key=lambda kv: kv[1][0] / kv[1][1])
        out.update(worst_ratio=o / f, worst_shape=sh)
    return out


@check("lab7.floors")
def floors(student, floors_fn):
    fn = function("floors", floors_fn)
    for B, H, N, d, cz, eb in FLOOR_CASES:
        what = f"floors{(B, H, N, d, cz, eb)}"
        got = numbers_list(what, attempt(what, fn, B, H, N, d, cz, eb), 4)
        want_f = 4.0 * B * H * N * N * d * (0.5 if cz else 1.0)
        want_b = 4.0 * B * H * N * d * eb
        for k, (what_, g, w) in enumerate((("flops", got[0], want_f), ("min_bytes", got[1], want_b),
                                           ("t_flops_ms", got[2], want_f / PEAK_FLOPS * 1e3),
                                           ("t_bytes_ms", got[3], want_b / PEAK_BYTES * 1e3))):
            if not near(g, w):
                why = {0: "two products of 2 N^2 d each per head, halved with the causal mask",
                       1: "read Q, K, V and write O once: 4 B H N d elements, times the element size",
                       2: "the FLOPs over PEAK_FLOPS, in milliseconds",
                       3: "the bytes over PEAK_BYTES, in milliseconds"}[k]
                return [f"{what}: {what_} = {g}: {why}"]
    return []


@check("lab7.bytes")
def bytes_check(student, model_bytes):
    rows = fig2()
    if not rows:
        raise Skip("no recorded Figure-2 data (figures/data/gpu_fig2.csv)")
    fn = function("model_bytes", model_bytes)
    for r in rows:
        got = attempt("model_bytes(row)", fn, r)
        want = lib_bytes(r)
        if got != want:
            return [f"v{r['version']} {r['pass']} {r['Br']}x{r['Bc']}: model_bytes = {got}, the model of "
                    f"that kernel (its blocks, its footprint, batch 64, 16 heads) gives another number"]
    return []


@check("lab7.floor")
def floor(student, speedup, byte_ratio, std_tbps, tiled_tflops):
    a = answers(student)
    if "speedup" not in a:
        raise Skip("no recorded Figure-2 data for versions 8 and 10 (figures/data/gpu_fig2.csv)")
    got = {"speedup": speedup, "byte_ratio": byte_ratio, "std_tbps": std_tbps, "tiled_tflops": tiled_tflops}
    return [f"{k} = {got[k]}: not what the recorded rows and the model give" for k in got
            if not near(number(k, got[k]), a[k])]


@check("lab7.sdpa")
def sdpa_check(student, worst_ratio, worst_shape):
    a = answers(student)
    if "worst_ratio" not in a:
        raise Skip("no recorded benchmark (figures/data/gpu_sdpa.csv)")
    problems = []
    if not near(number("worst_ratio", worst_ratio), a["worst_ratio"]):
        problems.append(f"worst_ratio = {worst_ratio}: the smallest best-ours / FA2 over the forward shapes")
    if worst_shape is None or tuple(worst_shape) != a["worst_shape"]:
        problems.append(f"worst_shape = {worst_shape}: (dtype, d, N, causal) of that shape, d, N, causal as ints")
    return problems


# ----------------------------------------------------------------------------------------------
# The figure: runtime against bytes, and the two floors

def figure(model_bytes, show=True, keep=None, fmt="png"):
    """Draws figures/lab7_floors.gp: every recorded Figure-2 kernel's median runtime against the
    bytes model_bytes(row) gives it (the student's function: lab7.bytes checks it), with the byte
    floor (bytes over PEAK_BYTES) and each pass's arithmetic floor (its FLOPs over PEAK_FLOPS).
    Prints why when there is no data or model_bytes does not give numbers; never raises on the
    student's function.  Returns the figure's path or None."""
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
            b = number("model_bytes(row)", attempt("model_bytes(row)", model_bytes, r))
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
