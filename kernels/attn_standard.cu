/* attn_standard.cu: version 1, standard attention (FlashAttention paper, Algorithm 0): the
 * plainest kernels, S and P materialized in HBM.
 *
 * Compile (part of the harness; see kernels/CMakeLists.txt), standalone:
 *   nvcc -O3 -std=c++17 -arch=sm_90 -DFL_COUNTERS -c kernels/attn_standard.cu
 *
 * The schedule is sim/sched_standard.c with Bd = d (the model is run with M = M_eff, the
 * footprint (F0) Br*d + Bc*d + Br*Bc of these tiles, so rule B0 gives Bd = d):
 *   fl_std_scores   one CTA per row block i: load Q_i once, for each key block j load K_j,
 *                   write S_ij = Q_i K_j^T / sqrt(d)           Nd + Nd*Tr reads, N^2 writes
 *   fl_std_softmax  one CTA per row.  N <= M_eff (a row fits on chip): read the row once, write
 *                   P once.  Otherwise three passes over the row in chunks (max, sum, normalise
 *                   and write): 3 reads, 1 write per element  (docs/model.md eqs. C0.2-C0.3)
 *   fl_std_pv       one CTA per row block i: O_i = 0; for each key block j load P_ij and V_j;
 *                   write O_i                                   N^2 + Nd*Tr reads, Nd writes
 * Napkin math: at N = 4096, d = 64, fp16 the 2N^2 writes and 2-4 N^2 reads of S and P are
 * 128-192 MB against 1.5 MB for Q, K, V, O: the quadratic term FlashAttention removes.
 *
 * On chip (shared memory, fp32): scores: Q_i (Br x d), K_j (Bc x d), and the S tile in
 * registers; pv: P_ij (Br x Bc), V_j (Bc x d), O_i (Br x d); both at most (F0) elements.  The
 * softmax's row buffer is N floats when N <= M_eff, else none (it streams).
 *
 * Non-causal only: the model's standard schedule has no mask.
 */
#include "attn.h"

template <class T, int D, int BR, int BC>
__global__ void __launch_bounds__(FL_THREADS)
fl_std_scores(const T *__restrict__ Q, const T *__restrict__ K, T *__restrict__ S, int N,
              float scale, fl_gpu_counters *g)
{
    extern __shared__ float sm[];
    float *Qs = sm, *Ks = sm + BR * (D + 1); /* BR x (D+1), BC x (D+1) */
    FlCount c;
    const int tid = threadIdx.x;
    const long r0 = (long)blockIdx.x * BR;
    const int br = (int)min((long)BR, N - r0);
    for (int x = tid; x < br * D; x += FL_THREADS) { /* Q_i once per row block (Td = 1) */
        const int r = x / D, k = x % D;
        Qs[r * (D + 1) + k] = fl_ld(c, FL_T_Q, Q, (r0 + r) * D + k);
    }
    for (long c0 = 0; c0 < N; c0 += BC) {
        const int bc = (int)min((long)BC, N - c0);
        __syncthreads();
        for (int x = tid; x < bc * D; x += FL_THREADS) {
            const int r = x / D, k = x % D;
            Ks[r * (D + 1) + k] = fl_ld(c, FL_T_K, K, (c0 + r) * D + k);
        }
        __syncthreads();
        for (int x = tid; x < br * bc; x += FL_THREADS) {
            const int r = x / bc, j = x % bc;
            float acc = 0.f;
#pragma unroll 16
            for (int k = 0; k < D; k++) acc += Qs[r * (D + 1) + k] * Ks[j * (D + 1) + k];
            fl_st(c, FL_T_S, S, (r0 + r) * (long)N + c0 + j, acc * scale);
        }
    }
    fl_cnt_flush(c, g, (int)sizeof(T));
}

