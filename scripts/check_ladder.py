#!/usr/bin/env python3
"""check_ladder.py: the kernel ladder's one list, kernels/ladder/ladder.def, against the files it
names and the files that name its rungs.  Fails (exit 1, one line a problem) when:

  - a line is not FL_RUNG(NN, stem, lib, fwd, "what"), or the versions are not 1, 2, ... in order;
  - a rung's file kernels/ladder/<stem>.cu is missing, its stem does not start vNN_, or it does not
    define FL_V_NEEDS and FL_LADDER_FILE(NN, ...) with its own NN;
  - a .cu file in kernels/ladder/ is not on the list (CMake would refuse it too);
  - a backward rung (its table names a FL_*_BWD pass) has no forward rung (fwd), or its fwd is not
    an earlier forward rung of the same schedule; a forward rung names a fwd;
  - a measurement plan (kernels/ncu_versions.conf, ncu_speed.conf, ncu_record.conf,
    bench/ncu_heads.conf) names a version that is not a rung.

    PYTHONPATH=bench python3 scripts/check_ladder.py [ROOT]        # ROOT defaults to the repository root
    PYTHONPATH=bench python3 scripts/check_ladder.py --self-test   # plants each fault in a copy: each must be caught
"""
import os
import re
import shutil
import sys
import tempfile

import check_main  # scripts/, beside this file

import ladder   # bench/, on PYTHONPATH (ctest sets it)

PLANS = ("kernels/ncu_versions.conf", "kernels/ncu_speed.conf", "kernels/ncu_record.conf",
         "bench/ncu_heads.conf")  # first column: the version


def problems(root):
    """The problems of root's ladder, one line each."""
    try:
        rs = ladder.rungs(root)
    except (OSError, ValueError) as e:
        return [str(e)]
    bad = []
    if [r.version for r in rs] != list(range(1, len(rs) + 1)):
        bad.append(f"{ladder.DEF}: versions {[r.version for r in rs]}, not 1, 2, ... in order")
    by = {r.version: r for r in rs}
    passes = {}
    for r in rs:
        path = os.path.join(root, r.path)
        if not r.stem.startswith(f"v{r.version:02d}_"):
            bad.append(f"{ladder.DEF}: rung {r.version}'s file {r.stem}.cu does not start v{r.version:02d}_")
        if not os.path.isfile(path):
            bad.append(f"{ladder.DEF}: rung {r.version} names {r.path}, which does not exist")
            continue
        text = open(path, encoding="utf-8").read()
        if not re.search(r"^#define FL_V_NEEDS FL_NEED_\w+", text, re.M):
            bad.append(f"{r.path}: no #define FL_V_NEEDS")
        m = re.search(r"^FL_LADDER_FILE\((\d\d),", text, re.M)
        if not m or int(m.group(1)) != r.version:
            bad.append(f"{r.path}: FL_LADDER_FILE({m.group(1) if m else '?'}, ...), not its rung's {r.version:02d}")
        passes[r.version] = set(re.findall(r"&FL_(STANDARD|FLASH1|FLASH2)_(FWD|BWD)\b", text))
    listed = {r.stem + ".cu" for r in rs}
    for f in sorted(os.listdir(os.path.join(root, "kernels", "ladder"))):
        if f.endswith(".cu") and f not in listed:
            bad.append(f"kernels/ladder/{f}: not on {ladder.DEF} (add its FL_RUNG line)")
    for r in rs:
        ps = passes.get(r.version, set())
        if len(ps) != 1:
            bad.append(f"{r.path}: its table names {sorted(ps) or 'no'} schedule passes (attn.h's FL_*_FWD/_BWD), not one")
            continue
        (algo, pass_), = ps
        f = by.get(r.fwd)
        if pass_ == "FWD" and r.fwd:
            bad.append(f"{ladder.DEF}: rung {r.version} is a forward and names a forward rung ({r.fwd})")
        elif pass_ == "BWD" and (not f or f.version >= r.version or passes.get(f.version) != {(algo, "FWD")}):
            bad.append(f"{ladder.DEF}: rung {r.version} ({algo.lower()} backward) names forward rung {r.fwd}, "
                       f"not an earlier {algo.lower()} forward")
    for plan in PLANS:
        path = os.path.join(root, plan)
        if not os.path.isfile(path):
            continue
        for n, line in enumerate(open(path, encoding="utf-8"), 1):
            cols = line.split("#")[0].split()
            if cols and (not cols[0].isdigit() or int(cols[0]) not in by):
                bad.append(f"{plan}:{n}: version {cols[0]} is not a rung of {ladder.DEF}")
    return bad


