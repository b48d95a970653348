"""Lab 7's grading: the floors on shapes the child never sees; the student's model_bytes on rows
with other tiles and shapes than recorded (their model_bytes column left as it was: copying it
fails); exercise 3 on the student's pair with other times; exercise 4 on the student's benchmark
rows with other throughputs.  Every expected value is computed here: the model with the library,
the rest from the rows."""
import flashlab as fl
from flashlab.labkit import Wrong, attempt, function, near, number, numbers_list
from flashlab.labkit import lab7 as KIT

from .core import Check

LAB, SOURCE = 7, "lab7_fast_kernels"


def floors_key(B, H, N, d, causal, eb):
    flops = 4.0 * B * H * N * N * d * (0.5 if causal else 1.0)
    min_bytes = 4.0 * B * H * N * d * eb
    return flops, min_bytes, flops / KIT.PEAK_FLOPS * 1e3, min_bytes / KIT.PEAK_BYTES * 1e3


_bytes = {}


def bytes_key(r):
    """The model bytes of row r's kernel, the whole launch."""
    algo = "standard" if r["version"] in ("8", "11") else "flash2"
    key = (algo, r["pass"], r["Br"], r["Bc"], r["B"], r["H"], r["N"], r["d"], r["causal"])
    if key not in _bytes:
        Br, Bc, d = int(r["Br"]), int(r["Bc"]), int(r["d"])
        _bytes[key] = fl.run(algo, N=int(r["N"]), d=d, Br=Br, Bc=Bc, M=fl.footprint(algo, d, Br, Bc, bwd=r["pass"] == "bwd"),
                             batch=int(r["B"]), heads=int(r["H"]), elem_bytes=2, pass_=r["pass"],
                             causal="bottom-right" if r["causal"] == "1" else "none").bytes
    return _bytes[key]


def probe(g, r):
    """Row r with other tiles and a smaller launch (its recorded columns left as they were)."""
    p = dict(r, Br=str(g.choice([32, 64, 128])), Bc=str(g.choice([32, 64, 128])), B=str(g.choice([1, 2, 3])),
             H=str(g.choice([1, 2, 4])), N=str(g.choice([256, 384, 512])))
    if p["version"] in ("9", "11") or p["pass"] == "bwd":
        p["Br"] = p["Bc"] = str(g.choice([32, 64]))
    return p


def params(g):
    P = KIT.draw(g)
    for k in ("rows",):
        P[k] = [dict(r) for r in P[k]]
    if P["pair"]:
        P["pair"] = [dict(r, median_ms=repr(float(r["median_ms"]) * g.uniform(0.7, 1.4))) for r in P["pair"]]
    if P["bench"]:
        P["bench"] = dict(P["bench"], rows=[dict(r, tflops=repr(float(r["tflops"]) * g.uniform(0.8, 1.25)))
                                            for r in P["bench"]["rows"]])
    floors = [(g.choice([1, 3, 5, 6, 12, 48]), g.choice([7, 9, 20, 40]), g.choice([333, 768, 1536, 3000]),
               g.choice([32, 80, 96]), g.random() < 0.5, g.choice([1, 2, 4])) for _ in range(3)]
    P["_hidden"] = {"floors": floors, "probes": [probe(g, r) for r in P["rows"][:4]]}
    return P


def floors(P, floors):
    fn = function("floors", floors)
    for case in list(P["floors"]) + P["_hidden"]["floors"]:
        what = f"floors{tuple(case)}"
        got = numbers_list(what, attempt(what, fn, *case), 4)
        want = floors_key(*case)
        B, H, N, d, cz, eb = case
        for k, name, why in ((0, "flops", "two products of 2 N^2 d each per head, halved with the causal mask"),
                             (1, "min_bytes", "read Q, K, V and write O once: 4 B H N d elements, times the element size"),
                             (2, "t_flops_ms", "the FLOPs over PEAK_FLOPS, in milliseconds"),
                             (3, "t_bytes_ms", "the bytes over PEAK_BYTES, in milliseconds")):
            if not near(got[k], want[k]):
                if k == 0 and cz and near(got[0], 2 * want[0]):
                    why = "the causal mask skips half of the products"
                elif k == 1 and near(got[1], want[1] / eb):
                    why = "those are elements: times elem_bytes"
                return [f"{what}: {name} = {got[k]}: {why}"]
    return []


