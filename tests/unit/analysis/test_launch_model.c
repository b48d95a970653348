/* test_launch_model.c: whole launches over batch x heads (launch_model.h).  The access walk
 * moves exactly what the two-level model's schedules count (fl_run, per tensor, all heads, the
 * causal mask, ragged tiles); what lock step, grid order, persistent grids, multicast and split-KV
 * change and what they leave alone; cases small enough to compute by hand; the input rules and
 * the `flashlab l2 --launch` command. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "quantity.h"
#include "cli_runner.h"
#include "l2_parts.h"
#include "launch_model.h"
#include "run.h"
#include "schedule.h"

static fl_launch_pred predict(const fl_launch *L, int64_t l2_bytes)
{
    fl_launch_pred p;
    cr_assert_eq(fl_launch_predict(L, l2_bytes, 32, &p), FL_OK, "%s", fl_last_error());
    return p;
}

static fl_result run(fl_algo a, int bwd, int64_t B, int64_t H, int64_t N, int64_t d, int64_t Br, int64_t Bc, int causal)
{
    fl_problem p = fl_problem_default();
    p.algo = a, p.N = N, p.d = d, p.Br = Br, p.Bc = Bc, p.batch = B, p.heads = H, p.elem_bytes = 2;
    p.M = fl_footprint_pass(a, bwd, 1, d, Br, Bc, d);
    p.pass = bwd ? FL_PASS_BWD : FL_PASS_FWD;
    p.causal = causal ? FL_CAUSAL_BOTTOM_RIGHT : FL_CAUSAL_NONE;
    fl_result r;
    cr_assert_eq(fl_run(&p, FL_COUNT, NULL, NULL, &r), FL_OK, "%s", fl_last_error());
    return r;
}

static int64_t tensor(const fl_result *r, const char *name, int writes)
{
    for (int i = 0; i < r->ntensors; i++)
        if (strcmp(r->t[i].name, name) == 0) return writes ? r->t[i].writes : r->t[i].reads;
    return 0;
}

/* flash2's forward under fl_run and the fwd-q launch: the same elements of Q, K, V, O, L */
Test(launch_model, fwd_q_equals_flash2_per_tensor)
{
    const int64_t Ns[] = {1, 100, 333, 1024}, bs[][2] = {{16, 16}, {32, 64}, {64, 32}, {128, 128}};
    for (int n = 0; n < 4; n++)
        for (int b = 0; b < 4; b++)
            for (int causal = 0; causal < 2; causal++) {
                const int64_t N = Ns[n], Br = fl_min64(bs[b][0], N), Bc = fl_min64(bs[b][1], N);
                fl_launch L = fl_launch_default(FL_LF_FWD_Q, 2, 3, N, 64, Br, Bc);
                L.causal = causal, L.ctas_per_sm = 2;
                const fl_launch_pred p = predict(&L, 1 << 20);
                const fl_result r = run(FL_ALGO_FLASH2, 0, 2, 3, N, 64, Br, Bc, causal);
                const char *names[] = {"Q", "K", "V"};
                const fl_launch_tensor ts[] = {FL_LT_Q, FL_LT_K, FL_LT_V};
                for (int t = 0; t < 3; t++)
                    cr_assert_eq(p.reads[ts[t]], tensor(&r, names[t], 0), "N=%ld %ldx%ld causal=%d: %s reads %ld vs %ld",
                                 (long)N, (long)Br, (long)Bc, causal, names[t], (long)p.reads[ts[t]],
                                 (long)tensor(&r, names[t], 0));
                cr_assert_eq(p.writes[FL_LT_O], tensor(&r, "O", 1));
                cr_assert_eq(p.writes[FL_LT_L], tensor(&r, "L", 1));
                cr_assert_eq(p.reads[FL_LT_Q] + p.reads[FL_LT_K] + p.reads[FL_LT_V], r.reads);
            }
}

/* flash2's backward under fl_run = the pre kernel (zeroing dQ) + the bwd-kv launch (dQ read and
 * written per pair in fp32), tensor by tensor */
Test(launch_model, pre_plus_bwd_kv_equals_flash2_backward)
{
    const int64_t Ns[] = {64, 200, 512}, bs[][2] = {{16, 16}, {32, 64}, {64, 32}};
    for (int n = 0; n < 3; n++)
        for (int b = 0; b < 3; b++)
            for (int causal = 0; causal < 2; causal++) {
                const int64_t N = Ns[n], Br = bs[b][0], Bc = bs[b][1];
                fl_launch pre = fl_launch_default(FL_LF_PRE, 1, 2, N, 32, Br, Bc), kv = pre;
                pre.zero_dq = 1;
                kv.family = FL_LF_BWD_KV, kv.causal = causal;
                const fl_launch_pred a = predict(&pre, 1 << 20), k = predict(&kv, 1 << 20);
                const fl_result r = run(FL_ALGO_FLASH2, 1, 1, 2, N, 32, Br, Bc, causal);
                struct { const char *name; fl_launch_tensor t; } m[] = {
                    {"Q", FL_LT_Q}, {"K", FL_LT_K}, {"V", FL_LT_V}, {"O", FL_LT_O}, {"dO", FL_LT_dO}, {"L", FL_LT_L},
                    {"D", FL_LT_D}, {"dQ", FL_LT_dQacc}, {"dK", FL_LT_dK}, {"dV", FL_LT_dV}};
                for (int i = 0; i < 10; i++) {
                    cr_assert_eq(a.reads[m[i].t] + k.reads[m[i].t], tensor(&r, m[i].name, 0),
                                 "N=%ld %ldx%ld causal=%d: %s reads %ld vs fl_run %ld", (long)N, (long)Br, (long)Bc,
                                 causal, m[i].name, (long)(a.reads[m[i].t] + k.reads[m[i].t]),
                                 (long)tensor(&r, m[i].name, 0));
                    cr_assert_eq(a.writes[m[i].t] + k.writes[m[i].t], tensor(&r, m[i].name, 1), "%s writes",
                                 m[i].name);
                }
            }
}

