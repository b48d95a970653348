#!/usr/bin/env python3
"""triton_cta_timing.py: when and where each program of Triton's fused-attention backward ran.

The launch model (docs/third_party.md §3) orders a kernel's work items by rule S1: CTA slots in
lock step, each taking the next item when its own ends.  A kernel whose programs run for very
different times (the tutorial's causal backward: a key tile near the diagonal does little, one far
from it much) may not follow it.  This script measures instead: it writes an instrumented copy of
the tutorial (--tutorial, Triton's python/tutorials/06-fused-attention.py; the file itself is not
changed) in which `_attn_bwd` reads %globaltimer when a program starts and ends and %smid, stores
the three at the program's work-item index (bhid x programs + pid: the model's tile-fastest grid
order), and runs the backward of each shape of --shapes (scripts/third_party_attn.py's SHAPES):
`--repeats` unprofiled runs, then one profiled region (for scripts/explain_kernels.py collect,
whose ncu counters of the instrumented kernel then come with the timing of the same launch).

Each run writes OUT_DIR/timing_SHAPE_RUN.csv (RUN: r1.. unprofiled; ncu the region between
cudaProfilerStart and Stop, which ncu profiles when the script runs under explain_kernels.py
collect; run alone, use the r files):
provenance lines (#), then item,sm,start_ns,end_ns with start_ns counted from the launch's first
program.  `flashlab l2 --launch bwd-twopass ... --cta-timing FILE` walks the launch in that order.

The patch is five anchored text edits; an anchor the tutorial no longer has stops the script with
exit status 2 naming it (a different tutorial is not silently measured).

  PYTHONPATH=bench python3 scripts/triton_cta_timing.py --tutorial fused_attention.py --shapes s1,s2,s5 --out-dir DIR
"""
import argparse
import hashlib
import importlib.util
import math
import os
import sys
import tempfile

from third_party_attn import SHAPES, Regions, profiled

TIMER = 'tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)'
SMID = 'tl.inline_asm_elementwise("mov.u32 $0, %smid;", "=r", [], dtype=tl.int32, is_pure=False, pack=1)'
# (anchor, replacement): each anchor must occur exactly once in the tutorial
PATCH = [
    ("              CAUSAL: tl.constexpr):\n    LN2: tl.constexpr = 0.6931471824645996  # = ln(2)\n",
     "              CAUSAL: tl.constexpr, FL_TIMING):\n    LN2: tl.constexpr = 0.6931471824645996  # = ln(2)\n"),
    ("    bhid = tl.program_id(2)\n    off_chz = (bhid * N_CTX).to(tl.int64)\n",
     f"    fl_t0 = {TIMER}\n    bhid = tl.program_id(2)\n    off_chz = (bhid * N_CTX).to(tl.int64)\n"),
    ("    dq *= LN2\n    tl.store(dq_ptrs, dq)\n",
     "    dq *= LN2\n    tl.store(dq_ptrs, dq)\n"
     f"    fl_t1 = {TIMER}\n"
     "    fl_at = FL_TIMING + (bhid * tl.num_programs(0) + pid).to(tl.int64) * 3\n"
     "    tl.store(fl_at, fl_t0)\n    tl.store(fl_at + 1, fl_t1)\n"
     f"    tl.store(fl_at + 2, {SMID}.to(tl.int64))\n"),
    ("            CAUSAL=ctx.causal,  #\n        )\n\n        return dq, dk, dv",
     "            CAUSAL=ctx.causal,  #\n            FL_TIMING=FL_TIMING_BUF,  #\n        )\n\n        return dq, dk, dv"),
    ("\nclass _attention(torch.autograd.Function):\n",
     "\nFL_TIMING_BUF = None  # set by triton_cta_timing.py: int64 [programs x 3]\n\n"
     "\nclass _attention(torch.autograd.Function):\n"),
]


def die(msg):
    print(f"triton_cta_timing: {msg}", file=sys.stderr)
    sys.exit(2)


def instrumented(path, work):
    """Imports an instrumented copy of the tutorial at `path` (written under `work`)."""
    try:
        src = open(path).read()
    except OSError as e:
        die(f"--tutorial {path}: cannot be read ({e.strerror})")
    for i, (anchor, new) in enumerate(PATCH):
        n = src.count(anchor)
        if n != 1:
            die(f"--tutorial {path}: anchor {i + 1} ({anchor.strip().splitlines()[0][:50]!r}) occurs {n} times, "
                "not once: not the tutorial this script instruments")
        src = src.replace(anchor, new)
    out = os.path.join(work, "fused_attention_timed.py")
    with open(out, "x") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location("fused_attention_timed", out)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, hashlib.sha256(open(path, "rb").read()).hexdigest()


