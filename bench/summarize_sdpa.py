#!/usr/bin/env python3
"""summarize_sdpa.py: the tables of docs/performance.md from gpu_sdpa.py's CSVs (no GPU).

  python3 bench/summarize_sdpa.py figures/data/gpu_sdpa.csv [figures/data/gpu_sdpa_run1.csv] [--version V]

--version V: "ours" is version V's kernels only (default: the best of any version).  A CSV with no
backward rows at all (gpu_sdpa.py --no-bwd) gets forward-only tables ("—" in the backward cells),
and one with no forward of ours (a backward version: --only-versions 13) backward-only tables.

For every shape: our best forward (any version, any tile, accurate) against SDPA FA2 measured in
the same run; our best backward against FA2's backward; the materializing versions against SDPA's
math backend; then a second table, our best forward and backward against SDPA cuDNN, and where the
run has FlashAttention-4's rows, the same against FA4 (and its deterministic backward).  With two
CSVs, the same ratios from the second run and their difference (the run-to-run spread the ratios
must be read against).  TFLOP/s and the accuracy verdict are recomputed from the raw columns
(bench/sdpa_rules.py: median_ms, rel_err, the max-error columns), not read from the stored ones.
"""
import csv
import sys

import sdpa_rules

NEED = {"impl", "pass", "dtype", "B", "H", "d", "N", "causal", "Br", "Bc", "median_ms", "rel_err"}


def load(path):
    """the rows of a gpu_sdpa.py CSV, their tflops and acc_ok recomputed from the raw columns
    (sdpa_rules.recompute: median_ms, rel_err and the max-error columns), not read from the stored
    ones; a missing file or a CSV of another kind: one line, exit 2"""
    try:
        with open(path) as f:
            rows = list(csv.DictReader(l for l in f if not l.startswith("#")))
    except OSError as e:
        fail(f"{path}: cannot read ({e.strerror})")
    if not rows or not NEED <= set(rows[0]):
        fail(f"{path}: not a gpu_sdpa.py CSV (needs columns {', '.join(sorted(NEED))})")
    derived = sdpa_rules.recompute(rows)
    for r in rows:
        d = derived[id(r)]
        r["tflops"], r["acc_ok"] = (f"{d['tflops']!r}" if d["tflops"] else ""), str(d["acc_ok"])
    return rows


def fail(msg):
    print(f"summarize_sdpa: {msg}", file=sys.stderr)
    sys.exit(2)


def best(rows, pred):
    sel = [r for r in rows if pred(r) and r["acc_ok"] == "1" and r["tflops"]]
    return max(sel, key=lambda r: float(r["tflops"])) if sel else None


def ratios(rows, version=None):
    out = {}
    shapes = sorted({(r["dtype"], int(r["d"]), int(r["N"]), int(r["causal"])) for r in rows})
    for dt, d, N, cz in shapes:
        sh = [r for r in rows if (r["dtype"], int(r["d"]), int(r["N"]), int(r["causal"])) == (dt, d, N, cz)]
        res = {}
        flash = lambda r: (r["impl"].startswith("ours") and "flash2" in r["impl"]
                           and (version is None or r["version"] == version))
        for pass_, ours_pred in (("fwd", flash), ("bwd", flash), ("cudnn-fwd", flash), ("cudnn-bwd", flash),
                                 ("fa4-fwd", flash), ("fa4-bwd", flash), ("fa4det-bwd", flash),
                                 ("std-fwd", lambda r: r["impl"].startswith("ours") and "standard" in r["impl"]),
                                 ("std-bwd", lambda r: r["impl"].startswith("ours") and "standard" in r["impl"])):
            p = pass_.split("-")[-1]
            o = best(sh, lambda r: r["pass"] == p and ours_pred(r))
            ref_impl = REF_IMPL.get(pass_.split("-")[0], "sdpa-fa2")
            ref = best(sh, lambda r: r["pass"] == p and r["impl"] == ref_impl)
            if o and ref:
                res[pass_] = (o, float(o["tflops"]), float(ref["tflops"]), float(o["tflops"]) / float(ref["tflops"]))
        out[(dt, d, N, cz)] = res
    return out


# The baseline of a ratio key's prefix (ratios(): "cudnn-fwd" is ours over SDPA cuDNN's forward).
REF_IMPL = {"std": "sdpa-math", "cudnn": "sdpa-cudnn", "fa4": "fa4", "fa4det": "fa4-det"}


def other(rb, key):
    """the other run's ratio for key, or a dash where that run has none"""
    return f"{rb[key][3]:.2f}" if key in rb else "—"


