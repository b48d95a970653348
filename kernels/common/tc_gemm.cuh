/* tc_gemm.cuh: the three tensor-core products of the materializing kernels (versions 8 and 11),
 * each the loop of src/schedules/standard.c (fl_std_product_nt / fl_std_product_nn) with the whole
 * head dimension in one chunk (Bd = d), one CTA per output block, the next operand tiles
 * prefetched by cp.async into a second stage (not in the model's footprint: tile traits below).
 * Heads: grid.y, contiguous slices.
 *
 *   fl_tc_nt  C = scale A B^T        (N x Nk; A: N x d, B: Nk x d)   per row block i: A_i once,
 *             each B_j, C_ij written (causal: entries right of the diagonal -inf; traffic is
 *             mask-oblivious)                                    S = QK^T, dP = dO V^T
 *   fl_tc_nn  O = scale P V          (N x d; P: N x Nk, V: Nk x d)   per row block i: P_ij, V_j
 *             for each j, O_i written once (OutT float: the fp32 dQ) O = PV, dQ = dS K
 *   fl_tc_tn  O = scale P^T V        (Nk x d; P: N x Nk, V: N x d)   per key block j: P_ij, V_i
 *             for each i, O_j written once                     dV = P^T dO, dK = dS^T Q
 * TA, TB, TC (TP, TV, TO): the tensors the counters charge (docs/model.md names).
 *
 * fl_tc_nt writes C from the mma fragments as whole 32-byte sectors: the four lanes of a quad
 * hold a row's 16 columns of two adjacent n tiles as 2 x 2 values each; one shuffle within each
 * lane pair gives every lane 4 consecutive values, and the quad's four 8-byte stores cover the
 * row's 32 bytes in one instruction (rows with Nk a multiple of 16; other widths store pairs or
 * single elements).  Without it the quad's 16 bytes of one n tile went out as a separate store
 * per tile, two half-sector writes per sector in L2 (Nsight Compute measured 25.4 MB of L2 write
 * sectors for 17.0 MB of S, P and O at N = 2048, d = 64, 64 x 64 in version 8).
 */
#ifndef FL_KERNELS_TC_GEMM_CUH
#define FL_KERNELS_TC_GEMM_CUH

#include <type_traits>

#include "mma.cuh"
#include "traits.cuh"

/* Tile traits (traits.cuh), 16-bit storage types.  nt: A_i, 2 stages of B_j, the C tile in
 * registers (mma fragments). */
template <int D, int BR, int BC> __host__ __device__ constexpr fl_tiles<3> fl_tc_nt_tiles()
{
    return {{{"A_i", BR, D, 0, 2, 1, 1, FL_SMEM}, {"B_j", BC, D, 0, 2, 2, 1, FL_SMEM}, {"C_ij", BR, BC, 0, 4, 1, 1, FL_REGS}}};
}
/* nn: 2 stages of P_ij (BR x BC) and of V_j (BC x D); O_i accumulates in registers */
template <int D, int BR, int BC> __host__ __device__ constexpr fl_tiles<3> fl_tc_nn_tiles()
{
    return {{{"P_ij", BR, BC, 0, 2, 2, 1, FL_SMEM}, {"V_j", BC, D, 0, 2, 2, 1, FL_SMEM}, {"O_i", BR, D, 0, 4, 1, 1, FL_REGS}}};
}
/* tn: 2 stages of P_ij (BQ x BK) and of V_i (BQ x D); O_j (BK x D) in registers */
template <int D, int BQ, int BK> __host__ __device__ constexpr fl_tiles<3> fl_tc_tn_tiles()
{
    return {{{"P_ij", BQ, BK, 0, 2, 2, 1, FL_SMEM}, {"V_i", BQ, D, 0, 2, 2, 1, FL_SMEM}, {"O_j", BK, D, 0, 4, 1, 1, FL_REGS}}};
}

