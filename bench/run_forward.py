#!/usr/bin/env python3
"""run_forward.py: runs one fast forward kernel of ours REPS times on random inputs, for Nsight
Compute to profile one of the launches (scripts/ncu_speed.sh).  Needs a CUDA GPU and PyTorch.

    python3 bench/run_forward.py LIB VERSION DTYPE D BR BC N NBH CAUSAL REPS

LIB is libflashlab_kernels.so; DTYPE fp16 or bf16; NBH the heads (batch x heads), each of N rows;
CAUSAL 0 or 1.  Exit status 2 when no such kernel is in the library or runs on this GPU."""
import sys

import torch
from fast_kernels import FastKernels

FDT = {"fp16": (torch.float16, 1), "bf16": (torch.bfloat16, 2)}


def main(argv):
    if len(argv) != 11 or argv[3] not in FDT:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    lib, (tdt, fdt) = argv[1], FDT[argv[3]]
    version, d, br, bc, N, nbh, causal, reps = map(int, (argv[2], *argv[4:]))
    fk = FastKernels(lib)
    k = fk.find(version, fdt, d, br, bc)
    if k is None or k["bwd"]:
        print(f"run_forward: no forward kernel v{version} {argv[3]} d={d} {br}x{bc} runs here", file=sys.stderr)
        return 2
    q, kk, v = (torch.randn(nbh, N, d, device="cuda", dtype=tdt) for _ in range(3))
    o, L = torch.empty_like(q), torch.empty(nbh, N, device="cuda", dtype=torch.float32)
    for _ in range(reps):
        fk.run(k, nbh, N, causal, torch.cuda.current_stream().cuda_stream, Q=q, K=kk, V=v, O=o, L=L)
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
