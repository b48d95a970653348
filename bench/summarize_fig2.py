#!/usr/bin/env python3
"""summarize_fig2.py: the paper's Figure 2 table from bench/fig2.py's CSV (no GPU needed).

  python3 bench/summarize_fig2.py figures/data/gpu_fig2.csv

Standard attention = our materializing kernels (forward version 8, backward version 11);
FlashAttention = our tiled kernels (forward version 10, backward version 9); for each, the
fastest tile measured.  Beside the paper's A100 numbers (Dao et al. 2022, Figure 2 left).
"""
import csv
import sys

PAPER = {"standard": (66.6, 40.3, 41.7), "tiled": (75.2, 4.4, 7.3)}  # GFLOPs, GB, ms (fwd + bwd)


def main():
    if len(sys.argv) != 2:
        print("usage: summarize_fig2.py gpu_fig2.csv", file=sys.stderr)
        return 2
    need = {"version", "pass", "Br", "Bc", "gflop", "median_ms", "model_bytes", "counter_bytes", "ncu_dram_read",
            "ncu_dram_write", "ncu_l2_read", "ncu_l2_write"}
    try:
        with open(sys.argv[1]) as f:
            rows = list(csv.DictReader(l for l in f if not l.startswith("#")))
    except OSError as e:
        print(f"summarize_fig2: {sys.argv[1]}: cannot read ({e.strerror})", file=sys.stderr)
        return 2
    if not rows or not need <= set(rows[0]):
        print(f"summarize_fig2: {sys.argv[1]}: not a fig2.py CSV (needs columns {', '.join(sorted(need))})", file=sys.stderr)
        return 2

    def fastest(version):
        sel = [r for r in rows if r["version"] == str(version)]
        return min(sel, key=lambda r: float(r["median_ms"])) if sel else None

    print("| attention | pass | kernel (tile) | GFLOP | runtime ms | HBM GB: model = counters | HBM GB: ncu DRAM R+W |"
          " SM<->L2 GB: ncu | paper A100 (fwd+bwd): GFLOPs, GB, ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, fv, bv in (("standard", 8, 11), ("tiled", 10, 9)):
        tot = [0.0] * 5
        for pass_, v in (("fwd", fv), ("bwd", bv)):
            r = fastest(v)
            if not r:
                continue
            vals = (float(r["gflop"]), float(r["median_ms"]), float(r["model_bytes"]) / 1e9,
                    (float(r["ncu_dram_read"]) + float(r["ncu_dram_write"])) / 1e9,
                    (float(r["ncu_l2_read"]) + float(r["ncu_l2_write"])) / 1e9)
            if r["counter_bytes"] != r["model_bytes"]:
                print(f"summarize_fig2: counters {r['counter_bytes']} != model {r['model_bytes']} for v{v}", file=sys.stderr)
            tot = [a + b for a, b in zip(tot, vals)]
            print(f"| {name} | {pass_} | v{v} ({r['Br']}x{r['Bc']}) | {vals[0]:.1f} | {vals[1]:.3f} | {vals[2]:.2f} | "
                  f"{vals[3]:.2f} | {vals[4]:.2f} | |")
        p = PAPER[name]
        print(f"| {name} | fwd+bwd | | {tot[0]:.1f} | **{tot[1]:.2f}** | **{tot[2]:.2f}** | **{tot[3]:.2f}** | {tot[4]:.2f} |"
              f" {p[0]} GFLOPs, {p[1]} GB, {p[2]} ms |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
