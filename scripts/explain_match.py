"""explain_match.py: the model side of scripts/explain_kernels.py (match and model).

For each kernel row of a collected CSV it
  1. identifies the schedule from a kernel description (scripts/kernel_describe.py: the user's
     --describe files first, then the libraries' in scripts/kernel_descriptions/): the family
     (fwd-q, fwd-qkv, bwd-kv, bwd-twopass, bwd-memeff, pre, convert, combine), the tiles, the grid
     mapping, and what the kernel does beside (atomics, persistence, consumer warpgroups), read
     from the kernel's name, its launch and, where the program wrote them, its region's notes;
     --schedule FAMILY:BrxBc forces the family and tiles, of any kernel;
  2. takes the GPU (SMs, L2 capacity, the L2's partitions) from --gpu, --sms, --l2-mb and
     --l2-partitions, else from the CSV: ncu's device attributes and the preset (flashlab gpus)
     that its provenance line names;
  3. runs the model: `flashlab l2 --launch` for the whole launch in grid order (SM<-L2 bytes, L2
     lookups, writes, reductions, DRAM reads), and for the flash2-order forward also `flashlab
     count` (fl_run, the two-level machine) as a cross-check of the walked elements;
  4. writes measured / model for each figure and, where one is off by more than --tolerance,
     tries the hypotheses the model can test (consumer warpgroups sharing the resident tile,
     cluster multicast) and the causes a second metric settles (register spills, the L2 request
     coalescer, spill stores), and names the next measurement where none does.
A kernel no description knows is listed with its bytes and a line that says how to describe it.
"""
import csv
import json
import os
import re
import subprocess
import sys

import kernel_describe

SECTOR = 32
FIGURES = ["sm_read", "l2_read", "write", "red", "dram_read", "fabric"]


def fnum(r, k):
    v = r.get(k, "")
    try:
        return float(v) if v not in ("", None) else None
    except ValueError:
        return None


def read_csv(path):
    prov, rows = [], []
    with open(path) as f:
        lines = f.read().splitlines()
    prov = [l for l in lines if l.startswith("#")]
    rows = list(csv.DictReader(l for l in lines if not l.startswith("#")))
    return prov, rows


def measured(r):
    """The measured figures of a kernel row, in bytes (None where the metric was not collected)."""
    s = lambda k: None if fnum(r, k) is None else fnum(r, k) * SECTOR
    red = s("lts__t_sectors_srcunit_tex_op_red.sum")
    atom = s("lts__t_sectors_srcunit_tex_op_atom.sum")
    return dict(
        sm_read=s("l1tex__m_xbar2l1tex_read_sectors.sum"),
        l2_read=s("lts__t_sectors_srcunit_tex_op_read.sum"),
        write=s("lts__t_sectors_srcunit_tex_op_write.sum"),
        red=None if red is None else red + (atom or 0),
        dram_read=fnum(r, "dram__bytes_read.sum"),
        local_ld=s("l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum"),
        local_miss=s("l1tex__t_sectors_pipe_lsu_mem_local_op_ld_lookup_miss.sum"),
        local_st=s("l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum"),
        global_st=s("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"),
        lg_st=s("l1tex__m_l1tex2xbar_write_sectors_mem_lg_op_st.sum"),
        lrc_merged=s("lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum"),
        l1_hit=s("l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum"),
        tma=s("l1tex__m_xbar2l1tex_read_sectors_mem_global_op_tma_ld.sum"),
        multicast=s("l1tex__m_xbar2l1tex_read_sectors_mem_global_op_tma_ld_dest_multicast.sum"),
        read_miss=s("lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum"),
        fabric=s("lts__t_sectors_srcunit_ltcfabric.sum"),
        evict_first=s("lts__t_sectors_srcunit_tex_op_read_evict_first.sum"),
        evict_first_miss=s("lts__t_sectors_srcunit_tex_op_read_evict_first_lookup_miss.sum"),
        red_miss=red_misses(s),
    )


def red_misses(s):
    """The reductions' L2 misses in bytes: those homed on the reducing SM's side are looked up as the
    SM's (..._tex_op_red_lookup_miss), those homed across the fabric as the fabric's, which reads do
    not account for (..._ltcfabric_lookup_miss - ..._ltcfabric_op_read_lookup_miss); bench/l2_probe
    --reduce: the two add up to the buffer reduced, once each (docs/l2_model.md §6).  None unless all
    three were collected."""
    tex = s("lts__t_sectors_srcunit_tex_op_red_lookup_miss.sum")
    fab = s("lts__t_sectors_srcunit_ltcfabric_lookup_miss.sum")
    fab_rd = s("lts__t_sectors_srcunit_ltcfabric_op_read_lookup_miss.sum")
    return None if None in (tex, fab, fab_rd) else tex + fab - fab_rd


def gi(r, k, default=0):
    v = fnum(r, k)
    return int(v) if v is not None else default


def region_info(r):
    try:
        return json.loads(r.get("region_info") or "{}")
    except ValueError:
        return {}


HOWTO = ("no description knows this kernel: describe its schedule, tiles and grid in a JSON file "
         "(docs/your_kernel.md section 1; examples in scripts/kernel_descriptions/) and give it with --describe FILE, "
         "or force one with --schedule FAMILY:BrxBc")


