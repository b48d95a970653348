/* v14_flash2_bwd_ws.cu: version 14, version 13 with dQ_i added to HBM by one bulk reduction a
 * row on the copy engine, issued by a warp of its own (FlashAttention-3's dQ path, arXiv
 * 2407.08608 appendix B), and a deterministic variant (version 15, v15_flash2_bwd_ws_det.cu:
 * this kernel with DET) that adds the contributions to each dQ_i in a fixed order.
 *
 * What changed from version 13 (the same schedule, tiles, operands and products):
 *   - line 15: the consumers no longer reduce dQ_i into HBM themselves (16 red.global.add.v2.f32 a
 *     thread a step, 8,192 fp32 atomics a step a CTA at the L2, and their issue on the consumers'
 *     critical path); each writes its part of dQ_i (scaled) to a staging tile in shared memory
 *     (fp32, rows padded by 8 words: the accumulator's rows g and g + 4 land 32 banks apart, two
 *     wavefronts a warp store, the least for 256 bytes) and arrives on an mbarrier; warp 1 of the
 *     producer warpgroup (idle in version 13) issues one cp.reduce.async.bulk .add.f32 per row
 *     (d fp32 values, contiguous in HBM and in the staging tile) and hands the tile back once the
 *     engine has read it (wait_group.read);
 *   - the producer warpgroup keeps 32 registers a thread (24 in version 13): 128 x 32 + 256 x 240
 *     is the register file exactly, and the dQ warp's loop has room;
 *   - DET (version 15): before reducing dQ_i, the dQ warp waits until the word of (head, i) in a
 *     workspace of semaphores equals 32 j (every lane of the CTAs of key blocks 0..j-1 has added
 *     its rows), reduces, waits for its reductions to complete (wait_group 0), and adds 1 to the
 *     word (each lane, releasing).  Key block j only waits for key blocks j' < j of its head,
 *     whose CTAs come earlier in the grid's order (blockIdx.x, then .y) and so are resident or
 *     done: the wait cannot deadlock.  Every key block before j sees query block i (causal too:
 *     i >= c0 / Br holds for each earlier c0), so the order is j = 0, 1, ... for every i, and dQ
 *     is the same bits run after run.
 * What it costs: the staging tile, Br x (d + 8) fp32 (36,864 bytes at d = 64, 34,816 at d = 128) and
 * two mbarriers in shared memory beyond the model's footprint; DET: nbh x ceil(N / Br) words of
 * semaphores (the launcher's workspace, zeroed each launch) and waits.  The HBM traffic is version
 * 13's: each element of dQ_i one read and one write at the L2 a step (counted.cuh red_add_bulk).
 * Predicted (before any measurement; kernels/README.md: predict, then measure), on the H200 at the
 * benchmark's 64 shapes, against version 13's record (figures/data/gpu_sdpa_v13_run1.csv):
 *   - the dQ path: -5 to -10 % of the backward's time (the consumers issue 16 shared stores a step
 *     instead of 16 global reductions, and the L2 takes 128 bulk rows instead of 4,096 vector
 *     atomics): 0.69-0.97x cuDNN becomes about 0.75-1.05x;
 *   - DET: +3 to +10 % over version 14 (the skew of one step between consecutive key blocks at the
 *     start of each wave, and the wait for completion instead of the read a step).
 * Not done, with its predicted gain: other tile shapes per d (kept: 128 x 128 at d = 64, 64 x 128
 * at d = 128, version 13's; no prediction without a sweep on the GPU); longest-first order of key
 * blocks for causal (the grid already runs a head's key blocks longest first, head by head, so
 * the tail is one short block: < 2 %); L_i and D_i by bulk copy (two loads of Br fp32 a step by
 * the producer's lanes, off the consumers' path: < 1 %).
 *
 * Version 13's header describes the schedule, the operands and the split of dQ_i between the two
 * consumer warpgroups; only line 15's last half (the reduction into HBM) differs here.
 * Needs sm_90a (wgmma, TMA, bulk reductions, setmaxnreg); other targets compile a stub.
 */
#include "attn.h"
#include "flash_bwd_pre.cuh"
#include "pipeline.cuh"
#include "wgmma.cuh"

#ifndef FL_V14_KERNEL_ONLY /* version 15 defines its own, the same */
#define FL_V_NEEDS FL_NEED_SM90A
#endif

