# %% [markdown]
# # Lab 7: why the tiled kernel is fast — runtime against bytes on an H200
#
# **One idea:** FlashAttention's speed is a claim about *time*, and the model counts *bytes*.
# This lab puts the two side by side on measurements recorded from the project's fast kernels
# (versions 7–11: docs/labs/background.md, "The project's GPU kernels") and PyTorch SDPA on one
# NVIDIA H200:
# `figures/data/gpu_fig2.csv` (the FlashAttention paper's Figure 2 for GPT-2 medium) and
# `figures/data/gpu_sdpa.csv` (32 shapes, ours against SDPA's backends, one process).  You will
# compute the two floors of a kernel (arithmetic and bytes), rebuild the model's bytes of every
# Figure-2 kernel with the C library, and find out which floor each kernel lives on.
# Handout: `docs/labs/lab7.md`.  No GPU needed: the data was recorded on an H200.  To measure
# your own, you need an NVIDIA GPU of compute capability 7.5 or newer and the kernels built;
# `flashlab-gpu list` says which kernel versions run there (version 10 uses Hopper's wgmma and
# runs only on sm_90a).  Without the recorded data the exercises on it are skipped and say so.

# %%
import pathlib, sys
for p in (pathlib.Path.cwd(), pathlib.Path.cwd().parent):
    if (p / "flashlab.py").exists():
        sys.path.insert(0, str(p))
import flashlab as fl
import labkit
from labkit import lab7
from labkit.data import read_measurements   # (provenance lines, rows) of a recorded CSV

STUDENT = labkit.student("")   # put your student id between the quotes: it picks your sizes

# The ceilings measured on the H200 type the data was recorded on: a dense bf16 matrix product
# through PyTorch on random data, and a device-to-device copy counting bytes read + written.
PEAK_FLOPS = 790e12   # FLOP/s
PEAK_BYTES = 4.3e12   # bytes/s

DATA = fl.data_dir()
fig2_prov, fig2 = read_measurements(DATA / "gpu_fig2.csv")
sdpa_prov, sdpa = read_measurements(DATA / "gpu_sdpa.csv")
for name, prov, rows in (("gpu_fig2.csv", fig2_prov, fig2), ("gpu_sdpa.csv", sdpa_prov, sdpa)):
    print(f"{name}: {len(rows)} rows" if rows else f"{name}: not recorded in this checkout")
    for line in (prov or [])[:5]:
        print("   ", line)

# %% [markdown]
# ## Exercise 1: the two floors
#
# Attention's forward does two matrix products of $2N^2d$ multiply-adds each per head: $4BHN^2d$
# FLOPs (half with the causal mask, which skips the masked half).  It must at least read Q, K, V
# and write O once: $4BHNd$ elements.  Write `floors(B, H, N, d, causal, elem_bytes)` returning
# `(flops, min_bytes, t_flops_ms, t_bytes_ms)`: the two times are the work over the ceilings
# above, in milliseconds.  The larger time is the floor; which one is it for attention?

# %%
def floors(B, H, N, d, causal=False, elem_bytes=2):
    # TODO
    ### BEGIN STUB
    return None
    ### END STUB
    ### BEGIN SOLUTION
    flops = 4.0 * B * H * N * N * d * (0.5 if causal else 1.0)
    min_bytes = 4.0 * B * H * N * d * elem_bytes
    return flops, min_bytes, flops / PEAK_FLOPS * 1e3, min_bytes / PEAK_BYTES * 1e3
    ### END SOLUTION

print(floors(64, 16, 1024, 64))   # GPT-2 medium: batch 64, 16 heads, N = 1024, d = 64

# %% check
lab7.floors(STUDENT, floors)

# %% [markdown]
# ## Exercise 2: the model's bytes of every Figure-2 kernel
#
# Each row of `gpu_fig2.csv` is one kernel configuration on the GPT-2-medium shape (batch 64,
# 16 heads, N = 1024, d = 64, fp16): `version` (8 and 11: the standard schedule, forward and
# backward; 7, 10 forward and 9 backward: flash2), `pass`, and its tiles `Br`, `Bc`.  The
# kernels' byte counters were recorded in `counter_bytes`.  Write `model_bytes(row)`: the bytes
# of the model of that kernel for the whole batch — `fl.run` of its schedule with its blocks, on
# an SRAM of exactly its tiles' footprint (`fl.footprint(..., bwd=...)`, as in Lab 6), with
# `batch=64, heads=16, elem_bytes=2` and `pass_` the row's pass; return `.bytes`.

# %%
def schedule_of(row):
    return "standard" if row["version"] in ("8", "11") else "flash2"

def model_bytes(row):
    # TODO
    ### BEGIN STUB
    return None
    ### END STUB
    ### BEGIN SOLUTION
    algo, Br, Bc, bwd = schedule_of(row), int(row["Br"]), int(row["Bc"]), row["pass"] == "bwd"
    m = fl.run(algo, N=1024, d=64, Br=Br, Bc=Bc, M=fl.footprint(algo, 64, Br, Bc, bwd=bwd),
               batch=64, heads=16, elem_bytes=2, pass_=row["pass"])
    return m.bytes
    ### END SOLUTION

if model_bytes(fig2[0]) is not None if fig2 else False:
    for r in fig2[:3]:
        print(r["impl"], r["pass"], f"{r['Br']}x{r['Bc']}", "model:", model_bytes(r), "counters:", r["counter_bytes"])

# %% check
lab7.bytes_check(STUDENT, model_bytes)

