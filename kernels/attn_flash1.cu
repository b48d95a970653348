/* attn_flash1.cu: version 2, FlashAttention (Dao et al. 2022) Algorithm 1, literally.
 *
 * Compile (part of the harness; see kernels/CMakeLists.txt), standalone:
 *   nvcc -O3 -std=c++17 -arch=sm_90 -DFL_COUNTERS -c kernels/attn_flash1.cu
 *
 * The schedule is sim/sched_flash1.c line for line:
 *   line 2   O = 0, l = 0, m = -inf written to HBM          fl_flash1_init: Nd + 2N writes
 *   line 5   for each key block j (outer):
 *   line 6     load K_j, V_j                                 2*Bc*d reads, once per j
 *   line 7     for each query block i (inner):
 *   line 8       load Q_i, O_i, l_i, m_i                     2*Br*d + 2*Br reads
 *   line 9-11    S = Q_i K_j^T / sqrt(d); mt, P, lt; mnew, lnew
 *   line 12-13   write O_i, l_i, m_i                         Br*d + 2*Br writes
 * Napkin math: reads = 2Nd + Tc(2Nd + 2N), writes = (Nd + 2N) + Tc(Nd + 2N) (docs/model.md
 * eq. C1): O crosses HBM twice per key block.  At N = 4096, d = 64, Bc = 64, fp16 that is
 * 64 x 1 MB of O traffic against 1 MB of K, V: this is the schedule FlashAttention-2 fixed.
 *
 * Parallel and still literal: the wavefront.  K_j and V_j must be read once each, so one CTA
 * owns key block j for its whole inner loop; O_i is then a value handed from CTA j-1 to CTA j
 * through HBM.  CTA j processes query blocks i = 0, 1, ... in order and, before loading O_i,
 * waits until flags[i] == j (CTA j-1 has written O_i, l_i, m_i and released the flag); after
 * writing them it sets flags[i] = j + 1.  So every O_i receives its updates in the order
 * j = 0, 1, ..., Tc-1, exactly Algorithm 1's order, while up to Tc CTAs work on different i at
 * once (a pipeline).  The grid is launched cooperatively with at most as many CTAs as can be
 * resident (each takes j = blockIdx.x, blockIdx.x + gridDim.x, ...), so the wait cannot
 * deadlock; a wait that exceeds ~2 s sets *error and every wait gives up rather than hang the GPU.
 * O, l, m are loaded with __ldcg (L2), never from a possibly stale L1 line.  The flags are
 * synchronisation, not data: the counters do not count them (the model has no such tensor).
 *
 * On chip (shared memory, fp32): K_j, V_j, Q_i, O_i, S_ij (P_ij overwrites it) and six rows
 * l_i, m_i, mt, lt, mnew, lnew: the model's footprint (F1) 2*Bc*d + 2*Br*d + Br*Bc + 6*Br.
 *
 * The running O is fp32 in HBM whatever the storage type of Q, K, V (as FlashAttention-1's own
 * kernel kept its o_tmp accumulator in fp32): stored in fp16 it would be rounded Tc times, and
 * the first hardware run measured errors 3-10x the naive fp16 attention's, failing the accuracy
 * rule.  Element counts are unchanged; O's bytes are 4 per element (docs/validation.md).
 *
 * Causal (lower triangle, Nq = Nk): a tile (i, j) whose keys all come after block i's last query
 * is skipped: no loads, no stores; the flag is still handed on.
 */
#include "attn.h"


/* line 2: O = 0, l = 0, m = -inf in HBM; the flags start at 0 (not counted: not data). */
__global__ void __launch_bounds__(FL_THREADS)
fl_flash1_init(float *O, float *l, float *m, unsigned *flags, int N, int D, int BR, fl_gpu_counters *g)
{
    FlCount c;
    const long stride = (long)gridDim.x * FL_THREADS;
    for (long x = (long)blockIdx.x * FL_THREADS + threadIdx.x; x < (long)N * D; x += stride)
        fl_st(c, FL_T_O, O, x, 0.f);
    for (long x = (long)blockIdx.x * FL_THREADS + threadIdx.x; x < N; x += stride) {
        fl_st(c, FL_T_l, l, x, 0.f);
        fl_st(c, FL_T_m, m, x, -INFINITY);
    }
    for (long x = (long)blockIdx.x * FL_THREADS + threadIdx.x; x < FL_CDIV(N, BR); x += stride)
        flags[x] = 0u;
    fl_cnt_flush(c, g, 4, 4);
}

