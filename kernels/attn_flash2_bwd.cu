/* attn_flash2_bwd.cu: version 4, FlashAttention-2 backward (Dao 2023, Algorithm 2), and version 5,
 * FlashAttention backward (Dao et al. 2022, Algorithm 4), both with recomputation: the score
 * tiles are rebuilt from Q, K and the forward's statistics (L; or l and m).
 *
 * Compile (part of the harness; see kernels/CMakeLists.txt), standalone:
 *   nvcc -O3 -std=c++17 -arch=sm_90 -DFL_COUNTERS -c kernels/attn_flash2_bwd.cu
 *
 * The schedule is sim/sched_flash_bwd.c (style FA2) line for line:
 *   fl_flash2_bwd_pre  line 3-4, per row block: load O_i, dO_i; write D_i = rowsum(dO_i o O_i)
 *                      and dQ_i = 0                    2Nd reads (O, dO), N + Nd writes (D, dQ)
 *   fl_flash2_bwd      line 5, one CTA per key block j: load K_j, V_j; dK_j = dV_j = 0 on chip;
 *                      line 8, for each row block i that sees block j (causal: i >= j's first):
 *                        load Q_i, dO_i, dQ_i, L_i, D_i; P = exp(QK^T/sqrt d - L); dV_j += P^T dO;
 *                        dP = dO V^T; dS = P o (dP - D); dQ_i += dS K_j / sqrt d, write dQ_i;
 *                        dK_j += dS^T Q_i / sqrt d
 *                      line 18, write dK_j, dV_j
 * Napkin math (docs/model.md eq. C2b): reads 2Nd + 2Nd + Tc(3Nd + 2N), writes Nd + N + Tc*Nd + 2Nd:
 * dQ crosses HBM twice per key block, as the paper's algorithm writes it (FlashAttention-2's own
 * kernel adds into dQ with atomics instead; the model counts the algorithm).
 *
 * dQ_i is read-modify-written by every key block's CTA: as in attn_flash1.cu, the CTAs form a
 * wavefront (CTA j updates dQ_i after CTA j-1, flags[i] hands it over; cooperative launch), so
 * each K_j, V_j is loaded exactly once.  dQ is an fp32 accumulator in HBM (FlashAttention-2's
 * dq_accum is fp32 too); dK, dV are written once in the storage type.  D and L are fp32.
 *
 * Version 5 (STYLE FA1) is the same loop as sim/sched_flash_bwd.c style FA1: line 4 writes
 * dQ = dK = dV = 0 to HBM (fl_flash1_bwd_init, Nd + 2Nd writes); line 9 loads Q_i, O_i, dO_i,
 * dQ_i, l_i, m_i (4 Br d + 2 Br); P = exp(S - m_i) / l_i; D_i = rowsum(dO_i o O_i) on chip
 * (line 17, no preprocessing pass); O is flash1's fp32 running O.  Footprint (F1b)
 * 4 Bc d + 4 Br d + 2 Br Bc + 3 Br.
 *
 * On chip: K_j, V_j, dK_j, dV_j, Q_i, dO_i, S_ij/P_ij, dP_ij/dS_ij, L_i, D_i in shared memory;
 * the dQ_i tile passes through registers.  The model's footprint (F2b) 4 Bc d + 3 Br d +
 * 2 Br Bc + 2 Br counts dQ_i as a tile.
 */
#include "attn.h"


/* lines 3-4: D = rowsum(dO o O), dQ = 0; the flags start at 0 (not counted). */
template <class T>
__global__ void __launch_bounds__(FL_THREADS)
fl_flash2_bwd_pre(const T *__restrict__ O, const T *__restrict__ dO, float *__restrict__ Dv,
                  float *__restrict__ dQ, unsigned *flags, int N, int D, int ntiles, fl_gpu_counters *g)
{
    FlCount c;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (long r = (long)blockIdx.x * (FL_THREADS / 32) + warp; r < N; r += (long)gridDim.x * (FL_THREADS / 32)) {
        float acc = 0.f;
        for (int k = lane; k < D; k += 32)
            acc += fl_ld(c, FL_T_O, O, r * D + k) * fl_ld(c, FL_T_dO, dO, r * D + k);
        acc = fl_warp_sum(acc);
        if (lane == 0) fl_st(c, FL_T_D, Dv, r, acc);
        for (int k = lane; k < D; k += 32) fl_st(c, FL_T_dQ, dQ, r * D + k, 0.f);
    }
    for (long x = (long)blockIdx.x * FL_THREADS + threadIdx.x; x < ntiles; x += (long)gridDim.x * FL_THREADS)
        flags[x] = 0u;
    fl_cnt_flush(c, g, (int)sizeof(T));
}

