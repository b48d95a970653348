/* flash_bwd_pre.cuh: what the tensor-core FlashAttention-2 backwards (versions 9 and 13) run around
 * their main kernel, one definition for both:
 *
 *   fl_bwd_pre        lines 3-4 of the schedule (src/schedules/flash_bwd.c; docs/model.md
 *                     §backward, F2b): dQ = 0 (the fp32 accumulator, in HBM) and D = rowsum(dO o O);
 *                     reads O and dO (2 N d), writes dQ and D (N d + N), each element counted once
 *   fl_bwd_round      the fp32 accumulator rounded into the storage type (PyTorch's dQ), only when
 *                     the caller asks (a->dQout): outside the schedule, so not counted as part of it
 *                     (fl_tc_round, tc_gemm.cuh)
 * NEED is the calling version's FL_V_NEEDS: these kernels are compiled in each caller's file, and
 * are real exactly on the targets where that version is (scripts/cuda_arch_matrix.sh checks it).
 */
#ifndef FL_KERNELS_FLASH_BWD_PRE_CUH
#define FL_KERNELS_FLASH_BWD_PRE_CUH

#include "attn.h"
#include "tc_gemm.cuh"

/* The preprocessing streams: no tiles. */
static inline fl_tiles<1> fl_bwd_pre_tiles() { return {{{"none", 0, 0, 0, 4, 1, 0, FL_SMEM}}}; }

/* Lines 3-4: one row per D/8 threads, 16-byte loads; counts O, dO reads, D and dQ writes. */
template <class T, int D, int NEED>
__global__ void __launch_bounds__(FL_THREADS)
fl_fast_bwd_pre(fl_gptr<const T, FL_T_O> O, fl_gptr<const T, FL_T_dO> dO, fl_gptr<float, FL_T_D> Dv,
                  fl_gptr<float, FL_T_dQ> dQacc, long rows, fl_csink g)
{
    if constexpr (FL_CODE_HAS(NEED)) { /* with the calling version only: a stub elsewhere */
        constexpr int TPR = D / 8; /* threads per row: 8 or 16, a divisor of 32 */
        FlCount c;
        const long row = ((long)blockIdx.x * FL_THREADS + threadIdx.x) / TPR;
        const int part = threadIdx.x % TPR;
        float acc = 0.f;
        if (row < rows) {
            const uint4 uo = O.template ld_vec<uint4>(c, row * D + part * 8);
            const uint4 ug = dO.template ld_vec<uint4>(c, row * D + part * 8);
            const T *eo = (const T *)&uo, *eg = (const T *)&ug;
#pragma unroll
            for (int k = 0; k < 8; k++) acc += fl_to_f(eo[k]) * fl_to_f(eg[k]);
            dQacc.st_vec(c, row * D + part * 8, make_float4(0.f, 0.f, 0.f, 0.f));
            dQacc.st_vec(c, row * D + part * 8 + 4, make_float4(0.f, 0.f, 0.f, 0.f));
        }
#pragma unroll
        for (int o = TPR / 2; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
        if (row < rows && part == 0) Dv.st(c, row, acc);
        fl_cnt_flush(c, g, (int)sizeof(T));
    } else {
        fl_arch_missing();
    }
}

/* Launches lines 3-4 over a->nbh heads of a->N rows on a->stream. */
template <class T, int D, int NEED> static void fl_bwd_pre(const fl_gpu_args *a)
{
    const long rows = (long)a->N * (a->nbh > 0 ? a->nbh : 1);
    fl_launch(fl_fast_bwd_pre<T, D, NEED>, fl_bwd_pre_tiles().info("fl_fast_bwd_pre"), dim3((unsigned)FL_CDIV(rows * (D / 8), FL_THREADS)),
              dim3(FL_THREADS), a->stream, a->log, (const T *)a->O, (const T *)a->dO, a->Dv, a->dQ, rows, a->cnt);
}

/* Rounds the accumulator a->dQ into a->dQout (the storage type) when the caller gave one. */
template <class T, int D, int NEED> static void fl_bwd_round(const fl_gpu_args *a)
{
    const long rows = (long)a->N * (a->nbh > 0 ? a->nbh : 1);
    if (a->dQout)
        fl_launch(fl_tc_round<T, NEED>, fl_tc_round_tiles().info("fl_tc_round"), dim3(1024), dim3(256), a->stream, a->log,
                  (const float *)a->dQ, (T *)a->dQout, rows * D / 2, a->cnt);
}

#endif
