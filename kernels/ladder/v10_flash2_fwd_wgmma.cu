/* v10_flash2_fwd_wgmma.cu: version 10, FlashAttention-2 forward on Hopper's warpgroup tensor cores.
 *
 * What changed from version 9 (and from version 7, whose kernel this is): the products use
 * wgmma, a warpgroup's matrix instruction with operands read from shared memory by descriptor,
 * on 64-row warpgroup tiles.  What it costs: the same bytes as versions 3 and 7; only sm_90a has
 * the instruction (on other GPUs the harness lists this version as not runnable).  What it buys:
 * on the H200 (fp16, d = 128, N = 4096, 128 x 64, 8 x 16 heads) 414 TFLOP/s, 1.23x version 7 and
 * 1.18x PyTorch SDPA's FlashAttention-2 (figures/data/gpu_sdpa.csv).
 *
 * The schedule of versions 3 and 7 (src/schedules/flash2.c; docs/model.md eq. C2), byte for byte the
 * same HBM traffic: one CTA per query block of Br = 64 * NWG rows (NWG warpgroups of 4 warps,
 * each warpgroup owns 64 rows); load Q_i once; for each key block j (causal: only those some
 * row of the block sees): load K_j, V_j (cp.async, prefetched into a second stage), S = Q_i K_j^T
 * by wgmma from shared memory, the online softmax of version 7 on the accumulators
 * (kernels/common/online_softmax.cuh), O_i += P V_j by wgmma with P in registers; write O_i, L_i once.
 *
 * wgmma wants both operands K-major (kernels/common/wgmma.cuh): Q_i and K_j are, as loaded; V_j is
 * [keys][d], so each step the CTA transposes it in shared memory into V_j^T [d][keys]
 * (ldmatrix.trans + stmatrix, 16 bytes a lane each way) before the second product.  V_j^T is
 * on-chip scratch, like the prefetch stage: M_eff reports the model's footprint F2.
 * Needs sm_90a (wgmma; CMAKE_CUDA_ARCHITECTURES 90a); other targets compile a stub.
 */
#include "attn.h"
#include "online_softmax.cuh"
#include "wgmma.cuh"

#define FL_V_NEEDS FL_NEED_SM90A

/* Tile traits (traits.cuh): 2 stages of K_j (64-column sub-tiles) and of V_j (rows), V_j^T and
 * 1024 bytes of alignment slack in shared memory besides Q_i (extra to the model: the prefetch
 * stage, the transpose, the slack); S_ij, O_i, m_i, l_i in registers (wgmma accumulators). */
template <int D, int BR, int BC> __host__ __device__ constexpr fl_tiles<9> v10_tiles()
{
    return {{{"Q_i", BR, D, 0, 2, 1, 1, FL_SMEM}, {"K_j", BC, D, 0, 2, 2, 1, FL_SMEM}, {"V_j", BC, D, 0, 2, 2, 1, FL_SMEM},
             {"V_j^T", D, BC, 0, 2, 1, 0, FL_SMEM}, {"alignment slack", 1, 1024, 0, 1, 1, 0, FL_SMEM},
             {"S_ij", BR, BC, 0, 4, 1, 1, FL_REGS}, {"O_i", BR, D, 0, 4, 1, 1, FL_REGS}, {"m_i", BR, 1, 0, 4, 1, 1, FL_REGS},
             {"l_i", BR, 1, 0, 4, 1, 1, FL_REGS}}};
}

