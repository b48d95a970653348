#!/usr/bin/env python3
"""check_layers.py: prints the include graph of flashlab by module and fails on a circle or on an
import that points the wrong way (docs/architecture.md states the rule).

    python3 scripts/check_layers.py [ROOT]          # ROOT defaults to the repository root

Modules and their layers (a file may include its own module and modules of a lower layer only):

    0 base        include/flashlab/{status,args,rng,footprint,output}.h, src/base/
    1 machine     include/flashlab/{machine,ops}.h, src/machine/
    1 mask        include/flashlab/{masks,heads,blocksparse_mask}.h, src/mask/
    1 reference   reference/            (the oracle: it may include base only)
    2 problem     include/flashlab/problem.h, src/problem/
    3 schedules   include/flashlab/{schedule,decode}.h, src/schedules/
    4 run         include/flashlab/run.h, src/run/
    5 analysis    every other include/flashlab/*.h, src/analysis/  (the only module with GSL)
    6 cli         cli/
    7 consumers   tests/, fuzz/, kernels/, notebooks/, bench/

Further rules: only run and the layers above it include the reference (the schedules never see
their oracle); kernels/ and notebooks/ reach the library through include/flashlab only (no
private header of src/); <gsl/...> is included by the analysis module alone.  Exit status 1
with one line per violation, 0 when the graph is clean; 2 for bad arguments.
"""
import os
import re
import sys

LAYER = {"base": 0, "machine": 1, "mask": 1, "reference": 1, "problem": 2, "schedules": 3,
         "run": 4, "analysis": 5, "cli": 6, "consumers": 7}
PUBLIC = {"status": "base", "args": "base", "rng": "base", "footprint": "base",
          "machine": "machine", "ops": "machine",
          "output": "base", "masks": "mask", "heads": "mask", "blocksparse_mask": "mask",
          "problem": "problem", "schedule": "schedules", "decode": "schedules",
          "run": "run"}
SOURCES = (".c", ".h", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def module_of(rel):
    parts = rel.split("/")
    if parts[0] == "include" and len(parts) == 3 and parts[1] == "flashlab":
        return PUBLIC.get(os.path.splitext(parts[2])[0], "analysis")
    if parts[0] == "src" and len(parts) >= 3:
        return parts[1] if parts[1] in LAYER else None
    if parts[0] == "reference":
        return "reference"
    if parts[0] == "cli":
        return "cli"
    if parts[0] in ("tests", "fuzz", "kernels", "notebooks", "bench"):
        return "consumers"
    return None


def files(root):
    for top in ("include", "src", "reference", "cli", "tests", "fuzz", "kernels", "notebooks", "bench"):
        for d, dirs, names in os.walk(os.path.join(root, top)):
            dirs[:] = [x for x in dirs if not x.startswith(".") and x not in ("corpus", "golden")]
            for n in names:
                if n.endswith(SOURCES):
                    yield os.path.relpath(os.path.join(d, n), root).replace(os.sep, "/")


def resolve(root, rel, kind, name):
    """The repository file an include names, or None for a system header."""
    here = os.path.dirname(rel)
    cands = []
    if kind == '"':
        cands.append(os.path.normpath(os.path.join(here, name)))
    if name.startswith("flashlab/"):
        cands.append("include/" + name)
    if rel.startswith("tests/"):
        cands.append("tests/support/" + name)   # the tests' shared headers (tests/CMakeLists.txt)
    cands += ["include/flashlab/" + name, "src/" + name, "reference/" + name]
    for c in cands:
        c = c.replace(os.sep, "/")
        if os.path.isfile(os.path.join(root, c)):
            return c
    return None


def main(argv):
    if len(argv) > 2 or (len(argv) == 2 and not os.path.isdir(argv[1])):
        print("usage: check_layers.py [ROOT]", file=sys.stderr)
        return 2
    root = argv[1] if len(argv) == 2 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    graph, bad, edges = {}, [], {}
    for rel in sorted(files(root)):
        src = module_of(rel)
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            text = f.read()
        graph.setdefault(rel, [])
        for kind, name in INCLUDE.findall(text):
            if name.startswith("gsl/") and src not in ("analysis", "consumers"):
                bad.append(f"{rel}: includes <{name}>: GSL belongs to the analysis module only")
            tgt = resolve(root, rel, kind, name)
            if tgt is None:
                continue
            graph[rel].append(tgt)
            dst = module_of(tgt)
            if src is None or dst is None:
                continue
            if src != dst:
                edges[(src, dst)] = edges.get((src, dst), 0) + 1
            if src == dst:
                continue
            if src == "reference" and dst != "base":
                bad.append(f"{rel}: the reference includes {tgt} ({dst}); it may include base only")
            elif dst == "reference" and LAYER[src] < LAYER["run"]:
                bad.append(f"{rel}: {src} includes the reference ({tgt}); only run and above may")
            elif LAYER[dst] >= LAYER[src] and dst != "reference":
                bad.append(f"{rel}: {src} (layer {LAYER[src]}) includes {tgt} ({dst}, layer "
                           f"{LAYER[dst]}): imports point down")
            if rel.startswith(("kernels/", "notebooks/")) and tgt.startswith("src/"):
                bad.append(f"{rel}: reaches a private header {tgt}; use include/flashlab")
    # circles between files
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in graph.get(n, []):
            if state.get(m) == 1:
                bad.append("include circle: " + " -> ".join(stack[stack.index(m):] + [m]))
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = 2

    sys.setrecursionlimit(10000)
    for n in sorted(graph):
        if n not in state:
            visit(n)
    print("include graph by module (edges: files' includes):")
    for (a, b), n in sorted(edges.items(), key=lambda e: (LAYER[e[0][0]], e[0][0], LAYER[e[0][1]], e[0][1])):
        print(f"  {a:>9} -> {b:<9} {n}")
    for line in bad:
        print("check_layers: " + line)
    print(f"check_layers: {len(graph)} files, {len(bad)} violation(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
