"""python3 -m labkit answers STUDENT [LAB]: prints a student's parameters and expected answers,
computed with the C library (the instructor's key; LAB: 1-8, default all)."""
import sys

from . import grading, lab1, lab2, lab3, lab4, lab5, lab6, lab7

LABS = {"1": lab1, "2": lab2, "3": lab3, "4": lab4, "5": lab5, "6": lab6, "7": lab7, "8": grading}


def main(argv):
    if len(argv) < 2 or argv[0] != "answers" or (len(argv) > 2 and argv[2] not in LABS):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    for k in ([argv[2]] if len(argv) > 2 else LABS):
        mod = LABS[k]
        print(f"lab {k}: params {mod.params(argv[1])}")
        if hasattr(mod, "answers"):
            print(f"       answers {mod.answers(argv[1])}")
        else:
            case = mod.params(argv[1])
            print(f"       optimize (best total, lower bound, algo, Br, Bc): {mod.optimum(case)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
