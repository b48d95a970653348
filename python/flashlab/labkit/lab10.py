"""Lab 10 (same bytes, different speed): checks on the Nsight Compute profile of versions 7, 10 and
12 of the flash2 forward on the same tiles and shape, recorded on an H200
(figures/data/gpu_ncu_same_bytes.csv).  Every byte count is recomputed with the C library
(fl.run of flash2, one head or the whole launch); every time, rate and ratio from the recorded
columns, never typed in.  After a right answer each check also confirms that the recorded data
says what the lab says it does ("the data disagrees with the lab" otherwise).  Without the
recorded file every check skips and says so."""
import math

import flashlab as fl

from . import Skip, Wrong, attempt, check, function, near, number, numbers_list, rng, student_id, whole
from .data import read_measurements
from .lab7 import PEAK_BYTES   # 4.3e12 bytes/s: a device-to-device copy on the H200 (read + written)

DATA = "gpu_ncu_same_bytes.csv"
SMS = 132            # streaming multiprocessors of the H200 (version 12's persistent grid: one CTA each)
SCHEDULERS = 4       # warp schedulers per SM; each issues at most one warp instruction a cycle
PEAK_DENSE = 989e12  # FLOP/s: the H200's dense fp16/bf16 tensor-core peak (NVIDIA's datasheet;
                     # 1979 TFLOP/s only with 2:4 sparsity)
LAB7_PEAK = 790e12   # lab 7's measured product ceiling (a wrong denominator for peak_share)
VERSIONS = ("7", "10", "12")     # fl_fast_fwd (mma.sync), fl_wg_fwd (wgmma), fl_ws_fwd (warp-specialized)
PAIRS = (("7", "10"), ("10", "12"))   # (slower, faster): the two steps of the ladder
SPEED_GAP = 0.10     # the fewest bytes take under this share of every measured time (not bound by bytes)
ISSUE_TOL = 0.10     # instructions / issue rate predicts every duration within 10 % (it is 3-6 % short)
PARTS_TOL = 0.05     # the product of speedup_parts within 5 % of the measured speedup


# ----------------------------------------------------------------------------------------------
# The recorded rows and the model

def rows():
    """The recorded rows, as dicts of strings ([] when the file is not in the data folder)."""
    return read_measurements(fl.data_dir() / DATA)[1]


def _recorded(P):
    """P's rows, or Skip naming the recorded file when there are none."""
    rs = P["rows"]
    if not rs:
        raise Skip(f"no recorded profile (figures/data/{DATA})")
    return rs


def draw(g):
    """A student's part from g: the recorded rows (the same for everyone: the profile of record),
    the step of the ladder and the head dimension whose speedup the notebook splits for them
    ('pair': (slower, faster) versions, 'd'), and the changes exercise 1's check makes to rows
    ('probes': [(column, value)])."""
    rs = rows()
    pair = g.choice([("7", "10"), ("10", "12"), ("7", "12")])
    return {"rows": rs, "pair": list(pair), "d": g.choice(dims(rs)) if rs else None,
            "probes": [("Br", str(g.choice([32, 64, 96]))), ("N", str(g.choice([1024, 2048, 3072, 6144])))]}


def params(student=""):
    """The student's part (draw); '' gives the handout's (a fixed generator's)."""
    return draw(rng("lab10", student_id(student)))


def row_of(version, d, rs=None):
    """The recorded row of one version ('7', '10', '12') at head dimension d, or None."""
    for r in rs if rs is not None else rows():
        if r["version"] == str(version) and int(r["d"]) == int(d):
            return r
    return None


def dims(rs=None):
    """The head dimensions recorded (ints, ascending)."""
    return sorted({int(r["d"]) for r in (rs if rs is not None else rows())})


def label(r):
    """How the checks name a row: 'v10 d = 128 (128x64)'."""
    return f"v{r['version']} d = {r['d']} ({r['Br']}x{r['Bc']})"


