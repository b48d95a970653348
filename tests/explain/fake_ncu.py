#!/usr/bin/env python3
"""fake_ncu.py: a stand-in for Nsight Compute, for the CPU tests of scripts/explain_kernels.py.

Answers --version and --query-metrics like ncu; otherwise runs the program given after its options
with FAKE_NCU_KERNELS set to a file in which the program lists the kernels it "launched" (one JSON
object a line: name, grid, block, smem, regs, and any metric values), then writes those kernels as
`ncu --csv --page raw --print-units base` would, to --log-file.  Metrics the program does not give
are written as 0.  A metric named in $FAKE_NCU_UNKNOWN makes it fail as ncu does on an unknown metric.
"""
import csv
import json
import os
import subprocess
import sys
import tempfile

TAKES_VALUE = {"--cache-control", "--clock-control", "--replay-mode", "--metrics", "--page", "--print-units",
               "--log-file", "--kernel-name", "--profile-from-start", "--launch-count", "--chip"}


def main(argv):
    if argv[:1] == ["--version"]:
        print("NVIDIA (R) Nsight Compute Command Line Profiler\nVersion fake.0")
        return 0
    if argv[:1] == ["--query-metrics"]:
        print("Metric Name   Metric Type   Metric Unit   Metric Description")
        for m in os.environ.get("FAKE_NCU_METRICS", "").split(","):
            if m:
                print(f"{m.split('.')[0]}   Counter   sector   a metric")
        return 0
    opts, i = {}, 0
    while i < len(argv) and argv[i].startswith("--"):
        if argv[i] in TAKES_VALUE:
            opts[argv[i]] = argv[i + 1]
            i += 2
        else:
            opts[argv[i]] = True
            i += 1
    metrics = opts["--metrics"].split(",")
    unknown = [m for m in os.environ.get("FAKE_NCU_UNKNOWN", "").split(",") if m in metrics]
    log = opts.get("--log-file")
    if unknown:
        msg = f"==ERROR== Failed to find metric {unknown[0]}\n"
        open(log, "w").write(msg) if log else sys.stdout.write(msg)
        return 1
    kfile = tempfile.mktemp(prefix="fake_ncu_")
    rc = subprocess.run(argv[i:], env=dict(os.environ, FAKE_NCU_KERNELS=kfile)).returncode
    kernels = [json.loads(l) for l in open(kfile)] if os.path.exists(kfile) else []
    head = ["ID", "Process ID", "Kernel Name", "Grid Size", "Block Size"] + metrics
    out = [head, [""] * 5 + ["unit"] * len(metrics)]
    for n, k in enumerate(kernels):
        g, b = k.get("grid", [1, 1, 1]), k.get("block", [128, 1, 1])
        vals = dict(k.get("metrics", {}))
        vals.update({"launch__grid_dim_x": g[0], "launch__grid_dim_y": g[1], "launch__grid_dim_z": g[2],
                     "launch__block_dim_x": b[0], "launch__block_dim_y": b[1], "launch__block_dim_z": b[2],
                     "launch__shared_mem_per_block_dynamic": k.get("smem", 0),
                     "launch__registers_per_thread": k.get("regs", 32)})
        out.append([str(n), "1", k["name"], str(tuple(g)), str(tuple(b))] +
                   [f"{vals.get(m, 0):,}" if isinstance(vals.get(m, 0), int) else str(vals.get(m, 0)) for m in metrics])
    f = open(log, "w") if log else sys.stdout
    f.write("==PROF== Connected to process 1\n")
    w = csv.writer(f, quoting=csv.QUOTE_ALL)
    for r in out:
        w.writerow(r)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
