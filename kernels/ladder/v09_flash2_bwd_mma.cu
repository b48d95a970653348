/* v09_flash2_bwd_mma.cu: version 9, FlashAttention-2 backward (Dao 2023, Algorithm 2) on the
 * tensor cores.
 *
 * What changed from version 8: version 4's schedule on the tensor cores, over batch x heads, and
 * without the wavefront: dQ_i += dS K_j goes to L2 as reductions (red.global.add), so the CTAs of
 * different key blocks need no hand-off.  What it costs: the model's bytes (dQ_i read and
 * written once per (key block, query block) pair, now by the L2's atomic units); on the H200
 * (fp16, d = 128, N = 4096, 8 x 16 heads) 13.0 ms against PyTorch SDPA's FlashAttention-2
 * backward at 9.5 ms, 0.70-0.97 of it over the benchmark's shapes (figures/data/gpu_sdpa.csv).
 *
 * The same schedule as version 4 (src/schedules/flash_bwd.c; docs/model.md §backward, F2b):
 *   fl_fast_bwd_pre  line 3-4  dQ = 0 (fp32, in HBM), D = rowsum(dO o O)  reads 2Nd, writes Nd + N
 *                    (flash_bwd_pre.cuh, shared with version 13)
 *   fl_fast_bwd      line 5-18 one CTA per key block j of BC = 64 keys (each of the 4 warps owns
 *                    16 keys): load K_j, V_j; for each query block i that sees j: load Q_i, dO_i,
 *                    L_i, D_i; recompute S^T = K_j Q_i^T, P^T = exp(S^T - L); dV_j += P^T dO_i;
 *                    dP^T = V_j dO_i^T; dS^T = P^T o (dP^T - D); dK_j += dS^T Q_i; dQ_i += dS K_j
 *                    (through shared memory: dS^T is stored once and read transposed by ldmatrix);
 *                    write dK_j, dV_j once.
 * dQ_i += is a red.global.add of two fp32 values (sm_90 vector atomics; two scalar ones before sm_90,
 * counted.cuh) per pair of elements:
 * the L2 reads and writes each element of dQ_i, which is the model's load (line 9) and store
 * (line 15) of dQ_i, and the counters count it so: one read and one write per element.  The
 * fp32 accumulator is the output the model counts (rule R8); fl_tc_round (tc_gemm.cuh) rounds it into the
 * storage type when the caller asks (a.dQout, PyTorch's dQ): a pass outside the schedule, used by
 * the benchmark and not counted.
 * Products through kernels/common/mma.cuh; Q_i, dO_i, L_i, D_i are prefetched by cp.async into a second
 * stage while block i-1 is computed (extra SRAM beside M_eff = F2b, as version 7).
 */
#include "attn.h"
#include "flash_bwd_pre.cuh"
#include "tc_gemm.cuh"

#define FL_V_NEEDS FL_NEED_SM80

/* Tile traits (traits.cuh) of the main kernel, BC = 64 keys a CTA: K_j, V_j; 2 stages of Q_i and
 * dO_i; dS^T (BC x BR); 2 stages of L_i, D_i (fp32) in shared memory (second stages: the
 * prefetch, not in the model); dK_j, dV_j, the P^T tile and the dQ_i partial sums in registers. */
template <int D, int BR> __host__ __device__ constexpr fl_tiles<10> v09_tiles()
{
    return {{{"K_j", 64, D, 0, 2, 1, 1, FL_SMEM}, {"V_j", 64, D, 0, 2, 1, 1, FL_SMEM}, {"Q_i", BR, D, 0, 2, 2, 1, FL_SMEM},
             {"dO_i", BR, D, 0, 2, 2, 1, FL_SMEM}, {"dS_ij^T", 64, BR, 0, 2, 1, 1, FL_SMEM}, {"L_i", BR, 1, 0, 4, 2, 1, FL_SMEM},
             {"D_i", BR, 1, 0, 4, 2, 1, FL_SMEM}, {"dK_j, dV_j", 2 * 64, D, 0, 4, 1, 1, FL_REGS},
             {"P_ij^T", 64, BR, 0, 4, 1, 1, FL_REGS}, {"dQ_i", BR, D, 0, 4, 1, 1, FL_REGS}}};
}

