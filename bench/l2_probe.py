#!/usr/bin/env python3
"""l2_probe.py: the L2 capacity that data read by every SM finds, measured (docs/third_party.md §6).

Runs bench/l2_probe (built from bench/l2_probe.cu) under Nsight Compute, --cache-control all
--clock-control none, and writes one CSV row per launch: the mode (shared: every SM reads the
whole buffer twice; private: each SM reads its own slice twice), the distinct bytes X, the DRAM
bytes read, and the L2 counters beside it.  Read twice, a buffer the L2 keeps costs X of DRAM
reads; one it cannot keep costs about 2X.  So dram_read / X against X shows the capacity each
pattern finds.  With --reduce, the modes are reduce (each SM adds to its own slice twice:
reductions, done in L2, leave the data dirty) and mixed (half the buffer reduced, half read, step
by step), and the lookups that missed are split by operation: whether the L2 keeps dirty data
longer than data that was only read.

  PYTHONPATH=scripts bench/l2_probe.py --probe PATH --out CSV [--ncu PATH] [--reduce] MIB ...
Exit status 2 with one line on bad input; 1 when ncu or the probe fails.
"""
import argparse
import csv
import datetime
import io
import os
import subprocess
import sys

from explain_kernels import find_ncu  # scripts/ on PYTHONPATH: the one place that finds ncu

METRICS = ["gpu__time_duration.sum", "dram__bytes_read.sum", "lts__t_sectors_srcunit_tex_op_read.sum",
           "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum", "lts__t_sectors_srcunit_ltcfabric.sum",
           "l1tex__m_xbar2l1tex_read_sectors.sum"]
# --reduce: the reductions and the lookups that missed, by operation and by where they came from
REDUCE_METRICS = ["lts__t_sectors_srcunit_tex_op_red.sum", "lts__t_sectors_srcunit_tex_op_red_lookup_miss.sum",
                  "lts__t_sectors_srcunit_ltcfabric_lookup_miss.sum",
                  "lts__t_sectors_srcunit_ltcfabric_op_read_lookup_miss.sum", "dram__bytes_write.sum"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--probe", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--ncu")
    ap.add_argument("--reduce", action="store_true", help="the reduce and mixed modes (dirty data against read data)")
    ap.add_argument("mib", nargs="+", type=int)
    a = ap.parse_args()
    if not (os.path.isfile(a.probe) and os.access(a.probe, os.X_OK)):
        print(f"l2_probe.py: --probe: {a.probe} is not an executable file", file=sys.stderr)
        sys.exit(2)
    if os.path.lexists(a.out):
        print(f"l2_probe.py: --out: {a.out} exists (choose a new path)", file=sys.stderr)
        sys.exit(2)
    ncu = find_ncu(a.ncu)
    if not ncu:
        print("l2_probe.py: no ncu on PATH or under /opt/nvidia/nsight-compute", file=sys.stderr)
        sys.exit(1)
    metrics = METRICS + (REDUCE_METRICS if a.reduce else [])
    cmd = [ncu, "--cache-control", "all", "--clock-control", "none", "--kernel-name", "regex:l2_probe_(sweep|reduce)",
           "--metrics", ",".join(metrics), "--csv", "--page", "raw", "--print-units", "base", a.probe] + \
        (["--reduce"] if a.reduce else []) + [str(m) for m in a.mib]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        print(f"l2_probe.py: ncu failed ({out.returncode}): {out.stderr.strip()[-400:]}", file=sys.stderr)
        sys.exit(1)
    launches, device, table = [], "", []
    for line in out.stdout.splitlines():
        if line.startswith("launch "):
            _, k, mode, nbytes = line.split()
            launches.append((mode, int(nbytes)))
        elif line.startswith("# device:"):
            device = line[2:]
        elif line.startswith('"'):
            table.append(line)
    rows = list(csv.DictReader(io.StringIO("\n".join(table))))
    rows = [r for r in rows if r.get("Kernel Name", "").startswith(("l2_probe_sweep", "l2_probe_reduce"))]
    if len(rows) != len(launches):
        print(f"l2_probe.py: ncu reported {len(rows)} launches, the probe made {len(launches)}", file=sys.stderr)
        sys.exit(1)
    ver = subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    tmp = a.out + ".part"
    with open(tmp, "x") as f:
        f.write(f"# l2_probe.csv: DRAM reads of two sweeps over X bytes, every SM reading all (shared) or its own "
                f"slice (private), or reducing its slice (reduce), or reducing half and reading half (mixed); "
                f"bench/l2_probe.py{' --reduce' if a.reduce else ''}\n# {device}\n# ncu: {ver}, --cache-control all --clock-control "
                f"none\n# date: {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}\n")
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["mode", "bytes", "dram_read_B", "dram_per_byte", "l2_read_B", "l2_read_miss_B", "fabric_B",
                    "sm_read_B", "time_us"] + (["red_B", "red_miss_B", "fabric_miss_B", "fabric_read_miss_B",
                                                "dram_write_B"] if a.reduce else []))
        for (mode, nbytes), r in zip(launches, rows):
            g = lambda m: float(r[m].replace(",", ""))
            sec = lambda m: int(round(g(m) * 32))
            dram = int(round(g("dram__bytes_read.sum")))
            w.writerow([mode, nbytes, dram, f"{dram / nbytes:.4f}", sec("lts__t_sectors_srcunit_tex_op_read.sum"),
                        sec("lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum"),
                        sec("lts__t_sectors_srcunit_ltcfabric.sum"), sec("l1tex__m_xbar2l1tex_read_sectors.sum"),
                        f"{g('gpu__time_duration.sum') / 1e3:.1f}"] +
                       ([sec("lts__t_sectors_srcunit_tex_op_red.sum"),
                         sec("lts__t_sectors_srcunit_tex_op_red_lookup_miss.sum"),
                         sec("lts__t_sectors_srcunit_ltcfabric_lookup_miss.sum"),
                         sec("lts__t_sectors_srcunit_ltcfabric_op_read_lookup_miss.sum"),
                         int(round(g("dram__bytes_write.sum")))] if a.reduce else []))
    os.replace(tmp, a.out)


if __name__ == "__main__":
    main()