def _lib_run(r, Br=None, heads=1):
    """fl.run of flash2 for row r's shape (N, d, fp16) with its tiles forced (Br: the row's, or
    another) on an SRAM of exactly their footprint, for `heads` heads."""
    N, d = int(r["N"]), int(r["d"])
    Br, Bc = int(Br if Br is not None else r["Br"]), int(r["Bc"])
    return fl.run("flash2", N=N, d=d, Br=Br, Bc=Bc, M=fl.footprint("flash2", d, Br, Bc),
                  heads=heads, elem_bytes=2)


def _model_pair(r):
    """(read bytes, write bytes) of the model of row r's kernel, one head."""
    m = _lib_run(r)
    return m.read_bytes, m.write_bytes


def _fewest_bytes(r):
    """The fewest bytes of row r's whole launch: the model with one query block (Br = N): Q, K, V
    read once, O and L written once, over all heads."""
    return _lib_run(r, Br=r["N"], heads=int(r["heads"])).bytes


def ms(r):
    """The measured duration of row r in milliseconds."""
    return float(r["duration_ns"]) * 1e-6


def flops(r):
    """The row's FLOPs (its gflop column: 4 heads N^2 d)."""
    return float(r["gflop"]) * 1e9


def _fewest_ms_of(r):
    """The milliseconds the fewest bytes of row r's launch take at PEAK_BYTES."""
    return _fewest_bytes(r) / PEAK_BYTES * 1e3


def _speedups_of(rs):
    """{d: (t7 / t10, t10 / t12)}: each step's speedup at each recorded d."""
    return {d: tuple(ms(row_of(s, d, rs)) / ms(row_of(f, d, rs)) for s, f in PAIRS) for d in dims(rs)}


def _predicted_ms_of(r, sms=SMS, schedulers=SCHEDULERS, pct=100.0):
    """Instructions over the issue rate: inst_executed / (issue_active_pct / pct x schedulers x sms
    x sm_clock_hz), in ms (the defaults are right; the others make the usual mistakes)."""
    rate = float(r["issue_active_pct"]) / pct * schedulers * sms * float(r["sm_clock_hz"])
    return float(r["inst_executed"]) / rate * 1e3


def _parts_of(slow, fast):
    """(instructions slow/fast, issue rate fast/slow, clock fast/slow): three factors whose product
    is the speedup t_slow / t_fast as far as time = instructions / issue rate holds."""
    f = lambda r, k: float(r[k])
    return (f(slow, "inst_executed") / f(fast, "inst_executed"),
            f(fast, "issue_active_pct") / f(slow, "issue_active_pct"),
            f(fast, "sm_clock_hz") / f(slow, "sm_clock_hz"))


def _active_cycles(r):
    """Tensor-pipe active cycles of one SM (the SMs taken as busy for the whole duration)."""
    return float(r["tensor_active_pct"]) / 100 * float(r["duration_ns"]) * 1e-9 * float(r["sm_clock_hz"])


def _flop_per_cycle_of(r):
    """FLOPs one SM completes per cycle its tensor pipe is active."""
    return flops(r) / SMS / _active_cycles(r)


def _peak_share_of(r):
    """The row's FLOP rate as a fraction of PEAK_DENSE."""
    return flops(r) / (ms(r) * 1e-3) / PEAK_DENSE


def _stall_ratios(r):
    """{reason: warps stalled for it per issued instruction}, every stall_* column (names without
    the prefix), 'selected' included."""
    return {k[len("stall_"):]: float(v) for k, v in r.items() if k.startswith("stall_")}


def _top_stalls_of(r, k=2):
    """The k reasons with the most warps stalled per issued instruction, largest first, 'selected'
    (the issue itself: exactly 1 per issued instruction) excluded."""
    st = {n: x for n, x in _stall_ratios(r).items() if n != "selected"}
    return sorted(st, key=lambda n: -st[n])[:k]


