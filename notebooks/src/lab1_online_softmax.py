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
# The recurrence (docs/model.md eq. (OS)), for a state $(m, \ell, u)$ and a new tile of scores $s_j$
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
print("libflashlab:", fl.LIB_PATH)

# %% [markdown]
# ## 1. The seeds' two-tile examples
#
# The CLI reproduces the two worked examples of the seed documents (the handbook's row and the
# deep dive's row), printing the state after each tile.  Read it once; then you will redo the deep
# dive's row by hand.

# %%
print(fl.cli("example", "two-tile"))

# %% [markdown]
# ## Exercise 1: the state after tile one
#
# The deep dive's row: scores `[1, 2, 3, 0]`, value rows `[10, 0], [0, 10], [5, 5], [9, 1]`, in two
# tiles of two.  **Before looking at the output above**, compute the state $(m_1, \ell_1, u_1)$
# after the first tile, `[1, 2]` with values `[10, 0], [0, 10]`.  Use Python as a calculator
# (`math.exp`), not `flashlab`.

# %%
scores = [1.0, 2.0, 3.0, 0.0]
values = [[10.0, 0.0], [0.0, 10.0], [5.0, 5.0], [9.0, 1.0]]
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
state = fl.OsmState(2)
fl.osm_step(state, scores[0:2], values[0:2])        # the C step
problems = []
if m1 is None or l1 is None or u1 is None:
    problems.append("m1, l1 and u1 are not all answered yet")
else:
    if not fl.close(m1, state.m):
        problems.append(f"m1 = {m1}: m is the largest score seen so far")
    if not fl.close(l1, state.l):
        problems.append(f"l1 = {l1}: l is the sum of e^(s - m1) over the tile, not of e^s")
    if len(u1) != 2 or not all(fl.close(a, b) for a, b in zip(u1, state.u)):
        problems.append(f"u1 = {u1}: u is sum_j e^(s_j - m1) * v_j, NOT yet divided by l1")
fl.check("lab1.tile-one", problems)

# %% [markdown]
# ## Exercise 2: the second tile brings a larger maximum
#
# Tile two has scores `[3, 0]`.  Its maximum 3 is larger than $m_1$, so the old $\ell_1$ and
# $u_1$ must be rescaled by $a = e^{m_1 - m_2}$.  Compute $a$, $m_2$, $\ell_2$, $u_2$ and the
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
state = fl.OsmState(2)
fl.osm_step(state, scores[0:2], values[0:2])
a_c = fl.osm_step(state, scores[2:4], values[2:4])   # the C step returns the rescale factor
full = fl.softmax_row(scores, values)                 # the exact reference, all four scores at once
problems = []
if None in (a2, m2, l2, u2, O):
    problems.append("a2, m2, l2, u2 and O are not all answered yet")
else:
    if not fl.close(a2, a_c):
        problems.append(f"a2 = {a2}: the factor is e^(m_old - m_new), at most 1")
    if not fl.close(m2, state.m):
        problems.append(f"m2 = {m2}")
    if not fl.close(l2, state.l):
        problems.append(f"l2 = {l2}: rescale the old l by a2, then add the new tile's e^(s - m2)")
    if not all(fl.close(x, y) for x, y in zip(u2, state.u)):
        problems.append(f"u2 = {u2}: rescale the old u by a2 too (the same factor as l)")
    if not all(fl.close(x, y) for x, y in zip(O, full)):
        problems.append(f"O = {O} is not softmax(scores) @ values = {full}")
fl.check("lab1.tile-two", problems)

# %% [markdown]
# ## Exercise 3: when does the state get rescaled?
#
# Stream the handbook's row `[2, 1, 4, 3]` (values `[1,0], [0,1], [2,0], [0,2]`) in tiles of
# **one** score.  `fl_osm_step` returns the factor it applied to the old state: 0 for the first
# tile (the state was empty), 1 when the maximum did not change.  Predict the four factors.

# %%
hb_scores = [2.0, 1.0, 4.0, 3.0]
hb_values = [[1.0, 0.0], [0.0, 1.0], [2.0, 0.0], [0.0, 2.0]]
# TODO: the four factors, in order
### BEGIN STUB
factors = None
### END STUB
### BEGIN SOLUTION
factors = [0.0, 1.0, math.exp(2.0 - 4.0), 1.0]
### END SOLUTION