def write_timing(path, prov, t):
    """t: int64 CPU tensor [items x 3] (start, end, sm).  Refuses a launch with a program unrun."""
    start0 = int(t[:, 0].min())
    if int(t[:, 0].min()) <= 0 or bool((t[:, 1] < t[:, 0]).any()):
        die(f"{path}: a program did not record its start and end (the instrumented kernel did not run whole)")
    tmp = path + ".tmp"
    with open(tmp, "x") as f:
        for line in prov:
            f.write("# " + line + "\n")
        f.write("item,sm,start_ns,end_ns\n")
        for i, (s, e, sm) in enumerate(t.tolist()):
            f.write(f"{i},{sm},{s - start0},{e - start0}\n")
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tutorial", required=True, help="Triton's python/tutorials/06-fused-attention.py")
    ap.add_argument("--shapes", default="s1,s2,s5", help="names of scripts/third_party_attn.py's SHAPES")
    ap.add_argument("--repeats", type=int, default=3, help="unprofiled timed runs before the profiled one")
    ap.add_argument("--out-dir", required=True, help="an existing directory for the timing CSVs")
    a = ap.parse_args()
    known = {s[0]: s for s in SHAPES}
    names = [s for s in a.shapes.split(",") if s]
    for s in names:
        if s not in known:
            die(f"--shapes: {s} is not one of {', '.join(known)}")
    if not os.path.isdir(a.out_dir):
        die(f"--out-dir {a.out_dir}: not an existing directory")
    if a.repeats < 0:
        die("--repeats: must be >= 0")
    import torch
    import triton
    if not torch.cuda.is_available():
        print("triton_cta_timing: no CUDA GPU; nothing was run", file=sys.stderr)
        return 77
    os.environ.setdefault("PYTEST_VERSION", "explain")  # the tutorial's single testing config
    tri, sha = instrumented(a.tutorial, tempfile.mkdtemp(prefix="cta_timing_"))
    regions = Regions()
    dev = torch.cuda.get_device_properties(0)
    regions.write(dict(header=1, gpu=dev.name, sms=dev.multi_processor_count, torch=torch.__version__,
                       cuda=torch.version.cuda, cudnn=torch.backends.cudnn.version(), triton=triton.__version__))
    torch.manual_seed(20261201)
    for name in names:
        _, dname, B, H, N, d, causal = known[name]
        q, k, v, do = (torch.randn(B, H, N, d, device="cuda", dtype=torch.float16) for _ in range(4))
        qg, kg, vg = (x.detach().clone().requires_grad_(True) for x in (q, k, v))
        sm_scale = 1.0 / math.sqrt(d)
        ws = True
        try:
            o = tri.attention(qg, kg, vg, bool(causal), sm_scale)
        except Exception:
            ws = False
            o = tri.attention(qg, kg, vg, bool(causal), sm_scale, False)
        programs = N // 128 * B * H  # the tutorial's BLOCK_N1 = 128: grid (N / 128, 1, B x H)
        buf = torch.zeros(programs, 3, dtype=torch.int64, device="cuda")
        tri.FL_TIMING_BUF = buf
        prov = [f"triton_cta_timing.py: Triton tutorial _attn_bwd, instrumented (tutorial sha256 {sha})",
                f"shape {name}: B={B} H={H} N={N} d={d} causal={causal} fp16 (the study's {dname} shape, fp16 storage)",
                f"gpu: {dev.name} ({dev.multi_processor_count} SMs); torch {torch.__version__}; triton {triton.__version__}",
                "item = bhid x (N / 128) + pid; sm = %smid; times from %globaltimer, ns after the first start"]
        for rep in range(a.repeats + 1):
            o = tri.attention(qg, kg, vg, bool(causal), sm_scale, ws)
            buf.zero_()
            bwd = lambda: torch.autograd.grad(o, (qg, kg, vg), do)
            if rep < a.repeats:
                bwd()
                torch.cuda.synchronize()
                tag = f"r{rep + 1}"
            else:
                profiled(torch, regions, dict(backend="triton", shape=name, B=B, H=H, N=N, d=d, causal=causal,
                                              dtype=dname, **{"pass": "bwd"}, storage="fp16", timed=1), bwd)
                tag = "ncu"
            write_timing(os.path.join(a.out_dir, f"timing_{name}_{tag}.csv"),
                         prov + [f"run: {tag} ({'the region ncu profiles under explain_kernels.py collect' if tag == 'ncu' else 'unprofiled'})"],
                         buf.cpu())
        del q, k, v, do, qg, kg, vg, o
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
