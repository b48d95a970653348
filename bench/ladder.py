"""ladder.py: the kernel ladder as the scripts read it, from its one list, kernels/ladder/ladder.def
(the C preprocessor reads the same lines in attn.h, the harness and the fast library; CMake reads
them in kernels/CMakeLists.txt).

    import ladder
    for r in ladder.rungs():          # in order: Rung(version, stem, lib, fwd, what)
        print(r.version, r.path, r.what)

A line is FL_RUNG(NN, stem, lib, fwd, "what"); comments and the closing #undef are skipped, and any
other line is an error (ValueError naming the file and line).
"""
import collections
import os
import re

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
DEF = os.path.join("kernels", "ladder", "ladder.def")
LINE = re.compile(r'^FL_RUNG\((\d\d), *([A-Za-z0-9_]+), *([01]), *(\d+), *"((?:[^"\\]|\\.)*)"\)\s*$')


class Rung(collections.namedtuple("Rung", "version stem lib fwd what")):
    """One rung: version (int), stem (its file kernels/ladder/<stem>.cu), lib (in
    libflashlab_kernels.so), fwd (a backward's forward rung, 0 for a forward), what (one line)."""

    @property
    def path(self):
        return os.path.join("kernels", "ladder", self.stem + ".cu")


def rungs(root=ROOT):
    """The rungs of root's kernels/ladder/ladder.def, in its order."""
    return rungs_of(os.path.join(root, DEF))


def rungs_of(path):
    """The rungs of the list file at path, in its order."""
    out, in_comment = [], False
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            s = line.strip()
            if in_comment or s.startswith("/*"):
                in_comment = "*/" not in s
                continue
            if not s or s == "#undef FL_RUNG":
                continue
            m = LINE.match(s)
            if not m:
                raise ValueError(f"{path}:{n}: not FL_RUNG(NN, stem, lib, fwd, \"what\"): {s}")
            out.append(Rung(int(m.group(1)), m.group(2), m.group(3) == "1", int(m.group(4)), m.group(5)))
    return out


def versions(root=ROOT, lib=None):
    """The version numbers of the ladder (lib True: only those in libflashlab_kernels.so)."""
    return [r.version for r in rungs(root) if lib is None or r.lib == lib]
