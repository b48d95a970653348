#!/usr/bin/env python3
"""explain_kernels.py: the memory traffic of attention kernels we did not write, measured with
Nsight Compute and explained with flashlab's model (docs/third_party.md).

  collect  runs COMMAND under ncu (--cache-control all --clock-control none) and writes one CSV
           row per profiled kernel: its launch (grid, block, shared memory, registers, cluster),
           the SM<-L2 and L2 sectors, DRAM bytes, and the second metrics that settle the usual
           exceptions (L1 hits, TMA and multicast sectors, atomics, local-memory spills, partial
           sectors), with provenance lines.
  match    reads such a CSV, identifies each attention kernel's schedule and tiles from a kernel
           description (its name, launch and region notes read by the libraries' descriptions in
           scripts/kernel_descriptions/ or yours, --describe FILE; or --schedule), takes the GPU
           (SMs, L2) from the CSV or --gpu, --sms, --l2-mb, runs the model (flashlab count:
           the two-level SM<->L2 bytes; flashlab l2 --launch: the DRAM bytes of the whole launch
           in grid order) and writes the ratios measured / model, with the next hypothesis and the
           metric that settles it where a ratio is off by more than --tolerance.
  explain  both, one after the other.
  model    predicts, before profiling, a described kernel's whole launch on a problem: SM<-L2
           reads, L2 lookups, SM->L2 writes, reductions and DRAM reads (flashlab l2 --launch).

  scripts/explain_kernels.py collect --out raw.csv [--kernel-regex RE] [--problem B,H,N,d[,causal]]
                                     [--profile-from-start off] [--timeout S] -- COMMAND ...
  scripts/explain_kernels.py match raw.csv --flashlab build/flashlab --out explained.csv [--describe mine.json]
                                   [--gpu G | --sms S --l2-mb X] [--schedule FAMILY:BrxBc]
  scripts/explain_kernels.py model --problem B,H,N,d[,causal[,dtype]] --kernel NAME [--describe mine.json]
                                   [--grid X,Y,Z] [--gpu G] [--flashlab build/flashlab]
  scripts/explain_kernels.py explain --out explained.csv --flashlab build/flashlab [collect options] -- COMMAND ...

Regions.  A program may cut its kernels into labelled regions: it writes one JSON line per region
to the file named by $EXPLAIN_REGIONS (backend, pass, B, H, N, d, causal, dtype) and launches a
marker kernel (one whose name matches --marker, default spin_kernel: torch.cuda._sleep) first in
each region.  Without regions, --problem gives the shape of every kernel.  ncu may live under
/opt/nvidia/nsight-compute/*/ (not on PATH): --ncu, else PATH, else that folder.
Exit status 2 with one line naming the option on bad input; 77 when there is no ncu or no GPU.
"""
import argparse
import csv
import datetime
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

