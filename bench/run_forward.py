#!/usr/bin/env python3
"""run_forward.py: runs one fast kernel of ours REPS times on random inputs, for Nsight Compute to
profile its launches (scripts/ncu_speed.sh, bench/ncu_heads.sh): a forward, or with PASS bwd a
backward (our version-7 forward, flash2, run once first for the O and L it reads: profile the
backward's kernels by name).  Needs a CUDA GPU and PyTorch.

    python3 bench/run_forward.py LIB VERSION DTYPE D BR BC N NBH CAUSAL REPS [PASS]

LIB is libflashlab_kernels.so; DTYPE fp16 or bf16; NBH the heads (batch x heads), each of N rows;
CAUSAL 0 or 1; PASS fwd (the default) or bwd.  Exit status 2 when no such kernel is in the library
or runs on this GPU."""
import sys

import torch
from fast_kernels import FastKernels

FDT = {"fp16": (torch.float16, 1), "bf16": (torch.bfloat16, 2)}


def main(argv):
    if len(argv) not in (11, 12) or argv[3] not in FDT or (len(argv) == 12 and argv[11] not in ("fwd", "bwd")):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    lib, (tdt, fdt) = argv[1], FDT[argv[3]]
    version, d, br, bc, N, nbh, causal, reps = map(int, (argv[2], *argv[4:11]))
    bwd = len(argv) == 12 and argv[11] == "bwd"
    fk = FastKernels(lib)
    k = fk.find(version, fdt, d, br, bc)
    if k is None or bool(k["bwd"]) != bwd:
        print(f"run_forward: no {'backward' if bwd else 'forward'} kernel v{version} {argv[3]} d={d} {br}x{bc} runs here",
              file=sys.stderr)
        return 2
    stream = torch.cuda.current_stream().cuda_stream
    q, kk, v = (torch.randn(nbh, N, d, device="cuda", dtype=tdt) for _ in range(3))
    o, L = torch.empty_like(q), torch.empty(nbh, N, device="cuda", dtype=torch.float32)
    if bwd:
        f7 = fk.find(7, fdt, d)
        if f7 is None:
            print(f"run_forward: no version-7 forward {argv[3]} d={d} for the backward's O and L", file=sys.stderr)
            return 2
        fk.run(f7, nbh, N, causal, stream, Q=q, K=kk, V=v, O=o, L=L)
        do = torch.randn_like(q)
        dqacc = torch.empty(nbh * N * d, device="cuda", dtype=torch.float32)
        dv_ = torch.empty(nbh * N, device="cuda", dtype=torch.float32)
        dq, dk, dv = (torch.empty_like(q) for _ in range(3))
    for _ in range(reps):
        if bwd:
            fk.run(k, nbh, N, causal, stream, Q=q, K=kk, V=v, O=o, L=L, dO=do, dQacc=dqacc, Dv=dv_, dQ=dq, dK=dk, dV=dv)
        else:
            fk.run(k, nbh, N, causal, stream, Q=q, K=kk, V=v, O=o, L=L)
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
