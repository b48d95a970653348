"""Lab 9 (a kernel you did not write): checks on the Nsight Compute counters recorded for
PyTorch's SDPA backends and Triton's tutorial on an H200 (figures/data/third_party_ncu.csv), and
on the fourth run of cuDNN's and FlashAttention-2's backward, which adds the L2's lookups of the
reductions (figures/data/third_party_ncu_run4_sdpa_bwd.csv).  The measured side is read from the
recorded rows; every model byte count is the launch model's, run here through the CLI
(`flashlab l2 --launch ... --format csv`, each configuration once per process: launch_row), never
typed in.  A check whose recorded file is absent skips and says so."""
import re

import flashlab as fl

from . import Skip, Wrong, attempt, check, function, near, number, numbers_list, whole
from .data import read_measurements

SECTOR = 32                        # bytes of an L2 sector (the counters count sectors)
DATA = "third_party_ncu.csv"       # runs 1-2: every kernel of the study, six shapes
RUN4 = "third_party_ncu_run4_sdpa_bwd.csv"   # run 4: cuDNN and FA2 backward, with the reductions' lookups
SMALL = ("s1", "s2")
SHAPES = ("s1", "s2", "s3", "s4", "s5", "s6")
WARPGROUP = 128                    # threads of a Hopper warpgroup (4 warps of 32)
FAMILIES = ("fwd-q", "fwd-qkv")    # the launch model's forward families
TOL_RATIO = 0.01                   # measured / model within 1 %: the schedule is identified
# exercise 1's names beside the recorded ones: traits of another configuration, and a kernel
# whose name has numbers but no FA2 traits
NAMES = ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<96, 64, 32, 4, 0, 0, cutlass::bfloat16_t>>(...)",
         "void fl_wg_fwd<__half, 64, 64, 2>(...)")
# the tutorial's backward tiles (BLOCK_M1, BLOCK_N1, BLOCK_M2, BLOCK_N2), as the notebook's twopass_model
TWOPASS = ("--Br", "32", "--Bc", "128", "--Br2", "128", "--Bc2", "32")
# run 4's counters of the reductions' lookups, and the fabric's read lookups
RED_TEX = "lts__t_sectors_srcunit_tex_op_red_lookup_miss.sum"
FAB = "lts__t_sectors_srcunit_ltcfabric_lookup_miss.sum"
FAB_READ = "lts__t_sectors_srcunit_ltcfabric_op_read_lookup_miss.sum"
SPILL_MISS = "l1tex__t_sectors_pipe_lsu_mem_local_op_ld_lookup_miss.sum"
SPILL_ALL = "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum"


# ----------------------------------------------------------------------------------------------
# The recorded rows and the launch model

def table(name=DATA):
    """The rows of a recorded file in the data folder ([] when it is not there)."""
    return read_measurements(fl.data_dir() / name)[1]


def pick(backend, pass_, kernel_part, shapes=SMALL, name=DATA):
    """The recorded rows of one backend and pass whose kernel name contains kernel_part."""
    return [r for r in table(name) if r["backend"] == backend and r["pass"] == pass_
            and kernel_part in r["kernel"] and r["shape"] in shapes]


def sm_read(r):
    """Bytes the SMs received from L2 (loads, LDGSTS and TMA): l1tex__m_xbar2l1tex_read_sectors x 32."""
    return float(r["l1tex__m_xbar2l1tex_read_sectors.sum"]) * SECTOR


_memo = {}


def launch_row(*args):
    """`flashlab l2 --launch ARGS... --format csv` as a dict of strings, each configuration run
    once per process (the notebook's _launch_row is this one, so a configuration the notebook
    ran is not run again by a check)."""
    key = tuple(str(a) for a in args)
    if key not in _memo:
        lines = [l for l in fl.cli("l2", "--launch", *key, "--format", "csv").splitlines()
                 if l and not l.startswith("#")]
        _memo[key] = dict(zip(lines[0].split(","), lines[1].split(",")))
    return _memo[key]


def causal(r):
    return ("--causal",) if r["causal"] == "1" else ()