/* B = 1, H = 1, N = 256, d = 64, fp16: Q, K, V are 32 KiB each (1024 sectors).  fwd-q with
 * 64 x 64 tiles: 4 CTAs in one wave read Q once and K, V four times each. */
Test(launch_model, one_head_by_hand)
{
    fl_launch L = fl_launch_default(FL_LF_FWD_Q, 1, 1, 256, 64, 64, 64);
    L.ctas_per_sm = 1;
    fl_launch_pred p = predict(&L, 60 << 20);
    cr_assert_eq(p.ctas, 4);
    cr_assert_eq(p.waves, 1);
    cr_assert_eq(p.sm_read_B, (1 + 4 + 4) * 32768);
    cr_assert_eq(p.dram_read_B, 3 * 32768); /* lock step: K_j, V_j miss for the first CTA only */
    cr_assert_eq(p.sm_write_B, 32768 + 256 * 4);
    /* fwd-qkv re-reads Q_i for every key tile: 16 pairs x 8 KiB more */
    L.family = FL_LF_FWD_QKV;
    p = predict(&L, 60 << 20);
    cr_assert_eq(p.sm_read_B, (4 + 4 + 4) * 32768);
    cr_assert_eq(p.dram_read_B, 3 * 32768);
}

/* The grid order and the waves decide the DRAM bytes, not the SM<-L2 bytes: with an L2 that holds
 * one head's K and V and its tiles but not eight heads' K and V, the tile-fastest grid reads each
 * head's K and V from DRAM once,
 * the head-fastest grid, which interleaves the heads, cannot keep them. */
Test(launch_model, grid_order_changes_dram_not_sm_bytes)
{
    fl_launch L = fl_launch_default(FL_LF_FWD_Q, 1, 8, 512, 64, 64, 64); /* K + V of a head: 128 KiB */
    L.sms = 2, L.ctas_per_sm = 2;                                          /* waves of 4 CTAs */
    const fl_launch_pred tile = predict(&L, 384 << 10);
    L.order = FL_GO_HEAD_FASTEST;
    const fl_launch_pred head = predict(&L, 384 << 10);
    cr_assert_eq(tile.sm_read_B, head.sm_read_B);
    const int64_t T = 8 * 512 * 64 * 2;
    cr_assert_eq(tile.dram_read_B, 3 * T, "tile-fastest: %ld", (long)tile.dram_read_B);
    cr_assert_gt(head.dram_read_B, 3 * T, "head-fastest: %ld", (long)head.dram_read_B);
}

/* A persistent grid of P CTAs runs the same work items: same elements and SM<-L2 bytes */
Test(launch_model, persistent_grid_moves_the_same_elements)
{
    fl_launch L = fl_launch_default(FL_LF_FWD_Q, 2, 4, 300, 64, 64, 32);
    L.causal = 1;
    const fl_launch_pred one = predict(&L, 1 << 20);
    L.persistent = 7;
    const fl_launch_pred per = predict(&L, 1 << 20);
    cr_assert_eq(per.ctas, 7);
    cr_assert_eq(per.items, one.items);
    cr_assert_eq(per.sm_read_B, one.sm_read_B);
    for (int t = 0; t < FL_LT_COUNT; t++) cr_assert_eq(per.reads[t], one.reads[t]);
    L.persistent = 1000; /* more CTAs than items: one item each */
    cr_assert_eq(predict(&L, 1 << 20).ctas, one.items);
}

/* Multicast: a cluster of C query tiles reads K_j, V_j from L2 once; the SMs still receive them */
Test(launch_model, cluster_multicast_divides_kv_lookups)
{
    fl_launch L = fl_launch_default(FL_LF_FWD_Q, 1, 2, 512, 64, 64, 64);
    const fl_launch_pred one = predict(&L, 60 << 20);
    L.cluster = 2;
    const fl_launch_pred two = predict(&L, 60 << 20);
    const int64_t T = 2 * 512 * 64 * 2, kv = 2 * 8 * T; /* K and V, 8 query tiles each */
    cr_assert_eq(two.sm_read_B, one.sm_read_B);
    cr_assert_eq(one.l2_read_B, T + kv);
    cr_assert_eq(two.l2_read_B, T + kv / 2);
    cr_assert_eq(two.reads[FL_LT_K], one.reads[FL_LT_K]);
    L.cluster = 3; /* 8 tiles: clusters of 3, 3, 2 */
    cr_assert_eq(predict(&L, 60 << 20).l2_read_B, T + kv * 3 / 8);
}

/* Split-KV: each split reads its share of K and V, Q once per split, and writes fp32 partials;
 * the combine kernel reads them back */
