/* attn_fast_bwd.cu: version 9, FlashAttention-2 backward (Dao 2023, Algorithm 2) on the tensor
 * cores.
 *
 * The same schedule as version 4 (sim/sched_flash_bwd.c; docs/model.md §backward, F2b):
 *   fl_fast_bwd_pre  line 3-4  dQ = 0 (fp32, in HBM), D = rowsum(dO o O)  reads 2Nd, writes Nd + N
 *   fl_fast_bwd      line 5-18 one CTA per key block j of BC = 64 keys (each of the 4 warps owns
 *                    16 keys): load K_j, V_j; for each query block i that sees j: load Q_i, dO_i,
 *                    L_i, D_i; recompute S^T = K_j Q_i^T, P^T = exp(S^T - L); dV_j += P^T dO_i;
 *                    dP^T = V_j dO_i^T; dS^T = P^T o (dP^T - D); dK_j += dS^T Q_i; dQ_i += dS K_j
 *                    (through shared memory: dS^T is stored once and read transposed by ldmatrix);
 *                    write dK_j, dV_j once.
 * dQ_i += is a red.global.add of two fp32 values (sm_90 vector atomics) per pair of elements:
 * the L2 reads and writes each element of dQ_i, which is the model's load (line 9) and store
 * (line 15) of dQ_i, and the counters count it so: one read and one write per element.  The
 * fp32 accumulator is the output the model counts (rule R8); fl_tc_round (tc_gemm.cuh) rounds it into the
 * storage type when the caller asks (a.dQout, PyTorch's dQ): a pass outside the schedule, used by
 * the benchmark and not counted.
 * Products through kernels/mma.cuh; Q_i, dO_i, L_i, D_i are prefetched by cp.async into a second
 * stage while block i-1 is computed (extra SRAM beside M_eff = F2b, as version 7).
 */
#include "attn.h"
#include "tc_gemm.cuh"