def _stall_cycles(r, reason):
    """Warp-cycles stalled for `reason` over the whole launch: the per-instruction ratio times the
    instructions issued (one issue per issue-active cycle of a scheduler)."""
    return _stall_ratios(r)[reason] * float(r["inst_executed"])


def _barrier_drop_of(rs):
    """{d: version 12's barrier warp-cycles over version 10's}."""
    return {d: _stall_cycles(row_of("12", d, rs), "barrier") / _stall_cycles(row_of("10", d, rs), "barrier")
            for d in dims(rs)}


# ----------------------------------------------------------------------------------------------
# Reading answers

def _value(what, fn, *args):
    """The student's fn(*args) as a float; Wrong when it raises, returns None or not a number."""
    got = attempt(what, fn, *args)
    if got is None:
        raise Wrong(f"{what} returned None: not written yet")
    return number(what, got)


def _by_d(name, v, rs, n=None):
    """A dict {d: value} with exactly the recorded d as keys (ints; 64.0 is fine), each value one
    number or (n given) a list of n numbers."""
    if v is None:
        raise Wrong(f"{name} is not answered yet")
    if not isinstance(v, dict):
        raise Wrong(f"{name} = {str(v)[:60]}: expected a dict {{d: ...}} over d in {dims(rs)}, got a {type(v).__name__}")
    out = {}
    for k, x in v.items():
        if isinstance(k, bool) or not isinstance(k, (int, float)) or not math.isfinite(k) or k != int(k):
            raise Wrong(f"{name}: key {k!r}: the keys are the head dimensions d, as ints ({dims(rs)})")
        out[int(k)] = numbers_list(f"{name}[{int(k)}]", x, n) if n else number(f"{name}[{int(k)}]", x)
    if sorted(out) != dims(rs):
        raise Wrong(f"{name} has keys {sorted(out)}: one entry per recorded d, {dims(rs)}")
    return out


def _first(problems, n=3):
    """The first n problems: one mistake repeated on every row is said three times at most."""
    return problems[:n]


def _holds(claim, ok, P=None):
    """[] when the recorded data supports the lab's claim (or P's rows are not the recorded ones:
    P["synthetic"]), else one line saying it does not."""
    return [] if ok or (P and P.get("synthetic")) else [f"the data disagrees with the lab: {claim}"]


def _per_row(rs, name, fn, want_of, wrongs_of, right):
    """The first problems (at most three) of fn(row) against want_of(row) on every row: each
    mismatch names the first plausible mistake (wrongs_of(row, want): (value, why) pairs, built
    only on a mismatch) that the answer equals, or else `right`, the rule.  Wrong when fn raises,
    returns None or not a number."""
    problems = []
    for r in rs:
        what = f"{name}({label(r)})"
        got, want = _value(what, fn, r), want_of(r)
        if not near(got, want):
            why = next((why for wrong, why in wrongs_of(r, want) if near(got, wrong)), right)
            problems.append(f"{what} = {got}: {why}")
    return _first(problems)


def _parts(rs, *parts):
    """The problems of a check's parts, (name, the student's answer, part(rs, answer)) each: a part
    that cannot read its answer (Wrong) gives that one line and the others still run."""
    problems = []
    for name, answer, part in parts:
        try:
            problems += part(rs, function(name, answer) if name else answer)
        except Wrong as w:
            problems.append(str(w))
    return problems


# ----------------------------------------------------------------------------------------------
# Exercise 1: the same bytes