# What one kernel's row holds.  Counters first (each is checked against `ncu --query-metrics` and
# dropped, with a provenance line, where this GPU has no such metric); launch attributes after.
COUNTERS = [
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    # the L2 side of SM<->L2: L2 lookups from the SMs (loads, LDGSTS and TMA alike; the L2's
    # request coalescer counts identical requests of several SMs once)
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "lts__t_sectors_srcunit_tex_op_write.sum",
    "lts__t_sectors_srcunit_tex_op_atom.sum",
    "lts__t_sectors_srcunit_tex_op_red.sum",
    "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum",
    "lts__t_sectors_srcunit_ltcfabric.sum",
    # the reads' L2 eviction priority (a load's or TMA copy's cache hint), and its misses
    "lts__t_sectors_srcunit_tex_op_read_evict_first.sum",
    "lts__t_sectors_srcunit_tex_op_read_evict_first_lookup_miss.sum",
    "lts__t_sectors_srcunit_tex_op_read_evict_last.sum",
    "lts__t_sectors_srcunit_tex_op_read_evict_last_lookup_miss.sum",
    "lts__t_sectors_srcunit_tex_op_read_evict_normal_lookup_miss.sum",
    "lts__d_sectors_fill_device.sum",
    # the reductions' own L2 lookups (a reduction that misses its home partition reads DRAM first),
    # and the lookups of sectors arriving over the fabric from the other partition
    "lts__t_sectors_srcunit_tex_op_red_lookup_miss.sum",
    "lts__t_sectors_srcunit_tex_op_red_lookup_hit.sum",
    "lts__t_sectors_srcunit_ltcfabric_lookup_miss.sum",
    "lts__t_sectors_srcunit_ltcfabric_op_read_lookup_miss.sum",
    # the L2 request coalescer: read sectors it could merge, and merged (identical requests of
    # several SMs served by one L2 lookup)
    "lrc__request_sectors_op_read_coalescable.sum",
    "lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum",
    # the SM side: sectors delivered to each SM's L1TEX/shared memory, by kind
    "l1tex__m_xbar2l1tex_read_sectors.sum",
    "l1tex__m_xbar2l1tex_read_sectors_mem_lg_op_ld.sum",
    "l1tex__m_xbar2l1tex_read_sectors_mem_global_op_tma_ld.sum",
    "l1tex__m_xbar2l1tex_read_sectors_mem_global_op_tma_ld_dest_multicast.sum",
    "l1tex__m_l1tex2xbar_write_sectors.sum",
    "l1tex__m_l1tex2xbar_write_sectors_mem_global_op_tma_st.sum",
    "l1tex__m_l1tex2xbar_write_sectors_mem_lg_op_st.sum",
    "l1tex__m_xbar2l1tex_read_sectors_mem_global_op_ldgsts_cache_access.sum",
    # second metrics: L1 hits, LDGSTS (cp.async), stores, atomics, spills
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld_lookup_miss.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
    "sm__ctas_launched.sum",
    # the device (explain_match.Machines: the model's SMs and L2 capacity)
    "device__attribute_l2_cache_size",
    "device__attribute_multiprocessor_count",
]
LAUNCH = [
    "launch__grid_dim_x", "launch__grid_dim_y", "launch__grid_dim_z",
    "launch__block_dim_x", "launch__block_dim_y", "launch__block_dim_z",
    "launch__shared_mem_per_block_dynamic", "launch__shared_mem_per_block_static",
    "launch__registers_per_thread", "launch__cluster_dim_x", "launch__cluster_dim_y", "launch__cluster_dim_z",
    "launch__occupancy_limit_blocks", "launch__occupancy_limit_registers", "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps", "launch__waves_per_multiprocessor", "launch__sm_count",
]
LABELS = ["backend", "pass", "shape", "dtype", "B", "H", "Hkv", "N", "d", "causal"]


def fail(opt, rule):
    print(f"explain_kernels: {opt}: {rule}", file=sys.stderr)
    sys.exit(2)


def find_ncu(given):
    if given:
        if not (os.path.isfile(given) and os.access(given, os.X_OK)):
            fail("--ncu", f"{given} is not an executable file")
        return given
    p = shutil.which("ncu")
    if p:
        return p
    found = sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"))
    return found[-1] if found else None


def available_metrics(ncu):
    """Base names of the metrics this GPU (or, without one, gh100) has: `ncu --query-metrics`."""
    for extra in ([], ["--chip", "gh100"]):
        try:
            out = subprocess.run([ncu, "--query-metrics"] + extra, capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired):
            continue
        names = set(re.findall(r"^([a-z0-9]+__[A-Za-z0-9_]+)\s", out.stdout, re.M))
        if names:
            return names
    return None


def base_name(demangled):
    """The kernel's function name without return type, namespaces, template arguments or parameters."""
    s, depth, cut = demangled, 0, len(demangled)
    for i, ch in enumerate(s):  # the parameter list starts at the first '(' outside template brackets
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0 and not s[:i].endswith("anonymous namespace"):
            cut = i
            break
    head, depth, out = s[:cut], 0, []
    for ch in head:  # drop template arguments
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    head = "".join(out).replace("(anonymous namespace)", "anon").strip().split(" ")[-1]
    return head.split("::")[-1]


def num(x):
    x = (x or "").replace(",", "").strip()
    if x in ("", "n/a", "N/A"):
        return None
    try:
        v = float(x)
    except ValueError:
        return None
    return int(v) if v.is_integer() else v


