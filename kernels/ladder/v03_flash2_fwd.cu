/* v03_flash2_fwd.cu: version 3, FlashAttention-2 forward (Dao 2023, Algorithm 1), query-owned.
 *
 * What changed from version 2: the loops are swapped.  A CTA owns a query block and streams the
 * key blocks past it, so O_i, l_i, m_i stay on chip for the whole loop and cross HBM once (O_i
 * and L_i written at the end), and no wavefront is needed: the CTAs are independent.  What it
 * costs: K and V are read once per query block instead of once; at N = 4096, d = 64, 64 x 64,
 * fp16 that is 67.6 MB read and 0.5 MB written (version 2, 64 x 128: 52 MB and 36 MB;
 * docs/validation.md).  Time on the H200 (fp16, d = 128, 64 x 64, one counted launch): 10.4 ms
 * at N = 4096, 101.0 ms at N = 16384 (figures/data/gpu_validate_all.csv, column ms), still
 * scalar fp32 arithmetic.
 *
 * The schedule is src/schedules/flash2.c line for line: one CTA per query block i of Br rows.
 *   line 4   load Q_i                         Br*d reads of Q
 *   line 5   O_i = 0, l_i = 0, m_i = -inf     on chip
 *   line 7   for each key block j: load K_j, V_j          2*Bc*d reads (K, V)
 *   line 8-10  S = Q_i K_j^T / sqrt(d); online softmax; O_i = diag(alpha) O_i + P V_j
 *   line 14-15 write O_i (Br*d), L_i = m_i + log l_i (Br)
 * Napkin math: reads = Nd + 2Nd*Tr, writes = Nd + N (docs/model.md eq. C2).  At N = 4096, d = 64,
 * Br = 64 (Tr = 64), fp16: Q 0.5 MB once, K and V 0.5 MB each 64 times = 64.5 MB read, 0.5 MB
 * written; the FLOPs are 4*N^2*d = 4.3 GFLOP, so on the H200 (~4.3 TB/s) this kernel is bound
 * by its CUDA-core arithmetic, not by HBM: K and V re-reads mostly hit L2 anyway.
 *
 * On chip (tile traits below; shared memory, fp32): Q_i, K_j, V_j, S_ij (P_ij overwrites it), O_i,
 * m_i, l_i: the model's footprint (F2) 2*Br*d + 2*Bc*d + Br*Bc + 2*Br elements; rows of Q, K and S are padded
 * by one word against bank conflicts (padding is not counted in M_eff), and a per-row rescale
 * factor is the model's per-row register (rule R3).
 *
 * Queries and keys may differ in number (Nq = N rows of Q, O; Nk rows of K, V).  Causal, either
 * corner: query i keeps key j <= i + off, off = 0 (top-left, PyTorch SDPA) or Nk - Nq
 * (bottom-right, FlashAttention >= 2.1); key blocks entirely after the block's last query's
 * range are skipped with no loads; partly masked tiles mask scores to -inf; a row that keeps no
 * key (bottom-right with Nq > Nk) outputs zeros and L = -inf.
 *
 * This is an educational kernel: scalar fp32 FMAs from shared memory, no tensor cores, no
 * pipelining.  It is slow next to FlashAttention-2 (see docs/validation.md) and moves exactly
 * the bytes the model says.
 */
#include "attn.h"

#define FL_V_NEEDS FL_NEED_BASE

/* Tile traits (traits.cuh): the buffers in the order they are carved; the rescale row is the
 * model's per-row register of rule R3, not a buffer of (F2). */
template <int D, int BR, int BC> __host__ __device__ constexpr auto v03_tiles()
{
    return fl_make_tiles({FL_TILES_FLASH2_FWD(D, BR, BC)});
}