/* C = scale A B^T, masked (see above). */
template <class T, int D, int WM, int BC, int TA, int TB, int TC>
__global__ void __launch_bounds__(FL_THREADS)
fl_tc_nt(fl_gptr<const T, TA> Q, fl_gptr<const T, TB> K, fl_gptr<T, TC> S, int N, int Nk, int causal, long off,
         float scale, fl_csink g)
{
#if FL_CODE_HAS(FL_NEED_SM80)
    constexpr int BR = (FL_THREADS / 32) * WM * 16;
    constexpr auto tl = fl_tc_nt_tiles<D, BR, BC>();
    extern __shared__ __align__(128) unsigned char fl_smem[];
    T *Qs = FL_TILE(T, fl_smem, tl, 0), *Ks = FL_TILE(T, fl_smem, tl, 1); /* Q_i, 2 stages of K_j */
    FlCount c;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g4 = lane >> 2, t4 = lane & 3;
    const long bh = blockIdx.y;
    Q = Q + bh * N * D; K = K + bh * Nk * D; S = S + bh * (long)N * Nk;
    const long r0 = (long)blockIdx.x * BR;
    const int br = (int)min((long)BR, N - r0), nkb = (Nk + BC - 1) / BC, wrow = warp * WM * 16;
    fl_load_tile<T, BR, D, FL_THREADS>(Qs, Q + r0 * D, D, br, D, c);
    fl_load_tile<T, BC, D, FL_THREADS>(Ks, K, D, min(BC, Nk), D, c);
    fl_cp_commit();
    for (int j = 0; j < nkb; j++) {
        const long c0 = (long)j * BC;
        if (j + 1 < nkb) {
            fl_load_tile<T, BC, D, FL_THREADS>(Ks + ((j + 1) & 1) * BC * D, K + (c0 + BC) * D, D,
                                               (int)min((long)BC, Nk - c0 - BC), D, c);
            fl_cp_commit();
            fl_cp_wait<1>();
        } else {
            fl_cp_wait<0>();
        }
        __syncthreads();
        float s[WM][BC / 8][4];
        fl_warp_qk<T, D, WM, BC>(s, Qs + wrow * D, Ks + (j & 1) * BC * D);
        /* write S_ij straight from the fragments (see above); rows past N and keys past Nk are
         * not stored */
#pragma unroll
        for (int m = 0; m < WM; m++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const long row = r0 + wrow + m * 16 + g4 + 8 * h;
#pragma unroll
                for (int np = 0; np < BC / 16; np++) {
                    float x[2][2];
#pragma unroll
                    for (int u = 0; u < 2; u++)
#pragma unroll
                        for (int e = 0; e < 2; e++) {
                            x[u][e] = s[m][2 * np + u][2 * h + e] * scale;
                            if (causal && !fl_causal_keep(row, c0 + (2 * np + u) * 8 + 2 * t4 + e, off)) x[u][e] = -INFINITY;
                        }
                    if ((Nk & 15) == 0 && c0 + np * 16 < Nk) { /* warp-uniform: a whole sector a row */
                        const unsigned a = fl_pack2<T>(x[0][0], x[0][1]), b = fl_pack2<T>(x[1][0], x[1][1]);
                        const unsigned got = __shfl_xor_sync(0xffffffffu, (t4 & 1) ? a : b, 1);
                        const uint2 v = (t4 & 1) ? make_uint2(got, b) : make_uint2(a, got);
                        if (row < N) S.st_vec(c, row * Nk + c0 + np * 16 + ((t4 >> 1) + 2 * (t4 & 1)) * 4, v);
                    } else if (row < N) {
#pragma unroll
                        for (int u = 0; u < 2; u++) {
                            const long col = c0 + (2 * np + u) * 8 + 2 * t4;
                            if (col + 1 < Nk && (Nk & 1) == 0) {
                                S.st_vec(c, row * Nk + col, fl_pack2<T>(x[u][0], x[u][1]));
                            } else {
                                if (col < Nk) S.st(c, row * Nk + col, x[u][0]);
                                if (col + 1 < Nk) S.st(c, row * Nk + col + 1, x[u][1]);
                            }
                        }
                    }
                }
            }
        __syncthreads();
    }
    fl_cnt_flush(c, g, (int)sizeof(T));
#else
    fl_arch_missing();
#endif
}

