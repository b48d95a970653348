"""python3 -m labkit answers STUDENT [LAB]: prints a student's parameters (labs whose sizes depend on
the student) and expected answers, computed with the C library and the recorded GPU data (the
instructor's key; LAB: 1-10, default all)."""
import sys

from . import grading, lab1, lab2, lab3, lab4, lab5, lab6, lab7, lab9, lab10

LABS = {"1": lab1, "2": lab2, "3": lab3, "4": lab4, "5": lab5, "6": lab6, "7": lab7, "8": grading, "9": lab9,
        "10": lab10}


def main(argv):
    """argv: ["answers", STUDENT] or ["answers", STUDENT, LAB]; prints and returns 0, or prints the
    usage and returns 2 on anything else (an unknown LAB included)."""
    if len(argv) not in (2, 3) or argv[0] != "answers" or (len(argv) == 3 and argv[2] not in LABS):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    for k in ([argv[2]] if len(argv) == 3 else LABS):
        mod, student = LABS[k], argv[1]
        if hasattr(mod, "params"):  # labs 6, 7, 9 and 10 read recorded data, the same for everyone
            print(f"lab {k}: params {mod.params(student)}")
        else:
            print(f"lab {k}: (no per-student parameters: recorded data)")
        if hasattr(mod, "answers"):
            print(f"       answers {mod.answers(student)}")
        else:
            print(f"       optimize (best total, lower bound, algo, Br, Bc): {mod.optimum(mod.params(student))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
