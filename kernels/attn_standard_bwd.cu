/* attn_standard_bwd.cu: version 6, standard attention backward (FlashAttention paper,
 * Algorithm 3) from the P the forward (version 1) saved in HBM: dP and dS materialized too.
 *
 * Compile (part of the harness; see kernels/CMakeLists.txt), standalone:
 *   nvcc -O3 -std=c++17 -arch=sm_90 -DFL_COUNTERS -c kernels/attn_standard_bwd.cu
 *
 * The schedule is sim/sched_standard_bwd.c with the forward's tiles (Br, Bc, Bd = d; M = M_eff =
 * (F0) Br d + Bc d + Br Bc):
 *   1  dV = P^T dO      product_nn, transposed: a CTA per Bc rows of dV; for each Br rows of P:
 *                       load the P tile (Br x Bc) and dO rows          N^2 + Nd Tc reads, Nd writes
 *   2  dP = dO V^T      product_nt: a CTA per Br rows; dO_i once, V_j per tile; write dP_ij
 *                                                                      Nd + Nd Tr reads, N^2 writes
 *   3  dS = P o (dP - D) a CTA per row: when rows of P and dP fit (2N <= M_eff) 2 reads + 1 write
 *                       per element, else two passes (D_i, then dS): 4 reads + 1 write (C0b.3)
 *   4  dQ = dS K / sqrt(d)   product_nn: N^2 + Nd Tr reads, Nd writes
 *   5  dK = dS^T Q / sqrt(d) product_nn, transposed: N^2 + Nd Tc reads, Nd writes
 * Napkin math: at N = 4096, d = 64, fp16 the N^2 tensors move 5-7 N^2 elements (160-230 MB)
 * against ~10 Nd (5 MB) for the rest: the quadratic traffic FlashAttention's backward removes.
 * Non-causal only (as the forward kernel).
 */
#include "attn.h"

/* C = alpha A B^T (C: N x N, A, B: N x D), tiles of BR rows of A and BC rows of B; A_i is loaded
 * once per row block (Td = 1).  Tensor ids are compile-time (the counters live in registers). */
template <class T, int D, int BR, int BC, int TA, int TB, int TC>
__global__ void __launch_bounds__(FL_THREADS)
fl_std_nt(const T *__restrict__ A, const T *__restrict__ B, T *__restrict__ C, int N, float alpha,
          fl_gpu_counters *g)
{
    extern __shared__ float sm[];
    float *As = sm, *Bs = sm + BR * (D + 1);
    FlCount c;
    const int tid = threadIdx.x;
    const long r0 = (long)blockIdx.x * BR;
    const int br = (int)min((long)BR, N - r0);
    for (int x = tid; x < br * D; x += FL_THREADS)
        As[(x / D) * (D + 1) + x % D] = fl_ld(c, TA, A, r0 * D + x);
    for (long c0 = 0; c0 < N; c0 += BC) {
        const int bc = (int)min((long)BC, N - c0);
        __syncthreads();
        for (int x = tid; x < bc * D; x += FL_THREADS)
            Bs[(x / D) * (D + 1) + x % D] = fl_ld(c, TB, B, c0 * D + x);
        __syncthreads();
        for (int x = tid; x < br * bc; x += FL_THREADS) {
            const int r = x / bc, j = x % bc;
            float acc = 0.f;
#pragma unroll 16
            for (int k = 0; k < D; k++) acc += As[r * (D + 1) + k] * Bs[j * (D + 1) + k];
            fl_st(c, TC, C, (r0 + r) * (long)N + c0 + j, alpha * acc);
        }
    }
    fl_cnt_flush(c, g, (int)sizeof(T));
}

/* O = alpha P V (TRANSP = 0: O rows = P rows, BO = Br, the sum over P's columns in steps of
 * BS = Bc) or O = alpha P^T V (TRANSP = 1: O rows = P columns, BO = Bc, the sum over P's rows
 * in steps of BS = Br).  P is N x N, V and O are N x D.  The P tile is always Br x Bc.  O's
 * type TOUT: the storage type, or fp32 for dQ (every kernel here keeps dQ in fp32). */
