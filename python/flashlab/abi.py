"""python3 -m flashlab.abi ABI_PROGRAM [--cc CC --include-dirs D1|D2]: the binding against the C
headers (ctest notebooks_abi).

Compares the ctypes structures' sizes, field offsets and field sizes with what ABI_PROGRAM
(notebooks/abi.c, compiled against the headers) reports, and, with --cc, compiles the binding's
PROTOTYPES against the headers in the include directories (a changed signature is a compile
error).  Exit status 0 when all match, 1 with one line per mismatch, 2 on bad arguments.
"""
import sys

from . import PROTOTYPES, check_abi, check_prototypes


def main(argv):
    if len(argv) < 1 or len(argv) % 2 != 1:
        print(__doc__, file=sys.stderr)
        return 2
    bad = check_abi(argv[0])
    opts = dict(zip(argv[1::2], argv[2::2]))
    if "--cc" in opts:
        found = check_prototypes(opts["--cc"], opts.get("--include-dirs", "").split("|"))
        bad += [f"prototype: {e}" for e in found]
        print(f"flashlab: {len(PROTOTYPES.strip().splitlines())} prototypes",
              "DIFFER from" if found else "match", "the C headers")
    for b in bad:
        print("ABI mismatch:", b)
    print("flashlab: structures and prototypes", "DIFFER from" if bad else "match", "the C headers")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
