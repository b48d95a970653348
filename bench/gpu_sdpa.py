#!/usr/bin/env python3
"""gpu_sdpa.py: our fast kernels against PyTorch SDPA's backends, in ONE process, on the same inputs.

Needs a CUDA GPU, PyTorch, and libflashlab_kernels.so (kernels/CMakeLists.txt; built with the
rest by `cmake --build build`).  Loads the library with ctypes and passes torch's device pointers
and current stream.  For every shape (dtype x d x N x causal):

  1. inputs Q, K, V (and dO) drawn from N(0, 1) in (B, H, N, d), never zeros;
  2. every implementation runs once on them; its output is compared with an fp32 reference on the
     first heads (||out - ref|| / ||ref||, beside SDPA FA2's own error on the same heads) and
     checked free of NaN (our outputs are poisoned with NaN first);
  3. timing, every call between two CUDA events, median and p95 ms of --reps calls after warm-ups:
     --timing interleaved (the default) runs the implementations of a pass in turn, one call each
     a round, the order rotated every round, so that each meets the GPU's clock and temperature as
     the others do (measured: back to back, the same kernel's time moves by up to 20 % with what
     ran before it; docs/performance.md); --timing sequential runs each implementation's calls
     together (SDPA's backends first, then ours; the records before run 51);
     TFLOP/s = 4 B H N^2 d / t forward, 10 B H N^2 d / t backward (2.5x: the FlashAttention
     papers' convention), halved for causal; GB/s of the fewest bytes (Q, K, V read, O written;
     backward: Q, K, V, O, dO read, dQ, dK, dV written) and, for ours, of the model's bytes
     (`flashlab count`, the simulator, for the kernel's schedule and tiles);
  4. ratios of each of ours to SDPA's FA2 and cuDNN backends measured in the same run.

Shapes: --shapes recorded (the default: N = 1024, 2048, 4096, 16384, B x 16 heads of 32k-64k
tokens), odd (N = 1000, 3000, 5000, 12000: no multiple of any tile, with B x H = 720, 176, 80, 48
heads, none a multiple of the H200's 132 SMs), or all.

Writes a CSV with provenance (`#` lines) and prints a short table.  This is a benchmark, not a
test: run it on the GPU machine (kernels/device_run.sh step `bench`).

  python3 bench/gpu_sdpa.py --lib build/libflashlab_kernels.so --flashlab build/flashlab \
      --csv figures/data/gpu_sdpa.csv [--quick] [--reps 30] [--backends sdpa-fa2] [--only-versions 8,10]

Kernels of ours that do not run on this GPU (fl_fast_runs_here: versions 10 and 12 need sm_90a) are left
out with a line saying why.
"""
import argparse
import datetime
import math
import os
import sys

import torch
import torch.nn.functional as F
from fast_kernels import FastKernels
from model_cli import count, kernel_footprint
from torch.nn.attention import SDPBackend, sdpa_kernel

DTYPES = {"fp16": (torch.float16, 1), "bf16": (torch.bfloat16, 2)}  # name -> (torch dtype, fl_dtype)
BATCH = {1024: 64, 2048: 16, 4096: 8, 16384: 2}  # 16 heads; B*N between 16k and 64k tokens
ODD_BATCH = {1000: 45, 3000: 11, 5000: 5, 12000: 3}  # 16 heads; B*H not a multiple of 132 (nor of 8)
BACKENDS = [("sdpa-fa2", SDPBackend.FLASH_ATTENTION), ("sdpa-cudnn", SDPBackend.CUDNN_ATTENTION),
            ("sdpa-efficient", SDPBackend.EFFICIENT_ATTENTION), ("sdpa-math", SDPBackend.MATH)]


def fail(msg):
    print(f"gpu_sdpa: {msg}", file=sys.stderr)
    sys.exit(2)


class Lib(FastKernels):
    """The fast kernels (fast_kernels.py); a refusal ends the benchmark with one line, exit 2."""

    def __init__(self, path):
        try:
            super().__init__(path)
        except OSError as e:
            fail(f"--lib: cannot load {path} ({e}); build it with cmake (kernels/CMakeLists.txt)")

    def run(self, k, nbh, N, causal, **t):
        try:
            super().run(k, nbh, N, causal, torch.cuda.current_stream().cuda_stream, **t)
        except RuntimeError as e:
            fail(str(e))


