/* tc_gemm.cuh: the three tensor-core products of the materializing kernels (versions 8 and 11),
 * each the loop of sim/sched_standard.c (fl_std_product_nt / fl_std_product_nn) with the whole
 * head dimension in one chunk (Bd = d), one CTA per output block, the next operand tiles
 * prefetched by cp.async into a second stage.  Heads: grid.y, contiguous slices.
 *
 *   fl_tc_nt  C = scale A B^T        (N x Nk; A: N x d, B: Nk x d)   per row block i: A_i once,
 *             each B_j, C_ij written (causal: entries right of the diagonal -inf; traffic is
 *             mask-oblivious)                                    S = QK^T, dP = dO V^T
 *   fl_tc_nn  O = scale P V          (N x d; P: N x Nk, V: Nk x d)   per row block i: P_ij, V_j
 *             for each j, O_i written once (OutT float: the fp32 dQ) O = PV, dQ = dS K
 *   fl_tc_tn  O = scale P^T V        (Nk x d; P: N x Nk, V: N x d)   per key block j: P_ij, V_i
 *             for each i, O_j written once                     dV = P^T dO, dK = dS^T Q
 * TA, TB, TC (TP, TV, TO): the tensors the counters charge (docs/model.md names).
 */
#ifndef FL_KERNELS_TC_GEMM_CUH
#define FL_KERNELS_TC_GEMM_CUH

#include <type_traits>

#include "mma.cuh"

/* C = scale A B^T, masked (see above). */
template <class T, int D, int WM, int BC, int TA, int TB, int TC>
__global__ void __launch_bounds__(FL_THREADS)
fl_tc_nt(const T *__restrict__ Q, const T *__restrict__ K, T *__restrict__ S, int N, int Nk, int causal, long off,
         float scale, fl_gpu_counters *g)
{
    constexpr int BR = (FL_THREADS / 32) * WM * 16;
    extern __shared__ __align__(128) unsigned char fl_smem[];
    T *Qs = (T *)fl_smem, *Ks = Qs + BR * D; /* Q_i, 2 stages of K_j */
    FlCount c;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g4 = lane >> 2, t4 = lane & 3;
    const long bh = blockIdx.y;
    Q += bh * N * D; K += bh * Nk * D; S += bh * (long)N * Nk;
    const long r0 = (long)blockIdx.x * BR;
    const int br = (int)min((long)BR, N - r0), nkb = (Nk + BC - 1) / BC, wrow = warp * WM * 16;
    fl_load_tile<T, BR, D, FL_THREADS>(Qs, Q + r0 * D, D, br, D, c, TA);
    fl_load_tile<T, BC, D, FL_THREADS>(Ks, K, D, min(BC, Nk), D, c, TB);
    fl_cp_commit();
    for (int j = 0; j < nkb; j++) {
        const long c0 = (long)j * BC;
        if (j + 1 < nkb) {
            fl_load_tile<T, BC, D, FL_THREADS>(Ks + ((j + 1) & 1) * BC * D, K + (c0 + BC) * D, D,
                                               (int)min((long)BC, Nk - c0 - BC), D, c, TB);
            fl_cp_commit();
            fl_cp_wait<1>();
        } else {
            fl_cp_wait<0>();
        }
        __syncthreads();
        float s[WM][BC / 8][4];
        fl_warp_qk<T, D, WM, BC>(s, Qs + wrow * D, Ks + (j & 1) * BC * D);
        /* write S_ij straight from the fragments: a quad's two-element stores fill 32-byte
         * sectors across the n-tile pair; rows past N and keys past Nk are not stored */
#pragma unroll
        for (int m = 0; m < WM; m++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const long row = r0 + wrow + m * 16 + g4 + 8 * h;
                if (row >= N) continue;
#pragma unroll
                for (int n = 0; n < BC / 8; n++) {
                    const long col = c0 + n * 8 + 2 * t4;
                    float x0 = s[m][n][2 * h] * scale, x1 = s[m][n][2 * h + 1] * scale;
                    if (causal && !fl_causal_keep(row, col, off)) x0 = -INFINITY;
                    if (causal && !fl_causal_keep(row, col + 1, off)) x1 = -INFINITY;
                    T *p = S + row * Nk + col;
                    if (col + 1 < Nk && (Nk & 1) == 0) {
                        *(unsigned *)p = fl_pack2<T>(x0, x1);
                        FL_CNT_WRN(c, TC, 2);
                    } else {
                        if (col < Nk) { p[0] = fl_from_f<T>(x0); FL_CNT_WR(c, TC); }
                        if (col + 1 < Nk) { p[1] = fl_from_f<T>(x1); FL_CNT_WR(c, TC); }
                    }
                }
            }
        __syncthreads();
    }
    fl_cnt_flush(c, g, (int)sizeof(T));
}