def parse_ncu_csv(lines):
    """Rows of `ncu --csv --page raw` (header, units, then one row per kernel) as dicts, in ID order."""
    rows = list(csv.reader(l for l in lines if l.startswith('"')))
    if not rows:
        return []
    head = rows[0]
    out = []
    for r in rows[1:]:
        if len(r) != len(head) or not r[0].strip().isdigit():
            continue  # the units row
        out.append(dict(zip(head, r)))
    out.sort(key=lambda r: int(r["ID"]))
    return out


def read_regions(path):
    header, regions = {}, []
    if path and os.path.exists(path):
        for line in open(path):
            line = line.strip()
            if not line:
                continue
            obj = json.loads(line)
            if obj.get("header"):
                header = obj
            else:
                regions.append(obj)
    return header, regions


def parse_problem(text):
    """--problem B,H,N,d[,causal[,dtype]] -> labels dict"""
    parts = text.split(",")
    if len(parts) < 4 or len(parts) > 6:
        fail("--problem", "give B,H,N,d[,causal[,dtype]] (e.g. 4,48,1024,64,0,fp16)")
    try:
        B, H, N, d = (int(x) for x in parts[:4])
        causal = int(parts[4]) if len(parts) > 4 else 0
    except ValueError:
        fail("--problem", "B, H, N, d and causal must be integers")
    dtype = parts[5] if len(parts) > 5 else "fp16"
    if min(B, H, N, d) < 1 or causal not in (0, 1) or dtype not in ("fp16", "bf16", "fp32"):
        fail("--problem", "B, H, N, d >= 1, causal 0 or 1, dtype fp16, bf16 or fp32")
    return dict(B=B, H=H, N=N, d=d, causal=causal, dtype=dtype)


def label_rows(krows, regions, marker, problem):
    """Cuts the kernel rows into regions at each marker kernel; labels each row from its region
    (or from --problem).  Returns the labelled rows without the markers, and warnings."""
    warn, out, r = [], [], -1
    mre = re.compile(marker) if marker else None
    nmarkers = sum(1 for k in krows if mre and mre.search(k["Kernel Name"]))
    if nmarkers and regions and nmarkers != len(regions):
        warn.append(f"{nmarkers} marker kernels but {len(regions)} regions written: rows left unlabelled")
    for k in krows:
        if mre and mre.search(k["Kernel Name"]):
            r += 1
            continue
        lab = {}
        if problem:
            lab = dict(problem, backend=problem.get("backend", ""), shape="", pass_="")
        if nmarkers and regions and nmarkers == len(regions) and r >= 0:
            g = regions[r]
            lab = {x: g.get(x, "") for x in ["backend", "shape", "dtype", "B", "H", "Hkv", "N", "d", "causal"]}
            lab["pass_"] = g.get("pass", "")
            lab["region_info"] = json.dumps({x: g[x] for x in g if x not in lab and x != "pass"}, sort_keys=True)
        out.append((r, lab, k))
    return out, warn


def run_group(argv, env, timeout):
    """Runs argv in a new process group; on timeout stops that group (ncu and the program it
    started, nothing else).  Returns (output, timed_out, exit status)."""
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        return out, False, p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGTERM)
        try:
            out, _ = p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
        return out, True, p.returncode


