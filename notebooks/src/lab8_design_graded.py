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
# The machine is count-only: you move tiles, you do not compute.  Your schedule is valid when every
# kept (query, key) pair is on chip together at some moment (row $i$ of its head's $Q$ and row $j$
# of the matching head's $K$ and $V$ resident in SRAM at once), and $O$ and $L$ are stored for every
# query row after its last key was seen.  The check follows your trace to verify that, and the
# machine refuses anything over $M$.

# %%
import sys, pathlib
for p in (pathlib.Path.cwd(), pathlib.Path.cwd().parent):
    if (p / "flashlab.py").exists():
        sys.path.insert(0, str(p))
import flashlab as fl
import labkit
from labkit import grading

STUDENT = labkit.student("")   # put your student id between the quotes: it picks your case
case = grading.params(STUDENT)
print(case)

# %% [markdown]
# ## Your schedule
#
# `my_schedule(m, T, case)` gets a count-only machine `m` of capacity `case["M"]` and the HBM
# tensors `T["Q"]`, `T["O"]` (`heads * Nq` rows of `d`: head `h` holds rows `h*Nq ... h*Nq+Nq-1`),
# `T["K"]`, `T["V"]` (`kv_heads * Nk` rows, the same packing), and `T["L"]` (`heads * Nq` rows of 1).
# Query head `h` reads K/V head `h // (heads // kv_heads)`.  `fl.mask(Nq, Nk, case["causal"])` and
# `fl.mask_tile(mask, r0, nr, c0, nc)` tell which tiles the mask empties; `fl.footprint(...)`
# what buffers take.  Design the loops and the blocks; the rubric is in the handout.

# %%
def my_schedule(m, T, case):
    # TODO: allocate buffers, load tiles of Q, K, V, store tiles of O and L
    ### BEGIN STUB
    pass
    ### END STUB
    ### BEGIN SOLUTION
    # flash2 with masked tiles skipped and, where optimize chooses flash2-gqa, the group's query
    # heads stacked so each K/V tile is loaded once per group; blocks from optimize's search.
    Nq, d, H, Hk = case["Nq"], case["d"], case["heads"], case["kv_heads"]
    Nk = case["Nk"] or Nq
    best, bound, algo, Br, Bc = grading.optimum(case)
    G = H // Hk if algo == "flash2-gqa" else 1
    mk = fl.mask(Nq, Nk, case["causal"])
    Qs = [m.alloc(f"Q_i{g}", Br, d) for g in range(G)]
    Os = [m.alloc(f"O_i{g}", Br, d) for g in range(G)]
    Kj, Vj = m.alloc("K_j", Bc, d), m.alloc("V_j", Bc, d)
    S = m.alloc("S_ij", G * Br, Bc)
    mi, li = m.alloc("m_i", G * Br, 1), m.alloc("l_i", G * Br, 1)
    for h0 in range(0, H, G):
        kv = h0 // (H // Hk)
        for r0 in range(0, Nq, Br):
            br = min(Br, Nq - r0)
            for g in range(G):
                m.load(Qs[g], T["Q"], (h0 + g) * Nq + r0, 0, br, d)
            for c0 in range(0, Nk, Bc):
                bc = min(Bc, Nk - c0)
                if fl.mask_tile(mk, r0, br, c0, bc) == "empty":
                    continue
                m.load(Kj, T["K"], kv * Nk + c0, 0, bc, d)
                m.load(Vj, T["V"], kv * Nk + c0, 0, bc, d)
            for g in range(G):
                m.store(Os[g], T["O"], (h0 + g) * Nq + r0, 0, br, d)
                m.store(mi, T["L"], (h0 + g) * Nq + r0, 0, br, 1)
    ### END SOLUTION

# %% check
grading.design(STUDENT, my_schedule)

# %% [markdown]
# Where your traffic goes: your schedule's reads and writes per tensor, beside what
# `flashlab optimize` reports for your case (its best schedule, flash2 and flash1 with their own
# block rules, and the lower bound).  Use it for the write-up.

# %%
_ = grading.figure(STUDENT, my_schedule)

# %% [markdown]
# ## Write-up (graded by your instructor)
#
# In the markdown cell below, in at most 200 words: which loop order and blocks you chose and why;
# where your traffic goes (which tensor, how many times re-read); how far you are from optimize's
# best and from the lower bound, and what the remaining gap to the bound is made of.

# %% [markdown]
# *Your write-up here.*