def _why_bytes(r, got, want):
    heads = int(r["heads"])
    m = _lib_run(r)
    if near_pair(got, (want[0] * heads, want[1] * heads)):
        return f"that is all {heads} heads; the counters (and this answer) are one head's"
    if near_pair(got, want[::-1]):
        return "swapped: (read bytes, write bytes)"
    if near_pair(got, (m.reads, m.writes)):
        return "those are elements: bytes are each tensor's elements times its size (fp16: 2, L: fp32, 4)"
    if r["Br"] != r["Bc"]:
        sw = fl.run("flash2", N=int(r["N"]), d=int(r["d"]), Br=int(r["Bc"]), Bc=int(r["Br"]),
                    M=fl.footprint("flash2", int(r["d"]), int(r["Bc"]), int(r["Br"])), elem_bytes=2)
        if near_pair(got, (sw.read_bytes, sw.write_bytes)):
            return "Br and Bc swapped: Br is the query tile (the row's Br), Bc the key tile"
    dflt = fl.run("flash2", N=int(r["N"]), d=int(r["d"]), M=fl.footprint("flash2", int(r["d"]), int(r["Br"]), int(r["Bc"])),
                  elem_bytes=2)
    if (dflt.Br, dflt.Bc) != (int(r["Br"]), int(r["Bc"])) and near_pair(got, (dflt.read_bytes, dflt.write_bytes)):
        return (f"the library chose blocks {dflt.Br}x{dflt.Bc} for that SRAM: force the kernel's tiles "
                f"(Br={r['Br']}, Bc={r['Bc']})")
    return ("fl.run('flash2', ...) with the row's N, d, Br, Bc forced, M = fl.footprint('flash2', d, Br, Bc), "
            "elem_bytes=2, one head: (.read_bytes, .write_bytes)")


def near_pair(a, b):
    """Both numbers of a pair near the other pair's."""
    return near(a[0], b[0]) and near(a[1], b[1])


def probes(rs, changes):
    """Rows the check adds to the recorded ones: the first row of each d with one column changed
    (changes: [(column, value)]), its counters and measurements left as recorded (so only a model
    that reads the row's N, d, Br, Bc gives their bytes): [(what changed, row)]."""
    out = []
    for d in dims(rs):
        r = next(x for x in rs if int(x["d"]) == d)
        out += [(f"{k} = {v}", dict(r, **{k: v})) for k, v in changes]
    return out


@check("lab10.same-bytes")
def same_bytes(P, model_bytes):
    """model_bytes(row) -> (read bytes, write bytes) of one head: passes when it equals the
    library's model on every recorded row and on the probes (rows with other tiles or N)."""
    fn = function("model_bytes", model_bytes)
    rs = _recorded(P)
    problems = []
    for r, changed in [(r, None) for r in rs] + [(p, c) for c, p in probes(rs, P["probes"])]:
        what = f"model_bytes({label(r)}{', changed to ' + changed if changed else ''})"
        got = attempt(what, fn, r)
        if got is None:
            problems.append(f"{what} returned None: not written yet")
            break
        try:
            got = [whole(f"{what}[{i}]", x) for i, x in enumerate(numbers_list(what, got, 2))]
        except Wrong as w:
            problems.append(str(w) + " ((read bytes, write bytes) of one head)")
            break
        want = _model_pair(r)
        if tuple(got) == want:
            continue
        if changed and tuple(got) == (int(r["counter_read_B_per_head"]), int(r["counter_write_B_per_head"])):
            why = ("those are the bytes of the row as recorded (its counters); the check changed this row's "
                   + changed.split(" =")[0] + ": the model is fl.run's with the row's own N, d, Br, Bc")
        else:
            why = _why_bytes(r, got, want)
        problems.append(f"{what} = {tuple(got)}: {why}")
    if problems:
        return _first(problems)
    for r in rs:
        want = _model_pair(r)
        counted = (int(r["counter_read_B_per_head"]), int(r["counter_write_B_per_head"]))
        problems += _holds(f"{label(r)}: the counters {counted} are not the model's {want}", counted == want, P)
        if r["version"] != "7":   # version 7 spills registers: its SMs read a little more
            problems += _holds(f"{label(r)}: sm_read_B is not heads x the model's reads",
                               int(r["sm_read_B"]) == int(r["heads"]) * want[0], P)
    for d in dims(rs):
        problems += _holds(f"d = {d}: the three versions' models differ",
                           len({_model_pair(r) for r in rs if int(r["d"]) == d}) == 1, P)
    return problems


