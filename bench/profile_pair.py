#!/usr/bin/env python3
"""profile_pair.py: one call of our forward (or backward) kernel and one of a PyTorch SDPA backend
(FA2 by default) on the same inputs, for Nsight Compute to profile side by side (the "what still
separates us" tables of docs/performance.md).

  ncu --kernel-name regex:'fl_fast|flash' python3 bench/profile_pair.py --lib build/libflashlab_kernels.so \
      --N 4096 --d 128 --B 8 --tile 128x64 [--bwd]
"""
import argparse

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from sdpa_torch import Lib   # beside this file

ap = argparse.ArgumentParser()
ap.add_argument("--lib", required=True)
ap.add_argument("--N", type=int, default=4096)
ap.add_argument("--d", type=int, default=128)
ap.add_argument("--B", type=int, default=8)
ap.add_argument("--H", type=int, default=16)
ap.add_argument("--tile", default="128x64")
ap.add_argument("--causal", type=int, default=0)
ap.add_argument("--bwd", action="store_true")
ap.add_argument("--version", type=int, default=0, help="ours: 7 or 10 forward, 9 backward (default 7 / 9)")
ap.add_argument("--backend", default="flash", choices=["flash", "cudnn", "efficient"], help="the SDPA backend beside ours")
a = ap.parse_args()
lib = Lib(a.lib)
br, bc = (int(x) for x in a.tile.split("x"))
ver = a.version or (9 if a.bwd else 7)
k = next(x for x in lib.kernels if x["version"] == ver and x["dtype"] == 1 and x["d"] == a.d and x["Br"] == br and x["Bc"] == bc)
fk = next(x for x in lib.kernels if x["version"] == 7 and x["dtype"] == 1 and x["d"] == a.d)
q, kk, v, do = (torch.randn(a.B, a.H, a.N, a.d, device="cuda", dtype=torch.float16) for _ in range(4))
nbh = a.B * a.H
o = torch.empty_like(q)
L = torch.empty(nbh * a.N, device="cuda")
lib.run(fk, nbh, a.N, a.causal, Q=q, K=kk, V=v, O=o, L=L)
if a.bwd:
    dq, dk, dv = (torch.empty_like(q) for _ in range(3))
    acc = torch.empty(nbh * a.N * a.d, device="cuda")
    Dv = torch.empty(nbh * a.N, device="cuda")
    lib.run(k, nbh, a.N, a.causal, Q=q, K=kk, V=v, O=o, L=L, dO=do, dQacc=acc, Dv=Dv, dQ=dq, dK=dk, dV=dv)
else:
    lib.run(k, nbh, a.N, a.causal, Q=q, K=kk, V=v, O=o, L=L)
backend = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
           "efficient": SDPBackend.EFFICIENT_ATTENTION}[a.backend]
with sdpa_kernel([backend]):
    qg, kg, vg = (x.detach().requires_grad_(a.bwd) for x in (q, kk, v))
    og = F.scaled_dot_product_attention(qg, kg, vg, is_causal=bool(a.causal))
    if a.bwd:
        torch.autograd.grad(og, (qg, kg, vg), do)
torch.cuda.synchronize()
print("profile_pair: done")
