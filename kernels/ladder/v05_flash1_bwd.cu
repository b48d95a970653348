/* v05_flash1_bwd.cu: version 5, FlashAttention backward (Dao et al. 2022, Algorithm 4) with
 * recomputation from the forward's O, l, m (version 2's outputs).
 *
 * What changed from version 4: the older algorithm, on the same loop (kernels/common/
 * flash_bwd_loop.cuh, style FA1).  There is no preprocessing pass: line 4 writes dQ = dK = dV = 0
 * to HBM (fl_flash1_bwd_init, 3Nd writes), and line 9 loads Q_i, O_i, dO_i, dQ_i, l_i, m_i
 * (4 Br d + 2 Br) to rebuild P = exp(S - m_i) / l_i and D_i = rowsum(dO_i o O_i) on chip
 * (line 17).  What it costs: O_i joins the per-pair reads, so at N = 4096, d = 64, 32 x 32, fp16
 * the counters measure 408 MB read and 137 MB written (docs/validation.md; O is flash1's fp32
 * running O), against version 4's 138 MB and 69 MB at 64 x 64.
 *
 * Napkin math (docs/model.md eq. C1b): reads 2Nd + Tc N (4d + 2), writes 5Nd + Tc Nd; footprint
 * (F1b) 4 Bc d + 4 Br d + 2 Br Bc + 3 Br.
 */
#include "attn.h"
#include "flash_bwd_loop.cuh"

#define FL_V_NEEDS FL_NEED_BASE

/* the initialisation streams: no tiles */
static fl_tiles<1> v05_init_tiles() { return fl_make_tiles({FL_TILES_NONE}); }

/* line 4: dQ = 0, dK = 0, dV = 0 in HBM. */
template <class T>
__global__ void __launch_bounds__(FL_THREADS)
fl_flash1_bwd_init(fl_gptr<float, FL_T_dQ> dQ, fl_gptr<T, FL_T_dK> dK, fl_gptr<T, FL_T_dV> dV, long Nd, fl_csink g)
{
    FlCount c;
    const long stride = (long)gridDim.x * FL_THREADS;
    for (long x = (long)blockIdx.x * FL_THREADS + threadIdx.x; x < Nd; x += stride) {
        dQ.st(c, x, 0.f);
        dK.st(c, x, 0.f);
        dV.st(c, x, 0.f);
    }
    fl_cnt_flush(c, g, (int)sizeof(T));
}

template <class T, int D, int BR, int BC> static void launch_flash1_bwd(const fl_gpu_args *a)
{
    static_assert(fl_flash_bwd_tiles<D, BR, BC, FA1>().footprint() == fl_fp_eval(fl_fp_coef FL_FP_FLASH1_BWD, BR, BC, D),
                  "the tiles are the model's (F1b)");
    const long Nd = (long)a->N * D;
    const int ig = (int)fl_grid_stride(Nd, FL_THREADS);
    fl_launch(fl_flash1_bwd_init<T>, v05_init_tiles().info("fl_flash1_bwd_init"), dim3(ig), dim3(FL_THREADS), a->stream,
              a->log, a->dQ, (T *)a->dK, (T *)a->dV, Nd, a->cnt);
    fl_launch_flash_bwd_loop<T, D, BR, BC, FA1>(a);
}

#define K1B(T, DT, D, BR, BC) \
    {&FL_FLASH1_BWD, 5, DT, FL_F32, D, BR, BC, fl_flash_bwd_tiles<D, BR, BC, FA1>().footprint(), 1, launch_flash1_bwd<T, D, BR, BC>, \
     (long)fl_flash_bwd_tiles<D, BR, BC, FA1>().dyn_bytes()}

static constexpr fl_kernel_info flash1_bwd_table[] = {
    K1B(__half, FL_F16, 64, 16, 16), K1B(__half, FL_F16, 64, 32, 32), K1B(__half, FL_F16, 64, 64, 64),
    K1B(__half, FL_F16, 128, 16, 16), K1B(__half, FL_F16, 128, 32, 32),
    K1B(float, FL_F32, 64, 32, 32), K1B(__nv_bfloat16, FL_BF16, 64, 32, 32),
};

FL_LADDER_FILE(05, flash1_bwd_table, FL_V_NEEDS)