/* O = scale P V (see above). */
template <class T, class OutT, int D, int WM, int BC, int TP, int TV, int TO>
__global__ void __launch_bounds__(FL_THREADS)
fl_tc_nn(fl_gptr<const T, TP> P, fl_gptr<const T, TV> V, fl_gptr<OutT, TO> O, int N, int Nk, float scale, fl_csink g)
{
#if FL_CODE_HAS(FL_NEED_SM80)
    constexpr int BR = (FL_THREADS / 32) * WM * 16;
    constexpr auto tl = fl_tc_nn_tiles<D, BR, BC>();
    extern __shared__ __align__(128) unsigned char fl_smem[];
    T *Ps = FL_TILE(T, fl_smem, tl, 0), *Vs = FL_TILE(T, fl_smem, tl, 1); /* 2 stages of P_ij and of V_j */
    FlCount c;
    const int warp = threadIdx.x >> 5, wrow = warp * WM * 16;
    const long bh = blockIdx.y;
    P = P + bh * (long)N * Nk; V = V + bh * Nk * D; O = O + bh * N * D;
    const long r0 = (long)blockIdx.x * BR;
    const int br = (int)min((long)BR, N - r0), nkb = (Nk + BC - 1) / BC;
    float o[WM][D / 8][4];
    fl_zero(o);
    fl_load_tile<T, BR, BC, FL_THREADS>(Ps, P + r0 * Nk, Nk, br, min(BC, Nk), c);
    fl_load_tile<T, BC, D, FL_THREADS>(Vs, V, D, min(BC, Nk), D, c);
    fl_cp_commit();
    for (int j = 0; j < nkb; j++) {
        const long c0 = (long)j * BC;
        if (j + 1 < nkb) {
            const int st = (j + 1) & 1, bc1 = (int)min((long)BC, Nk - c0 - BC);
            fl_load_tile<T, BR, BC, FL_THREADS>(Ps + st * BR * BC, P + r0 * Nk + c0 + BC, Nk, br, bc1, c);
            fl_load_tile<T, BC, D, FL_THREADS>(Vs + st * BC * D, V + (c0 + BC) * D, D, bc1, D, c);
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
                    O.st_vec(c, (r0 + wrow + r) * D + n * 8 + 2 * t4, make_float2(o[m][n][2 * h] * scale, o[m][n][2 * h + 1] * scale));
            }
    } else {
        float rs[WM][2];
#pragma unroll
        for (int m = 0; m < WM; m++) rs[m][0] = rs[m][1] = scale;
        fl_warp_store_rows<T, D, WM>(o, rs, Ps + wrow * D, O + (r0 + wrow) * D, rows, c);
    }
    fl_cnt_flush(c, g, (int)sizeof(T));
#else
    fl_arch_missing();
#endif
}
/* O = scale P^T V (see above): A fragments of P^T by ldmatrix.trans from P's tiles. */
template <class T, int D, int WM, int BQ, int TP, int TV, int TO>
__global__ void __launch_bounds__(FL_THREADS)
fl_tc_tn(fl_gptr<const T, TP> P, fl_gptr<const T, TV> V, fl_gptr<T, TO> O, int N, int Nk, float scale, fl_csink g)
{
#if FL_CODE_HAS(FL_NEED_SM80)
    constexpr int BK = (FL_THREADS / 32) * WM * 16; /* output rows (keys) per CTA */
    constexpr auto tl = fl_tc_tn_tiles<D, BQ, BK>();
    extern __shared__ __align__(128) unsigned char fl_smem[];
    T *Ps = FL_TILE(T, fl_smem, tl, 0), *Vs = FL_TILE(T, fl_smem, tl, 1); /* 2 stages of P_ij (BQ x BK), V_i (BQ x D) */
    FlCount c;
    const int warp = threadIdx.x >> 5, wrow = warp * WM * 16;
    const long bh = blockIdx.y;
    P = P + bh * (long)N * Nk; V = V + bh * (long)N * D; O = O + bh * (long)Nk * D;
    const long k0 = (long)blockIdx.x * BK;
    const int bk = (int)min((long)BK, Nk - k0), nqb = (N + BQ - 1) / BQ;
    float o[WM][D / 8][4];
    fl_zero(o);
    fl_load_tile<T, BQ, BK, FL_THREADS>(Ps, P + k0, Nk, min(BQ, N), bk, c);
    fl_load_tile<T, BQ, D, FL_THREADS>(Vs, V, D, min(BQ, N), D, c);
    fl_cp_commit();
    for (int i = 0; i < nqb; i++) {
        const long q0 = (long)i * BQ;
        if (i + 1 < nqb) {
            const int st = (i + 1) & 1, bq1 = (int)min((long)BQ, N - q0 - BQ);
            fl_load_tile<T, BQ, BK, FL_THREADS>(Ps + st * BQ * BK, P + (q0 + BQ) * Nk + k0, Nk, bq1, bk, c);
            fl_load_tile<T, BQ, D, FL_THREADS>(Vs + st * BQ * D, V + (q0 + BQ) * D, D, bq1, D, c);
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
                                 c);
    fl_cnt_flush(c, g, (int)sizeof(T));
#else
    fl_arch_missing();
#endif
}

/* out (the storage type) = in (fp32), n2 pairs: a rounding pass outside the schedules, for
 * callers that want dQ in the inputs' type (PyTorch); counted as reads of dQ and writes of the
 * non-data tensor dQout, and never run by the harness.  NEED: the calling version's FL_V_NEEDS
 * (9 and 11: sm_80; 13: sm_90a), so that it is real exactly where its version is. */
template <class T, int NEED = FL_NEED_SM80>
__global__ void fl_tc_round(fl_gptr<const float, FL_T_dQ> in, fl_gptr<T, FL_T_DQOUT> out, long n2, fl_csink g)
{
    if constexpr (FL_CODE_HAS(NEED)) {
        FlCount c;
        for (long x = (long)blockIdx.x * blockDim.x + threadIdx.x; x < n2; x += (long)gridDim.x * blockDim.x) {
            const float2 v = in.ld_vec<float2>(c, 2 * x);
            out.st_vec(c, 2 * x, fl_pack2<T>(v.x, v.y));
        }
        fl_cnt_flush(c, g, (int)sizeof(T));
    } else {
        fl_arch_missing();
    }
}
/* fl_tc_round needs no tiles */
static inline fl_tiles<1> fl_tc_round_tiles() { return {{{"none", 0, 0, 0, 4, 1, 0, FL_SMEM}}}; }

#endif
