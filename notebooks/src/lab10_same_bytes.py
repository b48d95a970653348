# %% [markdown]
# # Lab 10: same bytes, different speed
#
# **One idea:** bytes set a floor under a kernel's time; above the floor the time goes into
# *instructions*.  Versions 7, 10 and 12 of the project's flash2 forward (docs/labs/background.md,
# "The project's GPU kernels") run the same schedule: one thread block keeps a query block of Br =
# 128 rows and streams K and V past it.  Flash2's bytes depend on Br only (eq. C2 in the section
# "Closed forms of the forward": reads = Nd + 2Nd·T_r), so on the same Br the three move the same
# bytes — their byte counters say so — and yet at d = 128 the slowest takes 1.9 times as long as
# the fastest.  Nsight Compute profiled the three on one H200 at N = 4096, 128 heads, fp16, d = 64
# and 128: `figures/data/gpu_ncu_same_bytes.csv` (provenance in its `#` lines).  You will confirm
# the bytes with the C library, show that no kernel is bound by them, and then account for the time
# with the profiler's counters: instructions, the rate they are issued at, the tensor cores' work
# per cycle, and what the warps wait for.  Handout: `docs/labs/lab10.md`.
#
# **What is available.** No GPU is needed: the data was recorded.  Without the recorded CSV in
# your checkout every exercise says so and is skipped; nothing is made up.
#
# **How you are graded.** Your instructor's grader runs your TODO cells again, in a process of its
# own, on rows whose numbers you have not seen (the same columns, other values), and checks what
# your functions and cells compute there: read every number from the rows, type none.

# %% setup
import flashlab as fl
from flashlab import labkit
from flashlab.labkit import lab10

STUDENT = labkit.student("")   # put your student id between the quotes: it picks your step of the ladder
P = lab10.params(STUDENT)

SMS = 132          # the H200's streaming multiprocessors
SCHEDULERS = 4     # warp schedulers per SM: each issues at most one warp instruction a cycle
PEAK_BYTES = 4.3e12   # bytes/s: a device-to-device copy on the H200 (lab 7)
PEAK_DENSE = 989e12   # FLOP/s: the H200's dense fp16 tensor-core peak (NVIDIA)

# %% given
rows = P["rows"]   # the recorded profile: one dict of strings per kernel and d

def row_of(version, d):
    """the row of version 7, 10 or 12 at head dimension d (or None)"""
    return next((r for r in rows if r["version"] == str(version) and int(r["d"]) == d), None)

# %%
prov = labkit.data.read_measurements(fl.data_dir() / "gpu_ncu_same_bytes.csv")[0]
print(f"gpu_ncu_same_bytes.csv: {len(rows)} rows" if rows else "gpu_ncu_same_bytes.csv: not recorded in this checkout")
for line in (prov or [])[:5]:
    print("   ", line[:150])
for r in rows:
    print(f"v{r['version']:>2} {r['kernel']:12} d = {r['d']:>3}  Br x Bc = {r['Br']:>3} x {r['Bc']:<3}  "
          f"grid {r['grid']:>4} x {r['block']:>3} threads  {float(r['duration_ns']) / 1e6:.3f} ms  "
          f"{float(r['tflops']):.0f} TFLOP/s")

# %% [markdown]
# Version 7 (`fl_fast_fwd`) issues its products as `mma.sync`, the tensor-core instruction of
# the previous generation (one warp, a 16 x 8 x 16 product); version 10 (`fl_wg_fwd`) as Hopper's
# `wgmma` (a warpgroup of 4 warps, 64 rows, operands read from shared memory by the hardware), one
# thread block per tile; version 12 (`fl_ws_fwd`) splits each thread block into a producer that
# only issues copies (on the copy engine, TMA) and two warpgroups that only compute, on a
# persistent grid of 132 blocks, one per SM.
#
# ## Exercise 1: the same bytes
#
# Write `model_bytes(row)`: the model's `(read bytes, write bytes)` of **one head** of the row's
# kernel: `fl.run("flash2", ...)` with the row's `N`, `d`, and its tiles `Br`, `Bc` forced, on an
# SRAM of exactly their footprint (`M=fl.footprint("flash2", d, Br, Bc)`, as in labs 6 and 7),
# `elem_bytes=2`; its `.read_bytes` and `.write_bytes`.  Compare with the kernels' byte counters
# (`counter_read_B_per_head`, `counter_write_B_per_head`); the check also asks about rows it
# changed (other tiles, another N), so the function must read them from the row.  Nsight Compute measured the whole
# launch, all `heads`: what the SMs received from L2 (`sm_read_B`) and what they wrote to it
# (`l2_write_B`).

