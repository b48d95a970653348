#!/usr/bin/env python3
"""same_output.py: two builds of the fast kernels (e.g. two tile orders of version 12, built with
different -D switches) give bitwise the same O and L on every head, causal and not.  A tile's
arithmetic does not depend on which CTA runs it or when, so a schedule change that is only an
order must not change one bit; `flashlab-gpu validate` checks the counters and the error on one
head, this checks all heads of the benchmark's shapes.  Needs a CUDA GPU and PyTorch.

    python3 bench/same_output.py LIB_A LIB_B VERSION [--shapes all|quick]

Prints one line a kernel and shape; exit 0 when all are equal, 1 when any differs, 2 on bad
input."""
import argparse
import sys

import torch
from fast_kernels import FastKernels

SHAPES = {  # (N, heads): the benchmark's B x H (bench/gpu_sdpa.py), odd and recorded
    "quick": [(1000, 720), (4096, 128)],
    "all": [(1000, 720), (1024, 1024), (2048, 256), (3000, 176), (4096, 128), (5000, 80), (12000, 48), (16384, 32)],
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("lib_a")
    ap.add_argument("lib_b")
    ap.add_argument("version", type=int)
    ap.add_argument("--shapes", default="all", choices=sorted(SHAPES))
    a = ap.parse_args()
    A, B = FastKernels(a.lib_a), FastKernels(a.lib_b)
    ka = [k for k in A.kernels if k["version"] == a.version and not k["bwd"]]
    if not ka:
        print(f"same_output: no forward kernel of version {a.version} runs here", file=sys.stderr)
        return 2
    torch.manual_seed(20261202)
    stream = torch.cuda.current_stream().cuda_stream
    bad = 0
    for k in ka:
        kb = B.find(k["version"], k["dtype"], k["d"], k["Br"], k["Bc"])
        if kb is None:
            print(f"same_output: {a.lib_b} has no {k}", file=sys.stderr)
            return 2
        tdt = torch.float16 if k["dtype"] == 1 else torch.bfloat16
        for N, nbh in SHAPES[a.shapes]:
            q, kk, v = (torch.randn(nbh, N, k["d"], device="cuda", dtype=tdt) for _ in range(3))
            for causal in (0, 1):
                outs = []
                for lib, kern in ((A, k), (B, kb)):
                    o = torch.full_like(q, float("nan"))
                    L = torch.full((nbh, N), float("nan"), device="cuda")
                    lib.run(kern, nbh, N, causal, stream, Q=q, K=kk, V=v, O=o, L=L)
                    outs.append((o, L))
                torch.cuda.synchronize()
                same = torch.equal(outs[0][0], outs[1][0]) and torch.equal(outs[0][1], outs[1][1])
                finite = bool(torch.isfinite(outs[1][0]).all() and torch.isfinite(outs[1][1]).all())
                ok = same and finite
                bad += not ok
                print(f"v{k['version']} {'fp16' if k['dtype'] == 1 else 'bf16'} d={k['d']} {k['Br']}x{k['Bc']} N={N} heads={nbh} "
                      f"causal={causal}: {'equal' if same else 'DIFFERENT'}{'' if finite else ' (NaN/inf: a tile not written)'}")
    print(f"same_output: {'all equal' if not bad else f'{bad} differ'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
