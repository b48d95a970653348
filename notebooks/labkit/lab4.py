"""Lab 4 (masks and heads: find the bug): checks against the library's one implementation of
the rules (fl_mask_init/fl_mask_keep, fl_kv_head, fl_cu_seqlens_check)."""
import flashlab as fl

from . import Wrong, attempt, check, function, rng, student_id

CANDIDATES = [(1, 1), (4, 4), (1, 8), (8, 1), (3, 5)]


def params(student=""):
    """Extra shapes of the student's own, checked beside the fixed ones."""
    g = rng("lab4", student_id(student))
    return {"decode": [(g.randrange(1, 6), g.randrange(2, 12))],
            "window": [(g.randrange(2, 8), g.randrange(2, 10), g.randrange(-1, 3), g.randrange(-1, 3))],
            "lengths": [[g.randrange(0, 50) for _ in range(g.randrange(2, 6))]],
            "heads": [(g.choice([4, 8, 16]) * 3, 3)]}


def answers(student=""):
    return {"blind_shapes": {s for s in CANDIDATES
                             if fl.mask_matrix(*s, "top-left") == fl.mask_matrix(*s, "bottom-right")}}


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
def decode_corner(student, decode_keep):
    fn = function("decode_keep", decode_keep)
    for nq, nk in [(2, 5), (5, 2), (4, 4), (1, 7), (3, 9)] + params(student)["decode"]:
        mine = _matrix(f"decode_keep({nq}, {nk})", attempt(f"decode_keep({nq}, {nk})", fn, nq, nk), nq, nk)
        ref = fl.mask_matrix(nq, nk, "bottom-right")
        diff = _first_difference(mine, ref)
        if diff:
            why = (" (that is the top-left corner: the new queries are the LAST Nq positions)"
                   if mine == fl.mask_matrix(nq, nk, "top-left") else "")
            return [f"Nq={nq}, Nk={nk}: {diff}{why}"]
    return []


@check("lab4.blind-tests")
def blind_tests(student, blind_shapes):
    if blind_shapes is None:
        raise Wrong("blind_shapes is not answered yet")
    try:
        mine = {tuple(int(x) for x in s) for s in blind_shapes}
    except (TypeError, ValueError):
        raise Wrong("blind_shapes: expected a set of (Nq, Nk) pairs")
    truth = answers()["blind_shapes"]
    problems = [f"{s}: the corners differ here, so a test on this shape does see the bug"
                for s in sorted(mine - truth)]
    problems += [f"{s}: both corners give the same mask here" for s in sorted(truth - mine)]
    return problems


@check("lab4.window")
def window(student, window_keep):
    fn = function("window_keep", window_keep)
    for nq, nk, L, R in [(3, 6, 1, 0), (6, 3, 2, 1), (5, 5, 2, 2), (4, 9, -1, 0), (4, 9, 3, -1),
                         (7, 7, 0, 0)] + params(student)["window"]:
        what = f"window_keep({nq}, {nk}, {L}, {R})"
        mine = _matrix(what, attempt(what, fn, nq, nk, L, R), nq, nk)
        diff = _first_difference(mine, fl.mask_matrix(nq, nk, "none", L, R))
        if diff:
            return [f"window ({L}, {R}), Nq={nq}, Nk={nk}: {diff} (the window is anchored at the "
                    f"bottom-right corner, shifted by Nk - Nq)"]
    return []


@check("lab4.varlen")
def varlen(student, cu_seqlens):
    fn = function("cu_seqlens", cu_seqlens)
    problems = []
    for ls in [[100, 300, 0, 250], [7], [0, 0, 5], [3, 1, 4, 1, 5]] + params(student)["lengths"]:
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
def gqa(student, kv_head):
    fn = function("kv_head", kv_head)
    for Hq, Hkv in [(6, 2), (8, 2), (8, 1), (8, 8), (32, 8)] + params(student)["heads"]:
        mine = [attempt(f"kv_head({h}, {Hq}, {Hkv})", fn, h, Hq, Hkv) for h in range(Hq)]
        ref = [fl.kv_head(h, Hq, Hkv) for h in range(Hq)]
        if None in mine:
            raise Wrong("kv_head: no answer yet (it returned None)")
        if mine != ref:
            why = (" (that interleaves the heads: FlashAttention groups consecutive query heads)"
                   if mine == [h % Hkv for h in range(Hq)] else "")
            return [f"Hq={Hq}, Hkv={Hkv}: you map {mine}, the rule maps {ref}{why}"]
    return []
