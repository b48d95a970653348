# %% [markdown]
# # Lab 2: counting HBM traffic, standard vs tiled
#
# **One idea:** the cost that FlashAttention removes is *traffic between HBM and SRAM*, and it can
# be counted exactly.  Standard attention writes the $N\times N$ scores $S$ and probabilities $P$ to
# HBM and reads them back; the tiled schedules never do, at the price of re-reading $K$ and $V$
# (flash2) or $Q$ and $O$ (flash1) once per block.
#
# The counts come from the C machine (sim/machine.h): HBM tensors, SRAM buffers whose sizes add up
# to at most $M$ elements, and `fl_load` / `fl_store` of rectangular tiles, each counting one read or
# one write per element (docs/model.md rules R1, R2).  `fl.run(...)` runs one of the project's
# schedules on it in *count* mode (no arithmetic).  You predict; the machine counts.
# Handout: `docs/labs/lab2.md`.

# %%
import sys, pathlib
for p in (pathlib.Path.cwd(), pathlib.Path.cwd().parent):
    if (p / "flashlab.py").exists():
        sys.path.insert(0, str(p))
import flashlab as fl

r = fl.run("flash2", N=1024, d=64, M=98304)
print(r)
print("per tensor (reads, writes):", r.tensors)
print("blocks Br x Bc =", r.Br, "x", r.Bc, " SRAM peak", r.sram_peak, "of M =", r.M)

# %% [markdown]
# ## Exercise 1: predict standard attention
#
# Standard attention (the paper's Algorithm 0) computes $S = QK^T$ block by block and writes it,
# reads $S$ back for the softmax and writes $P$, then reads $P$ and $V$ block by block and writes
# $O$.  Write `predict_standard(N, d, Br, Bc)` returning `{tensor: (reads, writes)}` for the tensors
# `Q, K, V, O, S, P`.  Assume what holds in all the check's cases: the blocks hold whole rows of
# $Q$, $K$, $V$ (`Bd = d`) and a row of $S$ fits in SRAM ($N \le M$).  Row blocks: $T_r = \lceil N/B_r\rceil$.
# (Read `sim/sched_standard.c` if you want the loops.)

