#!/usr/bin/env python3
"""records.py: the tables of docs/performance.md, printed from the records (figures/data/*.csv and
kernels/ladder/ladder.def), and the check that the page quotes them.  No torch, no GPU.

    python3 bench/records.py rungs
    python3 bench/records.py classes VERSION PASS RUN.csv ...   best tile a shape, by class, over runs
    python3 bench/records.py claim VERSION PASS [--commits] RUN.csv ...   the ranges, as claims state them
    python3 bench/records.py summary RUN1.csv [RUN2.csv] [--version V]   summarize_sdpa.py's lines
    python3 bench/records.py validate RECORD.csv ...            counters against the model, per record
    python3 bench/records.py ncu-versions RECORD.csv ...        Nsight Compute against the counters
    python3 bench/records.py ncu-pair RECORD.csv                ours beside cuDNN under Nsight Compute
    python3 bench/records.py provenance RUN.csv                 where and how a run was measured
    python3 bench/records.py fig2 RECORD.csv                    bench/summarize_fig2.py's table
    python3 bench/records.py check [PAGE]                       the page against all of the above
    python3 bench/records.py fill PAGE                          rewrite PAGE's blocks from the records

A page quotes a table as a generated block:

    <!-- records: python3 bench/records.py classes 12 fwd figures/data/gpu_sdpa_v12_run1.csv -->
    ...the command's output, as it prints it today...
    <!-- end records -->

`check` (run by tests/check_gpu_records.py) runs the command of every block (a script of bench/
with arguments from the repository root) and requires the block to equal its output, and requires
every number of the page outside the blocks (code spans, code blocks, links and paths aside) to be
one of the numbers of its blocks or of their commands: a number in the prose that no record holds
fails.  Exit 1 with one line per difference.
"""
import csv
import os
import re
import subprocess
import sys

import kernel_source   # beside this file (the script's folder, or bench/ on PYTHONPATH)
import ladder
import sdpa_rules
import sdpa_timing

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))

BLOCK = re.compile(r"<!-- records: (.*?) -->\n(.*?)<!-- end records -->", re.S)
NUMBER = re.compile(r"(?<![\w.,/])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?![\w/]|\.\d|,\d{3})|"
                    r"(?<![\w.,/])(\d+(?:\.\d+)?)(?=x\b|us\b|ms\b|M\b|G\b)")


def rows_of(path):
    with open(path) as f:
        return list(csv.DictReader(l for l in f if not l.startswith("#")))


def span(xs, fmt="{:.2f}"):
    """'a-b' of the least and largest of xs ('a' when they are equal after formatting)."""
    lo, hi = fmt.format(min(xs)), fmt.format(max(xs))
    return lo if lo == hi else f"{lo}-{hi}"


def versions_text(vs):
    """[1, 2, 3, 5] -> '1-3, 5'."""
    vs, out, i = sorted(vs), [], 0
    while i < len(vs):
        j = i
        while j + 1 < len(vs) and vs[j + 1] == vs[j] + 1:
            j += 1
        out.append(str(vs[i]) if i == j else f"{vs[i]}-{vs[j]}")
        i = j + 1
    return ", ".join(out)


# ---- the tables ---------------------------------------------------------------------------------
def rungs():
    """The ladder (ladder.def): version, file, what it needs of the GPU (FL_V_NEEDS), what it is."""
    out = ["| version | file | needs | what |", "|---|---|---|---|"]
    names = {"FL_NEED_BASE": "sm_75", "FL_NEED_SM80": "sm_80", "FL_NEED_SM90A": "sm_90a"}
    for r in ladder.rungs(ROOT):
        m = re.search(r"^#define FL_V_NEEDS (FL_NEED_\w+)", open(os.path.join(ROOT, r.path)).read(), re.M)
        out.append(f"| {r.version} | `{r.path}` | {names.get(m.group(1), '?') if m else '?'} | {r.what} |")
    return out


def best_tiles(path, version, pass_):
    """Version's rows of one pass in a gpu_sdpa.py run: the fastest tile of each shape, and all rows."""
    ours = [r for r in rows_of(path) if r["impl"].startswith(f"ours-v{version}-") and r["pass"] == pass_]
    shapes = {}
    for r in ours:
        k = (r["dtype"], int(r["d"]), int(r["N"]), r["causal"])
        if k not in shapes or float(r["tflops"]) > float(shapes[k]["tflops"]):
            shapes[k] = r
    return shapes, ours