def launch_env(r):
    """What a description's expressions may use of a row: the problem and the launch."""
    gx, gy, gz = gi(r, "launch__grid_dim_x", 1), gi(r, "launch__grid_dim_y", 1), gi(r, "launch__grid_dim_z", 1)
    threads = gi(r, "launch__block_dim_x", 1) * gi(r, "launch__block_dim_y", 1) * gi(r, "launch__block_dim_z", 1)
    cl = 1
    for k in ("launch__cluster_dim_x", "launch__cluster_dim_y", "launch__cluster_dim_z"):
        cl *= max(1, gi(r, k, 1))
    return dict(B=gi(r, "B"), H=gi(r, "H"), Hkv=gi(r, "Hkv") or gi(r, "H"), N=gi(r, "N"), d=gi(r, "d"),
                causal=int(r.get("causal") or 0), gx=gx, gy=gy, gz=gz, ctas=gx * gy * gz, threads=threads, cluster=cl)


def identify(r, entries):
    """The schedule of a kernel row from the first description that applies: a dict (lib, family, Br,
    Bc, ...), with family "none" for a kernel described as not part of attention's schedule; None when
    no description applies.  kernel_describe.DescriptionError when the description's expressions fail."""
    d, groups = kernel_describe.find(entries, r.get("kernel", ""), r.get("name", ""))
    if d is None:
        return None
    return kernel_describe.describe(d, groups, launch_env(r), r.get("region_info", ""))


def forced(ident, r, schedule):
    """The identification under --schedule FAMILY:BrxBc: a described kernel keeps the rest of its
    description; one without gets the defaults (the tile index fastest, a CTA per work item)."""
    fam, Br, Bc = schedule
    if ident is None:
        env = launch_env(r)
        ident = dict(lib="--schedule", order="tile", persistent=0, cluster=env["cluster"], splits=1, atomic=0,
                     zero_dq=0, Br2=0, Bc2=0, static=False, longest_first=False, pairs=False, dtype=None,
                     wg_tile=None, consumers=1, grid_check="not checked (no description)")
    return dict(ident, family=fam, Br=Br, Bc=Bc, source="--schedule",
                grid_check=ident["grid_check"] if ident["lib"] == "--schedule" else "not checked (--schedule)")


class Machines:
    """The GPU each row ran on, for the model: SMs, L2 MiB, L2 partitions and where they came from.
    Options first (--sms, --l2-mb, --l2-partitions, then --gpu's preset); else ncu's device
    attributes in the row (launch__sm_count, device__attribute_l2_cache_size) and the preset whose
    device word the CSV's provenance line names (flashlab gpus)."""

    def __init__(self, cli, a):
        out = subprocess.run([cli, "gpus", "--format", "csv"], capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"--flashlab: {cli} gpus failed: {out.stderr.strip()}")
        self.presets = list(csv.DictReader(out.stdout.splitlines()))
        self.a = a
        self.given = None
        if getattr(a, "gpu", None):
            match = [p for p in self.presets if p["name"] == a.gpu]
            if not match:
                names = [p["name"] for p in self.presets]
                raise ValueError(f"--gpu: unknown GPU '{a.gpu}' (choose {', '.join(names[:-1])} or {names[-1]})")
            self.given = match[0]

    def of_device(self, gpu_line):
        """The preset whose device word is a word of the CSV's "gpu:" provenance line, or None."""
        for p in self.presets:
            if re.search(r"(?<!\w)" + re.escape(p["device"]) + r"(?!\w)", gpu_line or "", re.I):
                return p
        return None

    def of(self, r, gpu_line):
        a, p = self.a, self.given
        how = []
        if p is None:
            p = self.of_device(gpu_line)
        sms = getattr(a, "sms", None) or (int(self.given["sms"]) if self.given else 0) or gi(r, "launch__sm_count") or \
            gi(r, "device__attribute_multiprocessor_count") or (int(p["sms"]) if p else 0)
        l2_bytes = gi(r, "device__attribute_l2_cache_size")
        l2 = getattr(a, "l2_mb", None) or (int(self.given["l2_mib"]) if self.given else 0) or \
            (int(round(l2_bytes / 2**20)) if l2_bytes else 0) or (int(p["l2_mib"]) if p else 0)
        parts = getattr(a, "l2_partitions", None) or (int(p["l2_partitions"]) if p else 1)
        if not sms or not l2:
            raise ValueError(f"--gpu: the CSV's GPU ({gpu_line or 'not recorded'}) is none of the presets (flashlab gpus) "
                             f"and the CSV has no {'launch__sm_count' if not sms else 'device__attribute_l2_cache_size'}: "
                             f"give --gpu NAME, or --sms and --l2-mb")
        if getattr(a, "l2_mb", None) or getattr(a, "sms", None):
            how.append("options")
        if self.given:
            how.append(f"--gpu {p['name']} ({p['checked']} figures)")
        elif p:
            how.append(f"preset {p['name']} ({p['checked']} figures) of the CSV's gpu line")
        if l2_bytes and not self.given and not getattr(a, "l2_mb", None):
            how.append("L2 from device__attribute_l2_cache_size")
        if not p and not getattr(a, "l2_partitions", None):
            how.append("partitions unknown: one LRU")
        return dict(sms=sms, l2_mb=l2, parts=parts, how="; ".join(how))