Test(launch_model, split_kv_partials)
{
    fl_launch L = fl_launch_default(FL_LF_FWD_Q, 1, 1, 1024, 64, 128, 128);
    const fl_launch_pred one = predict(&L, 60 << 20);
    L.splits = 4;
    const fl_launch_pred four = predict(&L, 60 << 20);
    cr_assert_eq(four.items, 4 * one.items);
    cr_assert_eq(four.reads[FL_LT_K], one.reads[FL_LT_K]);
    cr_assert_eq(four.reads[FL_LT_Q], 4 * one.reads[FL_LT_Q]);
    cr_assert_eq(four.writes[FL_LT_Opart], 4 * 1024 * 64);
    cr_assert_eq(four.writes[FL_LT_O], 0);
    L.family = FL_LF_COMBINE;
    const fl_launch_pred c = predict(&L, 60 << 20);
    cr_assert_eq(c.reads[FL_LT_Opart], 4 * 1024 * 64);
    cr_assert_eq(c.writes[FL_LT_O], 1024 * 64);
}

/* Atomic dQ: the reductions are no SM read; the first touch of each sector still reads DRAM */
Test(launch_model, atomic_dq_reduces_in_l2)
{
    fl_launch L = fl_launch_default(FL_LF_BWD_KV, 1, 1, 256, 64, 64, 64);
    const fl_launch_pred plain = predict(&L, 60 << 20);
    L.atomic_dq = 1;
    const fl_launch_pred atom = predict(&L, 60 << 20);
    const int64_t acc = 256 * 64 * 4; /* the fp32 accumulator */
    cr_assert_eq(plain.sm_read_B - atom.sm_read_B, 4 * acc);
    cr_assert_eq(atom.red_B, 4 * acc);
    cr_assert_eq(atom.dram_read_B, plain.dram_read_B);
    cr_assert_eq(atom.writes[FL_LT_dQacc], plain.writes[FL_LT_dQacc]);
}

/* Triton's two-pass backward: both passes' tiles, by hand (one head, N = 256, d = 64,
 * BLOCK_M1 = 32, BLOCK_N1 = 128, BLOCK_M2 = 128, BLOCK_N2 = 32) */
Test(launch_model, twopass_by_hand)
{
    fl_launch L = fl_launch_default(FL_LF_BWD_TWOPASS, 1, 1, 256, 64, 32, 128);
    L.Br2 = 128, L.Bc2 = 32;
    fl_launch_pred p = predict(&L, 60 << 20);
    cr_assert_eq(p.ctas, 2);
    /* per program: K, V tile (128 rows each), all 256 rows of Q, dO (L, D too), the dQ tile's
     * Q, dO (128 rows) and all 256 rows of K, V */
    cr_assert_eq(p.reads[FL_LT_Q], 2 * (256 + 128) * 64);
    cr_assert_eq(p.reads[FL_LT_K], 2 * (128 + 256) * 64);
    cr_assert_eq(p.reads[FL_LT_L], 2 * (256 + 128));
    cr_assert_eq(p.writes[FL_LT_dQ], 256 * 64);
    L.causal = 1; /* program 0: rows 0..255 for dK dV, keys 0..127 for dQ; program 1: rows 128..255, keys 0..255 */
    p = predict(&L, 60 << 20);
    cr_assert_eq(p.reads[FL_LT_Q], (256 + 128 + 128 + 128) * 64);
    cr_assert_eq(p.reads[FL_LT_K], (128 + 128 + 128 + 256) * 64);
}

/* Two L2 partitions by hand (l2_parts.h): one head, N = 256, d = 64, 64x64 tiles of 8 KiB (two
 * 4 KiB pages, one homed in each partition), 4 CTAs on SMs 0-3, sides 0, 1, 0, 1.  Each K_j, V_j
 * is read by all four in lock step: the first (side 0) fetches the half homed in partition 1 over
 * the fabric, the second (side 1) the half homed in 0, the others hit their copies: 8 KiB of
 * fabric for each of the 8 tiles.  Q_i (read) and O_i (written) by one CTA each: the far half,
 * 4 KiB each of 8 tiles.  L (fp32, 256 B a tile) lies in one page, homed in 1 (page 2048 at
 * 8 MiB): the CTAs on side 0 write theirs over the fabric, 2 x 256 B.  DRAM as with one LRU. */
Test(launch_model, two_partitions_by_hand)
{
    fl_launch L = fl_launch_default(FL_LF_FWD_Q, 1, 1, 256, 64, 64, 64);
    cr_assert_eq(L.l2_parts, 2);
    const fl_launch_pred two = predict(&L, 60 << 20);
    cr_assert_eq(two.fabric_B, 8 * 8192 + 8 * 4096 + 2 * 256);
    L.l2_parts = 1;
    const fl_launch_pred one = predict(&L, 60 << 20);
    cr_assert_eq(one.fabric_B, 0);
    cr_assert_eq(two.dram_read_B, one.dram_read_B);
    cr_assert_eq(two.sm_read_B, one.sm_read_B);
}

/* What two partitions change: a backward whose query side of one head (Q, dO 128 KiB each, the
 * fp32 dQ accumulator 256 KiB, L and D 8 KiB: 520 KiB) fits a 1 MiB L2 but not its 512 KiB half.
 * Waves of 8 CTAs cover half a head's 16 key tiles; with one LRU the second wave finds the head's
 * tiles and DRAM reads each byte once, with two partitions it reads them again. */