enum { FA1 = 1, FA2 = 2 };

/* FA1 line 4: dQ = 0, dK = 0, dV = 0 in HBM; the flags start at 0 (not counted). */
template <class T>
__global__ void __launch_bounds__(FL_THREADS)
fl_flash1_bwd_init(float *dQ, T *dK, T *dV, unsigned *flags, long Nd, int ntiles, fl_gpu_counters *g)
{
    FlCount c;
    const long stride = (long)gridDim.x * FL_THREADS;
    for (long x = (long)blockIdx.x * FL_THREADS + threadIdx.x; x < Nd; x += stride) {
        fl_st(c, FL_T_dQ, dQ, x, 0.f);
        fl_st(c, FL_T_dK, dK, x, 0.f);
        fl_st(c, FL_T_dV, dV, x, 0.f);
    }
    for (long x = (long)blockIdx.x * FL_THREADS + threadIdx.x; x < ntiles; x += stride) flags[x] = 0u;
    fl_cnt_flush(c, g, (int)sizeof(T));
}

/* STYLE FA2: FlashAttention-2 Algorithm 2 (L and D from HBM).  STYLE FA1: FlashAttention
 * Algorithm 4 (O_i, l_i, m_i from HBM, D_i = rowsum(dO_i o O_i) on chip; O is flash1's fp32). */