# %% [markdown]
# ## Exercise 3: which floor does each kernel live on?
#
# For the fastest standard forward (version 8) and the fastest tiled forward (version 10) in
# `gpu_fig2.csv` (smallest `median_ms`), compute:
# - `speedup`: the standard's runtime over the tiled one's;
# - `byte_ratio`: the standard's model bytes over the tiled one's (your `model_bytes`);
# - `std_tbps`: the standard kernel's model bytes per second, in TB/s (1e12 bytes/s);
# - `tiled_tflops`: the tiled kernel's FLOP/s (the row's `gflop` over its time), in TFLOP/s.
#
# Compare `std_tbps` with `PEAK_BYTES` and `tiled_tflops` with `PEAK_FLOPS`: which kernel is
# bound by bytes, which by arithmetic?  Does the runtime ratio follow the byte ratio?

# %%
def fastest(version):
    rows = [r for r in fig2 if r["version"] == str(version)]
    return min(rows, key=lambda r: float(r["median_ms"])) if rows else None

# TODO
### BEGIN STUB
speedup = byte_ratio = std_tbps = tiled_tflops = None
### END STUB
### BEGIN SOLUTION
std, tiled = fastest(8), fastest(10)
if std and tiled:
    speedup = float(std["median_ms"]) / float(tiled["median_ms"])
    byte_ratio = model_bytes(std) / model_bytes(tiled)
    std_tbps = model_bytes(std) / (float(std["median_ms"]) * 1e-3) / 1e12
    tiled_tflops = float(tiled["gflop"]) * 1e9 / (float(tiled["median_ms"]) * 1e-3) / 1e12
    print(f"speedup {speedup:.2f}x, bytes {byte_ratio:.2f}x; standard at {std_tbps:.2f} TB/s "
          f"({std_tbps * 1e12 / PEAK_BYTES:.0%} of the copy ceiling), tiled at {tiled_tflops:.0f} TFLOP/s "
          f"({tiled_tflops * 1e12 / PEAK_FLOPS:.0%} of the product ceiling)")
### END SOLUTION

# %% check
lab7.floor(STUDENT, speedup, byte_ratio, std_tbps, tiled_tflops)

# %% [markdown]
# Every Figure-2 kernel at once: its runtime against the bytes your `model_bytes` gives it, with
# the two floors.  No kernel can run below the byte floor (its bytes over the copy bandwidth,
# the diagonal) nor below its pass's FLOP floor (the horizontal lines).  Which points sit close
# to which floor?  And what does changing the tile size do to the tiled forward's bytes and to
# its runtime?

# %%
_ = lab7.figure(model_bytes)

# %% [markdown] solution
# **Expected answers.**  Exercise 1: for GPT-2 medium, 275 GFLOP and 0.54 GB: 0.35 ms of
# arithmetic against 0.12 ms of bytes — attention is arithmetic-bound *if* it moves only the
# fewest bytes.  Exercise 3 (recorded run): the tiled forward is about 6x faster than the standard
# one while the model's bytes differ by 4.5x.  The standard kernel moves its 11 GB at about
# 2.25 TB/s, half the copy ceiling (at d = 128, N = 4096 the same kernel reaches 72 %): its time
# goes into moving S and P, bytes no tile size can remove, while its 275 GFLOP would take 0.35 ms.
# The tiled kernel runs at about 350 TFLOP/s, 44 % of the product ceiling, with 0.5 GB reaching
# DRAM: it is bound by arithmetic and by how well it keeps the tensor cores busy.  So the
# runtime ratio (6.2x) is not the byte ratio (4.5x): bytes explain the standard kernel's time,
# not the tiled one's.

# %% [markdown]
# ## Exercise 4: ours against PyTorch, in one process
#
# `gpu_sdpa.csv` holds, for 32 shapes (`dtype`, `d`, `N`, `causal`) and both passes, every
# implementation's `tflops` and an accuracy verdict `acc_ok`.  For the forward pass, find the
# shape where our best accurate flash2 kernel (`impl` starting with `ours` and containing
# `flash2`, `acc_ok` = 1) has the *smallest* throughput ratio to `sdpa-fa2` measured on the same
# shape.  Give `worst_ratio` (that ratio) and `worst_shape` (`(dtype, d, N, causal)`, d, N and
# causal as ints).

# %%
def shapes_of(rows):
    return sorted({(r["dtype"], int(r["d"]), int(r["N"]), int(r["causal"])) for r in rows})

# TODO
### BEGIN STUB
worst_ratio = worst_shape = None
### END STUB
### BEGIN SOLUTION
worst_ratio = worst_shape = None
for sh in shapes_of(sdpa):
    sel = [r for r in sdpa if (r["dtype"], int(r["d"]), int(r["N"]), int(r["causal"])) == sh and r["pass"] == "fwd"]
    ours = [float(r["tflops"]) for r in sel if r["impl"].startswith("ours") and "flash2" in r["impl"] and r["acc_ok"] == "1"]
    fa2 = [float(r["tflops"]) for r in sel if r["impl"] == "sdpa-fa2"]
    if ours and fa2 and (worst_ratio is None or max(ours) / fa2[0] < worst_ratio):
        worst_ratio, worst_shape = max(ours) / fa2[0], sh
print("worst forward ratio to FA2:", worst_ratio, "at", worst_shape)
### END SOLUTION

# %% check
lab7.sdpa_check(STUDENT, worst_ratio, worst_shape)

# %% [markdown]
# ## To think about
#
# - Version 10 beats FA2 on every recorded shape, yet moves exactly FA2's bytes (the same
#   schedule).  What changed, if not the traffic?  (docs/labs/background.md describes versions
#   7 and 10.)
# - The tiled backward's model bytes (Figure 2, version 9) are larger than its forward's by a
#   factor of six, but Nsight Compute's DRAM bytes are not: where does dQ's read-modify-write
#   happen on the GPU?
# - cuDNN's attention is faster still (`sdpa-cudnn`).  With the floors of Exercise 1, how much
#   faster could any forward be on this GPU?
