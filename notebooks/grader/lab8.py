"""Lab 8's grading: the student's schedule on a case of its own drawn for the student, on inputs
the child never sees; valid when the O and L it stores are the reference's (so it keeps on chip
an O accumulator, a score tile and the row statistics), scored out of 10 against `flashlab
optimize`'s best (labkit.lab8.points).  optimize is the reference: a valid schedule below its
best would be a flaw of the search, reported on the grader's terminal."""
import sys

from flashlab.labkit import lab8 as KIT

from .core import Check

LAB, SOURCE = 8, "lab8_design_graded"


def params(g):
    case = KIT.draw(g)
    case["_hidden"] = {"seed": g.randrange(1 << 30)}
    return case


def scored(P, my_schedule):
    case = {k: v for k, v in P.items() if k != "_hidden"}
    problems, pts, total = KIT.score(case, my_schedule, P["_hidden"]["seed"])
    if not problems and total < KIT.optimum(case)[0]:
        print(f"grader: lab 8: a valid schedule moves {total} elements, below optimize's best "
              f"{KIT.optimum(case)[0]} on {case}: optimize's search misses it", file=sys.stderr)
    return problems, float(pts)


ALLOW = ("cli", "footprint", "blocks", "run", "mask", "mask_tile", "mask_keep", "kv_head")
CHECKS = [Check("lab8.design", ("my_schedule",), cells=(1,), allow=ALLOW, points=10.0, scored=scored)]
