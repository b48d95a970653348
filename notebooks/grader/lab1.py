"""Lab 1's grading: the checks of labkit.lab1 on the grader's parameters; exercise 4's schedule on
the fixed rows and on rows drawn for the student that the child never sees."""
from flashlab.labkit import lab1 as KIT

from .core import Check

LAB, SOURCE = 1, "lab1_online_softmax"


def params(g):
    P = KIT.draw(g)
    P["_hidden"] = {"rows": KIT.random_rows(g, 3)}   # exercise 4's own rows (never sent to the child)
    return P


CHECKS = [
    Check("lab1.tile-one", ("m1", "l1", "u1"), cells=(1,), grade=lambda P, m1, l1, u1: KIT.tile_one.problems(P, m1, l1, u1)),
    Check("lab1.tile-two", ("m1", "l1", "u1", "a2", "m2", "l2", "u2", "O"), cells=(1, 2),
          grade=lambda P, **v: KIT.tile_two.problems(P, *v.values())),
    Check("lab1.rescales", ("factors",), cells=(3,), grade=lambda P, factors: KIT.rescales.problems(P, factors)),
    Check("lab1.own-tiling", ("my_online_softmax",), cells=(4,),
          grade=lambda P, my_online_softmax: KIT.own_tiling.problems(
              P, my_online_softmax, KIT.ROW_CASES + P["_hidden"]["rows"])),
]