/* Tile traits (traits.cuh): K_j, V_j, ST stages of Q_i and dO_i (64-column sub-tiles, the copy
 * engine's 128-byte swizzle), two buffers of dS^T (BC x BR, 64-query sub-tiles), ST stages of L_i
 * and D_i (fp32), the dQ_i staging tile (fp32, rows padded by 8), the mbarriers and 1024 bytes of
 * alignment slack in shared memory (extra to the model: the stages beyond one, the second dS^T,
 * the staging tile, the barriers, the slack); dK_j, dV_j, P^T and the dQ_i partial sums in
 * registers (wgmma accumulators). */
template <int D, int BR, int BC, int ST> __host__ __device__ constexpr fl_tiles<13> v14_tiles()
{
    return {{{"K_j", BC, D, 0, 2, 1, 1, FL_SMEM}, {"V_j", BC, D, 0, 2, 1, 1, FL_SMEM}, {"Q_i", BR, D, 0, 2, ST, 1, FL_SMEM},
             {"dO_i", BR, D, 0, 2, ST, 1, FL_SMEM}, {"dS_ij^T", BC, BR, 0, 2, 2, 1, FL_SMEM},
             {"dQ_i staged", BR, D, 8, 4, 1, 0, FL_SMEM}, {"L_i", BR, 1, 0, 4, ST, 1, FL_SMEM},
             {"D_i", BR, 1, 0, 4, ST, 1, FL_SMEM}, {"mbarriers", 1, 8, 0, 8, 1, 0, FL_SMEM},
             {"alignment slack", 1, 1024, 0, 1, 1, 0, FL_SMEM}, {"dK_j, dV_j", 2 * BC, D, 0, 4, 1, 1, FL_REGS},
             {"P_ij^T", BC, BR, 0, 4, 1, 1, FL_REGS}, {"dQ_i", BR, D, 0, 4, 1, 1, FL_REGS}}};
}

