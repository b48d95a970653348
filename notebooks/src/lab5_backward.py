# %% [markdown]
# # Lab 5: backward and recomputation
#
# **One idea:** the backward pass needs the attention probabilities $P$.  Standard attention keeps
# the $N \times N$ matrix $P$ in HBM from the forward pass and reads it back; FlashAttention keeps
# only one number per row (the log-sum-exp $L$, or $\ell$ and $m$) and *recomputes* each tile of
# $S$ and $P$ from $Q$, $K$ and those statistics.  Recomputation costs FLOPs, which the machine does
# not count (rule R3); what it changes in *memory* and in *HBM traffic* is what you measure here.
# Handout: `docs/labs/lab5.md`; background: `docs/labs/background.md`.
#
# The schedules (their loops: docs/labs/background.md, "The backward passes and recomputation"): standard
# attention's backward (the FlashAttention paper's Algorithm 3, from saved $P$) and
# FlashAttention-2's backward (its Algorithm 2, with the $D = \mathrm{rowsum}(dO \circ O)$
# preprocessing pass).
# `fl.run(..., pass_="bwd")` counts the backward alone (its inputs already in HBM),
# `pass_="fwd+bwd"` both passes on one machine.
#
# **How you are graded.** Your instructor's grader runs your TODO cells again, in a process of its
# own, on sizes you have not seen, and checks what they compute there.  In exercises 1 and 2 it
# refuses `fl.run` and `fl.trace` (they would count for you); in 3 and 4 running the machine is
# the exercise.  Compute every answer from `P`, never type it.

# %% setup
import flashlab as fl
from flashlab import labkit
from flashlab.labkit import lab5

STUDENT = labkit.student("")   # put your student id between the quotes: it picks your sizes
P = lab5.params(STUDENT)