# ----------------------------------------------------------------------------------------------
# Exercise 2: the floor of bytes

def _fewest_wrongs(r, want):
    """Plausible wrong answers to fewest_ms(r), each with what it got wrong."""
    heads = int(r["heads"])
    tiled = _lib_run(r, heads=heads)
    one = _lib_run(r, Br=r["N"], heads=heads)
    no_l = (one.bytes - one.tensors["L"][1] * one.elem_bytes["L"]) / PEAK_BYTES * 1e3
    return ((want / heads, f"that is one head; the launch runs all {heads} heads"),
            (want * 1e-3, "in milliseconds, not seconds"),
            (want * 1e6, "in milliseconds, not nanoseconds"),
            (tiled.bytes / PEAK_BYTES * 1e3, "those are the model's bytes with the row's tiles; the "
                                            "fewest bytes have a single query block (Br = N)"),
            (tiled.bytes / heads / PEAK_BYTES * 1e3, "one head, and the row's tiles: all heads, Br = N"),
            (one.total / PEAK_BYTES * 1e3, "those are elements: bytes are elements times their size"),
            (no_l, "L (one fp32 per query row) is written too"),
            (one.bytes / 4.8e12 * 1e3, "over PEAK_BYTES, the copy rate measured on this H200"))


@check("lab10.floor")
def floor(P, fewest_ms):
    """fewest_ms(row) -> ms: passes when it is the launch's fewest bytes (flash2 with Br = N, all
    heads) over PEAK_BYTES on every row (relative 1e-5)."""
    rs = _recorded(P)
    problems = _parts(rs, ("fewest_ms", fewest_ms, lambda rs, fn: _per_row(
        rs, "fewest_ms", fn, _fewest_ms_of, _fewest_wrongs,
        "the bytes of fl.run of flash2 with Br = N and all heads, over PEAK_BYTES, in ms")))
    if problems:
        return problems
    for r in rs:
        problems += _holds(f"{label(r)}: the fewest bytes take {_fewest_ms_of(r) / ms(r):.0%} of its time",
                           _fewest_ms_of(r) < SPEED_GAP * ms(r), P)
    return problems


# ----------------------------------------------------------------------------------------------
# Exercise 3: different speed

@check("lab10.speed")
def speed(P, speedups):
    """speedups = {d: (t7 / t10, t10 / t12)} over the recorded d: passes when every value is the
    rows' duration ratio (relative 1e-5)."""
    rs = _recorded(P)
    got = _by_d("speedups", speedups, rs, 2)
    want = _speedups_of(rs)
    problems = []
    for d in dims(rs):
        g, w = got[d], want[d]
        if near(g[0], w[0]) and near(g[1], w[1]):
            continue
        other = [e for e in dims(rs) if e != d]
        t = {v: ms(row_of(v, d, rs)) for v in VERSIONS}
        if near(g[0], 1 / w[0]) and near(g[1], 1 / w[1]):
            why = "inverted: the slower version's time over the faster's (above 1)"
        elif near(g[0], w[1]) and near(g[1], w[0]):
            why = "swapped: (v7 over v10, v10 over v12), the first step first"
        elif other and near(g[0], want[other[0]][0]) and near(g[1], want[other[0]][1]):
            why = f"those are d = {other[0]}'s speedups"
        elif near(g[1], t["7"] / t["12"]) or near(g[0], t["7"] / t["12"]):
            why = "each step against the one before it: v12 over v10, not over v7"
        else:
            why = "(t7 / t10, t10 / t12) from the rows' duration_ns"
        problems.append(f"speedups[{d}] = {tuple(g)}: {why}")
    if problems:
        return problems
    for d in dims(rs):
        problems += _holds(f"d = {d}: the versions are not slowest to fastest 7, 10, 12", min(want[d]) > 1, P)
    return problems


# ----------------------------------------------------------------------------------------------
# Exercise 4: time = instructions / issue rate

