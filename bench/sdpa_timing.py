"""sdpa_timing.py: how bench/gpu_sdpa.py times the implementations of one pass.  No torch: the
device comes in as `dev`, an object with

  dev.event()        a new timing event: .record() puts it on the stream, a.elapsed_time(b) reads
                     the milliseconds between two recorded events after dev.synchronize()
                     (torch.cuda.Event(enable_timing=True) is one);
  dev.synchronize()  waits for the device;
  dev.flush()        evicts the L2 cache: zeroes a buffer larger than it (cold mode; Triton's
                     do_bench zeroes 256 MB the same way);

so the order of calls, events and flushes can be checked without a GPU (tests/bench/).

Two orders:
  interleaved  a round calls every implementation once, between two events each, the order
               rotated by one every round (round r starts at implementation r mod n): each meets
               the GPU's clock and temperature as the others do (docs/performance.md, "How the two
               are timed": back to back, one implementation's time moved by up to 20 % with what
               ran before it);
  sequential   every call of one implementation, then the next (the records before run 51).
Two cache states:
  warm  the calls follow each other: inputs that fit in L2 stay there;
  cold  dev.flush() before every call, outside its events: every call starts from an L2 holding
        none of its data.
The number of calls comes from a time budget (as do_bench's warmup and rep, in ms): each
implementation is timed on a few calls first, then warmup_ms and rep_ms of its calls (of whole
rounds, interleaved) are run, at least min_reps and at most max_reps timed; or from fixed counts.
"""
import math
from dataclasses import dataclass

ORDERS = ("interleaved", "sequential")
# How a claim states the method its records were timed with (parse's (order, cache)): the README's
# and docs/performance.md's ranges of a version are followed by ", <phrase>"
# (tests/check_gpu_records.py checks it; bench/records.py prints it).
PHRASE = {("interleaved", "warm"): "timed interleaved", ("sequential", "warm"): "timed sequentially",
          ("interleaved", "cold"): "timed interleaved with the L2 flushed",
          ("sequential", "cold"): "timed sequentially with the L2 flushed"}
ESTIMATE_CALLS = 3


@dataclass
class Budget:
    """warmup_ms and rep_ms of calls (per implementation; a round's time, interleaved), timed
    calls clamped to [min_reps, max_reps]; or, with reps > 0, exactly warmup and reps calls."""
    warmup_ms: float = 25.0
    rep_ms: float = 100.0
    min_reps: int = 10
    max_reps: int = 1000
    warmup: int = 0
    reps: int = 0

    def describe(self):
        if self.reps:
            return f"{self.warmup} warm-up calls and {self.reps} timed calls each"
        return (f"warm-up {self.warmup_ms:g} ms and {self.rep_ms:g} ms of timed rounds (interleaved) or of each "
                f"implementation's calls (sequential), at least {self.min_reps} and at most {self.max_reps} calls each "
                f"(column reps), counted from {ESTIMATE_CALLS} calls timed first")


@dataclass
class Timing:
    """One implementation's result: median and p95 ms of its timed calls, how many."""
    median_ms: float
    p95_ms: float
    reps: int


