/* registry.cu: the ladder's versions, in order, each with its file, what it needs of the GPU, its
 * table of kernel variants and its probe (attn.h).  Adding a rung is a file in kernels/ladder/
 * and a line here.  What a version needs is its file's FL_V_NEEDS (one definition, which its
 * kernels' guards and its probe use too). */
#include "attn.h"

#define FL_LADDER_FNS(v) fl_v##v##_needs, fl_v##v##_kernels, fl_v##v##_probe

static const fl_version_info versions[] = {
    {1, "v01_standard_fwd.cu", "standard forward (Algorithm 0): S, P in HBM", FL_LADDER_FNS(01)},
    {2, "v02_flash1_fwd.cu", "FlashAttention forward (Algorithm 1): O, l, m in HBM, wavefront", FL_LADDER_FNS(02)},
    {3, "v03_flash2_fwd.cu", "FlashAttention-2 forward: query-owned", FL_LADDER_FNS(03)},
    {4, "v04_flash2_bwd.cu", "FlashAttention-2 backward (Algorithm 2): dQ in HBM, wavefront", FL_LADDER_FNS(04)},
    {5, "v05_flash1_bwd.cu", "FlashAttention backward (Algorithm 4), wavefront", FL_LADDER_FNS(05)},
    {6, "v06_standard_bwd.cu", "standard backward (Algorithm 3): dP, dS in HBM", FL_LADDER_FNS(06)},
    {7, "v07_flash2_fwd_mma.cu", "version 3 on the tensor cores (mma.sync, cp.async)", FL_LADDER_FNS(07)},
    {8, "v08_standard_fwd_mma.cu", "version 1 on the tensor cores", FL_LADDER_FNS(08)},
    {9, "v09_flash2_bwd_mma.cu", "version 4 on the tensor cores, dQ by red.global.add", FL_LADDER_FNS(09)},
    {10, "v10_flash2_fwd_wgmma.cu", "version 7 with wgmma", FL_LADDER_FNS(10)},
    {11, "v11_standard_bwd_mma.cu", "version 6 on the tensor cores", FL_LADDER_FNS(11)},
    {12, "v12_flash2_fwd_ws.cu", "version 10 warp-specialized (TMA, producer and consumers)", FL_LADDER_FNS(12)},
    {13, "v13_flash2_bwd_ws.cu", "version 9 with wgmma, warp-specialized as version 12", FL_LADDER_FNS(13)},
};

const fl_version_info *fl_versions(int *n)
{
    *n = (int)(sizeof versions / sizeof versions[0]);
    return versions;
}