Test(launch_model, two_partitions_halve_what_every_sm_reads)
{
    fl_launch L = fl_launch_default(FL_LF_BWD_KV, 1, 4, 1024, 64, 64, 64);
    L.sms = 8, L.atomic_dq = 1;
    const int64_t once = 4 * 4 * 1024 * 64 * 2 + 4 * 1024 * 64 * 4 + 2 * 4 * 1024 * 4; /* Q dO K V, dQacc, L D */
    L.l2_parts = 1;
    cr_assert_eq(predict(&L, 1 << 20).dram_read_B, once);
    L.l2_parts = 2;
    const fl_launch_pred two = predict(&L, 1 << 20);
    cr_assert_gt(two.dram_read_B, once * 3 / 2, "%ld", (long)two.dram_read_B);
    cr_assert_eq(predict(&L, 2 << 20).dram_read_B, once); /* twice the L2: kept again */
}

/* The walk skips repeats (a tile read CTA after CTA); the counts must be those of playing every
 * access.  Here every access of fwd-q and of bwd-kv (dQ reduced, or read and written) is played
 * on fl_l2p directly,
 * by rule G2 (slots in lock step, each taking the next work item when it finishes) and compared:
 * several heads, ragged tiles, causal or not, a small L2 that evicts, two partitions. */
typedef struct { int t, kind; int64_t bh, r0, nr; } acc_t;

static int item_list(fl_launch_family f, int64_t it, int64_t N, int64_t Br, int64_t Bc, int causal, int atomic,
                     acc_t *a)
{
    const int64_t Tr = (N + Br - 1) / Br, Tc = (N + Bc - 1) / Bc;
    int m = 0;
    if (f == FL_LF_FWD_Q) {
        const int64_t bh = it / Tr, q0 = it % Tr * Br, nq = q0 + Br > N ? N - q0 : Br, kend = causal ? q0 + nq : N;
        a[m++] = (acc_t){FL_LT_Q, 0, bh, q0, nq};
        for (int64_t j = 0; j < Tc && j * Bc < kend; j++) {
            const int64_t nk = j * Bc + Bc > N ? N - j * Bc : Bc;
            a[m++] = (acc_t){FL_LT_K, 0, bh, j * Bc, nk};
            a[m++] = (acc_t){FL_LT_V, 0, bh, j * Bc, nk};
        }
        a[m++] = (acc_t){FL_LT_O, 1, bh, q0, nq};
        a[m++] = (acc_t){FL_LT_L, 1, bh, q0, nq};
    } else {
        const int64_t bh = it / Tc, k0 = it % Tc * Bc, nk = k0 + Bc > N ? N - k0 : Bc;
        a[m++] = (acc_t){FL_LT_K, 0, bh, k0, nk};
        a[m++] = (acc_t){FL_LT_V, 0, bh, k0, nk};
        for (int64_t i = causal ? k0 / Br : 0; i < Tr; i++) {
            const int64_t q0 = i * Br, nq = q0 + Br > N ? N - q0 : Br;
            a[m++] = (acc_t){FL_LT_Q, 0, bh, q0, nq};
            a[m++] = (acc_t){FL_LT_dO, 0, bh, q0, nq};
            a[m++] = (acc_t){FL_LT_L, 0, bh, q0, nq};
            a[m++] = (acc_t){FL_LT_D, 0, bh, q0, nq};
            if (atomic) a[m++] = (acc_t){FL_LT_dQacc, 2, bh, q0, nq};
            else {
                a[m++] = (acc_t){FL_LT_dQacc, 0, bh, q0, nq};
                a[m++] = (acc_t){FL_LT_dQacc, 1, bh, q0, nq};
            }
        }
        a[m++] = (acc_t){FL_LT_dK, 1, bh, k0, nk};
        a[m++] = (acc_t){FL_LT_dV, 1, bh, k0, nk};
    }
    return m;
}

/* Tensor bases as launch_model.c lays them out: enum order, 2 MiB aligned, BH heads of N rows. */
typedef struct {
    uint64_t base[FL_LT_COUNT];
    int64_t cols[FL_LT_COUNT], eb[FL_LT_COUNT], N;
} layout_t;

static layout_t layout_of(int64_t BH, int64_t N, int64_t d)
{
    const int64_t eb[FL_LT_COUNT] = {2, 2, 2, 2, 4, 2, 4, 4, 2, 2, 2, 4, 4};
    const int64_t cols[FL_LT_COUNT] = {d, d, d, d, 1, d, 1, d, d, d, d, d, 1};
    layout_t y = {.N = N};
    uint64_t at = 0;
    for (int t = 0; t < FL_LT_COUNT; t++) {
        y.base[t] = at, y.cols[t] = cols[t], y.eb[t] = eb[t];
        at += ((uint64_t)(BH * N * cols[t] * eb[t]) + (1u << 21) - 1) & ~(uint64_t)((1u << 21) - 1);
    }
    return y;
}

