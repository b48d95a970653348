"""Lab 9 (a kernel you did not write): checks on the Nsight Compute counters recorded for
PyTorch's SDPA backends and Triton's tutorial on an H200 (figures/data/third_party_ncu.csv), and
on the fourth run of cuDNN's and FlashAttention-2's backward, which adds the L2's lookups of the
reductions (figures/data/third_party_ncu_run4_sdpa_bwd.csv).  The measured side is read from the
recorded rows; every model byte count is the launch model's, run here through the CLI
(`flashlab l2 --launch ... --format csv`, each configuration once per process: launch_row), never
typed in.  A check whose recorded file is absent skips and says so."""
import re

import flashlab as fl

from . import Skip, Wrong, attempt, check, function, near, number, numbers_list, rng, student_id, whole
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
        # the recorded study's shapes: up to about 20 s of the CLI each (cuDNN's backward at
        # N = 16384), past the interactive default of --max-work (3e9 steps, about 30 s by its
        # estimate, which bounds bwd-kv at 46 s here): the lab raises it, as the refusal says to
        lines = [l for l in fl.cli("l2", "--launch", *key, "--format", "csv", "--max-work", "1e10").splitlines()
                 if l and not l.startswith("#")]
        _memo[key] = dict(zip(lines[0].split(","), lines[1].split(",")))
    return _memo[key]


def causal(r):
    return ("--causal",) if r["causal"] == "1" else ()


def _sm_model(r, family, Br, Bc, flip_causal=False):
    """The launch model's SM<-L2 read bytes of row r's shape run as `family` with tiles Br x Bc."""
    mask = causal(r) if not flip_causal else (() if causal(r) else ("--causal",))
    return int(launch_row(family, "--batch", r["B"], "--heads", r["H"], "--N", r["N"], "--d", r["d"],
                          "--Br", Br, "--Bc", Bc, "--dtype", r["dtype"], *mask)["sm_read_B"])


def _traits(name):
    """(d, kBlockM, kBlockN) of Flash_fwd_kernel_traits<...> in a kernel's name, or None."""
    m = re.search(r"Flash_fwd_kernel_traits<(\d+), (\d+), (\d+)", name)
    return tuple(int(x) for x in m.groups()) if m else None


def _name_tile(kernel):
    """cuDNN's tile string <m>x<n>x<d> of a kernel name, as ints."""
    return tuple(int(x) for x in re.search(r"_(\d+)x(\d+)x(\d+)_", kernel).groups())


def short(name, n=60):
    return name if len(name) <= n else name[:n - 3] + "..."


def fa2_rows(shapes=SMALL):
    return pick("flash", "fwd", "flash_fwd", shapes)


def cudnn_fwd_rows(shapes=SMALL):
    return pick("cudnn", "fwd", "fprop", shapes)