def sm_model(r, family, Br, Bc, flip_causal=False):
    """The launch model's SM<-L2 read bytes of row r's shape run as `family` with tiles Br x Bc."""
    mask = causal(r) if not flip_causal else (() if causal(r) else ("--causal",))
    return int(launch_row(family, "--batch", r["B"], "--heads", r["H"], "--N", r["N"], "--d", r["d"],
                          "--Br", Br, "--Bc", Bc, "--dtype", r["dtype"], *mask)["sm_read_B"])


def traits(name):
    """(d, kBlockM, kBlockN) of Flash_fwd_kernel_traits<...> in a kernel's name, or None."""
    m = re.search(r"Flash_fwd_kernel_traits<(\d+), (\d+), (\d+)", name)
    return tuple(int(x) for x in m.groups()) if m else None


def name_tile(kernel):
    """cuDNN's tile string <m>x<n>x<d> of a kernel name, as ints."""
    return tuple(int(x) for x in re.search(r"_(\d+)x(\d+)x(\d+)_", kernel).groups())


def short(name, n=60):
    return name if len(name) <= n else name[:n - 3] + "..."


def fa2_rows(shapes=SMALL):
    return pick("flash", "fwd", "flash_fwd", shapes)


def cudnn_fwd_rows():
    return pick("cudnn", "fwd", "fprop")