template <class T, int D, int BR, int BC>
__global__ void __launch_bounds__(FL_THREADS)
fl_flash1_fwd(const T *__restrict__ Q, const T *__restrict__ K, const T *__restrict__ V, float *O,
              float *l, float *m, unsigned *flags, int *error, int N, int causal, float scale,
              fl_gpu_counters *g)
{
    extern __shared__ float sm[];
    float *Ks = sm;                  /* BC x (D+1) */
    float *Vs = Ks + BC * (D + 1);   /* BC x D */
    float *Qs = Vs + BC * D;         /* BR x (D+1) */
    float *Os = Qs + BR * (D + 1);   /* BR x D */
    float *Ss = Os + BR * D;         /* BR x (BC+1), P overwrites S */
    float *li = Ss + BR * (BC + 1), *mi = li + BR, *mt = mi + BR, *lt = mt + BR;
    float *mnew = lt + BR, *lnew = mnew + BR;
    FlCount c;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int Tr = FL_CDIV(N, BR), Tc = FL_CDIV(N, BC);

    for (int jb = blockIdx.x; jb < Tc; jb += gridDim.x) { /* line 5 */
        const long c0 = (long)jb * BC;
        const int bc = (int)min((long)BC, N - c0);
        __syncthreads();
        for (int x = tid; x < bc * D; x += FL_THREADS) { /* line 6 */
            const int r = x / D, k = x % D;
            Ks[r * (D + 1) + k] = fl_ld(c, FL_T_K, K, (c0 + r) * D + k);
            Vs[r * D + k] = fl_ld(c, FL_T_V, V, (c0 + r) * D + k);
        }
        for (int ib = 0; ib < Tr; ib++) { /* line 7 */
            const long r0 = (long)ib * BR;
            const int br = (int)min((long)BR, N - r0);
            const bool skip = causal && c0 > r0 + br - 1;
            if (tid == 0) { /* wait for CTA j-1 to hand O_i over */
                long spins = 0;
                while (FL_CNT_RD(c, FL_T_FLAGS), fl_ld_acquire(&flags[ib]) != (unsigned)jb) {
                    if (*(volatile int *)error) break; /* another CTA gave up: do not wait */
                    __nanosleep(128);
                    if (++spins > (1L << 24)) { atomicExch(error, 1); break; }
                }
            }
            __syncthreads();
            if (!skip) {
                for (int x = tid; x < br * D; x += FL_THREADS) { /* line 8 */
                    const int r = x / D, k = x % D;
                    Qs[r * (D + 1) + k] = fl_ld(c, FL_T_Q, Q, (r0 + r) * D + k);
                    Os[r * D + k] = fl_ld(c, FL_T_O, O, (r0 + r) * D + k);
                }
                for (int r = tid; r < br; r += FL_THREADS) {
                    li[r] = fl_ld(c, FL_T_l, l, r0 + r);
                    mi[r] = fl_ld(c, FL_T_m, m, r0 + r);
                }
                __syncthreads();
                for (int x = tid; x < BR * BC; x += FL_THREADS) { /* line 9 */
                    const int r = x / BC, j = x % BC;
                    float s = -INFINITY;
                    if (r < br && j < bc && (!causal || fl_causal_keep(r0 + r, c0 + j, 0))) {
                        float acc = 0.f;
#pragma unroll 16
                        for (int k = 0; k < D; k++) acc += Qs[r * (D + 1) + k] * Ks[j * (D + 1) + k];
                        s = acc * scale;
                    }
                    Ss[r * (BC + 1) + j] = s;
                }
                __syncthreads();
                for (int r = warp; r < br; r += FL_THREADS / 32) { /* lines 10-11, warp per row */
                    float mx = -INFINITY;
                    for (int j = lane; j < BC; j += 32) mx = fmaxf(mx, Ss[r * (BC + 1) + j]);
                    mx = fl_warp_max(mx);
                    float sum = 0.f;
                    for (int j = lane; j < BC; j += 32) {
                        const float s = Ss[r * (BC + 1) + j];
                        const float p = (s == -INFINITY) ? 0.f : expf(s - mx);
                        Ss[r * (BC + 1) + j] = p;
                        sum += p;
                    }
                    sum = fl_warp_sum(sum);
                    if (lane == 0) {
                        const float mo = mi[r], mn = fmaxf(mo, mx);
                        const float eo = (mo == -INFINITY) ? 0.f : expf(mo - mn);
                        const float et = (mx == -INFINITY) ? 0.f : expf(mx - mn);
                        mt[r] = mx;
                        lt[r] = sum;
                        mnew[r] = mn;
                        lnew[r] = eo * li[r] + et * sum;
                    }
                }
                __syncthreads();
                for (int x = tid; x < br * D; x += FL_THREADS) { /* line 12 */
                    const int r = x / D, k = x % D;
                    const float ln = lnew[r];
                    float o = 0.f;
                    if (ln > 0.f) {
                        const float a = (mi[r] == -INFINITY) ? 0.f : li[r] * expf(mi[r] - mnew[r]) / ln;
                        const float e = (mt[r] == -INFINITY) ? 0.f : expf(mt[r] - mnew[r]) / ln;
                        float pv = 0.f;
#pragma unroll 8
                        for (int j = 0; j < bc; j++) pv += Ss[r * (BC + 1) + j] * Vs[j * D + k];
                        o = a * Os[r * D + k] + e * pv;
                    }
                    fl_st(c, FL_T_O, O, (r0 + r) * D + k, o);
                }
                for (int r = tid; r < br; r += FL_THREADS) { /* line 13 */
                    fl_st(c, FL_T_l, l, r0 + r, lnew[r]);
                    fl_st(c, FL_T_m, m, r0 + r, mnew[r]);
                }
                __threadfence();
            }
            __syncthreads();
            if (tid == 0) fl_st_release(&flags[ib], (unsigned)jb + 1u); /* hand O_i to CTA j+1 */
        }
    }
    fl_cnt_flush(c, g, (int)sizeof(T), 4);
}