/* Plays access x on the L2 c from the given side. */
static void play(fl_l2p *c, const layout_t *y, int side, const acc_t *x)
{
    const uint64_t addr = y->base[x->t] + (uint64_t)((x->bh * y->N + x->r0) * y->cols[x->t] * y->eb[x->t]);
    fl_l2p_access(c, side, addr, x->nr * y->cols[x->t] * y->eb[x->t], x->kind);
}

/* The launch model's L2 counts equal those of the accesses played on c; what names the case. */
static void same_l2(const fl_launch_pred *p, fl_l2p *c, const char *what)
{
    const fl_l2p_stats st = fl_l2p_get_stats(c);
    cr_assert_eq(p->dram_read_B, st.dram_reads * 32, "%s: %ld vs %ld", what, (long)p->dram_read_B, (long)(st.dram_reads * 32));
    cr_assert_eq(p->fabric_B, st.fabric * 32, "%s: fabric %ld vs %ld", what, (long)p->fabric_B, (long)(st.fabric * 32));
    cr_assert_eq(p->writeback_B, st.writebacks * 32, "%s: writebacks", what);
    cr_assert(p->read_miss_B == st.read_misses * 32 && p->fabric_read_miss_B == st.fabric_read_misses * 32 &&
                  p->red_miss_B == st.reduce_misses * 32,
              "%s: lookups that missed %ld %ld %ld vs %ld %ld %ld", what, (long)p->read_miss_B, (long)p->fabric_read_miss_B,
              (long)p->red_miss_B, (long)st.read_misses * 32, (long)st.fabric_read_misses * 32,
              (long)st.reduce_misses * 32);
}

static void replay(fl_launch_family f, int causal, int atomic, int64_t l2_bytes)
{
    const int64_t B = 1, H = 3, N = 200, d = 64, Br = 64, Bc = 32, sms = 3;
    fl_launch L = fl_launch_default(f, B, H, N, d, Br, Bc);
    L.sms = sms, L.atomic_dq = atomic, L.causal = causal;
    const fl_launch_pred p = predict(&L, l2_bytes);
    const layout_t y = layout_of(B * H, N, d);
    fl_l2p *c;
    cr_assert_eq(fl_l2p_alloc(l2_bytes, 32, 2, &c), FL_OK);
    const int64_t items = B * H * (f == FL_LF_FWD_Q ? (N + Br - 1) / Br : (N + Bc - 1) / Bc);
    acc_t a[3][80];
    int n[3], pos[3] = {0, 0, 0};
    int64_t next = 0, active = 0;
    for (int k = 0; k < sms; k++, active++) n[k] = item_list(f, next++, N, Br, Bc, causal, atomic, a[k]);
    while (active > 0)
        for (int k = 0; k < sms; k++) {
            if (pos[k] >= n[k]) continue;
            play(c, &y, k % 2, &a[k][pos[k]++]);
            if (pos[k] < n[k]) continue;
            pos[k] = 0;
            if (next < items) n[k] = item_list(f, next++, N, Br, Bc, causal, atomic, a[k]);
            else n[k] = 0, active--;
        }
    char what[64];
    snprintf(what, sizeof what, "%s causal=%d atomic=%d", fl_launch_family_name(f), causal, atomic);
    same_l2(&p, c, what);
    fl_l2p_free(c);
}

Test(launch_model, skipped_repeats_change_nothing)
{
    for (int64_t kib = 64; kib <= 1024; kib *= 4)
        for (int causal = 0; causal < 2; causal++) {
            replay(FL_LF_FWD_Q, causal, 0, kib << 10);
            replay(FL_LF_BWD_KV, causal, 1, kib << 10);
            replay(FL_LF_BWD_KV, causal, 0, kib << 10); /* dQ read, then written, CTA after CTA */
        }
}

/* Version 12's causal orders played by hand, on fl_l2p directly: a head's query tiles from the last
 * (longest_first), or work items that are the tiles at positions p and Tr - 1 - p of a head, the
 * longest first (pairs; Tr odd leaves the middle tile alone), taken by P persistent slots either
 * statically (slot k: items k, k + P, ...) or each the next item when its own ends. */
static int fwd_causal_tile(int64_t bh, int64_t t, int64_t N, int64_t Br, int64_t Bc, acc_t *a)
{
    const int64_t q0 = t * Br, nq = q0 + Br > N ? N - q0 : Br;
    int m = 0;
    a[m++] = (acc_t){FL_LT_Q, 0, bh, q0, nq};
    for (int64_t k0 = 0; k0 < q0 + nq; k0 += Bc) {
        a[m++] = (acc_t){FL_LT_K, 0, bh, k0, k0 + Bc > N ? N - k0 : Bc};
        a[m++] = (acc_t){FL_LT_V, 0, bh, k0, k0 + Bc > N ? N - k0 : Bc};
    }
    a[m++] = (acc_t){FL_LT_O, 1, bh, q0, nq};
    a[m++] = (acc_t){FL_LT_L, 1, bh, q0, nq};
    return m;
}

