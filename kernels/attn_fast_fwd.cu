/* attn_fast_fwd.cu: version 7, FlashAttention-2 forward on the tensor cores.
 *
 * The same schedule as version 3 (sim/sched_flash2.c; docs/model.md eq. C2): one CTA per query
 * block i of Br rows: load Q_i once; for each key block j (causal: only those left of the block's
 * last query) load K_j, V_j; S = Q_i K_j^T; online softmax; O_i = diag(alpha) O_i + P V_j; write
 * O_i and L_i = m_i + log l_i once.  Reads Nd + 2 Nd Tr (fewer with the causal mask), writes
 * Nd + N: the byte counters (-DFL_COUNTERS) count every chunk that crosses HBM and
 * `flashlab-gpu validate` checks them equal to fl_run's counts.
 *
 * What makes it fast (kernels/NOTES.md, "Issue 7", has the prediction and measurement of each):
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

template <class T, int D, int WM, int BC>
__global__ void __launch_bounds__(FL_THREADS)
fl_fast_fwd(const T *__restrict__ Q, const T *__restrict__ K, const T *__restrict__ V, T *__restrict__ O,
            float *__restrict__ L, int N, int Nk, int causal, int off, float scale_log2, fl_gpu_counters *g)
{
    constexpr int NW = FL_THREADS / 32, BR = NW * WM * 16;
    extern __shared__ __align__(128) unsigned char fl_smem[];
    T *Qs = (T *)fl_smem;     /* BR x D */
    T *Ks = Qs + BR * D;      /* 2 stages x BC x D */
    T *Vs = Ks + 2 * BC * D;  /* 2 stages x BC x D */
    FlCount c;
    const int warp = threadIdx.x >> 5;
    const long bh = blockIdx.y;
    Q += bh * N * D; O += bh * N * D; L += bh * N;
    K += bh * Nk * D; V += bh * Nk * D;
    const FlQueryBlock qb = fl_query_block<BR, BC>(N, Nk, causal, off);
    const int r0 = qb.r0, br = qb.br, nkb = qb.nkb;

    if (nkb > 0) { /* a block that sees no key loads nothing (its rows output 0, L = -inf) */
        fl_load_tile<T, BR, D, FL_THREADS>(Qs, Q + r0 * D, D, br, D, c, FL_T_Q);
        fl_load_tile<T, BC, D, FL_THREADS>(Ks, K, D, min(BC, Nk), D, c, FL_T_K);
        fl_load_tile<T, BC, D, FL_THREADS>(Vs, V, D, min(BC, Nk), D, c, FL_T_V);
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
            fl_load_tile<T, BC, D, FL_THREADS>(Ks + st * BC * D, K + c1 * D, D, bc1, D, c, FL_T_K);
            fl_load_tile<T, BC, D, FL_THREADS>(Vs + st * BC * D, V + c1 * D, D, bc1, D, c, FL_T_V);
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
    fl_warp_store_rows<T, D, WM>(o, rs, Qs + wrow * D, O + (r0 + wrow) * D, min(WM * 16, max(0, N - r0 - wrow)),
                                 c, FL_T_O);
    fl_cnt_flush(c, g, (int)sizeof(T));
}

template <int D, int WM, int BC> constexpr size_t fast_fwd_smem()
{
    return 2 * (size_t)((FL_THREADS / 32) * WM * 16 * D + 4 * BC * D); /* Q + 2 stages of K, V */
}

template <class T, int D, int WM, int BC> static void launch_fast_fwd(const fl_gpu_args *a)
{
    constexpr int BR = (FL_THREADS / 32) * WM * 16;
    constexpr size_t smem = fast_fwd_smem<D, WM, BC>();
    static_assert(smem <= 227 * 1024, "fast forward tiles do not fit in shared memory");
    const int Nk = a->Nk ? a->Nk : a->N;
    const int off = a->causal == 2 ? Nk - a->N : 0;
    if ((long)Nk * D >= (1L << 31) || (long)a->N * D >= (1L << 31)) {
        fprintf(stderr, "flashlab-gpu: flash2 (v7): N * d must be below 2^31 per head\n");
        exit(2);
    }
    CUDA_CHECK(cudaFuncSetAttribute(fl_fast_fwd<T, D, WM, BC>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    const dim3 grid(FL_CDIV(a->N, BR), a->nbh > 0 ? a->nbh : 1);
    fl_fast_fwd<T, D, WM, BC><<<grid, FL_THREADS, smem, a->stream>>>(
        (const T *)a->Q, (const T *)a->K, (const T *)a->V, (T *)a->O, a->L, a->N, Nk, a->causal, off,
        1.4426950408889634f / sqrtf((float)D), a->cnt);
    CUDA_CHECK(cudaGetLastError());
}

/* (F2) the model's footprint of the tiles; the prefetch stage is extra (see above) */
#define F2(D, BR, BC) (2L * (BR) * (D) + 2L * (BC) * (D) + (long)(BR) * (BC) + 2L * (BR))
#define K7(T, DT, D, WM, BC) {"flash2", 7, DT, DT, D, (FL_THREADS / 32) * WM * 16, BC, F2(D, (FL_THREADS / 32) * WM * 16, BC), 1, launch_fast_fwd<T, D, WM, BC>, 0}
#define K7_SET(T, DT) K7(T, DT, 64, 1, 64), K7(T, DT, 64, 2, 64), K7(T, DT, 64, 2, 128), \
                      K7(T, DT, 128, 1, 64), K7(T, DT, 128, 2, 32), K7(T, DT, 128, 2, 64)
/* fp16, d = 64 also sweeps the block sizes for the paper's Figure 2 (GPT-2 medium) */
#define K7_FIG2(T, DT) K7(T, DT, 64, 1, 32), K7(T, DT, 64, 1, 128), K7(T, DT, 64, 2, 32)

static const fl_kernel_info fast_fwd_table[] = {K7_SET(__half, FL_F16), K7_FIG2(__half, FL_F16), K7_SET(__nv_bfloat16, FL_BF16)};

FL_TABLE_GETTER(fl_fast_fwd_kernels, fast_fwd_table)