template <int D, int BR, int BC> constexpr size_t flash1_smem()
{
    return sizeof(float) * (size_t)(BC * (D + 1) + BC * D + BR * (D + 1) + BR * D + BR * (BC + 1) + 6 * BR);
}

template <class T, int D, int BR, int BC> static void launch_flash1(const fl_gpu_args *a)
{
    constexpr size_t smem = flash1_smem<D, BR, BC>();
    static_assert(smem <= 227 * 1024, "flash1 tiles do not fit in shared memory");
    auto kern = fl_flash1_fwd<T, D, BR, BC>;
    const int Tc = FL_CDIV(a->N, BC);
    const int grid = fl_wavefront_grid(kern, smem, Tc, "flash1", BR, BC, D);

    fl_flash1_init<<<FL_CDIV(a->N * D, FL_THREADS) < 1024 ? FL_CDIV(a->N * D, FL_THREADS) : 1024,
                        FL_THREADS, 0, a->stream>>>((float *)a->O, a->l, a->m, a->flags, a->N, D, BR, a->cnt);
    CUDA_CHECK(cudaGetLastError());

    const T *Q = (const T *)a->Q, *K = (const T *)a->K, *V = (const T *)a->V;
    float *O = (float *)a->O;
    float *l = a->l, *m = a->m;
    unsigned *flags = a->flags;
    int *error = a->error;
    int N = a->N, causal = a->causal;
    float scale = 1.0f / sqrtf((float)D);
    fl_gpu_counters *g = a->cnt;
    void *args[] = {&Q, &K, &V, &O, &l, &m, &flags, &error, &N, &causal, &scale, &g};
    CUDA_CHECK(cudaLaunchCooperativeKernel((const void *)kern, dim3(grid), dim3(FL_THREADS), args,
                                           smem, a->stream));
    CUDA_CHECK(cudaGetLastError());
}

/* (F1): the buffers above, padding excluded */
#define F1(D, BR, BC) (2L * (BC) * (D) + 2L * (BR) * (D) + (long)(BR) * (BC) + 6L * (BR))
#define K1(T, DT, D, BR, BC) {"flash1", 2, DT, FL_F32, D, BR, BC, F1(D, BR, BC), 1, launch_flash1<T, D, BR, BC>, 0}
#define K1_SWEEP(T, DT, D) K1(T, DT, D, 16, 16), K1(T, DT, D, 32, 32), K1(T, DT, D, 64, 64), K1(T, DT, D, 64, 128)
#define K1_PAIR(T, DT, D) K1(T, DT, D, 32, 32), K1(T, DT, D, 64, 64)

static const fl_kernel_info flash1_table[] = {
    K1_SWEEP(__half, FL_F16, 64), K1_SWEEP(__half, FL_F16, 128),
    K1_PAIR(float, FL_F32, 64), K1_PAIR(float, FL_F32, 128),
    K1_PAIR(__nv_bfloat16, FL_BF16, 64), K1_PAIR(__nv_bfloat16, FL_BF16, 128),
};

FL_TABLE_GETTER(fl_flash1_kernels, flash1_table)