# %% answer
def model_bytes(row):
    # TODO
    ### BEGIN STUB
    return None
    ### END STUB
    ### BEGIN SOLUTION
    N, d, Br, Bc = int(row["N"]), int(row["d"]), int(row["Br"]), int(row["Bc"])
    m = fl.run("flash2", N=N, d=d, Br=Br, Bc=Bc, M=fl.footprint("flash2", d, Br, Bc), elem_bytes=2)
    return m.read_bytes, m.write_bytes
    ### END SOLUTION

# %%
lab10.table({"model (R, W)": model_bytes,
             "counters (R, W)": lambda r: (int(r["counter_read_B_per_head"]), int(r["counter_write_B_per_head"])),
             "sm_read / model": lambda r: float(r["sm_read_B"]) / (int(r["heads"]) * model_bytes(r)[0]),
             "l2_write / model": lambda r: float(r["l2_write_B"]) / (int(r["heads"]) * model_bytes(r)[1])})

# %% check
lab10.same_bytes(P, model_bytes)

# %% [markdown]
# The three versions of a d move the same bytes, to the byte.  Version 7's Nsight Compute ratios
# are not 1: its `spill_inst` says why (registers spilled to local memory travel through L2 too).
#
# ## Exercise 2: not bound by bytes
#
# The fewest bytes any forward can move read Q, K and V once and write O and L once: the model
# with a single query block, `Br = N`.  Write `fewest_ms(row)`: the time, in milliseconds, that the
# fewest bytes of the row's **whole launch** (all `heads`: `fl.run(..., heads=...)`) take at
# `PEAK_BYTES`.  The table puts it beside the measured time, and beside the DRAM reads Nsight
# Compute counted: where do the model's re-reads of K and V come from, if not from DRAM?

# %% answer
def fewest_ms(row):
    # TODO
    ### BEGIN STUB
    return None
    ### END STUB
    ### BEGIN SOLUTION
    N, d, Bc = int(row["N"]), int(row["d"]), int(row["Bc"])
    m = fl.run("flash2", N=N, d=d, Br=N, Bc=Bc, M=fl.footprint("flash2", d, N, Bc), heads=int(row["heads"]),
               elem_bytes=2)
    return m.bytes / PEAK_BYTES * 1e3
    ### END SOLUTION

# %%
lab10.table({"fewest ms": fewest_ms,
             "share of time": lambda r: fewest_ms(r) / (float(r["duration_ns"]) / 1e6),
             "dram_read / QKV": lambda r: float(r["dram_read_B"]) / (3 * int(r["heads"]) * int(r["N"]) * int(r["d"]) * 2)})

# %% check
lab10.floor(P, fewest_ms)

# %% [markdown]
# ## Exercise 3: different speed
#
# Give `speedups`, a dict `{d: (t7 / t10, t10 / t12)}` for d = 64 and 128: each step's speedup,
# the slower version's `duration_ns` over the faster one's.  The FLOPs are the same within a d,
# so the TFLOP/s ratios are the same numbers.

# %% answer
# TODO: computed from the rows (row_of)
### BEGIN STUB
speedups = None
### END STUB
### BEGIN SOLUTION
t = lambda v, d: float(row_of(v, d)["duration_ns"])
speedups = {d: (t(7, d) / t(10, d), t(10, d) / t(12, d)) for d in (64, 128)} if rows else None
print(speedups)
### END SOLUTION

# %% check
lab10.speed(P, speedups)

# %% [markdown]
# ## Exercise 4: time is instructions over the issue rate
#
# A scheduler issues at most one warp instruction a cycle; each SM has 4, and the H200 132 SMs.
# `issue_active_pct` is the percentage of cycles a scheduler issued one; `inst_executed` counts
# the warp instructions of the whole launch; `sm_clock_hz` is the clock it ran at.
#
# 1. Write `predicted_ms(row)`: the duration those give, in milliseconds.  How close is it to the
#    measured time (the table)?
# 2. Write `speedup_parts(slow, fast)`: for two rows, the three factors of the speedup
#    t_slow / t_fast that your prediction implies, in this order: the instructions (the slower's
#    `inst_executed` over the faster's), the issue rate (the faster's `issue_active_pct` over the
#    slower's) and the clock (the faster's `sm_clock_hz` over the slower's).  Which factor makes
#    version 10 faster than version 7, and which makes version 12 faster than version 10?

# %% answer
def predicted_ms(row):
    # TODO
    ### BEGIN STUB
    return None
    ### END STUB
    ### BEGIN SOLUTION
    per_second = float(row["issue_active_pct"]) / 100 * SCHEDULERS * SMS * float(row["sm_clock_hz"])
    return float(row["inst_executed"]) / per_second * 1e3
    ### END SOLUTION