# %% check
state = fl.OsmState(2)
expect = [fl.osm_step(state, [s], [v]) for s, v in zip(hb_scores, hb_values)]
problems = []
if factors is None or len(factors) != 4:
    problems.append("factors should be a list of four numbers")
else:
    for k, (f, e) in enumerate(zip(factors, expect)):
        if not fl.close(f, e):
            problems.append(f"tile {k + 1} (score {hb_scores[k]}): you said {f}; "
                            + ("the first tile finds an empty state" if k == 0 else
                               "is this score a new maximum?"))
fl.check("lab1.rescales", problems)

# %% [markdown]
# ## Exercise 4: your own tiling
#
# Write the recurrence yourself: `my_online_softmax(scores, values, tile_sizes)` streams the row in
# tiles of the given sizes (e.g. `[3, 1, 4]`) and returns $O$ (a list of `len(values[0])`
# numbers).  It must give the exact answer for **any** tiling, also when
#
# * scores are huge (`[1000, 1001, 999]`: `math.exp(1000)` overflows; the shift by $m$ is the point),
# * a whole tile is masked (`-inf` scores): skip it before computing `-inf - (-inf)`,
# * the whole row is masked: the output is zeros (the documented convention, docs/model.md rule M0).
#
# The check compares your result with the C library's for many rows and tilings.

# %%
NEG = float("-inf")

def my_online_softmax(scores, values, tile_sizes):
    # TODO: implement the recurrence above; return O as a list
    ### BEGIN STUB
    return None
    ### END STUB
    ### BEGIN SOLUTION
    dv = len(values[0])
    m, l, u = NEG, 0.0, [0.0] * dv
    j0 = 0
    for t in tile_sizes:
        s, v = scores[j0:j0 + t], values[j0:j0 + t]
        j0 += t
        mt = max(s)
        if mt == NEG:               # a fully masked tile: nothing to absorb
            continue
        mnew = max(m, mt)
        a = 0.0 if m == NEG else math.exp(m - mnew)
        l = a * l
        u = [a * x for x in u]
        for sj, vj in zip(s, v):
            if sj == NEG:
                continue
            e = math.exp(sj - mnew)
            l += e
            u = [x + e * y for x, y in zip(u, vj)]
        m = mnew
    return [x / l for x in u] if l > 0 else [0.0] * dv
    ### END SOLUTION

# %% check
cases = [
    ("deep dive, tiles 2+2", scores, values, [2, 2]),
    ("deep dive, tiles 1+3", scores, values, [1, 3]),
    ("deep dive, one tile", scores, values, [4]),
    ("handbook, tiles 3+1", hb_scores, hb_values, [3, 1]),
    ("huge scores", [1000.0, 1001.0, 999.0], [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], [1, 2]),
    ("masked first tile", [NEG, NEG, 0.5, 2.0], hb_values, [2, 2]),
    ("masked middle key", [0.25, NEG, 1.5], [[1.0], [100.0], [-1.0]], [2, 1]),
    ("fully masked row", [NEG, NEG, NEG], [[1.0], [2.0], [3.0]], [1, 2]),
    ("uneven 3+1+4", [0.3, -1.2, 2.5, 0.0, 1.1, -0.7, 2.4, 0.9],
     [[k, 8 - k, 0.5 * k] for k in range(8)], [3, 1, 4]),
]
problems = []
for name, s, v, tiles in cases:
    want = fl.softmax_row(s, v) if max(s) > NEG else [0.0] * len(v[0])
    try:
        got = my_online_softmax(s, v, tiles)
    except Exception as e:
        problems.append(f"{name}: raised {type(e).__name__}: {e}")
        continue
    if got is None:
        problems.append(f"{name}: no result yet")
    elif len(got) != len(want) or not all(fl.close(g, w, 1e-12) for g, w in zip(got, want)):
        problems.append(f"{name}: got {got}, the reference says {want}")
fl.check("lab1.own-tiling", problems)

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
