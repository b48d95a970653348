#!/usr/bin/env python3
"""gpu_sdpa.py: our fast kernels against PyTorch SDPA's backends and FlashAttention-4, in ONE
process, on the same inputs.

Needs a CUDA GPU and PyTorch (bench/sdpa_torch.py, the device layer); libflashlab_kernels.so
(kernels/CMakeLists.txt) for our kernels, loaded with ctypes and handed torch's device pointers and
current stream; FlashAttention-4 (the flash-attn-4 and nvidia-cutlass-dsl packages: bench/
fetch_wheels.sh) where it imports.  For every shape (dtype x d x N x causal) and pass:

  1. inputs Q, K, V (and dO) drawn from N(0, 1) in (B, H, N, d), never zeros; our outputs poisoned
     with NaN; every implementation called once (compilation, first-touch allocations);
  2. timing (bench/sdpa_timing.py), CUDA events around every call, median and p95:
     --timing interleaved (the default) calls the implementations of a pass in turn, one call each
     a round, the order rotated every round, so that each meets the GPU's clock and temperature as
     the others do (back to back, one kernel's time moved by up to 20 % with what ran before it:
     docs/performance.md); --timing sequential runs each implementation's calls together (the
     records before run 51); --cold flushes the L2 (zeroes a buffer 4x its size) before every
     call, outside the events; the calls' count from a time budget (--warmup-ms, --rep-ms, as
     Triton's do_bench; column reps) or fixed (--reps);
     while the GPU's SM and memory clocks, power and temperature are sampled (bench/gpu_clocks.py:
     NVML, else nvidia-smi, else recorded as absent);
  3. accuracy AFTER the timing, of what each implementation's last timed call wrote, on ALL B x H
     heads (bench/sdpa_accuracy.py) against an fp32 reference: rel_err = ||x - ref|| / ||ref||
     (the worst output) and, per output, the element-wise max error beside that of a naive
     attention in the storage type (FlashAttention's tests' rule; bench/sdpa_rules.py);
  4. TFLOP/s = 4 B H N^2 d / t forward, 2.5x backward, halved causal; MFU against the GPU's dense
     peak (bench/gpu_peaks.py); GB/s of the fewest bytes and, for ours, of the model's bytes
     (`flashlab count`); ratios of each implementation to SDPA's FA2 and cuDNN and to FA4.

Shapes (--shapes): recorded (N = 1024, 2048, 4096, 16384, B x 16 heads of 32k-64k tokens), odd
(N = 1000, 3000, 5000, 12000: no multiple of any tile, B x H = 720, 176, 80, 48 heads, none a
multiple of the H200's 132 SMs), all (both: the 64-shape record set with d = 64, 128), wide (all,
and N = 512 and 8192); --d 64,128,256 adds d = 256 (SDPA's and FA4's kernels; ours have none).

Writes a CSV with provenance (`#` lines: bench/sdpa_provenance.py) after every shape, and prints a
short table last.  A benchmark, not a test: run it on the GPU machine (bench/device_record.sh).

  python3 bench/gpu_sdpa.py --lib build/libflashlab_kernels.so --flashlab build/flashlab \\
      --csv out.csv [--shapes all] [--d 64,128,256] [--cold] [--only-versions 12,13] [--backends sdpa-fa2,sdpa-cudnn,fa4]

Exit 0; 2 on bad input (one line); 77 without PyTorch or a CUDA GPU (nothing run).
"""
import argparse
import os
import sys
from dataclasses import dataclass, field
from typing import Callable, Optional

import gpu_clocks
import gpu_peaks
import kernel_source
import sdpa_accuracy
import sdpa_provenance
import sdpa_rules
import sdpa_timing
from model_cli import count, kernel_footprint

BATCH = {1024: 64, 2048: 16, 4096: 8, 16384: 2}  # 16 heads; B*N between 16k and 64k tokens
ODD_BATCH = {1000: 45, 3000: 11, 5000: 5, 12000: 3}  # 16 heads; B*H not a multiple of 132 (nor of 8)
WIDE_BATCH = {512: 128, 8192: 4}  # 64k and 32k tokens
SHAPE_SETS = {"recorded": BATCH, "odd": ODD_BATCH, "all": {**BATCH, **ODD_BATCH},
              "wide": {**BATCH, **ODD_BATCH, **WIDE_BATCH}}