static fl_launch_pred replay_order(int longest, int pairs, int stat, int64_t P, int64_t l2_bytes)
{
    const int64_t H = 3, N = 300, d = 64, Br = 64, Bc = 32, sms = 3, Tr = (N + Br - 1) / Br, np = (Tr + 1) / 2;
    fl_launch L = fl_launch_default(FL_LF_FWD_Q, 1, H, N, d, Br, Bc);
    L.sms = sms, L.causal = 1, L.longest_first = longest, L.pairs = pairs, L.static_rr = stat, L.persistent = P;
    const fl_launch_pred p = predict(&L, l2_bytes);
    const layout_t y = layout_of(H, N, d);
    fl_l2p *c;
    cr_assert_eq(fl_l2p_alloc(l2_bytes, 32, 2, &c), FL_OK);
    const int64_t items = H * (pairs ? np : Tr), slots = P > 0 ? (P < items ? P : items) : sms;
    acc_t a[8][128];
    int n[8], pos[8] = {0};
    int64_t next[8], shared = 0, active = 0;
    cr_assert_leq(slots, 8);
    for (int k = 0; k < slots; k++) next[k] = k;
    /* the accesses of item it: one tile, or a pair */
#define ITEM(k, it)                                                                                               \
    do {                                                                                                          \
        const int64_t it_ = (it);                                                                                 \
        if (pairs) {                                                                                              \
            const int64_t bh = it_ / np, q = it_ % np;                                                            \
            n[k] = fwd_causal_tile(bh, Tr - 1 - q, N, Br, Bc, a[k]);                                              \
            if (Tr - 1 - q != q) n[k] += fwd_causal_tile(bh, q, N, Br, Bc, a[k] + n[k]);                           \
        } else n[k] = fwd_causal_tile(it_ / Tr, longest ? Tr - 1 - it_ % Tr : it_ % Tr, N, Br, Bc, a[k]);        \
    } while (0)
    for (int k = 0; k < slots; k++, active++) {
        const int64_t it = stat ? next[k] : shared++;
        next[k] += slots;
        ITEM(k, it);
    }
    while (active > 0)
        for (int k = 0; k < slots; k++) {
            if (pos[k] >= n[k]) continue;
            play(c, &y, (int)(k % sms % 2), &a[k][pos[k]++]);
            if (pos[k] < n[k]) continue;
            pos[k] = 0;
            const int64_t it = stat ? next[k] : shared;
            if (it < items) {
                if (stat) next[k] += slots;
                else shared++;
                ITEM(k, it);
            } else n[k] = 0, active--;
        }
#undef ITEM
    cr_assert_eq(p.items, items);
    char what[64];
    snprintf(what, sizeof what, "longest %d pairs %d static %d P %ld", longest, pairs, stat, (long)P);
    same_l2(&p, c, what);
    fl_l2p_free(c);
    return p;
}

Test(launch_model, version12_orders_by_hand)
{
    int differ = 0;
    for (int64_t kib = 16; kib <= 1024; kib *= 4) {
        fl_launch L = fl_launch_default(FL_LF_FWD_Q, 1, 3, 300, 64, 64, 32);
        L.sms = 3, L.causal = 1;
        const fl_launch_pred plain = predict(&L, kib << 10);
        const fl_launch_pred o[] = {replay_order(1, 0, 0, 0, kib << 10), replay_order(1, 0, 1, 2, kib << 10),
                                    replay_order(0, 1, 0, 0, kib << 10), replay_order(0, 1, 1, 2, kib << 10),
                                    replay_order(0, 1, 0, 2, kib << 10), replay_order(0, 1, 1, 8, kib << 10)};
        for (size_t i = 0; i < sizeof o / sizeof *o; i++) { /* an order changes the L2's work, not the bytes */
            cr_assert_eq(o[i].sm_read_B, plain.sm_read_B);
            cr_assert_eq(o[i].sm_write_B, plain.sm_write_B);
            for (int t = 0; t < FL_LT_COUNT; t++) cr_assert_eq(o[i].reads[t], plain.reads[t]);
            differ += o[i].dram_read_B != plain.dram_read_B || o[i].fabric_B != plain.fabric_B;
        }
    }
    cr_assert_gt(differ, 0, "no order changed what the L2 did: the orders are not exercised");
}

/* The three order options refuse what they do not apply to */
/* fl_launch_predict refuses L with FL_EINVAL naming the option opt. */
static void refuses(const fl_launch *L, const char *opt)
{
    fl_launch_pred p;
    cr_assert_eq(fl_launch_predict(L, 1 << 20, 32, &p), FL_EINVAL, "%s: not refused", opt);
    cr_assert(fl_test_names(opt), "%s: the message does not name it: %s", opt, fl_last_error());
}

Test(launch_model, order_options_refuse)
{
    fl_launch L = fl_launch_default(FL_LF_FWD_Q, 1, 1, 256, 64, 64, 64);
    L.pairs = 1; /* no mask: tiles of one length */
    refuses(&L, "--pairs");
    L.causal = 1, L.splits = 2;
    refuses(&L, "--pairs");
    L = fl_launch_default(FL_LF_BWD_KV, 1, 1, 256, 64, 64, 64);
    L.causal = 1, L.longest_first = 1;
    refuses(&L, "--longest-first");
    L = fl_launch_default(FL_LF_FWD_Q, 1, 1, 256, 64, 64, 64);
    L.static_rr = 1; /* not persistent */
    refuses(&L, "--static");
    L.persistent = 2; /* equal items: the static round robin is the block scheduler's order */
    const fl_launch_pred s = predict(&L, 64 << 10);
    L.static_rr = 0;
    const fl_launch_pred dyn = predict(&L, 64 << 10);
    cr_assert(s.dram_read_B == dyn.dram_read_B && s.fabric_B == dyn.fabric_B && s.writeback_B == dyn.writeback_B);
}

