/* attn_fast_std.cu: version 8, standard (materializing) attention on the tensor cores.
 *
 * Version 1's schedule (sim/sched_standard.c, Algorithm 0; docs/model.md eqs. C0.1-C0.4) with the
 * whole head dimension in one chunk (Bd = d):
 *   step 1  fl_tc_nt         per query block i: load Q_i once; for each key block j: load K_j,
 *                            S_ij = Q_i K_j^T / sqrt(d) (masked entries -inf: the traffic is
 *                            mask-oblivious), write S_ij                       reads Nd + Nd Tr
 *   step 2  fl_fast_softmax  per row: read the row of S once (it fits: N <= M_eff), write P;
 *                            when N > M_eff, the model's three passes (max, sum, write): 3 reads
 *   step 3  fl_tc_nn         per query block i: O_i = 0; for each key block j: load P_ij, V_j,
 *                            O_i += P_ij V_j; write O_i once                   reads N^2 + Nd Tr
 * S and P are stored in the storage type (fp16 / bf16), as version 1 and the model (elem_bytes).
 * Products (kernels/tc_gemm.cuh, shared with version 11): mma.sync m16n8k16 through
 * kernels/mma.cuh, K_j / (P_ij, V_j) prefetched into a
 * second shared-memory stage by cp.async, 4 warps of WM*16 rows.  This is the "standard
 * attention" of the FlashAttention paper's Figure 2, made as fast as its own schedule allows.
 */
#include "attn.h"
#include "tc_gemm.cuh"

/* One CTA per row of S (NT threads).  fits: the row is read once into shared memory (Nk
 * elements); else three passes over HBM as the model's chunked safe softmax.  A row with no
 * legal key gets P = 0 (rule M0). */
template <class T, int NT>
__global__ void __launch_bounds__(NT)
fl_fast_softmax(const T *__restrict__ S, T *__restrict__ P, long rows, int Nk, int fits, fl_gpu_counters *g)
{
    extern __shared__ __align__(128) unsigned char fl_smem[];
    T *row = (T *)fl_smem;
    __shared__ float red[NT / 32];
    FlCount c;
    const long r = blockIdx.x + (long)blockIdx.y * gridDim.x;
    if (r >= rows) { fl_cnt_flush(c, g, (int)sizeof(T)); return; }
    const T *s = S + r * Nk;
    T *p = P + r * Nk;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    auto block_reduce = [&](float v, bool is_max) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            const float w = __shfl_xor_sync(0xffffffffu, v, o);
            v = is_max ? fmaxf(v, w) : v + w;
        }
        __syncthreads();
        if (lane == 0) red[warp] = v;
        __syncthreads();
        v = red[0];
        for (int w = 1; w < NT / 32; w++) v = is_max ? fmaxf(v, red[w]) : v + red[w];
        return v;
    };
    const bool vec = (Nk % 8) == 0; /* rows start on 16 bytes */
    /* pass 1 (and the only read when the row fits): the maximum */
    float mx = -INFINITY;
    if (vec) {
        for (int x = threadIdx.x * 8; x < Nk; x += NT * 8) {
            const uint4 u = __ldcg((const uint4 *)(s + x));
            if (fits) *(uint4 *)(row + x) = u;
            const T *e = (const T *)&u;
#pragma unroll
            for (int k = 0; k < 8; k++) mx = fmaxf(mx, fl_to_f(e[k]));
            FL_CNT_RDN(c, FL_T_S, 8);
        }
    } else {
        for (int x = threadIdx.x; x < Nk; x += NT) {
            const T e = __ldcg(s + x);
            if (fits) row[x] = e;
            mx = fmaxf(mx, fl_to_f(e));
            FL_CNT_RD(c, FL_T_S);
        }
    }
    mx = block_reduce(mx, true);
    const float ms = mx == -INFINITY ? 0.f : mx;
    const T *src = fits ? row : s; /* pass 2 and 3 read the row from SRAM, or again from HBM */
    float sum = 0.f;
    for (int x = threadIdx.x; x < Nk; x += NT) {
        sum += __expf(fl_to_f(fits ? src[x] : __ldcg(src + x)) - ms);
        if (!fits) FL_CNT_RD(c, FL_T_S);
    }
    sum = block_reduce(sum, false);
    const float inv = mx == -INFINITY ? 0.f : 1.f / sum;
    if (vec) {
        for (int x = threadIdx.x * 8; x < Nk; x += NT * 8) {
            const uint4 u = fits ? *(const uint4 *)(row + x) : __ldcg((const uint4 *)(s + x));
            if (!fits) FL_CNT_RDN(c, FL_T_S, 8);
            const T *e = (const T *)&u;
            uint4 w;
            unsigned *wp = (unsigned *)&w;
#pragma unroll
            for (int k = 0; k < 4; k++)
                wp[k] = fl_pack2<T>(__expf(fl_to_f(e[2 * k]) - ms) * inv, __expf(fl_to_f(e[2 * k + 1]) - ms) * inv);
            *(uint4 *)(p + x) = w;
            FL_CNT_WRN(c, FL_T_P, 8);
        }
    } else {
        for (int x = threadIdx.x; x < Nk; x += NT) {
            const float v = fl_to_f(fits ? src[x] : __ldcg(src + x));
            if (!fits) FL_CNT_RD(c, FL_T_S);
            p[x] = fl_from_f<T>(__expf(v - ms) * inv);
            FL_CNT_WR(c, FL_T_P);
        }
    }
    fl_cnt_flush(c, g, (int)sizeof(T));
}

