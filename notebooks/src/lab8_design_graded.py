# %% [markdown]
# # Lab 8: design a schedule (graded)
#
# **One idea:** with a mask or shared K/V heads, the best schedule is not the plain one: skipping
# what the mask removes, choosing the loop order and the blocks for $M$, and loading a shared K/V
# tile once for the group all change the traffic.  Here you design a schedule for *your* case and
# are graded by how close it comes to the best schedule `flashlab optimize` finds, and to the
# lower bound of the problem.  Handout: `docs/labs/lab8.md`; background: `docs/labs/background.md`.
#
# Your case (from your student id) is one of
#
# * **causal**: self-attention with the bottom-right causal mask ($N_q = N_k$);
# * **decode**: a few new queries over a long cache ($N_q \ll N_k$), bottom-right causal;
# * **gqa**: grouped-query attention, `heads` query heads sharing `kv_heads` K/V heads, no mask.
#
# Your schedule computes: it runs on a machine of capacity $M$ whose values stay in the machine
# (lab 2's operations: `help(flmachine)`), on random inputs, and it is valid when the $O$ and $L$
# it stores equal the exact reference to 1e-12 (each query head with its K/V head, under your
# case's mask).  So it must keep on chip what a real kernel keeps: an $O$ accumulator, a score tile
# and the row statistics, at the block sizes you choose; the machine refuses anything over $M$,
# and your traffic is what it counted.
#
# **How you are graded.** Your instructor's grader runs `my_schedule` again, in a process of its
# own, on a case of the same kind with sizes you have not seen, on inputs your code never sees:
# write it for any `case`, not for the numbers printed below.

# %% setup
import csv, io, math
import flashlab as fl
from flashlab import flmachine, labkit
from flashlab.labkit import lab8

STUDENT = labkit.student("")   # put your student id between the quotes: it picks your case
case = lab8.params(STUDENT)

# %%
print(case)

# %% [markdown]
# ## Your schedule
#
# `my_schedule(m, T, case)` gets a machine `m` of capacity `case["M"]` and the HBM tensors
# `T["Q"]`, `T["O"]` (`heads * Nq` rows of `d`: head `h` holds rows `h*Nq ... h*Nq+Nq-1`),
# `T["K"]`, `T["V"]` (`kv_heads * Nk` rows, the same packing; `Nk` is `case["Nk"] or case["Nq"]`),
# and `T["L"]` (`heads * Nq` rows of 1).  Query head `h` reads K/V head `h // (heads // kv_heads)`.
# The machine knows your case's mask: `m.tile_kind(q0, nr, k0, nc)` says whether a tile of
# queries `q0..` and keys `k0..` (within a head) is `'empty'` (skip it), `'full'` or `'partial'`
# (then `m.mask(S, q0, k0, nr, nc, row=...)` sets its masked scores to $-\infty$).  `load` and
# `store` take `row=...`: the tile goes to rows `row, row + 1, ...` of the buffer, so the query
# tiles of a GQA group can be stacked in one buffer and share each K/V tile.  `fl.footprint(...)`
# says what buffers take, and `flashlab optimize` (`fl.cli("optimize", ...)`) which schedule and
# blocks it found best.  Design the loops and the blocks; the rubric is in the handout.

# %% answer
def my_schedule(m, T, case):
    # TODO: allocate buffers, load tiles of Q, K, V, compute O and L on chip, store them
    ### BEGIN STUB
    pass
    ### END STUB
    ### BEGIN SOLUTION
    # flash2 with masked tiles skipped and, where optimize chooses flash2-gqa, the group's query
    # heads stacked so each K/V tile is loaded once per group; blocks from optimize's search.
    Nq, d, H, Hk = case["Nq"], case["d"], case["heads"], case["kv_heads"]
    Nk = case["Nk"] or Nq
    args = ["optimize", "--N", Nq, "--d", d, "--M", case["M"], "--format", "csv"]
    args += ["--Nk", case["Nk"]] if case["Nk"] else []
    args += ["--causal", case["causal"]] if case["causal"] != "none" else []
    args += ["--heads", H, "--kv-heads", Hk] if H > 1 else []
    best = next(csv.DictReader(io.StringIO("\n".join(l for l in fl.cli(*args).splitlines() if not l.startswith("#")))))
    Br, Bc = int(best["Br"]), int(best["Bc"])
    G = H // Hk if best["best_algo"] == "flash2-gqa" else 1
    Qi, Oi = m.alloc("Q_i", G * Br, d), m.alloc("O_i", G * Br, d)
    Kj, Vj = m.alloc("K_j", Bc, d), m.alloc("V_j", Bc, d)
    S = m.alloc("S_ij", G * Br, Bc)
    mi, li = m.alloc("m_i", G * Br, 1), m.alloc("l_i", G * Br, 1)
    for h0 in range(0, H, G):
        kv = h0 // (H // Hk)
        for r0 in range(0, Nq, Br):
            br = min(Br, Nq - r0)
            rows = G * br
            for g in range(G):
                m.load(Qi, T["Q"], (h0 + g) * Nq + r0, 0, br, d, row=g * br)
            m.fill(Oi, 0.0)
            m.fill(li, 0.0)
            m.fill(mi, float("-inf"))
            for c0 in range(0, Nk, Bc):
                bc = min(Bc, Nk - c0)
                kind = m.tile_kind(r0, br, c0, bc)
                if kind == "empty":
                    continue
                m.load(Kj, T["K"], kv * Nk + c0, 0, bc, d)
                m.load(Vj, T["V"], kv * Nk + c0, 0, bc, d)
                m.matmul(S, Qi, Kj, rows, bc, d, transpose_b=True, alpha=1 / math.sqrt(d))
                if kind == "partial":
                    for g in range(G):
                        m.mask(S, r0, c0, br, bc, row=g * br)
                m.max_rescale(mi, S, rows, bc, li, Oi)
                m.exp_diff(S, S, mi, rows, bc)
                m.row_sum(li, S, rows, bc, accumulate=True)
                m.matmul(Oi, S, Vj, rows, d, bc, accumulate=True)
            m.div_rows(Oi, li, rows, d)
            m.lse(mi, mi, li, rows)
            for g in range(G):
                m.store(Oi, T["O"], (h0 + g) * Nq + r0, 0, br, d, row=g * br)
                m.store(mi, T["L"], (h0 + g) * Nq + r0, 0, br, 1, row=g * br)
    ### END SOLUTION

# %% check
lab8.design(case, my_schedule)

# %% [markdown]
# Where your traffic goes: your schedule's reads and writes per tensor, beside what
# `flashlab optimize` reports for your case (its best schedule, flash2 and flash1 with their own
# block rules, and the lower bound).  Use it for the write-up.

# %%
_ = lab8.figure(case, my_schedule)

# %% [markdown]
# ## Write-up (graded by your instructor)
#
# In the markdown cell below, in at most 200 words: which loop order and blocks you chose and why;
# where your traffic goes (which tensor, how many times re-read); how far you are from optimize's
# best and from the lower bound, and what the remaining gap to the bound is made of.

# %% [markdown]
# *Your write-up here.*