template <class T, int D, int BC, int NWG>
__global__ void __launch_bounds__(NWG * 128, NWG == 2 ? 2 : 1)
fl_wg_fwd(fl_gptr<const T, FL_T_Q> Q, fl_gptr<const T, FL_T_K> K, fl_gptr<const T, FL_T_V> V, fl_gptr<T, FL_T_O> O,
          fl_gptr<float, FL_T_L> L, int N, int Nk, int causal, int off, float scale_log2, fl_csink g)
{
#if FL_CODE_HAS(FL_V_NEEDS)
    constexpr int NT = NWG * 128, BR = NWG * 64;
    constexpr auto tl = v10_tiles<D, BR, BC>();
    extern __shared__ __align__(1024) unsigned char fl_smem[];
    /* the 128-byte swizzle repeats every 1024 bytes: start the tiles on such a boundary (the
     * slack, the traits' last shared buffer, leaves room for it) */
    unsigned char *base = fl_smem + ((1024 - (fl_smem_u32(fl_smem) & 1023)) & 1023);
    T *Qs = FL_TILE(T, base, tl, 0);  /* BR x D, 64-column sub-tiles */
    T *Ks = FL_TILE(T, base, tl, 1);  /* 2 stages x BC x D, sub-tiles */
    T *Vs = FL_TILE(T, base, tl, 2);  /* 2 stages x BC x D, fl_swz<D> rows (for ldmatrix.trans) */
    T *Vts = FL_TILE(T, base, tl, 3); /* D x BC, sub-tiles: V_j^T */
    FlCount c;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, wg = warp >> 2;
    const long bh = blockIdx.y;
    Q = Q + bh * N * D; O = O + bh * N * D; L = L + bh * N;
    K = K + bh * Nk * D; V = V + bh * Nk * D;
    const FlQueryBlock qb = fl_query_block<BR, BC>(N, Nk, causal, off);
    const int r0 = qb.r0, br = qb.br, nkb = qb.nkb;
    const int wrow = wg * 64 + (warp & 3) * 16; /* this warp's first row of the block */

    if (nkb > 0) {
        fl_load_tile<T, BR, D, NT, true>(Qs, Q + (long)r0 * D, D, br, D, c);
        fl_load_tile<T, BC, D, NT, true>(Ks, K, D, min(BC, Nk), D, c);
        fl_load_tile<T, BC, D, NT>(Vs, V, D, min(BC, Nk), D, c);
    }
    fl_cp_commit();

    float o[1][D / 8][4], mrow[1][2] = {{-INFINITY, -INFINITY}}, lrow[1][2] = {{0.f, 0.f}};
    fl_zero(o);

    for (int j = 0; j < nkb; j++) {
        const int c0 = j * BC;
        if (j + 1 < nkb) {
            const int st = (j + 1) & 1, c1 = c0 + BC, bc1 = min(BC, Nk - c1);
            fl_load_tile<T, BC, D, NT, true>(Ks + st * BC * D, K + (long)c1 * D, D, bc1, D, c);
            fl_load_tile<T, BC, D, NT>(Vs + st * BC * D, V + (long)c1 * D, D, bc1, D, c);
            fl_cp_commit();
            fl_cp_wait<1>();
        } else {
            fl_cp_wait<0>();
        }
        fl_fence_proxy_async(); /* this thread's copies of Q, K_j are for the tensor cores */
        __syncthreads();
        const T *Kt = Ks + (j & 1) * BC * D, *Vt = Vs + (j & 1) * BC * D;

        /* S = Q_i K_j^T: this warpgroup's 64 rows, k over d in steps of 16 */
        float s[1][BC / 8][4];
        float(&sd)[BC / 2] = *reinterpret_cast<float(*)[BC / 2]>(&s[0][0][0]);
        fl_wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
            const int k0 = kk * 16;
            fl_wgmma_ss<T, BC>(sd, fl_desc(Qs + fl_sub_off<BR>(wg * 64, k0)), fl_desc(Kt + fl_sub_off<BC>(0, k0)), kk > 0);
        }
        fl_wgmma_commit();

        /* meanwhile: V_j^T, 8x8 blocks by ldmatrix.trans from V_j and stmatrix into V_j^T */
        constexpr int OPS = (BC / 8) * (D / 32); /* x4 operations: 4 blocks of 8x8 each */
#pragma unroll
        for (int u = warp; u < OPS; u += NT / 32) {
            const int kb = u / (D / 32), db = (u % (D / 32)) * 4;
            unsigned r[4];
            fl_ldsm4t(r, Vt + fl_swz<D>(kb * 8 + (lane & 7), db + (lane >> 3)));
            fl_stsm4(Vts + fl_sub_off<D>((db + (lane >> 3)) * 8 + (lane & 7), kb * 8), r);
        }
        fl_fence_proxy_async();

        fl_wgmma_wait0();
#pragma unroll
        for (int x = 0; x < BC / 2; x++) fl_reg_fence(sd[x]);

        if (c0 + BC > Nk || (causal && c0 + BC - 1 > r0 + wrow + off))
            fl_mask_frag<1, BC>(s, r0 + wrow, c0, Nk, causal, off);
        fl_softmax_step<1, BC, D>(s, o, mrow, lrow, scale_log2);
        __syncthreads(); /* V_j^T complete */

        /* O_i += P V_j: P from registers, V_j^T by descriptor */
        float(&od)[D / 2] = *reinterpret_cast<float(*)[D / 2]>(&o[0][0][0]);
#pragma unroll
        for (int x = 0; x < D / 2; x++) fl_reg_fence(od[x]);
        fl_wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BC / 16; kk++) {
            unsigned a[4];
            a[0] = fl_pack2<T>(s[0][2 * kk][0], s[0][2 * kk][1]);
            a[1] = fl_pack2<T>(s[0][2 * kk][2], s[0][2 * kk][3]);
            a[2] = fl_pack2<T>(s[0][2 * kk + 1][0], s[0][2 * kk + 1][1]);
            a[3] = fl_pack2<T>(s[0][2 * kk + 1][2], s[0][2 * kk + 1][3]);
            fl_wgmma_rs<T, D>(od, a, fl_desc(Vts + fl_sub_off<D>(0, kk * 16)));
        }
        fl_wgmma_commit();
        fl_wgmma_wait0();
