/* test_launch_model.c: whole launches over batch x heads (launch_model.h).  The access walk
 * moves exactly what the two-level model's schedules count (fl_run, per tensor, all heads, the
 * causal mask, ragged tiles); what lock step, grid order, persistent grids, multicast and split-KV
 * change and what they leave alone; cases small enough to compute by hand; the input rules and
 * the `flashlab l2 --launch` command. */
#include <criterion/criterion.h>
#include <string.h>

#include "cli_runner.h"
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

Test(launch_model, input_rules_name_the_option)
{
    fl_launch_pred p;
    fl_launch L = fl_launch_default(FL_LF_FWD_Q, 1, 1, 64, 64, 128, 64);
    cr_assert_eq(fl_launch_predict(&L, 1 << 20, 32, &p), FL_EINVAL);
    cr_assert(strstr(fl_last_error(), "--Br/--Bc"));
    L = fl_launch_default(FL_LF_FWD_Q, 1, 1, 64, 64, 32, 32);
    L.causal = 1, L.cluster = 2;
    cr_assert_eq(fl_launch_predict(&L, 1 << 20, 32, &p), FL_EINVAL);
    cr_assert(strstr(fl_last_error(), "--cluster"));
    L = fl_launch_default(FL_LF_BWD_KV, 1, 1, 64, 64, 32, 32);
    L.splits = 2;
    cr_assert_eq(fl_launch_predict(&L, 1 << 20, 32, &p), FL_EINVAL);
    cr_assert(strstr(fl_last_error(), "--splits"));
    L = fl_launch_default(FL_LF_BWD_TWOPASS, 1, 1, 256, 64, 48, 128);
    cr_assert_eq(fl_launch_predict(&L, 1 << 20, 32, &p), FL_EINVAL);
    cr_assert(strstr(fl_last_error(), "bwd-twopass"));
    L = fl_launch_default(FL_LF_FWD_Q, 1, 1, 64, 64, 32, 32);
    L.ctas_per_sm = 0;
    cr_assert_eq(fl_launch_predict(&L, 1 << 20, 32, &p), FL_EINVAL);
    cr_assert(strstr(fl_last_error(), "--ctas-per-sm"));
    fl_launch_family f;
    cr_assert_eq(fl_launch_family_parse("fwd-qq", &f), FL_EINVAL);
    cr_assert(strstr(fl_last_error(), "--launch"));
    cr_assert_eq(fl_launch_family_parse("bwd-twopass", &f), FL_OK);
    cr_assert_eq(f, FL_LF_BWD_TWOPASS);
}

Test(launch_model, cli_prints_and_refuses)
{
    const char *ok[] = {"l2", "--launch", "fwd-q", "--batch", "1", "--heads", "1", "--N", "256", "--d", "64", "--Br",
                        "64", "--Bc", "64", "--format", "csv", NULL};
    cli_result *r = cli_run(ok);
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert(strstr(r->out, "fwd-q,1,1,256,64,64,64,0,4,4,1,294912,294912,33792,0,98304,0"), "%s", r->out);
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