template <class T, class TOUT, int D, int BO, int BS, int TRANSP, int TP, int TV, int TO>
__global__ void __launch_bounds__(FL_THREADS)
fl_std_nn(const T *__restrict__ P, const T *__restrict__ V, TOUT *__restrict__ O, int N, float alpha,
          fl_gpu_counters *g)
{
    extern __shared__ float sm[];
    float *Ps = sm;            /* BS x BO when transposed (P rows q.., cols r0..), else BO x BS */
    float *Vs = Ps + BO * BS;  /* BS x D */
    float *Os = Vs + BS * D;   /* BO x D */
    FlCount c;
    const int tid = threadIdx.x;
    const long r0 = (long)blockIdx.x * BO;
    const int bo = (int)min((long)BO, N - r0);
    for (int x = tid; x < BO * D; x += FL_THREADS) Os[x] = 0.f;
    for (long q = 0; q < N; q += BS) {
        const int bs = (int)min((long)BS, N - q);
        __syncthreads();
        if (TRANSP) {
            for (int x = tid; x < bs * bo; x += FL_THREADS) { /* P[q + i, r0 + r] */
                const int i = x / bo, r = x % bo;
                Ps[i * BO + r] = fl_ld(c, TP, P, (q + i) * (long)N + r0 + r);
            }
        } else {
            for (int x = tid; x < bo * bs; x += FL_THREADS) { /* P[r0 + r, q + i] */
                const int r = x / bs, i = x % bs;
                Ps[r * BS + i] = fl_ld(c, TP, P, (r0 + r) * (long)N + q + i);
            }
        }
        for (int x = tid; x < bs * D; x += FL_THREADS) Vs[x] = fl_ld(c, TV, V, q * D + x);
        __syncthreads();
        for (int x = tid; x < bo * D; x += FL_THREADS) {
            const int r = x / D, k = x % D;
            float acc = 0.f;
#pragma unroll 8
            for (int i = 0; i < bs; i++) acc += (TRANSP ? Ps[i * BO + r] : Ps[r * BS + i]) * Vs[i * D + k];
            Os[r * D + k] += acc;
        }
    }
    __syncthreads();
    for (int x = tid; x < bo * D; x += FL_THREADS) fl_st(c, TO, O, r0 * D + x, alpha * Os[x]);
    fl_cnt_flush(c, g, (int)sizeof(T));
}

/* step 3, rows fit: a row of P and one of dP on chip (2N floats of dynamic shared memory) */
template <class T>
__global__ void __launch_bounds__(FL_THREADS)
fl_std_dsoftmax_row(const T *__restrict__ P, const T *__restrict__ dP, T *__restrict__ dS, int N,
                    fl_gpu_counters *g)
{
    extern __shared__ float row[];
    __shared__ float red[FL_THREADS / 32];
    float *p = row, *gp = row + N;
    FlCount c;
    const long base = (long)blockIdx.x * N;
    float acc = 0.f;
    for (int j = threadIdx.x; j < N; j += FL_THREADS) {
        p[j] = fl_ld(c, FL_T_P, P, base + j);
        gp[j] = fl_ld(c, FL_T_dP, dP, base + j);
        acc += p[j] * gp[j];
    }
    acc = fl_warp_sum(acc);
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = acc;
    __syncthreads();
    float Dd = 0.f;
    for (int w = 0; w < FL_THREADS / 32; w++) Dd += red[w];
    for (int j = threadIdx.x; j < N; j += FL_THREADS) fl_st(c, FL_T_dS, dS, base + j, p[j] * (gp[j] - Dd));
    fl_cnt_flush(c, g, (int)sizeof(T));
}

/* step 3, rows do not fit: pass 1 reads P, dP for D_i; pass 2 reads them again and writes dS */
template <class T>
__global__ void __launch_bounds__(FL_THREADS)
fl_std_dsoftmax_2pass(const T *__restrict__ P, const T *__restrict__ dP, T *__restrict__ dS, int N,
                      fl_gpu_counters *g)
{
    __shared__ float red[FL_THREADS / 32];
    FlCount c;
    const long base = (long)blockIdx.x * N;
    float acc = 0.f;
    for (int j = threadIdx.x; j < N; j += FL_THREADS)
        acc += fl_ld(c, FL_T_P, P, base + j) * fl_ld(c, FL_T_dP, dP, base + j);
    acc = fl_warp_sum(acc);
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = acc;
    __syncthreads();
    float Dd = 0.f;
    for (int w = 0; w < FL_THREADS / 32; w++) Dd += red[w];
    for (int j = threadIdx.x; j < N; j += FL_THREADS) {
        const float pj = fl_ld(c, FL_T_P, P, base + j), gj = fl_ld(c, FL_T_dP, dP, base + j);
        fl_st(c, FL_T_dS, dS, base + j, pj * (gj - Dd));
    }
    fl_cnt_flush(c, g, (int)sizeof(T));
}

