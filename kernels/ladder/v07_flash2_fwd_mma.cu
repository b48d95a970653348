/* v07_flash2_fwd_mma.cu: version 7, FlashAttention-2 forward on the tensor cores.
 *
 * What changed from version 6 (and from version 3, whose schedule this is): the products run on
 * the tensor cores, the next key block is prefetched while this one is computed, and the grid
 * covers batch x heads.  What it costs: the same bytes as version 3 (every count equal to the
 * model's); what it buys: on the H200 (fp16, d = 128, N = 4096, 128 x 64, 8 x 16 heads)
 * 336 TFLOP/s, 0.96 of PyTorch SDPA's FlashAttention-2 (figures/data/gpu_sdpa.csv), where version
 * 3 runs on CUDA cores, one head a launch.
 *
 * The same schedule as version 3 (src/schedules/flash2.c; docs/model.md eq. C2): one CTA per query
 * block i of Br rows: load Q_i once; for each key block j (causal: only those left of the block's
 * last query) load K_j, V_j; S = Q_i K_j^T; online softmax; O_i = diag(alpha) O_i + P V_j; write
 * O_i and L_i = m_i + log l_i once.  Reads Nd + 2 Nd Tr (fewer with the causal mask), writes
 * Nd + N: the byte counters (-DFL_COUNTERS) count every chunk that crosses HBM and
 * `flashlab-gpu validate` checks them equal to fl_run's counts.
 *
 * What makes it fast (docs/journal/runs.md, "Optimisations", has the prediction and measurement of each):
 *   - mma.sync m16n8k16 (fp16/bf16 in, fp32 accumulate); 4 warps, each owns WM*16 query rows;
 *     S and P stay in registers (the C fragments of S are the A fragments of P V);
 *   - K_j, V_j arrive by cp.async into a second shared-memory stage while block j-1 is computed
 *     (the prefetch stage is latency hiding, not schedule: it changes no count; M_eff reports the
 *     model's footprint F2, the second stage is extra);
 *   - swizzled shared-memory tiles, ldmatrix (.trans for V): no bank conflicts;
 *   - the softmax in base 2 with the scale folded in (one FFMA + EX2 per score), row sums kept
 *     per thread and reduced once at the end;
 *   - causal: key blocks right of the diagonal are skipped, the mask is applied only on tiles
 *     that cross it, and the heaviest query blocks are scheduled first.
 * Heads: grid.y runs over batch x heads (a.nbh), each an N x d slice of contiguous (B, H, N, d)
 * tensors, which is PyTorch's layout.
 */
#include "attn.h"
#include "mma.cuh"
#include "online_softmax.cuh"

#define FL_V_NEEDS FL_NEED_SM80

/* Tile traits (traits.cuh): Q_i, 2 stages of K_j and of V_j in shared memory (the second stage is
 * the prefetch, not in the model); S_ij, O_i, m_i, l_i in registers (mma fragments). */
template <int D, int BR, int BC> __host__ __device__ constexpr fl_tiles<7> v07_tiles()
{
    return {{{"Q_i", BR, D, 0, 2, 1, 1, FL_SMEM}, {"K_j", BC, D, 0, 2, 2, 1, FL_SMEM}, {"V_j", BC, D, 0, 2, 2, 1, FL_SMEM},
             {"S_ij", BR, BC, 0, 4, 1, 1, FL_REGS}, {"O_i", BR, D, 0, 4, 1, 1, FL_REGS}, {"m_i", BR, 1, 0, 4, 1, 1, FL_REGS},
             {"l_i", BR, 1, 0, 4, 1, 1, FL_REGS}}};
}

