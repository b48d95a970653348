/* v01_standard_fwd.cu: version 1, standard attention (FlashAttention paper, Algorithm 0): the
 * plainest kernels, S and P materialized in HBM.  The first rung: nothing before it.
 *
 * The schedule is src/schedules/standard.c with Bd = d (the model is run with M = M_eff, the
 * footprint (F0) Br*d + Bc*d + Br*Bc of these tiles, so rule B0 gives Bd = d):
 *   fl_std_scores   one CTA per row block i: load Q_i once, for each key block j load K_j,
 *                   write S_ij = Q_i K_j^T / sqrt(d)           Nd + Nd*Tr reads, N^2 writes (C0.1)
 *   fl_std_softmax  one CTA per row.  N <= M_eff (a row fits on chip): read the row once, write
 *                   P once.  Otherwise three passes over the row in chunks (max, sum, normalise
 *                   and write): 3 reads, 1 write per element  (docs/model.md eqs. C0.2-C0.3)
 *   fl_std_pv       one CTA per row block i: O_i = 0; for each key block j load P_ij and V_j;
 *                   write O_i                                   N^2 + Nd*Tr reads, Nd writes (C0.4)
 * Costs.  Bytes: at N = 4096, d = 64, fp16 the 2N^2 writes and 2-4 N^2 reads of S and P are
 * 128-192 MB against 1.5 MB for Q, K, V, O: the quadratic term FlashAttention removes.  Time:
 * scalar fp32 FMAs from shared memory, no tensor cores (H200, fp16, d = 128, 64 x 64 tiles, one
 * counted launch: 5.3 ms at N = 4096, 22.8 ms at N = 16384; figures/data/gpu_validate_all.csv,
 * column ms).
 *
 * On chip (tile traits below; fp32): scores: Q_i, K_j (rows padded by one word against bank
 * conflicts), the S tile in registers; pv: P_ij, V_j, O_i; both (F0) elements.  The softmax's row
 * buffer is N floats when N <= M_eff, else none (it streams).
 *
 * Non-causal only: the model's standard schedule has no mask.
 */
#include "attn.h"

#define FL_V_NEEDS FL_NEED_BASE

/* Tile traits (traits.cuh): the kernels' buffers, in the order they are carved. */
/* Tile traits (traits.cuh) from the layouts of include/flashlab/kernel_tiles.h, which the model
 * of the GPU order reads too: scores Q_i, K_j (the A and B of C = A B^T), the S tile in
 * registers; pv P_ij, V_j, O_i. */
template <int D, int BR, int BC> __host__ __device__ constexpr auto v01_scores_tiles()
{
    return fl_make_tiles({FL_TILES_PRODUCT_NT(D, BR, BC)});
}
template <int D, int BR, int BC> __host__ __device__ constexpr auto v01_pv_tiles()
{
    return fl_make_tiles({FL_TILES_PRODUCT_NN(D, BR, BC)});
}
/* the softmax: a row of S on chip (N <= M_eff) or none, and the block reduction's scratch */
static fl_tiles<2> v01_softmax_tiles(long row) { return fl_make_tiles({FL_TILES_ROW(row)}); }

template <class T, int D, int BR, int BC>
__global__ void __launch_bounds__(FL_THREADS)
fl_std_scores(fl_gptr<const T, FL_T_Q> Q, fl_gptr<const T, FL_T_K> K, fl_gptr<T, FL_T_S> S, int N, float scale,
              fl_csink g)
{
    constexpr auto tl = v01_scores_tiles<D, BR, BC>();
    extern __shared__ float sm[];
    float *Qs = FL_TILE(float, sm, tl, 0), *Ks = FL_TILE(float, sm, tl, 1); /* BR x (D+1), BC x (D+1) */
    FlCount c;
    const int tid = threadIdx.x;
    const long r0 = (long)blockIdx.x * BR;
    const int br = (int)min((long)BR, N - r0);
    for (int x = tid; x < br * D; x += FL_THREADS) { /* Q_i once per row block (Td = 1) */
        const int r = x / D, k = x % D;
        Qs[r * (D + 1) + k] = Q.ld(c, (r0 + r) * D + k);
    }
    for (long c0 = 0; c0 < N; c0 += BC) {
        const int bc = (int)min((long)BC, N - c0);
        __syncthreads();
        for (int x = tid; x < bc * D; x += FL_THREADS) {
            const int r = x / D, k = x % D;
            Ks[r * (D + 1) + k] = K.ld(c, (c0 + r) * D + k);
        }
        __syncthreads();
        for (int x = tid; x < br * bc; x += FL_THREADS) {
            const int r = x / bc, j = x % bc;
            float acc = 0.f;
#pragma unroll 16
            for (int k = 0; k < D; k++) acc += Qs[r * (D + 1) + k] * Ks[j * (D + 1) + k];
            S.st(c, (r0 + r) * (long)N + c0 + j, acc * scale);
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
fl_std_softmax_row(fl_gptr<const T, FL_T_S> S, fl_gptr<T, FL_T_P> P, int N, fl_csink g)
{
    extern __shared__ float row[];
    __shared__ float red[FL_THREADS / 32];
    FlCount c;
    const long base = (long)blockIdx.x * N;
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < N; j += FL_THREADS) {
        row[j] = S.ld(c, base + j);
        mx = fmaxf(mx, row[j]);
    }
    mx = block_max(mx, red);
    float sum = 0.f;
    for (int j = threadIdx.x; j < N; j += FL_THREADS) sum += (row[j] = expf(row[j] - mx));
    sum = block_sum(sum, red);
    for (int j = threadIdx.x; j < N; j += FL_THREADS) P.st(c, base + j, row[j] / sum);
    fl_cnt_flush(c, g, (int)sizeof(T));
}

/* A row does not fit: safe softmax in three passes, 3 reads and 1 write per element. */
template <class T>
__global__ void __launch_bounds__(FL_THREADS)
fl_std_softmax_3pass(fl_gptr<const T, FL_T_S> S, fl_gptr<T, FL_T_P> P, int N, fl_csink g)
{
    __shared__ float red[FL_THREADS / 32];
    FlCount c;
    const long base = (long)blockIdx.x * N;
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < N; j += FL_THREADS) mx = fmaxf(mx, S.ld(c, base + j));
    mx = block_max(mx, red);
    float sum = 0.f;
    for (int j = threadIdx.x; j < N; j += FL_THREADS) sum += expf(S.ld(c, base + j) - mx);
    sum = block_sum(sum, red);
    for (int j = threadIdx.x; j < N; j += FL_THREADS)
        P.st(c, base + j, expf(S.ld(c, base + j) - mx) / sum);
    fl_cnt_flush(c, g, (int)sizeof(T));
}

template <class T, int D, int BR, int BC>
__global__ void __launch_bounds__(FL_THREADS)
fl_std_pv(fl_gptr<const T, FL_T_P> P, fl_gptr<const T, FL_T_V> V, fl_gptr<T, FL_T_O> O, int N, fl_csink g)
{
    constexpr auto tl = v01_pv_tiles<D, BR, BC>();
    extern __shared__ float sm[];
    float *Ps = FL_TILE(float, sm, tl, 0); /* BR x BC */
    float *Vs = FL_TILE(float, sm, tl, 1); /* BC x D */
    float *Os = FL_TILE(float, sm, tl, 2); /* BR x D */
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
            Ps[r * BC + j] = P.ld(c, (r0 + r) * (long)N + c0 + j);
        }
        for (int x = tid; x < bc * D; x += FL_THREADS) {
            const int r = x / D, k = x % D;
            Vs[r * D + k] = V.ld(c, (c0 + r) * D + k);
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
        O.st(c, (r0 + r) * D + k, Os[r * D + k]);
    }
    fl_cnt_flush(c, g, (int)sizeof(T));
}