def cmd_collect(a, command):
    ncu = find_ncu(a.ncu)
    if not ncu:
        print("explain_kernels: Nsight Compute (ncu) not found on PATH or under /opt/nvidia/nsight-compute", file=sys.stderr)
        return 77
    have = available_metrics(ncu)
    if have is not None and sum(m.split(".")[0] in have for m in COUNTERS) < len(COUNTERS) // 2:
        have = None  # a listing this script cannot read: keep every counter, drop on ncu's refusal
    counters = [m for m in COUNTERS if have is None or m.split(".")[0] in have]
    dropped = [m for m in COUNTERS if m not in counters]
    metrics = counters + LAUNCH
    work = tempfile.mkdtemp(prefix="explain_")
    regions_path = a.regions or os.path.join(work, "regions.jsonl")
    if os.path.exists(regions_path) and not a.regions:
        os.remove(regions_path)
    log = os.path.join(work, "ncu.log")
    args = [ncu, "--cache-control", "all", "--clock-control", "none", "--replay-mode", "kernel",
            "--metrics", ",".join(metrics), "--csv", "--page", "raw", "--print-units", "base", "--log-file", log]
    if a.kernel_regex:
        args += ["--kernel-name", "regex:" + a.kernel_regex]
    if a.profile_from_start == "off":
        args += ["--profile-from-start", "off"]
    if a.launch_count:
        args += ["--launch-count", str(a.launch_count)]
    env = dict(os.environ, EXPLAIN_REGIONS=regions_path)
    started = datetime.datetime.now(datetime.timezone.utc)
    for attempt in range(4):  # a metric ncu does not know stops it at the first kernel: drop it, again
        for f in (log, regions_path):
            if os.path.exists(f):
                os.remove(f)
        app_out, timed_out, rc = run_group(args + command, env, a.timeout)
        lines = (open(log).read().splitlines() if os.path.exists(log) else []) + (app_out or "").splitlines()
        bad = re.findall(r"Failed to find metric\s+(?:regex:)?([A-Za-z0-9_.]+)", "\n".join(lines))
        bad = [m for m in bad if m in counters]
        if not bad or timed_out:
            break
        for m in bad:
            counters.remove(m)
            dropped.append(m)
        metrics = counters + LAUNCH
        args[args.index("--metrics") + 1] = ",".join(metrics)
    sys.stderr.write(app_out[-20000:] if app_out else "")
    krows = parse_ncu_csv(lines)
    header, regions = read_regions(regions_path)
    problem = parse_problem(a.problem) if a.problem else None
    if problem and a.backend:
        problem["backend"] = a.backend
    if problem and a.kv_heads:
        problem["Hkv"] = a.kv_heads
    labelled, warn = label_rows(krows, regions, a.marker, problem)
    ncu_version = subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip() if shutil.which("nvidia-smi") else ""
    prov = [
        "explain_kernels.py collect: Nsight Compute counters of every profiled kernel (one row each)",
        f"commit: {os.environ.get('FLASHLAB_COMMIT', 'unknown')}",
        f"date: {started.strftime('%Y-%m-%dT%H:%M:%SZ')}",
        f"gpu: {smi or header.get('gpu', 'unknown')}",
        f"cuda: {header.get('cuda', 'unknown')}; torch: {header.get('torch', 'unknown')}; cudnn: {header.get('cudnn', 'unknown')}; triton: {header.get('triton', 'not imported')}",
        f"ncu: {ncu_version[-1] if ncu_version else 'unknown'} ({ncu})",
        "ncu options: " + " ".join(args[1:]).replace(",".join(metrics), "<the columns below>"),
        "dropped (no such metric on this GPU): " + (" ".join(dropped) if dropped else "none"),
        "command: " + " ".join(command),
    ]
    if timed_out:
        prov.append(f"TIMED OUT after {a.timeout} s: the rows below are what ncu wrote before it was stopped")
    if rc not in (0, None) and not timed_out:
        prov.append(f"the command under ncu exited with status {rc}")
    prov += ["warning: " + w for w in warn]
    write_collect_csv(a.out, prov, labelled, counters)
    print(f"explain_kernels: {len(labelled)} kernels in {max([r for r, _, _ in labelled], default=-1) + 1} regions "
          f"-> {a.out}" + (" (timed out)" if timed_out else ""), file=sys.stderr)
    if not a.regions:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if krows else 1


def write_collect_csv(path, prov, labelled, counters):
    cols = (["region"] + LABELS + ["kernel_id", "kernel"] + LAUNCH
            + counters + ["region_info", "name"])
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        for line in prov:
            f.write("# " + line + "\n")
        w = csv.writer(f)
        w.writerow(cols)
        for r, lab, k in labelled:
            row = [r] + [lab.get("pass_" if c == "pass" else c, "") for c in LABELS]
            row += [k["ID"], base_name(k["Kernel Name"])]
            row += [num(k.get(m)) if num(k.get(m)) is not None else "" for m in LAUNCH]
            row += [num(k.get(m)) if num(k.get(m)) is not None else "" for m in counters]
            row += [lab.get("region_info", ""), k["Kernel Name"]]
            w.writerow(row)
    os.replace(tmp, path)


