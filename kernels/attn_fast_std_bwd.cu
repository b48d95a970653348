/* attn_fast_std_bwd.cu: version 11, standard (materializing) backward on the tensor cores.
 *
 * Version 6's schedule (sim/sched_standard_bwd.c, the FlashAttention paper's Algorithm 3, from P
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

/* Step 3, one CTA of NT threads per row; fits: the two rows stay in shared memory. */
template <class T, int NT>
__global__ void __launch_bounds__(NT)
fl_tc_dsoftmax(const T *__restrict__ P, const T *__restrict__ dP, T *__restrict__ dS, long rows, int Nk, int fits,
               fl_gpu_counters *g)
{
    extern __shared__ __align__(128) unsigned char fl_smem[];
    T *pr = (T *)fl_smem, *gr = pr + Nk;
    __shared__ float red[NT / 32];
    FlCount c;
    const long r = blockIdx.x + (long)blockIdx.y * gridDim.x;
    if (r >= rows) { fl_cnt_flush(c, g, (int)sizeof(T)); return; }
    const T *p = P + r * Nk, *dp = dP + r * Nk;
    T *ds = dS + r * Nk;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    /* pass 1: D = sum P o dP (the rows kept on chip when they fit) */
    float D = 0.f;
    for (int x = threadIdx.x; x < Nk; x += NT) {
        const T a = __ldcg(p + x), b = __ldcg(dp + x);
        if (fits) { pr[x] = a; gr[x] = b; }
        D += fl_to_f(a) * fl_to_f(b);
        FL_CNT_RD(c, FL_T_P);
        FL_CNT_RD(c, FL_T_dP);
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
            a = fl_to_f(__ldcg(p + x)), b = fl_to_f(__ldcg(dp + x));
            FL_CNT_RD(c, FL_T_P);
            FL_CNT_RD(c, FL_T_dP);
        }
        ds[x] = fl_from_f<T>(a * (b - D));
        FL_CNT_WR(c, FL_T_dS);
    }
    fl_cnt_flush(c, g, (int)sizeof(T));
}

template <class T, int D, int WM> static void launch_fast_std_bwd(const fl_gpu_args *a)
{
    constexpr int B = (FL_THREADS / 32) * WM * 16, NT = 256; /* Br = Bc = B */
    constexpr size_t smg = 2 * (size_t)(2 * B * B + 2 * B * D);  /* nn, tn: 2 stages of a B x B and a B x D tile */
    constexpr size_t smt = 2 * (size_t)(B * D + 2 * B * D);      /* nt: A_i and 2 stages of B_j */
    const int N = a->N, nbh = a->nbh > 0 ? a->nbh : 1;
    const long meff = (long)B * D + (long)B * D + (long)B * B; /* F0 */
    const int fits = 2L * N <= meff;
    const size_t sm3 = fits ? 2 * (size_t)N * sizeof(T) : 0;
    if (sm3 > 200 * 1024) {
        fprintf(stderr, "flashlab-gpu: standard backward (v11): two rows of %d keys do not fit in shared memory\n", N);
        exit(2);
    }
    const float scale = 1.0f / sqrtf((float)D);
    const dim3 grid(FL_CDIV(N, B), nbh);
    auto tn = fl_tc_tn<T, D, WM, B, FL_T_P, FL_T_dO, FL_T_dV>;
    auto tn2 = fl_tc_tn<T, D, WM, B, FL_T_dS, FL_T_Q, FL_T_dK>;
    auto nt = fl_tc_nt<T, D, WM, B, FL_T_dO, FL_T_V, FL_T_dP>;
    auto nn = fl_tc_nn<T, float, D, WM, B, FL_T_dS, FL_T_K, FL_T_dQ>;
    CUDA_CHECK(cudaFuncSetAttribute(tn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smg));
    CUDA_CHECK(cudaFuncSetAttribute(tn2, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smg));
    CUDA_CHECK(cudaFuncSetAttribute(nn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smg));
    CUDA_CHECK(cudaFuncSetAttribute(nt, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smt));
    CUDA_CHECK(cudaFuncSetAttribute(fl_tc_dsoftmax<T, NT>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm3));
    tn<<<grid, FL_THREADS, smg, a->stream>>>((const T *)a->P, (const T *)a->dO, (T *)a->dV, N, N, 1.f, a->cnt); /* 1 */
    CUDA_CHECK(cudaGetLastError());
    nt<<<grid, FL_THREADS, smt, a->stream>>>((const T *)a->dO, (const T *)a->V, (T *)a->dPbuf, N, N, 0, 0, 1.f, a->cnt); /* 2 */
    CUDA_CHECK(cudaGetLastError());
    const long rows = (long)N * nbh;
    const dim3 g3((unsigned)min(rows, 65535L), (unsigned)FL_CDIV(rows, 65535L));
    fl_tc_dsoftmax<T, NT><<<g3, NT, sm3, a->stream>>>((const T *)a->P, (const T *)a->dPbuf, (T *)a->dSbuf, rows, N, fits,
                                                       a->cnt); /* 3 */
    CUDA_CHECK(cudaGetLastError());
    nn<<<grid, FL_THREADS, smg, a->stream>>>((const T *)a->dSbuf, (const T *)a->K, a->dQ, N, N, scale, a->cnt); /* 4 */
    CUDA_CHECK(cudaGetLastError());
    tn2<<<grid, FL_THREADS, smg, a->stream>>>((const T *)a->dSbuf, (const T *)a->Q, (T *)a->dK, N, N, scale, a->cnt); /* 5 */
    CUDA_CHECK(cudaGetLastError());
    if (a->dQout) {
        fl_tc_round<T><<<1024, 256, 0, a->stream>>>(a->dQ, (T *)a->dQout, rows * D / 2);
        CUDA_CHECK(cudaGetLastError());
    }
}

/* (F0) Br d + Bc d + Br Bc with Br = Bc = B, both passes (docs/model.md) */
#define F0(D, B) (2L * (B) * (D) + (long)(B) * (B))
#define K11(T, DT, D, WM) {"standard", 11, DT, DT, D, (FL_THREADS / 32) * WM * 16, (FL_THREADS / 32) * WM * 16, \
                           F0(D, (FL_THREADS / 32) * WM * 16), 1, launch_fast_std_bwd<T, D, WM>, 1}
#define K11_SET(T, DT) K11(T, DT, 64, 1), K11(T, DT, 64, 2), K11(T, DT, 128, 1)

static const fl_kernel_info fast_std_bwd_table[] = {K11_SET(__half, FL_F16), K11_SET(__nv_bfloat16, FL_BF16)};

FL_TABLE_GETTER(fl_fast_std_bwd_kernels, fast_std_bwd_table)