HEADS = 16
DTYPE_NAMES = ("fp16", "bf16")
FL_DTYPE = {"fp16": 1, "bf16": 2}  # fast_kernels' dtype numbers
# The backends (sdpa_torch.BACKENDS, named here so that this file needs no torch).
BACKENDS = ("sdpa-fa2", "sdpa-cudnn", "sdpa-efficient", "sdpa-math", "fa4", "fa4-det")
MATH_MAX_N = 4096  # SDPA's math backend: fp32 S and P of 2 x 16 x 16384^2 take minutes a call
TITLE = "gpu_sdpa.py: our fast kernels vs PyTorch SDPA backends and FlashAttention-4, one process, same inputs"
COLUMNS = ["impl", "version", "pass_", "dtype", "B", "H", "N", "d", "causal", "Br", "Bc", "median_ms", "p95_ms",
           "tflops", "gbps_min", "model_bytes", "gbps_model", "ratio_vs_fa2", "rel_err", "acc_ok", "note",
           "ratio_vs_cudnn", "ratio_vs_fa4", "mfu", "reps", "heads_checked", *sdpa_rules.ERR_COLUMNS,
           *gpu_clocks.COLUMNS]


@dataclass
class Impl:
    """One implementation of one pass at one shape, as a device layer gives it: call() runs it once
    on the device's stream; outputs(heads) gives what its last call wrote for a range of the B x H
    heads (flattened b * H + h), a dict output name (sdpa_rules.OUTPUTS) -> the layer's tensor."""
    name: str
    call: Callable[[], None]
    outputs: Callable[[range], dict]
    version: object = ""
    kern: Optional[dict] = None
    note: str = ""
    keep: list = field(default_factory=list)  # what it holds on the device (freed with it)


@dataclass(frozen=True)
class Shape:
    dtype: str
    d: int
    N: int
    causal: int
    B: int
    H: int


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports bad input in one line, exit 2."""

    def error(self, message):
        print(f"gpu_sdpa: {message}", file=sys.stderr)
        sys.exit(2)


def fail(msg):
    print(f"gpu_sdpa: {msg}", file=sys.stderr)
    sys.exit(2)


def int_list(s, what):
    try:
        return [int(x) for x in s.split(",") if x]
    except ValueError:
        fail(f"{what}: '{s}' must be comma-separated integers")


def parse_args(argv):
    """The command line, checked: one line and exit 2 on anything out of its rule."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = OneLineParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", default=None, help="libflashlab_kernels.so (none: no kernels of ours)")
    ap.add_argument("--flashlab", default=None, help="the flashlab CLI, for the model's bytes")
    ap.add_argument("--csv", required=True)
    ap.add_argument("--src", default=root, help="the source tree whose kernel sources the provenance hashes")
    ap.add_argument("--timing", default="interleaved", choices=sdpa_timing.ORDERS)
    ap.add_argument("--cold", action="store_true", help="flush the L2 before every call (outside its events)")
    ap.add_argument("--warmup-ms", type=float, default=25.0)
    ap.add_argument("--rep-ms", type=float, default=100.0)
    ap.add_argument("--min-reps", type=int, default=10)
    ap.add_argument("--max-reps", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=0, help="fixed timed calls (0: from --rep-ms)")
    ap.add_argument("--warmup", type=int, default=5, help="fixed warm-up calls, with --reps")
    ap.add_argument("--quick", action="store_true", help="fp16, every other N of the set, for a first look")
    ap.add_argument("--shapes", default="recorded", choices=tuple(SHAPE_SETS))
    ap.add_argument("--d", default="64,128", help="head dims (64, 128, 256)")
    ap.add_argument("--N", default="", help="the N of the set to keep (default all)")
    ap.add_argument("--dtypes", default="fp16,bf16")
    ap.add_argument("--causal", default="both", choices=("both", "0", "1"))
    ap.add_argument("--no-bwd", action="store_true")
    ap.add_argument("--no-fwd", action="store_true")
    ap.add_argument("--skip-versions", default="", help="comma-separated versions of ours to leave out")
    ap.add_argument("--only-versions", default="", help="comma-separated versions of ours to run (default all)")
    ap.add_argument("--tiles", default="", help="forward tiles of ours to run, e.g. 128x64,128x128 (default all)")
    ap.add_argument("--backends", default=",".join(BACKENDS), help=f"among {','.join(BACKENDS)}, or none")
    ap.add_argument("--ref-mem-gib", type=float, default=24.0, help="device memory for the reference's heads at a time")
    ap.add_argument("--clock-period-ms", type=float, default=50.0, help="clock sampling period (0: at the marks only)")
    ap.add_argument("--batch", type=int, default=0, help="B for every shape instead of the set's (0: the set's)")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                    help="cpu: SDPA's CPU backends and the reference only, a check of the layer without a GPU")
    a = ap.parse_args(argv)
    if not a.rep_ms > 0 or a.warmup_ms < 0 or a.min_reps < 1 or a.max_reps < a.min_reps or a.reps < 0 or a.warmup < 0:
        fail("--rep-ms must be > 0, --warmup-ms >= 0, 1 <= --min-reps <= --max-reps, --reps and --warmup >= 0")
    if not a.ref_mem_gib > 0 or a.clock_period_ms < 0:
        fail("--ref-mem-gib must be > 0 and --clock-period-ms >= 0")
    a.ds = int_list(a.d, "--d")
    if not a.ds or any(d not in (64, 128, 256) for d in a.ds):
        fail(f"--d: {a.d}: head dims must be among 64, 128, 256")
    a.dtype_list = [x for x in a.dtypes.split(",") if x]
    if not a.dtype_list or set(a.dtype_list) - set(DTYPE_NAMES):
        fail(f"--dtypes: {a.dtypes}: must be among {', '.join(DTYPE_NAMES)}")
    a.backend_list = [] if a.backends == "none" else [x for x in a.backends.split(",") if x]
    if set(a.backend_list) - set(BACKENDS):
        fail(f"--backends: {sorted(set(a.backend_list) - set(BACKENDS))} not among {', '.join(BACKENDS)} (or none)")
    batch = SHAPE_SETS[a.shapes]
    a.N_list = sorted(batch)
    keep = int_list(a.N, "--N")
    if keep:
        if set(keep) - set(batch):
            fail(f"--N: {sorted(set(keep) - set(batch))} not among the shapes of --shapes {a.shapes}: {sorted(batch)}")
        a.N_list = [n for n in a.N_list if n in keep]
    if a.quick:
        a.N_list, a.dtype_list = a.N_list[0::2], ["fp16"]
    if a.batch < 0 or (a.device == "cpu" and a.lib):
        fail("--batch must be >= 0, and --device cpu runs no kernels of ours (no --lib)")
    if a.no_fwd and a.no_bwd:
        fail("--no-fwd and --no-bwd: nothing left to run")
    a.skip, a.only = set(int_list(a.skip_versions, "--skip-versions")), set(int_list(a.only_versions, "--only-versions"))
    a.tile_list = [t for t in a.tiles.split(",") if t]
    a.budget = sdpa_timing.Budget(a.warmup_ms, a.rep_ms, a.min_reps, a.max_reps, a.warmup if a.reps else 0, a.reps)
    csv_dir = os.path.dirname(os.path.abspath(a.csv))
    if not os.path.isdir(csv_dir) or os.path.isdir(a.csv):
        fail(f"--csv: {a.csv}: must be a file in an existing folder")
    return a


