/* v06_standard_bwd.cu: version 6, standard attention backward (FlashAttention paper,
 * Algorithm 3) from the P the forward (version 1) saved in HBM: dP and dS materialized too.
 *
 * What changed from version 5: the materializing backward, the baseline the FlashAttention
 * backwards (versions 4, 5) are measured against.  No recomputation: P comes from HBM, dP and dS
 * go through it.  What it costs: the N x N tensors move 5-7 N^2 elements; at N = 4096, d = 64,
 * 64 x 64, fp16 the counters measure 302 MB read and 69 MB written (docs/validation.md) against
 * version 4's 138 MB and 69 MB.
 *
 * The schedule is src/schedules/standard_bwd.c with the forward's tiles (Br, Bc, Bd = d; M = M_eff =
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

#define FL_V_NEEDS FL_NEED_BASE

/* Tile traits (traits.cuh).  nt: A_i, B_j (rows padded by a word), the C tile in registers. */
template <int D, int BR, int BC> __host__ __device__ constexpr auto v06_nt_tiles()
{
    return fl_make_tiles({FL_TILES_PRODUCT_NT(D, BR, BC)});
}
/* nn: the P tile (BO x BS, or BS x BO transposed), V rows, O rows */
template <int D, int BO, int BS> __host__ __device__ constexpr auto v06_nn_tiles()
{
    return fl_make_tiles({FL_TILES_PRODUCT_NN(D, BO, BS)});
}
/* dsoftmax: a row of P and one of dP on chip (2N <= M_eff) or none, and the reduction scratch */
static fl_tiles<2> v06_dsoftmax_tiles(long rows2) { return fl_make_tiles({FL_TILES_ROW(rows2)}); }

/* C = alpha A B^T (C: N x N, A, B: N x D), tiles of BR rows of A and BC rows of B; A_i is loaded
 * once per row block (Td = 1).  Tensor ids are compile-time (the counters live in registers). */
