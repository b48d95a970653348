"""explain_match.py: the model side of scripts/explain_kernels.py (match).

For each kernel row of a collected CSV it
  1. identifies the schedule: family (launch_model.h: fwd-q, fwd-qkv, bwd-kv, bwd-twopass, pre,
     convert, combine) and tiles, from the kernel's name (the libraries' tile tables below), its
     launch (grid, block, cluster) and, where the program wrote them, its region's notes;
  2. runs the model: `flashlab l2 --launch` for the whole launch in grid order (SM<-L2 bytes, L2
     lookups, writes, reductions, DRAM reads), and for the flash2-order forward also `flashlab
     count` (fl_run, the two-level machine) as a cross-check of the walked elements;
  3. writes measured / model for each figure and, where one is off by more than --tolerance,
     tries the hypotheses the model can test (consumer warpgroups sharing the resident tile,
     cluster multicast) and the causes a second metric settles (register spills, the L2 request
     coalescer, spill stores), and names the next measurement where none does.

Tile tables (from the libraries' sources and the names they give their kernels):
  PyTorch FA2     flash_fwd_kernel<Flash_fwd_kernel_traits<d, kBlockM, kBlockN, nWarps, ...>> grid
                  (Tr, B, H); flash_fwd_splitkv_kernel grid (Tr, splits, B*H) and its combine;
                  flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<d, kBlockM,
                  kBlockN, ...>> grid (Tc, B, H), dQ by atomics; flash_bwd_dot_do_o_kernel (D, dQ
                  accumulator = 0); flash_bwd_convert_dq_kernel
  cuDNN (sm90)    ..._flash_fprop_wgmma_<type>_knob_<k>_<m>x<n>x<d>_..._cga<x>x<y>x<z>: a persistent
                  grid of warp-specialized CTAs (one producer warpgroup), m rows per consumer
                  warpgroup, n keys a step; ..._flash_bprop_wgmma_...: K/V kept, dQ by reductions;
                  compute_dot_do_o_specialized; convert_dq_to_16bits
  xFormers/CUTLASS fmha_cutlassF_<type>_aligned_<Br>x<Bc>_...: Q re-read for every key tile, grid
                  (Tr, H, B); fmha_cutlassB_<type>_aligned_<Br>x<Bc>_k<d>_...: bwd-memeff (kernel_backward.h:
                  D = rowsum(dO o O) for the whole head in every CTA, Q_i and dO_i read twice a pair, K_j
                  for dQ and, at k128, for S again, the fp32 dQ accumulator read and written per pair),
                  grid (Tc, H, B)
  Triton tutorial _attn_fwd grid (cdiv(N, BLOCK_M), B*H); _attn_bwd_preprocess; _attn_bwd grid
                  (N / BLOCK_N1, 1, B*H) with BLOCK_M1 = 32, BLOCK_N2 = 32, BLOCK_M2 = BLOCK_N1
                  (its backward's constants)
  flashlab        fl_wg_fwd<T, d, Bc, warpgroups> (Br = 64 x warpgroups), fl_fast_fwd; fl_fast_bwd
                  (K/V kept, dQ by atomics), fl_fast_bwd_pre, fl_tc_round
"""
import csv
import json
import os
import re
import subprocess
import sys

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