/* lines 3-4: one row per D/8 threads, 16-byte loads; counts O, dO reads, D and dQ writes. */
template <class T, int D>
__global__ void __launch_bounds__(FL_THREADS)
fl_fast_bwd_pre(const T *__restrict__ O, const T *__restrict__ dO, float *__restrict__ Dv, float *__restrict__ dQacc,
                long rows, fl_gpu_counters *g)
{
    constexpr int TPR = D / 8; /* threads per row: 8 or 16, a divisor of 32 */
    FlCount c;
    const long row = ((long)blockIdx.x * FL_THREADS + threadIdx.x) / TPR;
    const int part = threadIdx.x % TPR;
    float acc = 0.f;
    if (row < rows) {
        const uint4 uo = __ldcg((const uint4 *)(O + row * D + part * 8));
        const uint4 ug = __ldcg((const uint4 *)(dO + row * D + part * 8));
        const T *eo = (const T *)&uo, *eg = (const T *)&ug;
#pragma unroll
        for (int k = 0; k < 8; k++) acc += fl_to_f(eo[k]) * fl_to_f(eg[k]);
        FL_CNT_RDN(c, FL_T_O, 8);
        FL_CNT_RDN(c, FL_T_dO, 8);
        float4 *q = (float4 *)(dQacc + row * D + part * 8);
        q[0] = q[1] = make_float4(0.f, 0.f, 0.f, 0.f);
        FL_CNT_WRN(c, FL_T_dQ, 8);
    }
#pragma unroll
    for (int o = TPR / 2; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (row < rows && part == 0) {
        Dv[row] = acc;
        FL_CNT_WR(c, FL_T_D);
    }
    fl_cnt_flush(c, g, (int)sizeof(T));
}

template <class T, int D, int BR>
__global__ void __launch_bounds__(FL_THREADS)
fl_fast_bwd(const T *__restrict__ Q, const T *__restrict__ K, const T *__restrict__ V, const T *__restrict__ dO,
            const float *__restrict__ L, const float *__restrict__ Dv, float *__restrict__ dQacc, T *__restrict__ dK,
            T *__restrict__ dV, int N, int causal, float scale, float scale_log2, fl_gpu_counters *g)
{
    constexpr int BC = 64, WQ = BR / 64; /* keys per CTA; query m-tiles per warp in dQ_i */
    extern __shared__ __align__(128) unsigned char fl_smem[];
    T *Ks = (T *)fl_smem, *Vs = Ks + BC * D;
    T *Qs = Vs + BC * D;          /* 2 stages x BR x D */
    T *dOs = Qs + 2 * BR * D;     /* 2 stages x BR x D */
    T *dSs = dOs + 2 * BR * D;    /* BC x BR: dS^T, keys by queries */
    float *Ls = (float *)(dSs + BC * BR), *Ds = Ls + 2 * BR; /* 2 stages x BR each */
    FlCount c;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g4 = lane >> 2, t4 = lane & 3;
    const int wk = warp * 16; /* the warp's keys in the block */
    const long bh = blockIdx.y, Nd = (long)N * D;
    Q += bh * Nd; K += bh * Nd; V += bh * Nd; dO += bh * Nd; dK += bh * Nd; dV += bh * Nd;
    dQacc += bh * Nd; L += bh * N; Dv += bh * N;
    const long c0 = (long)blockIdx.x * BC;
    const int bc = (int)min((long)BC, N - c0), nqb = (N + BR - 1) / BR;
    /* causal (the lower triangle): query r sees key c0 iff c0 <= r; earlier query blocks skip */
    const int i0 = causal ? (int)(c0 / BR) : 0;

    float dk[1][D / 8][4], dv[1][D / 8][4];
    fl_zero(dk);
    fl_zero(dv);

    auto load_q = [&](int i, int st) { /* line 9: Q_i, dO_i (async), L_i, D_i */
        const long r0 = (long)i * BR;
        const int br = (int)min((long)BR, N - r0);
        fl_load_tile<T, BR, D, FL_THREADS>(Qs + st * BR * D, Q + r0 * D, D, br, D, c, FL_T_Q);
        fl_load_tile<T, BR, D, FL_THREADS>(dOs + st * BR * D, dO + r0 * D, D, br, D, c, FL_T_dO);
        for (int r = threadIdx.x; r < BR; r += FL_THREADS) {
            const bool ok = r < br;
            Ls[st * BR + r] = ok ? __ldcg(L + r0 + r) * 1.4426950408889634f : 0.f; /* base 2 */
            Ds[st * BR + r] = ok ? __ldcg(Dv + r0 + r) : 0.f;
            if (ok) { FL_CNT_RD(c, FL_T_L); FL_CNT_RD(c, FL_T_D); }
        }
    };
    if (i0 < nqb) {
        fl_load_tile<T, BC, D, FL_THREADS>(Ks, K + c0 * D, D, bc, D, c, FL_T_K); /* line 6 */
        fl_load_tile<T, BC, D, FL_THREADS>(Vs, V + c0 * D, D, bc, D, c, FL_T_V);
        load_q(i0, 0);
    }
    fl_cp_commit();

    for (int i = i0; i < nqb; i++) {
        const int st = (i - i0) & 1;
        const long r0 = (long)i * BR;
        if (i + 1 < nqb) {
            load_q(i + 1, st ^ 1);
            fl_cp_commit();
            fl_cp_wait<1>();
        } else {
            fl_cp_wait<0>();
        }
        __syncthreads();
        const T *Qt = Qs + st * BR * D, *dOt = dOs + st * BR * D;
        const float *Lt = Ls + st * BR, *Dt = Ds + st * BR;

        /* lines 10-11: S^T = K_w Q_i^T, P^T = 2^(S^T scale log2e - L log2e) */
        float p[1][BR / 8][4];
        fl_warp_qk<T, D, 1, BR>(p, Ks + wk * D, Qt);
        const bool edge = r0 + BR > N || c0 + BC > N || (causal && c0 + wk + 15 > r0);
#pragma unroll
        for (int n = 0; n < BR / 8; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int q = n * 8 + 2 * t4 + (e & 1);
                float x = fl_ex2(fmaf(p[0][n][e], scale_log2, -Lt[q]));
                if (edge) {
                    const long key = c0 + wk + g4 + ((e >> 1) << 3), row = r0 + q;
                    if (row >= N || key >= N || (causal && key > row)) x = 0.f;
                }
                p[0][n][e] = x;
            }
        /* line 12: dV_j += P^T dO_i */
        fl_warp_pv_regs<T, D, 1, BR>(dv, p, dOt);
        /* lines 13-14: dP^T = V_w dO_i^T, dS^T = P^T o (dP^T - D) */
        float ds[1][BR / 8][4];
        fl_warp_qk<T, D, 1, BR>(ds, Vs + wk * D, dOt);
#pragma unroll
        for (int n = 0; n < BR / 8; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) ds[0][n][e] = p[0][n][e] * (ds[0][n][e] - Dt[n * 8 + 2 * t4 + (e & 1)]);
        /* line 16: dK_j += dS^T Q_i (scaled at the end) */
        fl_warp_pv_regs<T, D, 1, BR>(dk, ds, Qt);
        /* dS^T to shared memory, this warp's 16 key rows */
#pragma unroll
        for (int n = 0; n < BR / 8; n++)
#pragma unroll
            for (int h = 0; h < 2; h++)
                *(unsigned *)(dSs + fl_swz<BR>(wk + g4 + 8 * h, n) + 2 * t4) = fl_pack2<T>(ds[0][n][2 * h], ds[0][n][2 * h + 1]);
        __syncthreads();
        /* line 15: dQ_i += dS K_j scale; warp w owns queries w*BR/4.. (WQ m-tiles) */
        {
            const int qw = warp * WQ * 16;
            float dq[WQ][D / 8][4];
            fl_zero(dq);
            fl_warp_pv_smem_t<T, D, WQ, BC, BR>(dq, dSs, qw, Ks); /* dS read transposed from dS^T */
#pragma unroll
            for (int m = 0; m < WQ; m++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const long row = r0 + qw + m * 16 + g4 + 8 * h;
                    if (row >= N) continue;
#pragma unroll
                    for (int n = 0; n < D / 8; n++)
                        atomicAdd((float2 *)(dQacc + row * D + n * 8 + 2 * t4),
                                  make_float2(dq[m][n][2 * h] * scale, dq[m][n][2 * h + 1] * scale));
                    FL_CNT_RDN(c, FL_T_dQ, D / 4); /* this thread's D/4 elements of the row: read + written */
                    FL_CNT_WRN(c, FL_T_dQ, D / 4);
                }
        }
        __syncthreads(); /* stage st and dS^T are free */
    }
    /* line 18: write dK_j (scaled), dV_j through the first Q stage (free now) */
    float rs[1][2] = {{scale, scale}}, one[1][2] = {{1.f, 1.f}};
    const int kr = (int)min(16L, max(0L, N - c0 - wk));
    fl_warp_store_rows<T, D, 1>(dk, rs, Qs + wk * D, dK + (c0 + wk) * D, kr, c, FL_T_dK);
    fl_warp_store_rows<T, D, 1>(dv, one, Qs + (64 + wk) * D, dV + (c0 + wk) * D, kr, c, FL_T_dV);
    fl_cnt_flush(c, g, (int)sizeof(T));
}

template <int D, int BR> constexpr size_t fast_bwd_smem()
{
    return 2 * (size_t)(2 * 64 * D + 4 * BR * D + 64 * BR) + 4 * 4 * (size_t)BR;
}

template <class T, int D, int BR> static void launch_fast_bwd(const fl_gpu_args *a)
{
    constexpr size_t smem = fast_bwd_smem<D, BR>();
    static_assert(smem <= 227 * 1024, "fast backward tiles do not fit in shared memory");
    const int N = a->N, nbh = a->nbh > 0 ? a->nbh : 1;
    const long rows = (long)N * nbh;
    fl_fast_bwd_pre<T, D><<<(unsigned)FL_CDIV(rows * (D / 8), FL_THREADS), FL_THREADS, 0, a->stream>>>(
        (const T *)a->O, (const T *)a->dO, a->Dv, a->dQ, rows, a->cnt);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaFuncSetAttribute(fl_fast_bwd<T, D, BR>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    const float scale = 1.0f / sqrtf((float)D);
    fl_fast_bwd<T, D, BR><<<dim3(FL_CDIV(N, 64), nbh), FL_THREADS, smem, a->stream>>>(
        (const T *)a->Q, (const T *)a->K, (const T *)a->V, (const T *)a->dO, a->L, a->Dv, a->dQ, (T *)a->dK,
        (T *)a->dV, N, a->causal ? 1 : 0, scale, scale * 1.4426950408889634f, a->cnt);
    CUDA_CHECK(cudaGetLastError());
    if (a->dQout) {
        fl_tc_round<T><<<1024, 256, 0, a->stream>>>(a->dQ, (T *)a->dQout, rows * D / 2);
        CUDA_CHECK(cudaGetLastError());
    }
}

/* (F2b) 4 Bc d + 3 Br d + 2 Br Bc + 2 Br: K_j, V_j, dK_j, dV_j, Q_i, dO_i, dQ_i, S_ij, dP_ij, L_i, D_i */
#define F2B(D, BR, BC) (4L * (BC) * (D) + 3L * (BR) * (D) + 2L * (BR) * (BC) + 2L * (BR))
#define K9(T, DT, D, BR) {"flash2", 9, DT, DT, D, BR, 64, F2B(D, BR, 64), 1, launch_fast_bwd<T, D, BR>, 1}
#define K9_SET(T, DT) K9(T, DT, 64, 64), K9(T, DT, 64, 128), K9(T, DT, 128, 64)

static const fl_kernel_info fast_bwd_table[] = {K9_SET(__half, FL_F16), K9_SET(__nv_bfloat16, FL_BF16)};

FL_TABLE_GETTER(fl_fast_bwd_kernels, fast_bwd_table)