def speedup_parts(slow, fast):
    # TODO
    ### BEGIN STUB
    return None
    ### END STUB
    ### BEGIN SOLUTION
    f = lambda r, k: float(r[k])
    return (f(slow, "inst_executed") / f(fast, "inst_executed"),
            f(fast, "issue_active_pct") / f(slow, "issue_active_pct"),
            f(fast, "sm_clock_hz") / f(slow, "sm_clock_hz"))
    ### END SOLUTION

# %%
lab10.table({"predicted ms": predicted_ms,
             "predicted / ms": lambda r: predicted_ms(r) / (float(r["duration_ns"]) / 1e6),
             "inst per kFLOP": lambda r: float(r["inst_executed"]) / (float(r["gflop"]) * 1e6),
             "warps per SM": lambda r: float(r["warps_active_pct"]) / 100 * 64})
print(f"your step: v{P['pair'][0]} -> v{P['pair'][1]} at d = {P['d']}")
for d in (64, 128):
    for s, f in ((7, 10), (10, 12), tuple(int(v) for v in P["pair"])):
        if row_of(s, d) and row_of(f, d):
            try:
                parts = speedup_parts(row_of(s, d), row_of(f, d))
                print(f"d = {d}, v{s} -> v{f}: instructions x issue rate x clock = "
                      + " x ".join(f"{x:.3f}" for x in parts) + f" = {parts[0] * parts[1] * parts[2]:.3f}"
                      f" (measured {float(row_of(s, d)['duration_ns']) / float(row_of(f, d)['duration_ns']):.3f})")
            except Exception as e:
                print(f"d = {d}, v{s} -> v{f}: speedup_parts not usable yet ({type(e).__name__})")

# %% check
lab10.issue(P, predicted_ms, speedup_parts)

# %% [markdown]
# ## Exercise 5: the tensor pipe
#
# `tensor_active_pct` is the percentage of an SM's cycles its tensor pipe was busy.  Version 7's
# pipe is the busiest of the three, and version 7 is the slowest.
#
# 1. Write `flop_per_tensor_cycle(row)`: the FLOPs one SM completes per cycle its tensor pipe is
#    active: the row's FLOPs (`gflop` x 1e9) over the 132 SMs and over the active cycles
#    (`tensor_active_pct` / 100 x the duration x `sm_clock_hz`).
# 2. Write `peak_share(row)`: the row's FLOP rate as a fraction of `PEAK_DENSE`.

# %% answer
def flop_per_tensor_cycle(row):
    # TODO
    ### BEGIN STUB
    return None
    ### END STUB
    ### BEGIN SOLUTION
    cycles = float(row["tensor_active_pct"]) / 100 * float(row["duration_ns"]) * 1e-9 * float(row["sm_clock_hz"])
    return float(row["gflop"]) * 1e9 / SMS / cycles
    ### END SOLUTION

def peak_share(row):
    # TODO
    ### BEGIN STUB
    return None
    ### END STUB
    ### BEGIN SOLUTION
    return float(row["gflop"]) * 1e9 / (float(row["duration_ns"]) * 1e-9) / PEAK_DENSE
    ### END SOLUTION

# %%
lab10.table({"tensor active %": lambda r: float(r["tensor_active_pct"]),
             "FLOP / active cyc": flop_per_tensor_cycle,
             "share of peak": peak_share})

# %% check
lab10.tensor(P, flop_per_tensor_cycle, peak_share)

# %% [markdown]
# ## Exercise 6: where the warps wait
#
# Each `stall_<reason>` column is the number of warps waiting for that reason per issued
# instruction.  `stall_selected` is always 1: it is the warp that issued.
#
# 1. Write `top_stalls(row)`: the two reasons with the most warps stalled, largest first, as
#    names without the `stall_` prefix (`["wait", "barrier"]`), `selected` left out.
# 2. A ratio per instruction times the instructions issued is the warp-cycles stalled for that
#    reason over the whole launch.  Give `barrier_drop`, a dict `{d: version 12's barrier
#    warp-cycles over version 10's}` for d = 64 and 128.

# %% answer
def top_stalls(row):
    # TODO
    ### BEGIN STUB
    return None
    ### END STUB
    ### BEGIN SOLUTION
    stalls = {k[len("stall_"):]: float(v) for k, v in row.items() if k.startswith("stall_") and k != "stall_selected"}
    return sorted(stalls, key=stalls.get, reverse=True)[:2]
    ### END SOLUTION