def shapes_of(a):
    """The shapes to run, in order: dtype, d, N, causal."""
    batch = SHAPE_SETS[a.shapes]
    return [Shape(dt, d, N, c, a.batch or batch[N], HEADS) for dt in a.dtype_list for d in a.ds for N in a.N_list
            for c in ((0, 1) if a.causal == "both" else (int(a.causal),))]


def our_kernels(a, layer, shape, pass_):
    """Our kernels of this pass, dtype and d that run here, as --only/--skip-versions and --tiles select."""
    return [k for k in layer.kernels
            if k["dtype"] == FL_DTYPE[shape.dtype] and k["d"] == shape.d and bool(k["bwd"]) == (pass_ == "bwd")
            and k["version"] not in a.skip and (not a.only or k["version"] in a.only)
            and not (a.tile_list and not k["bwd"] and k["algo"] == "flash2" and f"{k['Br']}x{k['Bc']}" not in a.tile_list)]


def model_bytes(flashlab, k, B, H, N, causal, pass_):
    """HBM bytes of the kernel's schedule and tiles, from the simulator (fl_run through the CLI)"""
    try:
        M = kernel_footprint(flashlab, k["algo"], k["d"], k["Br"], k["Bc"], pass_ == "bwd")
        row = count(flashlab, k["algo"], N, k["d"], k["Br"], k["Bc"], M, "fp16", pass_,
                    "bottom-right" if causal else None, batch=B, heads=H)
        return int(row["hbm_bytes"])
    except (RuntimeError, KeyError) as e:
        print(f"gpu_sdpa: model bytes unavailable for {k} ({e})", file=sys.stderr)
        return None