class Model:
    """The flashlab CLI: `l2 --launch` and `count`, each configuration run once."""

    def __init__(self, cli, timing_dir=None):
        self.cli, self.cache, self.timing_dir = cli, {}, timing_dir

    def timing(self, r):
        """The measured timing file of a row profiled with scripts/triton_cta_timing.py (its region
        says timed), when --cta-timing names the directory of the timing CSVs; else None (rule S1)."""
        if not self.timing_dir or not region_info(r).get("timed"):
            return None
        path = os.path.join(self.timing_dir, f"timing_{r['shape']}_ncu.csv")
        if not os.path.isfile(path):
            raise RuntimeError(f"--cta-timing: {path} does not exist (the timing of {r['backend']} {r['shape']})")
        return path

    def _run(self, args):
        key = tuple(args)
        if key not in self.cache:
            try:
                out = subprocess.run([self.cli] + args, capture_output=True, text=True)
            except OSError as e:
                raise RuntimeError(f"--flashlab: cannot run {self.cli} ({e})") from e
            if out.returncode != 0:
                raise RuntimeError(f"flashlab {' '.join(args)}: {out.stderr.strip()}")
            lines = [l for l in out.stdout.splitlines() if not l.startswith("#")]
            self.cache[key] = dict(zip(lines[0].split(","), lines[1].split(",")))
        return self.cache[key]

    def launch(self, r, ident, ctas_per_sm, mach, parts=None):
        """The launch model of one kernel row on machine mach (Machines.of); parts overrides its L2
        partitions (the one-pool bracket)."""
        row = self._run(self.launch_args(r, ident, ctas_per_sm, mach, parts))
        return dict(sm_read=int(row["sm_read_B"]), l2_read=int(row["l2_read_B"]), write=int(row["sm_write_B"]),
                    red=int(row["red_B"]), dram_read=int(row["dram_read_B"]), fabric=int(row["fabric_B"]),
                    red_miss=int(row["red_miss_B"]),
                    ctas=int(row["ctas"]),
                    waves=int(row["waves"]))

    def launch_args(self, r, ident, ctas_per_sm, mach, parts=None):
        """The `flashlab l2 --launch` arguments of Model.launch."""
        args = ["l2", "--launch", ident["family"], "--batch", str(r["B"]), "--heads", str(r["H"]), "--N", str(r["N"]),
                "--d", str(r["d"]), "--Br", str(ident["Br"]), "--Bc", str(ident["Bc"]),
                "--dtype", ident.get("dtype") or r["dtype"] or "fp16",
                "--order", ident["order"], "--persistent", str(ident["persistent"]), "--cluster", str(ident["cluster"]),
                "--splits", str(ident["splits"]), "--sms", str(mach["sms"]), "--ctas-per-sm", str(ctas_per_sm),
                "--format", "csv", "--l2-mb", str(mach["l2_mb"]), "--l2-partitions", str(parts or mach["parts"]),
                "--max-work", "0"]  # a batch job over the whole study: the interactive guard is lifted
        if r.get("Hkv") and str(r["Hkv"]) != str(r["H"]):
            args += ["--kv-heads", str(r["Hkv"])]
        for flag, key in (("--static", "static"), ("--longest-first", "longest_first"), ("--pairs", "pairs")):
            if ident.get(key):
                args.append(flag)
        if ident["Br2"]:
            args += ["--Br2", str(ident["Br2"]), "--Bc2", str(ident["Bc2"])]
        if int(r.get("causal") or 0):
            args.append("--causal")
        if ident["atomic"]:
            args.append("--atomic-dq")
        if ident["zero_dq"]:
            args.append("--zero-dq")
        if self.timing(r):
            args += ["--cta-timing", self.timing(r)]
        return args

    def two_level_reads(self, r, ident):
        """fl_run's element reads for flash2's forward (the flash2-order schedule), all heads"""
        d, Br, Bc = int(r["d"]), ident["Br"], ident["Bc"]
        args = ["count", "--algo", "flash2", "--N", r["N"], "--d", r["d"], "--Br", str(Br), "--Bc", str(Bc),
                "--M", str(2 * Br * d + 2 * Bc * d + Br * Bc + 2 * Br), "--batch", r["B"], "--heads", r["H"],
                "--dtype", r["dtype"] or "fp16", "--format", "csv"]
        if int(r["causal"] or 0):
            args += ["--causal", "bottom-right"]
        return int(self._run(args)["hbm_reads"])


def off(x, tol):
    return x is not None and abs(x - 1.0) > tol


def ratio(a, b):
    return None if a is None or not b else a / b


