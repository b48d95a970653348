# %% [markdown]
# # Lab 1: online softmax by hand
#
# **One idea:** softmax over a row can be computed tile by tile, keeping only a running maximum
# `m`, a running sum `l` and an unnormalised numerator `u`; when a later tile brings a larger
# maximum, the old state is *rescaled*, not thrown away.  This is what lets FlashAttention stream
# keys and values through SRAM without ever holding a whole row of scores.
#
# Everything you check here is checked against the C library (`fl_osm_step`, `fl_osm_tiled`
# and the exact reference `fl_ref_softmax_row` in libflashlab), through the thin binding
# `flashlab.py`.  Each exercise is a cell marked **TODO**; the cell after it is a *check* that
# prints `CHECK ...: PASS`, or `FAIL` and what is wrong.  Handout: `docs/labs/lab1.md`.
#
# The recurrence (eq. (OS) of docs/labs/background.md), for a state $(m, \ell, u)$ and a new tile of scores $s_j$
# with value rows $v_j$:
#
# $$m' = \max(m, \max_j s_j),\quad a = e^{m - m'},\quad \ell' = a\,\ell + \sum_j e^{s_j - m'},\quad
#   u' = a\,u + \sum_j e^{s_j - m'} v_j,\qquad O = u/\ell \text{ at the end.}$$
#
# Start from $m=-\infty$, $\ell=0$, $u=0$.  A tile whose scores are all $-\infty$ (fully masked)
# is skipped before any exponential.

# %%
import math
import sys, pathlib
for p in (pathlib.Path.cwd(), pathlib.Path.cwd().parent):
    if (p / "flashlab.py").exists():
        sys.path.insert(0, str(p))
import flashlab as fl
import labkit
from labkit import lab1, stepview

STUDENT = labkit.student("")   # put your student id between the quotes: it picks your numbers
P = lab1.params(STUDENT)
scores, values = P["row"]
print("libflashlab:", fl.LIB_PATH)
print("your row: scores", scores, " values", values)

# %% [markdown]
# ## Exercise 1: the state after tile one
#
# Your row (printed above: `scores`, `values`; with no student id it is worked example B's row
# `[1, 2, 3, 0]` with values `[10, 0], [0, 10], [5, 5], [9, 1]`) is streamed in two tiles of two.
# Compute the state $(m_1, \ell_1, u_1)$ after the first tile, `scores[0:2]` with `values[0:2]`.
# Use Python as a calculator (`math.exp`), not `flashlab`; answers rounded to 6 significant digits
# are fine.

# %%
# TODO: the state after tile one
### BEGIN STUB
m1 = None
l1 = None
u1 = None   # a list of two numbers
### END STUB
### BEGIN SOLUTION
m1 = max(scores[0:2])
l1 = sum(math.exp(s - m1) for s in scores[0:2])
u1 = [sum(math.exp(s - m1) * v[c] for s, v in zip(scores[0:2], values[0:2])) for c in range(2)]
### END SOLUTION

# %% check
lab1.tile_one(STUDENT, m1, l1, u1)

# %% [markdown]
# ## Exercise 2: the second tile brings a larger maximum
#
# Tile two, `scores[2:4]`, holds a larger maximum than $m_1$, so the old $\ell_1$ and $u_1$ must
# be rescaled by $a = e^{m_1 - m_2}$.  Compute $a$, $m_2$, $\ell_2$, $u_2$ and the
# output $O = u_2/\ell_2$ (a list of two numbers), starting from **your** tile-one state.

# %%
# TODO: the rescale factor, the state after tile two, and the output
### BEGIN STUB
a2 = None
m2 = None
l2 = None
u2 = None
O = None
### END STUB
### BEGIN SOLUTION
m2 = max(m1, max(scores[2:4]))
a2 = math.exp(m1 - m2)
l2 = a2 * l1 + sum(math.exp(s - m2) for s in scores[2:4])
u2 = [a2 * u1[c] + sum(math.exp(s - m2) * v[c] for s, v in zip(scores[2:4], values[2:4])) for c in range(2)]
O = [x / l2 for x in u2]
### END SOLUTION

# %% check
lab1.tile_two(STUDENT, m1, l1, u1, a2, m2, l2, u2, O)

# %% [markdown]
# ## Exercise 3: when does the state get rescaled?
#
# Stream the row `stream_scores` (printed below; with no student id worked example A's `[2, 1, 4, 3]`)
# in tiles of **one** score.  `fl_osm_step` returns the factor it applied to the old state: 0 for
# the first tile (the state was empty), 1 when the maximum did not change.  Predict the four
# factors.

# %%
stream_scores, stream_values = P["stream"]
print("stream:", stream_scores)
# TODO: the four factors, in order
### BEGIN STUB
factors = None
### END STUB
### BEGIN SOLUTION
factors, seen = [], float("-inf")
for s in stream_scores:
    factors.append(0.0 if seen == float("-inf") else math.exp(seen - max(seen, s)))
    seen = max(seen, s)
### END SOLUTION

# %% check
lab1.rescales(STUDENT, factors)

