# %% [markdown]
# # Lab 2: counting HBM traffic, standard vs tiled
#
# **One idea:** the cost that FlashAttention removes is *traffic between HBM and SRAM*, and it can
# be counted exactly.  Standard attention writes the $N\times N$ scores $S$ and probabilities $P$ to
# HBM and reads them back; the tiled schedules never do, at the price of re-reading $K$ and $V$
# (flash2) or $Q$ and $O$ (flash1) once per block.
#
# The counts come from the C machine: HBM tensors, SRAM buffers whose sizes add up
# to at most $M$ elements, and `fl_load` / `fl_store` of rectangular tiles, each counting one read or
# one write per element (rules R1, R2 of docs/labs/background.md).  `fl.run(...)` runs one of the project's
# schedules on it in *count* mode (no arithmetic).  You predict; the machine counts.
# Handout: `docs/labs/lab2.md`; background: `docs/labs/background.md`.

# %% setup
import math
import flashlab as fl
from flashlab import flmachine, labkit
from flashlab.labkit import lab2, stepview

STUDENT = labkit.student("")   # put your student id between the quotes: it picks your sizes
P = lab2.params(STUDENT)

def cdiv(a, b):
    return -(-a // b)

# %%
r = fl.run("flash2", N=1024, d=64, M=98304)
print(r)
print("blocks Br x Bc =", r.Br, "x", r.Bc, " SRAM peak", r.sram_peak, "of M =", r.M)
print("tensors counted:", ", ".join(r.tensors), "(r.tensors[name] = (reads, writes): predict them first)")

# %% [markdown]
# ## Exercise 1: predict standard attention
#
# Standard attention (the paper's Algorithm 0) computes $S = QK^T$ block by block and writes it,
# reads $S$ back for the softmax and writes $P$, then reads $P$ and $V$ block by block and writes
# $O$.  Write `predict_standard(N, d, Br, Bc)` returning `{tensor: (reads, writes)}` for the tensors
# `Q, K, V, O, S, P`.  Assume what holds in all the check's cases: the blocks hold whole rows of
# $Q$, $K$, $V$ (`Bd = d`) and a row of $S$ fits in SRAM ($N \le M$).  Row blocks: $T_r = \lceil N/B_r\rceil$;
# the blocks need not be square ($B_r \ne B_c$ in one of the check's cases).  `cdiv(a, b)` is
# $\lceil a/b \rceil$.  (The loops: docs/labs/background.md, "Attention".)

# %% answer
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
lab2.standard(P, predict_standard)

# %% [markdown]
# ## Exercise 2: predict flash2
#
# FlashAttention-2's forward pass keeps a block $Q_i$ in SRAM and streams every $K_j, V_j$ past it,
# then writes $O_i$ and the log-sum-exp $L_i$ (one number per row).  Predict its per-tensor counts
# for the tensors `Q, K, V, O, L`.

# %% answer
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
lab2.flash2(P, predict_flash2)

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
# stored through which SRAM buffer, SRAM use after it, and the counters so far.  `fl.trace()`
# returns the rows (columns: docs/labs/lab2.md).  Your trace run is `P["trace"]` (N, d, M).

# %%
print("your trace run: N, d, M =", P["trace"])
events = fl.trace(algo="flash2", N=16, d=4, M=200)
print(",".join(events[0].keys()))
for e in events[:14]:
    print(",".join(str(v) for v in e.values()))
print("...", len(events), "events")

# %% [markdown]
# Step through a small flash2 run (N = 16, d = 4, M = 200: 5-row blocks), one frame per tile
# event: the line of the loop that issued it, the loop indices, what each SRAM buffer holds, and
# the counts so far.  (With ipywidgets installed the frames come with a slider; otherwise the text
# of every frame and an animation.)

# %%
stepview.show(stepview.frames(events, "flash2", "fwd"))

# %% [markdown]
# ## Exercise 3: read the trace
#
# For your trace run `P["trace"]` $= (N, d, M)$ (printed above), predict **without running its
# trace** (the grader refuses `fl.trace` and `fl.run` here):
#
# * `flash2_K_loads`: how many times flash2 loads each tile of $K$;
# * `flash1_Q_loads`: how many times flash1 loads each tile of $Q$;
# * `flash1_O_stores`: how many times flash1 stores each tile of $O$ (look at line 2 of its algorithm
#   in docs/labs/background.md).  Use `fl.blocks(algo, N=..., d=..., M=...)` for the blocks
#   (`["Br"]`, `["Bc"]`).

# %% answer
# TODO: three numbers, computed from P["trace"]
### BEGIN STUB
flash2_K_loads = None
flash1_Q_loads = None
flash1_O_stores = None
### END STUB
### BEGIN SOLUTION
N_t, d_t, M_t = P["trace"]
b2, b1 = fl.blocks("flash2", N=N_t, d=d_t, M=M_t), fl.blocks("flash1", N=N_t, d=d_t, M=M_t)
flash2_K_loads = cdiv(N_t, b2["Br"])        # once per Q block
flash1_Q_loads = cdiv(N_t, b1["Bc"])        # once per K/V block
flash1_O_stores = flash1_Q_loads + 1        # O = 0 first (line 2), then once per K/V block
### END SOLUTION

# %% check
lab2.trace(P, flash2_K_loads, flash1_Q_loads, flash1_O_stores)

# %% [markdown]
# ## Exercise 4: your own schedule on the C machine
#
# A schedule is just calls onto the machine.  Here is one that tries to keep all of $K$ in SRAM;
# the machine refuses it, naming what was live:

# %%
def greedy(m, K):
    kbuf = m.alloc("all_of_K", K.rows, K.cols)
    m.load(kbuf, K, 0, 0, K.rows, K.cols)

try:
    flmachine.run(greedy, 2000, {"K": (256, 16)}, {}, mode="count", name="greedy")
except fl.FlashlabError as e:
    print(e.kind, "->", e)

# %% [markdown]
# Now write flash2's loop yourself, **computing** $O$ through the tiles you move.  Your sizes are
# `P["own"]` ($N$, $d$, $M$).  Flash2's SRAM buffers are $Q_i, O_i$ ($B_r \times d$), $K_j, V_j$
# ($B_c \times d$), $S_{ij}$ ($B_r \times B_c$) and the row statistics $m_i, \ell_i$
# ($B_r \times 1$ each): eq. (F2).
#
# 1. Choose `B`: the largest square block ($B_r = B_c = B$) whose buffers fit in $M$ (the machine
#    refuses a larger one; `fl.footprint("flash2", d, Br, Bc)` gives what they take).
# 2. Write `my_flash2(m, Q, K, V, O, L, N, d, Br, Bc)`: allocate the buffers with
#    `m.alloc(name, rows, cols)`; for each row block load $Q_i$ (`m.load(buf, tensor, r0, c0, nr, nc)`),
#    start $O_i = 0$, $\ell_i = 0$, $m_i = -\infty$ on chip (`m.fill`); for each key block load
#    $K_j$ and $V_j$ and compute on chip with the machine's operations: $S_{ij} = Q_i K_j^T/\sqrt d$
#    (`m.matmul(S, Qi, Kj, br, bc, d, transpose_b=True, alpha=...)`), then lab 1's recurrence for every
#    row at once (`m.max_rescale(mi, S, br, bc, li, Oi)`, `m.exp_diff`, `m.row_sum(..., accumulate=True)`,
#    `m.matmul(Oi, S, Vj, br, d, bc, accumulate=True)`).  At the end of the row block divide
#    (`m.div_rows`), turn $m_i$ into $L_i = m_i + \log \ell_i$ (`m.lse(mi, mi, li, br)`), and store
#    $O_i$ and $L_i$.  Mind the last, partial blocks ($N$ need not be a multiple of $B_r$ or $B_c$).
#
# The values stay in the machine: you never read one.  The check runs your schedule on random
# inputs with your `B` and with two non-square blocks, and compares $O$ and $L$ with the exact
# reference (to 1e-12), every tensor's reads and writes with the project's flash2 at the same
# blocks (which equal its closed form, eq. (C2) of docs/labs/background.md), and the SRAM peak.

# %% answer
N, d, M = P["own"]
print("your flash2: N =", N, " d =", d, " M =", M)
# TODO: the block size and the schedule
### BEGIN STUB
B = None

def my_flash2(m, Q, K, V, O, L, N, d, Br, Bc):
    # b = m.alloc(name, rows, cols); m.load(b, tensor, r0, c0, nr, nc); m.store(...); m.fill(b, v);
    # m.matmul, m.max_rescale, m.exp_diff, m.row_sum, m.div_rows, m.lse: help(flmachine)
    pass
### END STUB
### BEGIN SOLUTION
B = max(b for b in range(1, N + 1) if fl.footprint("flash2", d, b, b) <= M)

def my_flash2(m, Q, K, V, O, L, N, d, Br, Bc):
    Qi, Oi = m.alloc("Q_i", Br, d), m.alloc("O_i", Br, d)
    Kj, Vj = m.alloc("K_j", Bc, d), m.alloc("V_j", Bc, d)
    S = m.alloc("S_ij", Br, Bc)
    mi, li = m.alloc("m_i", Br, 1), m.alloc("l_i", Br, 1)
    for r0 in range(0, N, Br):
        br = min(Br, N - r0)
        m.load(Qi, Q, r0, 0, br, d)
        m.fill(Oi, 0.0)
        m.fill(li, 0.0)
        m.fill(mi, float("-inf"))
        for c0 in range(0, N, Bc):
            bc = min(Bc, N - c0)
            m.load(Kj, K, c0, 0, bc, d)
            m.load(Vj, V, c0, 0, bc, d)
            m.matmul(S, Qi, Kj, br, bc, d, transpose_b=True, alpha=1 / math.sqrt(d))
            m.max_rescale(mi, S, br, bc, li, Oi)
            m.exp_diff(S, S, mi, br, bc)
            m.row_sum(li, S, br, bc, accumulate=True)
            m.matmul(Oi, S, Vj, br, d, bc, accumulate=True)
        m.div_rows(Oi, li, br, d)
        m.lse(mi, mi, li, br)
        m.store(Oi, O, r0, 0, br, d)
        m.store(mi, L, r0, 0, br, 1)
    for b in (Qi, Oi, Kj, Vj, S, mi, li):
        m.free(b)
### END SOLUTION

# %% check
lab2.own_schedule(P, B, my_flash2)

# %% [markdown]
# ## Take-away
#
# Standard attention's traffic is dominated by $S$ and $P$: $4N^2$ element moves that grow
# quadratically, whatever $M$ is.  Flash2 moves $Nd + 2Nd\,T_r$ reads: quadratic in $N$ too, but
# divided by the block size, which grows with $M$.  Lab 3 makes that precise.

# %% [markdown] solution
# **Instructor notes.** Standard: Q (Nd, 0), K and V (Nd·Tr, 0), O (0, Nd), S and P (N², N²).
# Flash2: Q (Nd, 0), K and V (Nd·Tr, 0), O (0, Nd), L (0, N).  The trace (no student id): 8, 8, 9
# (flash1 writes O = 0 to HBM first: the paper's line 2 is counted).  Own schedule (no student
# id): B = 22 (F2(22) = 1936 ≤ 2000 < F2(23) = 2047); the common bugs: a full-size last block (out
# of bounds: the machine names it), O_i stored inside the key loop, no rescale of O_i.
# The grader's parameters of a student: `python3 -m grader params --secret-file S --student ID --lab 2`.