def explain_row(r, ident, model, tol, mach):
    meas = measured(r)
    per_sm = ctas_per_sm(r)
    first = dict(ident)
    mod = model.launch(r, ident, per_sm, mach)
    notes = {f: "" for f in FIGURES}
    # H1: the resident tile is shared by the consumer warpgroups of a warp-specialized CTA
    if off(ratio(meas["sm_read"], mod["sm_read"]), tol) and ident.get("wg_tile") and ident["consumers"] > 1:
        alt = dict(ident, **{ident["wg_tile"]: ident[ident["wg_tile"]] * ident["consumers"]})
        altm = model.launch(r, alt, per_sm, mach)
        if not off(ratio(meas["sm_read"], altm["sm_read"]), tol):
            notes["sm_read"] = (f"explained: {ident['consumers']} consumer warpgroups share the resident tile: "
                                f"{ident['wg_tile']} = {ident[ident['wg_tile']]} x {ident['consumers']} (name tile "
                                f"{ident[ident['wg_tile']]}: ratio {ratio(meas['sm_read'], mod['sm_read']):.3f}; "
                                f"launch__block_dim_x = {gi(r, 'launch__block_dim_x')} = 1 producer + "
                                f"{ident['consumers']} consumers)")
            ident, mod = alt, altm
    rs = {f: ratio(meas[f], mod[f]) for f in FIGURES}
    # H3: register spills: local-memory loads that miss L1 reach L2
    if off(rs["sm_read"], tol) and not notes["sm_read"]:
        lm = meas["local_miss"]
        if lm and not off(ratio(meas["sm_read"] - lm, mod["sm_read"]), tol):
            notes["sm_read"] = (f"explained: register spills: local loads missing L1 = {lm / mod['sm_read']:.2f} x model "
                                f"(l1tex__t_sectors_pipe_lsu_mem_local_op_ld_lookup_miss); measured minus them = "
                                f"{(meas['sm_read'] - lm) / mod['sm_read']:.3f} x model")
        elif lm is None and meas["local_ld"]:
            notes["sm_read"] = (f"next hypothesis: register spills (local loads {meas['local_ld'] / mod['sm_read']:.2f} x "
                                f"model); settles it: l1tex__t_sectors_pipe_lsu_mem_local_op_ld_lookup_miss")
        else:
            notes["sm_read"] = "not explained; next: L1 hits (l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit)"
    # the L2 side: identical requests of several SMs merged by the request coalescer
    if off(rs["l2_read"], tol) and rs["l2_read"] > 1:
        notes["l2_read"] = f"follows the SM side: L2 lookups / SM-side sectors = {meas['l2_read'] / meas['sm_read']:.3f}"
    elif off(rs["l2_read"], tol):
        lm = meas["lrc_merged"]
        if lm is not None and meas["sm_read"] and abs((meas["l2_read"] + lm) / meas["sm_read"] - 1) <= tol:
            notes["l2_read"] = (f"explained: the L2 request coalescer merged {lm / mod['l2_read']:.2f} x model "
                                f"(lrc__request_sectors_op_read_coalescing_achieved_type_hardware): L2 lookups + merged = "
                                f"{(meas['l2_read'] + lm) / meas['sm_read']:.3f} x the SM-side sectors")
        elif lm is None:
            notes["l2_read"] = "next hypothesis: the L2 request coalescer; settles it: lrc__request_sectors_op_read_coalescing_achieved_type_hardware"
        else:
            notes["l2_read"] = "as the SM side (" + notes["sm_read"][:40] + "...)" if off(rs["sm_read"], tol) else "not explained"
    if off(rs["write"], tol):
        st, gst = meas["local_st"], meas["global_st"]
        if st and not off(ratio(meas["write"] - st, mod["write"]), tol):
            notes["write"] = (f"explained: spill stores (l1tex__t_sectors_pipe_lsu_mem_local_op_st = "
                              f"{st / mod['write']:.2f} x model) reach L2")
        elif gst and mod["write"] and rs["write"] > 1 and off(gst / mod["write"], tol) and \
                meas["write"] - (st or 0) <= gst * (1 + tol):
            # the store instructions cover the model's sectors several times (each stores part of a
            # sector); what reaches L2 lies between the model's sectors and the instructions' sectors
            notes["write"] = (f"cause measured, not modelled: partial-sector stores: the SMs' global stores cover "
                              f"{gst / mod['write']:.2f} x the model's sectors (l1tex__t_sectors_pipe_lsu_mem_global_op_st), "
                              f"{(meas['write'] - (st or 0)) / mod['write']:.2f} x reach L2 (the rest merged in L1)")
        elif gst is None:
            notes["write"] = "not explained; next: partial-sector stores (l1tex__t_sectors_pipe_lsu_mem_global_op_st)"
        else:
            notes["write"] = "not explained"
    if off(rs["dram_read"], tol):
        spill = meas["local_st"] or 0
        excess = meas["dram_read"] - mod["dram_read"]
        ef, efm, lm, rm = meas["evict_first"], meas["evict_first_miss"], meas["local_miss"], meas["red_miss"]
        # local memory is read with evict_first: those reads are the spill reloads when they equal the
        # local loads that missed L1, and their L2 misses are DRAM reads the model has no tile for
        reloads = efm is not None and ef and lm and abs(ef / lm - 1) <= 0.05
        if rs["dram_read"] > 1 and reloads and not off(ratio(meas["dram_read"] - efm, mod["dram_read"]), tol):
            notes["dram_read"] = (f"explained: spill reloads missing L2: the evict_first reads ({ef / 2**20:.1f} MiB, "
                                  f"lts__t_sectors_srcunit_tex_op_read_evict_first) are the local loads missing L1 "
                                  f"({lm / 2**20:.1f} MiB); {efm / 2**20:.1f} MiB of them missed L2 "
                                  f"(..._evict_first_lookup_miss); measured minus them = "
                                  f"{(meas['dram_read'] - efm) / mod['dram_read']:.3f} x model")
        elif rm is not None and mod["red_miss"] and off(ratio(rm, mod["red_miss"]), tol) and \
                not off(ratio(meas["dram_read"] - rm, mod["dram_read"] - mod["red_miss"]), tol) and \
                (rm - mod["red_miss"]) * (meas["dram_read"] - mod["dram_read"]) > 0 and \
                abs(rm - mod["red_miss"]) >= abs(meas["dram_read"] - mod["dram_read"]) / 2:
            notes["dram_read"] = (f"cause measured, not modelled: the reductions' L2 misses (lts__t_sectors_srcunit_"
                                  f"tex_op_red_lookup_miss + ltcfabric lookups that are not reads) are "
                                  f"{rm / 1e6:.1f} MB, {ratio(rm, mod['red_miss']):.3f} x the model's "
                                  f"{mod['red_miss'] / 1e6:.1f} MB, and carry {(rm - mod['red_miss']) / (meas['dram_read'] - mod['dram_read']):.0%} "
                                  f"of the difference; the reads' DRAM (measured minus them) is "
                                  f"{ratio(meas['dram_read'] - rm, mod['dram_read'] - mod['red_miss']):.3f} x the model's: "
                                  f"the L2 keeps {'fewer' if rm > mod['red_miss'] else 'more'} of the reduced (dirty) "
                                  f"accumulator sectors than its LRU does (docs/l2_model.md §6)")
        elif rs["dram_read"] > 1 and spill >= excess:
            notes["dram_read"] = (f"cause measured, not modelled: {spill / 2**20:.0f} MiB of spill stores "
                                  f"(l1tex__t_sectors_pipe_lsu_mem_local_op_st), more than the {excess / 2**20:.0f} MiB "
                                  f"read beyond the model, pass through L2 and take the room the model gives the "
                                  f"re-read tiles")
        else:  # bracket it: one more resident CTA per SM (not for a persistent grid), and one L2 pool
            pool = model.launch(r, ident, per_sm, mach, parts=1)["dram_read"]
            more = "" if ident["persistent"] or model.timing(r) else (
                f"{ratio(meas['dram_read'], model.launch(r, ident, per_sm + 1, mach)['dram_read']):.3f} with "
                f"{per_sm + 1} CTAs per SM and ")
            if rs["dram_read"] > 1 and efm is None and meas["local_ld"]:
                nxt = "spill reloads from DRAM; settles it: lts__t_sectors_srcunit_tex_op_read_evict_first_lookup_miss"
            elif model.timing(r):
                nxt = "the L2's replacement, not LRU (docs/l2_model.md §6); the walk already ran the measured timing"
            else:
                nxt = ("each CTA's start time and SM (a clock read in the kernel: scripts/triton_cta_timing.py, "
                       "--cta-timing) in place of rule S1's lock step" + (
                           "; a persistent grid's tile order" if ident["persistent"] else ""))
            notes["dram_read"] = (f"not explained: measured / model is {more}{ratio(meas['dram_read'], pool):.3f} with "
                                  f"one L2 pool (not {mach['parts']} partitions); next: {nxt}")
    two = model.two_level_reads(r, ident) if ident["family"] == "fwd-q" and ident["splits"] == 1 else None
    return ident, first, mod, meas, rs, notes, per_sm, two