template <class T, int D, int BR, int BC> static void launch_standard(const fl_gpu_args *a)
{
    constexpr auto ts = v01_scores_tiles<D, BR, BC>();
    constexpr auto tp = v01_pv_tiles<D, BR, BC>();
    static_assert(ts.footprint() == fl_fp_eval(fl_fp_coef FL_FP_STANDARD, BR, BC, D) && tp.footprint() == ts.footprint(),
                  "the tiles are the model's (F0) with Bd = d");
    static_assert(ts.dyn_bytes() <= FL_SMEM_MAX && tp.dyn_bytes() <= FL_SMEM_MAX, "tiles do not fit in shared memory");
    const int N = a->N, Tr = (int)fl_grid_blocks(N, BR);
    fl_launch(fl_std_scores<T, D, BR, BC>, ts.info("fl_std_scores"), dim3(Tr), dim3(FL_THREADS), a->stream, a->log,
              (const T *)a->Q, (const T *)a->K, (T *)a->S, N, 1.0f / sqrtf((float)D), a->cnt);
    if (fl_row_fits(N, ts.footprint())) /* eq. (C0.3): the row fits in M */
        fl_launch(fl_std_softmax_row<T>, v01_softmax_tiles(N).info("fl_std_softmax_row"), dim3(N), dim3(FL_THREADS),
                  a->stream, a->log, (const T *)a->S, (T *)a->P, N, a->cnt);
    else
        fl_launch(fl_std_softmax_3pass<T>, v01_softmax_tiles(0).info("fl_std_softmax_3pass"), dim3(N), dim3(FL_THREADS),
                  a->stream, a->log, (const T *)a->S, (T *)a->P, N, a->cnt);
    fl_launch(fl_std_pv<T, D, BR, BC>, tp.info("fl_std_pv"), dim3(Tr), dim3(FL_THREADS), a->stream, a->log,
              (const T *)a->P, (const T *)a->V, (T *)a->O, N, a->cnt);
}

#define K0(T, DT, D, BR, BC)                                                                                       \
    {&FL_STANDARD_FWD, 1, DT, DT, D, BR, BC, v01_scores_tiles<D, BR, BC>().footprint(), 0, launch_standard<T, D, BR, BC>, \
     (long)(v01_pv_tiles<D, BR, BC>().dyn_bytes() > v01_scores_tiles<D, BR, BC>().dyn_bytes()                      \
                ? v01_pv_tiles<D, BR, BC>().dyn_bytes()                                                            \
                : v01_scores_tiles<D, BR, BC>().dyn_bytes())}
#define K0_SWEEP(T, DT, D) K0(T, DT, D, 16, 16), K0(T, DT, D, 32, 32), K0(T, DT, D, 64, 64), K0(T, DT, D, 64, 128)
#define K0_PAIR(T, DT, D) K0(T, DT, D, 32, 32), K0(T, DT, D, 64, 64)

static constexpr fl_kernel_info standard_table[] = {
    K0_SWEEP(__half, FL_F16, 64), K0_SWEEP(__half, FL_F16, 128),
    K0_PAIR(float, FL_F32, 64), K0_PAIR(float, FL_F32, 128),
    K0_PAIR(__nv_bfloat16, FL_BF16, 64), K0_PAIR(__nv_bfloat16, FL_BF16, 128),
};

FL_LADDER_FILE(01, standard_table, FL_V_NEEDS)