template <class T, int D, int BR, int BC>
__global__ void __launch_bounds__(FL_THREADS)
fl_flash2_fwd(fl_gptr<const T, FL_T_Q> Q, fl_gptr<const T, FL_T_K> K, fl_gptr<const T, FL_T_V> V, fl_gptr<T, FL_T_O> O,
              fl_gptr<float, FL_T_L> L, int N, int Nk, int causal, long off, float scale, fl_csink g)
{
    constexpr auto tl = v03_tiles<D, BR, BC>();
    extern __shared__ float sm[];
    float *Qs = FL_TILE(float, sm, tl, 0); /* BR x (D+1) */
    float *Ks = FL_TILE(float, sm, tl, 1); /* BC x (D+1) */
    float *Vs = FL_TILE(float, sm, tl, 2); /* BC x D */
    float *Ss = FL_TILE(float, sm, tl, 3); /* BR x (BC+1), P overwrites S */
    float *Os = FL_TILE(float, sm, tl, 4); /* BR x D */
    float *ms = FL_TILE(float, sm, tl, 5); /* BR */
    float *ls = FL_TILE(float, sm, tl, 6); /* BR */
    float *as = FL_TILE(float, sm, tl, 7); /* BR: per-row rescale exp(m_old - m_new) (rule R3) */
    FlCount c;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const long r0 = (long)blockIdx.x * BR;
    const int br = (int)min((long)BR, N - r0);

    /* causal: the block's last query r0 + br - 1 keeps keys j <= r0 + br - 1 + off; later key
     * blocks are all masked (rule K2) and neither loaded nor computed.  A block that sees no key
     * at all (bottom-right with Nq > Nk) does not load Q_i either: its rows output 0, L = -inf */
    const long kend = causal ? max(0L, min((long)Nk, r0 + br + off)) : (long)Nk;
    if (kend > 0)
        for (int x = tid; x < br * D; x += FL_THREADS) { /* line 4 */
            const int r = x / D, k = x % D;
            Qs[r * (D + 1) + k] = Q.ld(c, (r0 + r) * D + k);
        }
    for (int x = tid; x < BR * D; x += FL_THREADS) Os[x] = 0.f; /* line 5 */
    for (int r = tid; r < BR; r += FL_THREADS) { ms[r] = -INFINITY; ls[r] = 0.f; }
    for (long c0 = 0; c0 < kend; c0 += BC) { /* line 6 */
        const int bc = (int)min((long)BC, Nk - c0);
        __syncthreads(); /* the previous step is done with K_j, V_j, S */
        for (int x = tid; x < bc * D; x += FL_THREADS) { /* line 7 */
            const int r = x / D, k = x % D;
            Ks[r * (D + 1) + k] = K.ld(c, (c0 + r) * D + k);
            Vs[r * D + k] = V.ld(c, (c0 + r) * D + k);
        }
        __syncthreads();
        for (int x = tid; x < BR * BC; x += FL_THREADS) { /* line 8 */
            const int r = x / BC, j = x % BC;
            float s = -INFINITY;
            if (r < br && j < bc && (!causal || fl_causal_keep(r0 + r, c0 + j, off))) {
                float acc = 0.f;
#pragma unroll 16
                for (int k = 0; k < D; k++) acc += Qs[r * (D + 1) + k] * Ks[j * (D + 1) + k];
                s = acc * scale;
            }
            Ss[r * (BC + 1) + j] = s;
        }
        __syncthreads();
        for (int r = warp; r < br; r += FL_THREADS / 32) { /* line 9: one warp per row */
            float mx = -INFINITY;
            for (int j = lane; j < BC; j += 32) mx = fmaxf(mx, Ss[r * (BC + 1) + j]);
            mx = fl_warp_max(mx);
            const float mold = ms[r], mnew = fmaxf(mold, mx);
            float sum = 0.f;
            for (int j = lane; j < BC; j += 32) {
                const float s = Ss[r * (BC + 1) + j];
                const float p = (s == -INFINITY) ? 0.f : expf(s - mnew);
                Ss[r * (BC + 1) + j] = p;
                sum += p;
            }
            sum = fl_warp_sum(sum);
            __syncwarp(); /* every lane has read ms[r] before lane 0 rewrites it */
            if (lane == 0) {
                const float a = (mold == -INFINITY) ? 0.f : expf(mold - mnew);
                as[r] = a;
                ls[r] = a * ls[r] + sum;
                ms[r] = mnew;
            }
        }
        __syncthreads();
        for (int x = tid; x < br * D; x += FL_THREADS) { /* line 10 */
            const int r = x / D, k = x % D;
            float acc = 0.f;
#pragma unroll 8
            for (int j = 0; j < bc; j++) acc += Ss[r * (BC + 1) + j] * Vs[j * D + k];
            Os[r * D + k] = as[r] * Os[r * D + k] + acc;
        }
    }
    __syncthreads();
    for (int x = tid; x < br * D; x += FL_THREADS) { /* lines 12, 14 */
        const int r = x / D, k = x % D;
        const float l = ls[r];
        O.st(c, (r0 + r) * D + k, l > 0.f ? Os[r * D + k] / l : 0.f);
    }
    for (int r = tid; r < br; r += FL_THREADS) /* lines 13, 15 */
        L.st(c, r0 + r, ls[r] > 0.f ? ms[r] + logf(ls[r]) : -INFINITY);
    fl_cnt_flush(c, g, (int)sizeof(T));
}

template <class T, int D, int BR, int BC> static void launch_flash2(const fl_gpu_args *a)
{
    constexpr auto tl = v03_tiles<D, BR, BC>();
    static_assert(tl.footprint() == fl_fp_eval(fl_fp_coef FL_FP_FLASH2_FWD, BR, BC, D), "the tiles are the model's (F2)");
    static_assert(tl.dyn_bytes() <= FL_SMEM_MAX, "flash2 tiles do not fit in shared memory");
    const int Nk = a->Nk ? a->Nk : a->N;
    const long off = a->causal == 2 ? (long)Nk - a->N : 0; /* bottom-right: j <= i + Nk - Nq */
    fl_launch(fl_flash2_fwd<T, D, BR, BC>, tl.info("fl_flash2_fwd"), dim3((int)fl_grid_blocks(a->N, BR)), dim3(FL_THREADS),
              a->stream, a->log, (const T *)a->Q, (const T *)a->K, (const T *)a->V, (T *)a->O, a->L, a->N, Nk, a->causal, off,
              1.0f / sqrtf((float)D), a->cnt);
}

#define K2(T, DT, D, BR, BC) \
    {&FL_FLASH2_FWD, 3, DT, DT, D, BR, BC, v03_tiles<D, BR, BC>().footprint(), 1, launch_flash2<T, D, BR, BC>, \
     (long)v03_tiles<D, BR, BC>().dyn_bytes()}
#define K2_SWEEP(T, DT, D) K2(T, DT, D, 16, 16), K2(T, DT, D, 32, 32), K2(T, DT, D, 64, 64), K2(T, DT, D, 128, 64)
#define K2_PAIR(T, DT, D) K2(T, DT, D, 32, 32), K2(T, DT, D, 64, 64)

static constexpr fl_kernel_info flash2_table[] = {
    K2_SWEEP(__half, FL_F16, 64), K2_SWEEP(__half, FL_F16, 128),
    K2_PAIR(float, FL_F32, 64), K2_PAIR(float, FL_F32, 128),
    K2_PAIR(__nv_bfloat16, FL_BF16, 64), K2_PAIR(__nv_bfloat16, FL_BF16, 128),
};

FL_LADDER_FILE(03, flash2_table, FL_V_NEEDS)