def against(a, b, label, prefix, fwd_only, bwd_only):
    """The table of our best forward and backward against one baseline (REF_IMPL of prefix), a shape
    a row, with the other run's ratios beside them, and its summary lines ("<prefix>-fwd: ratio min
    ...", the spread between the two runs)."""
    print(f"\n| dtype | d | N | causal | fwd: ours TFLOP/s | {label} | ratio | bwd: ours | {label} | ratio |" +
          (" fwd ratio, other run | bwd ratio, other run |" if b else ""))
    print("|---" * (12 if b else 10) + "|")
    keys = (f"{prefix}-fwd", f"{prefix}-bwd")
    cu = {}
    for k, res in a.items():
        f, bw = res.get(keys[0]), res.get(keys[1])
        if not ((f or bwd_only) and (bw or fwd_only)):
            continue
        fcells = f"{f[1]:.0f} | {f[2]:.0f} | **{f[3]:.2f}**" if f else "— | — | —"
        bcells = f"{bw[1]:.0f} | {bw[2]:.0f} | {bw[3]:.2f}" if bw else "— | — | —"
        row = f"| {k[0]} | {k[1]} | {k[2]} | {'yes' if k[3] else 'no'} | {fcells} | {bcells} |"
        rb = b.get(k, {})
        if b:
            row += f" {other(rb, keys[0])} | {other(rb, keys[1])} |"
        print(row)
        for x in keys:
            if x not in res:
                continue
            cu.setdefault(x, []).append(res[x][3])
            if x in rb:
                cu.setdefault(x + " spread", []).append(abs(res[x][3] - rb[x][3]))
    for x, v in cu.items():
        print(f"{x}: {'|difference| max' if 'spread' in x else 'ratio min'} {max(v) if 'spread' in x else min(v):.3f}, "
              f"{'mean' if 'spread' in x else 'max'} {sum(v) / len(v) if 'spread' in x else max(v):.3f} over {len(v)} shapes")


def main():
    args, version = sys.argv[1:], None
    if "--version" in args:
        i = args.index("--version")
        if i + 1 >= len(args) or not args[i + 1].isdigit():
            fail("--version: needs a version number")
        version = args[i + 1]
        del args[i:i + 2]
    if not 1 <= len(args) <= 2:
        print("usage: summarize_sdpa.py RUN.csv [OTHER_RUN.csv] [--version V]", file=sys.stderr)
        return 2
    rows_a = load(args[0])
    fwd_only = not any(r["pass"] == "bwd" for r in rows_a)
    bwd_only = not any(r["pass"] == "fwd" and r["impl"].startswith("ours") and (version is None or r["version"] == version)
                       for r in rows_a)
    a = ratios(rows_a, version)
    b = ratios(load(args[1]), version) if len(args) > 1 else {}
    print("| dtype | d | N | causal | fwd: ours (version, tile) TFLOP/s | FA2 | ratio | bwd: ours | FA2 | ratio |"
          " std fwd / math | std bwd / math |" + (" fwd ratio, other run | bwd ratio, other run |" if b else ""))
    print("|---" * (12 if b else 10) + "|")
    lo = {}
    for k, res in a.items():
        f, bw, sf, sb = (res.get(x) for x in ("fwd", "bwd", "std-fwd", "std-bwd"))
        cell = lambda x: f"{x[0]['impl'].split('-')[1]} {x[0]['Br']}x{x[0]['Bc']} {x[1]:.0f}" if x else "—"
        if not ((f or bwd_only) and (bw or fwd_only)):
            print(f"| {k[0]} | {k[1]} | {k[2]} | {'yes' if k[3] else 'no'} | incomplete |")
            continue
        ratio_or_dash = lambda x: f"{x[3]:.1f}x" if x else "— (no math run)"
        fcells = f"{cell(f)} | {f[2]:.0f} | **{f[3]:.2f}**" if f else "— | — | —"
        bcells = f"{cell(bw)} | {bw[2]:.0f} | {bw[3]:.2f}" if bw else "— | — | —"
        row = (f"| {k[0]} | {k[1]} | {k[2]} | {'yes' if k[3] else 'no'} | {fcells} | "
               f"{bcells} | {ratio_or_dash(sf)} | {ratio_or_dash(sb)} |")
        if b:
            rb = b.get(k, {})
            row += f" {other(rb, 'fwd')} | {other(rb, 'bwd')} |"
        print(row)
        for x in ("fwd", "bwd", "std-fwd", "std-bwd"):
            if res.get(x):
                lo.setdefault(x, []).append(res[x][3])
    for x, v in lo.items():
        print(f"{x}: ratio min {min(v):.2f}, max {max(v):.2f} over {len(v)} shapes")
    against(a, b, "cuDNN", "cudnn", fwd_only, bwd_only)
    impls = {r["impl"] for r in rows_a}
    if "fa4" in impls:
        against(a, b, "FA4", "fa4", fwd_only, bwd_only)
    if "fa4-det" in impls and not fwd_only:
        against(a, b, "FA4 deterministic", "fa4det", False, True)
    for p in ("fwd", "bwd") if b else ():
        d = [abs(a[k][p][3] - b[k][p][3]) for k in a if k in b and p in a[k] and p in b[k]]
        if d:
            print(f"{p} ratio, run-to-run |difference|: max {max(d):.3f}, mean {sum(d) / len(d):.3f} over {len(d)} shapes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
