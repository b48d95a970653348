# %% [markdown]
# # Lab 4: masks and heads: find the bug
#
# **One idea:** the mask and head conventions are part of the kernel's *contract*, and a wrong
# convention gives a fast, exact-looking, wrong answer.  Each exercise hands you a small piece of
# Python that a reasonable person could have written, with one bug; you fix it.  The checks compare
# your fix with the library's one implementation of the rules (`fl.mask_keep`, `fl.kv_head`,
# `fl.cu_seqlens_check`; the rules K1–K4, H1, V1 are stated in docs/labs/background.md), and the
# machine shows what each convention costs in HBM traffic.  Handout: `docs/labs/lab4.md`.
#
# **How you are graded.** Your instructor's grader runs your TODO cells again, in a process of its
# own, on shapes you have not seen, and checks what your functions return there; it refuses the
# library's rules (`fl.mask_matrix`, `fl.mask_keep`, `fl.kv_head`) in your answers: write them.
#
# Conventions (docs/labs/background.md, "Masks and heads"): query $i$ of $N_q$ and key $j$ of $N_k$;
# causal **top-left** (PyTorch SDPA `is_causal`) keeps $j \le i$; causal **bottom-right**
# (FlashAttention ≥ 2.1) keeps $j \le i + N_k - N_q$; the FA2 **window** $(L, R)$ keeps
# $i + N_k - N_q - L \le j \le i + N_k - N_q + R$ ($-1$: that side unbounded).  A row that keeps no
# key outputs zeros.

# %% setup
import itertools
import flashlab as fl
from flashlab import labkit
from flashlab.labkit import lab4

STUDENT = labkit.student("")   # put your student id between the quotes: it picks your shapes
P = lab4.params(STUDENT)

# %%
def show(m):
    for row in m:
        print("   ", " ".join("x" if k else "." for k in row))

# %% [markdown]
# ## Exercise 1: the decode bug
#
# A serving engine decodes two new tokens against a cache of five keys ($N_q = 2$, $N_k = 5$).
# Its test reference was written from PyTorch's `is_causal` habit:

# %%
def causal_keep_buggy(nq, nk):
    return [[1 if j <= i else 0 for j in range(nk)] for i in range(nq)]

print("what the buggy reference keeps for Nq = 2, Nk = 5 (x = attend):")
show(causal_keep_buggy(2, 5))

# %% [markdown]
# Write `decode_keep(nq, nk)` with FlashAttention ≥ 2.1's convention (the new queries are the
# *last* $N_q$ positions of the sequence).  It must also handle $N_q > N_k$ (the first rows keep
# nothing).

# %% answer
def decode_keep(nq, nk):
    # TODO
    ### BEGIN STUB
    return None
    ### END STUB
    ### BEGIN SOLUTION
    return [[1 if j <= i + nk - nq else 0 for j in range(nk)] for i in range(nq)]
    ### END SOLUTION

# %% check
lab4.decode_corner(P, decode_keep)

# %% [markdown]
# Why did the engine's tests not catch it?  Among your candidate shapes $(N_q, N_k)$
# (`P["candidates"]`, printed below), which give **the same mask** under both corners, so that a
# test on them cannot see the bug?  Give the set `blind_shapes`, computed from `candidates` (the
# grader runs this cell on other candidates).

# %% answer
candidates = [tuple(c) for c in P["candidates"]]
print("candidates:", candidates)
# TODO: the set of candidates whose mask is the same under both corners
### BEGIN STUB
blind_shapes = None
### END STUB
### BEGIN SOLUTION
blind_shapes = {(nq, nk) for nq, nk in candidates if nq == nk}   # equal lengths: the same lower triangle
### END SOLUTION

# %% check
lab4.blind_tests(P, blind_shapes)

# %% [markdown]
# The wrong corner is not only wrong but *cheaper*: the machine skips every tile that is entirely
# masked (rule K2), and top-left masks almost the whole cache away.  Flash2, 256 new queries over a
# 1024-key cache:

# %%
for corner in ("none", "top-left", "bottom-right"):
    r = fl.run("flash2", N=256, Nk=1024, d=64, M=20000, causal=corner)
    print(f"{corner:>12}: K reads {r.tensors['K'][0]:>7d}, total {r.total:>7d}")

# %% [markdown]
# Where those savings come from, in a decode case small enough to see every element: 64 new
# queries over a 192-key cache, flash2 with $16 \times 16$ tiles (forced, on an SRAM of exactly
# their footprint).  The figure is drawn from a trace of each run: which key tiles the machine
# loaded for each row block.  Blue pairs are kept; orange pairs were computed in a loaded tile and
# masked on chip (a boundary tile, rule K4); grey pairs belong to tiles the machine never loaded
# (rule K2).  Top-left loads far fewer tiles than bottom-right, and they hold the wrong keys.

# %%
_ = lab4.keep_figure([("top-left", "top-left", -1, -1), ("bottom-right", "bottom-right", -1, -1)])

# %% [markdown]
# ## Exercise 2: the window that forgot the corner
#
# A local-attention reference (FA2's `window_size=(L, R)`):

# %%
def window_keep_buggy(nq, nk, left, right):
    keep = []
    for i in range(nq):
        lo = -10**9 if left < 0 else i - left
        hi = 10**9 if right < 0 else i + right
        keep.append([1 if lo <= j <= hi else 0 for j in range(nk)])
    return keep

print("buggy, Nq = 2, Nk = 5, window (1, 0):")
show(window_keep_buggy(2, 5, 1, 0))
print("the rule (the library's keep matrix):")
show(fl.mask_matrix(2, 5, "none", 1, 0))

# %% [markdown]
# Fix it as `window_keep(nq, nk, left, right)` (no causal mask; $-1$ = unbounded side).

# %% answer
def window_keep(nq, nk, left, right):
    # TODO
    ### BEGIN STUB
    return None
    ### END STUB
    ### BEGIN SOLUTION
    shift = nk - nq
    keep = []
    for i in range(nq):
        lo = -10**9 if left < 0 else i + shift - left
        hi = 10**9 if right < 0 else i + shift + right
        keep.append([1 if lo <= j <= hi else 0 for j in range(nk)])
    return keep
    ### END SOLUTION

# %% check
lab4.window(P, window_keep)

# %% [markdown]
# A local window keeps a band of keys along the same corner; the tiles outside the band are never
# loaded, so the traffic grows with the window, not with the cache.  The same decode case with
# two windows:

# %%
_ = lab4.keep_figure([("window (40, 0)", "none", 40, 0), ("window (16, 16)", "none", 16, 16)])

# %% [markdown]
# ## Exercise 3: varlen offsets
#
# Variable-length batches are packed into one tensor and described by `cu_seqlens`: $B + 1$
# offsets, starting at 0, nondecreasing, ending at the token count (rule V1).  This helper builds
# them from the lengths, and the library refuses the result:

# %%
def cu_seqlens_buggy(lengths):
    return list(itertools.accumulate(lengths))

lengths = [100, 300, 0, 250]
try:
    fl.cu_seqlens_check(cu_seqlens_buggy(lengths), batch=len(lengths), total=sum(lengths))
except fl.FlashlabError as e:
    print("refused:", e)

# %% [markdown]
# Fix it as `cu_seqlens(lengths)`.

# %% answer
def cu_seqlens(lengths):
    # TODO
    ### BEGIN STUB
    return None
    ### END STUB
    ### BEGIN SOLUTION
    return [0] + list(itertools.accumulate(lengths))
    ### END SOLUTION

# %% check
lab4.varlen(P, cu_seqlens)