template <class T, int D, int BR, int BC, int STYLE>
__global__ void __launch_bounds__(FL_THREADS)
fl_flash_bwd(const T *__restrict__ Q, const T *__restrict__ K, const T *__restrict__ V,
             const T *__restrict__ dO, const float *__restrict__ L, const float *__restrict__ Dv,
             const float *__restrict__ O1, const float *__restrict__ l1, const float *__restrict__ m1,
             float *dQ, T *__restrict__ dK, T *__restrict__ dV, unsigned *flags, int *error, int N,
             int causal, float scale, fl_gpu_counters *g)
{
    extern __shared__ float sm[];
    float *Ks = sm;                  /* BC x (D+1) */
    float *Vs = Ks + BC * (D + 1);   /* BC x (D+1) */
    float *dKs = Vs + BC * (D + 1);  /* BC x D */
    float *dVs = dKs + BC * D;       /* BC x D */
    float *Qs = dVs + BC * D;        /* BR x (D+1) */
    float *dOs = Qs + BR * (D + 1);  /* BR x (D+1) */
    float *Ps = dOs + BR * (D + 1);  /* BR x (BC+1): S, then P */
    float *dSs = Ps + BR * (BC + 1); /* BR x (BC+1): dP, then dS */
    float *Ls = dSs + BR * (BC + 1), *Ds = Ls + BR; /* FA1: Ls holds m_i */
    float *l1s = Ds + BR;                             /* FA1: l_i */
    float *Os = l1s + BR;                             /* FA1: O_i, BR x D */
    FlCount c;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int tid = threadIdx.x;
    const int Tr = FL_CDIV(N, BR), Tc = FL_CDIV(N, BC);

    for (int jb = blockIdx.x; jb < Tc; jb += gridDim.x) { /* line 5 */
        const long c0 = (long)jb * BC;
        const int bc = (int)min((long)BC, N - c0);
        const int i0 = causal ? (int)(c0 / BR) : 0; /* first row block with a query >= c0 */
        __syncthreads();
        for (int x = tid; x < bc * D; x += FL_THREADS) { /* line 6 */
            const int r = x / D, k = x % D;
            Ks[r * (D + 1) + k] = fl_ld(c, FL_T_K, K, (c0 + r) * D + k);
            Vs[r * (D + 1) + k] = fl_ld(c, FL_T_V, V, (c0 + r) * D + k);
        }
        for (int x = tid; x < BC * D; x += FL_THREADS) dKs[x] = dVs[x] = 0.f; /* line 7 */
        for (int ib = 0; ib < Tr; ib++) { /* line 8 */
            const long r0 = (long)ib * BR;
            const int br = (int)min((long)BR, N - r0);
            if (tid == 0) { /* wait for CTA j-1 to hand dQ_i over */
                long spins = 0;
                while (FL_CNT_RD(c, FL_T_FLAGS), fl_ld_acquire(&flags[ib]) != (unsigned)jb) {
                    if (*(volatile int *)error) break;
                    __nanosleep(128);
                    if (++spins > (1L << 24)) { atomicExch(error, 1); break; }
                }
            }
            __syncthreads();
            if (ib >= i0) {
                for (int x = tid; x < br * D; x += FL_THREADS) { /* line 9 */
                    const int r = x / D, k = x % D;
                    Qs[r * (D + 1) + k] = fl_ld(c, FL_T_Q, Q, (r0 + r) * D + k);
                    dOs[r * (D + 1) + k] = fl_ld(c, FL_T_dO, dO, (r0 + r) * D + k);
                }
                if (STYLE == FA2) {
                    for (int r = tid; r < br; r += FL_THREADS) {
                        Ls[r] = fl_ld(c, FL_T_L, L, r0 + r);
                        Ds[r] = fl_ld(c, FL_T_D, Dv, r0 + r);
                    }
                } else {
                    for (int x = tid; x < br * D; x += FL_THREADS)
                        Os[x] = fl_ld(c, FL_T_O, O1, r0 * D + x);
                    for (int r = tid; r < br; r += FL_THREADS) {
                        l1s[r] = fl_ld(c, FL_T_l, l1, r0 + r);
                        Ls[r] = fl_ld(c, FL_T_m, m1, r0 + r);
                    }
                    __syncthreads();
                    for (int r = warp; r < br; r += FL_THREADS / 32) { /* line 17: D_i on chip */
                        float acc = 0.f;
                        for (int k = lane; k < D; k += 32) acc += dOs[r * (D + 1) + k] * Os[r * D + k];
                        acc = fl_warp_sum(acc);
                        if (lane == 0) Ds[r] = acc;
                    }
                }
                __syncthreads();
                for (int x = tid; x < BR * BC; x += FL_THREADS) { /* lines 10-11, 13-14 */
                    const int r = x / BC, j = x % BC;
                    float p = 0.f, ds = 0.f;
                    if (r < br && j < bc && (!causal || fl_causal_keep(r0 + r, c0 + j, 0)) && Ls[r] != -INFINITY) {
                        float s = 0.f, dp = 0.f;
#pragma unroll 16
                        for (int k = 0; k < D; k++) {
                            s += Qs[r * (D + 1) + k] * Ks[j * (D + 1) + k];
                            dp += dOs[r * (D + 1) + k] * Vs[j * (D + 1) + k];
                        }
                        p = STYLE == FA2 ? expf(s * scale - Ls[r]) : expf(s * scale - Ls[r]) / l1s[r];
                        ds = p * (dp - Ds[r]);
                    }
                    Ps[r * (BC + 1) + j] = p;
                    dSs[r * (BC + 1) + j] = ds;
                }
                __syncthreads();
                for (int x = tid; x < bc * D; x += FL_THREADS) { /* lines 12, 16 */
                    const int j = x / D, k = x % D;
                    float dv = 0.f, dk = 0.f;
                    for (int r = 0; r < br; r++) {
                        dv += Ps[r * (BC + 1) + j] * dOs[r * (D + 1) + k];
                        dk += dSs[r * (BC + 1) + j] * Qs[r * (D + 1) + k];
                    }
                    dVs[j * D + k] += dv;
                    dKs[j * D + k] += scale * dk;
                }
                for (int x = tid; x < br * D; x += FL_THREADS) { /* line 15 */
                    const int r = x / D, k = x % D;
                    float acc = 0.f;
                    for (int j = 0; j < bc; j++) acc += dSs[r * (BC + 1) + j] * Ks[j * (D + 1) + k];
                    const float old = fl_ld(c, FL_T_dQ, dQ, (r0 + r) * D + k);
                    fl_st(c, FL_T_dQ, dQ, (r0 + r) * D + k, old + scale * acc);
                }
                __threadfence();
            }
            __syncthreads();
            if (tid == 0) fl_st_release(&flags[ib], (unsigned)jb + 1u); /* hand dQ_i to CTA j+1 */
        }
        __syncthreads();
        for (int x = tid; x < bc * D; x += FL_THREADS) { /* line 18 */
            fl_st(c, FL_T_dK, dK, c0 * D + x, dKs[x]);
            fl_st(c, FL_T_dV, dV, c0 * D + x, dVs[x]);
        }
    }
    fl_cnt_flush(c, g, (int)sizeof(T), STYLE == FA1 ? 4 : 0);
}

template <int D, int BR, int BC, int STYLE> constexpr size_t flash_bwd_smem()
{
    return sizeof(float) * (size_t)(2 * BC * (D + 1) + 2 * BC * D + 2 * BR * (D + 1) + 2 * BR * (BC + 1) + 2 * BR +
                                    (STYLE == FA1 ? BR + BR * D : 0));
}

