#!/usr/bin/env python3
"""fig2.py: the FlashAttention paper's Figure 2 on the H200, for the GPT-2-medium shape
(batch 64, 16 heads, N = 1024, d = 64, fp16, no mask): our materializing kernels (version 8)
against our tiled ones (versions 7 and 10 forward, 9 backward), every block size built.

For every kernel configuration, one row of:
  runtime        median of --reps calls (CUDA events), after warm-ups, this process;
  model_bytes    HBM bytes of the schedule and tiles by the simulator (`flashlab count`, all heads);
  counter_bytes  the kernel's own byte counters (`flashlab-gpu run`, the counters build, one head,
                 times batch x heads: heads are independent and their counts equal);
  ncu_*          Nsight Compute on the whole launch (all heads, every kernel of the version):
                 dram__bytes_read/write (HBM) and lts__t_sectors_srcunit_tex_op_read/write x 32
                 (SM <-> L2), from the CSV of `fig2.py --ncu-pass` run under ncu (bench/fig2.sh);
  gflop          4 B H N^2 d forward (the two products), 2.5x that backward.

  python3 bench/fig2.py --lib build/libflashlab_kernels.so --flashlab build/flashlab \
      --gpu build/flashlab-gpu --ncu-csv ncu.csv --csv figures/data/gpu_fig2.csv
  python3 bench/fig2.py --lib ... --ncu-pass        # one call of each, for ncu to profile
"""
import argparse
import csv
import datetime
import os
import subprocess
import sys

import torch

from gpu_sdpa import model_bytes   # beside this file
from sdpa_torch import Lib, time_ms

B, H, N, D = 64, 16, 1024, 64
PAPER = "paper (A100, fwd+bwd): standard 66.6 GFLOPs, 40.3 GB HBM R/W, 41.7 ms; FlashAttention 75.2 GFLOPs, 4.4 GB, 7.3 ms"


def configs(lib):
    """our fp16 d = 64 kernels: forward versions 7, 8, 10, backward 9 and 11"""
    return [k for k in lib.kernels if k["dtype"] == 1 and k["d"] == D and k["version"] in (7, 8, 9, 10, 11)]


def launches(k):
    """kernels one call of k launches (ncu rows), setup launches first (the forward of a backward)"""
    if k["version"] == 8:
        return 0, 3  # scores, softmax, P V
    if k["version"] == 9:
        return 1, 2  # (the forward for O and L), then preprocessing, main
    if k["version"] == 11:
        return 3, 5  # (the standard forward for P), then dV, dP, dS, dQ, dK
    return 0, 1


def tensors():
    g = torch.Generator(device="cuda").manual_seed(20261130)
    q, k, v, do = (torch.randn(B, H, N, D, device="cuda", dtype=torch.float16, generator=g) for _ in range(4))
    return q, k, v, do


def call(lib, k, t, fwd, dq_out=True):
    """one call of kernel k on the tensors t (a backward reads O, L or P of the forward run before)"""
    q, kk, v, do = t["q"], t["k"], t["v"], t["do"]
    nbh = B * H
    if k["bwd"]:
        lib.run(k, nbh, N, 0, Q=q, K=kk, V=v, O=t["o"], L=t["L"], P=t["P"], dO=do, dQacc=t["acc"], Dv=t["Dv"],
                dQ=t["dq"] if dq_out else None, dK=t["dk"], dV=t["dv"], dP=t["dP"], dS=t["dS"])
    else:
        lib.run(k, nbh, N, 0, Q=q, K=kk, V=v, O=t["o"], L=t["L"], S=t["S"] if k["version"] == 8 else None,
                P=t["P"] if k["version"] == 8 else None)


def setup(lib):
    q, k, v, do = tensors()
    nbh = B * H
    t = dict(q=q, k=k, v=v, do=do, o=torch.empty_like(q), L=torch.empty(nbh * N, device="cuda"),
             S=torch.empty(nbh * N * N, device="cuda", dtype=torch.float16),
             P=torch.empty(nbh * N * N, device="cuda", dtype=torch.float16),
             dP=torch.empty(nbh * N * N, device="cuda", dtype=torch.float16),
             dS=torch.empty(nbh * N * N, device="cuda", dtype=torch.float16),
             acc=torch.empty(nbh * N * D, device="cuda"), Dv=torch.empty(nbh * N, device="cuda"),
             dq=torch.empty_like(q), dk=torch.empty_like(q), dv=torch.empty_like(q))
    fwd = {9: next(x for x in lib.kernels if x["version"] == 10 and x["dtype"] == 1 and x["d"] == D),
           11: next(x for x in lib.kernels if x["version"] == 8 and x["dtype"] == 1 and x["d"] == D)}
    return t, fwd


