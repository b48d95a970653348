#!/usr/bin/env python3
"""same_grads.py: does a backward version of the fast kernels give bitwise the same dQ (its fp32
accumulator too), dK, dV on every head when run again on the same inputs?  A deterministic backward (version 15: dQ added in a
fixed order) must; one that adds dQ by atomics or reductions in whatever order the CTAs reach them
(versions 9, 13, 14) may differ in dQ (never in dK, dV: each CTA owns its key block).  Needs a CUDA
GPU and PyTorch.

    python3 bench/same_grads.py LIB VERSION [--shapes quick|all] [--runs 3]

The inputs: Q, K, V, dO drawn from N(0, 1) in the storage type; O and L (the natural-log
logsumexp of the scaled scores) computed in fp32 by PyTorch, a few heads at a time.  Prints one
line a kernel, shape and mask (which outputs differed from the first run, and by how much at
most); exit 0 when every run equals the first, 1 when any differs, 2 on bad input (one line)."""
import argparse
import math
import sys

import torch
from fast_kernels import FastKernels

SHAPES = {  # (N, heads): as bench/same_output.py, the benchmark's odd and recorded B x H
    "quick": [(1000, 720), (4096, 128)],
    "all": [(1000, 720), (1024, 1024), (2048, 256), (3000, 176), (4096, 128), (5000, 80), (12000, 48), (16384, 32)],
}


def forward_fp32(q, k, v, causal, chunk):
    """O (storage type) and L (fp32, natural log) of softmax(q k^T / sqrt d) v, chunk heads at a time."""
    nbh, N, d = q.shape
    o, L = torch.empty_like(q), torch.empty(nbh, N, device=q.device)
    mask = torch.ones(N, N, device=q.device, dtype=torch.bool).tril() if causal else None
    for h in range(0, nbh, chunk):
        s = torch.matmul(q[h:h + chunk].float(), k[h:h + chunk].float().transpose(1, 2)) / math.sqrt(d)
        if mask is not None:
            s.masked_fill_(~mask, float("-inf"))
        L[h:h + chunk] = torch.logsumexp(s, -1)
        o[h:h + chunk] = torch.matmul(torch.softmax(s, -1), v[h:h + chunk].float()).to(q.dtype)
    return o, L


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("lib")
    ap.add_argument("version", type=int)
    ap.add_argument("--shapes", default="quick", choices=sorted(SHAPES))
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    if a.runs < 2:
        print("same_grads: --runs must be at least 2", file=sys.stderr)
        return 2
    lib = FastKernels(a.lib)
    ks = [k for k in lib.kernels if k["version"] == a.version and k["bwd"]]
    if not ks:
        print(f"same_grads: no backward kernel of version {a.version} runs here", file=sys.stderr)
        return 2
    torch.manual_seed(20261205)
    stream = torch.cuda.current_stream().cuda_stream
    bad = 0
    for k in ks:
        tdt = torch.float16 if k["dtype"] == 1 else torch.bfloat16
        for N, nbh in SHAPES[a.shapes]:
            q, kk, v, do = (torch.randn(nbh, N, k["d"], device="cuda", dtype=tdt) for _ in range(4))
            for causal in (0, 1):
                o, L = forward_fp32(q, kk, v, causal, max(1, (1 << 28) // (N * N)))
                first, diff = None, {}
                for _ in range(a.runs):
                    g = {n: torch.full_like(q, float("nan")) for n in ("dQ", "dK", "dV")}
                    g["dQacc"] = torch.full((nbh, N, k["d"]), float("nan"), device="cuda")  # dQ in fp32, before rounding
                    lib.run(k, nbh, N, causal, stream, Q=q, K=kk, V=v, O=o, L=L, dO=do, Dv=torch.empty(nbh, N, device="cuda"), **g)
                    torch.cuda.synchronize()
                    if first is None:
                        first = g
                        continue
                    for n in g:
                        if not torch.equal(g[n], first[n]):
                            delta = (g[n].float() - first[n].float()).abs().max().item()
                            diff[n] = max(diff.get(n, 0.0), delta)
                finite = all(bool(torch.isfinite(t).all()) for t in first.values())
                bad += bool(diff) or not finite
                what = "equal" if not diff else "DIFFERENT: " + ", ".join(f"{n} (max {x:.3g})" for n, x in diff.items())
                print(f"v{k['version']} {'fp16' if k['dtype'] == 1 else 'bf16'} d={k['d']} {k['Br']}x{k['Bc']} N={N} heads={nbh} "
                      f"causal={causal}: {a.runs} runs {what}{'' if finite else ' (NaN/inf: an element not written)'}")
    print(f"same_grads: version {a.version}: {'every run equal to the first' if not bad else f'{bad} cases differ'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
