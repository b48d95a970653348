#!/usr/bin/env python3
"""ab_fwd.py: two or more builds of the fast kernels (e.g. a kernel before and after a change),
one forward version, timed side by side in ONE process on the same inputs, with SDPA's cuDNN
backend beside them, call by call in turn (A, B, ..., cuDNN, then B, ..., cuDNN, A, ...: the order
rotated every call, sdpa_timing.time_interleaved), in --rounds rounds, so that the GPU's clock and
temperature, which move with what ran just before, fall on every build alike.  The question it answers is "is B faster
than A, shape by shape?", the ratio measured side by side (the steps of docs/journal/v12_forward.md).

Needs a CUDA GPU and PyTorch.  The shapes are the benchmark's (bench/gpu_sdpa.py: every dtype, d,
N, causal; --quick: fp16, N = 1024 and 4096); each build runs every tile it has for the version.

    python3 bench/ab_fwd.py --version 12 --csv ab.csv [--quick] [--rounds 3] [--reps 20] \\
        NAME=LIB NAME=LIB ...

Every output is checked against an fp32 reference on 2 heads (the benchmark's accuracy rule needs
FA2's error: here a build passes when its error is at most twice that of the first build, +1e-4).
Writes a CSV with provenance: per build, tile and shape the median over rounds of each round's
median ms, TFLOP/s, the ratio to the first build and to cuDNN.  Exit 2 on bad input."""
import argparse
import statistics
import sys

import torch
from gpu_sdpa import BATCH, ODD_BATCH
from sdpa_torch import DTYPES, Lib, reference, rel_err, time_interleaved, write_rows
from torch.nn.attention import SDPBackend, sdpa_kernel
import torch.nn.functional as F


