/* v12_flash2_fwd_ws.cu: version 12, the FlashAttention-2 forward warp-specialized as
 * FlashAttention-3 does it (arXiv 2407.08608, section 3.1), on sm_90a.
 *
 * What changed from version 10:
 *   - the copies: a producer warp issues them on the bulk tensor copy engine (TMA: fl_gtmap,
 *     counted.cuh), one instruction a 64-column box, into a ring of ST stages of K_j and V_j with
 *     mbarriers (pipeline.cuh); version 10's 256 threads each issued cp.async chunks and waited;
 *   - the roles: one producer warpgroup (it keeps 24 registers a thread, setmaxnreg) and two
 *     consumer warpgroups of 64 query rows each (240 registers), which only compute; at d = 64
 *     also a variant with three (Br = 192; 32 and 160 registers);
 *   - no transpose of V: O += P V_j reads V_j [keys][d] as loaded, as an MN-major operand
 *     (wgmma's transpose bit, fl_desc_mn), where version 10 rewrote V_j^T in shared memory each step;
 *   - K_j and V_j freed apart: K_j's stage as soon as S_j has landed, V_j's after P_j V_j (with one
 *     barrier for both, the overlap below left K_{j+1} no time to arrive);
 *   - overlap inside a warpgroup (the consumer issues S_j = Q_i K_j^T and O += P_{j-1} V_{j-1}
 *     together and runs the softmax of S_j while the second product runs, rescaling O only when it
 *     has landed: fl_softmax_p, fl_rescale_o), ping-pong among the consumer warpgroups (they take
 *     turns to issue their products), a persistent grid; each measured against the kernel without
 *     it (docs/journal/data/gpu_sdpa_v12_steps.csv and gpu_sdpa_v12_steps_kv.csv; the kernel
 *     without them is in git history, docs/journal/v12_forward.md says where);
 *   - the instruction stream (docs/journal/data/gpu_ab_v12_step11.csv, gpu_ab_v12_step12.csv):
 *     descriptors built once and stepped by constants, stages as rings, the warp index broadcast
 *     so that all of it stays in the uniform datapath; one pipeline across a CTA's tiles (Q_i in
 *     two stages, the next tile's S_0 issued with this tile's last P V);
 *   - the epilogue (docs/journal/data/gpu_ab_v12_step15.csv): O written by the bulk tensor copy
 *     engine from each warp's stage, started and not waited for (v12_store_o); at d = 64 with two
 *     consumer warpgroups the next tile found at the start of a tile.
 * What it costs: the same bytes as versions 3, 7 and 10 (the schedule is theirs; the copy engine
 * reads only the elements of a box inside the tensor), a second score tile in registers (P of the
 * previous step, packed to 16 bits), a second stage of Q_i in shared memory, and sm_90a.  What it
 * buys: docs/performance.md (figures/data/gpu_sdpa_v12_run1.csv to gpu_sdpa_v12_run4.csv).
 *
 * The schedule (src/schedules/flash2.c; docs/model.md eq. C2): one tile per query block of Br = 64
 * rows a consumer warpgroup (128 or 192) and head, in version 10's order (query blocks of a head
 * together; causal, the last blocks first), on a persistent grid: CTA b takes work units b,
 * b + gridDim.x, ..., a unit one tile or, causal, a pair of tiles (v12_sched); Q_i loaded once; for each key block j the CTA sees (causal: fl_query_block) K_j, V_j loaded once;
 * O_i and L_i written once.  Tails (N, Nk not multiples of the tiles) are the copy engine's zero
 * fill, masked like version 10's; the input is not padded.
 * Needs sm_90a (wgmma, TMA, setmaxnreg); other targets compile a stub.
 */
#include "attn.h"
#include "online_softmax.cuh"
#include "pipeline.cuh"
#include "wgmma.cuh"

#define FL_V_NEEDS FL_NEED_SM90A

/* The tile order: with causal masks the persistent grid's work units are pairs of tiles, the
 * longest with the shortest (v12_sched), so that CTA b's static share, units b, b + gridDim.x, ...,
 * is as long as every other CTA's; without masks a unit is one tile.  Measured against a CTA a
 * tile and the longest-first orders: docs/journal/data/gpu_sdpa_v12_causal_orders.csv. */