def cdiv(a, b):
    return -(-a // b)

# %%
r = fl.run("flash2", N=128, d=16, M=4000, pass_="fwd+bwd", mode="compute")
print("flash2 forward + backward on real values: relative error of O", f"{r.rel_err:.1e},",
      "of dQ, dK, dV", ", ".join(f"{e:.1e}" for e in r.grad_rel_err))
r = fl.run("flash2", N=1000, d=64, M=98304, pass_="bwd")
print("flash2 backward, N = 1000, d = 64: blocks", r.bwd_Br, "x", r.bwd_Bc, "(the forward's:", r.Br, "x", r.Bc, ");",
      "tensors counted:", ", ".join(r.tensors))

# %% [markdown]
# ## Exercise 1: predict flash2's backward, tensor by tensor
#
# FlashAttention-2's backward: initialise $dQ = 0$
# in HBM; one pass computes $D$ from $dO$ and $O$ and writes it; then for each key block $j$ it
# loads $K_j, V_j$, and for each row block $i$ loads $Q_i, dO_i, dQ_i, L_i, D_i$, recomputes the
# tiles, writes $dQ_i$ back; after the row blocks it writes $dK_j, dV_j$.  With the backward's
# blocks $B_r, B_c$ (not always square) and $T_c = \lceil N/B_c \rceil$, predict
# `{tensor: (reads, writes)}` for `Q, K, V, O, dO, dQ, dK, dV, L, D`.

# %% answer
def predict_flash2_bwd(N, d, Br, Bc):
    # TODO
    ### BEGIN STUB
    return None
    ### END STUB
    ### BEGIN SOLUTION
    Tc, Nd = cdiv(N, Bc), N * d
    return {"Q": (Tc * Nd, 0), "K": (Nd, 0), "V": (Nd, 0), "O": (Nd, 0),
            "dO": (Nd + Tc * Nd, 0), "dQ": (Tc * Nd, Nd + Tc * Nd), "dK": (0, Nd), "dV": (0, Nd),
            "L": (Tc * N, 0), "D": (Tc * N, N)}
    ### END SOLUTION

# %% check
lab5.flash2_bwd(P, predict_flash2_bwd)

# %% [markdown]
# What the machine counted for the run of the first cell (N = 1000, d = 64): which tensors carry
# the recomputation's cost?

# %%
for t, (rd, wr) in r.tensors.items():
    print(f"  {t:>3}: reads {rd:>8d}  writes {wr:>8d}")

# %% [markdown]
# ## Exercise 2: memory saved
#
# Between the passes, each schedule keeps in HBM what its backward reads but did not compute
# itself.  Beyond the inputs $Q, K, V$, the output $O$ and the incoming gradient $dO$ (which
# every schedule has), name the tensors standard attention and flash2 must keep, and their sizes in
# elements, for your `N5`, `d5` (printed below; no student id: $N = 1024$, $d = 64$): `saved_standard = {"name": elements, ...}`, and
# `saved_flash2` likewise.

# %% answer
N5, d5 = P["saved"]
print("your sizes: N =", N5, " d =", d5)
# TODO
### BEGIN STUB
saved_standard = None
saved_flash2 = None
### END STUB
### BEGIN SOLUTION
saved_standard = {"P": N5 * N5}      # fp16: 2 MiB at N = 1024, 32 MiB at N = 4096, per head
saved_flash2 = {"L": N5}             # fp32: 4 KiB at N = 1024
### END SOLUTION

# %% check
lab5.saved(P, saved_standard, saved_flash2)

# %% [markdown]
# ## Exercise 3: traffic added?
#
# Recomputing $S$ and $P$ re-reads $Q$ and $dO$ tiles once per key block.  Reading the saved $P$
# (and writing and reading $dP$, $dS$) costs standard attention $\Theta(N^2)$ per pass.  Run the
# machine: for your `P["traffic"]` $(N, d, M)$ (no student id: $N = 4096$,
# $d = 64$, $M = 98304$), give `ratio` = flash2's forward+backward total
# divided by standard's, and `recompute_adds_traffic` (True or False): does flash2 move *more*
# HBM elements than standard over both passes?

# %% answer
# TODO: use fl.run(..., pass_="fwd+bwd") on P["traffic"]
### BEGIN STUB
ratio = None
recompute_adds_traffic = None
### END STUB
### BEGIN SOLUTION
N3, d3, M3 = P["traffic"]
std = fl.run("standard", N=N3, d=d3, M=M3, pass_="fwd+bwd")
f2 = fl.run("flash2", N=N3, d=d3, M=M3, pass_="fwd+bwd")
ratio = f2.total / std.total
recompute_adds_traffic = f2.total > std.total
print(f"standard {std.total:,d} (fwd {std.fwd_total:,d} + bwd {std.bwd_total:,d}); "
      f"flash2 {f2.total:,d} (fwd {f2.fwd_total:,d} + bwd {f2.bwd_total:,d}); ratio {ratio:.3f}")
### END SOLUTION

# %% check
lab5.traffic(P, ratio, recompute_adds_traffic)

# %% [markdown]
# Over a range of $N$ (the extra FLOPs of recomputation are not in these numbers: the machine
# counts elements moved, not arithmetic):

# %%
print(f"{'N':>6} | {'standard fwd':>13} {'bwd':>13} | {'flash2 fwd':>11} {'bwd':>11} | saved P (MiB, fp16) vs L (KiB, fp32)")
for N in (256, 1024, 4096, 8192):
    s = fl.run("standard", N=N, d=64, M=98304, pass_="fwd+bwd")
    f = fl.run("flash2", N=N, d=64, M=98304, pass_="fwd+bwd")
    print(f"{N:6d} | {s.fwd_total:13,d} {s.bwd_total:13,d} | {f.fwd_total:11,d} {f.bwd_total:11,d} | "
          f"{N * N * 2 / 2**20:8.2f} MiB vs {N * 4 / 2**10:6.1f} KiB")

# %% [markdown]
# ## Exercise 4: where does recomputation stop paying?
#
# The table above fixes $M$.  Now sweep it.  For your `N4`, `d4` (printed below; no student id:
# $N = 1024$, $d = 64$) and every $M$ of `Ms` ($M_0, 2M_0, \dots, 1024 M_0$: yours printed below), run standard and flash2
# with both passes (`pass_="fwd+bwd"`) and give
# `passes = {"standard": [(fwd_total, bwd_total), ...], "flash2": [...]}`: one pair per $M$, in
# the order of `Ms`.  Then give `M_cross`: the smallest $M$ of the sweep at which flash2's two
# passes together move **fewer** elements than standard's.  The cell after the check draws your
# sweep.

# %% answer
N4, d4, M0 = P["sweep"]
Ms = [M0 * 2 ** k for k in range(11)]
print("your sizes: N =", N4, " d =", d4, "  M =", Ms[0], "...", Ms[-1])
# TODO
### BEGIN STUB
passes = None
M_cross = None
### END STUB
### BEGIN SOLUTION
passes = {}
for algo in ("standard", "flash2"):
    passes[algo] = []
    for M in Ms:
        r = fl.run(algo, N=N4, d=d4, M=M, pass_="fwd+bwd")
        passes[algo].append((r.fwd_total, r.bwd_total))
M_cross = next(M for M, s, f in zip(Ms, passes["standard"], passes["flash2"]) if sum(f) < sum(s))
print("M_cross =", M_cross, " d^2 =", d4 * d4)
### END SOLUTION

# %% check
lab5.sweep_check(P, passes, M_cross)

# %% [markdown]
# Your sweep: each pass's traffic against $M$ (top; dashed the forward, solid the backward,
# dotted both) and the backward's traffic over the forward's (bottom).  Compare `M_cross` with
# $d^2$: why does the crossing move with $d$ and hardly with $N$?  (Standard's two passes cost
# about a constant times $N^2$; flash2's about a constant times $N^2d^2/M$.)

# %%
_ = lab5.figure(passes, N4, d4, M0, M_cross)

# %% [markdown]
# ## Take-away
#
# Recomputation trades FLOPs for memory: flash2 keeps $N$ statistics instead of $N^2$
# probabilities.  With an A100-sized SRAM it does not even pay in traffic: re-reading $Q$ and $dO$
# tiles ($\Theta(N^2d^2/M)$) is cheaper than moving $P$, $dP$ and $dS$ ($\Theta(N^2)$).  Below
# `M_cross`, a small multiple of $d^2$, the comparison turns, and the backward costs flash2 about
# three times its forward against standard's two.  Why more FLOPs can still be faster:
# docs/labs/background.md, "The backward passes and recomputation".

# %% [markdown] solution
# **Instructor notes.** Flash2 backward: Q (Tc·Nd, 0), K and V (Nd, 0), O (Nd, 0) (the D pass),
# dO (Nd + Tc·Nd, 0), dQ (Tc·Nd, Nd + Tc·Nd) (initialised in HBM, read-modify-written per tile),
# dK, dV (0, Nd), L (Tc·N, 0), D (Tc·N, N).  Saved: standard P (N² = 1048576 elements, 2 MiB in
# fp16 per head), flash2 L (N = 1024, 4 KiB).  At N = 4096 the ratio is 0.216 (flash2 moves
# 45.6 M elements over both passes, standard 211 M): recomputation does not add traffic here.
# Exercise 4: with no student id (M = 1024 · 2^k) M_cross = 2d² (d = 32: 2048, d = 64: 8192,
# d = 128: 32768, whatever N): standard's two passes cost about c·N², flash2's about c'·N²d²/M, so
# they cross at M = (c'/c)·d², whatever N; a student's grid M0 · 2^k crosses at its first point
# past about 2d².  The backward over the forward: standard 1.8-2.0,
# flash2 2.5-3.7 at N = 1024, d = 64.
