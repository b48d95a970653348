#!/usr/bin/env python3
"""ncu_orders_table.py: Nsight Compute's traffic of version 12 with causal masks, in two tile orders,
beside the launch model's prediction of the same launch (`flashlab l2 --launch fwd-q`).

    python3 scripts/ncu_orders_table.py FLASHLAB_CLI RAW_DIR OUT_CSV

RAW_DIR holds command.txt and ncu_<order>_d<d>_N<N>.csv (ncu --page raw, one launch of
bench/run_forward.py: fp16, Br = Bc = 128, causal), order `pick` (the launch's choice: a
persistent grid of 132 CTAs, static round robin over pairs of tiles: `--persistent 132 --static
--pairs`) or `c0` (the kernel of commit 5692d57 built with -DFL_V12_CAUSAL=0, a switch the
kernel no longer has: a CTA a tile, a head's tiles longest first: `--longest-first`).  The heads of each N are the benchmark's (bench/gpu_sdpa.py).  Writes
atomically; exit 2 on a missing or incomplete file."""
import pathlib
import re
import subprocess
import sys

from ncu_record import raw_kernels, write_table

HEADS = {1024: 1024, 4096: 128, 12000: 48, 16384: 32}
ORDER = {"pick": ["--persistent", "132", "--static", "--pairs"], "c0": ["--longest-first"]}
NAME = re.compile(r"^ncu_(pick|c0)_d(\d+)_N(\d+)\.csv$")


def fail(msg):
    print(f"ncu_orders_table: {msg}", file=sys.stderr)
    sys.exit(2)


def main(argv):
    if len(argv) != 4:
        fail("usage: ncu_orders_table.py FLASHLAB_CLI RAW_DIR OUT_CSV")
    cli, raw, out = argv[1], pathlib.Path(argv[2]), pathlib.Path(argv[3])
    prov = [l for l in (raw / "command.txt").read_text().splitlines() if l.strip()]
    rows = []
    for f in sorted(raw.glob("ncu_*.csv")):
        m = NAME.match(f.name)
        if not m:
            continue
        order, d, N = m.group(1), int(m.group(2)), int(m.group(3))
        ks = raw_kernels(f)
        if len(ks) != 1:
            fail(f"{f}: expected one profiled kernel, found {len(ks)}")
        k = {a: b.replace(",", "") for a, b in ks[0].items()}
        args = [cli, "l2", "--launch", "fwd-q", "--batch", "1", "--heads", str(HEADS[N]), "--N", str(N), "--d", str(d),
                "--Br", "128", "--Bc", "128", "--causal", "--format", "csv"] + ORDER[order]
        p = subprocess.run(args, capture_output=True, text=True)
        if p.returncode != 0:
            fail(f"{' '.join(args[1:])}: {p.stderr.strip()}")
        model = dict(zip(*[l.split(",") for l in p.stdout.strip().splitlines() if not l.startswith("#")]))
        dram = float(k["dram__bytes_read.sum"])
        rows.append(dict(order=order, dtype="fp16", d=d, N=N, heads=HEADS[N], Br=128, Bc=128, causal=1,
                         grid=int(float(k["launch__grid_size"])), duration_ns=int(float(k["gpu__time_duration.sum"])),
                         ncu_sm_read_B=int(float(k["l1tex__m_xbar2l1tex_read_sectors.sum"]) * 32),
                         model_sm_read_B=int(model["sm_read_B"]), ncu_dram_read_B=int(dram),
                         model_dram_read_B=int(model["dram_read_B"]), dram_ratio=f"{dram / int(model['dram_read_B']):.4f}",
                         ncu_dram_write_B=int(float(k["dram__bytes_write.sum"])), model_args=" ".join(args[2:])))
    if not rows:
        fail(f"{raw}: no ncu_<order>_d<d>_N<N>.csv files")
    write_table(out, ["version 12, causal, two tile orders: Nsight Compute's traffic of one launch beside the launch model's prediction (flashlab l2 --launch fwd-q, model_args)"]
                + prov + ["dram_ratio = ncu_dram_read_B / model_dram_read_B; sm_read = l1tex__m_xbar2l1tex_read_sectors.sum x 32"],
                list(rows[0]), rows)
    print(f"ncu_orders_table: {len(rows)} rows -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