static inline int v12_pairs(int causal) { return causal ? 1 : 0; }

/* Which tiles a CTA runs, in which order.  The tiles are the query blocks x heads; head-major
 * (the query blocks of a head together: version 10's grid order, so that the CTAs running at
 * once share their heads' K and V in L2).  A work unit is one tile or, with pairs (causal), the
 * tiles at positions p and nqb - 1 - p of a head (fl_query_block_at: the longest and the
 * shortest), every pair about nqb + 1 key blocks long; an odd nqb leaves the middle tile alone.
 * CTA b takes units b, b + gridDim.x, ... (one unit when the grid has a CTA a unit). */
struct v12_sched {
    int nqb, nbh, pair;
    __host__ __device__ long units() const { return (long)nbh * (pair ? (nqb + 1) / 2 : nqb); }
    /* This CTA's s-th tile (s = 0, 1, ...): its head bh and position bx; false past the last.
     * bx < 0: no tile at this s (the middle tile's missing partner). */
    __device__ bool at(int s, int &bh, int &bx) const
    {
        const long ul = blockIdx.x + (long)(pair ? s >> 1 : s) * gridDim.x;
        if (ul >= units()) return false;
        const unsigned u = (unsigned)ul; /* below 2^31 (launch_ws_fwd): 32-bit divisions */
        if (!pair) {
            bh = (int)(u / nqb), bx = (int)(u % nqb);
            return true;
        }
        const unsigned np = (nqb + 1) / 2, p = u % np;
        bh = (int)(u / np), bx = (s & 1) ? nqb - 1 - (int)p : (int)p;
        if ((s & 1) && bx == p) bx = -1;
        return true;
    }
};

/* Tile traits (traits.cuh): two stages of Q_i, ST of K_j and V_j (64-column sub-tiles, the copy engine's
 * 128-byte swizzle), the mbarriers and 1024 bytes of alignment slack in shared memory (extra to the
 * model: the stages beyond one, the barriers, the slack); S_ij, O_i, m_i, l_i in registers, and
 * P_{i,j-1} packed to 16 bits beside S_ij (extra to the model: the overlap's second score tile). */
template <int D, int BR, int BC, int ST> __host__ __device__ constexpr fl_tiles<11> v12_tiles()
{
    return {{{"Q_i", BR, D, 0, 2, 2, 1, FL_SMEM}, {"K_j", BC, D, 0, 2, ST, 1, FL_SMEM}, {"V_j", BC, D, 0, 2, ST, 1, FL_SMEM},
             {"O_i stage", BR, D, 0, 2, 1, 0, FL_SMEM}, {"mbarriers", 1, 16, 0, 8, 1, 0, FL_SMEM}, {"alignment slack", 1, 1024, 0, 1, 1, 0, FL_SMEM},
             {"S_ij", BR, BC, 0, 4, 1, 1, FL_REGS}, {"P_i,j-1", BR, BC, 0, 2, 1, 0, FL_REGS},
             {"O_i", BR, D, 0, 4, 1, 1, FL_REGS}, {"m_i", BR, 1, 0, 4, 1, 1, FL_REGS}, {"l_i", BR, 1, 0, 4, 1, 1, FL_REGS}}};
}

/* S = Q_i K_j^T for this warpgroup's 64 rows (issued, not waited): dq the descriptor of its rows of
 * Q_i, dk of K_j's stage; each k step of 16 advances both by constants (fl_desc_add). */
template <class T, int D, int BR, int BC>
__device__ __forceinline__ void v12_qk(float (&sd)[BC / 2], uint64_t dq, uint64_t dk)
{
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++)
        fl_wgmma_ss<T, BC>(sd, fl_desc_add<T>(dq, fl_sub_off<BR>(0, kk * 16)), fl_desc_add<T>(dk, fl_sub_off<BC>(0, kk * 16)), kk > 0);
}

