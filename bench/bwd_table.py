#!/usr/bin/env python3
"""bwd_table.py: the backward's median times a shape from gpu_sdpa.py's CSVs, our versions beside
SDPA's cuDNN and FlashAttention-2 backends, and each version's time against cuDNN's and against the
first version's (no GPU).

  python3 bench/bwd_table.py RUN.csv [RUN2.csv ...] --versions 13,14,15

For each run, one table: a row a shape (dtype, d, N, causal) of the backward, the median ms of
every version and backend, then `vV vs cuDNN` (cuDNN's ms over version V's: above 1, V is faster)
for each version and `vV vs vFIRST` (the first version's ms over V's); then per version the least and the
greatest ratio to cuDNN over the shapes.  Only accurate rows count (sdpa_rules.recompute: rel_err
and the max-error columns); an inaccurate or missing cell is "—".  Bad input (a missing file, a
CSV of another kind, no --versions): one line, exit 2.
"""
import csv
import sys

import sdpa_rules

BACKENDS = ("sdpa-cudnn", "sdpa-fa2")


def fail(msg):
    print(f"bwd_table.py: {msg}", file=sys.stderr)
    sys.exit(2)


def load(path):
    """The backward rows of a gpu_sdpa.py CSV, with acc_ok recomputed from the raw columns."""
    try:
        with open(path) as f:
            rows = list(csv.DictReader(l for l in f if not l.startswith("#")))
    except OSError as e:
        fail(f"{path}: cannot read ({e.strerror})")
    if not rows or not {"impl", "pass", "dtype", "d", "N", "causal", "median_ms", "rel_err"} <= set(rows[0]):
        fail(f"{path}: not a gpu_sdpa.py CSV")
    derived = sdpa_rules.recompute(rows)
    return [(r, derived[id(r)]) for r in rows if r["pass"] == "bwd"]


def table(path, versions):
    """The lines of one run's table (see the module's doc)."""
    impls = [f"ours-v{v}-flash2" for v in versions] + list(BACKENDS)
    ms = {}
    for r, d in load(path):
        t = sdpa_rules.num(r["median_ms"])
        if r["impl"] in impls and d["acc_ok"] and t:
            k = sdpa_rules.shape_key(r)[:4]
            ms.setdefault(k, {})
            ms[k][r["impl"]] = min(t, ms[k].get(r["impl"], t))
    names = [f"v{v}" for v in versions] + ["cuDNN", "FA2"]
    out = [f"{path}: backward median ms (accurate rows)",
           "| dtype | d | N | causal | " + " | ".join(names + [f"v{v} vs cuDNN" for v in versions]
                                                     + [f"v{v} vs v{versions[0]}" for v in versions[1:]]) + " |"]
    lo = {v: [] for v in versions}
    for k in sorted(ms):
        m = ms[k]
        cells = [f"{m[i]:.3f}" if i in m else "—" for i in impls]
        ratio = lambda a, b: f"{m[a] / m[b]:.3f}" if a in m and b in m else "—"
        for v in versions:
            if f"ours-v{v}-flash2" in m and "sdpa-cudnn" in m:
                lo[v].append(m["sdpa-cudnn"] / m[f"ours-v{v}-flash2"])
        cells += [ratio("sdpa-cudnn", f"ours-v{v}-flash2") for v in versions]
        cells += [ratio(f"ours-v{versions[0]}-flash2", f"ours-v{v}-flash2") for v in versions[1:]]
        out.append(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | " + " | ".join(cells) + " |")
    for v in versions:
        out.append(f"v{v} vs cuDNN: " + (f"{min(lo[v]):.3f}-{max(lo[v]):.3f}x over {len(lo[v])} shapes" if lo[v] else "no shapes"))
    return out


def main():
    args = sys.argv[1:]
    if "--versions" not in args or args.index("--versions") + 1 >= len(args):
        fail("usage: bwd_table.py RUN.csv [RUN2.csv ...] --versions 13,14,15")
    i = args.index("--versions")
    try:
        versions = [int(v) for v in args[i + 1].split(",")]
    except ValueError:
        fail(f"--versions {args[i + 1]}: comma-separated version numbers")
    del args[i:i + 2]
    if not args:
        fail("no CSV named")
    for path in args:
        print("\n".join(table(path, versions)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