def consumer_rows(r):
    """Query rows that share one K/V stream in cuDNN's warp-specialized forward: the name's
    rows per warpgroup times the consumer warpgroups (the block's warpgroups but the producer)."""
    return name_tile(r["kernel"])[0] * (int(r["launch__block_dim_x"]) // WARPGROUP - 1)


def memeff_rows():
    return pick("efficient", "fwd", "fmha_cutlassF")


def memeff_tiles(r):
    return tuple(int(x) for x in re.search(r"aligned_(\d+)x(\d+)", r["kernel"]).groups())


def family_ratios(family):
    """[(row, measured / model)] of the memory-efficient forward's rows run as `family`."""
    return [(r, sm_read(r) / sm_model(r, family, *memeff_tiles(r))) for r in memeff_rows()]


def fits(family):
    return all(abs(x - 1) <= TOL_RATIO for _, x in family_ratios(family))


def triton_rows():
    return [r for r in pick("triton", "bwd", "_attn_bwd", ("s3",)) if r["kernel"] == "_attn_bwd"]


def twopass_args(r):
    """The launch model of the tutorial's backward for row r (the notebook's twopass_model)."""
    return ("bwd-twopass", "--batch", r["B"], "--heads", r["H"], "--N", r["N"], "--d", r["d"], *TWOPASS) + causal(r)


def twopass_model(r):
    return int(launch_row(*twopass_args(r))["sm_read_B"])


def bwd_row():
    """Run 4's row of cuDNN's backward at s6 (B = 1, H = 16, N = 16384, d = 128, bf16), or None."""
    rows = pick("cudnn", "bwd", "bprop", ("s6",), name=RUN4)
    return rows[0] if rows else None


def bwd_args(r):
    """The launch model of cuDNN's backward for row r: FA2's backward schedule (`bwd-kv`: each CTA
    keeps a K/V tile and streams the query side; dQ by reductions into an fp32 accumulator), on
    its persistent grid (one CTA per SM, launch__grid_dim_x), with the two L2 partitions.  Its
    query tile is the name's first number; its key tile, as in cuDNN's forward, the name's second
    times the consumer warpgroups of its block (384 threads: 2 x 64 = 128)."""
    m, n, _ = name_tile(r["kernel"])
    consumers = int(r["launch__block_dim_x"]) // WARPGROUP - 1
    return ("bwd-kv", "--batch", r["B"], "--heads", r["H"], "--N", r["N"], "--d", r["d"], "--Br", str(m),
            "--Bc", str(n * consumers), "--dtype", r["dtype"], "--persistent", r["launch__grid_dim_x"],
            "--atomic-dq", "--l2-partitions", "2") + causal(r)


def bwd_model(r):
    """The launch model's row (dram_read_B, red_miss_B, ...) of cuDNN's backward for row r: about
    20 s of the CLI the first time, then from memory."""
    return launch_row(*bwd_args(r))


def red_sectors(r):
    """(the tex unit's reduction lookup misses, the fabric's lookup misses, the fabric's read
    lookup misses), in sectors."""
    return float(r[RED_TEX]), float(r[FAB]), float(r[FAB_READ])


def reductions_missed(r):
    """Bytes of the reductions' L2 misses: those homed on the reducing SM's side are the SM's
    (tex) lookups, those homed across the fabric's lookups that are not reads."""
    tex, fab, fab_read = red_sectors(r)
    return SECTOR * (tex + fab - fab_read)


def split_with(r, red, model):
    """(red / the model's red_miss_B, (DRAM reads - red) / (the model's dram_read_B - red_miss_B))."""
    red_m, dram_m = float(model["red_miss_B"]), float(model["dram_read_B"])
    return red / red_m, (float(r["dram__bytes_read.sum"]) - red) / (dram_m - red_m)


def answers(student=""):
    """The expected values of the checks on recorded data (what exists here)."""
    out = {"tiles": {n: (traits(n)[1:] if traits(n) else None)
                     for n in list(NAMES) + [r["name"] for r in fa2_rows(SHAPES)]}}
    out["model_sm_read"] = {r["shape"]: sm_model(r, "fwd-q", *traits(r["name"])[1:]) for r in fa2_rows()}
    out["cudnn_rows"] = {r["shape"]: consumer_rows(r) for r in cudnn_fwd_rows()}
    if memeff_rows():
        out["memeff_family"] = next((f for f in FAMILIES if fits(f)), None)
        s1 = [r for r in memeff_rows() if r["shape"] == "s1"]
        if s1:
            out["memeff_q_reads"] = -(-int(s1[0]["N"]) // memeff_tiles(s1[0])[1])
    out["spill_corrected_ratio"] = {r["shape"]: (sm_read(r) - float(r[SPILL_MISS]) * SECTOR) / twopass_model(r)
                                    for r in triton_rows()}
    r = bwd_row()
    if r is not None:
        out["reduction_misses"] = reductions_missed(r)
        out["dram_split"] = split_with(r, reductions_missed(r), bwd_model(r))
    return out


# ----------------------------------------------------------------------------------------------
# The checks

def _recorded(rows, name=DATA):
    """rows, or Skip naming the recorded file when there are none."""
    if not rows:
        raise Skip(f"no recorded data (figures/data/{name})")
    return rows


def _answer(what, fn, *args, none="returned None"):
    """The student's fn(*args) (attempt: its exception becomes a problem); Wrong when it is None."""
    got = attempt(what, fn, *args)
    if got is None:
        raise Wrong(f"{what} {none}")
    return got


def _collect(problems, fn, *args):
    """Runs one part of a check: a Wrong becomes one problem, the rest carries on."""
    try:
        problems.extend(p for p in (fn(*args) or []) if p)
    except Wrong as w:
        problems.append(str(w))


@check("lab9.tiles")
def tiles(student, fa2_tiles):
    fn = function("fa2_tiles", fa2_tiles)
    labels = {n: f"fa2_tiles({short(n, 110)!r})" for n in NAMES}
    for r in fa2_rows(SHAPES):
        labels.setdefault(r["name"], f"fa2_tiles(the name of row {r['shape']}, d = {r['d']})")
    names = list(labels)
    problems = []
    for name in names:
        t = traits(name)
        what = labels[name]
        try:
            got = attempt(what, fn, name)
        except Wrong as w:
            problems.append(f"{w}" + ("" if t else " (a name without Flash_fwd_kernel_traits<...>: return None)"))
            continue
        if t is None:
            if got is not None:
                problems.append(f"{what} = {got!r}: this name has no Flash_fwd_kernel_traits<...>, and its "
                                f"numbers are not FA2's tiles: return None")
            continue
        d, want = t[0], t[1:]
        if got is None:
            problems.append(f"{what} = None: the name has Flash_fwd_kernel_traits<d, kBlockM, kBlockN, ...>")
            continue
        got = tuple(whole(f"{what}[{i}]", x) for i, x in enumerate(numbers_list(what, got, 2)))
        if got == want:
            continue
        if got == want[::-1]:
            why = "swapped: (kBlockM, kBlockN), the query tile first"
        elif got == (d, want[0]):
            why = "the first template argument is the head dimension d; the tiles are the second and the third"
        elif got in {tuple(traits(n)[1:]) for n in names if traits(n)}:
            why = "those are another kernel's tiles: read them from this name, each kernel has its own"
        else:
            why = "kBlockM and kBlockN are the second and third arguments of Flash_fwd_kernel_traits<...>"
        problems.append(f"{what} = {got}, the name says {want}: {why}")
    return problems[:3]


def _why_model(r, Br, Bc, got, want):
    row = launch_row(*(("fwd-q", "--batch", r["B"], "--heads", r["H"], "--N", r["N"], "--d", r["d"],
                        "--Br", Br, "--Bc", Bc, "--dtype", r["dtype"]) + causal(r)))
    cols = [k for k, v in row.items() if k != "sm_read_B" and k.endswith("_B") and v.isdigit() and int(v) == got
            and int(v) != want]
    if cols:
        return f"that is the column {cols[0]}; the SMs' reads from L2 are sm_read_B"
    if got == int(sm_read(r)):
        return "that is the measured value; the model is the CLI's sm_read_B"
    if Br != Bc and got == sm_model(r, "fwd-q", Bc, Br):
        return "Br and Bc swapped: Br is the query tile (kBlockM), Bc the key tile"
    if got == sm_model(r, "fwd-qkv", Br, Bc):
        return "that is the fwd-qkv family; FA2's forward runs the flash2 order, fwd-q"
    if got == sm_model(r, "fwd-q", Br, Bc, flip_causal=True):
        return (f"the row's causal is {r['causal']}: add --causal for a causal row (and only for one)")
    return ("`flashlab l2 --launch fwd-q` with the row's B, H, N, d, dtype and causal and these tiles "
            f"gives {want}")


@check("lab9.model")
def model(student, model_sm_read):
    fn = function("model_sm_read", model_sm_read)
    rows = fa2_rows()
    _recorded(rows)
    problems = []
    for r in rows:
        Br, Bc = traits(r["name"])[1:]
        what = f"model_sm_read(row {r['shape']}, {Br}, {Bc})"
        got = _answer(what, fn, r, Br, Bc, none="returned None: no model yet")
        got = whole(what, got)
        want = sm_model(r, "fwd-q", Br, Bc)
        if got != want:
            problems.append(f"{what} = {got}: {_why_model(r, Br, Bc, got, want)}")
            continue
        ratio = sm_read(r) / want
        print(f"{r['shape']}: measured {int(sm_read(r))} B, model {want} B, measured / model {ratio:.4f}")
        if abs(ratio - 1) > TOL_RATIO:
            problems.append(f"{r['shape']}: measured / model = {ratio:.4f}: the data disagrees with the lab")
    return problems


@check("lab9.cudnn")
def cudnn(student, cudnn_rows):
    fn = function("cudnn_rows", cudnn_rows)
    rows = cudnn_fwd_rows()
    _recorded(rows)
    problems = []
    for r in rows:
        what = f"cudnn_rows(row {r['shape']})"
        got = _answer(what, fn, r)
        got = whole(what, got)
        want = consumer_rows(r)
        m, n, _ = name_tile(r["kernel"])
        threads = int(r["launch__block_dim_x"])
        groups = threads // WARPGROUP
        if got != want:
            if got == m:
                why = (f"that is the name's {m}: one warpgroup's rows; the block of {threads} threads is {groups} "
                       f"warpgroups of {WARPGROUP}, and the consumers share the K/V tiles")
            elif got == m * groups:
                why = "the producer warpgroup only loads tiles: it holds no query rows"
            elif got == threads:
                why = f"that counts threads, not query rows ({threads} threads = {groups} warpgroups of {WARPGROUP})"
            elif got in (groups, groups - 1):
                why = f"that counts warpgroups; each consumer warpgroup holds the name's {m} rows"
            else:
                why = f"the name's {m} rows per consumer warpgroup, times the consumers of the {threads}-thread block"
            problems.append(f"{what} = {got}: {why}")
            continue
        ratio = sm_read(r) / sm_model(r, "fwd-q", want, n)
        if abs(ratio - 1) > TOL_RATIO:
            problems.append(f"{r['shape']}: measured / model = {ratio:.4f} at Br = {want}: the data disagrees with the lab")
    return problems


def _family(memeff_family):
    if memeff_family is None:
        raise Wrong("memeff_family is not answered yet")
    if memeff_family not in FAMILIES:
        raise Wrong(f"memeff_family = {memeff_family!r}: one of {FAMILIES} (a string)")
    bad = [(r, x) for r, x in family_ratios(memeff_family) if abs(x - 1) > TOL_RATIO]
    if not bad:
        return []
    r, x = bad[0]
    why = ("the flash2 order reads each query tile once; this kernel reads more" if x > 1
           else "this family reads more than the kernel does")
    return [f"memeff_family = {memeff_family!r}: measured / model = {x:.3f} at {r['shape']}: {why}"]


def _q_reads(memeff_q_reads):
    s1 = [r for r in memeff_rows() if r["shape"] == "s1"]
    if not s1:
        raise Skip(f"no recorded s1 row of the memory-efficient forward (figures/data/{DATA})")
    N, Bc = int(s1[0]["N"]), memeff_tiles(s1[0])[1]
    want = -(-N // Bc)
    got = whole("memeff_q_reads", memeff_q_reads)
    if got == want:
        return []
    if got == 1:
        why = "once is the flash2 order (fwd-q); fwd-qkv reads the query tile again for every key tile"
    elif got == N:
        why = f"one read per key tile of {Bc} keys, not per key"
    elif got == 2 * want:
        why = "one read of the query tile per key tile (the K and V tiles are other reads)"
    elif got == Bc:
        why = f"{Bc} is the size of a key tile; count the key tiles"
    else:
        why = f"one read per key tile: N = {N} keys in tiles of {Bc}"
    return [f"memeff_q_reads = {got}: {why}"]


@check("lab9.memeff")
def memeff(student, memeff_family, memeff_q_reads):
    _recorded(memeff_rows())
    problems = []
    _collect(problems, _family, memeff_family)
    _collect(problems, _q_reads, memeff_q_reads)
    return problems


@check("lab9.spills")
def spills(student, spill_corrected_ratio):
    fn = function("spill_corrected_ratio", spill_corrected_ratio)
    rows = triton_rows()
    _recorded(rows)
    problems = []
    for r in rows:
        what = f"spill_corrected_ratio(row {r['shape']})"
        got = _answer(what, fn, r)
        got = number(what, got)
        meas, mod = sm_read(r), twopass_model(r)
        miss, every = float(r[SPILL_MISS]), float(r[SPILL_ALL])
        want = (meas - miss * SECTOR) / mod
        if near(got, want):
            raw = meas / mod
            if raw < 2 or abs(want - 1) > 0.10:
                problems.append(f"{r['shape']}: raw ratio {raw:.2f}, corrected {want:.3f}: the data disagrees with the lab")
            continue
        for wrong, why in ((meas / mod, "that is the raw ratio: take the spilled sectors' bytes out of the measured reads"),
                           ((meas - miss) / mod, f"the counter counts sectors: {SECTOR} bytes each"),
                           ((meas - every * SECTOR) / mod, "only the local loads that missed L1 (..._lookup_miss) were "
                                                            "fetched from L2; the others hit L1"),
                           (mod / (meas - miss * SECTOR), "inverted: the measured bytes (less the spills) over the model")):
            if near(got, wrong):
                break
        else:
            why = "(SM<-L2 read bytes - spilled sectors x 32) / twopass_model(r)"
        problems.append(f"{what} = {got}: {why}")
    return problems


RED_HINTS = (
    ("tex", "only the reductions homed on the reducing SM's side (the tex unit's lookups); those homed "
            "across the partitions are looked up as the fabric's: add the fabric's misses that are not reads"),
    ("all_fabric", "the fabric's lookup misses include reads (data an SM fetched from the other partition): "
                   "subtract ..._ltcfabric_op_read_lookup_miss"),
    ("sectors", f"the counters count sectors: {SECTOR} bytes each"),
    ("fabric", "add the reductions homed on the reducing SM's side (..._tex_op_red_lookup_miss)"),
)


def red_variants(r):
    """The plausible wrong reduction misses (bytes, or sectors for 'sectors'), by mistake."""
    tex, fab, fab_read = red_sectors(r)
    return {"tex": SECTOR * tex, "all_fabric": SECTOR * (tex + fab), "sectors": tex + fab - fab_read,
            "fabric": SECTOR * (fab - fab_read)}


def _reduction_misses(r, reduction_misses):
    fn = function("reduction_misses", reduction_misses)
    got = attempt("reduction_misses(row)", fn, r)
    if got is None:
        raise Wrong("reduction_misses(row) returned None")
    got = number("reduction_misses(row)", got)
    if near(got, reductions_missed(r)):
        return []
    wrong = red_variants(r)
    for key, why in RED_HINTS:
        if near(got, wrong[key]):
            break
    else:
        why = ("that is all of the DRAM reads; the reductions' misses are counted at the L2"
               if near(got, float(r["dram__bytes_read.sum"])) else
               "32 x (the tex unit's reduction misses + the fabric's lookup misses - the fabric's read misses)")
    return [f"reduction_misses(row) = {got}: {why}"]


def _dram_split(r, dram_split):
    fn = function("dram_split", dram_split)
    got = attempt("dram_split(row)", fn, r)
    if got is None:
        raise Wrong("dram_split(row) returned None")
    got = numbers_list("dram_split(row)", got, 2)
    mod = bwd_model(r)
    red = reductions_missed(r)
    want = split_with(r, red, mod)
    if near(got[0], want[0]) and near(got[1], want[1]):
        if not (want[0] < want[1] and abs(want[1] - 1) <= 0.10):
            return [f"dram_split = {tuple(want)}: the data disagrees with the lab (the reads' part is not the "
                    f"model's within 10 %, or the reductions do not carry more of the difference)"]
        return []
    meas, red_m, dram_m = float(r["dram__bytes_read.sum"]), float(mod["red_miss_B"]), float(mod["dram_read_B"])
    wrong = red_variants(r)
    cands = [(split_with(r, wrong[key], mod), why) for key, why in RED_HINTS]
    cands += [((want[0], (meas - red) / dram_m), "divide the reads' part by the model's reads' part: "
                                                "dram_read_B - red_miss_B, not the model's whole DRAM"),
              ((want[0], meas / (dram_m - red_m)), "take the reductions' misses out of the measured DRAM reads too"),
              ((1 / want[0], 1 / want[1]), "inverted: measured over the model"),
              ((want[1], want[0]), "the reductions' ratio first, then the reads'"),
              ((meas / dram_m, want[1]), "the first ratio is the reductions' misses over red_miss_B, not the "
                                          "whole DRAM ratio")]
    for (a, b), why in cands:
        if near(got[0], a) and near(got[1], b):
            break
    else:
        bad = [k for k in (0, 1) if not near(got[k], want[k])]
        why = ("the reductions' misses over the model's red_miss_B" if bad == [0] else
               "(measured DRAM reads - the reductions' misses) over (dram_read_B - red_miss_B)" if bad == [1] else
               "(reductions' misses / red_miss_B, (DRAM reads - reductions' misses) / (dram_read_B - red_miss_B))")
    return [f"dram_split(row) = ({got[0]}, {got[1]}): {why}"]


@check("lab9.reductions")
def reductions(student, reduction_misses, dram_split):
    r = bwd_row()
    if r is None:
        raise Skip(f"no recorded run 4 data (figures/data/{RUN4})")
    problems = []
    _collect(problems, _reduction_misses, r, reduction_misses)
    _collect(problems, _dram_split, r, dram_split)
    return problems