# TODO
### BEGIN STUB
barrier_drop = None
### END STUB
### BEGIN SOLUTION
cyc = lambda r: float(r["stall_barrier"]) * float(r["inst_executed"])
barrier_drop = {d: cyc(row_of(12, d)) / cyc(row_of(10, d)) for d in (64, 128)} if rows else None
print(barrier_drop)
### END SOLUTION

# %%
lab10.table({"top two": top_stalls,
             "barrier / inst": lambda r: float(r["stall_barrier"]),
             "instructions (G)": lambda r: float(r["inst_executed"]) / 1e9})

# %% check
lab10.stalls(P, top_stalls, barrier_drop)

# %% [markdown] solution
# **Expected answers** (the recorded run; the checks compute them from the CSV and the library).
#
# Exercise 1: one head moves 34,078,720 bytes read and 540,672 written at d = 64, 68,157,440 and
# 1,064,960 at d = 128, for all three versions, equal to the counters.  Versions 10 and 12's SMs
# receive exactly 128 x the model's reads from L2; version 7 a little more, and at d = 128 it
# writes 5.1x the model's bytes to L2: its 255 registers a thread are not enough, and the spills
# (`spill_inst`) travel through L2.  The bytes cannot tell the three kernels apart.
#
# Exercise 2: the fewest bytes take 0.063 ms (d = 64) and 0.125 ms (d = 128) at the copy rate:
# 4-7 % of the measured times.  DRAM served 1.00-1.03x the bytes of Q, K and V once: the model's
# re-reads of K and V (one per query block) come from the 60 MB L2, which holds a head's K and V
# many times over.  The model's bytes are the SMs' traffic with L2; version 12 at d = 128 takes
# in 8.7 GB in 1.73 ms, 5.0 TB/s, more than the copy rate, and is still not bound by it.
#
# Exercise 3: d = 64: 1.14 and 1.20; d = 128: 1.19 and 1.63 (version 12 is 1.93x version 7).
#
# Exercise 4: the prediction is 3-6 % short of every measured time (the SMs are not all issuing
# for the whole launch: its start and its tail).  Version 7 -> 10: version 10 executes *more*
# instructions (0.94x and 0.95x) but issues them 1.22x and 1.25x faster — 16 warps per SM
# against 8, so a scheduler more often finds one ready.  Version 10 -> 12: version 12 issues
# *slower* (0.89x, 0.83x) but needs 1.36x and 2.15x fewer instructions.  What it no longer
# executes: the transpose of V_j on chip (it reads V_j as loaded), the copies in the computing
# warps (one producer thread hands them to the copy engine), and at d = 128, with a key tile of
# 128 instead of 64, half the instructions of S = Q K_j^T (each does twice the work).  At d = 128 it also ran at
# a 7 % lower clock (1.68 against 1.80 GHz; the clocks were read, not set).
#
# Exercise 5: version 7's tensor pipe is busy 52 % of the cycles but completes about 2,640 FLOPs
# per busy cycle and SM, against 3,860-3,960 for wgmma: `mma.sync` keeps the pipe busy about 1.5x
# longer per FLOP on this GPU.  Shares of the dense peak: version 7 0.33, version 10 0.37-0.40,
# version 12 0.45 (d = 64) and 0.64 (d = 128).
#
# Exercise 6: the first stall of every row is `wait` (a fixed-latency dependency) except version
# 10 at d = 128, whose first is `barrier`: its whole thread block synchronizes three times per key
# block (K_j and V_j arrived; V_j transposed; the stage free again), so every warp waits for the
# slowest.  Version 12 has no block-wide barrier in its loop: the producer and the consumers wait
# on one stage's barrier each, and the remaining `barrier` stalls are the ping-pong's, where one
# consumer warpgroup waits for its turn to issue its products.  Its barrier warp-cycles are 0.57x
# version 10's at d = 64 and 0.31x at d = 128 (per instruction only 0.78x and 0.66x: version 12
# also issues fewer instructions).  Counting 'selected' as a stall would put it second in three
# rows (and tie it in a fourth), although it is the issue itself.

# %% [markdown]
# ## To think about
#
# - Summed over every reason, `selected` included, a row's `stall_*` columns equal the warps
#   resident per scheduler over the issue rate (`warps_active_pct` / 100 x 16 warps over
#   `issue_active_pct` / 100), to 0.3 % on every row: why must they?  Which of the two would you
#   raise to make version 12 faster still?
# - Version 7 and version 10 execute about the same number of instructions.  What does that say
#   about where version 10's instructions go, if wgmma does a warpgroup's product in one?
# - A model that counts only bytes cannot rank these three kernels.  Which one number from this
#   lab would you add to it, and for which kernels would it still be wrong?
