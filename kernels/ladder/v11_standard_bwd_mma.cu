/* v11_standard_bwd_mma.cu: version 11, standard (materializing) backward on the tensor cores.
 *
 * What changed from version 10: version 6's schedule (dP and dS through HBM) on the tensor cores,
 * over batch x heads, with the products of version 8 (tc_gemm.cuh).  What it costs: the model's
 * bytes, the N x N tensors included; on the H200 it runs 3.0-4.0x faster than PyTorch SDPA's
 * unfused math backward over the benchmark's shapes (figures/data/gpu_sdpa.csv) and slower than
 * version 9 by its bytes; dP is stored as whole 32-byte sectors (tc_gemm.cuh).
 *
 * Version 6's schedule (src/schedules/standard_bwd.c, the FlashAttention paper's Algorithm 3, from P
 * saved in HBM by the forward; docs/model.md eq. C0b) with Bd = d, Br = Bc:
 *   1  dV = P^T dO        fl_tc_tn   per key block: P_ij, dO_i for each i; dV_j written once
 *   2  dP = dO V^T        fl_tc_nt   per query block: dO_i once, V_j each; dP_ij written
 *   3  dS = P o (dP - D)  fl_tc_dsoftmax  per row, D_i = sum_l P_il dP_il: the rows of P and dP
 *                         read once when 2 Nk <= M_eff, else twice (D, then dS); dS written
 *   4  dQ = dS K / sqrt d fl_tc_nn   per query block: dS_ij, K_j each; dQ_i written once (fp32,
 *                         rule R8)
 *   5  dK = dS^T Q / sqrt d  fl_tc_tn  per key block: dS_ij, Q_i each; dK_j written once
 * dP and dS are stored in the storage type, as P.  Masks need no rule: P is 0 where masked, so
 * dS is exactly 0 there and every tile is computed (the traffic is mask-oblivious, as the model).
 */
#include "attn.h"
#include "tc_gemm.cuh"

#define FL_V_NEEDS FL_NEED_SM80

/* Tile traits of step 3: the rows of P and dP on chip (2 Nk <= M_eff) or none, the scratch, and the
 * padding after it that starts the dynamic rows (__align__(128)) on a 128-byte boundary (the
 * compiler rounds the static shared memory up to that alignment). */
static fl_tiles<3> v11_dsoftmax_tiles(long rows2, int esize, int nt)
{
    return {{{"P, dP rows", 1, rows2, 0, esize, 1, 1, FL_SMEM}, {"red", 1, nt / 32, 0, 4, 1, 0, FL_STATIC},
             {"padding to 128 bytes", 1, (128 - (nt / 32 * 4) % 128) % 128, 0, 1, 1, 0, FL_STATIC}}};
}

/* Step 3, one CTA of NT threads per row; fits: the two rows stay in shared memory. */
template <class T, int NT>
__global__ void __launch_bounds__(NT)
fl_tc_dsoftmax(fl_gptr<const T, FL_T_P> P, fl_gptr<const T, FL_T_dP> dP, fl_gptr<T, FL_T_dS> dS, long rows, int Nk, int fits,
               fl_csink g)
{
#if FL_CODE_HAS(FL_V_NEEDS)
    extern __shared__ __align__(128) unsigned char fl_smem[];
    T *pr = (T *)fl_smem, *gr = pr + Nk;
    __shared__ float red[NT / 32];
    FlCount c;
    const long r = blockIdx.x + (long)blockIdx.y * gridDim.x;
    if (r >= rows) { fl_cnt_flush(c, g, (int)sizeof(T)); return; }
    const fl_gptr<const T, FL_T_P> p = P + r * Nk;
    const fl_gptr<const T, FL_T_dP> dp = dP + r * Nk;
    const fl_gptr<T, FL_T_dS> ds = dS + r * Nk;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    /* pass 1: D = sum P o dP (the rows kept on chip when they fit) */
    float D = 0.f;
    for (int x = threadIdx.x; x < Nk; x += NT) {
        const T a = p.ld_elem(c, x), b = dp.ld_elem(c, x);
        if (fits) { pr[x] = a; gr[x] = b; }
        D += fl_to_f(a) * fl_to_f(b);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) D += __shfl_xor_sync(0xffffffffu, D, o);
    if (lane == 0) red[warp] = D;
    __syncthreads();
    D = 0.f;
    for (int w = 0; w < NT / 32; w++) D += red[w];
    /* pass 2: dS = P o (dP - D), from shared memory or HBM again */
    for (int x = threadIdx.x; x < Nk; x += NT) {
        float a, b;
        if (fits) {
            a = fl_to_f(pr[x]), b = fl_to_f(gr[x]);
        } else {
            a = p.ld(c, x), b = dp.ld(c, x);
        }
        ds.st(c, x, a * (b - D));
    }
    fl_cnt_flush(c, g, (int)sizeof(T));
#else
    fl_arch_missing();
#endif
}