/* Block-wide max and sum over FL_THREADS threads (red: FL_THREADS/32 floats of scratch). */
__device__ __forceinline__ float block_max(float x, float *red)
{
    x = fl_warp_max(x);
    __syncthreads();
    if ((threadIdx.x & 31) == 0) red[threadIdx.x / 32] = x;
    __syncthreads();
    float r = red[0];
    for (int w = 1; w < FL_THREADS / 32; w++) r = fmaxf(r, red[w]);
    return r;
}
__device__ __forceinline__ float block_sum(float x, float *red)
{
    x = fl_warp_sum(x);
    __syncthreads();
    if ((threadIdx.x & 31) == 0) red[threadIdx.x / 32] = x;
    __syncthreads();
    float r = 0.f;
    for (int w = 0; w < FL_THREADS / 32; w++) r += red[w];
    return r;
}

/* A row of S fits on chip: 1 read and 1 write per element.  Dynamic shared memory: N floats. */
template <class T>
__global__ void __launch_bounds__(FL_THREADS)
fl_std_softmax_row(const T *__restrict__ S, T *__restrict__ P, int N, fl_gpu_counters *g)
{
    extern __shared__ float row[];
    __shared__ float red[FL_THREADS / 32];
    FlCount c;
    const long base = (long)blockIdx.x * N;
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < N; j += FL_THREADS) {
        row[j] = fl_ld(c, FL_T_S, S, base + j);
        mx = fmaxf(mx, row[j]);
    }
    mx = block_max(mx, red);
    float sum = 0.f;
    for (int j = threadIdx.x; j < N; j += FL_THREADS) sum += (row[j] = expf(row[j] - mx));
    sum = block_sum(sum, red);
    for (int j = threadIdx.x; j < N; j += FL_THREADS) fl_st(c, FL_T_P, P, base + j, row[j] / sum);
    fl_cnt_flush(c, g, (int)sizeof(T));
}

/* A row does not fit: safe softmax in three passes, 3 reads and 1 write per element. */
template <class T>
__global__ void __launch_bounds__(FL_THREADS)
fl_std_softmax_3pass(const T *__restrict__ S, T *__restrict__ P, int N, fl_gpu_counters *g)
{
    __shared__ float red[FL_THREADS / 32];
    FlCount c;
    const long base = (long)blockIdx.x * N;
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < N; j += FL_THREADS) mx = fmaxf(mx, fl_ld(c, FL_T_S, S, base + j));
    mx = block_max(mx, red);
    float sum = 0.f;
    for (int j = threadIdx.x; j < N; j += FL_THREADS) sum += expf(fl_ld(c, FL_T_S, S, base + j) - mx);
    sum = block_sum(sum, red);
    for (int j = threadIdx.x; j < N; j += FL_THREADS)
        fl_st(c, FL_T_P, P, base + j, expf(fl_ld(c, FL_T_S, S, base + j) - mx) / sum);
    fl_cnt_flush(c, g, (int)sizeof(T));
}

template <class T, int D, int BR, int BC>
__global__ void __launch_bounds__(FL_THREADS)
fl_std_pv(const T *__restrict__ P, const T *__restrict__ V, T *__restrict__ O, int N,
          fl_gpu_counters *g)
{
    extern __shared__ float sm[];
    float *Ps = sm;             /* BR x BC */
    float *Vs = Ps + BR * BC;   /* BC x D */
    float *Os = Vs + BC * D;    /* BR x D */
    FlCount c;
    const int tid = threadIdx.x;
    const long r0 = (long)blockIdx.x * BR;
    const int br = (int)min((long)BR, N - r0);
    for (int x = tid; x < BR * D; x += FL_THREADS) Os[x] = 0.f;
    for (long c0 = 0; c0 < N; c0 += BC) {
        const int bc = (int)min((long)BC, N - c0);
        __syncthreads();
        for (int x = tid; x < br * bc; x += FL_THREADS) {
            const int r = x / bc, j = x % bc;
            Ps[r * BC + j] = fl_ld(c, FL_T_P, P, (r0 + r) * (long)N + c0 + j);
        }
        for (int x = tid; x < bc * D; x += FL_THREADS) {
            const int r = x / D, k = x % D;
            Vs[r * D + k] = fl_ld(c, FL_T_V, V, (c0 + r) * D + k);
        }
        __syncthreads();
        for (int x = tid; x < br * D; x += FL_THREADS) {
            const int r = x / D, k = x % D;
            float acc = 0.f;
#pragma unroll 8
            for (int j = 0; j < bc; j++) acc += Ps[r * BC + j] * Vs[j * D + k];
            Os[r * D + k] += acc;
        }
    }
    __syncthreads();
    for (int x = tid; x < br * D; x += FL_THREADS) {
        const int r = x / D, k = x % D;
        fl_st(c, FL_T_O, O, (r0 + r) * D + k, Os[r * D + k]);
    }
    fl_cnt_flush(c, g, (int)sizeof(T));
}