/* O += P V_j (issued, not waited): dv the MN-major descriptor of V_j's stage [keys][d] in sub-tiles
 * (fl_desc_mn), advanced 16 keys a k step. */
template <class T, int D, int BC>
__device__ __forceinline__ void v12_pv(float (&od)[D / 2], const unsigned (&p)[BC / 16][4], uint64_t dv)
{
#pragma unroll
    for (int kk = 0; kk < BC / 16; kk++) fl_wgmma_rs<T, D, 1>(od, p[kk], fl_desc_add<T>(dv, kk * 16 * 64));
}

/* This warp's 16 rows of O (o scaled by rs, rounded to T) written to rows row.. of head bh: into
 * the warp's stage in shared memory, 16 x D in 64-column sub-tiles with the 128-byte swizzle (the
 * copy engine's box, fl_gtmap), then by the bulk tensor copy engine, which lane 0 starts and
 * nobody waits for until the stage is needed again (the next tile's) or the CTA ends.  Rows past
 * N are not written (the engine clips them). */
template <class T, int D>
__device__ __forceinline__ void v12_store_o(const float (&o)[1][D / 8][4], const float (&rs)[1][2], T *stage,
                                            const fl_gtmap<T, FL_T_O> &Om, int row, int bh, FlCount &c)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, tq = lane & 3;
    if (lane == 0) fl_bulk_wait_read<0>(); /* the previous tile's copies have read the stage */
    __syncwarp();
#pragma unroll
    for (int n = 0; n < D / 8; n++)
#pragma unroll
        for (int h = 0; h < 2; h++) /* row g + 8h, columns 8n + 2tq: sub-tile n / 8, chunk n % 8 ^ g */
            *(unsigned *)(stage + (n / 8) * 16 * 64 + (g + 8 * h) * 64 + ((n % 8) ^ g) * 8 + 2 * tq) =
                fl_pack2<T>(o[0][n][2 * h] * rs[0][h], o[0][n][2 * h + 1] * rs[0][h]);
    fl_fence_proxy_async();
    __syncwarp();
    if (lane == 0) {
#pragma unroll
        for (int s = 0; s < D / 64; s++) Om.store(c, stage + s * 16 * 64, s * 64, row, bh);
        fl_bulk_commit();
    }
}

