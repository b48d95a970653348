"""Lab 2's grading: labkit.lab2's checks on the grader's sizes; the predictions and the trace
answers may not count with the library (fl.run, fl.trace: only fl.blocks for the trace's blocks),
and the student's flash2 runs on inputs the child never sees."""
from flashlab.labkit import lab2 as KIT

from .core import Check

LAB, SOURCE = 2, "lab2_counting_traffic"


def params(g):
    P = KIT.draw(g)
    P["_hidden"] = {"seed": g.randrange(1 << 30)}   # the inputs of exercise 4's runs
    return P


CHECKS = [
    Check("lab2.standard", ("predict_standard",), cells=(1,),
          grade=lambda P, predict_standard: KIT.standard.problems(P, predict_standard)),
    Check("lab2.flash2", ("predict_flash2",), cells=(2,),
          grade=lambda P, predict_flash2: KIT.flash2.problems(P, predict_flash2)),
    Check("lab2.trace", ("flash2_K_loads", "flash1_Q_loads", "flash1_O_stores"), cells=(3,), allow=("blocks",),
          grade=lambda P, **v: KIT.trace.problems(P, *v.values())),
    Check("lab2.own-schedule", ("B", "my_flash2"), cells=(4,), allow=("footprint",),
          grade=lambda P, B, my_flash2: KIT.own_schedule.problems(P, B, my_flash2, P["_hidden"]["seed"])),
]