COLS = ["backend", "pass", "shape", "dtype", "B", "H", "N", "d", "causal", "kernel", "lib", "family", "Br", "Bc",
        "Br2", "Bc2", "order", "persistent", "cluster", "splits", "atomic_dq", "ctas_per_sm", "tiles_from",
        "name_Br", "name_Bc", "model_ctas", "model_waves", "two_level_read_elems"]
for f in FIGURES:
    COLS += [f"meas_{f}_B", f"model_{f}_B", f"ratio_{f}"]
COLS += ["local_ld_miss_B", "local_st_B", "lrc_merged_B", "l2_read_miss_B", "evict_first_miss_B", "time_us", "walk"]
COLS += [f"note_{f}" for f in FIGURES]
# the reductions' misses (red_misses) and the reads' DRAM (measured minus them), against the model's
COLS += ["meas_red_miss_B", "model_red_miss_B", "ratio_red_miss", "ratio_dram_reads_part"]
# the description's grid check and the GPU the model ran (Machines)
COLS += ["grid_check", "gpu"]


def ctas_per_sm(r):
    """CTAs resident per SM: the least of ncu's occupancy limits (1 when none was collected)."""
    limits = [gi(r, k) for k in ("launch__occupancy_limit_blocks", "launch__occupancy_limit_registers",
                                 "launch__occupancy_limit_shared_mem", "launch__occupancy_limit_warps")]
    return max(1, min([x for x in limits if x > 0] or [1]))