template <class T, int D, int BR>
__global__ void __launch_bounds__(FL_THREADS)
fl_fast_bwd(fl_gptr<const T, FL_T_Q> Q, fl_gptr<const T, FL_T_K> K, fl_gptr<const T, FL_T_V> V,
            fl_gptr<const T, FL_T_dO> dO, fl_gptr<const float, FL_T_L> L, fl_gptr<const float, FL_T_D> Dv,
            fl_gptr<float, FL_T_dQ> dQacc, fl_gptr<T, FL_T_dK> dK, fl_gptr<T, FL_T_dV> dV, int N, int causal, float scale,
            float scale_log2, fl_csink g)
{
#if FL_CODE_HAS(FL_V_NEEDS)
    constexpr int BC = 64, WQ = BR / 64; /* keys per CTA; query m-tiles per warp in dQ_i */
    constexpr auto tl = v09_tiles<D, BR>();
    extern __shared__ __align__(128) unsigned char fl_smem[];
    T *Ks = FL_TILE(T, fl_smem, tl, 0), *Vs = FL_TILE(T, fl_smem, tl, 1);
    T *Qs = FL_TILE(T, fl_smem, tl, 2);  /* 2 stages x BR x D */
    T *dOs = FL_TILE(T, fl_smem, tl, 3); /* 2 stages x BR x D */
    T *dSs = FL_TILE(T, fl_smem, tl, 4); /* BC x BR: dS^T, keys by queries */
    float *Ls = FL_TILE(float, fl_smem, tl, 5), *Ds = FL_TILE(float, fl_smem, tl, 6); /* 2 stages x BR each */
    FlCount c;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g4 = lane >> 2, t4 = lane & 3;
    const int wk = warp * 16; /* the warp's keys in the block */
    const long bh = blockIdx.y, Nd = (long)N * D;
    Q = Q + bh * Nd; K = K + bh * Nd; V = V + bh * Nd; dO = dO + bh * Nd; dK = dK + bh * Nd; dV = dV + bh * Nd;
    dQacc = dQacc + bh * Nd; L = L + bh * N; Dv = Dv + bh * N;
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
        fl_load_tile<T, BR, D, FL_THREADS>(Qs + st * BR * D, Q + r0 * D, D, br, D, c);
        fl_load_tile<T, BR, D, FL_THREADS>(dOs + st * BR * D, dO + r0 * D, D, br, D, c);
        for (int r = threadIdx.x; r < BR; r += FL_THREADS) {
            const bool ok = r < br;
            Ls[st * BR + r] = ok ? L.ld(c, r0 + r) * 1.4426950408889634f : 0.f; /* base 2 */
            Ds[st * BR + r] = ok ? Dv.ld(c, r0 + r) : 0.f;
        }
    };
    if (i0 < nqb) {
        fl_load_tile<T, BC, D, FL_THREADS>(Ks, K + c0 * D, D, bc, D, c); /* line 6 */
        fl_load_tile<T, BC, D, FL_THREADS>(Vs, V + c0 * D, D, bc, D, c);
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
                    for (int n = 0; n < D / 8; n++) /* each element read and written by the L2 */
                        dQacc.red_add2(c, row * D + n * 8 + 2 * t4, dq[m][n][2 * h] * scale, dq[m][n][2 * h + 1] * scale);
                }
        }
        __syncthreads(); /* stage st and dS^T are free */
    }
    /* line 18: write dK_j (scaled), dV_j through the first Q stage (free now) */
    float rs[1][2] = {{scale, scale}}, one[1][2] = {{1.f, 1.f}};
    const int kr = (int)min(16L, max(0L, N - c0 - wk));
    fl_warp_store_rows<T, D, 1>(dk, rs, Qs + wk * D, dK + (c0 + wk) * D, kr, c);
    fl_warp_store_rows<T, D, 1>(dv, one, Qs + (64 + wk) * D, dV + (c0 + wk) * D, kr, c);
    fl_cnt_flush(c, g, (int)sizeof(T));
#else
    fl_arch_missing();
#endif
}

template <class T, int D, int BR> static void launch_fast_bwd(const fl_gpu_args *a)
{
    constexpr auto tl = v09_tiles<D, BR>();
    static_assert(tl.footprint() == fl_fp_eval(fl_fp_coef FL_FP_FLASH2_BWD, BR, 64, D), "the tiles are the model's (F2b)");
    static_assert(tl.dyn_bytes() <= FL_SMEM_MAX, "fast backward tiles do not fit in shared memory");
    const int N = a->N, nbh = a->nbh > 0 ? a->nbh : 1;
    fl_bwd_pre<T, D, FL_V_NEEDS>(a);
    const float scale = 1.0f / sqrtf((float)D);
    fl_launch(fl_fast_bwd<T, D, BR>, tl.info("fl_fast_bwd"), dim3(FL_CDIV(N, 64), nbh), dim3(FL_THREADS), a->stream, a->log,
              (const T *)a->Q, (const T *)a->K, (const T *)a->V, (const T *)a->dO, (const float *)a->L, (const float *)a->Dv,
              a->dQ, (T *)a->dK, (T *)a->dV, N, a->causal ? 1 : 0, scale, scale * 1.4426950408889634f, a->cnt);
    fl_bwd_round<T, D, FL_V_NEEDS>(a);
}

#define K9(T, DT, D, BR) \
    {&FL_FLASH2_BWD, 9, DT, DT, D, BR, 64, v09_tiles<D, BR>().footprint(), 1, launch_fast_bwd<T, D, BR>, (long)v09_tiles<D, BR>().dyn_bytes()}
#define K9_SET(T, DT) K9(T, DT, 64, 64), K9(T, DT, 64, 128), K9(T, DT, 128, 64)

static constexpr fl_kernel_info fast_bwd_table[] = {K9_SET(__half, FL_F16), K9_SET(__nv_bfloat16, FL_BF16)};

FL_LADDER_FILE(09, fast_bwd_table, FL_V_NEEDS)
