#!/usr/bin/env python3
"""third_party_attn.py: run attention kernels we did not write, one profiled region per call, for
scripts/explain_kernels.py (the study of docs/third_party.md).

For every shape of --shapes and every backend of --backends it runs the backend's forward and
backward once unprofiled (compilation, autotuning and the library's first-call set-up stay out of
the profile), checks the forward against an fp32 reference on a few rows, then runs the forward
and the backward once more, each between torch.cuda.profiler.start() and stop(): a profiled
region.  Each region begins with a marker kernel (torch.cuda._sleep, a one-thread kernel named
spin_kernel) so that the profiler's kernel list can be cut into regions, and its description is
appended as one JSON line to the file named by the environment variable EXPLAIN_REGIONS (when
set): backend, pass, B, H, N, d, causal, dtype, and what the backend told us about its tiles.

Backends:
  flash      PyTorch SDPA, FlashAttention-2 backend (SDPBackend.FLASH_ATTENTION)
  cudnn      PyTorch SDPA, cuDNN backend (SDPBackend.CUDNN_ATTENTION)
  efficient  PyTorch SDPA, memory-efficient backend (xFormers/CUTLASS kernels)
  triton     Triton's fused-attention tutorial (its `attention`, imported from --triton-tutorial;
             the tutorial computes in fp16 only, so bf16 shapes run it on fp16 copies: same bytes)
  ours       flashlab's version 10 forward and version 9 backward (libflashlab_kernels.so, --lib)

  PYTHONPATH=bench EXPLAIN_REGIONS=regions.jsonl python3 scripts/third_party_attn.py --backends flash,cudnn --shapes all

bench/fast_kernels.py (the backend `ours`) is imported from PYTHONPATH (bench/) or from beside this
file (the flat folder docs/third_party.md copies to the GPU machine).
"""
import argparse
import importlib.util
import json
import math
import os
import sys
import time

from fast_kernels import FastKernels

# shape: (name, dtype, B, H, N, d, causal): fp16 and bf16, d 64 and 128, N 1024..16384, causal and not
SHAPES = [
    ("s1", "fp16", 8, 16, 1024, 64, 0),
    ("s2", "bf16", 4, 16, 2048, 64, 1),
    ("s3", "fp16", 2, 16, 4096, 128, 0),
    ("s4", "bf16", 2, 16, 4096, 128, 1),
    ("s5", "fp16", 1, 16, 8192, 64, 1),
    ("s6", "bf16", 1, 16, 16384, 128, 0),
]
OURS_TILES = {64: ((128, 128), (128, 64)), 128: ((128, 64), (64, 64))}  # d -> (v10 fwd, v9 bwd) Br x Bc


def log(msg):
    print(f"third_party_attn: {msg}", file=sys.stderr, flush=True)


class Regions:
    """Appends one JSON line per profiled region to $EXPLAIN_REGIONS."""

    def __init__(self):
        self.path = os.environ.get("EXPLAIN_REGIONS")
        self.n = 0

    def write(self, obj):
        if self.path:
            with open(self.path, "a") as f:
                f.write(json.dumps(obj) + "\n")


def profiled(torch, regions, desc, fn):
    """Runs fn once as a profiled region (marker kernel first); returns fn's result."""
    torch.cuda.synchronize()
    regions.write(dict(desc, region=regions.n))
    regions.n += 1
    torch.cuda.profiler.start()
    torch.cuda._sleep(1)
    r = fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    return r


def ref_rows(torch, q, k, v, causal, rows):
    """fp32 attention of head (0, 0) on the given query rows (bottom-right = top-left: Nq = Nk)"""
    qf, kf, vf = q[0, 0, rows].float(), k[0, 0].float(), v[0, 0].float()
    s = qf @ kf.T / math.sqrt(q.shape[-1])
    if causal:
        kk = torch.arange(k.shape[2], device=q.device)
        s = s.masked_fill(kk[None, :] > rows[:, None], float("-inf"))
    return s.softmax(-1) @ vf


