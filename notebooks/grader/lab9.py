"""Lab 9's grading: labkit.lab9's checks on the student's rows and on rows and names the child
never sees: FA2 names of other traits, the FA2 forward at another batch and head count (the model
computed here with the CLI), cuDNN launches of other blocks and tiles, memory-efficient kernels
of other N and tiles, and the counters of the tutorial's and cuDNN's backward changed (the
models, the study's, unchanged)."""
from flashlab.labkit import lab9 as KIT

from .core import Check

LAB, SOURCE = 9, "lab9_other_kernels"
COUNTERS5 = ("l1tex__m_xbar2l1tex_read_sectors.sum", KIT.SPILL_MISS, KIT.SPILL_ALL)
COUNTERS6 = (KIT.RED_TEX, KIT.FAB, KIT.FAB_READ, "dram__bytes_read.sum")


def scaled(g, r, cols, lo=0.8, hi=1.25):
    return dict(r, probe="1", **{c: repr(float(r[c]) * g.uniform(lo, hi)) for c in cols if r.get(c)})


def params(g):
    P = KIT.draw(g)
    names = []
    for _ in range(3):
        d, m, n = g.choice([32, 64, 96, 128, 192, 256]), g.choice([64, 128, 176]), g.choice([32, 64, 96, 128, 256])
        names.append(f"void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<{d}, {m}, {n}, {g.choice([4, 8])}, "
                     f"false, false, cutlass::half_t>, false, true>(Flash_fwd_params)")
    names.append(f"void fmha_cutlassF_f16_aligned_{g.choice([32, 64])}x{g.choice([64, 128])}_rf_sm80(...)")
    fa2 = [dict(r, probe="1", B=str(g.randrange(1, 5)), H=str(g.choice([1, 2, 3, 4, 6, 8])),
                N=str(g.choice([256, 512, 768, 1024]))) for r in P["fa2"]]
    cud = []
    for r in P["cudnn"] * 3:
        m, n, d = KIT._name_tile(r["kernel"])
        m2 = g.choice([16, 32, 48, 64, 80, 96, 112, 128])
        kernel = r["kernel"].replace(f"_{m}x{n}x{d}_", f"_{m2}x{g.choice([64, 128])}x{d}_")
        cud.append(dict(r, probe="1", kernel=kernel, launch__block_dim_x=str(128 * g.randrange(2, 9))))
    mem = []
    for r in P["memeff"]:
        q, k = KIT._memeff_tiles(r)
        k2 = g.choice([x for x in (32, 64, 128) if x != q])
        mem.append(dict(r, probe="1", N=str(g.randrange(300, 9000)), kernel=r["kernel"].replace(f"aligned_{q}x{k}", f"aligned_{q}x{k2}")))
    P["_hidden"] = {"names": names, "fa2": fa2, "cudnn": cud, "memeff": mem,
                    "triton": [scaled(g, r, COUNTERS5) for r in P["triton"]],
                    "bwd": P["bwd"] + [scaled(g, r, COUNTERS6, 0.9, 1.1) for r in P["bwd"]]}
    return P


def _h(P, k):
    return P["_hidden"][k]


CHECKS = [
    Check("lab9.tiles", ("fa2_tiles",), cells=(1,), grade=lambda P, fa2_tiles: KIT.tiles.problems(P, fa2_tiles, _h(P, "names"))),
    Check("lab9.model", ("model_sm_read",), cells=(2,), allow=("cli",),
          grade=lambda P, model_sm_read: KIT.model.problems(P, model_sm_read, _h(P, "fa2"))),
    Check("lab9.cudnn", ("cudnn_rows",), cells=(3,), grade=lambda P, cudnn_rows: KIT.cudnn.problems(P, cudnn_rows, _h(P, "cudnn"))),
    Check("lab9.memeff", ("memeff_family", "memeff_q_reads"), cells=(4,),
          grade=lambda P, memeff_family, memeff_q_reads: KIT.memeff.problems(P, memeff_family, memeff_q_reads, _h(P, "memeff"))),
    Check("lab9.spills", ("spill_corrected_ratio",), cells=(5,),
          grade=lambda P, spill_corrected_ratio: KIT.spills.problems(P, spill_corrected_ratio, _h(P, "triton"))),
    Check("lab9.reductions", ("reduction_misses", "dram_split"), cells=(6,),
          grade=lambda P, reduction_misses, dram_split: KIT.reductions.problems(P, reduction_misses, dram_split, _h(P, "bwd"))),
]
