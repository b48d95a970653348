"""Lab 4 (masks and heads: find the bug): parameters and checks against the library's one
implementation of the rules (fl_mask_init/fl_mask_keep, fl_kv_head, fl_cu_seqlens_check), and the lab's two
figures: which tiles the machine loads under a mask (from a trace of flash2), and K/V traffic
against the GQA group size."""
import flashlab as fl

from . import Wrong, attempt, check, function, rng, student_id
from . import figures

def draw(g):
    """Shapes from g, checked beside the fixed ones: decode (Nq, Nk), window (Nq, Nk, L, R),
    varlen lengths, GQA (Hq, Hkv), and the candidate shapes of the blind-test question."""
    shapes = set()
    while len(shapes) < 6:
        nq = g.randrange(1, 9)
        shapes.add((nq, nq) if g.random() < 0.4 else (nq, g.randrange(1, 13)))
    return {"decode": [(g.randrange(1, 7), g.randrange(2, 14)) for _ in range(3)],
            "window": [(g.randrange(2, 9), g.randrange(2, 11), g.randrange(-1, 4), g.randrange(-1, 4))
                       for _ in range(3)],
            "lengths": [[g.randrange(0, 60) for _ in range(g.randrange(2, 7))] for _ in range(2)],
            "heads": [(g.choice([2, 4, 8, 16]) * k, k) for k in (g.choice([2, 3, 4]), g.choice([5, 6]))],
            "candidates": sorted(shapes, key=lambda s: g.random())}


def params(student=""):
    """The student's shapes (draw); '' gives the handout's (its blind-test candidates)."""
    s = student_id(student)
    if not s:
        return {"decode": [], "window": [], "lengths": [], "heads": [],
                "candidates": [(1, 1), (4, 4), (1, 8), (8, 1), (3, 5)]}
    return draw(rng("lab4", s))


def _matrix(name, m, nq, nk):
    if m is None:
        raise Wrong(f"{name}: no answer yet (it returned None)")
    try:
        rows = [[int(x) for x in r] for r in m]
    except (TypeError, ValueError):
        raise Wrong(f"{name}: expected a list of rows of 0/1, got {type(m).__name__}")
    if len(rows) != nq or any(len(r) != nk for r in rows):
        raise Wrong(f"{name}: expected {nq} rows of {nk} entries")
    return rows


def _first_difference(mine, ref):
    for i, (a, b) in enumerate(zip(mine, ref)):
        if a != b:
            return f"row {i} keeps {a}, the rule keeps {b}"
    return None


@check("lab4.decode-corner")
def decode_corner(P, decode_keep, extra=()):
    fn = function("decode_keep", decode_keep)
    for nq, nk in [(2, 5), (5, 2), (4, 4), (1, 7), (3, 9)] + list(P["decode"]) + list(extra):
        mine = _matrix(f"decode_keep({nq}, {nk})", attempt(f"decode_keep({nq}, {nk})", fn, nq, nk), nq, nk)
        ref = fl.mask_matrix(nq, nk, "bottom-right")
        diff = _first_difference(mine, ref)
        if diff:
            why = (" (that is the top-left corner: the new queries are the LAST Nq positions)"
                   if mine == fl.mask_matrix(nq, nk, "top-left") else "")
            return [f"Nq={nq}, Nk={nk}: {diff}{why}"]
    return []


@check("lab4.blind-tests")
def blind_tests(P, blind_shapes):
    if blind_shapes is None:
        raise Wrong("blind_shapes is not answered yet")
    try:
        mine = {tuple(int(x) for x in s) for s in blind_shapes}
    except (TypeError, ValueError):
        raise Wrong("blind_shapes: expected a set of (Nq, Nk) pairs")
    cands = [tuple(c) for c in P["candidates"]]
    truth = {s for s in cands if fl.mask_matrix(*s, "top-left") == fl.mask_matrix(*s, "bottom-right")}
    problems = [f"{s}: not one of your candidates" for s in sorted(mine - set(cands))]
    problems += [f"{s}: the corners differ here, so a test on this shape does see the bug"
                 for s in sorted((mine & set(cands)) - truth)]
    problems += [f"{s}: both corners give the same mask here" for s in sorted(truth - mine)]
    return problems


