/* test_bounds_property.c: over 2,200 random problems -- masks, windows, unequal lengths, GQA and
 * MQA, batches and varlen, forward, backward and both, decode over contiguous and paged caches,
 * block-sparse, memory-efficient, softmax alone, the variants (d_v != d, sinks, softcap, ALiBi,
 * dropout, fp8 with scale factors, a deterministic backward); M from d to above N d -- every schedule that
 * runs, at its rule and at a random block override, moves at least the lower bound of
 * docs/bounds.md, its count equals its closed form, and `optimize` is never above a schedule of
 * its family (nor above decode and memeff, which move at least flash2 with the same blocks). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bounds.h"
#include "optimize.h"
#include "rng.h"
#include "run.h"
#include "schedule.h"
#include "blocksparse_mask.h"
#include "decode.h"

typedef struct {
    int problems, runs, optimized, below_bound_checked, tight; /* tight: within 2x of the bound */
    int by_products; /* attention problems whose bound is the product bound (LB1 above the floor) */
    int64_t product; /* the product bound of the problem being run (0: none is tracked) */
    double closest;  /* the least count / product bound of a run whose bound is the product bound */
} tally;

static uint64_t draw(uint64_t *st, uint64_t n) { return fl_rng_next(st) % n; }

/* M between d and about 4 N d, log-uniform. */
static int64_t draw_M(uint64_t *st, int64_t N, int64_t d)
{
    const double hi = log((double)(4 * N * d + 8 * d + 16)), lo = log((double)d);
    const double u = (double)draw(st, 1u << 20) / (double)(1u << 20);
    return (int64_t)llround(exp(lo + u * (hi - lo)));
}

/* Runs a and checks count == closed form and count >= bound; the count, or -1 if it does not run. */
static int64_t run_checked(const fl_problem *p, fl_algo a, int64_t Br, int64_t Bc, int64_t bound, tally *t)
{
    fl_problem q = *p;
    fl_result r;
    q.algo = a, q.Br = Br, q.Bc = Bc;
    if (fl_run(&q, FL_COUNT, NULL, NULL, &r) != FL_OK) return -1;
    cr_assert_eq(r.total, r.closed.total, "%s: counted %ld, closed form %ld", fl_algo_name(a), (long)r.total,
                 (long)r.closed.total);
    fl_lower_bound own;
    int64_t b = bound;
    if (a == FL_ALGO_BLOCKSPARSE) { /* its problem (the block mask) is cut along its own blocks */
        cr_assert_eq(fl_lower_bound_of(&q, &r.b, &own), FL_OK, "%s", fl_last_error());
        b = own.bound;
    }
    cr_assert_geq(r.total, b,
                  "%s N %ld Nk %ld d %ld M %ld Br %ld Bc %ld causal %d window %ld,%ld heads %ld/%ld batch %ld pass %d: "
                  "count %ld < bound %ld",
                  fl_algo_name(a), (long)q.N, (long)q.Nk, (long)q.d, (long)q.M, (long)r.b.Br, (long)r.b.Bc, q.causal,
                  (long)q.window_left, (long)q.window_right, (long)q.heads, (long)q.kv_heads, (long)q.batch, q.pass,
                  (long)r.total, (long)b);
    t->runs++;
    t->tight += r.total <= 2 * b;
    if (t->product > 0 && t->product == b && (t->closest == 0.0 || (double)r.total / (double)b < t->closest))
        t->closest = (double)r.total / (double)b;
    return r.total;
}