template <class T, int D, int BR, int BC, int TA, int TB, int TC>
__global__ void __launch_bounds__(FL_THREADS)
fl_std_nt(fl_gptr<const T, TA> A, fl_gptr<const T, TB> B, fl_gptr<T, TC> C, int N, float alpha, fl_csink g)
{
    constexpr auto tl = v06_nt_tiles<D, BR, BC>();
    extern __shared__ float sm[];
    float *As = FL_TILE(float, sm, tl, 0), *Bs = FL_TILE(float, sm, tl, 1);
    FlCount c;
    const int tid = threadIdx.x;
    const long r0 = (long)blockIdx.x * BR;
    const int br = (int)min((long)BR, N - r0);
    for (int x = tid; x < br * D; x += FL_THREADS)
        As[(x / D) * (D + 1) + x % D] = A.ld(c, r0 * D + x);
    for (long c0 = 0; c0 < N; c0 += BC) {
        const int bc = (int)min((long)BC, N - c0);
        __syncthreads();
        for (int x = tid; x < bc * D; x += FL_THREADS)
            Bs[(x / D) * (D + 1) + x % D] = B.ld(c, c0 * D + x);
        __syncthreads();
        for (int x = tid; x < br * bc; x += FL_THREADS) {
            const int r = x / bc, j = x % bc;
            float acc = 0.f;
#pragma unroll 16
            for (int k = 0; k < D; k++) acc += As[r * (D + 1) + k] * Bs[j * (D + 1) + k];
            C.st(c, (r0 + r) * (long)N + c0 + j, alpha * acc);
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
fl_std_nn(fl_gptr<const T, TP> P, fl_gptr<const T, TV> V, fl_gptr<TOUT, TO> O, int N, float alpha, fl_csink g)
{
    constexpr auto tl = v06_nn_tiles<D, BO, BS>();
    extern __shared__ float sm[];
    float *Ps = FL_TILE(float, sm, tl, 0); /* BS x BO when transposed (P rows q.., cols r0..), else BO x BS */
    float *Vs = FL_TILE(float, sm, tl, 1); /* BS x D */
    float *Os = FL_TILE(float, sm, tl, 2); /* BO x D */
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
                Ps[i * BO + r] = P.ld(c, (q + i) * (long)N + r0 + r);
            }
        } else {
            for (int x = tid; x < bo * bs; x += FL_THREADS) { /* P[r0 + r, q + i] */
                const int r = x / bs, i = x % bs;
                Ps[r * BS + i] = P.ld(c, (r0 + r) * (long)N + q + i);
            }
        }
        for (int x = tid; x < bs * D; x += FL_THREADS) Vs[x] = V.ld(c, q * D + x);
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
    for (int x = tid; x < bo * D; x += FL_THREADS) O.st(c, r0 * D + x, alpha * Os[x]);
    fl_cnt_flush(c, g, (int)sizeof(T));
}

/* step 3, rows fit: a row of P and one of dP on chip (2N floats of dynamic shared memory) */
template <class T>
__global__ void __launch_bounds__(FL_THREADS)
fl_std_dsoftmax_row(fl_gptr<const T, FL_T_P> P, fl_gptr<const T, FL_T_dP> dP, fl_gptr<T, FL_T_dS> dS, int N, fl_csink g)
{
    extern __shared__ float row[];
    __shared__ float red[FL_THREADS / 32];
    float *p = row, *gp = row + N;
    FlCount c;
    const long base = (long)blockIdx.x * N;
    float acc = 0.f;
    for (int j = threadIdx.x; j < N; j += FL_THREADS) {
        p[j] = P.ld(c, base + j);
        gp[j] = dP.ld(c, base + j);
        acc += p[j] * gp[j];
    }
    acc = fl_warp_sum(acc);
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = acc;
    __syncthreads();
    float Dd = 0.f;
    for (int w = 0; w < FL_THREADS / 32; w++) Dd += red[w];
    for (int j = threadIdx.x; j < N; j += FL_THREADS) dS.st(c, base + j, p[j] * (gp[j] - Dd));
    fl_cnt_flush(c, g, (int)sizeof(T));
}

/* step 3, rows do not fit: pass 1 reads P, dP for D_i; pass 2 reads them again and writes dS */
template <class T>
__global__ void __launch_bounds__(FL_THREADS)
fl_std_dsoftmax_2pass(fl_gptr<const T, FL_T_P> P, fl_gptr<const T, FL_T_dP> dP, fl_gptr<T, FL_T_dS> dS, int N,
                      fl_csink g)
{
    __shared__ float red[FL_THREADS / 32];
    FlCount c;
    const long base = (long)blockIdx.x * N;
    float acc = 0.f;
    for (int j = threadIdx.x; j < N; j += FL_THREADS)
        acc += P.ld(c, base + j) * dP.ld(c, base + j);
    acc = fl_warp_sum(acc);
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = acc;
    __syncthreads();
    float Dd = 0.f;
    for (int w = 0; w < FL_THREADS / 32; w++) Dd += red[w];
    for (int j = threadIdx.x; j < N; j += FL_THREADS) {
        const float pj = P.ld(c, base + j), gj = dP.ld(c, base + j);
        dS.st(c, base + j, pj * (gj - Dd));
    }
    fl_cnt_flush(c, g, (int)sizeof(T));
}

template <class T, int D, int BR, int BC> static void launch_standard_bwd(const fl_gpu_args *a)
{
    constexpr auto tt = v06_nn_tiles<D, BC, BR>(), tn = v06_nn_tiles<D, BR, BC>();
    constexpr auto tnt = v06_nt_tiles<D, BR, BC>();
    static_assert(tt.footprint() == fl_fp_eval(fl_fp_coef FL_FP_STANDARD, BR, BC, D) && tn.footprint() == tt.footprint() &&
                      tnt.footprint() == tt.footprint(),
                  "the tiles are the model's (F0) with Bd = d, both passes");
    static_assert(tt.dyn_bytes() <= FL_SMEM_MAX && tnt.dyn_bytes() <= FL_SMEM_MAX, "tiles do not fit in shared memory");
    const int N = a->N, Tr = (int)fl_grid_blocks(N, BR), Tc = (int)fl_grid_blocks(N, BC);
    const float scale = 1.0f / sqrtf((float)D);
    const T *P = (const T *)a->P, *dO = (const T *)a->dO, *Q = (const T *)a->Q, *K = (const T *)a->K,
            *V = (const T *)a->V;
    T *dPb = (T *)a->dPbuf, *dSb = (T *)a->dSbuf;
    /* 1: dV = P^T dO */
    fl_launch(fl_std_nn<T, T, D, BC, BR, 1, FL_T_P, FL_T_dO, FL_T_dV>, tt.info("fl_std_nn (dV)"), dim3(Tc), dim3(FL_THREADS),
              a->stream, a->log, P, dO, (T *)a->dV, N, 1.0f, a->cnt);
    /* 2: dP = dO V^T */
    fl_launch(fl_std_nt<T, D, BR, BC, FL_T_dO, FL_T_V, FL_T_dP>, tnt.info("fl_std_nt (dP)"), dim3(Tr), dim3(FL_THREADS),
              a->stream, a->log, dO, V, dPb, N, 1.0f, a->cnt);
    /* 3: dS = P o (dP - D), eq. (C0b): the two rows on chip when 2N <= M_eff */
    if (fl_row_fits(2L * N, tnt.footprint()))
        fl_launch(fl_std_dsoftmax_row<T>, v06_dsoftmax_tiles(2L * N).info("fl_std_dsoftmax_row"), dim3(N), dim3(FL_THREADS),
                  a->stream, a->log, P, (const T *)dPb, dSb, N, a->cnt);
    else
        fl_launch(fl_std_dsoftmax_2pass<T>, v06_dsoftmax_tiles(0).info("fl_std_dsoftmax_2pass"), dim3(N), dim3(FL_THREADS),
                  a->stream, a->log, P, (const T *)dPb, dSb, N, a->cnt);
    /* 4: dQ = dS K / sqrt(d), written once, in fp32 (as every dQ here) */
    fl_launch(fl_std_nn<T, float, D, BR, BC, 0, FL_T_dS, FL_T_K, FL_T_dQ>, tn.info("fl_std_nn (dQ)"), dim3(Tr),
              dim3(FL_THREADS), a->stream, a->log, (const T *)dSb, K, a->dQ, N, scale, a->cnt);
    /* 5: dK = dS^T Q / sqrt(d) */
    fl_launch(fl_std_nn<T, T, D, BC, BR, 1, FL_T_dS, FL_T_Q, FL_T_dK>, tt.info("fl_std_nn (dK)"), dim3(Tc), dim3(FL_THREADS),
              a->stream, a->log, (const T *)dSb, Q, (T *)a->dK, N, scale, a->cnt);
}

#define K0B(T, DT, D, BR, BC) \
    {&FL_STANDARD_BWD, 6, DT, DT, D, BR, BC, v06_nt_tiles<D, BR, BC>().footprint(), 0, launch_standard_bwd<T, D, BR, BC>, \
     (long)(v06_nn_tiles<D, BC, BR>().dyn_bytes() > v06_nt_tiles<D, BR, BC>().dyn_bytes()                          \
                ? v06_nn_tiles<D, BC, BR>().dyn_bytes()                                                            \
                : v06_nt_tiles<D, BR, BC>().dyn_bytes())}

static constexpr fl_kernel_info standard_bwd_table[] = {
    K0B(__half, FL_F16, 64, 16, 16), K0B(__half, FL_F16, 64, 32, 32), K0B(__half, FL_F16, 64, 64, 64),
    K0B(__half, FL_F16, 128, 32, 32), K0B(__half, FL_F16, 128, 64, 64),
    K0B(float, FL_F32, 64, 32, 32), K0B(__nv_bfloat16, FL_BF16, 64, 32, 32),
};

FL_LADDER_FILE(06, standard_bwd_table, FL_V_NEEDS)