def _consumer_rows(r):
    """Query rows that share one K/V stream in cuDNN's warp-specialized forward: the name's
    rows per warpgroup times the consumer warpgroups (the block's warpgroups but the producer)."""
    return _name_tile(r["kernel"])[0] * (int(r["launch__block_dim_x"]) // WARPGROUP - 1)


def memeff_rows(shapes=SMALL):
    return pick("efficient", "fwd", "fmha_cutlassF", shapes)


def _memeff_tiles(r):
    return tuple(int(x) for x in re.search(r"aligned_(\d+)x(\d+)", r["kernel"]).groups())


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
    m, n, _ = _name_tile(r["kernel"])
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


def _reductions_missed(r):
    """Bytes of the reductions' L2 misses: those homed on the reducing SM's side are the SM's
    (tex) lookups, those homed across the fabric's lookups that are not reads."""
    tex, fab, fab_read = red_sectors(r)
    return SECTOR * (tex + fab - fab_read)


def _split_with(r, red, model):
    """(red / the model's red_miss_B, (DRAM reads - red) / (the model's dram_read_B - red_miss_B))."""
    red_m, dram_m = float(model["red_miss_B"]), float(model["dram_read_B"])
    return red / red_m, (float(r["dram__bytes_read.sum"]) - red) / (dram_m - red_m)


STUDY = "third_party_explained.csv"        # the study's model of each kernel (scripts/explain_kernels.py match)
STUDY4 = "third_party_explained_run4.csv"  # the same for run 4


def study(backend, pass_, shape, kernel_part, name=STUDY, exact=False):
    """The recorded study's row (its identified family, tiles and model_sm_read_B, ...) of one
    kernel (its name contains kernel_part, or is it with exact), or None: the launch model as
    scripts/explain_kernels.py ran it (its command and inputs in the file's # lines)."""
    return next((r for r in read_measurements(fl.data_dir() / name)[1] if r["backend"] == backend
                 and r["pass"] == pass_ and r["shape"] == shape
                 and (r["kernel"] == kernel_part if exact else kernel_part in r["kernel"])), None)


def draw(g):
    """A student's rows from g: 'names' (FA2 kernel names), 'fa2' (the FA2 forward row of a small
    shape, for the live model), 'cudnn' and 'memeff' (the cuDNN and memory-efficient forward rows of
    a shape each), 'triton' (the tutorial's backward at a d = 128 shape) with 'twopass' its schedule's
    model, and 'bwd' (run 4's cuDNN backward) with 'bwd_model' its model (both from the study)."""
    def at(rows, shapes):
        have = sorted({r["shape"] for r in rows if r["shape"] in shapes})
        sh = g.choice(have) if have else None
        return [r for r in rows if r["shape"] == sh][:1]
    fa2 = fa2_rows(SHAPES)
    fitted = [r["shape"] for r in memeff_rows(SHAPES)   # where the study's fwd-qkv model fits within 1 %
              if (st := study("efficient", "fwd", r["shape"], r["kernel"][:20]))
              and abs(sm_read(r) / int(st["model_sm_read_B"]) - 1) <= TOL_RATIO]
    tri = [r for r in pick("triton", "bwd", "_attn_bwd", ("s3", "s4", "s6")) if r["kernel"] == "_attn_bwd"]
    tri = [t for t in tri if t["shape"] == g.choice(sorted({x["shape"] for x in tri}))] if tri else []
    P = {"names": [r["name"] for r in fa2], "fa2": at(fa2, SMALL),
         "cudnn": at(cudnn_fwd_rows(SMALL), SMALL), "memeff": at(memeff_rows(SHAPES), fitted), "triton": tri[:1],
         "bwd": [], "twopass": {}, "bwd_model": None, "study": {}}
    for r in P["cudnn"] + P["memeff"]:
        st = study(r["backend"], "fwd", r["shape"], r["kernel"][:20])
        if st:
            P["study"][r["backend"]] = {"family": st["family"], "Br": int(st["Br"]), "Bc": int(st["Bc"]),
                                        "model_sm_read_B": int(st["model_sm_read_B"])}
    for r in P["triton"]:
        st = study("triton", "bwd", r["shape"], "_attn_bwd", exact=True)
        if st:
            P["twopass"][r["shape"]] = int(st["model_sm_read_B"])
    b = bwd_row()
    st = b and study("cudnn", "bwd", "s6", "bprop", name=STUDY4)
    if b and st:
        P["bwd"], P["bwd_model"] = [b], {"dram_read_B": st["model_dram_read_B"], "red_miss_B": st["model_red_miss_B"]}
    return P


def params(student=""):
    """The student's rows (draw); '' gives the handout's (a fixed generator's)."""
    return draw(rng("lab9", student_id(student)))


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
def tiles(P, fa2_tiles, extra=()):
    """fa2_tiles on NAMES, the recorded FA2 names (P["names"]) and extra names."""
    fn = function("fa2_tiles", fa2_tiles)
    labels = {n: f"fa2_tiles({short(n, 110)!r})" for n in NAMES}
    for k, n in enumerate(list(P["names"]) + list(extra)):
        labels.setdefault(n, f"fa2_tiles(name {k + 1}: {short(n, 90)!r})")
    names = list(labels)
    problems = []
    for name in names:
        t = _traits(name)
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
        elif got in {tuple(_traits(n)[1:]) for n in names if _traits(n)}:
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
    if Br != Bc and got == _sm_model(r, "fwd-q", Bc, Br):
        return "Br and Bc swapped: Br is the query tile (kBlockM), Bc the key tile"
    if got == _sm_model(r, "fwd-qkv", Br, Bc):
        return "that is the fwd-qkv family; FA2's forward runs the flash2 order, fwd-q"
    if got == _sm_model(r, "fwd-q", Br, Bc, flip_causal=True):
        return (f"the row's causal is {r['causal']}: add --causal for a causal row (and only for one)")
    return ("`flashlab l2 --launch fwd-q` with the row's B, H, N, d, dtype and causal and these tiles "
            f"gives {want}")


@check("lab9.model")
def model(P, model_sm_read, extra=()):
    """model_sm_read on P's FA2 rows (measured / model within 1 %) and on extra rows (other batch,
    heads or N than measured: the model's value only)."""
    fn = function("model_sm_read", model_sm_read)
    rows = list(P["fa2"]) + list(extra)
    _recorded(rows)
    problems = []
    for r in rows:
        Br, Bc = _traits(r["name"])[1:]
        what = f"model_sm_read(row {r['shape']}, {Br}, {Bc})"
        got = _answer(what, fn, r, Br, Bc, none="returned None: no model yet")
        got = whole(what, got)
        want = _sm_model(r, "fwd-q", Br, Bc)
        if got != want:
            problems.append(f"{what} = {got}: {_why_model(r, Br, Bc, got, want)}")
            continue
        if r.get("probe"):
            continue
        ratio = sm_read(r) / want
        print(f"{r['shape']}: measured {int(sm_read(r))} B, model {want} B, measured / model {ratio:.4f}")
        if abs(ratio - 1) > TOL_RATIO:
            problems.append(f"{r['shape']}: measured / model = {ratio:.4f}: the data disagrees with the lab")
    return problems


@check("lab9.cudnn")
def cudnn(P, cudnn_rows, extra=()):
    """cudnn_rows on P's cuDNN row (its measured reads over the study's model at those rows within
    1 %) and on extra rows (other blocks and names)."""
    fn = function("cudnn_rows", cudnn_rows)
    rows = list(P["cudnn"]) + list(extra)
    _recorded(rows)
    problems = []
    for r in rows:
        what = f"cudnn_rows(row {r['shape']})"
        got = _answer(what, fn, r)
        got = whole(what, got)
        want = _consumer_rows(r)
        m, n, _ = _name_tile(r["kernel"])
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
        st = P["study"].get("cudnn")
        if r.get("probe") or not st or st["Br"] != want:
            continue
        ratio = sm_read(r) / st["model_sm_read_B"]
        if abs(ratio - 1) > TOL_RATIO:
            problems.append(f"{r['shape']}: measured / model = {ratio:.4f} at Br = {want}: the data disagrees with the lab")
    return problems


def _family(P, memeff_family):
    if memeff_family is None:
        raise Wrong("memeff_family is not answered yet")
    if memeff_family not in FAMILIES:
        raise Wrong(f"memeff_family = {memeff_family!r}: one of {FAMILIES} (a string)")
    st = P["study"].get("efficient")
    if not st or not P["memeff"]:
        return []
    r = P["memeff"][0]
    if memeff_family == st["family"]:
        x = sm_read(r) / st["model_sm_read_B"]
        return [] if abs(x - 1) <= TOL_RATIO else [f"{r['shape']}: measured / model = {x:.3f}: the data disagrees with the lab"]
    why = ("the flash2 order reads each query tile once; this kernel reads more" if memeff_family == "fwd-q"
           else "this family reads more than the kernel does")
    return [f"memeff_family = {memeff_family!r}: {why}"]


def _q_reads(rows, memeff_q_reads):
    fn = function("memeff_q_reads", memeff_q_reads)
    for r in rows:
        N, Bc = int(r["N"]), _memeff_tiles(r)[1]
        want = -(-N // Bc)
        what = f"memeff_q_reads(row {r['shape']}: N = {N}, {r['kernel'][:40]}...)"
        got = whole(what, _answer(what, fn, r))
        if got == want:
            continue
        if got == 1:
            why = "once is the flash2 order (fwd-q); fwd-qkv reads the query tile again for every key tile"
        elif got == N:
            why = f"one read per key tile of {Bc} keys, not per key"
        elif got == 2 * want:
            why = "one read of the query tile per key tile (the K and V tiles are other reads)"
        elif got == Bc:
            why = f"{Bc} is the size of a key tile; count the key tiles"
        elif got == -(-N // _memeff_tiles(r)[0]):
            why = "the name's first number is the query tile; the key tile is the second"
        else:
            why = f"one read per key tile: N = {N} keys in tiles of {Bc} (the kernel's name says its tiles)"
        return [f"{what} = {got}: {why}"]
    return []


@check("lab9.memeff")
def memeff(P, memeff_family, memeff_q_reads, extra=()):
    rows = list(P["memeff"]) + list(extra)
    _recorded(rows)
    problems = []
    _collect(problems, _family, P, memeff_family)
    _collect(problems, _q_reads, rows, memeff_q_reads)
    return problems


@check("lab9.spills")
def spills(P, spill_corrected_ratio, extra=()):
    """spill_corrected_ratio on P's row of the tutorial's backward (and extra rows of other
    counters), with P's model of its schedule (P["twopass"], by shape)."""
    fn = function("spill_corrected_ratio", spill_corrected_ratio)
    rows = list(P["triton"]) + list(extra)
    _recorded(rows)
    problems = []
    for r in rows:
        what = f"spill_corrected_ratio(row {r['shape']})"
        got = _answer(what, fn, r)
        got = number(what, got)
        meas, mod = sm_read(r), P["twopass"][r["shape"]]
        miss, every = float(r[SPILL_MISS]), float(r[SPILL_ALL])
        want = (meas - miss * SECTOR) / mod
        if near(got, want):
            raw = meas / mod
            if not r.get("probe") and (raw < 2 or abs(want - 1) > 0.10):
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
    if near(got, _reductions_missed(r)):
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


def _dram_split(r, dram_split, mod):
    fn = function("dram_split", dram_split)
    got = attempt("dram_split(row)", fn, r)
    if got is None:
        raise Wrong("dram_split(row) returned None")
    got = numbers_list("dram_split(row)", got, 2)
    red = _reductions_missed(r)
    want = _split_with(r, red, mod)
    if near(got[0], want[0]) and near(got[1], want[1]):
        if not r.get("probe") and not (want[0] < want[1] and abs(want[1] - 1) <= 0.10):
            return [f"dram_split = {tuple(want)}: the data disagrees with the lab (the reads' part is not the "
                    f"model's within 10 %, or the reductions do not carry more of the difference)"]
        return []
    meas, red_m, dram_m = float(r["dram__bytes_read.sum"]), float(mod["red_miss_B"]), float(mod["dram_read_B"])
    wrong = red_variants(r)
    cands = [(_split_with(r, wrong[key], mod), why) for key, why in RED_HINTS]
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
def reductions(P, reduction_misses, dram_split, rows=None):
    """reduction_misses and dram_split on run 4's cuDNN backward (rows: others of the grader's),
    with the study's model of it (P["bwd_model"])."""
    rows = P["bwd"] if rows is None else rows
    if not rows or not P["bwd_model"]:
        raise Skip(f"no recorded run 4 data (figures/data/{RUN4}, {STUDY4})")
    problems = []
    for r in rows:
        _collect(problems, _reduction_misses, r, reduction_misses)
        _collect(problems, _dram_split, r, dram_split, P["bwd_model"])
        if problems:
            break
    return problems