def provenance(a, layer, clocks_desc, peak):
    """The CSV's `#` lines (sdpa_provenance's module docstring)."""
    lines = [sdpa_provenance.gpu_line(layer.gpu), sdpa_provenance.versions_line(layer.versions)]
    lines.append(f"peak: {peak[0]:g} TFLOP/s dense fp16/bf16 ({peak[1]}); mfu = tflops / peak" if peak[0]
                 else f"peak: unknown ({peak[1]})")
    lines.append(clocks_desc)
    if a.lib:
        lines.append(f"library: {a.lib} sha256 {sdpa_provenance.file_sha256(a.lib) or 'unreadable'}")
    commit = sdpa_provenance.commit_of(a.src)
    tree = kernel_source.WorkingTree(a.src)
    versions = sorted({k["version"] for k in layer.kernels if k["version"] not in a.skip and (not a.only or k["version"] in a.only)})
    for v in versions:
        digest, paths = kernel_source.source_hash(tree, v)
        if digest:
            lines.append(kernel_source.provenance_line(v, digest, paths, commit))
    lines.append("timing: " + sdpa_timing.describe(a.timing, a.cold, a.budget))
    lines.append("accuracy: after the timing, of each implementation's last timed call, on all B x H heads against an fp32 "
                 "reference (bwd: dQ, dK, dV): rel_err = ||x - ref|| / ||ref|| (the worst output), maxerr_<o> = max |x - ref|, "
                 "pterr_<o> the same of a naive attention in the storage type; acc_ok: rel_err <= 2 x SDPA FA2's + 1e-4 "
                 "(materializing versions: or <= 2 x the type's unit roundoff) and every maxerr_<o> <= 2 x pterr_<o> + 1e-5 "
                 "(bench/sdpa_rules.py)")
    return sdpa_provenance.header(TITLE, commit, lines)


def main(argv=None, layer_factory=None, open_clocks=None):
    """Runs the benchmark; layer_factory(a) and open_clocks(index, uuid) replace the device layer
    and the clock source (the tests' fakes).  Returns the exit status."""
    a = parse_args(sys.argv[1:] if argv is None else argv)
    if layer_factory is None:
        try:
            import torch
        except ImportError:
            print("gpu_sdpa: PyTorch is not installed; nothing was run", file=sys.stderr)
            return 77
        if a.device == "cuda" and not torch.cuda.is_available():
            print("gpu_sdpa: no CUDA GPU; nothing was run", file=sys.stderr)
            return 77
        import sdpa_torch
        torch.manual_seed(20261130)
        layer = sdpa_torch.TorchLayer(a.lib, a.device)
    else:
        layer = layer_factory(a)
    src, why = (open_clocks or gpu_clocks.open_source)(0, layer.gpu.get("uuid"))
    if src is not None:
        info = src.info()
        for key in ("uuid", "driver"):
            if not layer.gpu.get(key) and info.get(key):
                layer.gpu[key] = info[key]
        desc = (f"clocks: {src.describe}, every {a.clock_period_ms:g} ms and at the start and end of every pass's timing: "
                f"columns {', '.join(gpu_clocks.COLUMNS)} over that window")
        sampler = gpu_clocks.Sampler(src, a.clock_period_ms / 1000.0).start()
    else:
        desc, sampler = f"clocks: absent ({why})", None
    for k, why_not in layer.skipped:
        print(f"gpu_sdpa: v{k['version']} {k['algo']} d={k['d']} {k['Br']}x{k['Bc']} left out: {why_not}", file=sys.stderr)
    peak = gpu_peaks.peak(layer.gpu.get("name"))
    prov = provenance(a, layer, desc, peak)
    rows = []
    try:
        for shape in shapes_of(a):
            rows += bench_shape(a, layer, sampler, shape, peak[0])
            sdpa_provenance.write_csv(a.csv, prov, COLUMNS, rows)  # after every shape: a cut-off run keeps its rows
    finally:
        if sampler:
            sampler.stop()
    sdpa_provenance.write_csv(a.csv, prov, COLUMNS, rows)
    print_table(rows)
    return 0


