/* v04_flash2_bwd.cu: version 4, FlashAttention-2 backward (Dao 2023, Algorithm 2) with
 * recomputation: the score tiles are rebuilt from Q, K and the forward's logsumexp L.
 *
 * What changed from version 3: the backward pass (versions 1-3 are forwards).  It reads what
 * version 3 saved (O, L) instead of the N x N matrices a standard backward needs (version 6), at
 * the price of recomputing S and P.  What it costs: dQ_i is read and written in HBM once per
 * (key block, query block) pair, as the paper's algorithm writes it: at N = 4096, d = 64, 64 x 64,
 * fp16 the counters measure 138 MB read and 69 MB written (docs/validation.md), against 302 MB and
 * 69 MB for the standard backward; H200 time (fp16, d = 128, 32 x 32, one counted launch):
 * 11.1 ms at N = 4096, 71.5 ms at N = 16384 (figures/data/gpu_validate_all.csv, column ms).
 *
 * The schedule is src/schedules/flash_bwd.c (style FA2) line for line:
 *   fl_flash2_bwd_pre  line 3-4, per row: load O_i, dO_i; write D_i = rowsum(dO_i o O_i) and
 *                      dQ_i = 0                        2Nd reads (O, dO), N + Nd writes (D, dQ)
 *   fl_flash_bwd       lines 5-18 (kernels/common/flash_bwd_loop.cuh): a CTA per key block j,
 *                      the CTAs a wavefront that hands dQ_i from key block to key block
 * Napkin math (docs/model.md eq. C2b): reads 4Nd + Tc N (3d + 2), writes N + 3Nd + Tc Nd: dQ
 * crosses HBM twice per key block (FlashAttention-2's own kernel adds into dQ with atomics
 * instead, version 9; the model counts the algorithm).  dQ is an fp32 accumulator in HBM
 * (FlashAttention-2's dq_accum is fp32 too, rule R8); dK, dV are written once in the storage
 * type; D and L are fp32.
 */
#include "attn.h"
#include "flash_bwd_loop.cuh"

#define FL_V_NEEDS FL_NEED_BASE

/* the preprocessing streams: no tiles */
static fl_tiles<1> v04_pre_tiles() { return fl_make_tiles({FL_TILES_NONE}); }

/* lines 3-4: D = rowsum(dO o O), dQ = 0, a warp per row. */
template <class T>
__global__ void __launch_bounds__(FL_THREADS)
fl_flash2_bwd_pre(fl_gptr<const T, FL_T_O> O, fl_gptr<const T, FL_T_dO> dO, fl_gptr<float, FL_T_D> Dv,
                  fl_gptr<float, FL_T_dQ> dQ, int N, int D, fl_csink g)
{
    FlCount c;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (long r = (long)blockIdx.x * (FL_THREADS / 32) + warp; r < N; r += (long)gridDim.x * (FL_THREADS / 32)) {
        float acc = 0.f;
        for (int k = lane; k < D; k += 32)
            acc += O.ld(c, r * D + k) * dO.ld(c, r * D + k);
        acc = fl_warp_sum(acc);
        if (lane == 0) Dv.st(c, r, acc);
        for (int k = lane; k < D; k += 32) dQ.st(c, r * D + k, 0.f);
    }
    fl_cnt_flush(c, g, (int)sizeof(T));
}

template <class T, int D, int BR, int BC> static void launch_flash2_bwd(const fl_gpu_args *a)
{
    static_assert(fl_flash_bwd_tiles<D, BR, BC, FA2>().footprint() == fl_fp_eval(fl_fp_coef FL_FP_FLASH2_BWD, BR, BC, D),
                  "the tiles are the model's (F2b)");
    const int N = a->N;
    const int pre_grid = (int)fl_grid_stride(N, FL_THREADS / 32); /* a warp a row */
    fl_launch(fl_flash2_bwd_pre<T>, v04_pre_tiles().info("fl_flash2_bwd_pre"), dim3(pre_grid), dim3(FL_THREADS), a->stream,
              a->log, (const T *)a->O, (const T *)a->dO, a->Dv, a->dQ, N, D, a->cnt);
    fl_launch_flash_bwd_loop<T, D, BR, BC, FA2>(a);
}

#define K2B(T, DT, D, BR, BC) \
    {&FL_FLASH2_BWD, 4, DT, DT, D, BR, BC, fl_flash_bwd_tiles<D, BR, BC, FA2>().footprint(), 1, launch_flash2_bwd<T, D, BR, BC>, \
     (long)fl_flash_bwd_tiles<D, BR, BC, FA2>().dyn_bytes()}

static constexpr fl_kernel_info flash2_bwd_table[] = {
    K2B(__half, FL_F16, 64, 16, 16), K2B(__half, FL_F16, 64, 32, 32), K2B(__half, FL_F16, 64, 64, 64),
    K2B(__half, FL_F16, 128, 16, 16), K2B(__half, FL_F16, 128, 32, 32), K2B(__half, FL_F16, 128, 64, 64),
    K2B(float, FL_F32, 64, 32, 32), K2B(float, FL_F32, 128, 32, 32),
    K2B(__nv_bfloat16, FL_BF16, 64, 32, 32), K2B(__nv_bfloat16, FL_BF16, 128, 32, 32),
};

FL_LADDER_FILE(04, flash2_bwd_table, FL_V_NEEDS)