def identify(r, sms):
    """The schedule of a kernel row: a dict (lib, family, Br, Bc, ...) or None for a kernel that is
    not part of attention's schedule (copies, casts)."""
    name, base = r.get("name", ""), r.get("kernel", "")
    N = gi(r, "N")
    gx, gy, gz = gi(r, "launch__grid_dim_x", 1), gi(r, "launch__grid_dim_y", 1), gi(r, "launch__grid_dim_z", 1)
    threads = gi(r, "launch__block_dim_x", 1) * gi(r, "launch__block_dim_y", 1) * gi(r, "launch__block_dim_z", 1)
    cl = max(1, gi(r, "launch__cluster_dim_x", 1)) * max(1, gi(r, "launch__cluster_dim_y", 1)) * max(1, gi(r, "launch__cluster_dim_z", 1))
    info = region_info(r)
    rows = lambda: max(1, (gi(r, "B") * gi(r, "H") * N) // max(1, gx * gy * gz))
    base_id = dict(order="tile", persistent=0, cluster=cl, splits=1, atomic=0, zero_dq=0, Br2=0, Bc2=0, wg_tile=None,
                   consumers=1, source="")
    m = re.search(r"Flash_fwd_kernel_traits<(\d+), (\d+), (\d+), (\d+)", name)
    if m and "splitkv_kernel" in name:
        return dict(base_id, lib="PyTorch FA2", family="fwd-q", Br=int(m[2]), Bc=int(m[3]), splits=gy,
                    source="name: Flash_fwd_kernel_traits<d, kBlockM, kBlockN, ...>; grid y = splits")
    if m and "flash_fwd_kernel" in base:
        return dict(base_id, lib="PyTorch FA2", family="fwd-q", Br=int(m[2]), Bc=int(m[3]),
                    source="name: Flash_fwd_kernel_traits<d, kBlockM, kBlockN, ...>")
    if "splitkv_combine" in base:
        return dict(base_id, lib="PyTorch FA2", family="combine", Br=max(1, N // gx), Bc=max(1, N // gx),
                    source="name; splits from its split-KV kernel")
    m = re.search(r"Flash_bwd_kernel_traits<(\d+), (\d+), (\d+)", name)
    if m and "dq_dk_dv" in base:
        return dict(base_id, lib="PyTorch FA2", family="bwd-kv", Br=int(m[2]), Bc=int(m[3]), atomic=1,
                    source="name: Flash_bwd_kernel_traits<d, kBlockM, kBlockN, ...>; dQ by atomicAdd")
    if base == "flash_bwd_dot_do_o_kernel":
        return dict(base_id, lib="PyTorch FA2", family="pre", Br=rows(), Bc=rows(), zero_dq=1, source="name; grid")
    if base == "flash_bwd_convert_dq_kernel":
        return dict(base_id, lib="PyTorch FA2", family="convert", Br=rows(), Bc=rows(), source="name; grid")
    m = re.search(r"flash_(fprop|bprop)_wgmma_\w*?_(\d+)x(\d+)x(\d+)_", base)
    if m and "sdpa_sm90" in base:
        fwd = m[1] == "fprop"
        a, b = int(m[2]), int(m[3])
        persistent = gx if gy == 1 and gz == 1 else 0
        ident = dict(base_id, lib="cuDNN", persistent=persistent, consumers=max(1, threads // 128 - 1),
                     source=f"name: {m[2]}x{m[3]}x{m[4]} (rows per consumer warpgroup x keys x d); "
                            f"grid {gx} = a persistent CTA per SM; {threads} threads")
        if fwd:
            return dict(ident, family="fwd-q", Br=a, Bc=b, wg_tile="Br")
        return dict(ident, family="bwd-kv", Br=a, Bc=b, atomic=1, wg_tile="Bc")
    if base == "compute_dot_do_o_specialized":
        return dict(base_id, lib="cuDNN", family="pre", Br=rows(), Bc=rows(), zero_dq=1, source="name; grid")
    if base == "convert_dq_to_16bits":
        return dict(base_id, lib="cuDNN", family="convert", Br=rows(), Bc=rows(), source="name; grid")
    m = re.search(r"fmha_cutlass([FB])_\w+?_aligned_(\d+)x(\d+)", base)
    if m:
        fam = "fwd-qkv" if m[1] == "F" else "bwd-memeff"
        return dict(base_id, lib="xFormers/CUTLASS", family=fam, Br=int(m[2]), Bc=int(m[3]),
                    source=f"name: {m[2]}x{m[3]} (queries x keys); grid {gx} x H x B")
    if base == "_attn_fwd" and gx > 0 and N % gx == 0:
        cfg = re.search(r"BLOCK_N: (\d+)", info.get("config", ""))
        Br = N // gx
        return dict(base_id, lib="Triton tutorial", family="fwd-q", Br=Br, Bc=int(cfg[1]) if cfg else Br,
                    source="grid x = cdiv(N, BLOCK_M)" + ("; BLOCK_N from the autotuner's config" if cfg else ""))
    if base == "_attn_bwd_preprocess":
        return dict(base_id, lib="Triton tutorial", family="pre", Br=max(1, N // gx), Bc=max(1, N // gx), source="grid")
    if base == "_attn_bwd" and gx > 0 and N % gx == 0:
        n1 = N // gx
        return dict(base_id, lib="Triton tutorial", family="bwd-twopass", Br=32, Bc=n1, Br2=n1, Bc2=32,
                    source="grid x = N / BLOCK_N1; BLOCK_M1 = BLOCK_N2 = 32 (the tutorial's backward)")
    m = re.search(r"fl_wg_fwd<[^,]+, (\d+), (\d+), (\d+)>", name)
    if m:
        return dict(base_id, lib="flashlab", family="fwd-q", Br=64 * int(m[3]), Bc=int(m[2]),
                    source="name: fl_wg_fwd<T, d, Bc, warpgroups>")
    if base == "fl_fast_fwd" and gx > 0:
        return dict(base_id, lib="flashlab", family="fwd-q", Br=max(1, N // gx), Bc=64, source="grid")
    if base == "fl_fast_bwd" and gx > 0:
        t = re.fullmatch(r"(\d+)x(\d+)", info.get("bwd_tile", ""))
        return dict(base_id, lib="flashlab", family="bwd-kv", Br=int(t[1]) if t else 64, Bc=max(1, N // gx), atomic=1,
                    source="grid x = N / Bc" + ("; Br from the program's region notes" if t else "; Br = 64 assumed"))
    if base == "fl_fast_bwd_pre":
        return dict(base_id, lib="flashlab", family="pre", Br=rows(), Bc=rows(), zero_dq=1, source="grid")
    if base == "fl_tc_round":
        return dict(base_id, lib="flashlab", family="convert", Br=rows(), Bc=rows(), source="grid")
    return None


class Model:
    """The flashlab CLI: `l2 --launch` and `count`, each configuration run once."""

    def __init__(self, cli, l2_partitions=2, timing_dir=None):
        self.cli, self.cache, self.parts, self.timing_dir = cli, {}, l2_partitions, timing_dir

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

    def launch(self, r, ident, ctas_per_sm, sms):
        args = ["l2", "--launch", ident["family"], "--batch", r["B"], "--heads", r["H"], "--N", r["N"], "--d", r["d"],
                "--Br", str(ident["Br"]), "--Bc", str(ident["Bc"]), "--dtype", r["dtype"] or "fp16",
                "--order", ident["order"], "--persistent", str(ident["persistent"]), "--cluster", str(ident["cluster"]),
                "--splits", str(ident["splits"]), "--sms", str(sms), "--ctas-per-sm", str(ctas_per_sm), "--format", "csv",
                "--l2-partitions", str(self.parts),
                "--max-work", "0"]  # a batch job over the whole study: the interactive guard is lifted
        if ident["Br2"]:
            args += ["--Br2", str(ident["Br2"]), "--Bc2", str(ident["Bc2"])]
        if int(r["causal"] or 0):
            args.append("--causal")
        if ident["atomic"]:
            args.append("--atomic-dq")
        if ident["zero_dq"]:
            args.append("--zero-dq")
        if self.timing(r):
            args += ["--cta-timing", self.timing(r)]
        row = self._run(args)
        return dict(sm_read=int(row["sm_read_B"]), l2_read=int(row["l2_read_B"]), write=int(row["sm_write_B"]),
                    red=int(row["red_B"]), dram_read=int(row["dram_read_B"]), fabric=int(row["fabric_B"]),
                    red_miss=int(row["red_miss_B"]),
                    ctas=int(row["ctas"]),
                    waves=int(row["waves"]))

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


def explain_row(r, ident, model, tol, sms):
    meas = measured(r)
    limits = [gi(r, k) for k in ("launch__occupancy_limit_blocks", "launch__occupancy_limit_registers",
                                 "launch__occupancy_limit_shared_mem", "launch__occupancy_limit_warps")]
    per_sm = max(1, min([x for x in limits if x > 0] or [1]))
    first = dict(ident)
    mod = model.launch(r, ident, per_sm, sms)
    notes = {f: "" for f in FIGURES}
    # H1: the resident tile is shared by the consumer warpgroups of a warp-specialized CTA
    if off(ratio(meas["sm_read"], mod["sm_read"]), tol) and ident.get("wg_tile") and ident["consumers"] > 1:
        alt = dict(ident, **{ident["wg_tile"]: ident[ident["wg_tile"]] * ident["consumers"]})
        altm = model.launch(r, alt, per_sm, sms)
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
        st = meas["local_st"]
        if st and not off(ratio(meas["write"] - st, mod["write"]), tol):
            notes["write"] = (f"explained: spill stores (l1tex__t_sectors_pipe_lsu_mem_local_op_st = "
                              f"{st / mod['write']:.2f} x model) reach L2")
        else:
            notes["write"] = "not explained; next: partial-sector stores (l1tex__t_requests vs sectors of global stores)"
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
            pool = Model(model.cli, 1, model.timing_dir).launch(r, ident, per_sm, sms)["dram_read"]
            more = "" if ident["persistent"] or model.timing(r) else (
                f"{ratio(meas['dram_read'], model.launch(r, ident, per_sm + 1, sms)['dram_read']):.3f} with "
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
                                  f"one L2 pool (not the H200's); next: {nxt}")
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


def warm(inputs, model, a):
    """Runs every kernel's first model call (and the two-level count) on --jobs processes at once;
    match_file then finds them done.  The results are the same as one at a time."""
    from concurrent.futures import ThreadPoolExecutor
    calls = []
    for path in inputs:
        if not os.path.exists(path):
            return
        for r in read_csv(path)[1]:
            if not r.get("N") or (a.only_backend and r.get("backend") not in a.only_backend.split(",")):
                continue
            sms = gi(r, "launch__sm_count", 132) or 132
            ident = identify(r, sms)
            if ident is None or a.schedule:
                continue
            limits = [gi(r, k) for k in ("launch__occupancy_limit_blocks", "launch__occupancy_limit_registers",
                                         "launch__occupancy_limit_shared_mem", "launch__occupancy_limit_warps")]
            per_sm = max(1, min([x for x in limits if x > 0] or [1]))
            calls.append(lambda r=r, ident=ident, per_sm=per_sm, sms=sms: model.launch(r, ident, per_sm, sms))
            if ident.get("wg_tile") and ident["consumers"] > 1:
                alt = dict(ident, **{ident["wg_tile"]: ident[ident["wg_tile"]] * ident["consumers"]})
                calls.append(lambda r=r, alt=alt, per_sm=per_sm, sms=sms: model.launch(r, alt, per_sm, sms))
    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        for f in [ex.submit(c) for c in calls]:
            try:
                f.result()
            except RuntimeError:
                pass  # reported when match_file makes the same call


def match_file(a):
    inputs = a.csv if isinstance(a.csv, list) else [a.csv]
    model = Model(a.flashlab, getattr(a, "l2_partitions", 2), getattr(a, "cta_timing", None))
    warm(inputs, model, a)
    out_rows, prov = [], []
    for path in inputs:
        if not os.path.exists(path):
            print(f"explain_kernels: CSV: {path} does not exist", file=sys.stderr)
            return 2
        p, rows = read_csv(path)
        prov += [f"input {os.path.basename(path)}: " + l[2:] for l in p if l.startswith(("# commit", "# gpu", "# cuda", "# ncu:"))]
        for r in rows:
            if not r.get("N") or (a.only_backend and r.get("backend") not in a.only_backend.split(",")):
                continue
            sms = gi(r, "launch__sm_count", 132) or 132
            ident = identify(r, sms)
            if a.schedule and ident is not None:
                m = re.fullmatch(r"([a-z-]+):(\d+)x(\d+)", a.schedule)
                if not m:
                    print("explain_kernels: --schedule: give FAMILY:BrxBc (e.g. fwd-q:128x64)", file=sys.stderr)
                    return 2
                ident.update(family=m[1], Br=int(m[2]), Bc=int(m[3]), source="--schedule")
            row = {k: r.get(k, "") for k in COLS[:10]}
            row["time_us"] = f"{fnum(r, 'gpu__time_duration.sum') / 1e3:.1f}" if fnum(r, "gpu__time_duration.sum") else ""
            if ident is None:
                row["lib"] = "not attention's schedule"
                meas = measured(r)
                for f in FIGURES:
                    row[f"meas_{f}_B"] = "" if meas[f] is None else f"{meas[f]:.0f}"
                out_rows.append(row)
                continue
            try:
                ident, first, mod, meas, rs, notes, per_sm, two = explain_row(r, ident, model, a.tolerance, sms)
            except RuntimeError as e:
                print(f"explain_kernels: {e}", file=sys.stderr)
                return 2
            row.update(lib=ident["lib"], family=ident["family"], Br=ident["Br"], Bc=ident["Bc"],
                       Br2=ident["Br2"] or "", Bc2=ident["Bc2"] or "", order=ident["order"],
                       persistent=ident["persistent"], cluster=ident["cluster"], splits=ident["splits"],
                       atomic_dq=ident["atomic"], ctas_per_sm=per_sm, tiles_from=ident["source"],
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
        f.write(f"# model: flashlab l2 --launch (whole launch in grid order, L2 60 MiB in {model.parts} LRU "
                f"partition{'s' if model.parts > 1 else ''} (docs/l2_model.md), 32-byte sectors, emptied first; CTAs per SM "
                f"from ncu's occupancy limits); tolerance {a.tolerance}\n")
        f.write("# meas_sm_read = l1tex__m_xbar2l1tex_read_sectors x 32 (sectors delivered to the SMs: loads, LDGSTS, TMA); "
                "meas_l2_read = lts__t_sectors_srcunit_tex_op_read x 32; meas_write = lts__t_sectors_srcunit_tex_op_write x 32; "
                "meas_red = lts__t_sectors_srcunit_tex_op_red + _atom x 32; meas_dram_read = dram__bytes_read; "
                "meas_fabric = lts__t_sectors_srcunit_ltcfabric x 32 (sectors between the L2's partitions)\n")
        opts = (f" --l2-partitions {model.parts}" if model.parts != 2 else "") + (
            f" --cta-timing {model.timing_dir}" if model.timing_dir else "") + (
            f" --only-backend {a.only_backend}" if a.only_backend else "")
        f.write("# command: scripts/explain_kernels.py match " + " ".join(inputs) + opts + "\n")
        w = csv.DictWriter(f, fieldnames=COLS, extrasaction="ignore")
        w.writeheader()
        for row in out_rows:
            w.writerow(row)
    os.replace(tmp, a.out)
    n = sum(1 for r in out_rows if r.get("family"))
    print(f"explain_kernels: {n} attention kernels identified of {len(out_rows)} -> {a.out}", file=sys.stderr)
    return 0


def short(note):
    """the first clause of a note, for the table"""
    if not note:
        return ""
    head = note.split(";")[0].split(" (")[0]
    return head if len(head) < 90 else head[:87] + "..."


def table(paths):
    """Prints docs/third_party.md's table: one line per attention kernel of the explained CSVs."""
    print("| backend | pass | shape | kernel | family | tiles | SM<-L2 read | DRAM read | L2 lookups | L2 fabric | "
          "why a ratio is off |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for path in paths:
        for r in read_csv(path)[1]:
            if not r.get("family"):
                continue
            notes = [f"{f}: {short(r['note_' + f])}" for f in ("sm_read", "dram_read", "l2_read") if r.get("note_" + f)]
            tiles = f"{r['Br']}x{r['Bc']}" + (f" / {r['Br2']}x{r['Bc2']}" if r.get("Br2") else "")
            fmt = lambda x: f"{float(x):.3f}" if x else "-"
            print(f"| {r['backend']} | {r['pass']} | {r['shape']} | `{r['kernel']}` | {r['family']} | {tiles} | "
                  f"{fmt(r['ratio_sm_read'])} | {fmt(r['ratio_dram_read'])} | {fmt(r['ratio_l2_read'])} | "
                  f"{fmt(r.get('ratio_fabric'))} | {'; '.join(notes)} |")
    return 0