/* O = scale P V (see above). */
template <class T, class OutT, int D, int WM, int BC, int TP, int TV, int TO>
__global__ void __launch_bounds__(FL_THREADS)
fl_tc_nn(const T *__restrict__ P, const T *__restrict__ V, OutT *__restrict__ O, int N, int Nk, float scale,
         fl_gpu_counters *g)
{
    constexpr int BR = (FL_THREADS / 32) * WM * 16;
    extern __shared__ __align__(128) unsigned char fl_smem[];
    T *Ps = (T *)fl_smem, *Vs = Ps + 2 * BR * BC; /* 2 stages of P_ij and of V_j */
    FlCount c;
    const int warp = threadIdx.x >> 5, wrow = warp * WM * 16;
    const long bh = blockIdx.y;
    P += bh * (long)N * Nk; V += bh * Nk * D; O += bh * N * D;
    const long r0 = (long)blockIdx.x * BR;
    const int br = (int)min((long)BR, N - r0), nkb = (Nk + BC - 1) / BC;
    float o[WM][D / 8][4];
    fl_zero(o);
    fl_load_tile<T, BR, BC, FL_THREADS>(Ps, P + r0 * Nk, Nk, br, min(BC, Nk), c, TP);
    fl_load_tile<T, BC, D, FL_THREADS>(Vs, V, D, min(BC, Nk), D, c, TV);
    fl_cp_commit();
    for (int j = 0; j < nkb; j++) {
        const long c0 = (long)j * BC;
        if (j + 1 < nkb) {
            const int st = (j + 1) & 1, bc1 = (int)min((long)BC, Nk - c0 - BC);
            fl_load_tile<T, BR, BC, FL_THREADS>(Ps + st * BR * BC, P + r0 * Nk + c0 + BC, Nk, br, bc1, c, TP);
            fl_load_tile<T, BC, D, FL_THREADS>(Vs + st * BC * D, V + (c0 + BC) * D, D, bc1, D, c, TV);
            fl_cp_commit();
            fl_cp_wait<1>();
        } else {
            fl_cp_wait<0>();
        }
        __syncthreads();
        fl_warp_pv_smem<T, D, WM, BC>(o, Ps + (j & 1) * BR * BC + wrow * BC, Vs + (j & 1) * BC * D);
        __syncthreads();
    }
    /* O = scale * acc: fp32 (the backward's dQ, rule R8) straight from the fragments; the storage
     * type through this block's first P buffer (BR x D fits in 2 BR x BC when BC >= D/2) */
    static_assert(2 * BC >= D, "the output stage reuses the P buffers");
    const int rows = (int)min((long)WM * 16, max(0L, N - r0 - wrow));
    if constexpr (std::is_same<OutT, float>::value) {
        const int lane = threadIdx.x & 31, g4 = lane >> 2, t4 = lane & 3;
#pragma unroll
        for (int m = 0; m < WM; m++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int r = m * 16 + g4 + 8 * h;
                if (r >= rows) continue;
#pragma unroll
                for (int n = 0; n < D / 8; n++)
                    *(float2 *)(O + (r0 + wrow + r) * D + n * 8 + 2 * t4) =
                        make_float2(o[m][n][2 * h] * scale, o[m][n][2 * h + 1] * scale);
                FL_CNT_WRN(c, TO, D / 4);
            }
    } else {
        float rs[WM][2];
#pragma unroll
        for (int m = 0; m < WM; m++) rs[m][0] = rs[m][1] = scale;
        fl_warp_store_rows<T, D, WM>(o, rs, Ps + wrow * D, O + (r0 + wrow) * D, rows, c, TO);
    }
    fl_cnt_flush(c, g, (int)sizeof(T));
}
/* O = scale P^T V (see above): A fragments of P^T by ldmatrix.trans from P's tiles. */
template <class T, int D, int WM, int BQ, int TP, int TV, int TO>
__global__ void __launch_bounds__(FL_THREADS)
fl_tc_tn(const T *__restrict__ P, const T *__restrict__ V, T *__restrict__ O, int N, int Nk, float scale,
         fl_gpu_counters *g)
{
    constexpr int BK = (FL_THREADS / 32) * WM * 16; /* output rows (keys) per CTA */
    extern __shared__ __align__(128) unsigned char fl_smem[];
    T *Ps = (T *)fl_smem, *Vs = Ps + 2 * BQ * BK; /* 2 stages of P_ij (BQ x BK) and of V_i (BQ x D) */
    FlCount c;
    const int warp = threadIdx.x >> 5, wrow = warp * WM * 16;
    const long bh = blockIdx.y;
    P += bh * (long)N * Nk; V += bh * (long)N * D; O += bh * (long)Nk * D;
    const long k0 = (long)blockIdx.x * BK;
    const int bk = (int)min((long)BK, Nk - k0), nqb = (N + BQ - 1) / BQ;
    float o[WM][D / 8][4];
    fl_zero(o);
    fl_load_tile<T, BQ, BK, FL_THREADS>(Ps, P + k0, Nk, min(BQ, N), bk, c, TP);
    fl_load_tile<T, BQ, D, FL_THREADS>(Vs, V, D, min(BQ, N), D, c, TV);
    fl_cp_commit();
    for (int i = 0; i < nqb; i++) {
        const long q0 = (long)i * BQ;
        if (i + 1 < nqb) {
            const int st = (i + 1) & 1, bq1 = (int)min((long)BQ, N - q0 - BQ);
            fl_load_tile<T, BQ, BK, FL_THREADS>(Ps + st * BQ * BK, P + (q0 + BQ) * Nk + k0, Nk, bq1, bk, c, TP);
            fl_load_tile<T, BQ, D, FL_THREADS>(Vs + st * BQ * D, V + (q0 + BQ) * D, D, bq1, D, c, TV);
            fl_cp_commit();
            fl_cp_wait<1>();
        } else {
            fl_cp_wait<0>();
        }
        __syncthreads();
        /* P^T (keys x queries) read transposed from P (queries x keys) */
        fl_warp_pv_smem_t<T, D, WM, BQ, BK>(o, Ps + (i & 1) * BQ * BK, wrow, Vs + (i & 1) * BQ * D);
        __syncthreads();
    }
    static_assert(2 * BQ >= D, "the output stage reuses the P buffers");
    float rs[WM][2];
#pragma unroll
    for (int m = 0; m < WM; m++) rs[m][0] = rs[m][1] = scale;
    fl_warp_store_rows<T, D, WM>(o, rs, Ps + wrow * D, O + (k0 + wrow) * D, (int)min((long)WM * 16, max(0L, Nk - k0 - wrow)),
                                 c, TO);
    fl_cnt_flush(c, g, (int)sizeof(T));
}

/* out (the storage type) = in (fp32), n2 pairs: a rounding pass outside the schedules (not
 * counted), for callers that want dQ in the inputs' type (PyTorch). */
template <class T>
__global__ void fl_tc_round(const float *__restrict__ in, T *__restrict__ out, long n2)
{
    for (long x = (long)blockIdx.x * blockDim.x + threadIdx.x; x < n2; x += (long)gridDim.x * blockDim.x) {
        const float2 v = ((const float2 *)in)[x];
        ((unsigned *)out)[x] = fl_pack2<T>(v.x, v.y);
    }
}

#endif