/* The attention problems of the family: every schedule, at its rule and overridden. */
static void attention(uint64_t *st, tally *t, int64_t *cu)
{
    fl_problem p = fl_problem_default();
    p.N = 1 + (int64_t)draw(st, 48);
    p.Nk = draw(st, 3) ? 0 : 1 + (int64_t)draw(st, 48);
    p.d = 1 + (int64_t)draw(st, 24);
    const int64_t nk = p.Nk ? p.Nk : p.N;
    p.causal = (fl_causal)draw(st, 3);
    if (!draw(st, 4)) p.window_left = (int64_t)draw(st, 12) - 1, p.window_right = (int64_t)draw(st, 6) - 1;
    static const int64_t heads[][2] = {{1, 1}, {2, 1}, {2, 2}, {4, 2}, {3, 1}, {6, 3}, {4, 1}};
    const int h = (int)draw(st, 7);
    p.heads = heads[h][0], p.kv_heads = heads[h][1];
    p.pass = (fl_pass)(1 + draw(st, 3));
    if (!draw(st, 4)) { /* varlen: three sequences, empty on both sides or on neither */
        const int64_t a = (int64_t)draw(st, (uint64_t)p.N + 1), b = (int64_t)draw(st, (uint64_t)nk + 1);
        if ((a == 0) == (b == 0) && (a == p.N) == (b == nk)) {
            p.batch = 2;
            cu[0] = 0, cu[1] = a, cu[2] = p.N, cu[3] = 0, cu[4] = b, cu[5] = nk;
            p.cu_seqlens_q = cu, p.cu_seqlens_k = cu + 3;
            p.cu_seqlens_q_len = p.cu_seqlens_k_len = 3;
        }
    } else {
        p.batch = 1 + (int64_t)draw(st, 3);
    }
    /* the variants (docs/model.md §14), each in about one problem of three */
    if (!draw(st, 3)) p.d_v = 1 + (int64_t)draw(st, 24);
    p.sinks = !draw(st, 3);
    if (!draw(st, 4)) p.softcap = 0.5 + (double)draw(st, 8);
    p.alibi = !draw(st, 4);
    if (!draw(st, 4)) p.dropout = 0.05 * (double)(1 + draw(st, 10));
    if (p.pass == FL_PASS_FWD && !draw(st, 4)) p.elem_bytes = 1, p.scale_block = (int64_t)draw(st, 9);
    if (p.pass != FL_PASS_FWD) p.deterministic = !draw(st, 3);
    p.M = draw_M(st, fl_max64(p.N, nk), fl_max64(p.d, fl_problem_dv(&p)));
    fl_lower_bound lb;
    cr_assert_eq(fl_lower_bound_of(&p, NULL, &lb), FL_OK, "%s", fl_last_error());
    t->by_products += lb.product > lb.floor;
    t->product = lb.product > lb.floor ? lb.product : 0;

    fl_algo fam[FL_ALGO_MAX]; /* optimize's forward family, from the registry */
    int nfam = 0;
    for (int a = 0; a < fl_schedule_count(); a++)
        if (fl_schedule_get((fl_algo)a)->search[0]) fam[nfam++] = (fl_algo)a;
    int64_t counts[2 * FL_ALGO_MAX + 2];
    int n = 0;
    for (int i = 0; i < nfam; i++) {
        counts[n] = run_checked(&p, fam[i], 0, 0, lb.bound, t);
        if (counts[n] >= 0) n++;
        const int64_t Br = 1 + (int64_t)draw(st, (uint64_t)p.N), Bc = 1 + (int64_t)draw(st, (uint64_t)nk);
        counts[n] = run_checked(&p, fam[i], Br, Bc, lb.bound, t);
        if (counts[n] >= 0) n++;
    }
    if (p.batch == 1 && p.heads == 1 && !p.Nk && p.causal == FL_CAUSAL_NONE && p.window_left == -1 &&
        p.window_right == -1 && p.pass == FL_PASS_FWD && !p.cu_seqlens_q) {
        counts[n] = run_checked(&p, FL_ALGO_MEMEFF, 0, 0, lb.bound, t);
        if (counts[n] >= 0) n++;
    }
    fl_opt o;
    const fl_status s = fl_optimize(&p, 1, FL_OPT_MAX_WORK, &o);
    if (!n) {
        cr_assert_eq(s, FL_ECAPACITY, "nothing runs, yet optimize says %d: %s", s, fl_last_error());
        return;
    }
    cr_assert_eq(s, FL_OK, "%s", fl_last_error());
    cr_assert_geq(o.best.total, lb.bound);
    for (int i = 0; i < n; i++)
        cr_assert_leq(o.best.total, counts[i],
                      "optimize %ld (%s) above a schedule's %ld (N %ld Nk %ld d %ld M %ld pass %d causal %d window %ld,%ld "
                      "heads %ld/%ld batch %ld varlen %d)", (long)o.best.total, fl_algo_name(o.best.algo), (long)counts[i],
                      (long)p.N, (long)p.Nk, (long)p.d, (long)p.M, p.pass, p.causal, (long)p.window_left,
                      (long)p.window_right, (long)p.heads, (long)p.kv_heads, (long)p.batch, p.cu_seqlens_q != NULL);
    t->optimized++;
}

/* Decode: few queries over a cache, contiguous or paged, split or not; optimize on the same
 * attention problem (without the cache) is never above it. */