template <class T, int D, int NWG, int BC, int ST>
__global__ void __launch_bounds__(128 * (NWG + 1), 1)
fl_ws_fwd(const __grid_constant__ fl_gtmap<const T, FL_T_Q> Qm, const __grid_constant__ fl_gtmap<const T, FL_T_K> Km,
          const __grid_constant__ fl_gtmap<const T, FL_T_V> Vm, const __grid_constant__ fl_gtmap<T, FL_T_O> Om,
          fl_gptr<float, FL_T_L> L, int nbh, int N,
          int Nk, int causal, int off, int pair, float scale_log2, fl_csink g)
{
#if FL_CODE_HAS(FL_V_NEEDS)
    constexpr int BR = 64 * NWG, BOX = 64, NCW = 4 * NWG; /* query rows, box columns, consumer warps */
    /* registers a thread (FlashAttention-3's split): the producer gives up what the consumers take */
    constexpr int RP = NWG == 2 ? 24 : 32, RC = NWG == 2 ? 240 : 160;
    static_assert(128 * RP + 128 * NWG * RC <= 65536, "the register file holds both roles");
    /* the next tile found at the start of a tile (docs/journal/data/gpu_ab_v12_step14.csv): +2-3 %
     * at d = 64 on 128 x 128; on 192 x 128 ptxas then spills and at d = 128 it did not help */
    constexpr bool HOIST = D == 64 && NWG == 2;
    constexpr auto tl = v12_tiles<D, BR, BC, ST>();
    extern __shared__ __align__(1024) unsigned char fl_smem[];
    unsigned char *base = fl_smem + ((1024 - (fl_smem_u32(fl_smem) & 1023)) & 1023);
    T *Qs = FL_TILE(T, base, tl, 0); /* 2 stages x BR x D, 64-column sub-tiles */
    T *Ks = FL_TILE(T, base, tl, 1); /* ST stages x BC x D, sub-tiles */
    T *Vs = FL_TILE(T, base, tl, 2); /* ST stages x BC x D, sub-tiles */
    T *Os = FL_TILE(T, base, tl, 3); /* BR x D: each warp's 16 output rows */
    uint64_t *bar = FL_TILE(uint64_t, base, tl, 4);
    uint64_t *qfull = bar, *qempty = bar + 2, *kfull = bar + 4, *vfull = kfull + ST, *kempty = vfull + ST, *vempty = kempty + ST;
    static_assert(4 + 4 * ST <= 16, "the mbarriers fit their buffer");
    FlCount c;
    /* the warp index broadcast from lane 0, so that the compiler knows it (and all that follows from
     * it: roles, rows, descriptors, stages) to be uniform across the warp, and keeps it in the uniform
     * datapath (CUTLASS's canonical_warp_idx_sync) */
    const int warp = __shfl_sync(0xffffffffu, (int)threadIdx.x >> 5, 0), lane = threadIdx.x & 31, wg = warp >> 2;
    const v12_sched sch{FL_CDIV(N, BR), nbh, pair}; /* the tiles of this CTA, in order */

    if (threadIdx.x == 0) {
        for (int s = 0; s < 2; s++) {
            fl_mbar_init(qfull + s, 1);
            fl_mbar_init(qempty + s, NCW); /* every consumer warp */
        }
        for (int s = 0; s < ST; s++) {
            fl_mbar_init(kfull + s, 1);
            fl_mbar_init(vfull + s, 1);
            fl_mbar_init(kempty + s, NCW); /* K_j and V_j are released apart: K_j when S_j has landed */
            fl_mbar_init(vempty + s, NCW);
        }
        fl_mbar_init_fence();
    }
    __syncthreads();

    if (wg == 0) { /* the producer: one thread issues every copy */
        fl_setmaxnreg_dec<RP>();
        if (warp == 0) {
            if (lane == 0) {
                fl_ring<ST> r; /* the next K/V stage to fill */
                fl_ring<2> qr; /* the next Q stage to fill */
                for (int t = 0, bh, bx; sch.at(t, bh, bx); t++) {
                    if (bx < 0) continue;
                    const FlQueryBlock qb = fl_query_block_at<BR, BC>(bx, sch.nqb, N, Nk, causal, off);
                    if (qb.nkb == 0) continue;
                    fl_mbar_wait(qempty + qr.s, qr.ph ^ 1);
                    fl_mbar_expect_tx(qfull + qr.s, BR * D * sizeof(T));
#pragma unroll
                    for (int s = 0; s < D / BOX; s++) Qm.load(c, Qs + qr.s * BR * D + s * BR * BOX, qfull + qr.s, s * BOX, qb.r0, bh);
                    qr.next();
                    for (int j = 0; j < qb.nkb; j++, r.next()) {
                        const int st = r.s, ph = r.ph ^ 1;
                        fl_mbar_wait(kempty + st, ph);
                        fl_mbar_expect_tx(kfull + st, BC * D * sizeof(T));
#pragma unroll
                        for (int s = 0; s < D / BOX; s++) Km.load(c, Ks + st * BC * D + s * BC * BOX, kfull + st, s * BOX, j * BC, bh);
                        fl_mbar_wait(vempty + st, ph);
                        fl_mbar_expect_tx(vfull + st, BC * D * sizeof(T));
#pragma unroll
                        for (int s = 0; s < D / BOX; s++) Vm.load(c, Vs + st * BC * D + s * BC * BOX, vfull + st, s * BOX, j * BC, bh);
                    }
                }
            }
            fl_cnt_flush(c, g, (int)sizeof(T));
        }
        return;
    }

    fl_setmaxnreg_inc<RC>();
    const int cw = wg - 1, kw = warp & 3;   /* consumer warpgroup (rows cw*64..) and its warp */
    const int wrow = cw * 64 + kw * 16;     /* this warp's first row of the block */
    T *stage = Os + wrow * D;               /* this warp's output rows */
    float o[1][D / 8][4], mrow[1][2], lrow[1][2], alpha[1][2];
    float(&od)[D / 2] = *reinterpret_cast<float(*)[D / 2]>(&o[0][0][0]);
    float s[1][BC / 8][4];
    float(&sd)[BC / 2] = *reinterpret_cast<float(*)[BC / 2]>(&s[0][0][0]);
    unsigned p[BC / 16][4];
    /* ping-pong: the consumer warpgroups take turns, in a ring, to issue their products, named
     * barrier 1 + w being warpgroup w's turn; warpgroup 0 goes first */
    const auto my_turn = [&]() { fl_named_sync(1 + cw, 256); };
    const auto your_turn = [&]() { fl_named_arrive(1 + (cw + 1) % NWG, 256); };
    if (cw == NWG - 1) your_turn();
    /* the descriptors of this warpgroup's rows of Q_i and of the first stages of K and V; a stage's
     * are these advanced by whole stages */
    const uint64_t dq0 = fl_desc(Qs + fl_sub_off<BR>(cw * 64, 0)), dk0 = fl_desc(Ks), dv0 = fl_desc_mn(Vs, BC * 128);
    fl_ring<ST> kr, vr; /* the stages of the next K_j and V_j to read */
    fl_ring<2> qr;      /* the stage of the next Q_i */
    const auto release = [&](uint64_t *b) { /* this warp's reads of a stage (or of Q_i) are done */
        __syncwarp();
        if (lane == 0) fl_mbar_arrive(b);
    };
    /* K_j's, V_j's and Q_i's stages: wait until loaded, their descriptors, release after the last read */
    const auto kwait = [&]() { fl_mbar_wait(kfull + kr.s, kr.ph); };
    const auto vwait = [&]() { fl_mbar_wait(vfull + vr.s, vr.ph); };
    const auto qwait = [&]() { fl_mbar_wait(qfull + qr.s, qr.ph); };
    const auto dk = [&]() { return fl_desc_add<T>(dk0, kr.s * BC * D); };
    const auto dv = [&]() { return fl_desc_add<T>(dv0, vr.s * BC * D); };
    const auto dq = [&]() { return fl_desc_add<T>(dq0, qr.s * BR * D); };
    const auto krelease = [&]() { release(kempty + kr.s), kr.next(); };
    const auto vrelease = [&]() { release(vempty + vr.s), vr.next(); };
    const auto qrelease = [&]() { release(qempty + qr.s), qr.next(); };
    /* key blocks from jm on need the mask (fl_first_masked_block) */
    const auto mask = [&](int j, int r0, int jm) {
        if (j >= jm) fl_mask_frag<1, BC>(s, r0 + wrow, j * BC, Nk, causal, off);
    };
    const auto fresh = [&](float(&m)[1][2], float(&l)[1][2]) { m[0][0] = m[0][1] = -INFINITY, l[0][0] = l[0][1] = 0.f; };
    /* this warp's rows of the tile at (bh, r0) done: L and O from m, l and O */
    const auto finish = [&](const float(&o_)[1][D / 8][4], const float(&m)[1][2], const float(&l)[1][2], int bh, int r0) {
        float rs[1][2];
        fl_softmax_finish<1>(m, l, scale_log2, rs, L + (long)bh * N, r0 + wrow, N, c);
        v12_store_o<T, D>(o_, rs, stage, Om, r0 + wrow, bh, c);
    };
    /* The next tile of this CTA from t on that sees a key (its t, bh, query block).  A tile that sees
     * none (causal, Nk < N) gets O = 0 and L = -inf here, with no copy and no product, from zeros
     * of its own (o, m and l may hold the tile in flight). */
    const auto next_tile = [&](int &t, int &bh, FlQueryBlock &qb) {
        for (int bx; sch.at(t, bh, bx); t++) {
            if (bx < 0) continue;
            qb = fl_query_block_at<BR, BC>(bx, sch.nqb, N, Nk, causal, off);
            if (qb.nkb > 0) return true;
            float oz[1][D / 8][4], mz[1][2], lz[1][2];
            fl_zero(oz);
            fresh(mz, lz);
            finish(oz, mz, lz, bh, qb.r0);
        }
        return false;
    };

    int t = 0, bh;
    FlQueryBlock qb;
    bool have = next_tile(t, bh, qb);
    if (have) {
        /* The tiles of this CTA are one pipeline: each step issues S_j and P_{j-1} V_{j-1} together,
         * and the step after a tile's last S issues the next tile's S_0 with this tile's last
         * P V (its Q_i is in the other Q stage), so the softmax of S_0 runs while that product
         * does, and only the CTA's first S and last P V are issued alone. */
        fl_zero(o);
        fresh(mrow, lrow);
        qwait();
        kwait();
        my_turn();
        fl_wgmma_fence();
        v12_qk<T, D, BR, BC>(sd, dq(), dk());
        fl_wgmma_commit();
        your_turn();
        fl_wgmma_wait0();
        fl_reg_fence(sd);
        krelease();
        int jm = fl_first_masked_block<BC>(qb.r0 + wrow, Nk, causal, off);
        mask(0, qb.r0, jm);
        fl_softmax_p<1, BC>(s, mrow, lrow, scale_log2, alpha); /* O = 0: no rescale */
        fl_pack_afrag<T, BC>(s, p);
        while (have) {
            /* the next tile: with HOIST found while this one runs, so that its index arithmetic
             * is off the path from this tile's last product to the next tile's first */
            int t2 = t + 1, bh2 = 0, jm2 = 0;
            FlQueryBlock qb2{};
            bool have2 = false;
            const auto find_next = [&]() {
                have2 = next_tile(t2, bh2, qb2);
                jm2 = have2 ? fl_first_masked_block<BC>(qb2.r0 + wrow, Nk, causal, off) : 0;
            };
            if constexpr (HOIST) find_next();
            for (int j = 1; j < qb.nkb; j++) {
                kwait();     /* K_j */
                vwait();     /* V_{j-1} */
                my_turn();
                fl_wgmma_fence();
                v12_qk<T, D, BR, BC>(sd, dq(), dk());
                fl_wgmma_commit();
                v12_pv<T, D, BC>(od, p, dv());
                fl_wgmma_commit();
                your_turn();
                fl_wgmma_wait<1>(); /* S_j has landed; P_{j-1} V_{j-1} may still run */
                fl_reg_fence(sd);
                krelease();
                mask(j, qb.r0, jm);
                fl_softmax_p<1, BC>(s, mrow, lrow, scale_log2, alpha);
                fl_wgmma_wait0();
                fl_reg_fence(od);
                fl_rescale_o<1, D>(o, alpha);
                vrelease();
                fl_pack_afrag<T, BC>(s, p);
            }
            qrelease(); /* the last S of the tile has landed: its Q stage is free for the tile after next */
            if constexpr (!HOIST) find_next();
            vwait();
            if (have2) {
                float m2[1][2], l2[1][2];
                fresh(m2, l2);
                jm = jm2;
                qwait();
                kwait();
                my_turn();
                fl_wgmma_fence();
                v12_qk<T, D, BR, BC>(sd, dq(), dk()); /* the next tile's S_0 */
                fl_wgmma_commit();
                v12_pv<T, D, BC>(od, p, dv()); /* this tile's last P V */
                fl_wgmma_commit();
                your_turn();
                fl_wgmma_wait<1>();
                fl_reg_fence(sd);
                krelease();
                mask(0, qb2.r0, jm);
                fl_softmax_p<1, BC>(s, m2, l2, scale_log2, alpha); /* its O is 0: no rescale */
                fl_wgmma_wait0();
                fl_reg_fence(od);
                vrelease();
                finish(o, mrow, lrow, bh, qb.r0);
                fl_zero(o);
                mrow[0][0] = m2[0][0], mrow[0][1] = m2[0][1], lrow[0][0] = l2[0][0], lrow[0][1] = l2[0][1];
                fl_pack_afrag<T, BC>(s, p);
            } else { /* the CTA's last tile: its last P V alone */
                my_turn();
                fl_wgmma_fence();
                v12_pv<T, D, BC>(od, p, dv());
                fl_wgmma_commit();
                your_turn();
                fl_wgmma_wait0();
                fl_reg_fence(od);
                vrelease();
                finish(o, mrow, lrow, bh, qb.r0);
            }
            t = t2, bh = bh2, qb = qb2, have = have2;
        }
    }
    if (cw == 0) my_turn(); /* the last warpgroup's last hand-off, so that no arrival is left pending */
    if (lane == 0) fl_bulk_wait<0>(); /* this warp's copies of O are done with the stage */
    fl_cnt_flush(c, g, (int)sizeof(T));
#else
    fl_arch_missing();
#endif
}