def collect_args(ap):
    ap.add_argument("--out", required=True, help="the CSV to write")
    ap.add_argument("--ncu", default=None, help="the ncu executable (default: PATH, /opt/nvidia/nsight-compute)")
    ap.add_argument("--kernel-regex", default=None, help="profile only kernels whose function name matches")
    ap.add_argument("--profile-from-start", default="on", help="off: profile only between cudaProfilerStart/Stop")
    ap.add_argument("--launch-count", type=int, default=0, help="stop profiling after this many kernels")
    ap.add_argument("--marker", default="spin_kernel", help="regex of the marker kernel that starts a region")
    ap.add_argument("--regions", default=None, help="keep the regions file here (default: a temporary file)")
    ap.add_argument("--problem", default=None, help="B,H,N,d[,causal[,dtype]] of every kernel (no regions)")
    ap.add_argument("--backend", default=None, help="label for --problem rows (e.g. triton)")
    ap.add_argument("--kv-heads", type=int, default=0, help="K/V heads of --problem's rows (GQA; default: H)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds before ncu and the command are stopped")


def main(argv):
    if "--" in argv:
        i = argv.index("--")
        argv, command = argv[:i], argv[i + 1:]
    else:
        command = []
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = ap.add_subparsers(dest="cmd")
    c = sub.add_parser("collect", help="run COMMAND under ncu; one CSV row per kernel")
    collect_args(c)
    m = sub.add_parser("match", help="explain a collected CSV with the model")
    m.add_argument("csv", nargs="+", help="collected CSVs")
    match_args(m)
    md = sub.add_parser("model", help="predict a described kernel's whole launch before profiling")
    md.add_argument("--problem", required=True, help="B,H,N,d[,causal[,dtype]]")
    md.add_argument("--kernel", default=None, help="the kernel's base name (its description applies)")
    md.add_argument("--name", default=None, help="its demangled name, when the description reads it (template arguments)")
    md.add_argument("--kv-heads", type=int, default=0, help="K/V heads (GQA; default: H)")
    md.add_argument("--grid", default=None, metavar="X,Y,Z", help="the launch's grid, when the description needs it")
    md.add_argument("--threads", type=int, default=None, help="threads per CTA, when the description needs them")
    md.add_argument("--cluster", type=int, default=1, help="CTAs per cluster (multicast of K and V)")
    md.add_argument("--notes", default=None, help="the region's notes (JSON text), when the description reads them")
    md.add_argument("--ctas-per-sm", type=int, default=1, help="CTAs resident per SM (the occupancy)")
    md.add_argument("--flashlab", default="build/flashlab", help="the flashlab CLI (the model)")
    md.add_argument("--format", default="table", choices=("table", "csv"))
    describe_args(md)
    gpu_args(md)
    t = sub.add_parser("table", help="the markdown table of explained CSVs (docs/third_party.md)")
    t.add_argument("csv", nargs="+", help="explained CSVs")
    e = sub.add_parser("explain", help="collect, then match")
    collect_args(e)
    e.add_argument("--raw", default=None, help="keep the collected CSV here")
    match_args(e, out=False)
    a = ap.parse_args(argv)
    if a.cmd is None:
        ap.print_help()
        return 2
    if a.cmd in ("collect", "explain"):
        if not command:
            fail("COMMAND", "give the program to profile after --")
        if a.timeout <= 0:
            fail("--timeout", "must be > 0 seconds")
        if a.launch_count < 0:
            fail("--launch-count", "must be >= 0")
        if a.profile_from_start not in ("on", "off"):
            fail("--profile-from-start", "on or off")
        if a.problem:
            parse_problem(a.problem)
        if a.kv_heads and (not a.problem or a.kv_heads < 1 or parse_problem(a.problem)["H"] % a.kv_heads):
            fail("--kv-heads", "K/V heads of --problem: a divisor of its H")
    if a.cmd == "collect":
        return cmd_collect(a, command)
    if a.cmd == "match":
        return cmd_match(a)
    if a.cmd == "model":
        return cmd_model(a)
    if a.cmd == "table":
        from explain_match import table
        return table(a.csv)
    final = a.out
    a.out = a.raw or final + ".raw.csv"
    rc = cmd_collect(a, command)
    if rc != 0:
        return rc
    a.csv, a.out = [a.out], final
    return cmd_match(a)