def classes(version, pass_, runs):
    """By class (d, mask), over every run: the best tile of each shape against SDPA's cuDNN and
    FA2 measured beside it, where its ratio to cuDNN is least, its TFLOP/s and the tiles."""
    per = {}
    nrows = nacc = 0
    Ns, dts = set(), set()
    for run in runs:
        shapes, ours = best_tiles(os.path.join(ROOT, run), version, pass_)
        nrows += len(ours)
        nacc += sum(r["acc_ok"] == "1" for r in ours)
        for (dt, d, N, c), r in shapes.items():
            per.setdefault((d, c), []).append(r)
            Ns.add(N), dts.add(dt)
    out = ["| d | causal | shapes | vs cuDNN | least at | vs FA2 | TFLOP/s | tiles |", "|---|---|---|---|---|---|---|---|"]
    for (d, c), rs in sorted(per.items()):
        n = len({(r["dtype"], r["N"]) for r in rs})
        cu = [r for r in rs if r.get("ratio_vs_cudnn")]
        least = min(cu, key=lambda r: float(r["ratio_vs_cudnn"])) if cu else None
        fa = [float(r["ratio_vs_fa2"]) for r in rs if r.get("ratio_vs_fa2")]
        where = f"{least['dtype']} N = {least['N']}" if least else "—"
        tiles = ", ".join(f"{a} x {b}" for a, b in sorted({(int(r["Br"]), int(r["Bc"])) for r in rs}))
        out.append(f"| {d} | {'yes' if c == '1' else 'no'} | {n} | "
                   f"{span([float(r['ratio_vs_cudnn']) for r in cu], '{:.3f}') if cu else '—'} | "
                   f"{where} | {span(fa) if fa else '—'} | "
                   f"{span([float(r['tflops']) for r in rs], '{:.0f}')} | {tiles} |")
    out.append("")
    out.append(f"{len(runs)} runs of {', '.join(sorted(dts))} at N = {', '.join(str(n) for n in sorted(Ns))}; "
               f"{nrows} rows of version {version}, {nacc} within the accuracy rule.")
    return out


def claim(version, pass_, runs, commits=False):
    """The claim of a version's record as the README and this page state it (and
    tests/check_gpu_records.py checks it): over all runs, the best tile of each shape (TFLOP/s
    recomputed from the times, sdpa_rules) against FA2 and cuDNN, "A-Bx FA2 and C-Dx cuDNN, timed
    <method>" (the runs' `# timing:` line, sdpa_timing); with commits, the commits of the source the
    runs measured (their `# kernel source:` lines), for a record of a source that is not today's."""
    fa2, cu, methods, made = [], [], set(), []
    for run in runs:
        with open(os.path.join(ROOT, run)) as f:
            lines = f.readlines()
        prov = [l.rstrip("\n") for l in lines if l.startswith("#")]
        rows = list(csv.DictReader(l for l in lines if not l.startswith("#")))
        derived = sdpa_rules.recompute(rows)
        shapes = {}
        for r in rows:
            if r["impl"] == f"ours-v{version}-flash2" and r["pass"] == pass_:
                k = sdpa_rules.shape_key(r)
                if k not in shapes or (derived[id(r)]["tflops"] or 0) > (derived[id(shapes[k])]["tflops"] or 0):
                    shapes[k] = r
        fa2 += [derived[id(r)]["ratio_vs_fa2"] for r in shapes.values() if derived[id(r)]["ratio_vs_fa2"]]
        cu += [derived[id(r)]["ratio_vs_cudnn"] for r in shapes.values() if derived[id(r)]["ratio_vs_cudnn"]]
        methods |= {sdpa_timing.parse(l) for l in prov if l.startswith("# timing:")}
        src = kernel_source.parse(prov).get(version)
        if src and src[1] not in made:
            made.append(src[1])
    if len(methods) != 1 or None in methods or not fa2 or not cu:
        raise RuntimeError(f"version {version}: runs timed {sorted(map(str, methods))}, {len(fa2)} shapes: no claim")
    what = {"fwd": "forward", "bwd": "backward"}[pass_]
    of = f"the source of commit{'s' if len(made) > 1 else ''} {' and '.join(made)}; " if commits else ""
    return [f"- version {version}'s {what} ({of}runs 1-{len(runs)}): {min(fa2):.2f}-{max(fa2):.2f}x FA2 and "
            f"{min(cu):.2f}-{max(cu):.2f}x cuDNN, {sdpa_timing.PHRASE[methods.pop()]}"]