template <class T, int D, int NWG, int BC, int ST> static void launch_ws_fwd(const fl_gpu_args *a)
{
    constexpr int BR = 64 * NWG;
    constexpr auto tl = v12_tiles<D, BR, BC, ST>();
    static_assert(tl.footprint() == fl_fp_eval(fl_fp_coef FL_FP_FLASH2_FWD, BR, BC, D), "the tiles are the model's (F2)");
    static_assert(tl.dyn_bytes() <= FL_SMEM_MAX, "warp-specialized forward tiles do not fit in shared memory");
    const int Nk = a->Nk ? a->Nk : a->N, nbh = a->nbh > 0 ? a->nbh : 1;
    const int off = a->causal == 2 ? Nk - a->N : 0;
    if ((long)Nk * D >= (1L << 31) || (long)a->N * D >= (1L << 31) || (long)FL_CDIV(a->N, BR) * nbh >= (1L << 31)) {
        fprintf(stderr, "flashlab-gpu: flash2 (v12): N * d must be below 2^31 per head, and the tiles fewer than 2^31\n");
        exit(2);
    }
    const fl_gtmap<const T, FL_T_Q> qm((const T *)a->Q, D, a->N, nbh, BR, "flash2 (v12): Q");
    const fl_gtmap<const T, FL_T_K> km((const T *)a->K, D, Nk, nbh, BC, "flash2 (v12): K");
    const fl_gtmap<const T, FL_T_V> vm((const T *)a->V, D, Nk, nbh, BC, "flash2 (v12): V");
    const fl_gtmap<T, FL_T_O> om((T *)a->O, D, a->N, nbh, 16, "flash2 (v12): O"); /* a warp's 16 rows */
    static int nsm = 0;
    const int pair = v12_pairs(a->causal);
    const long units = v12_sched{FL_CDIV(a->N, BR), nbh, pair}.units();
    if (!nsm) nsm = fl_sm_count();
    const int cap = a->ctas > 0 ? a->ctas : nsm; /* a persistent grid; validation asks for few CTAs */
    const dim3 grid((int)(units < cap ? units : cap));
    const float sl2 = 1.4426950408889634f / sqrtf((float)D);
    fl_launch(fl_ws_fwd<T, D, NWG, BC, ST>, tl.info("fl_ws_fwd"), grid, dim3(128 * (NWG + 1)), a->stream, a->log, qm, km, vm,
              om, a->L, nbh, a->N, Nk, a->causal, off, pair, sl2, a->cnt);
}

/* NWG consumer warpgroups (Br = 64 NWG query rows), Bc keys a block, ST stages of K_j and V_j */
#define K12(T, DT, D, NWG, BC, ST) \
    {&FL_FLASH2_FWD, 12, DT, DT, D, 64 * NWG, BC, v12_tiles<D, 64 * NWG, BC, ST>().footprint(), 1, launch_ws_fwd<T, D, NWG, BC, ST>, \
     (long)v12_tiles<D, 64 * NWG, BC, ST>().dyn_bytes(), 1}
#define K12_SET(T, DT) K12(T, DT, 64, 2, 128, 3), K12(T, DT, 64, 3, 128, 3), K12(T, DT, 128, 2, 128, 2)

static constexpr fl_kernel_info ws_fwd_table[] = {K12_SET(__half, FL_F16), K12_SET(__nv_bfloat16, FL_BF16)};

FL_LADDER_FILE(12, ws_fwd_table, FL_V_NEEDS)