template <class T, int D, int BR, int BC, int ST, bool DET>
__global__ void __launch_bounds__(384, 1)
fl_ws_bwd_bulk(const __grid_constant__ fl_gtmap<const T, FL_T_Q> Qm, const __grid_constant__ fl_gtmap<const T, FL_T_K> Km,
          const __grid_constant__ fl_gtmap<const T, FL_T_V> Vm, const __grid_constant__ fl_gtmap<const T, FL_T_dO> dOm,
          fl_gptr<const float, FL_T_L> L, fl_gptr<const float, FL_T_D> Dv, fl_gptr<float, FL_T_dQ> dQacc,
          fl_gptr<T, FL_T_dK> dK, fl_gptr<T, FL_T_dV> dV, fl_gptr<unsigned, FL_T_FLAGS> sem, int N, int causal, float scale,
          float scale_log2, fl_csink g)
{
#if FL_CODE_HAS(FL_V_NEEDS)
    constexpr int BOX = 64;           /* box columns */
    constexpr int RP = 32, RC = 240;  /* registers a thread: producer and dQ warps, consumers */
    constexpr int DP = D + 8;         /* the staging tile's row stride, fp32 words */
    static_assert(128 * RP + 256 * RC <= 65536, "the register file holds both roles");
    static_assert(BC == 128 && ((BR == 128 && D == 64) || (BR == 64 && D == 128)), "dQ_i splits into two 64 x 64 halves");
    constexpr int QH = BR == 128, NQ = 64; /* dQ_i halves by queries (QH) or by columns of d; each NQ wide */
    constexpr auto tl = v14_tiles<D, BR, BC, ST>();
    static_assert(tl.offset(5) % 16 == 0 && DP * 4 % 16 == 0 && D * 4 % 16 == 0, "bulk reductions of 16-byte rows");
    extern __shared__ __align__(128) unsigned char fl_smem[]; /* as tc_gemm.cuh declares it; base below is aligned */
    unsigned char *base = fl_smem + ((1024 - (fl_smem_u32(fl_smem) & 1023)) & 1023);
    T *Ks = FL_TILE(T, base, tl, 0);    /* BC x D, 64-column sub-tiles */
    T *Vs = FL_TILE(T, base, tl, 1);    /* BC x D, sub-tiles */
    T *Qs = FL_TILE(T, base, tl, 2);    /* ST stages x BR x D, sub-tiles */
    T *dOs = FL_TILE(T, base, tl, 3);   /* ST stages x BR x D, sub-tiles */
    T *dSs = FL_TILE(T, base, tl, 4);   /* 2 x BC x BR: dS^T, keys by queries, 64-query sub-tiles */
    float *dQs = FL_TILE(float, base, tl, 5); /* BR x DP: dQ_i scaled, staged for the bulk reductions */
    float *Ls = FL_TILE(float, base, tl, 6), *Ds = FL_TILE(float, base, tl, 7); /* ST stages x BR each */
    uint64_t *bar = FL_TILE(uint64_t, base, tl, 8);
    uint64_t *kvfull = bar, *full = bar + 1, *empty = full + ST, *dqfull = empty + ST, *dqempty = dqfull + 1;
    static_assert(3 + 2 * ST <= 8, "the mbarriers fit their buffer");
    FlCount c;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, wg = warp >> 2;
    const int bh = blockIdx.y, c0 = blockIdx.x * BC;
    const int nqb = FL_CDIV(N, BR), i0 = causal ? c0 / BR : 0; /* the query blocks that see key block j */

    if (threadIdx.x == 0) {
        fl_mbar_init(kvfull, 1);
        for (int s = 0; s < ST; s++) {
            fl_mbar_init(full + s, 32);   /* the producer warp's lanes: each after its L_i, D_i */
            fl_mbar_init(empty + s, 256); /* every consumer thread, after its last read of the stage */
        }
        fl_mbar_init(dqfull, 256); /* every consumer thread, after its writes to the staging tile */
        fl_mbar_init(dqempty, 32); /* the dQ warp's lanes, once the engine has read their rows */
        fl_mbar_init_fence();
    }
    __syncthreads();

    if (wg == 0) { /* the producer: lane 0 issues the tensor copies, the warp loads L_i and D_i */
        fl_setmaxnreg_dec<RP>();
        if (warp == 0) {
            if (lane == 0) { /* line 6 */
                fl_mbar_expect_tx(kvfull, 2 * BC * D * sizeof(T));
#pragma unroll
                for (int s = 0; s < D / BOX; s++) {
                    Km.load(c, Ks + s * BC * BOX, kvfull, s * BOX, c0, bh);
                    Vm.load(c, Vs + s * BC * BOX, kvfull, s * BOX, c0, bh);
                }
            }
            const fl_gptr<const float, FL_T_L> Lh = L + (long)bh * N;
            const fl_gptr<const float, FL_T_D> Dh = Dv + (long)bh * N;
            for (int i = i0, n = 0; i < nqb; i++, n++) { /* line 9 */
                const int st = n % ST, r0 = i * BR;
                fl_mbar_wait(empty + st, ((n / ST) & 1) ^ 1);
                for (int r = lane; r < BR; r += 32) { /* L in base 2 for exp2; rows >= N: 0 (masked) */
                    const bool ok = r0 + r < N;
                    Ls[st * BR + r] = ok ? Lh.ld(c, r0 + r) * 1.4426950408889634f : 0.f;
                    Ds[st * BR + r] = ok ? Dh.ld(c, r0 + r) : 0.f;
                }
                if (lane == 0) {
                    fl_mbar_expect_tx(full + st, 2 * BR * D * sizeof(T));
#pragma unroll
                    for (int s = 0; s < D / BOX; s++) {
                        Qm.load(c, Qs + st * BR * D + s * BR * BOX, full + st, s * BOX, r0, bh);
                        dOm.load(c, dOs + st * BR * D + s * BR * BOX, full + st, s * BOX, r0, bh);
                    }
                } else {
                    fl_mbar_arrive(full + st);
                }
            }
            fl_cnt_flush(c, g, (int)sizeof(T));
        } else if (warp == 1) { /* the dQ warp: line 15's reduction into HBM, a row a lane at a time */
            const fl_gptr<unsigned, FL_T_FLAGS> semh = sem + (long)bh * nqb;
            for (int i = i0, n = 0; i < nqb; i++, n++) {
                const int r0 = i * BR, rows = min(BR, N - r0);
                fl_mbar_wait(dqfull, n & 1);
                if constexpr (DET) { /* key blocks 0..j-1 of this head have added theirs (32 lanes each) */
                    while (semh.ld_acquire(c, i) != 32u * blockIdx.x) {
                    }
                    fl_fence_proxy_async_global();
                }
                for (int r = lane; r < rows; r += 32) dQacc.red_add_bulk(c, ((long)bh * N + r0 + r) * D, dQs + r * DP, D);
                fl_bulk_commit();
                if constexpr (DET) {
                    fl_bulk_wait<0>(); /* this lane's sums are in HBM ... */
                    fl_fence_proxy_async_global();
                    semh.add_release(c, i, 1u); /* ... before the next key block may add its own */
                } else {
                    fl_bulk_wait_read<0>();
                }
                fl_mbar_arrive(dqempty);
            }
            fl_bulk_wait<0>();
            fl_cnt_flush(c, g, (int)sizeof(T));
        }
        return;
    }

    fl_setmaxnreg_inc<RC>();
    const int cw = wg - 1, kw = warp & 3, g4 = lane >> 2, t4 = lane & 3;
    const int krow = cw * 64 + kw * 16; /* this warp's first key of the block */
    float dv[D / 2], dk[D / 2];         /* dV_j, dK_j: this warpgroup's 64 keys x d */
#pragma unroll
    for (int x = 0; x < D / 2; x++) dv[x] = dk[x] = 0.f;
    fl_mbar_wait(kvfull, 0);

    for (int i = i0, n = 0; i < nqb; i++, n++) {
        const int st = n % ST, r0 = i * BR;
        fl_mbar_wait(full + st, (n / ST) & 1);
        const T *Qt = Qs + st * BR * D, *dOt = dOs + st * BR * D;
        const float *Lt = Ls + st * BR, *Dt = Ds + st * BR;
        T *dSt = dSs + (n & 1) * BC * BR;

        /* lines 10, 13: S^T = K_w Q_i^T and dP^T = V_w dO_i^T, this warpgroup's 64 keys x BR queries */
        float s[1][BR / 8][4], dp[1][BR / 8][4];
        float(&sd)[BR / 2] = *reinterpret_cast<float(*)[BR / 2]>(&s[0][0][0]);
        float(&dpd)[BR / 2] = *reinterpret_cast<float(*)[BR / 2]>(&dp[0][0][0]);
        fl_wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++)
            fl_wgmma_ss<T, BR>(sd, fl_desc(Ks + fl_sub_off<BC>(cw * 64, kk * 16)), fl_desc(Qt + fl_sub_off<BR>(0, kk * 16)), kk > 0);
        fl_wgmma_commit();
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++)
            fl_wgmma_ss<T, BR>(dpd, fl_desc(Vs + fl_sub_off<BC>(cw * 64, kk * 16)), fl_desc(dOt + fl_sub_off<BR>(0, kk * 16)), kk > 0);
        fl_wgmma_commit();

        /* line 11: P^T = 2^(S^T scale log2 e - L log2 e), 0 where masked; the mask's tests only in
         * the warps whose keys cross the diagonal or the ends (edge is the same in a whole warp) */
        fl_wgmma_wait<1>();
        fl_reg_fence(sd);
        const auto p_of_s = [&](auto masked) {
#pragma unroll
            for (int nn = 0; nn < BR / 8; nn++) {
                const float2 l2 = *(const float2 *)(Lt + nn * 8 + 2 * t4); /* queries q, q + 1 */
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    float x = fl_ex2(fmaf(s[0][nn][e], scale_log2, -((e & 1) ? l2.y : l2.x)));
                    if constexpr (decltype(masked)::value) {
                        const int key = c0 + krow + g4 + ((e >> 1) << 3), row = r0 + nn * 8 + 2 * t4 + (e & 1);
                        if (row >= N || key >= N || (causal && key > row)) x = 0.f;
                    }
                    s[0][nn][e] = x;
                }
            }
        };
        if (r0 + BR > N || c0 + BC > N || (causal && c0 + krow + 15 > r0)) p_of_s(std::true_type{});
        else p_of_s(std::false_type{});
        /* line 14: dS^T = P^T o (dP^T - D_i) */
        fl_wgmma_wait<0>();
        fl_reg_fence(dpd);
