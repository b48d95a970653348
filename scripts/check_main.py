"""check_main.py: the command line the repository checks share (check_ladder.py, check_paths.py).

    python3 scripts/check_paths.py [ROOT]        # problems of ROOT (default: this repository), exit 1 if any
    python3 scripts/check_paths.py --self-test   # the check against planted faults
"""
import os
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def main(argv, doc, problems, self_test, summary):
    """Runs a check: problems(root) -> lines, printed, then summary(root, lines); exit 1 when there
    are any, 2 for bad arguments (doc printed); --self-test: self_test(ROOT)'s status."""
    if argv[1:] == ["--self-test"]:
        return self_test(ROOT)
    if len(argv) > 2 or (len(argv) == 2 and not os.path.isdir(argv[1])):
        print(doc, file=sys.stderr)
        return 2
    root = argv[1] if len(argv) == 2 else ROOT
    bad = problems(root)
    for b in bad:
        print(b)
    print(summary(root, bad))
    return 1 if bad else 0
