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
# `flashlab`.  Each exercise is a cell marked **TODO**; the cell after it is a *check* that
# prints `CHECK ...: PASS`, or `FAIL` and what is wrong.  Handout: `docs/labs/lab1.md`.
#
# **How you are graded.** Your instructor's grader runs your TODO cells again, in a process of
# its own, on numbers you have not seen (drawn like yours, from your id and a secret), and checks
# what they compute there.  So write every answer as Python that computes it from the variables
# the notebook gives you (`scores`, `values`, ...), never as typed numbers; the checks here are
# for practice on your own numbers.
#
# The recurrence (eq. (OS) of docs/labs/background.md), for a state $(m, \ell, u)$ and a new tile of scores $s_j$
# with value rows $v_j$:
#
# $$m' = \max(m, \max_j s_j),\quad a = e^{m - m'},\quad \ell' = a\,\ell + \sum_j e^{s_j - m'},\quad
#   u' = a\,u + \sum_j e^{s_j - m'} v_j,\qquad O = u/\ell \text{ at the end.}$$
#
# Start from $m=-\infty$, $\ell=0$, $u=0$.  A tile whose scores are all $-\infty$ (fully masked)
# is skipped before any exponential.

# %% setup
import math
import flashlab as fl
from flashlab import flmachine, labkit
from flashlab.labkit import lab1, stepview

STUDENT = labkit.student("")   # put your student id between the quotes: it picks your numbers
P = lab1.params(STUDENT)
scores, values = P["row"]
stream_scores, stream_values = P["stream"]

# %%
print("libflashlab:", fl.LIB_PATH)
print("your row: scores", scores, " values", values)
print("your stream (exercise 3):", stream_scores)

# %% [markdown]
# ## Exercise 1: the state after tile one
#
# Your row (printed above: `scores`, `values`; with no student id it is worked example B's row
# `[1, 2, 3, 0]` with values `[10, 0], [0, 10], [5, 5], [9, 1]`) is streamed in two tiles of two.
# Compute the state $(m_1, \ell_1, u_1)$ after the first tile, `scores[0:2]` with `values[0:2]`,
# with Python (`max`, `math.exp`, sums over the lists), not with `flashlab` (the grader refuses
# the library here: `fl.osm_step` would give the answer).

# %% answer
# TODO: the state after tile one, computed from scores and values
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
lab1.tile_one(P, m1, l1, u1)

# %% [markdown]
# ## Exercise 2: the second tile brings a larger maximum
#
# Tile two, `scores[2:4]`, holds a larger maximum than $m_1$, so the old $\ell_1$ and $u_1$ must
# be rescaled by $a = e^{m_1 - m_2}$.  Compute $a$, $m_2$, $\ell_2$, $u_2$ and the
# output $O = u_2/\ell_2$ (a list of two numbers), starting from **your** tile-one state.

# %% answer
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
lab1.tile_two(P, m1, l1, u1, a2, m2, l2, u2, O)

# %% [markdown]
# ## Exercise 3: when does the state get rescaled?
#
# Stream the row `stream_scores` (printed above; with no student id worked example A's `[2, 1, 4, 3]`)
# in tiles of **one** score.  `fl_osm_step` returns the factor it applied to the old state: 0 for
# the first tile (the state was empty), 1 when the maximum did not change.  Predict the four
# factors.

# %% answer
# TODO: the four factors, in order, computed from stream_scores
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
lab1.rescales(P, factors)

# %% [markdown]
# ## The worked examples, step by step
#
# Now that you have your own numbers, compare with the two worked rows of the background notes
# (docs/labs/background.md, "Online softmax"), streamed by the C library's `fl_osm_step`:

# %%
for name, (ws, wv) in (("worked example A", lab1.EXAMPLE_A), ("worked example B", lab1.EXAMPLE_B)):
    st = fl.OsmState(2)
    print(f"{name}: scores {ws}, values {wv}, tiles of 2")
    for k in (0, 2):
        a = fl.osm_step(st, ws[k:k + 2], wv[k:k + 2])
        print(f"  after tile {k // 2 + 1}: {st}, rescale factor {a:.6f}")
    print(f"  O = u / l = {[round(x, 6) for x in fl.osm_finish(st)]}; "
          f"softmax @ values = {[round(x, 6) for x in fl.softmax_row(ws, wv)]}")

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
# Write the recurrence as a schedule.  `my_online_softmax(m, S, V, O, tile_sizes)` gets a machine
# `m` and three HBM tensors: the row of scores `S` ($1 \times n$), the value rows `V`
# ($n \times d_v$) and the output `O` ($1 \times d_v$).  The values live in the machine: you move
# tiles and compute on SRAM buffers with its operations, and you never see a value (your function
# cannot print a score, and it cannot keep one in a Python list).  SRAM holds exactly one tile of
# scores, its value rows, one output row and the row's $m$ and $\ell$ (one element each):
# $M = T + T d_v + d_v + 2$ for the largest tile $T$.
#
# * allocate: `s = m.alloc("s", 1, T)`, `v = m.alloc("v", T, dv)`, `o = m.alloc("o", 1, dv)`,
#   `mx = m.alloc("m", 1, 1)`, `l = m.alloc("l", 1, 1)`; start the state with `m.fill(mx, NEG)`
#   (new buffers hold zeros);
# * for each tile of `tile_sizes` (e.g. `[3, 1, 4]`), in order: `m.load(s, S, 0, c0, 1, t)` and
#   `m.load(v, V, c0, 0, t, dv)`, then the recurrence with the machine's operations:
#   `m.max_rescale(mx, s, 1, t, l, o)` (the running maximum absorbs the tile; `l` and `o` are
#   multiplied by $e^{m_\text{old} - m_\text{new}}$), `m.exp_diff(s, s, mx, 1, t)` (the tile's
#   $e^{s_j - m}$, in place), `m.row_sum(l, s, 1, t, accumulate=True)` and
#   `m.matmul(o, s, v, 1, dv, t, accumulate=True)` ($u \mathrel{+}= \sum_j e^{s_j - m} v_j$);
# * at the end: `m.div_rows(o, l, 1, dv)` and `m.store(o, O, 0, 0, 1, dv)`.
#
# (Every operation is listed in `help(flmachine)`.)  The check runs your function on many rows
# and reads the trace: each tile of S and V must be loaded once, in the tiling's order, O stored
# once at the end, and the output must equal the reference to 1e-12, also when
#
# * scores are huge (`[1000, 1001, 999]`: `math.exp(1000)` overflows; the shift by $m$ is the point),
# * a whole tile is masked (`-inf` scores: the operations treat $e^{-\infty}$ as 0),
# * the whole row is masked: the output is zeros (rule M0, background.md; `div_rows` gives 0 where
#   $\ell = 0$).
#
# Try yours on any row: `flmachine.run(my_online_softmax, M, {"S": [[...]], "V": [...]}, {"O": (1, dv)}, tiles)`
# returns what the machine saw (`.outputs["O"]`, `.counts`, `.events`).

# %% answer
NEG = float("-inf")

def my_online_softmax(m, S, V, O, tile_sizes):
    # TODO: the schedule described above
    ### BEGIN STUB
    return None
    ### END STUB
    ### BEGIN SOLUTION
    dv, T = V.cols, max(tile_sizes)
    s, v, o = m.alloc("s", 1, T), m.alloc("v", T, dv), m.alloc("o", 1, dv)
    mx, l = m.alloc("m", 1, 1), m.alloc("l", 1, 1)
    m.fill(mx, NEG)
    c0 = 0
    for t in tile_sizes:
        m.load(s, S, 0, c0, 1, t)
        m.load(v, V, c0, 0, t, dv)
        c0 += t
        m.max_rescale(mx, s, 1, t, l, o)          # m' = max(m, max s); l, o *= e^(m - m')
        m.exp_diff(s, s, mx, 1, t)                # e^(s_j - m')
        m.row_sum(l, s, 1, t, accumulate=True)    # l' = a l + sum_j e^(s_j - m')
        m.matmul(o, s, v, 1, dv, t, accumulate=True)
    m.div_rows(o, l, 1, dv)                       # O = u / l (zeros when l = 0)
    m.store(o, O, 0, 0, 1, dv)
    for b in (s, v, o, mx, l):
        m.free(b)
    ### END SOLUTION

# %% check
lab1.own_tiling(P, my_online_softmax)

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
# forgetting to rescale $u$ (`o` not passed to `max_rescale`), a first pass over the tiles for the
# maximum (a two-pass softmax: the trace shows every tile loaded twice), and storing $O$ before the
# last tile.