def script(name, args):
    """The lines a summary script of bench/ prints (RuntimeError when it fails)."""
    out = subprocess.run([sys.executable, os.path.join(HERE, name)] + args, cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{name} {' '.join(args)}: {out.stderr.strip()}")
    return [l for l in out.stdout.split("\n") if l.strip()]


def summary(args):
    """bench/summarize_sdpa.py's summary lines (its tables left out), as a list."""
    return ["- " + l for l in script("summarize_sdpa.py", args) if not l.startswith("|")]


def validate(records):
    """Per record of `flashlab-gpu validate`: its versions, cases, and those whose counters equal
    the model's counts tensor by tensor with the status ok."""
    out = ["| record | versions | cases | counters equal to the model, status ok |", "|---|---|---|---|"]
    for rec in records:
        rs = rows_of(os.path.join(ROOT, rec))
        eq = sum(r["tensors_equal"] == "1" and r["status"].startswith("ok") for r in rs)
        out.append(f"| `{os.path.basename(rec)}` | {versions_text({int(r['version']) for r in rs})} | {len(rs)} | {eq} |")
    return out


def ncu_versions(records):
    """Per record of scripts/ncu_traffic.sh: the versions and passes, and Nsight Compute's SM reads
    and L2 writes over the counters' bytes."""
    out = ["| record | versions | rows | reads / counters | writes / counters | within 1 % |", "|---|---|---|---|---|---|"]
    for rec in records:
        rs = rows_of(os.path.join(ROOT, rec))
        rd, wr = [float(r["read_ratio"]) for r in rs], [float(r["write_ratio"]) for r in rs]
        ok = sum(r["ok"] == "1" for r in rs)
        out.append(f"| `{os.path.basename(rec)}` | {versions_text({int(r['version']) for r in rs})} | {len(rs)} | "
                   f"{span(rd, '{:.4f}')} | {span(wr, '{:.4f}')} | {ok} |")
    return out


def ncu_pair(rec):
    """Ours beside cuDNN's kernel of the same pass under Nsight Compute, one launch each: time,
    instructions, issue and tensor-pipe activity, grid."""
    vals = {}
    for r in rows_of(os.path.join(ROOT, rec)):
        vals.setdefault((int(r["d"]), int(r["N"]), r["causal"]), {}).setdefault(r["kernel"], {})[r["metric"]] = r["value"]
    out = ["| d | N | causal | time, ours / cuDNN (us) | instructions (M) | issue active (%) | tensor pipe active (%) | grid |",
           "|---|---|---|---|---|---|---|---|"]
    for (d, N, c), ks in sorted(vals.items()):
        ours = [k for k in ks if k.startswith("fl_")]
        if len(ours) != 1:
            raise RuntimeError(f"{rec}: {len(ours)} kernels of ours at d = {d}, N = {N}")
        which = "bprop" if "bwd" in ours[0] else "fprop"
        theirs = [k for k in ks if k.startswith("cudnn") and which in k]
        if len(theirs) != 1:
            raise RuntimeError(f"{rec}: {len(theirs)} cuDNN {which} kernels at d = {d}, N = {N}")
        a, b = ks[ours[0]], ks[theirs[0]]
        g = lambda m, f: f"{f(a[m])} / {f(b[m])}"
        out.append(f"| {d} | {N} | {'yes' if c == '1' else 'no'} | {g('duration_ns', lambda v: round(float(v) / 1000))} | "
                   f"{g('inst_executed', lambda v: round(float(v) / 1e6))} | {g('issue_active_pct', lambda v: round(float(v)))} | "
                   f"{g('tensor_active_pct', lambda v: round(float(v)))} | {g('grid', lambda v: v.split()[0])} |")
    return out


def provenance(rec):
    """The lines of a record's '#' header that say where, when and how it was measured."""
    keep = ("date:", "gpu:", "timing:", "commit:")
    with open(os.path.join(ROOT, rec)) as f:
        lines = [l[2:].strip() for l in f if l.startswith("# ") and l[2:].startswith(keep)]
    return [f"- {l}" for l in lines]


def generate(argv):
    """The lines a command of this script prints."""
    cmd, args = argv[0], argv[1:]
    if cmd == "rungs" and not args:
        return rungs()
    if cmd == "classes" and len(args) >= 3:
        return classes(int(args[0]), args[1], args[2:])
    if cmd == "claim" and len(args) >= 3:
        commits = "--commits" in args
        rest = [a for a in args[2:] if a != "--commits"]
        return claim(int(args[0]), args[1], rest, commits)
    if cmd == "summary" and args:
        return summary(args)
    if cmd == "validate" and args:
        return validate(args)
    if cmd == "ncu-versions" and args:
        return ncu_versions(args)
    if cmd == "ncu-pair" and len(args) == 1:
        return ncu_pair(args[0])
    if cmd == "provenance" and len(args) == 1:
        return provenance(args[0])
    if cmd == "fig2" and len(args) == 1:
        return script("summarize_fig2.py", args)
    raise ValueError(f"records.py: {' '.join(argv)}: unknown command or arguments (see --help)")


# ---- the check ------------------------------------------------------------------------------------
def numbers(text):
    """The numbers of a text, as written (thousands separators removed)."""
    return {(a or b).replace(",", "") for a, b in NUMBER.findall(text)}


def prose(text):
    """The page outside its generated blocks, code blocks, code spans, links' targets and HTML
    comments: what a reader takes for claims."""
    text = BLOCK.sub("\n", text)
    text = re.sub(r"(?ms)^```.*?^```", "", text)
    text = re.sub(r"(?m)^(    |\t).*$", "", text)
    text = re.sub(r"`[^`\n]*`", "", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    return re.sub(r"<!--.*?-->", "", text, flags=re.S)


def check_page(page, run=None):
    """The differences between page (a path) and the records: blocks not as their commands print
    them today, numbers of the prose no block holds.  run(argv) -> lines (default: generate)."""
    run = run or generate
    text = open(page, encoding="utf-8").read()
    bad, held = [], set()
    blocks = BLOCK.findall(text)
    if not blocks:
        bad.append(f"{page}: no generated block (<!-- records: ... -->)")
    for cmd, body in blocks:
        argv = cmd.split()
        if argv[:2] != ["python3", "bench/records.py"] or len(argv) < 3:
            bad.append(f"{page}: block '{cmd}': not a command of bench/records.py")
            continue
        try:
            want = "\n".join(run(argv[2:])) + "\n"
        except (OSError, ValueError, RuntimeError, KeyError) as e:
            bad.append(f"{page}: block '{cmd}': {e}")
            continue
        if body != want:
            got, exp = body.split("\n"), want.split("\n")
            i = next((k for k in range(min(len(got), len(exp))) if got[k] != exp[k]), min(len(got), len(exp)))
            bad.append(f"{page}: block '{cmd}' differs from its output at line {i + 1}: "
                       f"page {got[i] if i < len(got) else '(end)'!r}, records {exp[i] if i < len(exp) else '(end)'!r}")
        held |= numbers(want) | numbers(cmd)
    for n, line in enumerate(prose(text).split("\n"), 1):
        for x in sorted(numbers(line) - held):
            bad.append(f"{page}: '{x}' in \"{line.strip()[:80]}\": a number no generated block holds")
    return bad


def fill(page):
    """PAGE with every generated block printed again from the records (written to PAGE.tmp, then
    renamed over PAGE)."""
    text = open(page, encoding="utf-8").read()
    new = BLOCK.sub(lambda m: f"<!-- records: {m.group(1)} -->\n" + "\n".join(generate(m.group(1).split()[2:])) +
                    "\n<!-- end records -->", text)
    with open(page + ".tmp", "w", encoding="utf-8") as f:
        f.write(new)
    os.replace(page + ".tmp", page)


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) > 1 else 2
    if argv[1] == "check":
        page = argv[2] if len(argv) > 2 else os.path.join(ROOT, "docs", "performance.md")
        bad = check_page(page)
        for b in bad:
            print(b)
        print(f"records.py check: {page}: {len(bad)} differences")
        return 1 if bad else 0
    try:
        if argv[1] == "fill" and len(argv) == 3:
            fill(argv[2])
            return 0
        print("\n".join(generate(argv[1:])))
    except (OSError, ValueError, RuntimeError, KeyError) as e:
        print(f"records.py: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