def median_p95(ts):
    """(median, p95) of a list of ms: the middle element of the sorted list (the upper one of an
    even count, as gpu_sdpa.py always took), and the element at ceil(0.95 n) - 1."""
    t = sorted(ts)
    return t[len(t) // 2], t[min(len(t) - 1, int(math.ceil(0.95 * len(t))) - 1)]


def plan(est_ms, budget):
    """(warm-up calls, timed calls) for a budget, given the ms of one call (one round, interleaved)."""
    if budget.reps:
        return budget.warmup, budget.reps
    est = max(est_ms, 1e-6)
    warm = max(1, int(math.ceil(budget.warmup_ms / est)))
    reps = int(math.ceil(budget.rep_ms / est))
    return warm, max(budget.min_reps, min(budget.max_reps, reps))


def _timed(dev, fn, cold):
    """Calls fn once between two recorded events (after a flush, cold); returns the events."""
    if cold:
        dev.flush()
    a, b = dev.event(), dev.event()
    a.record()
    fn()
    b.record()
    return a, b


def estimate(dev, fns, cold, calls=ESTIMATE_CALLS):
    """ms of one call of each fn: the mean of `calls` timed calls, one implementation after the other."""
    out = []
    for fn in fns:
        ev = [_timed(dev, fn, cold) for _ in range(calls)]
        dev.synchronize()
        out.append(sum(a.elapsed_time(b) for a, b in ev) / calls)
    return out


def time_interleaved(dev, fns, warmup, reps, cold=False):
    """[Timing] of each fn: warmup rounds, then reps rounds; round r calls fn (j + r) mod n for
    j = 0, 1, ..., each call between two events (after a flush, cold)."""
    n = len(fns)
    for r in range(warmup):
        for j in range(n):
            if cold:
                dev.flush()
            fns[(j + r) % n]()
    ev = [[None] * reps for _ in fns]
    for r in range(reps):
        for j in range(n):
            i = (j + r) % n
            ev[i][r] = _timed(dev, fns[i], cold)
    dev.synchronize()
    return [Timing(*median_p95([a.elapsed_time(b) for a, b in e]), reps) for e in ev]


def time_sequential(dev, fns, warmup, reps, cold=False):
    """[Timing] of each fn: its warmup calls then its reps timed calls, one fn after the other."""
    out = []
    for fn in fns:
        for _ in range(warmup):
            if cold:
                dev.flush()
            fn()
        ev = [_timed(dev, fn, cold) for _ in range(reps)]
        dev.synchronize()
        out.append(Timing(*median_p95([a.elapsed_time(b) for a, b in ev]), reps))
    return out


def time_pass(dev, fns, order, cold, budget):
    """[Timing] of each fn of one pass, in the order (ORDERS) and cache state asked, the counts from
    the budget.  Each fn must have been called once already (compilation, first-touch allocations)."""
    if order not in ORDERS:
        raise ValueError(f"timing order {order!r}: must be one of {', '.join(ORDERS)}")
    if not fns:
        return []
    if order == "interleaved":
        est = sum(estimate(dev, fns, cold)) if not budget.reps else 0.0
        warm, reps = plan(est, budget)
        return time_interleaved(dev, fns, warm, reps, cold)
    out = []
    for fn in fns:  # sequential: each implementation its own budget, its warm-up just before its calls
        est = estimate(dev, [fn], cold)[0] if not budget.reps else 0.0
        warm, reps = plan(est, budget)
        out += time_sequential(dev, [fn], warm, reps, cold)
    return out


def describe(order, cold, budget):
    """The `# timing:` provenance line's text (after "timing: "), which tests/check_gpu_records.py
    reads: the order and the cache state first ("interleaved, warm: ..."), then how."""
    how = ("a pass in rounds, each implementation called once a round, the order rotated every round"
           if order == "interleaved" else "each implementation's calls together, one implementation after the other")
    cache = ("cold: L2 flushed (a buffer larger than it zeroed) before every call, outside its events"
             if cold else "warm: calls back to back")
    return (f"{order}, {'cold' if cold else 'warm'}: CUDA events around each call ({how}); {cache}; "
            f"{budget.describe()}; median and p95")


def parse(line):
    """(order, cache) of a `# timing:` line: ("interleaved" or "sequential", "warm" or "cold").
    The lines before run 51 (gpu_sdpa.py before --timing, which timed sequentially only) say
    "timing: CUDA events around each call, ..." with neither word: ("sequential", "warm").
    Those of runs 51-54 say "timing: interleaved: ..." or "timing: sequential: ..." (warm).
    Returns None for a line that is none of these."""
    text = line.lstrip("#").strip()
    if not text.startswith("timing:"):
        return None
    rest = text[len("timing:"):].strip()
    head = rest.split(":")[0]
    words = [w.strip() for w in head.split(",")]
    if words and words[0] in ORDERS:
        cache = words[1] if len(words) > 1 and words[1] in ("warm", "cold") else "warm"
        if len(words) > 1 and words[1] not in ("warm", "cold"):
            return None
        return words[0], cache
    if rest.startswith("CUDA events around each call"):
        return "sequential", "warm"
    return None