template <class T, int D, int BR, int BC, int STYLE> static void launch_flash_bwd(const fl_gpu_args *a)
{
    constexpr size_t smem = flash_bwd_smem<D, BR, BC, STYLE>();
    static_assert(smem <= 227 * 1024, "backward tiles do not fit in shared memory");
    auto kern = fl_flash_bwd<T, D, BR, BC, STYLE>;
    const int N = a->N, Tc = FL_CDIV(N, BC), Tr = FL_CDIV(N, BR);
    const int grid = fl_wavefront_grid(kern, smem, Tc, "backward", BR, BC, D);
    if (STYLE == FA2) {
        const int pre_grid = FL_CDIV(N, FL_THREADS / 32) < 1024 ? FL_CDIV(N, FL_THREADS / 32) : 1024;
        fl_flash2_bwd_pre<T><<<pre_grid, FL_THREADS, 0, a->stream>>>((const T *)a->O, (const T *)a->dO, a->Dv,
                                                                     a->dQ, a->flags, N, D, Tr, a->cnt);
    } else {
        const long Nd = (long)N * D;
        const int ig = FL_CDIV(Nd, FL_THREADS) < 1024 ? (int)FL_CDIV(Nd, FL_THREADS) : 1024;
        fl_flash1_bwd_init<T><<<ig, FL_THREADS, 0, a->stream>>>(a->dQ, (T *)a->dK, (T *)a->dV, a->flags, Nd, Tr, a->cnt);
    }
    CUDA_CHECK(cudaGetLastError());
    const T *Q = (const T *)a->Q, *K = (const T *)a->K, *V = (const T *)a->V, *dO = (const T *)a->dO;
    const float *L = a->L, *Dv = a->Dv;
    const float *O1 = STYLE == FA1 ? (const float *)a->O : NULL, *l1 = a->l, *m1 = a->m;
    float *dQ = a->dQ;
    T *dK = (T *)a->dK, *dV = (T *)a->dV;
    unsigned *flags = a->flags;
    int *error = a->error;
    int n = N, causal = a->causal;
    float scale = 1.0f / sqrtf((float)D);
    fl_gpu_counters *g = a->cnt;
    void *args[] = {&Q, &K, &V, &dO, &L, &Dv, &O1, &l1, &m1, &dQ, &dK, &dV, &flags, &error, &n, &causal, &scale, &g};
    CUDA_CHECK(cudaLaunchCooperativeKernel((const void *)kern, dim3(grid), dim3(FL_THREADS), args, smem, a->stream));
    CUDA_CHECK(cudaGetLastError());
}

/* (F2b): 4 Bc d + 3 Br d + 2 Br Bc + 2 Br (dQ_i counted as a tile; padding excluded) */
#define F2B(D, BR, BC) (4L * (BC) * (D) + 3L * (BR) * (D) + 2L * (BR) * (BC) + 2L * (BR))
#define K2B(T, DT, D, BR, BC) {"flash2", 4, DT, DT, D, BR, BC, F2B(D, BR, BC), 1, launch_flash_bwd<T, D, BR, BC, FA2>, 1}
/* (F1b): 4 Bc d + 4 Br d + 2 Br Bc + 3 Br; O is flash1's fp32 running O */
#define F1B(D, BR, BC) (4L * (BC) * (D) + 4L * (BR) * (D) + 2L * (BR) * (BC) + 3L * (BR))
#define K1B(T, DT, D, BR, BC) {"flash1", 5, DT, FL_F32, D, BR, BC, F1B(D, BR, BC), 1, launch_flash_bwd<T, D, BR, BC, FA1>, 1}

static const fl_kernel_info flash2_bwd_table[] = {
    K2B(__half, FL_F16, 64, 16, 16), K2B(__half, FL_F16, 64, 32, 32), K2B(__half, FL_F16, 64, 64, 64),
    K2B(__half, FL_F16, 128, 16, 16), K2B(__half, FL_F16, 128, 32, 32), K2B(__half, FL_F16, 128, 64, 64),
    K2B(float, FL_F32, 64, 32, 32), K2B(float, FL_F32, 128, 32, 32),
    K2B(__nv_bfloat16, FL_BF16, 64, 32, 32), K2B(__nv_bfloat16, FL_BF16, 128, 32, 32),
    K1B(__half, FL_F16, 64, 16, 16), K1B(__half, FL_F16, 64, 32, 32), K1B(__half, FL_F16, 64, 64, 64),
    K1B(__half, FL_F16, 128, 16, 16), K1B(__half, FL_F16, 128, 32, 32),
    K1B(float, FL_F32, 64, 32, 32), K1B(__nv_bfloat16, FL_BF16, 64, 32, 32),
};

FL_TABLE_GETTER(fl_flash2_bwd_kernels, flash2_bwd_table)