def counters(gpu, k):
    """(read, write) bytes of one head from the kernel's counters (the counters build)"""
    cmd = [gpu, "run", "--algo", k["algo"], "--version", str(k["version"]), "--N", str(N), "--d", str(D),
           "--Br", str(k["Br"]), "--Bc", str(k["Bc"]), "--dtype", "fp16", "--no-check"]
    if k["bwd"]:
        cmd.append("--bwd")
    out = subprocess.run(cmd, capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("bytes:"):
            f = dict(x.split("=") for x in line.split()[1:])
            return int(f["counter_read"]), int(f["counter_write"])
    print(f"fig2: no counters for {k}: {out[-300:]}", file=sys.stderr)
    return None


def read_ncu(path, cfgs):
    """per configuration, the sums over its launches of the ncu metrics (launch order = cfgs order)"""
    rows = [r for r in csv.reader(l for l in open(path) if l.startswith('"'))]
    head, data = rows[0], rows[2:]  # rows[1]: the units
    col = {name: i for i, name in enumerate(head)}
    out, pos = [], 0
    for k in cfgs:
        skip, n = launches(k)
        sel = data[pos + skip:pos + skip + n]
        pos += skip + n
        tot = {}
        for m in ("dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_sectors_srcunit_tex_op_read.sum",
                  "lts__t_sectors_srcunit_tex_op_write.sum", "gpu__time_duration.sum"):
            if m in col:
                tot[m] = sum(float(r[col[m]].replace(",", "")) for r in sel)
        tot["kernels"] = "+".join(r[col["Kernel Name"]].split("<")[0].split("(")[0] for r in sel) if "Kernel Name" in col else ""
        out.append(tot)
    if pos != len(data):
        print(f"fig2: ncu rows {len(data)} != expected launches {pos}; ncu columns dropped", file=sys.stderr)
        return [{} for _ in cfgs]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", required=True)
    ap.add_argument("--flashlab")
    ap.add_argument("--gpu", help="flashlab-gpu (the counters build)")
    ap.add_argument("--ncu-csv")
    ap.add_argument("--csv")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--ncu-pass", action="store_true")
    a = ap.parse_args()
    lib = Lib(a.lib)
    cfgs = configs(lib)
    t, fwd = setup(lib)
    if a.ncu_pass:
        for k in cfgs:
            if k["bwd"]:
                call(lib, fwd[k["version"]], t, None)
            call(lib, k, t, fwd, dq_out=False)
        torch.cuda.synchronize()
        print(f"fig2: ncu pass, {len(cfgs)} configurations")
        return 0
    ncu = read_ncu(a.ncu_csv, cfgs) if a.ncu_csv and os.path.exists(a.ncu_csv) else [{} for _ in cfgs]
    rows = []
    for k, nc in zip(cfgs, ncu):
        if k["bwd"]:
            call(lib, fwd[k["version"]], t, None)
        ms, p95 = time_ms(lambda: call(lib, k, t, fwd), 5, a.reps)
        mb = model_bytes(a.flashlab, k, B, H, N, 0, "bwd" if k["bwd"] else "fwd") if a.flashlab else None
        cb = counters(a.gpu, k) if a.gpu else None
        gflop = 4.0 * B * H * N * N * D / 1e9 * (2.5 if k["bwd"] else 1.0)
        name = {7: "tiled (v7 mma.sync)", 8: "standard (v8 materializing)", 9: "tiled bwd (v9)", 10: "tiled (v10 wgmma)",
                11: "standard bwd (v11 materializing)"}[k["version"]]
        rows.append(dict(impl=name, version=k["version"], pass_="bwd" if k["bwd"] else "fwd", Br=k["Br"], Bc=k["Bc"],
                         gflop=gflop, median_ms=ms, p95_ms=p95, model_bytes=mb,
                         counter_bytes=(cb[0] + cb[1]) * B * H if cb else None,
                         ncu_dram_read=nc.get("dram__bytes_read.sum"), ncu_dram_write=nc.get("dram__bytes_write.sum"),
                         ncu_l2_read=32 * nc["lts__t_sectors_srcunit_tex_op_read.sum"] if "lts__t_sectors_srcunit_tex_op_read.sum" in nc else None,
                         ncu_l2_write=32 * nc["lts__t_sectors_srcunit_tex_op_write.sum"] if "lts__t_sectors_srcunit_tex_op_write.sum" in nc else None,
                         ncu_ms=nc["gpu__time_duration.sum"] / 1e6 if "gpu__time_duration.sum" in nc else None,
                         ncu_kernels=nc.get("kernels", "")))
        r = rows[-1]
        print(f"{name:28s} {r['pass_']} {k['Br']:4d}x{k['Bc']:<4d} {ms:8.3f} ms  model {mb / 1e9 if mb else float('nan'):7.3f} GB"
              f"  counters {r['counter_bytes'] / 1e9 if r['counter_bytes'] else float('nan'):7.3f} GB"
              f"  ncu dram {(r['ncu_dram_read'] or 0) / 1e9 + (r['ncu_dram_write'] or 0) / 1e9:7.3f} GB"
              f"  ncu L2 {((r['ncu_l2_read'] or 0) + (r['ncu_l2_write'] or 0)) / 1e9:7.3f} GB", flush=True)
    if a.csv:
        cols = list(rows[0].keys())
        tmp = a.csv + ".tmp"
        with open(tmp, "w") as f:
            dev = torch.cuda.get_device_properties(0)
            f.write("# fig2.py: the FlashAttention paper's Figure 2 on the H200 (GPT-2 medium: B 64, H 16, N 1024, d 64, fp16)\n")
            f.write(f"# commit: {os.environ.get('FLASHLAB_COMMIT', 'unknown')}\n")
            f.write(f"# date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')}\n")
            f.write(f"# gpu: {dev.name}, {dev.multi_processor_count} SMs; torch {torch.__version__}\n")
            f.write(f"# runtime: median of {a.reps} (CUDA events); model_bytes: flashlab count (all heads); counter_bytes: "
                    "kernel counters, one head x 1024; ncu: --cache-control all --clock-control none, whole launch\n")
            f.write(f"# {PAPER}\n")
            f.write(",".join(c.rstrip("_") for c in cols) + "\n")
            for r in rows:
                f.write(",".join("" if r[c] is None else (f"{r[c]:.6g}" if isinstance(r[c], float) else str(r[c])) for c in cols) + "\n")
        os.replace(tmp, a.csv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