def parse_schedule(text):
    """--schedule FAMILY:BrxBc -> (family, Br, Bc); ValueError naming the option otherwise."""
    m = re.fullmatch(r"([a-z-]+):(\d+)x(\d+)", text or "")
    if not m or int(m[2]) < 1 or int(m[3]) < 1:
        raise ValueError("--schedule: give FAMILY:BrxBc (e.g. fwd-q:128x64)")
    return m[1], int(m[2]), int(m[3])


def check_families(cli, entries, schedule):
    """Every family the descriptions and --schedule name is one the launch model has: asked of
    `flashlab l2 --launch F --help`, the one list of families.  ValueError naming the first that is not."""
    seen = {}
    for d in entries:
        if d["family"] != "none":
            seen.setdefault(d["family"], d["where"] + ": family")
    if schedule:
        seen.setdefault(schedule[0], "--schedule")
    for fam, where in seen.items():
        out = subprocess.run([cli, "l2", "--launch", fam, "--help"], capture_output=True, text=True)
        if out.returncode != 0:
            raise ValueError(f"{where}: {out.stderr.strip().replace('flashlab: ', '')}")


def plan(a, inputs, entries, machines):
    """Every kernel row to explain: (path, provenance, row, identification or None, machine or None).
    ValueError or kernel_describe.DescriptionError on bad input, before any model runs."""
    schedule = parse_schedule(a.schedule) if getattr(a, "schedule", None) else None
    srx = None
    if getattr(a, "schedule_kernel", None):
        try:
            srx = re.compile(a.schedule_kernel)
        except re.error as e:
            raise ValueError(f"--schedule-kernel: '{a.schedule_kernel}' is not a regular expression ({e})") from None
    out = []
    for path in inputs:
        if not os.path.exists(path):
            raise ValueError(f"CSV: {path} does not exist")
        prov, rows = read_csv(path)
        gpu_line = next((l.split(":", 1)[1].strip() for l in prov if l.startswith("# gpu:")), "")
        for r in rows:
            if not r.get("N") or (a.only_backend and r.get("backend") not in a.only_backend.split(",")):
                continue
            ident = identify(r, entries)
            if schedule and (srx.search(r.get("kernel", "")) if srx else (ident is None or ident["family"] != "none")):
                ident = forced(ident, r, schedule)
            attention = ident is not None and ident["family"] != "none"
            out.append((path, prov, r, ident, machines.of(r, gpu_line) if attention else None))
    return out


def warm(planned, model, a):
    """Runs every kernel's first model call (and the consumer hypothesis's) on --jobs processes at
    once; match_file then finds them done.  The results are the same as one at a time."""
    from concurrent.futures import ThreadPoolExecutor
    calls = []
    for _, _, r, ident, mach in planned:
        if mach is None:
            continue
        per_sm = ctas_per_sm(r)
        calls.append(lambda r=r, ident=ident, per_sm=per_sm, mach=mach: model.launch(r, ident, per_sm, mach))
        if ident.get("wg_tile") and ident["consumers"] > 1:
            alt = dict(ident, **{ident["wg_tile"]: ident[ident["wg_tile"]] * ident["consumers"]})
            calls.append(lambda r=r, alt=alt, per_sm=per_sm, mach=mach: model.launch(r, alt, per_sm, mach))
    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        for f in [ex.submit(c) for c in calls]:
            try:
                f.result()
            except RuntimeError:
                pass  # reported when match_file makes the same call