template <class T, int D, int WM, int BC> static void launch_fast_std(const fl_gpu_args *a)
{
    constexpr int BR = (FL_THREADS / 32) * WM * 16, SMT = 256;
    constexpr size_t sm1 = 2 * (size_t)(BR * D + 2 * BC * D), sm3 = 2 * (size_t)(2 * BR * BC + 2 * BC * D);
    const int N = a->N, Nk = a->Nk ? a->Nk : a->N, nbh = a->nbh > 0 ? a->nbh : 1;
    const long off = a->causal == 2 ? (long)Nk - N : 0;
    const long meff = (long)BR * D + (long)BC * D + (long)BR * BC; /* F0 */
    const int fits = Nk <= meff;
    const size_t sm2 = fits ? (size_t)Nk * sizeof(T) : 0;
    if (sm2 > 200 * 1024) {
        fprintf(stderr, "flashlab-gpu: standard (v8): a row of %d keys does not fit in shared memory\n", Nk);
        exit(2);
    }
    CUDA_CHECK(cudaFuncSetAttribute(fl_tc_nt<T, D, WM, BC, FL_T_Q, FL_T_K, FL_T_S>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm1));
    CUDA_CHECK(cudaFuncSetAttribute(fl_tc_nn<T, T, D, WM, BC, FL_T_P, FL_T_V, FL_T_O>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm3));
    CUDA_CHECK(cudaFuncSetAttribute(fl_fast_softmax<T, SMT>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm2));
    const dim3 grid(FL_CDIV(N, BR), nbh);
    fl_tc_nt<T, D, WM, BC, FL_T_Q, FL_T_K, FL_T_S><<<grid, FL_THREADS, sm1, a->stream>>>((const T *)a->Q, (const T *)a->K, (T *)a->S, N, Nk,
                                                                       a->causal, off, 1.0f / sqrtf((float)D), a->cnt);
    CUDA_CHECK(cudaGetLastError());
    const long rows = (long)N * nbh;
    const dim3 g2((unsigned)min(rows, 65535L), (unsigned)FL_CDIV(rows, 65535L));
    fl_fast_softmax<T, SMT><<<g2, SMT, sm2, a->stream>>>((const T *)a->S, (T *)a->P, rows, Nk, fits, a->cnt);
    CUDA_CHECK(cudaGetLastError());
    fl_tc_nn<T, T, D, WM, BC, FL_T_P, FL_T_V, FL_T_O><<<grid, FL_THREADS, sm3, a->stream>>>((const T *)a->P, (const T *)a->V, (T *)a->O, N, Nk, 1.f, a->cnt);
    CUDA_CHECK(cudaGetLastError());
}

/* (F0) with Bd = d: Q_i, K_j (or V_j) and the S / P tile */
#define F0(D, BR, BC) ((long)(BR) * (D) + (long)(BC) * (D) + (long)(BR) * (BC))
#define K8(T, DT, D, WM, BC) {"standard", 8, DT, DT, D, (FL_THREADS / 32) * WM * 16, BC, F0(D, (FL_THREADS / 32) * WM * 16, BC), 1, launch_fast_std<T, D, WM, BC>, 0}
#define K8_SET(T, DT) K8(T, DT, 64, 1, 64), K8(T, DT, 64, 2, 128), K8(T, DT, 128, 1, 64), K8(T, DT, 128, 2, 64)

static const fl_kernel_info fast_std_table[] = {K8_SET(__half, FL_F16), K8_SET(__nv_bfloat16, FL_BF16)};

FL_TABLE_GETTER(fl_fast_std_kernels, fast_std_table)