#pragma unroll
        for (int x = 0; x < D / 2; x++) fl_reg_fence(od[x]);
        __syncthreads(); /* the stage and V_j^T are free */
    }

    float rs[1][2];
    fl_softmax_finish<1>(mrow, lrow, scale_log2, rs, L, r0 + wrow, N, c);
    fl_warp_store_rows<T, D, 1>(o, rs, Vs + warp * 16 * D, O + (long)(r0 + wrow) * D, min(16, max(0, N - r0 - wrow)), c);
    fl_cnt_flush(c, g, (int)sizeof(T));
#else
    fl_arch_missing();
#endif
}

template <class T, int D, int BC, int NWG> static void launch_wg_fwd(const fl_gpu_args *a)
{
    constexpr int BR = NWG * 64;
    constexpr auto tl = v10_tiles<D, BR, BC>();
    static_assert(tl.footprint() == fl_fp_eval(fl_fp_coef FL_FP_FLASH2_FWD, BR, BC, D), "the tiles are the model's (F2)");
    static_assert(tl.dyn_bytes() <= FL_SMEM_MAX, "wgmma forward tiles do not fit in shared memory");
    static_assert(2 * BC * D >= NWG * 4 * 16 * D, "the output stage reuses the V stages");
    const int Nk = a->Nk ? a->Nk : a->N;
    const int off = a->causal == 2 ? Nk - a->N : 0;
    if ((long)Nk * D >= (1L << 31) || (long)a->N * D >= (1L << 31)) {
        fprintf(stderr, "flashlab-gpu: flash2 (v10): N * d must be below 2^31 per head\n");
        exit(2);
    }
    fl_launch(fl_wg_fwd<T, D, BC, NWG>, tl.info("fl_wg_fwd"), dim3(FL_CDIV(a->N, BR), a->nbh > 0 ? a->nbh : 1), dim3(NWG * 128),
              a->stream, a->log, (const T *)a->Q, (const T *)a->K, (const T *)a->V, (T *)a->O, a->L, a->N, Nk, a->causal, off,
              1.4426950408889634f / sqrtf((float)D), a->cnt);
}

#define K10(T, DT, D, BC, NWG) \
    {&FL_FLASH2_FWD, 10, DT, DT, D, NWG * 64, BC, v10_tiles<D, NWG * 64, BC>().footprint(), 1, launch_wg_fwd<T, D, BC, NWG>, \
     (long)v10_tiles<D, NWG * 64, BC>().dyn_bytes()}
#define K10_SET(T, DT) K10(T, DT, 64, 64, 2), K10(T, DT, 64, 128, 2), K10(T, DT, 128, 64, 2), K10(T, DT, 128, 128, 1)

static constexpr fl_kernel_info wg_fwd_table[] = {K10_SET(__half, FL_F16), K10_SET(__nv_bfloat16, FL_BF16)};

FL_LADDER_FILE(10, wg_fwd_table, FL_V_NEEDS)