class Ours(FastKernels):
    """flashlab's fast kernels (bench/fast_kernels.py) on torch's current stream."""

    def __init__(self, torch, path):
        super().__init__(path)
        self.torch = torch

    def run(self, k, nbh, N, causal, **t):
        super().run(k, nbh, N, causal, self.torch.cuda.current_stream().cuda_stream, **t)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backends", default="flash,cudnn,efficient,triton,ours")
    ap.add_argument("--shapes", default="all", help="comma-separated names of SHAPES (s1..s6) or all")
    ap.add_argument("--passes", default="fwd,bwd")
    ap.add_argument("--triton-tutorial", default=None, help="path of the tutorial's fused-attention .py")
    ap.add_argument("--lib", default=None, help="libflashlab_kernels.so, for backend ours")
    ap.add_argument("--deadline", type=float, default=0, help="seconds after which no further shape starts (0: none)")
    a = ap.parse_args()
    t0 = time.time()
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    if not torch.cuda.is_available():
        log("no CUDA GPU; nothing was run")
        return 77
    regions = Regions()
    dev = torch.cuda.get_device_properties(0)
    tri = None
    info = dict(header=1, gpu=dev.name, sms=dev.multi_processor_count, torch=torch.__version__,
                cuda=torch.version.cuda, cudnn=torch.backends.cudnn.version())
    backends = [b for b in a.backends.split(",") if b]
    if "triton" in backends:
        os.environ.setdefault("PYTEST_VERSION", "explain")  # the tutorial's single testing config: no autotuning
        try:
            import triton
            info["triton"] = triton.__version__
            spec = importlib.util.spec_from_file_location("fused_attention", a.triton_tutorial)
            tri = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(tri)
        except Exception as e:  # recorded, the other backends still run
            log(f"triton tutorial unavailable: {type(e).__name__}: {e}")
            backends.remove("triton")
    ours = None
    if "ours" in backends:
        try:
            ours = Ours(torch, a.lib)
        except Exception as e:
            log(f"ours unavailable: {type(e).__name__}: {e}")
            backends.remove("ours")
    regions.write(info)
    passes = a.passes.split(",")
    names = [s[0] for s in SHAPES] if a.shapes == "all" else a.shapes.split(",")
    sdpa = dict(flash=SDPBackend.FLASH_ATTENTION, cudnn=SDPBackend.CUDNN_ATTENTION,
                efficient=SDPBackend.EFFICIENT_ATTENTION)
    torch.manual_seed(20261201)
    for name, dname, B, H, N, d, causal in SHAPES:
        if name not in names:
            continue
        if a.deadline and time.time() - t0 > a.deadline:
            log(f"deadline of {a.deadline} s passed: shapes from {name} on not run")
            break
        tdt = dict(fp16=torch.float16, bf16=torch.bfloat16)[dname]
        q, k, v, do = (torch.randn(B, H, N, d, device="cuda", dtype=tdt) for _ in range(4))
        rows = torch.cat([torch.arange(0, 64), torch.arange(N - 64, N)]).cuda()
        ref = ref_rows(torch, q, k, v, causal, rows)
        shape = dict(shape=name, B=B, H=H, N=N, d=d, causal=causal)
        for be in backends:
            try:
                run_backend(torch, F, sdpa_kernel, sdpa, tri, ours, regions, be, shape, dname, q, k, v, do, rows,
                            ref, passes)
            except Exception as e:  # a backend that refuses a shape is recorded and skipped
                log(f"{be} {name}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
                torch.cuda.synchronize()
            torch.cuda.empty_cache()
        del q, k, v, do
        torch.cuda.empty_cache()
    return 0


def err_of(torch, o, rows, ref):
    x = o[0, 0, rows].float()
    if not torch.isfinite(x).all():
        return float("nan")
    return ((x - ref).norm() / ref.norm()).item()


def run_backend(torch, F, sdpa_kernel, sdpa, tri, ours, regions, be, shape, dname, q, k, v, do, rows, ref, passes):
    B, H, N, d, causal = shape["B"], shape["H"], shape["N"], shape["d"], shape["causal"]
    desc = dict(shape, backend=be, dtype=dname)
    if be in sdpa:
        qg, kg, vg = (x.detach().clone().requires_grad_(True) for x in (q, k, v))
        with sdpa_kernel([sdpa[be]]):
            fwd = lambda: F.scaled_dot_product_attention(qg, kg, vg, is_causal=bool(causal))
            o = fwd()  # warm-up: the library's first call (plans, heuristics) stays out of the profile
            torch.autograd.grad(o, (qg, kg, vg), do)
            e = err_of(torch, o, rows, ref)
            if "fwd" in passes:
                o = profiled(torch, regions, dict(desc, **{"pass": "fwd"}, rel_err=e), fwd)
            if "bwd" in passes:
                o = fwd()
                profiled(torch, regions, dict(desc, **{"pass": "bwd"}), lambda: torch.autograd.grad(o, (qg, kg, vg), do))
        return
    if be == "triton":
        q16, k16, v16, do16 = (x.to(torch.float16) for x in (q, k, v, do))
        qg, kg, vg = (x.detach().clone().requires_grad_(True) for x in (q16, k16, v16))
        sm = 1.0 / math.sqrt(d)
        ws = True
        try:
            o = tri.attention(qg, kg, vg, bool(causal), sm)  # the tutorial's default (warp_specialize=True)
        except Exception as e:
            log(f"triton {shape['shape']}: warp_specialize=True failed ({type(e).__name__}); running False")
            ws = False
            o = tri.attention(qg, kg, vg, bool(causal), sm, False)
        torch.autograd.grad(o, (qg, kg, vg), do16)
        e = err_of(torch, o, rows, ref)
        cfg = getattr(tri._attn_fwd, "best_config", None)
        extra = dict(warp_specialize=ws, storage="fp16", config=str(cfg) if cfg else "")
        fwd = lambda: tri.attention(qg, kg, vg, bool(causal), sm, ws)
        if "fwd" in passes:
            o = profiled(torch, regions, dict(desc, **{"pass": "fwd"}, rel_err=e, **extra), fwd)
        if "bwd" in passes:
            o = fwd()
            profiled(torch, regions, dict(desc, **{"pass": "bwd"}, **extra), lambda: torch.autograd.grad(o, (qg, kg, vg), do16))
        return
    if be == "ours":
        fdt = {"fp16": 1, "bf16": 2}[dname]
        (fbr, fbc), (bbr, bbc) = OURS_TILES[d]
        kf, kb, k7 = ours.find(10, fdt, d, fbr, fbc), ours.find(9, fdt, d, bbr, bbc), ours.find(7, fdt, d)
        if not (kf and kb and k7):
            raise RuntimeError(f"ours: no version 10/9/7 kernel for {dname} d={d}")
        nbh = B * H
        o = torch.full_like(q, float("nan"))
        L = torch.empty(nbh * N, device="cuda", dtype=torch.float32)
        fwd = lambda: ours.run(kf, nbh, N, causal, Q=q, K=k, V=v, O=o, L=L)
        fwd()
        torch.cuda.synchronize()
        e = err_of(torch, o, rows, ref)
        extra = dict(fwd_tile=f"{fbr}x{fbc}", bwd_tile=f"{bbr}x{bbc}")
        if "fwd" in passes:
            profiled(torch, regions, dict(desc, **{"pass": "fwd"}, rel_err=e, **extra), fwd)
        if "bwd" in passes:
            ours.run(k7, nbh, N, causal, Q=q, K=k, V=v, O=o, L=L)  # version 9 reads version 7's O and L
            dQacc = torch.empty(nbh * N * d, device="cuda", dtype=torch.float32)
            Dv = torch.empty(nbh * N, device="cuda", dtype=torch.float32)
            dq, dk, dv = (torch.empty_like(q) for _ in range(3))
            bwd = lambda: ours.run(kb, nbh, N, causal, Q=q, K=k, V=v, O=o, L=L, dO=do, dQacc=dQacc, Dv=Dv,
                                   dQ=dq, dK=dk, dV=dv)
            bwd()
            profiled(torch, regions, dict(desc, **{"pass": "bwd"}, **extra), bwd)
        return
    raise RuntimeError(f"unknown backend {be}")


if __name__ == "__main__":
    sys.exit(main())
