#!/usr/bin/env python3
"""check_layers.py: prints the include graph of flashlab by module and fails on a circle or on an
import that points the wrong way (docs/architecture.md states the rule).

    python3 scripts/check_layers.py [ROOT]          # ROOT defaults to the repository root

Modules and their layers (a file may include its own module and modules of a lower layer only):

    0 base        include/flashlab/{status,fields,rng,footprint,footprint_split,output,version}.h, src/base/
    1 machine     include/flashlab/{machine,ops}.h, src/machine/
    1 mask        include/flashlab/{masks,heads,blocksparse_mask}.h, src/mask/
    1 reference   reference/            (the oracle: it may include base only)
    2 problem     include/flashlab/{problem,bounds}.h, src/problem/
    3 schedules   include/flashlab/{schedule,decode}.h, src/schedules/
    4 run         include/flashlab/run.h, src/run/
    5 analysis    every other include/flashlab/*.h, src/analysis/  (the only module with GSL)
    6 cli         cli/
    7 consumers   tests/, fuzz/, kernels/, notebooks/, bench/

Further rules: only run and the layers above it include the reference (the schedules never see
their oracle); kernels/ and notebooks/ reach the library through include/flashlab only (no
private header of src/); <gsl/...> is included by the analysis module alone; no test includes a
.c file (tests link the objects they test).

Every list once: the schedule registry is the only list of schedules.  Outside src/schedules/,
the library (src/, include/flashlab/ but schedule.h, where the positions are declared for the
schedules' own tests), the CLI (cli/) and the Python binding (python/flashlab/__init__.py) never name a
schedule -- no FL_ALGO_<NAME> enumerator, no string literal that is a registered name -- but ask
the registry (by name from the user, by role, by list).  Exempt, each naming what it describes:
the worked examples of the seeds (src/analysis/examples*.c), which illustrate named schedules as
the docs do, and the GPU order of the readable kernels (src/analysis/gpu_order.c), which mirrors
the launch code of the kernel ladder's first rungs, each written for one schedule.  Tests and
fuzzers may name the schedule they test, but never type a list of schedules (two or more
enumerators in one array or struct initializer, or an enumerator as a loop bound): they iterate
the registry.

Exit status 1 with one line per violation, 0 when the graph is clean; 2 for bad arguments.
"""
import os
import re
import sys

LAYER = {"base": 0, "machine": 1, "mask": 1, "reference": 1, "problem": 2, "schedules": 3,
         "run": 4, "analysis": 5, "cli": 6, "consumers": 7}
PUBLIC = {"status": "base", "fields": "base", "rng": "base", "footprint": "base", "footprint_split": "base",
          "version": "base",
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


SCHED_NAME = re.compile(r'\.name\s*=\s*"([^"]+)"')
ENUMERATOR = re.compile(r"\bFL_ALGO_([A-Z][A-Z0-9_]*)\b")
NOT_SCHEDULES = {"MAX", "DEFAULT"}   # FL_ALGO_MAX, FL_ALGO_DEFAULT: not a schedule's name
C_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
PY_STRING = re.compile(r"""(?<![A-Za-z0-9_])(?:"([^"\\\n]*)"|'([^'\\\n]*)')""")
EXEMPT = ("include/flashlab/schedule.h", "src/analysis/gpu_order.c")
TEST_INCLUDE_C = re.compile(r'^\s*#\s*include\s*[<"][^>"]+\.c[>"]', re.M)


def registered_names(root):
    """The names of the registered schedules: every descriptor's .name in src/schedules/."""
    names = set()
    d = os.path.join(root, "src", "schedules")
    for n in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if n.endswith(".c"):
            with open(os.path.join(d, n), encoding="utf-8", errors="replace") as f:
                names.update(SCHED_NAME.findall(f.read()))
    return names


def strip_c_comments(text):
    """C source without its comments (strings kept), so prose that names a schedule is free."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            out.append(" ")
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"' and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def schedule_names_used(root, rel, text, names):
    """The violations of 'every list once' in one file (see the module's docstring)."""
    bad = []
    library = (rel.startswith(("src/", "cli/", "include/flashlab/")) and not rel.startswith("src/schedules/")
               and rel not in EXEMPT and not os.path.basename(rel).startswith("examples"))
    if rel.endswith(".py"):
        if rel != "python/flashlab/__init__.py":
            return bad
        code = "\n".join(l.split("#")[0] if '"' not in l.split("#")[0] and "'" not in l.split("#")[0] else l
                         for l in text.splitlines())
        doc = re.compile(r'"""[\s\S]*?"""')
        code = doc.sub("", code)
        for m in PY_STRING.finditer(code):
            s = m.group(1) if m.group(1) is not None else m.group(2)
            if s in names:
                bad.append(f"{rel}: names the schedule '{s}': ask the library (by role, by list)")
        return bad
    code = strip_c_comments(text)
    if library:
        for m in ENUMERATOR.finditer(code):
            if m.group(1) not in NOT_SCHEDULES:
                bad.append(f"{rel}: uses FL_ALGO_{m.group(1)}: outside src/schedules/ ask the registry")
        for m in C_STRING.finditer(code):
            if m.group(1) in names:
                bad.append(f'{rel}: names the schedule "{m.group(1)}": outside src/schedules/ ask the registry')
    elif rel.startswith(("tests/", "fuzz/")):
        for m in re.finditer(r"=\s*\{([^{}]*)\}", code):  # an initializer: an array or a struct
            used = {e for e in ENUMERATOR.findall(m.group(1)) if e not in NOT_SCHEDULES}
            if len(used) >= 2:
                bad.append(f"{rel}: types a list of schedules ({', '.join('FL_ALGO_' + e for e in sorted(used))}): "
                           "iterate the registry (fl_algos_all, fl_algos_with)")
        for m in re.finditer(r"[<>]=?\s*\(?\s*FL_ALGO_([A-Z][A-Z0-9_]*)", code):
            if m.group(1) not in NOT_SCHEDULES:
                bad.append(f"{rel}: bounds a loop by FL_ALGO_{m.group(1)}: iterate the registry")
    return bad


def main(argv):
    if len(argv) > 2 or (len(argv) == 2 and not os.path.isdir(argv[1])):
        print("usage: check_layers.py [ROOT]", file=sys.stderr)
        return 2
    root = argv[1] if len(argv) == 2 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    graph, bad, edges = {}, [], {}
    names = registered_names(root)
    binding = os.path.join(root, "python/flashlab/__init__.py")
    if os.path.isfile(binding):
        with open(binding, encoding="utf-8", errors="replace") as f:
            bad += schedule_names_used(root, "python/flashlab/__init__.py", f.read(), names)
    for rel in sorted(files(root)):
        src = module_of(rel)
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            text = f.read()
        bad += schedule_names_used(root, rel, text, names)
        if rel.startswith("tests/") and TEST_INCLUDE_C.search(text):
            bad.append(f"{rel}: includes a .c file: link the object it tests")
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