template <class T, int D, int WM, int BC>
__global__ void __launch_bounds__(FL_THREADS)
fl_fast_fwd(fl_gptr<const T, FL_T_Q> Q, fl_gptr<const T, FL_T_K> K, fl_gptr<const T, FL_T_V> V, fl_gptr<T, FL_T_O> O,
            fl_gptr<float, FL_T_L> L, int N, int Nk, int causal, int off, float scale_log2, fl_csink g)
{
#if FL_CODE_HAS(FL_V_NEEDS)
    constexpr int NW = FL_THREADS / 32, BR = NW * WM * 16;
    constexpr auto tl = v07_tiles<D, BR, BC>();
    extern __shared__ __align__(128) unsigned char fl_smem[];
    T *Qs = FL_TILE(T, fl_smem, tl, 0); /* BR x D */
    T *Ks = FL_TILE(T, fl_smem, tl, 1); /* 2 stages x BC x D */
    T *Vs = FL_TILE(T, fl_smem, tl, 2); /* 2 stages x BC x D */
    FlCount c;
    const int warp = threadIdx.x >> 5;
    const long bh = blockIdx.y;
    Q = Q + bh * N * D; O = O + bh * N * D; L = L + bh * N;
    K = K + bh * Nk * D; V = V + bh * Nk * D;
    const FlQueryBlock qb = fl_query_block<BR, BC>(N, Nk, causal, off);
    const int r0 = qb.r0, br = qb.br, nkb = qb.nkb;

    if (nkb > 0) { /* a block that sees no key loads nothing (its rows output 0, L = -inf) */
        fl_load_tile<T, BR, D, FL_THREADS>(Qs, Q + r0 * D, D, br, D, c);
        fl_load_tile<T, BC, D, FL_THREADS>(Ks, K, D, min(BC, Nk), D, c);
        fl_load_tile<T, BC, D, FL_THREADS>(Vs, V, D, min(BC, Nk), D, c);
    }
    fl_cp_commit();

    float o[WM][D / 8][4];
    float mrow[WM][2], lrow[WM][2]; /* running max (raw scores) and this thread's part of the sum */
    fl_zero(o);
#pragma unroll
    for (int m = 0; m < WM; m++) {
        mrow[m][0] = mrow[m][1] = -INFINITY;
        lrow[m][0] = lrow[m][1] = 0.f;
    }
    const int wrow = warp * WM * 16; /* the warp's first row in the block */

    for (int j = 0; j < nkb; j++) {
        const int c0 = j * BC;
        if (j + 1 < nkb) { /* prefetch K_{j+1}, V_{j+1} into the other stage */
            const int st = (j + 1) & 1;
            const int c1 = c0 + BC, bc1 = min(BC, Nk - c1);
            fl_load_tile<T, BC, D, FL_THREADS>(Ks + st * BC * D, K + c1 * D, D, bc1, D, c);
            fl_load_tile<T, BC, D, FL_THREADS>(Vs + st * BC * D, V + c1 * D, D, bc1, D, c);
            fl_cp_commit();
            fl_cp_wait<1>();
        } else {
            fl_cp_wait<0>();
        }
        __syncthreads();
        const T *Kt = Ks + (j & 1) * BC * D, *Vt = Vs + (j & 1) * BC * D;

        float s[WM][BC / 8][4];
        fl_warp_qk<T, D, WM, BC>(s, Qs + wrow * D, Kt);

        /* mask only tiles that cross the diagonal or the end of the keys */
        if (c0 + BC > Nk || (causal && c0 + BC - 1 > r0 + wrow + off))
            fl_mask_frag<WM, BC>(s, r0 + wrow, c0, Nk, causal, off);
        fl_softmax_step<WM, BC, D>(s, o, mrow, lrow, scale_log2);
        fl_warp_pv_regs<T, D, WM, BC>(o, s, Vt);
        __syncthreads(); /* every warp is done with this stage before it is refilled */
    }

    /* O_i = diag(l)^-1 O_i, L_i = m_i + log l_i (m_i of the scaled scores, natural log) */
    float rs[WM][2];
    fl_softmax_finish<WM>(mrow, lrow, scale_log2, rs, L, r0 + wrow, N, c);
    fl_warp_store_rows<T, D, WM>(o, rs, Qs + wrow * D, O + (r0 + wrow) * D, min(WM * 16, max(0, N - r0 - wrow)), c);
    fl_cnt_flush(c, g, (int)sizeof(T));
#else
    fl_arch_missing();
#endif
}

template <class T, int D, int WM, int BC> static void launch_fast_fwd(const fl_gpu_args *a)
{
    constexpr int BR = (FL_THREADS / 32) * WM * 16;
    constexpr auto tl = v07_tiles<D, BR, BC>();
    static_assert(tl.footprint() == fl_fp_eval(fl_fp_coef FL_FP_FLASH2_FWD, BR, BC, D), "the tiles are the model's (F2)");
    static_assert(tl.dyn_bytes() <= FL_SMEM_MAX, "fast forward tiles do not fit in shared memory");
    const int Nk = a->Nk ? a->Nk : a->N;
    const int off = a->causal == 2 ? Nk - a->N : 0;
    if ((long)Nk * D >= (1L << 31) || (long)a->N * D >= (1L << 31)) {
        fprintf(stderr, "flashlab-gpu: flash2 (v7): N * d must be below 2^31 per head\n");
        exit(2);
    }
    fl_launch(fl_fast_fwd<T, D, WM, BC>, tl.info("fl_fast_fwd"), dim3(FL_CDIV(a->N, BR), a->nbh > 0 ? a->nbh : 1),
              dim3(FL_THREADS), a->stream, a->log, (const T *)a->Q, (const T *)a->K, (const T *)a->V, (T *)a->O, a->L, a->N,
              Nk, a->causal, off, 1.4426950408889634f / sqrtf((float)D), a->cnt);
}

#define K7(T, DT, D, WM, BC)                                                                                    \
    {&FL_FLASH2_FWD, 7, DT, DT, D, (FL_THREADS / 32) * WM * 16, BC, v07_tiles<D, (FL_THREADS / 32) * WM * 16, BC>().footprint(), 1, \
     launch_fast_fwd<T, D, WM, BC>, (long)v07_tiles<D, (FL_THREADS / 32) * WM * 16, BC>().dyn_bytes()}
#define K7_SET(T, DT) K7(T, DT, 64, 1, 64), K7(T, DT, 64, 2, 64), K7(T, DT, 64, 2, 128), \
                      K7(T, DT, 128, 1, 64), K7(T, DT, 128, 2, 32), K7(T, DT, 128, 2, 64)
/* fp16, d = 64 also sweeps the block sizes for the paper's Figure 2 (GPT-2 medium) */
#define K7_FIG2(T, DT) K7(T, DT, 64, 1, 32), K7(T, DT, 64, 1, 128), K7(T, DT, 64, 2, 32)

static constexpr fl_kernel_info fast_fwd_table[] = {K7_SET(__half, FL_F16), K7_FIG2(__half, FL_F16), K7_SET(__nv_bfloat16, FL_BF16)};

FL_LADDER_FILE(07, fast_fwd_table, FL_V_NEEDS)
