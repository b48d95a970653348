/* attn_flash2.cu: version 3, FlashAttention-2 forward (Dao 2023, Algorithm 1), query-owned.
 *
 * Compile (part of the harness; see kernels/CMakeLists.txt), standalone:
 *   nvcc -O3 -std=c++17 -arch=sm_90 -DFL_COUNTERS -c kernels/attn_flash2.cu
 *
 * The schedule is sim/sched_flash2.c line for line: one CTA per query block i of Br rows.
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
 * On chip (shared memory, fp32): Q_i, K_j, V_j, S_ij (P_ij overwrites it), O_i, m_i, l_i: the
 * model's footprint (F2) 2*Br*d + 2*Bc*d + Br*Bc + 2*Br elements; rows of Q, K and S are padded
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

template <class T, int D, int BR, int BC>
__global__ void __launch_bounds__(FL_THREADS)
fl_flash2_fwd(const T *__restrict__ Q, const T *__restrict__ K, const T *__restrict__ V,
              T *__restrict__ O, float *__restrict__ L, int N, int Nk, int causal, long off, float scale,
              fl_gpu_counters *g)
{
    extern __shared__ float sm[];
    float *Qs = sm;                  /* BR x (D+1) */
    float *Ks = Qs + BR * (D + 1);   /* BC x (D+1) */
    float *Vs = Ks + BC * (D + 1);   /* BC x D */
    float *Ss = Vs + BC * D;         /* BR x (BC+1), P overwrites S */
    float *Os = Ss + BR * (BC + 1);  /* BR x D */
    float *ms = Os + BR * D;         /* BR */
    float *ls = ms + BR;             /* BR */
    float *as = ls + BR;             /* BR: per-row rescale exp(m_old - m_new) (rule R3) */
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
            Qs[r * (D + 1) + k] = fl_ld(c, FL_T_Q, Q, (r0 + r) * D + k);
        }
    for (int x = tid; x < BR * D; x += FL_THREADS) Os[x] = 0.f; /* line 5 */
    for (int r = tid; r < BR; r += FL_THREADS) { ms[r] = -INFINITY; ls[r] = 0.f; }
    for (long c0 = 0; c0 < kend; c0 += BC) { /* line 6 */
        const int bc = (int)min((long)BC, Nk - c0);
        __syncthreads(); /* the previous step is done with K_j, V_j, S */
        for (int x = tid; x < bc * D; x += FL_THREADS) { /* line 7 */
            const int r = x / D, k = x % D;
            Ks[r * (D + 1) + k] = fl_ld(c, FL_T_K, K, (c0 + r) * D + k);
            Vs[r * D + k] = fl_ld(c, FL_T_V, V, (c0 + r) * D + k);
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
        fl_st(c, FL_T_O, O, (r0 + r) * D + k, l > 0.f ? Os[r * D + k] / l : 0.f);
    }
    for (int r = tid; r < br; r += FL_THREADS) /* lines 13, 15 */
        fl_st(c, FL_T_L, L, r0 + r, ls[r] > 0.f ? ms[r] + logf(ls[r]) : -INFINITY);
    fl_cnt_flush(c, g, (int)sizeof(T));
}

template <int D, int BR, int BC> constexpr size_t flash2_smem()
{
    return sizeof(float) * (size_t)(BR * (D + 1) + BC * (D + 1) + BC * D + BR * (BC + 1) + BR * D + 3 * BR);
}

template <class T, int D, int BR, int BC> static void launch_flash2(const fl_gpu_args *a)
{
    constexpr size_t smem = flash2_smem<D, BR, BC>();
    static_assert(smem <= 227 * 1024, "flash2 tiles do not fit in shared memory");
    const int Nk = a->Nk ? a->Nk : a->N;
    const long off = a->causal == 2 ? (long)Nk - a->N : 0; /* bottom-right: j <= i + Nk - Nq */
    CUDA_CHECK(cudaFuncSetAttribute(fl_flash2_fwd<T, D, BR, BC>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    fl_flash2_fwd<T, D, BR, BC><<<FL_CDIV(a->N, BR), FL_THREADS, smem, a->stream>>>(
        (const T *)a->Q, (const T *)a->K, (const T *)a->V, (T *)a->O, a->L, a->N, Nk, a->causal, off,
        1.0f / sqrtf((float)D), a->cnt);
    CUDA_CHECK(cudaGetLastError());
}

/* (F2): the buffers above, padding and the rescale row excluded */
#define F2(D, BR, BC) (2L * (BR) * (D) + 2L * (BC) * (D) + (long)(BR) * (BC) + 2L * (BR))
#define K2(T, DT, D, BR, BC) {"flash2", 3, DT, DT, D, BR, BC, F2(D, BR, BC), 1, launch_flash2<T, D, BR, BC>, 0}
#define K2_SWEEP(T, DT, D) K2(T, DT, D, 16, 16), K2(T, DT, D, 32, 32), K2(T, DT, D, 64, 64), K2(T, DT, D, 128, 64)
#define K2_PAIR(T, DT, D) K2(T, DT, D, 32, 32), K2(T, DT, D, 64, 64)

static const fl_kernel_info flash2_table[] = {
    K2_SWEEP(__half, FL_F16, 64), K2_SWEEP(__half, FL_F16, 128),
    K2_PAIR(float, FL_F32, 64), K2_PAIR(float, FL_F32, 128),
    K2_PAIR(__nv_bfloat16, FL_BF16, 64), K2_PAIR(__nv_bfloat16, FL_BF16, 128),
};

FL_TABLE_GETTER(fl_flash2_kernels, flash2_table)