def time_ms(fn, warmup, reps):
    """median and p95 of reps timed calls (CUDA events around each), after warmup calls"""
    for _ in range(warmup):
        fn()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for a, b in ev:
        a.record()
        fn()
        b.record()
    torch.cuda.synchronize()
    t = sorted(a.elapsed_time(b) for a, b in ev)
    return t[len(t) // 2], t[min(len(t) - 1, int(math.ceil(0.95 * len(t))) - 1)]


def time_interleaved(fns, warmup, reps):
    """[(median, p95) ms] of each of fns: warmup rounds, then reps rounds, each calling every fn
    once between two CUDA events, round r in the order rotated by r"""
    for _ in range(warmup):
        for f in fns:
            f()
    ev = [[(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)] for _ in fns]
    for r in range(reps):
        for j in range(len(fns)):
            i = (j + r) % len(fns)
            ev[i][r][0].record()
            fns[i]()
            ev[i][r][1].record()
    torch.cuda.synchronize()
    out = []
    for e in ev:
        t = sorted(a.elapsed_time(b) for a, b in e)
        out.append((t[len(t) // 2], t[min(len(t) - 1, int(math.ceil(0.95 * len(t))) - 1)]))
    return out


def reference(q, k, v, do, causal, nref):
    """fp32 forward (and gradients) on the first nref heads of batch 0"""
    qf, kf, vf = (x[0, :nref].float().detach().requires_grad_(True) for x in (q, k, v))
    s = qf @ kf.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        n = q.shape[2]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    o = s.softmax(-1) @ vf
    o.backward(do[0, :nref].float())
    return o.detach(), qf.grad, kf.grad, vf.grad


def rel_err(x, ref, nref):
    x = x[0, :nref].float()
    if not torch.isfinite(x).all():
        return float("nan")
    return ((x - ref).norm() / ref.norm()).item()


def model_bytes(flashlab, k, B, H, N, causal, pass_):
    """HBM bytes of the kernel's schedule and tiles, from the simulator (fl_run through the CLI)"""
    try:
        M = kernel_footprint(k["algo"], k["d"], k["Br"], k["Bc"], pass_ == "bwd")
        row = count(flashlab, k["algo"], N, k["d"], k["Br"], k["Bc"], M, "fp16", pass_,
                    "bottom-right" if causal else None, batch=B, heads=H)
        return int(row["hbm_bytes"])
    except (RuntimeError, KeyError) as e:
        print(f"gpu_sdpa: model bytes unavailable for {k} ({e})", file=sys.stderr)
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", required=True)
    ap.add_argument("--flashlab", default=None, help="the flashlab CLI, for the model's bytes")
    ap.add_argument("--csv", required=True)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--timing", default="interleaved", choices=("interleaved", "sequential"),
                    help="the implementations of a pass in turn, a call each a round (default), or each one's calls together")
    ap.add_argument("--quick", action="store_true", help="one shape per d, fp16, for a first look")
    ap.add_argument("--shapes", default="recorded", choices=("recorded", "odd", "all"),
                    help="recorded: N = 1024..16384; odd: N = 1000, 3000, 5000, 12000 (B*H not a multiple of 132)")
    ap.add_argument("--nref", type=int, default=2, help="heads checked against the fp32 reference")
    ap.add_argument("--no-bwd", action="store_true")
    ap.add_argument("--skip-versions", default="", help="comma-separated versions of ours to leave out")
    ap.add_argument("--only-versions", default="", help="comma-separated versions of ours to run (default all)")
    ap.add_argument("--tiles", default="", help="forward tiles of ours to run, e.g. 128x64,128x128 (default all)")
    ap.add_argument("--backends", default="", help="SDPA backends to run, e.g. sdpa-fa2 (default all four)")
    ap.add_argument("--causal", default="both", choices=("both", "0", "1"),
                    help="the shapes without (0) or with (1) the causal mask, or both")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("gpu_sdpa: no CUDA GPU; nothing was run", file=sys.stderr)
        return 77
    lib = Lib(a.lib)
    for k, why in lib.skipped:
        print(f"gpu_sdpa: v{k['version']} {k['algo']} d={k['d']} {k['Br']}x{k['Bc']} left out: {why}", file=sys.stderr)
    dev = torch.cuda.get_device_properties(0)
    torch.manual_seed(20261130)
    rows = []
    batch = {"recorded": BATCH, "odd": ODD_BATCH, "all": {**BATCH, **ODD_BATCH}}[a.shapes]
    Ns = sorted(batch)[0::2] if a.quick else sorted(batch)  # quick: recorded 1024, 4096
    dtypes = ["fp16"] if a.quick else ["fp16", "bf16"]
    for dname in dtypes:
        tdt, fdt = DTYPES[dname]
        for d in (64, 128):
            for N in Ns:
                for causal in (0, 1) if a.causal == "both" else (int(a.causal),):
                    B, H = batch[N], 16
                    rows += bench_shape(a, lib, dname, tdt, fdt, B, H, N, d, causal)
                    write_csv(a, dev, rows, table=False)  # after every shape: a cut-off run keeps its rows
    write_csv(a, dev, rows)
    return 0


def bench_shape(a, lib, dname, tdt, fdt, B, H, N, d, causal):
    nbh, flop_f = B * H, 4.0 * B * H * N * N * d * (0.5 if causal else 1.0)
    flop_b = 2.5 * flop_f
    el = torch.finfo(tdt).bits // 8
    min_f = 4 * nbh * N * d * el  # Q, K, V read, O written
    min_b = 8 * nbh * N * d * el  # Q, K, V, O, dO read; dQ, dK, dV written
    q, k, v, do = (torch.randn(B, H, N, d, device="cuda", dtype=tdt) for _ in range(4))
    nref = min(a.nref, H)
    ro, rdq, rdk, rdv = reference(q, k, v, do, causal, nref)
    out = []

    def row(impl, version, pass_, kern, ms, p95, err, mbytes, note=""):
        fl, mb = (flop_f, min_f) if pass_ == "fwd" else (flop_b, min_b)
        out.append(dict(impl=impl, version=version, pass_=pass_, dtype=dname, B=B, H=H, N=N, d=d, causal=causal,
                        Br=kern["Br"] if kern else "", Bc=kern["Bc"] if kern else "", median_ms=ms, p95_ms=p95,
                        tflops=fl / ms / 1e9 if ms else None, gbps_min=mb / ms / 1e6 if ms else None,
                        model_bytes=mbytes, gbps_model=mbytes / ms / 1e6 if (ms and mbytes) else None,
                        rel_err=err, note=note))
        print(f"{dname} d={d:3d} N={N:5d} B={B:2d} {'causal' if causal else 'full  '} {pass_} {impl:16s} "
              f"{('%sx%s' % (kern['Br'], kern['Bc'])) if kern else '':8s} "
              f"{ms if ms else float('nan'):8.3f} ms {fl / ms / 1e9 if ms else float('nan'):7.1f} TFLOP/s err {err:.2e} {note}",
              flush=True)

    def timed(entries):
        """entries: (impl, version, pass_, kern, fn, err, mbytes) of one pass, each already run once;
        times them (--timing) and adds their rows"""
        if a.timing == "interleaved":
            ts = time_interleaved([e[4] for e in entries], a.warmup, a.reps)
        else:
            ts = [time_ms(e[4], a.warmup, a.reps) for e in entries]
        for (impl, version, pass_, kern, _, err, mbytes), (ms, p95) in zip(entries, ts):
            row(impl, version, pass_, kern, ms, p95, err, mbytes)

    backends = [(n, be) for n, be in BACKENDS if not (a.backends and n not in a.backends.split(","))
                and not (n == "sdpa-math" and N > 4096)]  # math: fp32 S and P of 2 x 16 x 16384^2, minutes a call
    skip = {int(x) for x in a.skip_versions.split(",") if x}
    only = {int(x) for x in a.only_versions.split(",") if x}
    kerns = [kern for kern in lib.kernels
             if kern["dtype"] == fdt and kern["d"] == d and kern["version"] not in skip and (not only or kern["version"] in only)
             and not (a.tiles and not kern["bwd"] and kern["algo"] == "flash2" and f"{kern['Br']}x{kern['Bc']}" not in a.tiles.split(","))]

    def sdpa(be):
        """SDPA's forward on backend be (a callable)"""
        def f():
            with sdpa_kernel([be]):
                return F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
        return f

    # ---- the forward pass: SDPA's backends, then ours
    entries = []
    for name, be in backends:
        try:
            f = sdpa(be)
            o = f()
            torch.cuda.synchronize()
            entries.append((name, "", "fwd", None, f, rel_err(o, ro, nref), None))
        except RuntimeError as e:  # a backend that does not take this shape or type
            print(f"gpu_sdpa: {name} {dname} N={N} d={d}: {str(e).splitlines()[0]}", file=sys.stderr)
    for kern in (x for x in kerns if not x["bwd"]):
        o, L = torch.full_like(q, float("nan")), torch.empty(nbh * N, device="cuda", dtype=torch.float32)
        S = P = None
        if kern["algo"] == "standard":
            S = torch.empty(nbh * N * N, device="cuda", dtype=tdt)
            P = torch.empty_like(S)
        f = lambda kern=kern, o=o, L=L, S=S, P=P: lib.run(kern, nbh, N, causal, Q=q, K=k, V=v, O=o, L=L, S=S, P=P)
        f()
        torch.cuda.synchronize()
        err = float("nan") if torch.isnan(o).any() else rel_err(o, ro, nref)
        mbytes = model_bytes(a.flashlab, kern, B, H, N, causal, "fwd") if a.flashlab else None
        entries.append((f"ours-v{kern['version']}-{kern['algo']}", kern["version"], "fwd", kern, f, err, mbytes))
    timed(entries)
    entries = o = L = S = P = f = None
    torch.cuda.empty_cache()

    # ---- the backward pass
    if not a.no_bwd:
        entries = []
        for name, be in backends:
            try:
                qg, kg, vg = (x.detach().requires_grad_(True) for x in (q, k, v))
                with sdpa_kernel([be]):
                    og = F.scaled_dot_product_attention(qg, kg, vg, is_causal=bool(causal))
                g = torch.autograd.grad(og, (qg, kg, vg), do, retain_graph=True)
                torch.cuda.synchronize()
                errb = max(rel_err(g[0], rdq, nref), rel_err(g[1], rdk, nref), rel_err(g[2], rdv, nref))
                fb = lambda og=og, t=(qg, kg, vg): torch.autograd.grad(og, t, do, retain_graph=True)
                entries.append((name, "", "bwd", None, fb, errb, None))
                g = None
            except RuntimeError as e:
                print(f"gpu_sdpa: {name} {dname} N={N} d={d} backward: {str(e).splitlines()[0]}", file=sys.stderr)
        for kern in (x for x in kerns if x["bwd"]):
            # the backward reads what our own forward saved: O and L (flash2: version 7), or P
            # (standard: version 8, the first built for this d)
            fv = 8 if kern["algo"] == "standard" else 7
            fk = next(x for x in lib.kernels if x["version"] == fv and x["dtype"] == fdt and x["d"] == d)
            o, L = torch.full_like(q, float("nan")), torch.empty(nbh * N, device="cuda", dtype=torch.float32)
            S = P = dP = dS = None
            if kern["algo"] == "standard":
                S = torch.empty(nbh * N * N, device="cuda", dtype=tdt)
                P, dP, dS = torch.empty_like(S), torch.empty_like(S), torch.empty_like(S)
            lib.run(fk, nbh, N, causal, Q=q, K=k, V=v, O=o, L=L, S=S, P=P)
            dQacc = torch.empty(nbh * N * d, device="cuda", dtype=torch.float32)
            Dv = torch.empty(nbh * N, device="cuda", dtype=torch.float32)
            dq, dk, dv = (torch.full_like(q, float("nan")) for _ in range(3))
            f = lambda kern=kern, t=(o, L, P, dQacc, Dv, dq, dk, dv, dP, dS): lib.run(
                kern, nbh, N, causal, Q=q, K=k, V=v, O=t[0], L=t[1], P=t[2], dO=do, dQacc=t[3], Dv=t[4], dQ=t[5], dK=t[6],
                dV=t[7], dP=t[8], dS=t[9])
            f()
            torch.cuda.synchronize()
            err = max(rel_err(dq, rdq, nref), rel_err(dk, rdk, nref), rel_err(dv, rdv, nref))
            if any(torch.isnan(x).any() for x in (dq, dk, dv)):
                err = float("nan")
            mbytes = model_bytes(a.flashlab, kern, B, H, N, causal, "bwd") if a.flashlab else None
            entries.append((f"ours-v{kern['version']}-{kern['algo']}", kern["version"], "bwd", kern, f, err, mbytes))
        timed(entries)
        entries = f = None
        torch.cuda.empty_cache()
    # accuracy verdict and ratios to SDPA FA2 and cuDNN measured here (> 1: faster than them)
    fa2 = {r["pass_"]: r for r in out if r["impl"] == "sdpa-fa2"}
    cudnn = {r["pass_"]: r for r in out if r["impl"] == "sdpa-cudnn"}
    for r in out:
        ref, cu = fa2.get(r["pass_"]), cudnn.get(r["pass_"])
        r["ratio_vs_fa2"] = (ref["median_ms"] / r["median_ms"]) if ref and r["median_ms"] else None
        r["ratio_vs_cudnn"] = (cu["median_ms"] / r["median_ms"]) if cu and r["median_ms"] else None
        r["acc_ok"] = acc_ok(r, ref["rel_err"] if ref else None)
    return out


UNIT_ROUNDOFF = {"fp16": 2.0 ** -11, "bf16": 2.0 ** -8}


def acc_ok(r, e_fa2):
    """1 when r's error is at most twice SDPA FA2's (+1e-4); the materializing versions (8, 11)
    store S, P (dP, dS) in the storage type, as the model's standard schedule: for them, at most
    twice the unit roundoff of that type.  NaN (an unwritten output) never passes."""
    e = r["rel_err"]
    if e != e:
        return 0
    if e_fa2 is None or e <= 2 * e_fa2 + 1e-4:
        return 1
    return int(r["impl"].endswith("standard") and e <= 2 * UNIT_ROUNDOFF[r["dtype"]])


def write_rows(path, dev, title, notes, cols, rows):
    """Writes rows (dicts over cols; floats as %.6g, None empty) to path as CSV with its provenance:
    `#` lines of title, FLASHLAB_COMMIT, the UTC date, the GPU and torch, each of notes, the command
    line; then the header (cols, a trailing _ dropped).  Through path.tmp renamed over path, so a
    failure leaves path as it was.  bench/ab_fwd.py writes its CSV with it too."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"# {title}\n")
        f.write(f"# commit: {os.environ.get('FLASHLAB_COMMIT', 'unknown')}\n")
        f.write(f"# date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')}\n")
        f.write(f"# gpu: {dev.name}, {dev.multi_processor_count} SMs; torch {torch.__version__}, CUDA {torch.version.cuda}\n")
        for n in notes:
            f.write(f"# {n}\n")
        f.write("# command: " + " ".join(sys.argv) + "\n")
        f.write(",".join(c.rstrip("_") for c in cols) + "\n")
        for r in rows:
            f.write(",".join("" if r.get(c) is None else (f"{r[c]:.6g}" if isinstance(r[c], float) else str(r[c]))
                             for c in cols) + "\n")
    os.replace(tmp, path)


def write_csv(a, dev, rows, table=True):
    cols = ["impl", "version", "pass_", "dtype", "B", "H", "N", "d", "causal", "Br", "Bc", "median_ms", "p95_ms",
            "tflops", "gbps_min", "model_bytes", "gbps_model", "ratio_vs_fa2", "rel_err", "acc_ok", "note",
            "ratio_vs_cudnn"]
    write_rows(a.csv, dev, "gpu_sdpa.py: our fast kernels vs PyTorch SDPA backends, one process, same inputs",
               [f"timing: {a.timing}: CUDA events around each call, {a.warmup} warm-ups, median and p95 of {a.reps}"
                f"{' (a pass in rounds, a call of each implementation a round, the order rotated every round)' if a.timing == 'interleaved' else ' (each implementation in turn)'}; "
                f"TFLOP/s fwd 4BHN^2d/t, bwd 2.5x, causal halved; gbps_min = fewest bytes / t",
                f"accuracy: rel_err = ||x - ref|| / ||ref|| on {a.nref} heads vs fp32 (bwd: worst of dQ, dK, dV); "
                f"acc_ok: <= 2 x SDPA FA2's rel_err + 1e-4 (materializing versions: or <= 2 x the type's unit roundoff)"],
               cols, rows)
    if not table:
        return
    # the short table: best of ours per shape against FA2 and cuDNN
    print("\nshape                          pass  best ours (tile)        TFLOP/s   FA2 TFLOP/s  ratio  cuDNN TFLOP/s  ratio")
    keys = sorted({(r["dtype"], r["d"], r["N"], r["causal"], r["pass_"]) for r in rows})
    for kk in keys:
        sel = [r for r in rows if (r["dtype"], r["d"], r["N"], r["causal"], r["pass_"]) == kk]
        ours = [r for r in sel if r["impl"].startswith("ours") and "flash" in r["impl"] and r["acc_ok"]]
        fa2 = [r for r in sel if r["impl"] == "sdpa-fa2"]
        cu = [r for r in sel if r["impl"] == "sdpa-cudnn"]
        if not ours or not fa2:
            continue
        b = max(ours, key=lambda r: r["tflops"])
        cut = f"{cu[0]['tflops']:14.1f} {b['tflops'] / cu[0]['tflops']:6.2f}" if cu else f"{'-':>14s} {'-':>6s}"
        print(f"{kk[0]} d={kk[1]:3d} N={kk[2]:5d} {'causal' if kk[3] else 'full  '}  {kk[4]}  "
              f"{b['impl']:14s} {b['Br']}x{b['Bc']:<5} {b['tflops']:8.1f} {fa2[0]['tflops']:12.1f} "
              f"{b['tflops'] / fa2[0]['tflops']:6.2f} {cut}")


if __name__ == "__main__":
    sys.exit(main())