template <class T, int D, int WM> static void launch_fast_std_bwd(const fl_gpu_args *a)
{
    constexpr int B = (FL_THREADS / 32) * WM * 16, NT = 256; /* Br = Bc = B */
    constexpr auto tg = fl_tc_tn_tiles<D, B, B>(), tn = fl_tc_nn_tiles<D, B, B>();
    constexpr auto tt = fl_tc_nt_tiles<D, B, B>();
    static_assert(tg.footprint() == fl_fp_eval(fl_fp_coef FL_FP_STANDARD, B, B, D) && tn.footprint() == tg.footprint() &&
                      tt.footprint() == tg.footprint(),
                  "the tiles are the model's (F0) with Bd = d, both passes");
    static_assert(tg.dyn_bytes() <= FL_SMEM_MAX && tn.dyn_bytes() <= FL_SMEM_MAX, "tiles do not fit in shared memory");
    const int N = a->N, nbh = a->nbh > 0 ? a->nbh : 1;
    const int fits = 2L * N <= tg.footprint(); /* eq. (C0b): both rows on chip */
    if (fits && 2 * (size_t)N * sizeof(T) > 200 * 1024) {
        fprintf(stderr, "flashlab-gpu: standard backward (v11): two rows of %d keys do not fit in shared memory\n", N);
        exit(2);
    }
    const float scale = 1.0f / sqrtf((float)D);
    const dim3 grid(FL_CDIV(N, B), nbh);
    /* 1: dV = P^T dO */
    fl_launch(fl_tc_tn<T, D, WM, B, FL_T_P, FL_T_dO, FL_T_dV>, tg.info("fl_tc_tn (dV)"), grid, dim3(FL_THREADS), a->stream,
              a->log, (const T *)a->P, (const T *)a->dO, (T *)a->dV, N, N, 1.f, a->cnt);
    /* 2: dP = dO V^T */
    fl_launch(fl_tc_nt<T, D, WM, B, FL_T_dO, FL_T_V, FL_T_dP>, tt.info("fl_tc_nt (dP)"), grid, dim3(FL_THREADS), a->stream,
              a->log, (const T *)a->dO, (const T *)a->V, (T *)a->dPbuf, N, N, 0, 0L, 1.f, a->cnt);
    /* 3: dS = P o (dP - D) */
    const long rows = (long)N * nbh;
    const dim3 g3((unsigned)min(rows, 65535L), (unsigned)FL_CDIV(rows, 65535L));
    fl_launch(fl_tc_dsoftmax<T, NT>, v11_dsoftmax_tiles(fits ? 2L * N : 0, (int)sizeof(T), NT).info("fl_tc_dsoftmax"), g3,
              dim3(NT), a->stream, a->log, (const T *)a->P, (const T *)a->dPbuf, (T *)a->dSbuf, rows, N, fits, a->cnt);
    /* 4: dQ = dS K / sqrt(d), fp32 (rule R8) */
    fl_launch(fl_tc_nn<T, float, D, WM, B, FL_T_dS, FL_T_K, FL_T_dQ>, tn.info("fl_tc_nn (dQ)"), grid, dim3(FL_THREADS),
              a->stream, a->log, (const T *)a->dSbuf, (const T *)a->K, a->dQ, N, N, scale, a->cnt);
    /* 5: dK = dS^T Q / sqrt(d) */
    fl_launch(fl_tc_tn<T, D, WM, B, FL_T_dS, FL_T_Q, FL_T_dK>, tg.info("fl_tc_tn (dK)"), grid, dim3(FL_THREADS), a->stream,
              a->log, (const T *)a->dSbuf, (const T *)a->Q, (T *)a->dK, N, N, scale, a->cnt);
    if (a->dQout)
        fl_launch(fl_tc_round<T>, fl_tc_round_tiles().info("fl_tc_round"), dim3(1024), dim3(256), a->stream, a->log,
                  (const float *)a->dQ, (T *)a->dQout, rows * D / 2, a->cnt);
}

#define K11(T, DT, D, WM)                                                                                               \
    {&FL_STANDARD_BWD, 11, DT, DT, D, (FL_THREADS / 32) * WM * 16, (FL_THREADS / 32) * WM * 16,                             \
     fl_tc_nt_tiles<D, (FL_THREADS / 32) * WM * 16, (FL_THREADS / 32) * WM * 16>().footprint(), 1,                     \
     launch_fast_std_bwd<T, D, WM>,                                                                                  \
     (long)fl_tc_tn_tiles<D, (FL_THREADS / 32) * WM * 16, (FL_THREADS / 32) * WM * 16>().dyn_bytes()}
#define K11_SET(T, DT) K11(T, DT, 64, 1), K11(T, DT, 64, 2), K11(T, DT, 128, 1)

static constexpr fl_kernel_info fast_std_bwd_table[] = {K11_SET(__half, FL_F16), K11_SET(__nv_bfloat16, FL_BF16)};

FL_LADDER_FILE(11, fast_std_bwd_table, FL_V_NEEDS)