@check("lab4.window")
def window(P, window_keep, extra=()):
    fn = function("window_keep", window_keep)
    for nq, nk, L, R in [(3, 6, 1, 0), (6, 3, 2, 1), (5, 5, 2, 2), (4, 9, -1, 0), (4, 9, 3, -1),
                         (7, 7, 0, 0)] + list(P["window"]) + list(extra):
        what = f"window_keep({nq}, {nk}, {L}, {R})"
        mine = _matrix(what, attempt(what, fn, nq, nk, L, R), nq, nk)
        diff = _first_difference(mine, fl.mask_matrix(nq, nk, "none", L, R))
        if diff:
            return [f"window ({L}, {R}), Nq={nq}, Nk={nk}: {diff} (the window is anchored at the "
                    f"bottom-right corner, shifted by Nk - Nq)"]
    return []


@check("lab4.varlen")
def varlen(P, cu_seqlens, extra=()):
    fn = function("cu_seqlens", cu_seqlens)
    problems = []
    for ls in [[100, 300, 0, 250], [7], [0, 0, 5], [3, 1, 4, 1, 5]] + list(P["lengths"]) + list(extra):
        cu = attempt(f"cu_seqlens({ls})", fn, ls)
        if cu is None:
            raise Wrong("cu_seqlens: no answer yet (it returned None)")
        try:
            fl.cu_seqlens_check(list(cu), batch=len(ls), total=sum(ls))
        except fl.FlashlabError as e:
            problems.append(f"lengths {ls}: the library refuses {list(cu)}: {e}")
            break
        got = [cu[b + 1] - cu[b] for b in range(len(ls))]
        if got != ls:
            problems.append(f"lengths {ls}: your offsets {list(cu)} describe lengths {got}")
            break
    return problems


@check("lab4.gqa")
def gqa(P, kv_head, extra=()):
    fn = function("kv_head", kv_head)
    for Hq, Hkv in [(6, 2), (8, 2), (8, 1), (8, 8), (32, 8)] + list(P["heads"]) + list(extra):
        mine = [attempt(f"kv_head({h}, {Hq}, {Hkv})", fn, h, Hq, Hkv) for h in range(Hq)]
        ref = [fl.kv_head(h, Hq, Hkv) for h in range(Hq)]
        if None in mine:
            raise Wrong("kv_head: no answer yet (it returned None)")
        if mine != ref:
            why = (" (that interleaves the heads: FlashAttention groups consecutive query heads)"
                   if mine == [h % Hkv for h in range(Hq)] else "")
            return [f"Hq={Hq}, Hkv={Hkv}: you map {mine}, the rule maps {ref}{why}"]
    return []


# ----------------------------------------------------------------------------------------------
# Figures

FIG = dict(Nq=64, Nk=192, d=16, B=16)   # the keep figure's decode shape: 4 x 12 tiles of 16 x 16