#pragma unroll
        for (int nn = 0; nn < BR / 8; nn++) {
            const float2 d2 = *(const float2 *)(Dt + nn * 8 + 2 * t4);
#pragma unroll
            for (int e = 0; e < 4; e++) dp[0][nn][e] = s[0][nn][e] * (dp[0][nn][e] - ((e & 1) ? d2.y : d2.x));
        }
        unsigned pa[BR / 16][4], da[BR / 16][4];
        fl_pack_afrag<T, BR>(s, pa);
        fl_pack_afrag<T, BR>(dp, da);

        /* dS^T to shared memory for line 15 (this warp's 16 keys; fragment (kk, h + 2 u) is row
         * g + 8 h, columns 16 kk + 8 u + 2 t..) */
#pragma unroll
        for (int kk = 0; kk < BR / 16; kk++)
#pragma unroll
            for (int h = 0; h < 2; h++)
#pragma unroll
                for (int u = 0; u < 2; u++)
                    *(unsigned *)(dSt + fl_sub_off<BC>(krow + g4 + 8 * h, kk * 16 + u * 8 + 2 * t4)) = da[kk][h + 2 * u];

        /* lines 12, 16: dV_j += P^T dO_i, dK_j += dS^T Q_i (A from registers, B MN-major) */
        fl_reg_fence(dv);
        fl_reg_fence(dk);
        fl_wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BR / 16; kk++) fl_wgmma_rs<T, D, 1>(dv, pa[kk], fl_desc_mn(dOt + kk * 16 * BOX, BR * 128));