/* (F0) with Bd = d: the larger of the two matrix steps' tiles (both are this) */
#define F0(D, BR, BC) ((long)(BR) * (D) + (long)(BC) * (D) + (long)(BR) * (BC))

template <class T, int D, int BR, int BC> static void launch_standard(const fl_gpu_args *a)
{
    constexpr size_t smem_s = sizeof(float) * (size_t)(BR + BC) * (D + 1);
    static_assert(smem_s <= 227 * 1024, "scores tiles do not fit in shared memory");
    const int N = a->N, Tr = FL_CDIV(N, BR);
    CUDA_CHECK(cudaFuncSetAttribute(fl_std_scores<T, D, BR, BC>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem_s));
    fl_std_scores<T, D, BR, BC><<<Tr, FL_THREADS, smem_s, a->stream>>>(
        (const T *)a->Q, (const T *)a->K, (T *)a->S, N, 1.0f / sqrtf((float)D), a->cnt);
    CUDA_CHECK(cudaGetLastError());
    if ((long)N <= F0(D, BR, BC)) { /* eq. (C0.3): the row fits in M */
        const size_t smem = sizeof(float) * (size_t)N;
        CUDA_CHECK(cudaFuncSetAttribute(fl_std_softmax_row<T>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        fl_std_softmax_row<T><<<N, FL_THREADS, smem, a->stream>>>((const T *)a->S, (T *)a->P, N, a->cnt);
    } else {
        fl_std_softmax_3pass<T><<<N, FL_THREADS, 0, a->stream>>>((const T *)a->S, (T *)a->P, N, a->cnt);
    }
    CUDA_CHECK(cudaGetLastError());
    constexpr size_t smem = sizeof(float) * (size_t)(BR * BC + BC * D + BR * D);
    CUDA_CHECK(cudaFuncSetAttribute(fl_std_pv<T, D, BR, BC>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    fl_std_pv<T, D, BR, BC><<<Tr, FL_THREADS, smem, a->stream>>>((const T *)a->P, (const T *)a->V,
                                                                  (T *)a->O, N, a->cnt);
    CUDA_CHECK(cudaGetLastError());
}

#define K0(T, DT, D, BR, BC) {"standard", 1, DT, DT, D, BR, BC, F0(D, BR, BC), 0, launch_standard<T, D, BR, BC>, 0}
#define K0_SWEEP(T, DT, D) K0(T, DT, D, 16, 16), K0(T, DT, D, 32, 32), K0(T, DT, D, 64, 64), K0(T, DT, D, 64, 128)
#define K0_PAIR(T, DT, D) K0(T, DT, D, 32, 32), K0(T, DT, D, 64, 64)

static const fl_kernel_info standard_table[] = {
    K0_SWEEP(__half, FL_F16, 64), K0_SWEEP(__half, FL_F16, 128),
    K0_PAIR(float, FL_F32, 64), K0_PAIR(float, FL_F32, 128),
    K0_PAIR(__nv_bfloat16, FL_BF16, 64), K0_PAIR(__nv_bfloat16, FL_BF16, 128),
};

FL_TABLE_GETTER(fl_standard_kernels, standard_table)