def model_bytes(P, model_bytes):
    fn = function("model_bytes", model_bytes)
    for r in P["rows"] + P["_hidden"]["probes"]:
        what = f"model_bytes(v{r['version']} {r['pass']} {r['Br']}x{r['Bc']}, B={r['B']} H={r['H']} N={r['N']} d={r['d']})"
        got = attempt(what, fn, dict(r))
        if got is None:
            raise Wrong(f"{what} returned None: not written yet")
        got = number(what, got)
        want = bytes_key(r)
        if got != want:
            why = ("that is the model_bytes column recorded for other tiles or another shape: compute the model "
                   "of this row's kernel" if str(int(got)) in (r.get("model_bytes"), r.get("counter_bytes")) else
                   "its schedule (versions 8 and 11: standard) with its tiles forced on an SRAM of exactly their "
                   "footprint, the row's batch, heads, mask and pass, 2 bytes an element: .bytes")
            return [f"{what} = {got}: {why}"]
    return []


def floor(P, speedup, byte_ratio, std_tbps, tiled_tflops):
    if not P["pair"]:
        return []
    s, t = P["pair"]
    ms_s, ms_t = float(s["median_ms"]), float(t["median_ms"])
    want = {"speedup": ms_s / ms_t, "byte_ratio": bytes_key(s) / bytes_key(t),
            "std_tbps": bytes_key(s) / (ms_s * 1e-3) / 1e12,
            "tiled_tflops": floors_key(int(t["B"]), int(t["H"]), int(t["N"]), int(t["d"]), t["causal"] == "1", 2)[0]
            / (ms_t * 1e-3) / 1e12}
    got = {"speedup": speedup, "byte_ratio": byte_ratio, "std_tbps": std_tbps, "tiled_tflops": tiled_tflops}
    problems = []
    for k, w in want.items():
        x = number(k, got[k])
        if near(x, w):
            continue
        if k == "speedup" and near(x, 1 / w):
            why = "inverted: the standard's time over the tiled one's"
        elif k == "tiled_tflops" and near(x, float(t["tflops"])):
            why = "that is a recorded column; compute the FLOP rate from the FLOPs and this row's median_ms"
        elif k == "std_tbps" and near(x, w * 1e3):
            why = "median_ms is in milliseconds"
        else:
            why = "not what the two rows and the model give"
        problems.append(f"{k} = {x}: {why}")
    return problems


def sdpa(P, worst_ratio, worst_shape):
    b = P["bench"]
    if not b:
        return []
    ratios = KIT._worst(b["rows"], b["pass"], b["baseline"])
    sh, want = min(ratios.items(), key=lambda kv: kv[1])
    problems = []
    x = number("worst_ratio", worst_ratio)
    if not near(x, want):
        others = {base: KIT._worst(b["rows"], b["pass"], base) for base in KIT.BASELINES if base != b["baseline"]}
        why = next((f"that is against {base}; your baseline is {b['baseline']}" for base, r in others.items()
                    if r and near(x, min(r.values()))), f"the smallest best-ours / {b['baseline']} over the shapes")
        if near(x, max(ratios.values())):
            why = "that is the largest ratio: the weakest shape has the smallest"
        problems.append(f"worst_ratio = {x}: {why}")
    if worst_shape is None or tuple(worst_shape) != sh:
        problems.append(f"worst_shape = {worst_shape}: (dtype, d, N, causal) of that shape, d, N, causal as ints")
    return problems


CHECKS = [
    Check("lab7.floors", ("floors",), cells=(1,), grade=floors),
    Check("lab7.bytes", ("model_bytes",), cells=(2,), allow=("run", "footprint"), grade=model_bytes),
    Check("lab7.floor", ("speedup", "byte_ratio", "std_tbps", "tiled_tflops"), cells=(3,), allow=("run", "footprint"),
          grade=floor),
    Check("lab7.sdpa", ("worst_ratio", "worst_shape"), cells=(4,), grade=sdpa),
]
