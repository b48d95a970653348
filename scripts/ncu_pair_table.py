#!/usr/bin/env python3
"""ncu_pair_table.py: our kernel beside an SDPA backend's under Nsight Compute (ncu --page raw
of bench/profile_pair.py, one launch each), as one long table: shape, kernel, metric, value.

    python3 scripts/ncu_pair_table.py RAW_DIR OUT_CSV

RAW_DIR holds command.txt and pair_d<d>_N<N>_c<causal>.csv (or op_...csv).  Kept: the launch
(grid, block, registers, shared memory), time and cycles, instructions, issue and tensor-pipe
activity, eligible and active warps, every stall reason
(smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio, named stall_<reason>), and the
warp instructions executed per SASS opcode when the run collected sass__inst_executed_per_opcode
with --print-metric-instances details (named opcode_<OP>).
Writes atomically; exit 2 on a missing or incomplete file."""
import pathlib
import re
import sys

from ncu_record import raw_kernels, write_table

KEEP = {"launch__grid_size": "grid", "launch__block_size": "block", "launch__registers_per_thread": "regs_per_thread",
        "launch__shared_mem_per_block": "smem_per_block_B", "gpu__time_duration.sum": "duration_ns",
        "gpc__cycles_elapsed.max": "cycles_elapsed", "sm__cycles_active.avg": "sm_cycles_active",
        "smsp__inst_executed.sum": "inst_executed", "smsp__issue_active.avg.pct_of_peak_sustained_active": "issue_active_pct",
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active": "tensor_active_pct",
        "smsp__warps_eligible.avg.per_cycle_active": "eligible_warps_per_cycle",
        "sm__warps_active.avg.pct_of_peak_sustained_active": "warps_active_pct"}
STALL = re.compile(r"^smsp__average_warps_issue_stalled_(\w+)_per_issue_active\.ratio$")
NAME = re.compile(r"^(?:pair|op)_d(\d+)_N(\d+)_c([01])\.csv$")
OPCODES = re.compile(r"([A-Z0-9_.]+):\s*([\d,]+)")


def main(argv):
    if len(argv) != 3:
        print("usage: ncu_pair_table.py RAW_DIR OUT_CSV", file=sys.stderr)
        return 2
    raw, out = pathlib.Path(argv[1]), pathlib.Path(argv[2])
    prov = [l for l in (raw / "command.txt").read_text().splitlines() if l.strip()]
    rows = []
    for f in sorted(raw.glob("*.csv")):
        m = NAME.match(f.name)
        if not m:
            continue
        ks = raw_kernels(f)
        if len(ks) < 2:
            print(f"ncu_pair_table: {f}: expected two kernels", file=sys.stderr)
            return 2
        for k in ks:
            name = k["Kernel Name"].split("(")[0].replace("void ", "").split("<")[0]
            for op, n in OPCODES.findall(k.get("sass__inst_executed_per_opcode", "")):
                rows.append(dict(d=m.group(1), N=m.group(2), causal=m.group(3), kernel=name, metric=f"opcode_{op}",
                                 value=n.replace(",", "")))
            for met, val in k.items():
                s = STALL.match(met)
                col = KEEP.get(met) or (f"stall_{s.group(1)}" if s else None)
                if col:
                    rows.append(dict(d=m.group(1), N=m.group(2), causal=m.group(3), kernel=name, metric=col,
                                     value=val.replace(",", "")))
    write_table(out, ["our kernel beside SDPA cuDNN's under Nsight Compute, one launch each (bench/profile_pair.py --backend cudnn; fp16, 16 heads a batch; scripts/ncu_pair_table.py)"]
                + prov, ["d", "N", "causal", "kernel", "metric", "value"], rows)
    print(f"ncu_pair_table: {len(rows)} rows -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