# %% [markdown]
# ## The worked examples, step by step
#
# Now that you have your own numbers, compare with the two worked rows of the background notes
# (docs/labs/background.md, "Online softmax"), as the CLI computes them:

# %%
print(fl.cli("example", "two-tile"))

# %% [markdown]
# The same two tiles on the machine, one frame per tile event: which line of the loop runs, which
# tile of which tensor sits in SRAM (with its values), and the state $(m, \ell, u)$ kept in the
# SRAM buffer `state`.  Frame 6 (the load of tile two's scores) shows the state after tile one,
# frame 8 (after the last load) the state after both: compare them with your exercises 1 and 2
# (the viewer shows worked example B, your row when you have no student id).

# %%
frames = stepview.two_tile_frames()
stepview.show(frames)

# %% [markdown]
# ## Exercise 4: your own tiling, on the machine
#
# Write the recurrence as a schedule.  `my_online_softmax(m, S, V, O, tile_sizes)` gets a compute
# machine `m` and three HBM tensors: the row of scores `S` ($1 \times n$), the value rows `V`
# ($n \times d_v$) and the output `O` ($1 \times d_v$).  SRAM holds exactly one tile of scores, its
# value rows and one output row: $M = T + T d_v + d_v$ for the largest tile $T$.  The running
# $m$ and $\ell$ are registers (scalars per row cost no SRAM, rule R3), as is your $u$ list.
#
# * allocate: `s = m.alloc("s", 1, T)`, `v = m.alloc("v", T, dv)`, `o = m.alloc("o", 1, dv)`;
# * for each tile of `tile_sizes` (e.g. `[3, 1, 4]`), in order: `m.load(s, S, 0, c0, 1, t)` and
#   `m.load(v, V, c0, 0, t, dv)`, then read the values with `s.read(1, t)[0]` and `v.read(t, dv)`
#   and update $(m, \ell, u)$;
# * at the end: `o.write([out])` and `m.store(o, O, 0, 0, 1, dv)`.
#
# The machine runs your function *sealed*: HBM can only be reached through `load` and `store`.
# The check runs it on many rows and reads the trace: each tile of S and V must be loaded once, in
# the tiling's order, O stored once at the end, and the output must equal the reference to 1e-12,
# also when
#
# * scores are huge (`[1000, 1001, 999]`: `math.exp(1000)` overflows; the shift by $m$ is the point),
# * a whole tile is masked (`-inf` scores): skip it before computing `-inf - (-inf)`,
# * the whole row is masked: the output is zeros (rule M0, background.md).

# %%
NEG = float("-inf")

def my_online_softmax(m, S, V, O, tile_sizes):
    # TODO: the schedule described above
    ### BEGIN STUB
    return None
    ### END STUB
    ### BEGIN SOLUTION
    dv, T = V.cols, max(tile_sizes)
    s_buf, v_buf, o_buf = m.alloc("s", 1, T), m.alloc("v", T, dv), m.alloc("o", 1, dv)
    mx, l, u = NEG, 0.0, [0.0] * dv
    c0 = 0
    for t in tile_sizes:
        m.load(s_buf, S, 0, c0, 1, t)
        m.load(v_buf, V, c0, 0, t, dv)
        c0 += t
        s, v = s_buf.read(1, t)[0], v_buf.read(t, dv)
        mt = max(s)
        if mt == NEG:               # a fully masked tile: nothing to absorb
            continue
        mnew = max(mx, mt)
        a = 0.0 if mx == NEG else math.exp(mx - mnew)
        l, u = a * l, [a * x for x in u]
        for sj, vj in zip(s, v):
            if sj != NEG:
                e = math.exp(sj - mnew)
                l += e
                u = [x + e * y for x, y in zip(u, vj)]
        mx = mnew
    o_buf.write([[x / l for x in u] if l > 0 else [0.0] * dv])
    m.store(o_buf, O, 0, 0, 1, dv)
    for b in (s_buf, v_buf, o_buf):
        m.free(b)
    ### END SOLUTION

# %% check
lab1.own_tiling(STUDENT, my_online_softmax)

# %% [markdown]
# ## Take-away
#
# The tile boundary changes what has to be *stored*, never the answer: between tiles only
# $(m, \ell, u)$ survive, two numbers and a vector per row, instead of a whole row of $N$ scores.
# Lab 2 counts what that saves in HBM traffic.

# %% [markdown] solution
# **Instructor notes.** Exercise 1: $m_1=2$, $\ell_1=e^{-1}+1=1.3679$, $u_1=[3.6788, 10]$.
# Exercise 2: $a=e^{-1}=0.3679$, $m_2=3$, $\ell_2=1.5530$, $u_2=[6.8014, 8.7286]$, $O=[4.3795, 5.6205]$.
# Exercise 3: $[0, 1, e^{-2}, 1]$: only a new maximum rescales.  Common mistakes in exercise 4:
# dividing by $\ell$ after every tile (works, but is not the recurrence and costs a division per
# tile), forgetting to rescale $u$, and `nan` from `-inf - (-inf)` on a masked first tile.