#pragma unroll
        for (int kk = 0; kk < BR / 16; kk++) fl_wgmma_rs<T, D, 1>(dk, da[kk], fl_desc_mn(Qt + kk * 16 * BOX, BR * 128));
        fl_wgmma_commit();

        /* line 15: dQ_i (this warpgroup's half) = dS K_j, both halves of dS^T in shared memory first */
        fl_fence_proxy_async();
        fl_named_sync(1, 256);
        float dq[NQ / 2];
        fl_wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BC / 16; kk++)
            fl_wgmma_ss<T, NQ, 1, 1>(dq, fl_desc_mn(dSt + (QH ? cw * BC * 64 : 0) + kk * 16 * 64, BC * 128),
                                     fl_desc_mn(Ks + (QH ? 0 : cw * BC * 64) + kk * 16 * 64, BC * 128), kk > 0);
        fl_wgmma_commit();
        fl_wgmma_wait<1>(); /* dV_j, dK_j have landed: Q_i, dO_i, L_i, D_i are free */
        fl_reg_fence(dv);
        fl_reg_fence(dk);
        fl_mbar_arrive(empty + st); /* each thread its own arrival: it releases its own reads of L_i, D_i */
        fl_wgmma_wait<0>();
        fl_reg_fence(dq);
        /* dQ_i's part to the staging tile (rows >= N too: the dQ warp reduces only rows < N), once
         * the dQ warp has handed back the previous one; then fenced for the copy engine */
        const int qrow = (QH ? cw * 64 : 0) + kw * 16, col = QH ? 0 : cw * 64; /* this warp's 16 rows of the block */
        fl_mbar_wait(dqempty, (n & 1) ^ 1);
#pragma unroll
        for (int h = 0; h < 2; h++)
#pragma unroll
            for (int nn = 0; nn < NQ / 8; nn++)
                *(float2 *)(dQs + (qrow + g4 + 8 * h) * DP + col + nn * 8 + 2 * t4) =
                    make_float2(dq[4 * nn + 2 * h] * scale, dq[4 * nn + 2 * h + 1] * scale);
        fl_fence_proxy_async();
        fl_mbar_arrive(dqfull);
    }

    /* line 18: dK_j (scaled) and dV_j, each warp's 16 keys through its own rows of the Q_i stages
     * (free once both consumer warpgroups are past the loop) */
    fl_named_sync(2, 256);
    float rs[1][2] = {{scale, scale}}, one[1][2] = {{1.f, 1.f}};
    const int kr = min(16, max(0, N - c0 - krow));
    T *stage = Qs + (cw * 4 + kw) * 16 * D;
    const long out = ((long)bh * N + c0 + krow) * D;
    fl_warp_store_rows<T, D, 1>(*reinterpret_cast<float(*)[1][D / 8][4]>(&dk[0]), rs, stage, dK + out, kr, c);
    fl_warp_store_rows<T, D, 1>(*reinterpret_cast<float(*)[1][D / 8][4]>(&dv[0]), one, stage, dV + out, kr, c);
    fl_cnt_flush(c, g, (int)sizeof(T));
