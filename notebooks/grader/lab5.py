"""Lab 5's grading: labkit.lab5's checks on the grader's sizes (exercise 1 on more cases that the
child never sees); exercises 1 and 2 may not run the machine (fl.run, fl.trace would count for
them), exercises 3 and 4 are runs of it."""
from flashlab.labkit import lab5 as KIT

from .core import Check

LAB, SOURCE = 5, "lab5_backward"


def params(g):
    P = KIT.draw(g)
    P["_hidden"] = {"cases": KIT.draw(g)["cases"]}
    return P


CHECKS = [
    Check("lab5.flash2-bwd", ("predict_flash2_bwd",), cells=(1,),
          grade=lambda P, predict_flash2_bwd: KIT.flash2_bwd.problems(P, predict_flash2_bwd, P["_hidden"]["cases"])),
    Check("lab5.saved", ("saved_standard", "saved_flash2"), cells=(2,),
          grade=lambda P, **v: KIT.saved.problems(P, *v.values())),
    Check("lab5.traffic", ("ratio", "recompute_adds_traffic"), cells=(3,), allow=("run",),
          grade=lambda P, **v: KIT.traffic.problems(P, *v.values())),
    Check("lab5.sweep", ("passes", "M_cross"), cells=(4,), allow=("run",),
          grade=lambda P, **v: KIT.sweep_check.problems(P, *v.values())),
]