def fail(msg):
    print(f"ab_fwd: {msg}", file=sys.stderr)
    sys.exit(2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("builds", nargs="+", help="NAME=PATH of a libflashlab_kernels.so, two or more; the first is the base")
    ap.add_argument("--version", type=int, required=True)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--shapes", default="all", choices=("recorded", "odd", "all"))
    ap.add_argument("--N", default="", help="comma-separated N to keep (default all of --shapes)")
    ap.add_argument("--causal", default="both", choices=("both", "0", "1"))
    ap.add_argument("--d", default="", help="comma-separated head dims to keep (default 64,128)")
    ap.add_argument("--dtypes", default="", help="comma-separated dtypes to keep (default fp16,bf16)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    a = ap.parse_args()
    builds = []
    for b in a.builds:
        name, sep, path = b.partition("=")
        if not sep or not name or not path:
            fail(f"build '{b}': must be NAME=PATH")
        builds.append((name, Lib(path)))
    if len(builds) < 2 or len({n for n, _ in builds}) != len(builds):
        fail("builds: two or more, with distinct names")
    if a.rounds < 1 or a.reps < 1:
        fail("--rounds and --reps must be at least 1")
    if not torch.cuda.is_available():
        print("ab_fwd: no CUDA GPU; nothing was run", file=sys.stderr)
        return 77
    batch = {"recorded": BATCH, "odd": ODD_BATCH, "all": {**BATCH, **ODD_BATCH}}[a.shapes]
    Ns = sorted(batch)[0::2] if a.quick else sorted(batch)
    if a.N:
        keep = {int(x) for x in a.N.split(",")}
        if keep - set(batch):
            fail(f"--N: {sorted(keep - set(batch))} not among the shapes {sorted(batch)}")
        Ns = [n for n in Ns if n in keep]
    dtypes = ["fp16"] if a.quick else ["fp16", "bf16"]
    if a.dtypes:
        dtypes = [x for x in a.dtypes.split(",")]
        if set(dtypes) - set(DTYPES):
            fail(f"--dtypes: {dtypes} must be among {sorted(DTYPES)}")
    ds = [int(x) for x in a.d.split(",")] if a.d else [64, 128]
    torch.manual_seed(20261202)
    dev = torch.cuda.get_device_properties(0)
    rows = []
    for dname in dtypes:
        tdt, fdt = DTYPES[dname]
        for d in ds:
            for N in Ns:
                for causal in (0, 1) if a.causal == "both" else (int(a.causal),):
                    rows += ab_shape(a, builds, dname, tdt, fdt, batch[N], 16, N, d, causal)
                    write_csv(a, dev, rows)
    return 0


def ab_shape(a, builds, dname, tdt, fdt, B, H, N, d, causal):
    nbh, flop = B * H, 4.0 * B * H * N * N * d * (0.5 if causal else 1.0)
    q, k, v = (torch.randn(B, H, N, d, device="cuda", dtype=tdt) for _ in range(3))
    ro = reference(q, k, v, torch.zeros_like(q), causal, 2)[0]
    L = torch.empty(nbh * N, device="cuda", dtype=torch.float32)
    runs = []  # (build, kernel or None for cuDNN, fn, out)
    for name, lib in builds:
        for kern in lib.kernels:
            if kern["version"] != a.version or kern["bwd"] or kern["dtype"] != fdt or kern["d"] != d:
                continue
            o = torch.full_like(q, float("nan"))
            runs.append((name, kern, (lambda lib=lib, kern=kern, o=o: lib.run(kern, nbh, N, causal, Q=q, K=k, V=v, O=o, L=L)), o))
    if not runs:
        fail(f"no forward kernel of version {a.version} for {dname} d={d} in any build")
    oc = [None]

    def cudnn():
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            oc[0] = F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
    runs.append(("sdpa-cudnn", None, cudnn, None))
    err = {}
    for name, kern, fn, o in runs:
        fn()
        torch.cuda.synchronize()
        err[(name, kern and (kern["Br"], kern["Bc"]))] = rel_err(o if o is not None else oc[0], ro, 2)
    times = {key: [] for key in err}
    for _ in range(a.rounds):  # a round: every run a call in turn, the order rotated call by call
        for (name, kern, fn, o), (ms, _) in zip(runs, time_interleaved([r[2] for r in runs], a.warmup, a.reps)):
            times[(name, kern and (kern["Br"], kern["Bc"]))].append(ms)
    med = {key: statistics.median(t) for key, t in times.items()}
    base = builds[0][0]
    out = []
    for (name, tile), ms in med.items():
        e, e0 = err[(name, tile)], err.get((base, tile))
        r = dict(build=name, dtype=dname, B=B, H=H, N=N, d=d, causal=causal, Br=tile[0] if tile else "",
                 Bc=tile[1] if tile else "", median_ms=ms, tflops=flop / ms / 1e9, rel_err=e,
                 acc_ok=int(e == e and (tile is None or e0 is None or e <= 2 * e0 + 1e-4)),
                 ratio_vs_base=med[(base, tile)] / ms if (base, tile) in med else None,
                 ratio_vs_cudnn=med[("sdpa-cudnn", None)] / ms, rounds=" ".join(f"{t:.4f}" for t in times[(name, tile)]))
        out.append(r)
        print(f"{dname} d={d:3d} N={N:5d} {'causal' if causal else 'full  '} {name:12s} "
              f"{('%sx%s' % tile) if tile else '':8s} {ms:8.3f} ms {r['tflops']:6.1f} TFLOP/s "
              f"x{r['ratio_vs_base'] or float('nan'):.3f} of {base}, x{r['ratio_vs_cudnn']:.3f} of cuDNN "
              f"err {e:.2e}{'' if r['acc_ok'] else ' NOT ACCURATE'}", flush=True)
    return out


def write_csv(a, dev, rows):
    cols = ["build", "dtype", "B", "H", "N", "d", "causal", "Br", "Bc", "median_ms", "tflops", "ratio_vs_base",
            "ratio_vs_cudnn", "rel_err", "acc_ok", "rounds"]
    write_rows(a.csv, dev, "ab_fwd.py: builds of the fast kernels side by side in one process, with SDPA cuDNN",
               [f"timing: {a.rounds} rounds; in a round every build and cuDNN take turns, a call each, the order rotated call by "
                f"call (sdpa_timing.time_interleaved), {a.reps} calls each between CUDA events after {a.warmup} warm-ups; "
                f"median_ms is the median of the rounds' medians (runs 41-50 timed a build's {a.reps} calls together instead)"], cols, rows)

if __name__ == "__main__":
    sys.exit(main())