def _predicted(rs, fn):
    return _per_row(rs, "predicted_ms", fn, _predicted_ms_of, lambda r, want: (
        (_predicted_ms_of(r, schedulers=1), "each SM has 4 schedulers, each issuing at most one instruction a cycle"),
        (_predicted_ms_of(r, pct=1), "issue_active_pct is a percentage: divide it by 100"),
        (_predicted_ms_of(r, pct=1e4), "issue_active_pct is a percentage: divide it by 100, once"),
        (_predicted_ms_of(r, sms=1), f"all {SMS} SMs issue at once"),
        (_predicted_ms_of(r, sms=int(r["grid"])), f"the grid's CTAs are not SMs: {SMS} SMs issue"),
        (ms(r), "that is the measured time (duration_ns); predict it from the instructions"),
        (want * 1e-3, "in milliseconds, not seconds"),
        (want * 1e6, "in milliseconds, not nanoseconds")),
        "inst_executed / (issue_active_pct / 100 x 4 schedulers x 132 SMs x sm_clock_hz), in ms")


def _speedup_parts(rs, fn):
    problems = []
    for d in dims(rs):
        for s, f in PAIRS:
            slow, fast = row_of(s, d, rs), row_of(f, d, rs)
            what = f"speedup_parts(v{s}, v{f} at d = {d})"
            got = attempt(what, fn, slow, fast)
            if got is None:
                raise Wrong(f"{what} returned None: not written yet")
            got = numbers_list(what, got, 3)
            want = _parts_of(slow, fast)
            if all(near(a, b) for a, b in zip(got, want)):
                continue
            bad = [i for i in range(3) if not near(got[i], want[i])]
            if all(near(got[i], 1 / want[i]) for i in range(3)):
                why = "inverted: each part is a factor of t_slow / t_fast (above 1 where it helps the faster version)"
            elif sorted(round(x, 6) for x in got) == sorted(round(x, 6) for x in want):
                why = "the order is (instructions, issue rate, clock)"
            elif bad == [0] and near(got[0], 1 / want[0]):
                why = "instructions: the slower version's over the faster's"
            elif bad == [1] and near(got[1], 1 / want[1]):
                why = "issue rate: the faster version's issue_active_pct over the slower's"
            elif bad == [2] and near(got[2], 1.0):
                why = "the clocks were read, not set: the rows' sm_clock_hz differ"
            elif bad == [2] and near(got[2], 1 / want[2]):
                why = "clock: the faster version's sm_clock_hz over the slower's"
            else:
                why = ("(slow inst_executed / fast's, fast issue_active_pct / slow's, fast sm_clock_hz / slow's); "
                       f"part{'s' if len(bad) > 1 else ''} {', '.join(str(i) for i in bad)} wrong")
            problems.append(f"{what} = {tuple(got)}: {why}")
    return _first(problems)


@check("lab10.issue")
def issue(P, predicted_ms, speedup_parts):
    """predicted_ms(row) -> ms from instructions and issue rate, on every row; speedup_parts(slow,
    fast) -> (instructions, issue rate, clock) factors, on both steps at each d: passes when all
    equal the recorded columns' (relative 1e-5)."""
    rs = _recorded(P)
    problems = _parts(rs, ("predicted_ms", predicted_ms, _predicted), ("speedup_parts", speedup_parts, _speedup_parts))
    if problems:
        return problems
    for r in rs:
        x = _predicted_ms_of(r) / ms(r)
        problems += _holds(f"{label(r)}: predicted / measured = {x:.3f}", 1 - ISSUE_TOL <= x <= 1.0, P)
    for d in dims(rs):
        for s, f in PAIRS:
            a, b = _parts_of(row_of(s, d, rs), row_of(f, d, rs)), ms(row_of(s, d, rs)) / ms(row_of(f, d, rs))
            problems += _holds(f"d = {d}, v{s} -> v{f}: the parts give {a[0] * a[1] * a[2]:.3f}, measured {b:.3f}",
                               abs(a[0] * a[1] * a[2] / b - 1) <= PARTS_TOL, P)
    return problems


