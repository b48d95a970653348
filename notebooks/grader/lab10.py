"""Lab 10's grading: labkit.lab10's checks on a profile whose measured numbers are the recorded
ones changed for the student (each row's heads, and its time, clock, instructions, issue and
tensor activity and stall ratios scaled by factors of its own), so that values read off the recorded data, or typed
from the handout, do not pass; exercise 1's rows also changed in their tiles and N.  The claims
the lab makes about the recorded data are not checked on these rows."""
from flashlab.labkit import lab10 as KIT

from .core import Check

LAB, SOURCE = 10, "lab10_same_bytes"
SCALED = ("duration_ns", "sm_clock_hz", "inst_executed", "gflop", "tflops")
PERCENT = ("issue_active_pct", "tensor_active_pct", "warps_active_pct")


def perturb(g, r):
    out = dict(r, heads=str(g.choice([16, 32, 48, 64, 96, 128, 160, 192])))
    for c in SCALED:
        if out.get(c):
            out[c] = repr(float(out[c]) * g.uniform(0.85, 1.15))
    for c in PERCENT:
        if out.get(c):
            out[c] = repr(min(99.0, float(out[c]) * g.uniform(0.85, 1.15)))
    for c in out:
        if c.startswith("stall_") and c != "stall_selected" and out[c]:
            out[c] = repr(float(out[c]) * g.uniform(0.7, 1.4))
    return out


def params(g):
    P = KIT.draw(g)
    P["rows"] = [perturb(g, r) for r in P["rows"]]
    P["probes"] = [("Br", str(g.choice([16, 32, 48, 80, 96]))), ("N", str(g.randrange(512, 8193, 256))),
                   ("Bc", str(g.choice([16, 32, 96])))]
    P["synthetic"] = True
    return P


CHECKS = [
    Check("lab10.same-bytes", ("model_bytes",), cells=(1,), allow=("run", "footprint"),
          grade=lambda P, model_bytes: KIT.same_bytes.problems(P, model_bytes)),
    Check("lab10.floor", ("fewest_ms",), cells=(2,), allow=("run", "footprint"),
          grade=lambda P, fewest_ms: KIT.floor.problems(P, fewest_ms)),
    Check("lab10.speed", ("speedups",), cells=(3,), grade=lambda P, speedups: KIT.speed.problems(P, speedups)),
    Check("lab10.issue", ("predicted_ms", "speedup_parts"), cells=(4,),
          grade=lambda P, predicted_ms, speedup_parts: KIT.issue.problems(P, predicted_ms, speedup_parts)),
    Check("lab10.tensor", ("flop_per_tensor_cycle", "peak_share"), cells=(5,),
          grade=lambda P, flop_per_tensor_cycle, peak_share: KIT.tensor.problems(P, flop_per_tensor_cycle, peak_share)),
    Check("lab10.stalls", ("top_stalls", "barrier_drop"), cells=(6,),
          grade=lambda P, top_stalls, barrier_drop: KIT.stalls.problems(P, top_stalls, barrier_drop)),
]