def match_file(a):
    inputs = a.csv if isinstance(a.csv, list) else [a.csv]
    try:
        entries = kernel_describe.load_all(getattr(a, "describe", None) or [])
        check_families(a.flashlab, entries, parse_schedule(a.schedule) if getattr(a, "schedule", None) else None)
        machines = Machines(a.flashlab, a)
        planned = plan(a, inputs, entries, machines)
    except (ValueError, RuntimeError) as e:  # DescriptionError is a ValueError
        print(f"explain_kernels: {e}", file=sys.stderr)
        return 2
    model = Model(a.flashlab, getattr(a, "cta_timing", None))
    warm(planned, model, a)
    out_rows, prov, unknown, machs = [], [], {}, {}
    for path, p, r, ident, mach in planned:
        prov += [f"input {os.path.basename(path)}: " + l[2:] for l in p if l.startswith(("# commit", "# gpu", "# cuda", "# ncu:"))]
        row = {k: r.get(k, "") for k in COLS[:10]}
        row["time_us"] = f"{fnum(r, 'gpu__time_duration.sum') / 1e3:.1f}" if fnum(r, "gpu__time_duration.sum") else ""
        if mach is None:
            row["lib"] = "not attention's schedule" if ident else "no description"
            row["tiles_from"] = ident["source"] if ident else ""
            if not ident:
                row["note_sm_read"] = HOWTO
                unknown[r.get("kernel", "")] = 1
            meas = measured(r)
            for f in FIGURES:
                row[f"meas_{f}_B"] = "" if meas[f] is None else f"{meas[f]:.0f}"
            out_rows.append(row)
            continue
        machs[f"{mach['l2_mb']} MiB L2 in {mach['parts']} LRU partition{'s' if mach['parts'] > 1 else ''}, "
              f"{mach['sms']} SMs ({mach['how']})"] = 1
        try:
            ident, first, mod, meas, rs, notes, per_sm, two = explain_row(r, ident, model, a.tolerance, mach)
        except (RuntimeError, ValueError) as e:
            print(f"explain_kernels: {e}", file=sys.stderr)
            return 2
        row.update(lib=ident["lib"], family=ident["family"], Br=ident["Br"], Bc=ident["Bc"],
                   Br2=ident["Br2"] or "", Bc2=ident["Bc2"] or "", order=ident["order"],
                   persistent=ident["persistent"], cluster=ident["cluster"], splits=ident["splits"],
                   atomic_dq=ident["atomic"], ctas_per_sm=per_sm, tiles_from=ident["source"],
                   grid_check=ident["grid_check"], gpu=f"{mach['sms']} SMs, {mach['l2_mb']} MiB x {mach['parts']}",
                   name_Br=first["Br"], name_Bc=first["Bc"], model_ctas=mod["ctas"], model_waves=mod["waves"],
                   two_level_read_elems="" if two is None else two)
        for f in FIGURES:
            row[f"meas_{f}_B"] = "" if meas[f] is None else f"{meas[f]:.0f}"
            row[f"model_{f}_B"] = mod[f]
            row[f"ratio_{f}"] = "" if rs[f] is None else f"{rs[f]:.4f}"
            row[f"note_{f}"] = notes[f]
        for k, src in (("local_ld_miss_B", "local_miss"), ("local_st_B", "local_st"), ("lrc_merged_B", "lrc_merged"),
                       ("l2_read_miss_B", "read_miss"), ("evict_first_miss_B", "evict_first_miss")):
            row[k] = "" if meas[src] is None else f"{meas[src]:.0f}"
        t = model.timing(r)
        row["walk"] = f"S2: {os.path.basename(t)}" if t else "S1"
        rm = meas["red_miss"]
        row.update(meas_red_miss_B="" if rm is None else f"{rm:.0f}", model_red_miss_B=mod["red_miss"],
                   ratio_red_miss="" if rm is None or not mod["red_miss"] else f"{rm / mod['red_miss']:.4f}",
                   ratio_dram_reads_part="" if rm is None or meas["dram_read"] is None or
                   mod["dram_read"] == mod["red_miss"] else
                   f"{(meas['dram_read'] - rm) / (mod['dram_read'] - mod['red_miss']):.4f}")
        out_rows.append(row)
    tmp = a.out + ".tmp"
    with open(tmp, "w", newline="") as f:
        f.write("# explain_kernels.py match: each kernel's measured bytes against flashlab's model of its identified schedule\n")
        for l in dict.fromkeys(prov):
            f.write("# " + l + "\n")
        f.write(f"# model: flashlab l2 --launch (whole launch in grid order, 32-byte sectors, L2 emptied first, LRU "
                f"partitions as docs/l2_model.md; CTAs per SM from ncu's occupancy limits) on {'; '.join(machs) or 'no GPU'}; "
                f"tolerance {a.tolerance}\n")
        f.write("# meas_sm_read = l1tex__m_xbar2l1tex_read_sectors x 32 (sectors delivered to the SMs: loads, LDGSTS, TMA); "
                "meas_l2_read = lts__t_sectors_srcunit_tex_op_read x 32; meas_write = lts__t_sectors_srcunit_tex_op_write x 32; "
                "meas_red = lts__t_sectors_srcunit_tex_op_red + _atom x 32; meas_dram_read = dram__bytes_read; "
                "meas_fabric = lts__t_sectors_srcunit_ltcfabric x 32 (sectors between the L2's partitions)\n")
        opts = "".join(f" --{k.replace('_', '-')} {getattr(a, k)}" for k in ("gpu", "sms", "l2_mb", "l2_partitions", "cta_timing",
                                                                            "only_backend", "schedule", "schedule_kernel")
                       if getattr(a, k, None)) + "".join(f" --describe {x}" for x in getattr(a, "describe", None) or [])
        f.write("# command: scripts/explain_kernels.py match " + " ".join(inputs) + opts + "\n")
        w = csv.DictWriter(f, fieldnames=COLS, extrasaction="ignore")
        w.writeheader()
        for row in out_rows:
            w.writerow(row)
    os.replace(tmp, a.out)
    n = sum(1 for r in out_rows if r.get("family"))
    print(f"explain_kernels: {n} attention kernels identified of {len(out_rows)} -> {a.out}", file=sys.stderr)
    if unknown:
        print(f"explain_kernels: no description knows {len(unknown)} kernel{'s' if len(unknown) > 1 else ''} "
              f"({', '.join(list(unknown)[:5])}{', ...' if len(unknown) > 5 else ''}): describe each in a JSON file "
              f"(docs/your_kernel.md section 1) and give it with --describe FILE, or force one with --schedule "
              f"FAMILY:BrxBc", file=sys.stderr)
    return 0


def short(note):
    """the first clause of a note, for the table"""
    if not note:
        return ""
    head = note.split(";")[0].split(" (")[0]
    return head if len(head) < 90 else head[:87] + "..."