def self_test(root):
    """Each planted fault, in a copy of root's kernels/, must be caught; the copy as it is must pass."""
    faults = {  # name: (plant, what the line that catches it says)
        "a file not on the list": (lambda d: shutil.copy(os.path.join(d, "kernels/ladder/v03_flash2_fwd.cu"),
                                                           os.path.join(d, "kernels/ladder/v14_copy.cu")), "not on"),
        "a listed file missing": (lambda d: os.remove(os.path.join(d, "kernels/ladder/v05_flash1_bwd.cu")),
                                  "does not exist"),
        "a version skipped": (lambda d: edit(d, ladder.DEF, "FL_RUNG(13, v13", "FL_RUNG(14, v13"), "not 1, 2, ..."),
        "FL_LADDER_FILE of another rung": (lambda d: edit(d, "kernels/ladder/v07_flash2_fwd_mma.cu", "FL_LADDER_FILE(07,",
                                                           "FL_LADDER_FILE(08,"), "not its rung's 07"),
        "a backward without its forward": (lambda d: edit(d, ladder.DEF, "v09_flash2_bwd_mma, 1, 3,",
                                                           "v09_flash2_bwd_mma, 1, 0,"), "names forward rung 0"),
        "a backward on another schedule's forward": (lambda d: edit(d, ladder.DEF, "v11_standard_bwd_mma, 1, 8,",
                                                                     "v11_standard_bwd_mma, 1, 7,"), "names forward rung 7"),
        "a plan naming no rung": (lambda d: append(d, "kernels/ncu_versions.conf", "14 flash2 fp16 4096 64 64 64 fwd ^x 0\n"),
                                  "version 14 is not a rung"),
        "a line that is no rung": (lambda d: edit(d, ladder.DEF, "FL_RUNG(02, v02_flash1_fwd, 0, 0,",
                                                  "FL_RUNG(02, v02_flash1_fwd, 0,"), "not FL_RUNG("),
    }
    bad = 0
    for name, (plant, says) in [("none", (None, None))] + list(faults.items()):
        with tempfile.TemporaryDirectory() as d:
            shutil.copytree(os.path.join(root, "kernels"), os.path.join(d, "kernels"))
            if plant:
                plant(d)
            found = problems(d)
            if not plant and found:
                bad += 1
                print(f"check_ladder self-test: the unchanged copy fails: {found}")
            elif plant and not any(says in f for f in found):
                bad += 1
                print(f"check_ladder self-test: {name}: not caught for its reason ('{says}'): {found}")
            elif plant:
                print(f"caught ({name}): {next(f for f in found if says in f)}")
    print(f"check_ladder self-test: {len(faults)} planted faults, {len(faults) - bad} caught" if not bad
          else f"check_ladder self-test: {bad} failures")
    return 1 if bad else 0


def edit(d, rel, old, new):
    p = os.path.join(d, rel)
    s = open(p, encoding="utf-8").read()
    if old not in s:
        raise RuntimeError(f"self-test: {rel} no longer has {old!r}")
    open(p, "w", encoding="utf-8").write(s.replace(old, new, 1))


def append(d, rel, text):
    with open(os.path.join(d, rel), "a", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    sys.exit(check_main.main(sys.argv, __doc__, problems, self_test,
                             lambda root, bad: f"check_ladder: {len(ladder.rungs(root)) if not bad else '?'} rungs, "
                                               f"{len(bad)} problems"))
