#!/usr/bin/env python3
"""clock_probe.py: is a kernel slower when calls run back to back than when the GPU was idle
before each call, and does the SM clock say why?  For our version-12 forward (the best tile a
shape, or --tile) and SDPA's cuDNN backend on the same inputs, in one process:

  spaced     --spaced calls, each after the GPU was idle for --gap s, CUDA events around the call;
  sustained  --sustained calls back to back (the benchmark's way), events around each; the median
             of the second half is reported (the first half brings the GPU to its steady state);

while nvidia-smi samples the SM clock and the board power every 20 ms.  The phases alternate
(ours, cuDNN, ours, cuDNN) so that drift falls on both.  Prints a table and writes a CSV with
provenance (one row a phase: median and p10/p90 ms, and the SM clock and power sampled during it).

    python3 bench/clock_probe.py --lib build/libflashlab_kernels.so --csv out.csv \\
        [--shapes fp16:128:1024:0,fp16:64:1024:1] [--tile 128x128]

Reads the GPU's clocks; never sets them.  Needs a CUDA GPU, PyTorch and nvidia-smi; exit 2 on bad
input, 77 when there is no GPU."""
import argparse
import statistics
import subprocess
import sys
import threading
import time

import torch
import torch.nn.functional as F
from gpu_sdpa import BATCH, ODD_BATCH
from sdpa_torch import DTYPES, Lib, write_rows
from torch.nn.attention import SDPBackend, sdpa_kernel


def fail(msg):
    print(f"clock_probe: {msg}", file=sys.stderr)
    sys.exit(2)


class Sampler:
    """nvidia-smi's SM clock (MHz) and power (W) every 20 ms, each stamped with the host's time."""

    def __init__(self):
        self.samples = []
        try:
            self.p = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits",
                                       "-lms", "20", "-i", "0"], stdout=subprocess.PIPE, text=True, bufsize=1)
        except OSError as e:
            fail(f"nvidia-smi: {e}")
        self.t = threading.Thread(target=self.read, daemon=True)
        self.t.start()

    def read(self):
        for line in self.p.stdout:
            try:
                mhz, w = (float(x) for x in line.split(","))
            except ValueError:
                continue
            self.samples.append((time.time(), mhz, w))

    def between(self, t0, t1):
        s = [(m, w) for t, m, w in self.samples if t0 <= t <= t1]
        if not s:
            return None, None, 0
        return statistics.median(m for m, _ in s), statistics.median(w for _, w in s), len(s)

    def stop(self):
        self.p.terminate()


def pct(t, q):
    t = sorted(t)
    return t[min(len(t) - 1, int(q * len(t)))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", required=True)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--shapes", default="fp16:128:1024:0,fp16:64:1024:1,fp16:128:4096:0",
                    help="dtype:d:N:causal,... (N among the benchmark's)")
    ap.add_argument("--tile", default="", help="BrxBc of ours (default: every tile of version 12 for that d)")
    ap.add_argument("--spaced", type=int, default=15)
    ap.add_argument("--gap", type=float, default=0.25)
    ap.add_argument("--sustained", type=int, default=400)
    ap.add_argument("--repeat", type=int, default=2, help="times each phase pair runs, alternating")
    a = ap.parse_args()
    batch = {**BATCH, **ODD_BATCH}
    shapes = []
    for s in a.shapes.split(","):
        try:
            dn, d, N, c = s.split(":")
            d, N, c = int(d), int(N), int(c)
        except ValueError:
            fail(f"--shapes '{s}': must be dtype:d:N:causal")
        if dn not in DTYPES or N not in batch or c not in (0, 1):
            fail(f"--shapes '{s}': dtype among {sorted(DTYPES)}, N among {sorted(batch)}, causal 0 or 1")
        shapes.append((dn, d, N, c))
    if not torch.cuda.is_available():
        print("clock_probe: no CUDA GPU; nothing was run", file=sys.stderr)
        return 77
    lib = Lib(a.lib)
    smi = Sampler()
    time.sleep(1.0)
    rows = []
    try:
        for dn, d, N, c in shapes:
            tdt, fdt = DTYPES[dn]
            B, H = batch[N], 16
            q, k, v = (torch.randn(B, H, N, d, device="cuda", dtype=tdt) for _ in range(3))
            o = torch.empty_like(q)
            L = torch.empty(B * H * N, device="cuda", dtype=torch.float32)
            flop = 4.0 * B * H * N * N * d * (0.5 if c else 1.0)
            impls = []
            for kern in lib.kernels:
                if kern["version"] == 12 and not kern["bwd"] and kern["dtype"] == fdt and kern["d"] == d and \
                        (not a.tile or f"{kern['Br']}x{kern['Bc']}" == a.tile):
                    impls.append((f"ours-v12-{kern['Br']}x{kern['Bc']}",
                                  lambda kern=kern: lib.run(kern, B * H, N, c, Q=q, K=k, V=v, O=o, L=L)))

            def cudnn():
                with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                    F.scaled_dot_product_attention(q, k, v, is_causal=bool(c))
            impls.append(("sdpa-cudnn", cudnn))
            for _, fn in impls:
                fn()
            torch.cuda.synchronize()
            for rep in range(a.repeat):
                for name, fn in impls:
                    for phase in ("spaced", "sustained"):
                        n = a.spaced if phase == "spaced" else a.sustained
                        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
                        torch.cuda.synchronize()
                        if phase == "sustained":
                            time.sleep(a.gap)
                        t0 = time.time()
                        for e0, e1 in ev:
                            if phase == "spaced":
                                torch.cuda.synchronize()
                                time.sleep(a.gap)
                            e0.record()
                            fn()
                            e1.record()
                        torch.cuda.synchronize()
                        t1 = time.time()
                        ms = [e0.elapsed_time(e1) for e0, e1 in ev]
                        if phase == "sustained":
                            ms = ms[n // 2:]
                            t0 = t0 + (t1 - t0) / 2
                        mhz, w, ns = smi.between(t0, t1)
                        med = statistics.median(ms)
                        rows.append(dict(impl=name, phase=phase, rep=rep, dtype=dn, B=B, H=H, N=N, d=d, causal=c,
                                         calls=len(ms), median_ms=med, p10_ms=pct(ms, 0.1), p90_ms=pct(ms, 0.9),
                                         tflops=flop / med / 1e9, sm_mhz=mhz, power_w=w, smi_samples=ns))
                        print(f"{dn} d={d:3d} N={N:5d} {'causal' if c else 'full  '} {name:18s} {phase:9s} rep {rep} "
                              f"{med:8.4f} ms (p10 {pct(ms, 0.1):.4f}, p90 {pct(ms, 0.9):.4f}) {flop / med / 1e9:6.1f} TFLOP/s "
                              f"SM {mhz} MHz {w} W ({ns} samples)", flush=True)
            q = k = v = o = L = impls = None
            torch.cuda.empty_cache()
    finally:
        smi.stop()
    cols = ["impl", "phase", "rep", "dtype", "B", "H", "N", "d", "causal", "calls", "median_ms", "p10_ms", "p90_ms", "tflops",
            "sm_mhz", "power_w", "smi_samples"]
    write_rows(a.csv, torch.cuda.get_device_properties(0), "clock_probe.py: one call after an idle GPU against calls back to back",
               [f"spaced: {a.spaced} calls each after {a.gap} s idle; sustained: {a.sustained} back to back, the second half kept; "
                f"nvidia-smi clocks.sm and power.draw every 20 ms, medians over the phase; phases alternate, {a.repeat} times"],
               cols, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
