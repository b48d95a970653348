#!/usr/bin/env python3
"""ncu_speed_table.py: the same-bytes table (figures/data/gpu_ncu_same_bytes.csv, lab 10) from the
raw files of scripts/ncu_speed.sh.

    python3 scripts/ncu_speed_table.py RAW_DIR OUT_CSV

One row a configuration of kernels/ncu_speed.conf: its shape and tiles, its counted bytes (the
counters build, one head: counters.txt) and the model's, and Nsight Compute's numbers of one
launch over all heads (raw_<name>.csv).  Byte columns are bytes; *_pct are percentages; stall_*
are smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio: the warps stalled for that
reason, averaged over the cycles in which an instruction issued (ncu's "warp state" breakdown,
per issued instruction).  Writes atomically; exit 2 when a raw file is missing or incomplete."""
import pathlib
import re
import sys

from ncu_record import raw_kernels, write_table

COLUMNS = [  # (column, ncu raw metric or None when computed here)
    ("grid", "launch__grid_size"), ("block", "launch__block_size"),
    ("regs_per_thread", "launch__registers_per_thread"), ("smem_per_block_B", "launch__shared_mem_per_block"),
    ("duration_ns", "gpu__time_duration.sum"), ("sm_clock_hz", "gpc__cycles_elapsed.max.per_second"),
    ("sm_read_B", "l1tex__m_xbar2l1tex_read_sectors.sum"), ("l2_write_B", "lts__t_sectors_srcunit_tex_op_write.sum"),
    ("dram_read_B", "dram__bytes_read.sum"), ("dram_write_B", "dram__bytes_write.sum"),
    ("spill_inst", "sass__inst_executed_register_spilling"),
    ("inst_executed", "smsp__inst_executed.sum"), ("issue_active_pct", "smsp__issue_active.avg.pct_of_peak_sustained_active"),
    ("eligible_warps_per_cycle", "smsp__warps_eligible.avg.per_cycle_active"),
    ("warps_active_pct", "sm__warps_active.avg.pct_of_peak_sustained_active"),
    ("tensor_active_pct", "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"),
    ("hmma_inst_pct", "sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active"),
    ("gmma_inst_pct", "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active"),
]
SECTOR = {"sm_read_B", "l2_write_B"}  # sector counts, x 32 bytes
STALL = re.compile(r"^smsp__average_warps_issue_stalled_(\w+)_per_issue_active\.ratio$")
NAME = re.compile(r"^v(\d+)_d(\d+)_(\d+)x(\d+)_N(\d+)_c([01])$")


def fail(msg):
    print(f"ncu_speed_table: {msg}", file=sys.stderr)
    sys.exit(2)


def num(s):
    return float(s.replace(",", ""))


def main(argv):
    if len(argv) != 3:
        fail("usage: ncu_speed_table.py RAW_DIR OUT_CSV")
    raw, out = pathlib.Path(argv[1]), pathlib.Path(argv[2])
    cmd = dict(l.split(": ", 1) for l in (raw / "command.txt").read_text().splitlines() if ": " in l)
    counters = {}
    for line in (raw / "counters.txt").read_text().splitlines():
        name, rest = line.split(" ", 1)
        counters[name] = dict(kv.split("=") for kv in rest.split()[1:])
    rows, stalls = [], set()
    for name in counters:
        m = NAME.match(name)
        f = raw / f"raw_{name}.csv"
        if not m or not f.exists():
            fail(f"{f}: no ncu raw file for {name}")
        ks = raw_kernels(f)
        if len(ks) != 1:
            fail(f"{f}: expected one profiled kernel, found {len(ks)}")
        k = ks[0]
        v, d, br, bc, N, causal = map(int, m.groups())
        r = dict(version=v, kernel=k["Kernel Name"].split("<")[0].split("(")[0].split()[-1], dtype="fp16", d=d, Br=br, Bc=bc, N=N,
                 causal=causal)
        for col, met in COLUMNS:
            if met not in k or k[met] in ("", "n/a", "no data"):
                fail(f"{f}: no value for {met}")
            x = num(k[met])
            r[col] = int(x * 32) if col in SECTOR else (int(x) if x == int(x) else x)
        c = counters[name]
        for key in ("model_read", "model_write", "counter_read", "counter_write"):
            r[f"{key}_B_per_head"] = int(c[key])
        for met, val in k.items():
            s = STALL.match(met)
            if s:
                r[f"stall_{s.group(1)}"] = num(val)
                stalls.add(f"stall_{s.group(1)}")
        rows.append(r)
    for r in rows:  # heads: the counted bytes per head against ncu's over all heads (reads)
        r["heads"] = round(r["sm_read_B"] / r["counter_read_B_per_head"])
        r["gflop"] = 4.0 * r["heads"] * r["N"] ** 2 * r["d"] * (0.5 if r["causal"] else 1.0) / 1e9
        r["tflops"] = r["gflop"] / r["duration_ns"] * 1e6  # GFLOP / ns = 1e6 TFLOP/s
    head = ["version", "kernel", "dtype", "d", "Br", "Bc", "N", "heads", "causal", "model_read_B_per_head",
            "model_write_B_per_head", "counter_read_B_per_head", "counter_write_B_per_head", "gflop", "tflops"] + \
           [c for c, _ in COLUMNS] + sorted(stalls)
    write_table(out, ["ncu_speed_table.py: versions 7, 10 and 12 of the flash2 forward on the same tiles and shape: same bytes, different speed (lab 10)"]
                + [f"{key}: {cmd.get(key, 'unknown')}" for key in ("commit", "date", "gpu", "ncu", "ncu options", "command")]
                + ["counted bytes: flashlab-gpu run (counters build), one head; heads = sm_read_B / counter_read_B_per_head (ncu's launch covers every head)",
                   "sm_read_B = l1tex__m_xbar2l1tex_read_sectors.sum x 32 (every load into the SM: LSU and TMA); l2_write_B = lts__t_sectors_srcunit_tex_op_write.sum x 32 (spills included)",
                   "stall_*: smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio; tflops = gflop / duration (4 heads N^2 d, halved causal)"],
                head, sorted(rows, key=lambda r: (r["d"], r["version"])))
    print(f"ncu_speed_table: {len(rows)} rows -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