def bench_shape(a, layer, sampler, shape, peak_tflops):
    """The rows of one shape: each pass's implementations called once, timed, checked on all heads."""
    x = layer.inputs(shape)
    rows = []
    for pass_ in [p for p in ("fwd", "bwd") if not (p == "fwd" and a.no_fwd) and not (p == "bwd" and a.no_bwd)]:
        backends = [b for b in a.backend_list if not (b == "sdpa-math" and shape.N > MATH_MAX_N)]
        impls, refused = layer.impls(shape, x, pass_, backends, our_kernels(a, layer, shape, pass_))
        ok = []
        for impl in impls:
            try:
                impl.call()
                layer.synchronize()
                ok.append(impl)
            except Exception as e:  # noqa: BLE001 -- a backend that does not take this shape or type
                refused.append((impl.name, str(e).splitlines()[0][:160] if str(e) else type(e).__name__))
        for name, why in refused:
            print(f"gpu_sdpa: {name} {shape.dtype} d={shape.d} N={shape.N} causal={shape.causal} {pass_}: {why}", file=sys.stderr)
        t0 = sampler.mark() if sampler else None
        timings = sdpa_timing.time_pass(layer, [i.call for i in ok], a.timing, a.cold, a.budget)
        clocks = sampler.window(t0, sampler.mark()) if sampler else None
        acc = sdpa_accuracy.check_all_heads(layer, shape, x, pass_, ok, a.ref_mem_gib * 2 ** 30)
        prows = [row_of(a, shape, pass_, impl, t, acc[impl.name], clocks, peak_tflops) for impl, t in zip(ok, timings)]
        derived = sdpa_rules.recompute(prows)
        for r in prows:
            r.update({c: derived[id(r)][c] for c in ("ratio_vs_fa2", "ratio_vs_cudnn", "ratio_vs_fa4", "acc_ok")})
            print_row(r)
        rows += prows
        impls = ok = None
    x = None
    layer.release()
    return rows


def row_of(a, shape, pass_, impl, t, acc, clocks, peak_tflops):
    """One CSV row (COLUMNS; the ratios and acc_ok are added over the pass's rows)."""
    k = impl.kern
    tf = sdpa_rules.flops(pass_, shape.B, shape.H, shape.N, shape.d, shape.causal) / t.median_ms / 1e9
    mb = sdpa_rules.min_bytes(pass_, shape.B, shape.H, shape.N, shape.d, shape.dtype)
    mbytes = model_bytes(a.flashlab, k, shape.B, shape.H, shape.N, shape.causal, pass_) if (k and a.flashlab) else None
    r = dict(impl=impl.name, version=impl.version, pass_=pass_, dtype=shape.dtype, B=shape.B, H=shape.H, N=shape.N,
             d=shape.d, causal=shape.causal, Br=k["Br"] if k else "", Bc=k["Bc"] if k else "", median_ms=t.median_ms,
             p95_ms=t.p95_ms, tflops=tf, gbps_min=mb / t.median_ms / 1e6, model_bytes=mbytes,
             gbps_model=mbytes / t.median_ms / 1e6 if mbytes else None, note=impl.note,
             mfu=gpu_peaks.mfu(tf, peak_tflops), reps=t.reps, heads_checked=acc["heads"], rel_err=acc["rel_err"])
    for c in sdpa_rules.ERR_COLUMNS:
        r[c] = acc.get(c)
    for c in gpu_clocks.COLUMNS:
        r[c] = clocks.get(c) if clocks else None
    return r


def print_row(r):
    worst = max((r[c] for c in sdpa_rules.ERR_COLUMNS if c.startswith("maxerr") and r[c] is not None), default=float("nan"))
    tile = f"{r['Br']}x{r['Bc']}" if r["Br"] != "" else ""
    print(f"{r['dtype']} d={r['d']:3d} N={r['N']:5d} B={r['B']:3d} {'causal' if r['causal'] else 'full  '} {r['pass_']} "
          f"{r['impl']:16s} {tile:8s} {r['median_ms']:8.3f} ms {r['tflops']:7.1f} TFLOP/s x{r['reps']:<4d} "
          f"err {r['rel_err']:.2e} max {worst:.2e}{'' if r['acc_ok'] else ' NOT ACCURATE'} {r['note']}", flush=True)


def print_table(rows):
    """The short table: the best accurate of ours per shape and pass against FA2, cuDNN and FA4."""
    print("\nshape                          pass  best ours (tile)        TFLOP/s  FA2 ratio  cuDNN ratio  FA4 ratio")
    for key in sorted({(r["dtype"], r["d"], r["N"], r["causal"], r["pass_"]) for r in rows}):
        sel = [r for r in rows if (r["dtype"], r["d"], r["N"], r["causal"], r["pass_"]) == key]
        ours = [r for r in sel if r["impl"].startswith("ours") and "flash" in r["impl"] and r["acc_ok"]]
        if not ours:
            continue
        b = max(ours, key=lambda r: r["tflops"])
        cells = " ".join(f"{b[c]:10.2f}" if b[c] else f"{'-':>10s}" for c in ("ratio_vs_fa2", "ratio_vs_cudnn", "ratio_vs_fa4"))
        print(f"{key[0]} d={key[1]:3d} N={key[2]:5d} {'causal' if key[3] else 'full  '}  {key[4]}  "
              f"{b['impl']:14s} {b['Br']}x{b['Bc']:<5} {b['tflops']:8.1f} {cells}")


if __name__ == "__main__":
    sys.exit(main())