# ----------------------------------------------------------------------------------------------
# Exercise 5: the tensor pipe

def _per_cycle(rs, fn):
    def wrongs(r, want):
        cyc = float(r["duration_ns"]) * 1e-9 * float(r["sm_clock_hz"])
        return ((want / 100, "tensor_active_pct is a percentage: divide it by 100"),
                (want * SMS, f"per SM: the FLOPs are shared by {SMS} SMs"),
                (flops(r) / SMS / cyc, "per cycle the tensor pipe is *active*: times tensor_active_pct / 100"),
                (flops(r) / cyc, f"per SM and per active cycle: divide by {SMS} SMs and by tensor_active_pct / 100"),
                (want * 1e-9, "gflop is in units of 1e9 FLOP"))
    return _per_row(rs, "flop_per_tensor_cycle", fn, _flop_per_cycle_of, wrongs,
                    "gflop x 1e9 / (132 SMs x tensor_active_pct / 100 x duration x sm_clock_hz)")


def _share(rs, fn):
    return _per_row(rs, "peak_share", fn, _peak_share_of, lambda r, want: (
        (want * 100, "a fraction (0.5 for half the peak), not a percentage"),
        (want * PEAK_DENSE / LAB7_PEAK, "of the dense peak PEAK_DENSE (989e12), not lab 7's measured product ceiling"),
        (float(r["tensor_active_pct"]) / 100, "that is the tensor pipe's active share; the question is the FLOP "
                                              "rate's share of the peak"),
        (1 / want, "inverted: the row's FLOP/s over the peak")),
        "the row's FLOP/s (gflop over duration_ns) over PEAK_DENSE")


@check("lab10.tensor")
def tensor(P, flop_per_tensor_cycle, peak_share):
    """flop_per_tensor_cycle(row) -> FLOPs per SM per tensor-active cycle, peak_share(row) -> the
    FLOP rate over PEAK_DENSE (a fraction), on every row (relative 1e-5)."""
    rs = _recorded(P)
    problems = _parts(rs, ("flop_per_tensor_cycle", flop_per_tensor_cycle, _per_cycle), ("peak_share", peak_share, _share))
    if problems:
        return problems
    for d in dims(rs):
        v7 = _flop_per_cycle_of(row_of("7", d, rs))
        problems += _holds(f"d = {d}: version 7's FLOPs per active cycle are not below 3/4 of wgmma's",
                           all(v7 < 0.75 * _flop_per_cycle_of(row_of(v, d, rs)) for v in ("10", "12")), P)
        problems += _holds(f"d = {d}: version 7's tensor pipe is not the most active",
                           float(row_of("7", d, rs)["tensor_active_pct"]) > float(row_of("10", d, rs)["tensor_active_pct"]), P)
    return problems


# ----------------------------------------------------------------------------------------------
# Exercise 6: where the warps wait

def _tops(rs, fn):
    problems = []
    for r in rs:
        what = f"top_stalls({label(r)})"
        got = attempt(what, fn, r)
        if got is None:
            raise Wrong(f"{what} returned None: not written yet")
        if isinstance(got, (str, bytes, dict)) or not hasattr(got, "__iter__"):
            raise Wrong(f"{what} = {str(got)[:60]}: expected a list of 2 reason names, got a {type(got).__name__}")
        got = list(got)
        if len(got) != 2 or not all(isinstance(n, str) for n in got):
            raise Wrong(f"{what} = {str(got)[:60]}: expected a list of 2 reason names (strings), largest first")
        names = [n[len("stall_"):] if n.startswith("stall_") else n for n in got]
        st = _stall_ratios(r)
        unknown = [n for n in names if n not in st]
        if unknown:
            problems.append(f"{what}: {unknown[0]!r} is not a stall_* column of the row")
            continue
        want = _top_stalls_of(r)
        vals, top = [st[n] for n in names], [st[n] for n in want]
        if names[0] != names[1] and vals == top and "selected" not in names:
            continue   # (ties: any of the tied reasons is right)
        if "selected" in names:
            why = ("'selected' is the issue itself (exactly 1 warp per issued instruction), not a stall: "
                   "leave it out")
        elif sorted(vals) == sorted(top):
            why = "largest first"
        elif names == [n for n in sorted(st, key=lambda n: st[n]) if n != "selected"][:2]:
            why = "the largest two, not the smallest"
        else:
            why = "the two largest stall_* values of this row, 'selected' left out"
        problems.append(f"{what} = {got}: {why}")
    return _first(problems)