static void decode(uint64_t *st, tally *t)
{
    fl_problem p = fl_problem_default();
    fl_kv_cache p_kv = fl_kv_cache_default();
    p.kv_cache = &p_kv;
    p.algo = FL_ALGO_DECODE;
    p.N = 1 + (int64_t)draw(st, 8);
    p.Nk = 1 + (int64_t)draw(st, 300);
    p.d = 1 + (int64_t)draw(st, 32);
    p.causal = (fl_causal)draw(st, 3);
    if (!draw(st, 4)) p.window_left = (int64_t)draw(st, 40) - 1, p.window_right = (int64_t)draw(st, 4) - 1;
    if (draw(st, 2)) p_kv.page_size = 1 + (int64_t)draw(st, 64);
    p_kv.splits = 1 + (int64_t)draw(st, 4);
    p.M = draw_M(st, p.Nk, p.d);
    fl_lower_bound lb;
    cr_assert_eq(fl_lower_bound_of(&p, NULL, &lb), FL_OK, "%s", fl_last_error());
    const int64_t c = run_checked(&p, FL_ALGO_DECODE, 0, 0, lb.bound, t);
    if (c < 0) return;
    fl_problem q = p;
    q.algo = FL_ALGO_FLASH2, q.kv_cache = NULL; /* the same attention without the cache */
    fl_opt o;
    cr_assert_eq(fl_optimize(&q, 1, FL_OPT_MAX_WORK, &o), FL_OK, "%s", fl_last_error());
    cr_assert_leq(o.best.total, c);
    cr_assert_eq(o.lb.bound, lb.bound); /* the same attention problem, the same bound */
    t->optimized++;
}

static void blocksparse(uint64_t *st, tally *t)
{
    fl_problem p = fl_problem_default();
    fl_block_sparsity p_bm = fl_block_sparsity_default();
    p.block_mask = &p_bm;
    p.algo = FL_ALGO_BLOCKSPARSE;
    p.N = 1 + (int64_t)draw(st, 80);
    p.d = 1 + (int64_t)draw(st, 16);
    p_bm.density = 0.05 + 0.95 * (double)draw(st, 1000) / 1000.0;
    p_bm.mask_seed = 1 + draw(st, 1000);
    p.M = draw_M(st, p.N, p.d);
    run_checked(&p, FL_ALGO_BLOCKSPARSE, 0, 0, 0, t);
}

static void softmax(uint64_t *st, tally *t)
{
    fl_problem p = fl_problem_default();
    p.algo = draw(st, 2) ? FL_ALGO_SOFTMAX_SAFE : FL_ALGO_SOFTMAX_ONLINE;
    p.N = 1 + (int64_t)draw(st, 40);
    p.Nk = 1 + (int64_t)draw(st, 60);
    p.d = 1 + (int64_t)draw(st, 8);
    p.M = 3 + (int64_t)draw(st, 200);
    fl_lower_bound lb;
    cr_assert_eq(fl_lower_bound_of(&p, NULL, &lb), FL_OK, "%s", fl_last_error());
    run_checked(&p, p.algo, 0, 0, lb.bound, t);
}

Test(bounds_property, every_schedule_at_least_the_bound_and_optimize_at_most_every_schedule)
{
    fl_time_limit(FL_T(600));
    static int64_t cu[8];
    uint64_t st = 20261201;
    tally t = {0};
    for (int k = 0; k < 2200; k++) {
        const uint64_t kind = draw(&st, 100);
        t.product = 0; /* attention() sets it for its own runs */
        if (kind < 70) attention(&st, &t, cu);
        else if (kind < 82) decode(&st, &t);
        else if (kind < 92) blocksparse(&st, &t);
        else softmax(&st, &t);
        t.problems++;
    }
    printf("bounds property: %d problems, %d runs (each >= its bound), %d optimized (never above a schedule), "
           "%d runs within 2x of the bound, %d attention problems bounded by their products (the closest run %.2f x "
           "the product bound)\n", t.problems, t.runs, t.optimized, t.tight, t.by_products, t.closest);
    cr_assert_geq(t.problems, 2000);
    cr_assert_geq(t.runs, 5000);
    cr_assert_geq(t.optimized, 1500);
    cr_assert_geq(t.by_products, 300); /* the product bound is what most of them are held to */
    /* how much a wrong constant the test catches: a product bound above `closest` times the true
     * one fails it (a constant 4 times too large does; the optimum is 2 to 3.4 times the bound at
     * N = 4096, test_bound_ratio, so a smaller overclaim cannot be seen here) */
    cr_assert(t.closest > 1.0 && t.closest < 4.0, "closest %.3f", t.closest);
}