# %%
def cdiv(a, b):
    return -(-a // b)

def predict_standard(N, d, Br, Bc):
    # TODO: return {"Q": (reads, writes), "K": ..., "V": ..., "O": ..., "S": ..., "P": ...}
    ### BEGIN STUB
    return None
    ### END STUB
    ### BEGIN SOLUTION
    Tr = cdiv(N, Br)
    return {"Q": (N * d, 0), "K": (N * d * Tr, 0), "V": (N * d * Tr, 0), "O": (0, N * d),
            "S": (N * N, N * N), "P": (N * N, N * N)}
    ### END SOLUTION

# %% check
def compare(cid, algo, predict, cases):
    problems = []
    for N, d, M in cases:
        r = fl.run(algo, N=N, d=d, M=M)          # the machine counts
        try:
            guess = predict(N, d, r.Br, r.Bc)
        except Exception as e:
            problems.append(f"N={N} d={d}: your function raised {type(e).__name__}: {e}")
            continue
        if guess is None:
            problems.append("no prediction yet")
            break
        for name, (rd, wr) in r.tensors.items():
            g = guess.get(name)
            if g is None:
                problems.append(f"N={N} d={d} M={M} (Br={r.Br}): no prediction for tensor {name}")
            elif tuple(g) != (rd, wr):
                problems.append(f"N={N} d={d} M={M} (Br={r.Br}, Bc={r.Bc}): {name} predicted "
                                f"(reads, writes) = {tuple(g)}, the machine counted {(rd, wr)}")
        for name in set(guess) - set(r.tensors):
            problems.append(f"{algo} has no HBM tensor {name}")
    fl.check(cid, problems)

compare("lab2.standard", "standard", predict_standard, [(256, 16, 4096), (300, 16, 2000), (1000, 32, 8192)])

# %% [markdown]
# ## Exercise 2: predict flash2
#
# FlashAttention-2's forward pass keeps a block $Q_i$ in SRAM and streams every $K_j, V_j$ past it,
# then writes $O_i$ and the log-sum-exp $L_i$ (one number per row).  Predict its per-tensor counts
# for the tensors `Q, K, V, O, L`.

# %%
def predict_flash2(N, d, Br, Bc):
    # TODO
    ### BEGIN STUB
    return None
    ### END STUB
    ### BEGIN SOLUTION
    Tr = cdiv(N, Br)
    return {"Q": (N * d, 0), "K": (N * d * Tr, 0), "V": (N * d * Tr, 0), "O": (0, N * d), "L": (0, N)}
    ### END SOLUTION

# %% check
compare("lab2.flash2", "flash2", predict_flash2, [(256, 16, 4096), (300, 16, 2000), (1000, 32, 8192)])

# %% [markdown]
# Compare the totals: where does standard attention's traffic go, and what does flash2 pay instead?

# %%
for N in (256, 1024, 4096):
    st, f2 = fl.run("standard", N=N, d=64, M=98304), fl.run("flash2", N=N, d=64, M=98304)
    print(f"N={N:5d}: standard {st.total:>11,d}  (S and P: {sum(st.tensors['S']) + sum(st.tensors['P']):>11,d})"
          f"   flash2 {f2.total:>10,d}   ratio {st.total / f2.total:5.1f}")

# %% [markdown]
# ## Watch the tiles move: `flashlab trace`
#
# `flashlab trace` writes every event of a small run: which tile of which tensor is loaded or
# stored through which SRAM buffer, SRAM use after it, and the counters so far.  The default run
# (N = 64, d = 8, M = 384) gives flash1 and flash2 8 x 8 tiles.  `fl.trace()` returns the rows;
# `figures/trace_anim.gp` turns them into an animation (docs/labs/lab2.md).

# %%
events = fl.trace(algo="flash2")
print(",".join(events[0].keys()))
for e in events[:14]:
    print(",".join(str(v) for v in e.values()))
print("...", len(events), "events")

# %% [markdown]
# The same three runs as a strip of frames (a third, two thirds, the end of each run), drawn by
# `figures/trace_strip.gp` when gnuplot is installed: every tile moved so far is painted blue
# (load) or orange (store), darker when moved more often.

# %%
import shutil, subprocess, tempfile
if shutil.which("gnuplot"):
    tmp = pathlib.Path(tempfile.mkdtemp())
    fl.cli("trace", "--out", tmp / "trace.csv")
    subprocess.run(["gnuplot", "-e", f"data='{tmp / 'trace.csv'}'; out='{tmp / 'strip.png'}'",
                    str(fl.ROOT / "figures" / "trace_strip.gp")], check=True, capture_output=True)
    from IPython.display import Image, display
    display(Image(filename=str(tmp / "strip.png"), width=900))
else:
    print("gnuplot not found: no strip (the trace above has the same information)")

# %% [markdown]
# ## Exercise 3: read the trace
#
# In the default run ($N = 64$, 8 row blocks of 8 for both tiled schedules), predict **before
# counting in the trace**:
#
# * `flash2_K_loads`: how many times flash2 loads each tile of $K$;
# * `flash1_Q_loads`: how many times flash1 loads each tile of $Q$;
# * `flash1_O_stores`: how many times flash1 stores each tile of $O$ (look at line 2 of its algorithm
#   in `sim/sched_flash1.c`).

# %%
# TODO: three numbers
### BEGIN STUB
flash2_K_loads = None
flash1_Q_loads = None
flash1_O_stores = None
### END STUB
### BEGIN SOLUTION
flash2_K_loads = 8     # once per Q block (Tr = 8)
flash1_Q_loads = 8     # once per K/V block (Tc = 8)
flash1_O_stores = 9    # once to initialise O = 0 (line 2), then once per K/V block
### END SOLUTION

# %% check
from collections import Counter
def per_tile(algo, kind, tensor):
    c = Counter((e["tile_r"], e["tile_c"]) for e in fl.trace(algo=algo)
                if e["event"] == kind and e["tensor"] == tensor)
    return set(c.values())           # the same number for every tile
problems = []
for name, guess, (algo, kind, tensor) in (("flash2_K_loads", flash2_K_loads, ("flash2", "load", "K")),
                                          ("flash1_Q_loads", flash1_Q_loads, ("flash1", "load", "Q")),
                                          ("flash1_O_stores", flash1_O_stores, ("flash1", "store", "O"))):
    seen = per_tile(algo, kind, tensor)
    if guess is None:
        problems.append(f"{name}: no answer yet")
    elif seen != {guess}:
        problems.append(f"{name} = {guess}: the trace shows {sorted(seen)} {kind}s per tile of {tensor}")
fl.check("lab2.trace", problems)

# %% [markdown]
# ## Exercise 4: your own schedule on the C machine
#
# A schedule is just calls onto the machine.  Here is one that tries to keep all of $K$ in SRAM;
# the machine refuses it, naming what was live:

# %%
with fl.Machine(M=2000, name="greedy") as m:
    K = m.tensor("K", 256, 16)
    try:
        kbuf = m.alloc("all_of_K", 256, 16)
    except fl.FlashlabError as e:
        print(e.kind, "->", e)

# %% [markdown]
# Now write flash2's loop yourself for $N = 256$, $d = 16$, $M = 2000$, with square blocks
# $B_r = B_c = B$.  Its SRAM buffers are $Q_i, O_i, K_j, V_j$ ($B \times d$ each), $S_{ij}$
# ($B \times B$) and the row statistics $m_i, \ell_i$ ($B \times 1$ each).
#
# 1. Choose `B`: the largest block whose buffers fit in $M$ (the machine will refuse a larger one).
# 2. Write `my_flash2(m, Q, K, V, O, L, N, d, B)`: allocate the buffers with `m.alloc(name, rows,
#    cols)`, then for each row block load $Q_i$, for each key block load $K_j$ and $V_j$, and at
#    the end of the row block store $O_i$ and $L_i$ (from the $m_i$ buffer).  Mind the last, partial
#    block ($N$ need not be a multiple of $B$).  Free the buffers at the end.
#
# The check runs your schedule on a fresh count-only machine and compares every tensor's
# reads and writes, and the SRAM peak, with the project's flash2 (`sim/sched_flash2.c`).

# %%
N, d, M = 256, 16, 2000
# TODO: the block size and the schedule
### BEGIN STUB
B = None

def my_flash2(m, Q, K, V, O, L, N, d, B):
    # the machine's calls: buf = m.alloc(name, rows, cols); m.load(buf, tensor, r0, c0, nr, nc);
    # m.store(buf, tensor, r0, c0, nr, nc); m.free(buf).  Tiles start at the buffer's top-left.
    pass
### END STUB
### BEGIN SOLUTION
B = max(b for b in range(1, N + 1) if 4 * b * d + b * b + 2 * b <= M)

def my_flash2(m, Q, K, V, O, L, N, d, B):
    Qi, Oi = m.alloc("Q_i", B, d), m.alloc("O_i", B, d)
    Kj, Vj = m.alloc("K_j", B, d), m.alloc("V_j", B, d)
    Sij = m.alloc("S_ij", B, B)
    mi, li = m.alloc("m_i", B, 1), m.alloc("l_i", B, 1)
    for r0 in range(0, N, B):
        br = min(B, N - r0)
        m.load(Qi, Q, r0, 0, br, d)
        for c0 in range(0, N, B):
            bc = min(B, N - c0)
            m.load(Kj, K, c0, 0, bc, d)
            m.load(Vj, V, c0, 0, bc, d)
        m.store(Oi, O, r0, 0, br, d)
        m.store(mi, L, r0, 0, br, 1)
    for b in (Qi, Oi, Kj, Vj, Sij, mi, li):
        m.free(b)
### END SOLUTION

# %% check
problems = []
ref = fl.run("flash2", N=N, d=d, M=M)
if B is None:
    problems.append("choose B first")
else:
    with fl.Machine(M=M, name="my_flash2") as m:
        Q, K, V, O = (m.tensor(t, N, d) for t in "QKVO")
        L = m.tensor("L", N, 1, elem_bytes=4)
        try:
            my_flash2(m, Q, K, V, O, L, N, d, B)
        except fl.FlashlabError as e:
            problems.append(f"the machine refused your schedule: {e}")
        mine = m.counts()
        peak = m.sram_peak
    if not problems:
        if B != ref.Br:
            problems.append(f"B = {B}: " + ("the buffers of a larger block still fit in M"
                                            if B < ref.Br else "that block does not fit"))
        for t, want in ref.tensors.items():
            if mine.get(t) != want:
                problems.append(f"tensor {t}: your schedule moved (reads, writes) = {mine.get(t)}, "
                                f"flash2 moves {want}")
        if peak != ref.sram_peak:
            problems.append(f"SRAM peak {peak}, flash2's is {ref.sram_peak}: allocate the same buffers")
fl.check("lab2.own-schedule", problems)

# %% [markdown]
# ## Take-away
#
# Standard attention's traffic is dominated by $S$ and $P$: $4N^2$ element moves that grow
# quadratically, whatever $M$ is.  Flash2 moves $Nd + 2Nd\,T_r$ reads: quadratic in $N$ too, but
# divided by the block size, which grows with $M$.  Lab 3 makes that precise.

# %% [markdown] solution
# **Instructor notes.** Standard: Q (Nd, 0), K and V (Nd·Tr, 0), O (0, Nd), S and P (N², N²).
# Flash2: Q (Nd, 0), K and V (Nd·Tr, 0), O (0, Nd), L (0, N).  The trace: 8, 8, 9 (flash1 writes
# O = 0 to HBM first: the paper's line 2 is counted).  Own schedule: B = 22 (F2(22) = 1936 ≤ 2000
# < F2(23) = 2047); the common bug is a full-size last block (out of bounds: the machine names it).