def match_args(ap, out=True):
    if out:
        ap.add_argument("--out", required=True, help="the explained CSV to write")
    ap.add_argument("--flashlab", default="build/flashlab", help="the flashlab CLI (the model)")
    ap.add_argument("--tolerance", type=float, default=0.10, help="a ratio further than this from 1 gets a hypothesis")
    describe_args(ap)
    ap.add_argument("--schedule-kernel", default=None, metavar="RE",
                    help="--schedule applies to the kernels whose base name matches RE (default: every kernel not "
                         "described as outside attention's schedule)")
    ap.add_argument("--only-backend", default=None, help="explain only rows of these backends (comma-separated)")
    ap.add_argument("--jobs", type=int, default=2, help="model runs at once")
    gpu_args(ap)
    ap.add_argument("--cta-timing", default=None, metavar="DIR",
                    help="rows profiled by scripts/triton_cta_timing.py (region 'timed') walk DIR/timing_SHAPE_ncu.csv, "
                         "the measured start, end and SM of each work item (rule S2), instead of rule S1")


def describe_args(ap):
    ap.add_argument("--describe", action="append", default=[], metavar="FILE",
                    help="a kernel description (JSON, docs/your_kernel.md section 1), read before the shipped ones "
                         "(scripts/kernel_descriptions/); may be given more than once")
    ap.add_argument("--schedule", default=None, metavar="FAMILY:BrxBc",
                    help="force this family and tiles (a described kernel keeps the rest of its description)")


def gpu_args(ap):
    ap.add_argument("--gpu", default=None, help="a GPU preset (flashlab gpus): its SMs, L2 and L2 partitions "
                                                "(default: the CSV's device attributes and GPU)")
    ap.add_argument("--sms", type=int, default=None, help="SMs (overrides --gpu and the CSV)")
    ap.add_argument("--l2-mb", type=int, default=None, help="L2 capacity in MiB (overrides --gpu and the CSV)")
    ap.add_argument("--l2-partitions", type=int, default=None, choices=(1, 2),
                    help="the model's L2: 2 halves, as measured on the H200 (docs/l2_model.md), or 1 LRU "
                         "(default: the GPU preset's)")


def check_gpu_args(a):
    for opt, v in (("--sms", a.sms), ("--l2-mb", a.l2_mb)):
        if v is not None and v < 1:
            fail(opt, "must be >= 1")
    if not os.access(a.flashlab, os.X_OK):
        fail("--flashlab", f"{a.flashlab} is not an executable (build flashlab first)")


def cmd_model(a):
    from explain_match import model_cmd  # scripts/explain_match.py (beside this file)
    check_gpu_args(a)
    problem = parse_problem(a.problem)
    if not a.kernel and not a.schedule:
        fail("--kernel", "give the kernel's name (its description says the rest) or --schedule FAMILY:BrxBc")
    if a.grid and not re.fullmatch(r"[1-9]\d*,[1-9]\d*,[1-9]\d*", a.grid):
        fail("--grid", "X,Y,Z: the launch's grid, three integers >= 1")
    for opt, v in (("--threads", a.threads), ("--ctas-per-sm", a.ctas_per_sm), ("--cluster", a.cluster)):
        if v is not None and v < 1:
            fail(opt, "must be >= 1")
    if a.kv_heads and problem["H"] % a.kv_heads:
        fail("--kv-heads", "K/V heads: a divisor of --problem's H")
    return model_cmd(a, problem)


def cmd_match(a):
    from explain_match import match_file  # scripts/explain_match.py (beside this file): the model side
    if a.tolerance <= 0 or a.tolerance >= 1:
        fail("--tolerance", "must be between 0 and 1 (0.10 = 10 %)")
    check_gpu_args(a)
    if getattr(a, "cta_timing", None) and not os.path.isdir(a.cta_timing):
        fail("--cta-timing", f"{a.cta_timing} is not a directory (of scripts/triton_cta_timing.py's timing_SHAPE_ncu.csv)")
    return match_file(a)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