template <class K> static void set_smem(K kern, size_t smem)
{
    CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
}

#define F0(D, BR, BC) ((long)(BR) * (D) + (long)(BC) * (D) + (long)(BR) * (BC))

template <class T, int D, int BR, int BC> static void launch_standard_bwd(const fl_gpu_args *a)
{
    const int N = a->N, Tr = FL_CDIV(N, BR), Tc = FL_CDIV(N, BC);
    const float scale = 1.0f / sqrtf((float)D);
    const T *P = (const T *)a->P, *dO = (const T *)a->dO, *Q = (const T *)a->Q, *K = (const T *)a->K,
            *V = (const T *)a->V;
    T *dPb = (T *)a->dPbuf, *dSb = (T *)a->dSbuf;
    constexpr size_t nn_t = sizeof(float) * (size_t)(BC * BR + BR * D + BC * D); /* transposed */
    constexpr size_t nn_n = sizeof(float) * (size_t)(BR * BC + BC * D + BR * D);
    constexpr size_t nt = sizeof(float) * (size_t)(BR + BC) * (D + 1);
    /* 1: dV = P^T dO */
    auto k1 = fl_std_nn<T, T, D, BC, BR, 1, FL_T_P, FL_T_dO, FL_T_dV>;
    set_smem(k1, nn_t);
    k1<<<Tc, FL_THREADS, nn_t, a->stream>>>(P, dO, (T *)a->dV, N, 1.0f, a->cnt);
    CUDA_CHECK(cudaGetLastError());
    /* 2: dP = dO V^T */
    auto k2 = fl_std_nt<T, D, BR, BC, FL_T_dO, FL_T_V, FL_T_dP>;
    set_smem(k2, nt);
    k2<<<Tr, FL_THREADS, nt, a->stream>>>(dO, V, dPb, N, 1.0f, a->cnt);
    CUDA_CHECK(cudaGetLastError());
    /* 3: dS = P o (dP - D) */
    if (2L * N <= F0(D, BR, BC)) {
        const size_t smem = 2 * sizeof(float) * (size_t)N;
        set_smem(fl_std_dsoftmax_row<T>, smem);
        fl_std_dsoftmax_row<T><<<N, FL_THREADS, smem, a->stream>>>(P, dPb, dSb, N, a->cnt);
    } else {
        fl_std_dsoftmax_2pass<T><<<N, FL_THREADS, 0, a->stream>>>(P, dPb, dSb, N, a->cnt);
    }
    CUDA_CHECK(cudaGetLastError());
    /* 4: dQ = dS K / sqrt(d), written once, in fp32 (as every dQ here) */
    auto k4 = fl_std_nn<T, float, D, BR, BC, 0, FL_T_dS, FL_T_K, FL_T_dQ>;
    set_smem(k4, nn_n);
    k4<<<Tr, FL_THREADS, nn_n, a->stream>>>(dSb, K, a->dQ, N, scale, a->cnt);
    CUDA_CHECK(cudaGetLastError());
    /* 5: dK = dS^T Q / sqrt(d) */
    auto k5 = fl_std_nn<T, T, D, BC, BR, 1, FL_T_dS, FL_T_Q, FL_T_dK>;
    set_smem(k5, nn_t);
    k5<<<Tc, FL_THREADS, nn_t, a->stream>>>(dSb, Q, (T *)a->dK, N, scale, a->cnt);
    CUDA_CHECK(cudaGetLastError());
}

#define K0B(T, DT, D, BR, BC) {"standard", 6, DT, DT, D, BR, BC, F0(D, BR, BC), 0, launch_standard_bwd<T, D, BR, BC>, 1}

static const fl_kernel_info standard_bwd_table[] = {
    K0B(__half, FL_F16, 64, 16, 16), K0B(__half, FL_F16, 64, 32, 32), K0B(__half, FL_F16, 64, 64, 64),
    K0B(__half, FL_F16, 128, 32, 32), K0B(__half, FL_F16, 128, 64, 64),
    K0B(float, FL_F32, 64, 32, 32), K0B(__nv_bfloat16, FL_BF16, 64, 32, 32),
};

FL_TABLE_GETTER(fl_standard_bwd_kernels, standard_bwd_table)