def _drop(rs, v):
    got = _by_d("barrier_drop", v, rs)
    want = _barrier_drop_of(rs)
    problems = []
    for d in dims(rs):
        g, w = got[d], want[d]
        if near(g, w):
            continue
        r10, r12 = row_of("10", d, rs), row_of("12", d, rs)
        per_inst = _stall_ratios(r12)["barrier"] / _stall_ratios(r10)["barrier"]
        other = [e for e in dims(rs) if e != d]
        if near(g, 1 / w):
            why = "inverted: version 12's barrier warp-cycles over version 10's"
        elif near(g, per_inst) or near(g, 1 / per_inst):
            why = ("the stall_* values are per issued instruction: multiply each by its row's inst_executed "
                   "to get warp-cycles")
        elif other and near(g, want[other[0]]):
            why = f"that is d = {other[0]}'s"
        else:
            why = "stall_barrier x inst_executed of version 12 over the same of version 10"
        problems.append(f"barrier_drop[{d}] = {g}: {why}")
    return problems


@check("lab10.stalls")
def stalls(P, top_stalls, barrier_drop):
    """top_stalls(row) -> the two largest stall reasons, 'selected' left out (names with or without
    'stall_'; tied reasons interchangeable), on every row; barrier_drop = {d: version 12's barrier
    warp-cycles over version 10's} (relative 1e-5)."""
    rs = _recorded(P)
    problems = _parts(rs, ("top_stalls", top_stalls, _tops), (None, barrier_drop, _drop))
    if problems:
        return problems
    problems += _holds("version 10's first stall at the largest d is not the barrier",
                       _top_stalls_of(row_of("10", max(dims(rs)), rs))[0] == "barrier", P)
    problems += _holds("version 12 does not stall less at barriers than version 10",
                       all(x < 1 for x in _barrier_drop_of(rs).values()), P)
    return problems


# ----------------------------------------------------------------------------------------------
# A table of the rows beside the student's functions

def table(columns, rs=None):
    """Prints one line per row of rs (default: the recorded rows): version, d, tiles, the measured
    ms, then each column {title: fn(row)} (a number or a pair); a column whose fn raises or
    returns something else shows '-'.  Never raises; prints why when there is no data."""
    rs = rows() if rs is None else rs
    if not rs:
        print(f"no recorded profile (figures/data/{DATA}): no table")
        return
    titles = list(columns)
    print(f"{'version':>7} {'d':>4} {'tiles':>8} {'ms':>7} | " + " | ".join(f"{t:>16}" for t in titles))
    for r in rs:
        cells = []
        for t in titles:
            try:
                v = columns[t](r)
                if isinstance(v, (list, tuple)):
                    s = ", ".join(_fmt(x) for x in v)
                else:
                    s = _fmt(v)
            except Exception:
                s = "-"
            cells.append(f"{s:>16}")
        print(f"{r['version']:>7} {r['d']:>4} {r['Br'] + 'x' + r['Bc']:>8} {ms(r):7.3f} | " + " | ".join(cells))


def _fmt(x):
    """A table cell: a string as is, a whole number whole, others to 5 digits; ValueError for
    None and booleans (the cell shows '-')."""
    if isinstance(x, bool) or x is None:
        raise ValueError
    if isinstance(x, str):
        return x
    x = float(x)
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.5g}"