def tile_classes(Nq, Nk, d, B, causal="none", left=-1, right=-1):
    """Runs flash2 with B x B blocks forced, on an SRAM of exactly their footprint, and follows
    its trace: which key block each row block loads.  Returns (result, loaded, classes):
    loaded the set of (row block, key block) tiles whose K_j the machine loaded; classes[i][j]
    is 2 when the mask keeps (i, j) (its tile was loaded), 1 when (i, j) was computed in a loaded
    tile but masked, 0 when its tile was skipped (never loaded)."""
    loaded, row = set(), [None]

    def event(e):
        if e.kind == "load" and e.tensor == "Q":
            row[0] = e.r0 // B
        elif e.kind == "load" and e.tensor == "K":
            loaded.add((row[0], e.r0 // B))
    r = fl.run("flash2", N=Nq, Nk=Nk, d=d, M=fl.footprint("flash2", d, B, B), Br=B, Bc=B,
               causal=causal, window_left=left, window_right=right, trace=event)
    mk = fl.mask(Nq, Nk, causal, left, right)
    classes = [[0] * Nk for _ in range(Nq)]
    for bi, bj in loaded:
        r0, c0 = bi * B, bj * B
        nr, nc = min(B, Nq - r0), min(B, Nk - c0)
        kind = fl.mask_tile(mk, r0, nr, c0, nc)
        for i in range(r0, r0 + nr):
            for j in range(c0, c0 + nc):
                classes[i][j] = 2 if kind == "full" or (kind == "partial" and fl.mask_keep(mk, i, j)) else 1
    return r, loaded, classes


def keep_figure(panels, show=True, keep=None, fmt="png", **shape):
    """Draws figures/lab4_keep.gp: one panel per (title, causal, left, right), each the keep
    matrix of FIG's decode shape (Nq queries over Nk keys) coloured by what flash2 did with
    every element (kept, computed in a loaded tile but masked, skipped with its tile).  Prints
    each panel's tiles and traffic.  Returns (figure path or None, [(title, result, tiles)])."""
    sh = {**FIG, **shape}
    Nq, Nk, B = sh["Nq"], sh["Nk"], sh["B"]
    tiles = -(-Nq // B) * -(-Nk // B)
    blocks, out = [], []
    for title, causal, left, right in panels:
        r, loaded, cls = tile_classes(Nq, Nk, sh["d"], B, causal, left, right)
        out.append((title, r, len(loaded)))
        print(f"{title:>28}: {len(loaded):3d} of {tiles} tiles loaded; K reads {r.tensors['K'][0]:6d}, "
              f"total {r.total:6d} elements")
        blocks.append(figures.table(cls))
    titles = " ".join(f'"{t}: {n} of {tiles} tiles, {r.total} elements"' for t, r, n in out)
    path = figures.draw("lab4_keep.gp", {"data": "\n\n".join(blocks)}, show=show, keep=keep, fmt=fmt,
                        n=len(panels), Nq=Nq, Nk=Nk, B=B, titles=titles.replace("'", ""))
    return path, out


def gqa_traffic(N=512, d=64, M=40000, Hq=16):
    """K + V reads of flash2 and flash2-gqa for Hq query heads over Hkv = Hq / G K/V heads, for
    every group size G dividing Hq: rows (G, Hkv, flash2's, flash2-gqa's, flash2-gqa's block,
    the floor 2 Hkv N d: each K/V head's K and V read once)."""
    rows = []
    G = 1
    while G <= Hq:
        Hkv = Hq // G
        f = fl.run("flash2", N=N, d=d, M=M, heads=Hq, kv_heads=Hkv)
        g = fl.run("flash2-gqa", N=N, d=d, M=M, heads=Hq, kv_heads=Hkv)
        rows.append((G, Hkv, f.tensors["K"][0] + f.tensors["V"][0], g.tensors["K"][0] + g.tensors["V"][0],
                     g.Br, 2 * Hkv * N * d))
        G *= 2
    return rows


def gqa_figure(N=512, d=64, M=40000, Hq=16, show=True, keep=None, fmt="png"):
    """Draws figures/lab4_gqa.gp from gqa_traffic and prints its rows.  Returns (path, rows)."""
    rows = gqa_traffic(N, d, M, Hq)
    print(f"Hq = {Hq}, N = {N}, d = {d}, M = {M}: K + V elements read")
    print(f"{'G':>3} {'Hkv':>4} | {'flash2':>9} | {'flash2-gqa':>10} {'(block)':>8} | {'floor 2*Hkv*N*d':>15}")
    for G, Hkv, f, g, b, floor in rows:
        print(f"{G:3d} {Hkv:4d} | {f:9d} | {g:10d} {b:8d} | {floor:15d}")
    path = figures.draw("lab4_gqa.gp", {"data": figures.table(rows)}, show=show, keep=keep, fmt=fmt,
                        N=N, d=d, M=M, Hq=Hq)
    return path, rows