/* Rule G2: a slot whose work item ends early takes the next one; causal work items differ in
 * length, so the order in which tiles are read differs from waves that wait for their longest
 * CTA, but not what is read.  A persistent grid of P CTAs takes the items the same way. */
Test(launch_model, slots_take_the_next_item)
{
    fl_launch L = fl_launch_default(FL_LF_BWD_KV, 1, 2, 512, 64, 64, 64);
    L.causal = 1, L.sms = 4, L.atomic_dq = 1;
    const fl_launch_pred grid = predict(&L, 1 << 20);
    L.persistent = 4;
    const fl_launch_pred per = predict(&L, 1 << 20);
    cr_assert_eq(per.ctas, 4);
    cr_assert_eq(grid.ctas, 16);
    cr_assert_eq(per.sm_read_B, grid.sm_read_B);
    cr_assert_eq(per.dram_read_B, grid.dram_read_B); /* 4 slots either way: the same walk */
    cr_assert_eq(per.fabric_B, grid.fabric_B);
}

/* CUTLASS's backward (bwd-memeff) by hand: one head, N = 256, d = 64, 64x64 tiles (8 KiB; the
 * fp32 dQ accumulator tile 16 KiB), 4 CTAs.  Each CTA: D for all rows (O and dO, 64 KiB read,
 * D 1 KiB written), K_j once (d <= 64 keeps it), and per pair Q_i and dO_i twice, V_j, K_j (dQ),
 * L_i, D_i (256 B each) and the accumulator: 64.5 KiB; dK_j, dV_j written.  Each query tile is fed
 * by 4 key tiles: 3 write the accumulator, the last dQ (8 KiB). */
Test(launch_model, memeff_backward_by_hand)
{
    fl_launch L = fl_launch_default(FL_LF_BWD_MEMEFF, 1, 1, 256, 64, 64, 64);
    fl_launch_pred p = predict(&L, 60 << 20);
    cr_assert_eq(p.ctas, 4);
    cr_assert_eq(p.sm_read_B, 4 * (65536 + 8192 + 4 * 66048));
    cr_assert_eq(p.sm_write_B, 4 * (1024 + 16384) + 4 * (3 * 16384 + 8192));
    cr_assert_eq(p.writes[FL_LT_dQ], 256 * 64);
    cr_assert_eq(p.reads[FL_LT_O], 4 * 256 * 64);
    cr_assert_eq(p.reads[FL_LT_K], 4 * 64 * 64 + 16 * 64 * 64);
    L.d = 128; /* d > 64: K_j streamed again for S = Q K^T in every pair */
    p = predict(&L, 60 << 20);
    cr_assert_eq(p.reads[FL_LT_K], 2 * 16 * 64 * 128);
    L.d = 64, L.causal = 1; /* CTA j visits query tiles i >= j: 4 + 3 + 2 + 1 pairs */
    p = predict(&L, 60 << 20);
    cr_assert_eq(p.reads[FL_LT_V], 10 * 64 * 64);
    cr_assert_eq(p.writes[FL_LT_dQ], 256 * 64);          /* every query tile's last key tile writes dQ */
    cr_assert_eq(p.writes[FL_LT_dQacc], (10 - 4) * 64 * 64);
}

Test(launch_model, input_rules_name_the_option)
{
    fl_launch L = fl_launch_default(FL_LF_FWD_Q, 1, 1, 64, 64, 128, 64);
    refuses(&L, "--Br/--Bc");
    L = fl_launch_default(FL_LF_FWD_Q, 1, 1, 64, 64, 32, 32);
    L.causal = 1, L.cluster = 2;
    refuses(&L, "--cluster");
    L = fl_launch_default(FL_LF_BWD_KV, 1, 1, 64, 64, 32, 32);
    L.splits = 2;
    refuses(&L, "--splits");
    L = fl_launch_default(FL_LF_BWD_TWOPASS, 1, 1, 256, 64, 48, 128);
    refuses(&L, "bwd-twopass");
    L = fl_launch_default(FL_LF_FWD_Q, 1, 1, 64, 64, 32, 32);
    L.ctas_per_sm = 0;
    refuses(&L, "--ctas-per-sm");
    L = fl_launch_default(FL_LF_FWD_Q, 1, 1, 64, 64, 32, 32);
    L.l2_parts = 4;
    refuses(&L, "--l2-partitions");
    fl_launch_family f;
    cr_assert_eq(fl_launch_family_parse("fwd-qq", &f), FL_EINVAL);
    cr_assert(strstr(fl_last_error_raw(), "{launch}"));
    cr_assert_eq(fl_launch_family_parse("bwd-twopass", &f), FL_OK);
    cr_assert_eq(f, FL_LF_BWD_TWOPASS);
}