def table(paths):
    """Prints docs/third_party.md's table: one line per attention kernel of the explained CSVs."""
    print("| backend | pass | shape | kernel | family | tiles | SM<-L2 read | DRAM read | SM->L2 write | L2 lookups | "
          "L2 fabric | why a ratio is off |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for path in paths:
        for r in read_csv(path)[1]:
            if not r.get("family"):
                continue
            notes = [f"{f}: {short(r['note_' + f])}" for f in ("sm_read", "dram_read", "write", "l2_read")
                     if r.get("note_" + f)]
            tiles = f"{r['Br']}x{r['Bc']}" + (f" / {r['Br2']}x{r['Bc2']}" if r.get("Br2") else "")
            fmt = lambda x: f"{float(x):.3f}" if x else "-"
            print(f"| {r['backend']} | {r['pass']} | {r['shape']} | `{r['kernel']}` | {r['family']} | {tiles} | "
                  f"{fmt(r['ratio_sm_read'])} | {fmt(r['ratio_dram_read'])} | {fmt(r.get('ratio_write'))} | "
                  f"{fmt(r['ratio_l2_read'])} | {fmt(r.get('ratio_fabric'))} | {'; '.join(notes)} |")
    return 0


def model_cmd(a, problem):
    """`explain_kernels.py model`: the whole launch of one described kernel (or of --schedule) on a
    problem, predicted before profiling by `flashlab l2 --launch`: SM<-L2 reads, L2 lookups, SM->L2
    writes, reductions, DRAM reads.  Returns the exit status."""
    try:
        entries = kernel_describe.load_all(a.describe or [])
        schedule = parse_schedule(a.schedule) if a.schedule else None
        check_families(a.flashlab, entries, schedule)
        if not (a.gpu or a.sms or a.l2_mb):
            a.gpu = "h200"  # the GPU whose figures were measured (flashlab gpus)
        machines = Machines(a.flashlab, a)
        r = {k: str(problem[k]) for k in ("B", "H", "N", "d", "causal", "dtype")}
        r.update(Hkv=str(a.kv_heads or problem["H"]), kernel=a.kernel or "", name=a.name or a.kernel or "",
                 region_info=a.notes or "")
        env = {k: v for k, v in launch_env(r).items() if k not in ("gx", "gy", "gz", "ctas", "threads", "cluster")}
        if a.grid:
            g = [int(x) for x in a.grid.split(",")]
            env.update(gx=g[0], gy=g[1], gz=g[2], ctas=g[0] * g[1] * g[2])
        if a.threads:
            env["threads"] = a.threads
        env["cluster"] = a.cluster
        ident = None
        if a.kernel:
            d, groups = kernel_describe.find(entries, a.kernel, r["name"])
            if d is None and not schedule:
                raise ValueError(f"--kernel: {HOWTO.replace('this kernel', repr(a.kernel))}")
            ident = kernel_describe.describe(d, groups, env, r["region_info"]) if d else None
            if ident and ident["family"] == "none":
                raise ValueError(f"--kernel: {a.kernel} is described as not part of attention's schedule ({ident['source']})")
        if schedule:
            ident = forced(ident, r, schedule)
            ident["cluster"] = a.cluster
        mach = machines.of(r, "")
        model = Model(a.flashlab)
        args = model.launch_args(r, ident, a.ctas_per_sm, mach)
        m = model.launch(r, ident, a.ctas_per_sm, mach)
    except (ValueError, RuntimeError) as e:
        print(f"explain_kernels: {e}", file=sys.stderr)
        return 2
    figures = [("SM<-L2 read B", "sm_read"), ("L2 read lookups B", "l2_read"), ("SM->L2 write B", "write"),
               ("L2 reductions B", "red"), ("DRAM read B", "dram_read"), ("L2 fabric B", "fabric")]
    tiles = f"{ident['Br']}x{ident['Bc']}" + (f" / {ident['Br2']}x{ident['Bc2']}" if ident["Br2"] else "")
    if a.format == "csv":
        print("# explain_kernels.py model: predicted by flashlab " + " ".join(args))
        print("kernel,lib,family,tiles,order,persistent,ctas,waves,sms,l2_mib,l2_partitions," +
              ",".join(k + "_B" for _, k in figures))
        print(",".join(str(x) for x in [a.kernel or "", ident["lib"], ident["family"], tiles, ident["order"],
                                          ident["persistent"], m["ctas"], m["waves"], mach["sms"], mach["l2_mb"],
                                          mach["parts"]] + [m[k] for _, k in figures]))
        return 0
    print(f"kernel {a.kernel or '(--schedule)'}: {ident['lib']}, {ident['family']} {tiles}, grid order {ident['order']}"
          + (f", persistent {ident['persistent']}" if ident["persistent"] else "") + f" ({ident['source']}; grid: "
          f"{ident['grid_check']})")
    print(f"GPU: {mach['sms']} SMs, {mach['l2_mb']} MiB L2 in {mach['parts']} partition{'s' if mach['parts'] > 1 else ''} "
          f"({mach['how']}); {a.ctas_per_sm} CTA{'s' if a.ctas_per_sm > 1 else ''} per SM; {m['ctas']} CTAs in "
          f"{m['waves']} waves")
    print("predicted for the whole launch by: flashlab " + " ".join(args))
    for label, k in figures:
        print(f"  {label:<18} {m[k]:>16}")
    return 0