#else
    fl_arch_missing();
#endif
}

/* The deterministic variant's semaphores: n words zeroed on stream s before the launch (a
 * workspace of the launcher's own, grown as needed and kept for the process: one deterministic
 * launch at a time, as the harness and the benchmark run them; two on concurrent streams would
 * share the words). */
static unsigned *v14_semaphores(long n, cudaStream_t s)
{
    static unsigned *p = nullptr;
    static long cap = 0;
    if (n > cap) {
        if (p) CUDA_CHECK(cudaFree(p));
        CUDA_CHECK(cudaMalloc(&p, (size_t)n * sizeof *p));
        cap = n;
    }
    CUDA_CHECK(cudaMemsetAsync(p, 0, (size_t)n * sizeof *p, s));
    return p;
}

template <class T, int D, int BR, int BC, int ST, bool DET> static void launch_ws_bwd_bulk(const fl_gpu_args *a)
{
    constexpr auto tl = v14_tiles<D, BR, BC, ST>();
    static_assert(tl.footprint() == fl_fp_eval(fl_fp_coef FL_FP_FLASH2_BWD, BR, BC, D), "the tiles are the model's (F2b)");
    static_assert(tl.dyn_bytes() <= FL_SMEM_MAX, "warp-specialized backward tiles do not fit in shared memory");
    static_assert(ST * BR >= 128, "the output stage (8 warps x 16 rows x d) fits in the Q_i stages");
    const int N = a->N, nbh = a->nbh > 0 ? a->nbh : 1;
    if ((long)N * D >= (1L << 31)) {
        fprintf(stderr, "flashlab-gpu: flash2 (v14): N * d must be below 2^31 per head\n");
        exit(2);
    }
    fl_bwd_pre<T, D, FL_V_NEEDS>(a);
    const fl_gtmap<const T, FL_T_Q> qm((const T *)a->Q, D, N, nbh, BR, "flash2 (v14): Q");
    const fl_gtmap<const T, FL_T_K> km((const T *)a->K, D, N, nbh, BC, "flash2 (v14): K");
    const fl_gtmap<const T, FL_T_V> vm((const T *)a->V, D, N, nbh, BC, "flash2 (v14): V");
    const fl_gtmap<const T, FL_T_dO> dom((const T *)a->dO, D, N, nbh, BR, "flash2 (v14): dO");
    const float scale = 1.0f / sqrtf((float)D);
    unsigned *sem = DET ? v14_semaphores((long)nbh * FL_CDIV(N, BR), a->stream) : nullptr;
    fl_launch(fl_ws_bwd_bulk<T, D, BR, BC, ST, DET>, tl.info("fl_ws_bwd_bulk"), dim3(FL_CDIV(N, BC), nbh), dim3(384), a->stream,
              a->log, qm, km, vm, dom, (const float *)a->L, (const float *)a->Dv, a->dQ, (T *)a->dK, (T *)a->dV, sem, N,
              a->causal ? 1 : 0, scale, scale * 1.4426950408889634f, a->cnt);
    fl_bwd_round<T, D, FL_V_NEEDS>(a);
}

/* Br queries a step, Bc = 128 keys a CTA (two consumer warpgroups of 64), ST stages of Q_i, dO_i;
 * version 14 (DET false) and its deterministic variant, version 15 (v15_flash2_bwd_ws_det.cu,
 * which includes this file with FL_V14_KERNEL_ONLY) */
#define K14(V, DET, T, DT, D, BR, ST) \
    {&FL_FLASH2_BWD, V, DT, DT, D, BR, 128, v14_tiles<D, BR, 128, ST>().footprint(), 1, launch_ws_bwd_bulk<T, D, BR, 128, ST, DET>, \
     (long)v14_tiles<D, BR, 128, ST>().dyn_bytes()}
#define K14_SET(V, DET, T, DT) K14(V, DET, T, DT, 64, 128, 2), K14(V, DET, T, DT, 128, 64, 2)

#ifndef FL_V14_KERNEL_ONLY
static constexpr fl_kernel_info ws_bwd_table[] = {K14_SET(14, false, __half, FL_F16), K14_SET(14, false, __nv_bfloat16, FL_BF16)};

FL_LADDER_FILE(14, ws_bwd_table, FL_V_NEEDS)
#endif