Test(launch_model, cli_prints_and_refuses)
{
    const char *ok[] = {"l2", "--launch", "fwd-q", "--batch", "1", "--heads", "1", "--N", "256", "--d", "64", "--Br",
                        "64", "--Bc", "64", "--format", "csv", NULL};
    cli_result *r = cli_run(ok);
    cr_assert_eq(r->status, 0, "%s", r->err);
    /* the fabric_B column: launch_model.two_partitions_by_hand */
    cr_assert(strstr(r->out, "fwd-q,1,1,256,64,64,64,0,4,4,1,294912,294912,33792,0,98304,98816,0"), "%s", r->out);
    free(r);
    const char *order[] = {"l2", "--launch", "fwd-q", "--N", "256", "--d", "64", "--Br", "64", "--Bc", "64", "--order",
                           "sideways", NULL};
    r = cli_run(order);
    cr_assert_eq(r->status, 2);
    cr_assert(strstr(r->err, "--order"), "%s", r->err);
    free(r);
    const char *missing[] = {"l2", "--launch", "fwd-q", "--N", "256", "--d", "64", "--Br", "64", NULL};
    r = cli_run(missing);
    cr_assert_eq(r->status, 2);
    cr_assert(strstr(r->err, "--Bc"), "%s", r->err);
    free(r);
}

/* GQA: the query heads of a group read the K and V tiles of one K/V head.  Each query head's CTAs
 * still read them (the same elements and SM<-L2 bytes), but with an L2 that holds them DRAM reads
 * K and V once per K/V head: Q + (K + V) x kv_heads / heads.  dK and dV are written per query head. */
Test(launch_model, gqa_reads_each_kv_head_once)
{
    const int64_t T = 2 * 8 * 1024 * 64 * 2; /* the bytes of Q over 2 x 8 query heads */
    for (int bwd = 0; bwd < 2; bwd++) {
        fl_launch L = fl_launch_default(bwd ? FL_LF_BWD_KV : FL_LF_FWD_Q, 2, 8, 1024, 64, 64, 64);
        L.atomic_dq = bwd;
        const fl_launch_pred mha = predict(&L, 60 << 20);
        L.kv_heads = 8; /* one per query head: the same launch */
        const fl_launch_pred same = predict(&L, 60 << 20);
        cr_assert_eq(same.dram_read_B, mha.dram_read_B);
        L.kv_heads = 2;
        const fl_launch_pred gqa = predict(&L, 60 << 20);
        cr_assert_eq(gqa.sm_read_B, mha.sm_read_B);
        for (int t = 0; t < FL_LT_COUNT; t++)
            cr_assert(gqa.reads[t] == mha.reads[t] && gqa.writes[t] == mha.writes[t], "%s", fl_launch_tensor_name(t));
        /* K and V are a quarter of what they were; everything else read from DRAM is unchanged */
        cr_assert_eq(mha.dram_read_B - gqa.dram_read_B, 2 * T - 2 * T / 4, "bwd=%d: %ld vs %ld", bwd,
                     (long)gqa.dram_read_B, (long)mha.dram_read_B);
        if (!bwd) cr_assert_eq(gqa.dram_read_B, T + 2 * T / 4);
        L.kv_heads = 3;
        refuses(&L, "--kv-heads");
    }
}

/* --gpu sets the SMs, the L2 and its partitions; each option given overrides its figure.  At
 * N = 16384, d = 128 a head's K and V (8 MiB) and the wave's Q tiles fit 60 MiB in two partitions
 * but not the A100's 40 MiB: the prediction changes with the GPU. */
Test(launch_model, gpu_presets_reach_the_model)
{
    const char *base[] = {"l2", "--launch", "fwd-q", "--heads", "16", "--N", "16384", "--d", "128", "--Br", "128",
                          "--Bc", "64", "--format", "csv"};
    char *argv[24];
    int64_t dram[4];
    const char *extra[][8] = {{NULL}, {"--gpu", "h200", NULL}, {"--gpu", "a100", NULL},
                              {"--gpu", "a100", "--l2-mb", "60", "--sms", "132", NULL}};
    for (int g = 0; g < 4; g++) {
        int n = 0;
        for (size_t i = 0; i < sizeof base / sizeof base[0]; i++) argv[n++] = (char *)base[i];
        for (int i = 0; extra[g][i]; i++) argv[n++] = (char *)extra[g][i];
        argv[n] = NULL;
        cli_result *r = cli_run((const char **)argv);
        cr_assert_eq(r->status, 0, "%s", r->err);
        const char *row = strstr(r->out, "\nfwd-q,");
        cr_assert(row, "%s", r->out);
        long long v[21];
        cr_assert_eq(sscanf(row + 7, "%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld", &v[0],
                            &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10], &v[11], &v[12], &v[13],
                            &v[14]), 15);
        dram[g] = v[14]; /* dram_read_B */
        if (g == 2) cr_assert(strstr(r->out, "# l2 40 MiB in 2 LRU partitions") && strstr(r->out, "108 SMs") &&
                              strstr(r->out, "GPU a100 (published figures)"), "%s", r->out);
        free(r);
    }
    cr_assert_eq(dram[1], dram[0], "the default is the H200");
    cr_assert_eq(dram[3], dram[0], "options override the preset's figures");
    cr_assert_gt(dram[2], dram[0], "40 MiB and 108 SMs: %lld vs %lld", (long long)dram[2], (long long)dram[0]);
    const char *bad[] = {"l2", "--launch", "fwd-q", "--N", "256", "--d", "64", "--Br", "64", "--Bc", "64", "--gpu", "v100", NULL};
    cli_result *r = cli_run(bad);
    cr_assert_eq(r->status, 2);
    cr_assert(strstr(r->err, "--gpu: unknown GPU 'v100'"), "%s", r->err);
    free(r);
}