# %% [markdown]
# Packing is not only about correctness: padding every sequence to the longest one moves the
# padding too.  Causal flash2 over the packed batch vs the same batch padded to 300 tokens each:

# %%
if callable(cu_seqlens) and cu_seqlens(lengths) is not None:
    packed = fl.run("flash2", N=sum(lengths), d=64, M=20000, batch=len(lengths),
                    cu_seqlens_q=cu_seqlens(lengths), causal="bottom-right")
    padded = fl.run("flash2", N=max(lengths), d=64, M=20000, batch=len(lengths), causal="bottom-right")
    print(f"packed: {packed.total:,d} elements moved; padded to {max(lengths)}: {padded.total:,d}")
else:
    print("(fix cu_seqlens first)")

# %% [markdown]
# ## Exercise 4: which K/V head does a query head read?
#
# Grouped-query attention: $H_q$ query heads share $H_{kv}$ key/value heads ($H_{kv}$ divides
# $H_q$).  A model port maps them like this:

# %%
def kv_head_buggy(h, Hq, Hkv):
    return h % Hkv

print("buggy, Hq = 6, Hkv = 2:", [kv_head_buggy(h, 6, 2) for h in range(6)])

# %% [markdown]
# Shapes line up and nothing crashes, yet the model's outputs are wrong: FlashAttention (and the
# models trained with it) give each K/V head a group of *consecutive* query heads (rule H1).
# Fix it as `kv_head(h, Hq, Hkv)`.

# %% answer
def kv_head(h, Hq, Hkv):
    # TODO
    ### BEGIN STUB
    return None
    ### END STUB
    ### BEGIN SOLUTION
    return h // (Hq // Hkv)
    ### END SOLUTION

# %% check
lab4.gqa(P, kv_head)

# %% [markdown]
# Sharing K/V heads saves HBM *storage*; whether it saves *traffic* depends on the schedule.
# Flash2 runs one query head at a time and reloads the shared K/V for each; `flash2-gqa` stacks
# the group's query heads so each K/V tile is loaded once per group:

# %%
for algo in ("flash2", "flash2-gqa"):
    r = fl.run(algo, N=512, d=64, M=40000, heads=8, kv_heads=2)
    print(f"{algo:>10}: K reads {r.tensors['K'][0]:>8,d}, V reads {r.tensors['V'][0]:>8,d}, total {r.total:>9,d}")

# %% [markdown]
# Against the group size $G = H_q / H_{kv}$ (16 query heads; $G = 1$ is multi-head attention,
# $G = 16$ multi-query): flash2's K/V traffic does not move at all, `flash2-gqa`'s falls, but
# not like $1/G$: the $G$ stacked query blocks share the SRAM, so its block $B$ shrinks and K and
# V are re-read by more row blocks.  Neither comes near the floor that reads each K/V head once.

# %%
_ = lab4.gqa_figure(N=512, d=64, M=40000, Hq=16)

# %% [markdown]
# ## Take-away
#
# Masks and head maps are conventions, not mathematics: top-left vs bottom-right agree on square
# problems and differ exactly in decode; a window is anchored at the same corner; offsets start at
# 0; groups are consecutive.  Test with unequal lengths, and check the convention before the
# numerics.  And a convention is also a traffic pattern: the wrong corner skips tiles it should
# load, a window skips what lies outside its band, and a GQA group saves K/V traffic only when
# the schedule stacks the group's queries, at the price of smaller blocks.

# %% [markdown] solution
# **Instructor notes.** decode_keep keeps $j \le i + N_k - N_q$; blind shapes: the candidates with
# equal lengths ((1, 8) is the classic decode case where top-left keeps only key 0).  The window
# must be shifted by $N_k - N_q$ like the causal corner.  cu_seqlens needs the leading 0 (the
# buggy version has $B$ entries and the library names the rule).  GQA: $h \,//\, (H_q/H_{kv})$;
# the interleaved map `h % Hkv` is the classic porting bug.
