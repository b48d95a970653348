/* test_variants.c: the variants of docs/model.md §14 on the schedules that take them.  The
 * conformance suite (tests/conformance/test_registry.c) holds every schedule's counts equal to its
 * closed form and its values to the reference with every variant; here:
 *
 *   - that comparison is not vacuous: each variant moves the output far from what a plausible
 *     wrong implementation gives (the sink left out, the cap after the ALiBi bias, the dropout
 *     mask transposed, one ALiBi slope for every head, one fp8 scale per tile), so a schedule
 *     making that mistake fails the 1e-12 check;
 *   - the traffic rules by hand: d_v (C2) and (C1) with the V/O side d_v wide, the sinks and the
 *     dropout seed as the scalars they are (rule R3b), softcap and ALiBi free, fp8's bytes and
 *     scale factors, and the deterministic backward's elements equal to the atomics'. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention_bwd.h"
#include "attention_ref.h"
#include "grid.h"
#include "rng.h"
#include "schedule.h"

static fl_problem base(fl_algo a, int64_t N, int64_t d, int64_t M)
{
    fl_problem p = fl_problem_default();
    p.algo = a, p.N = N, p.d = d, p.M = M;
    return p;
}

static fl_result counted(const fl_problem *p)
{
    fl_result r;
    cr_assert_eq(fl_run(p, FL_COUNT, NULL, NULL, &r), FL_OK, "%s", fl_last_error());
    cr_assert_eq(r.total, r.closed.total);
    return r;
}

static int64_t tensor_reads(const fl_result *r, const char *name)
{
    for (int t = 0; t < r->ntensors; t++)
        if (!strcmp(r->t[t].name, name)) return r->t[t].reads;
    return -1;
}

/* max |a - b| / max |b| */
static double rel(const double *a, const double *b, int64_t n)
{
    double e = 0, s = 0;
    for (int64_t i = 0; i < n; i++) e = fmax(e, fabs(a[i] - b[i])), s = fmax(s, fabs(b[i]));
    return e / s;
}

/* flash2's output for p (one sequence, H heads over one K/V head each) against the reference with
 * the variant v_of(h) per head: the relative error. */
static double error_against(const fl_problem *p, void (*v_of)(const fl_problem *, int64_t h, fl_ref_variant *))
{
    const int64_t N = p->N, d = p->d, dv = fl_problem_dv(p), H = p->heads;
    double *Q = malloc(sizeof(double) * H * N * d), *K = malloc(sizeof(double) * H * N * d),
           *V = malloc(sizeof(double) * H * N * dv), *O = malloc(sizeof(double) * H * N * dv),
           *R = malloc(sizeof(double) * H * N * dv), sink[8];
    uint64_t st = 3;
    fl_rng_fill(&st, Q, H * N * d, -1, 1), fl_rng_fill(&st, K, H * N * d, -1, 1);
    fl_rng_fill(&st, V, H * N * dv, -1, 1), fl_rng_fill(&st, sink, H, -1, 1);
    fl_values vals = {Q, K, V, NULL, O, NULL, NULL, NULL, NULL, sink, NULL};
    fl_result r;
    cr_assert_eq(fl_run_values(p, &vals, &r), FL_OK, "%s", fl_last_error());
    cr_assert_leq(r.rel_err, FL_TEST_TOL, "the schedule against the right reference: %g", r.rel_err);
    for (int64_t h = 0; h < H; h++) {
        fl_ref_variant v;
        v_of(p, h, &v);
        v.sink = sink[h];
        cr_assert_eq(fl_ref_attention_v(N, N, d, dv, Q + h * N * d, K + h * N * d, V + h * N * dv, 1.0 / sqrt((double)d),
                                        NULL, NULL, &v, R + h * N * dv, NULL), FL_OK);
    }
    const double e = rel(O, R, H * N * dv);
    free(Q), free(K), free(V), free(O), free(R);
    return e;
}

static void no_sink(const fl_problem *p, int64_t h, fl_ref_variant *v)
{
    *v = (fl_ref_variant){p->softcap, 0.0, 0, 0.0, 0.0, p->seed, 0, h};
}
static void alibi_one_slope(const fl_problem *p, int64_t h, fl_ref_variant *v)
{
    *v = (fl_ref_variant){0.0, fl_alibi_slope(0, p->heads), 0, 0.0, 0.0, p->seed, 0, h};
}
static void dropout_other_head(const fl_problem *p, int64_t h, fl_ref_variant *v)
{
    *v = (fl_ref_variant){0.0, 0.0, 0, 0.0, p->dropout, p->seed, 0, (h + 1) % p->heads};
}

Test(variants, a_schedule_that_drops_a_variant_fails_the_check)
{
    fl_problem p = base(FL_ALGO_FLASH2, 24, 8, 4000);
    p.heads = 3, p.sinks = 1;
    cr_expect_gt(error_against(&p, no_sink), 1e-3, "the sink left out");
    p.sinks = 0, p.alibi = 1;
    cr_expect_gt(error_against(&p, alibi_one_slope), 1e-3, "one ALiBi slope for every head");
    p.alibi = 0, p.dropout = 0.3;
    cr_expect_gt(error_against(&p, dropout_other_head), 1e-2, "another head's dropout mask");
}

/* The cap after the ALiBi bias and the dropout mask transposed, by hand on one head. */
static int transposed(int64_t i, int64_t j, const void *ctx)
{
    (void)ctx;
    return fl_dropout_keep(1, 0, 0, j, i, 0.5);
}

Test(variants, order_and_orientation_matter)
{
    const int64_t N = 16, d = 4;
    double Q[64], K[64], V[64], O[64], R[64];
    uint64_t st = 9;
    fl_rng_fill(&st, Q, N * d, -2, 2), fl_rng_fill(&st, K, N * d, -2, 2), fl_rng_fill(&st, V, N * d, -1, 1);
    fl_problem p = base(FL_ALGO_FLASH2, N, d, 2000);
    p.softcap = 0.5, p.alibi = 1;
    fl_values vals = {Q, K, V, NULL, O, NULL, NULL, NULL, NULL, NULL, NULL};
    fl_result r;
    cr_assert_eq(fl_run_values(&p, &vals, &r), FL_OK, "%s", fl_last_error());
    cr_assert_leq(r.rel_err, FL_TEST_TOL);
    /* capping after the bias: the bias -m |i - j| enters the tanh */
    for (int64_t i = 0; i < N; i++) {
        double s[16];
        for (int64_t j = 0; j < N; j++) {
            double x = 0;
            for (int64_t t = 0; t < d; t++) x += Q[i * d + t] * K[j * d + t];
            x = x / 2.0 - fl_alibi_slope(0, 1) * fabs((double)(i - j));
            s[j] = 0.5 * tanh(x / 0.5);
        }
        fl_ref_softmax_row(s, N, V, d, R + i * d);
    }
    cr_expect_gt(rel(O, R, N * d), 1e-3, "the cap after the bias");
    /* the dropout mask of (j, i) instead of (i, j): the reference with a keep rule of the transpose
     * and no dropout of its own differs from the real one */
    p.softcap = 0.0, p.alibi = 0, p.dropout = 0.5, p.seed = 1;
    cr_assert_eq(fl_run_values(&p, &vals, &r), FL_OK, "%s", fl_last_error());
    cr_assert_leq(r.rel_err, FL_TEST_TOL);
    for (int64_t i = 0; i < N; i++) { /* P from the full row, then Z^T / (1 - p) */
        double s[16], mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < N; j++) {
            double x = 0;
            for (int64_t t = 0; t < d; t++) x += Q[i * d + t] * K[j * d + t];
            s[j] = x / 2.0, mx = fmax(mx, s[j]);
        }
        for (int64_t j = 0; j < N; j++) sum += exp(s[j] - mx);
        for (int64_t c = 0; c < d; c++) {
            R[i * d + c] = 0;
            for (int64_t j = 0; j < N; j++)
                R[i * d + c] += transposed(i, j, NULL) ? exp(s[j] - mx) / sum / 0.5 * V[j * d + c] : 0.0;
        }
    }
    cr_expect_gt(rel(O, R, N * d), 1e-2, "the mask transposed");
}

/* fp8: a schedule that applied the first row's scale factor to a whole tile would be wrong. */
Test(variants, fp8_scales_by_block)
{
    fl_problem p = base(FL_ALGO_FLASH2, 20, 4, 2000);
    p.elem_bytes = 1, p.scale_block = 3, p.Br = p.Bc = 8;
    fl_result r;
    cr_assert_eq(fl_run(&p, FL_COMPUTE, NULL, NULL, &r), FL_OK, "%s", fl_last_error());
    cr_assert_leq(r.rel_err, FL_TEST_TOL);
    /* the counts: scale factors per block entered (rule R3b), Q, K, V priced 1 byte, O 2 */
    const int64_t Tr = 3, blocks = 7; /* ceil(20 / 3) */
    cr_assert_eq(tensor_reads(&r, "K_scale"), Tr * blocks, "every row block's key sweep enters all %lld blocks", (long long)blocks);
    cr_assert_eq(tensor_reads(&r, "Q_scale"), blocks, "the row blocks 0-7, 8-15, 16-19 enter blocks 0-2, 2-5, 5-6: 7 with 2 and 5 held");
    int64_t bytes = 0;
    for (int t = 0; t < r.ntensors; t++) {
        const char *n = r.t[t].name;
        const int eb = !strcmp(n, "Q") || !strcmp(n, "K") || !strcmp(n, "V") ? 1 : !strcmp(n, "O") ? 2 : 4;
        cr_assert_eq(r.t[t].elem_bytes, eb, "%s", n);
        bytes += (r.t[t].reads + r.t[t].writes) * eb;
    }
    cr_assert_eq(r.bytes, bytes);
}

/* d_v: (C2) and (C1) with the V and O side d_v wide, by hand; the footprints (F2), (F1). */
Test(variants, d_v_by_hand)
{
    const int64_t N = 100, d = 24, dv = 9;
    fl_problem p = base(FL_ALGO_FLASH2, N, d, 6000);
    p.d_v = dv, p.Br = 20, p.Bc = 30;
    fl_result r = counted(&p);
    const int64_t Tr = 5, Tc = 4;
    cr_assert_eq(r.reads, N * d + N * (d + dv) * Tr);
    cr_assert_eq(r.writes, N * dv + N);
    cr_assert_eq(r.sram_peak, 20 * (d + dv) + 30 * (d + dv) + 20 * 30 + 2 * 20);
    p.algo = FL_ALGO_FLASH1;
    r = counted(&p);
    cr_assert_eq(r.reads, N * (d + dv) + Tc * (N * (d + dv) + 2 * N));
    cr_assert_eq(r.writes, N * dv + 2 * N + Tc * (N * dv + 2 * N));
}

/* Sinks and the dropout seed are scalars per segment and pass (rule R3b); softcap and ALiBi move
 * nothing. */
Test(variants, the_scalars_and_the_free_variants)
{
    fl_algo algos[FL_ALGO_MAX];
    const int n = sched_list(FL_ACCEPT_SINKS | FL_ACCEPT_DROPOUT | FL_ACCEPT_SCORE_MODS | FL_ACCEPT_HEADS | FL_ACCEPT_BWD,
                             FL_SCHED_STACKS_GROUP, algos);
    cr_assert_geq(n, 2);
    for (int k = 0; k < n; k++) {
        fl_problem p = base(algos[k], 33, 8, 5000);
        p.batch = 2, p.heads = 3, p.pass = FL_PASS_FWD_BWD, p.causal = FL_CAUSAL_BOTTOM_RIGHT;
        fl_problem probe = p;
        probe.sinks = 1;
        if (fl_problem_check(&probe) != FL_OK) continue; /* its backward takes no variants (smallcache's) */
        const fl_result plain = counted(&p);
        fl_problem q = p;
        q.alibi = 1;
        cr_assert_eq(counted(&q).total, plain.total, "%s: ALiBi moves nothing", fl_algo_name(p.algo));
        q.softcap = 2.0;
        const fl_result cap = counted(&q);
        if (fl_algo_flags(p.algo) & FL_SCHED_MATERIALIZES) /* its backward reads the capped S for dS */
            cr_assert_eq(cap.total, plain.total + tensor_reads(&cap, "S") - tensor_reads(&plain, "S"),
                         "%s: the cap costs the reads of S in step 3", fl_algo_name(p.algo));
        else
            cr_assert_eq(cap.total, plain.total, "%s: softcap moves nothing", fl_algo_name(p.algo));
        q.pass = FL_PASS_FWD;
        p.pass = FL_PASS_FWD;
        cr_assert_eq(counted(&q).total, counted(&p).total, "%s: the forward of a cap costs nothing", fl_algo_name(p.algo));
        p.pass = FL_PASS_FWD_BWD;
        q = p, q.dropout = 0.1;
        const fl_result dr = counted(&q);
        if (fl_algo_flags(p.algo) & FL_SCHED_MATERIALIZES) { /* stores P~ and Z; the backward reads Z */
            cr_assert_eq(tensor_reads(&dr, "rng"), 2 * 6, "%s: the seed and offset per segment, forward", fl_algo_name(p.algo));
            const int64_t NN = 2 * 3 * 33 * 33; /* batch x heads x Nq x Nk */
            cr_assert_eq(dr.total, plain.total + 2 * 6 + 2 * NN + NN, "%s: P~ and Z written, Z read", fl_algo_name(p.algo));
        } else {
            cr_assert_eq(tensor_reads(&dr, "rng"), 2 * 6 * 2, "%s: the seed and offset per segment and pass", fl_algo_name(p.algo));
            cr_assert_eq(dr.total, plain.total + 2 * 6 * 2, "%s: dropout moves its seed alone", fl_algo_name(p.algo));
        }
        q = p, q.sinks = 1;
        const fl_result sk = counted(&q);
        /* standard's backward takes the sink's probability from P (1 - sum_j P_ij): no load */
        const int passes = fl_algo_flags(p.algo) & FL_SCHED_MATERIALIZES ? 1 : 2;
        cr_assert_eq(tensor_reads(&sk, "sink"), 6 * passes, "%s: a sink per segment and pass", fl_algo_name(p.algo));
    }
}

/* A deterministic backward (per-key-block partials of dQ, reduced in a fixed order) moves the
 * elements the atomics move, and gives the same gradients. */
Test(variants, determinism_costs_no_elements)
{
    fl_algo algos[FL_ALGO_MAX];
    const int n = sched_list(FL_ACCEPT_DETERMINISTIC | FL_ACCEPT_BWD, 0, algos);
    cr_assert_geq(n, 2);
    for (int k = 0; k < n; k++)
        for (int c = 0; c < 2; c++) {
            fl_problem p = base(algos[k], 45, 8, 3000);
            p.heads = 4, p.kv_heads = 2, p.pass = FL_PASS_BWD, p.causal = c ? FL_CAUSAL_TOP_LEFT : FL_CAUSAL_NONE;
            const fl_result at = counted(&p);
            p.deterministic = 1;
            const fl_result de = counted(&p);
            cr_assert_eq(de.total, at.total, "%s: deterministic %lld, atomics %lld", fl_algo_name(p.algo),
                         (long long)de.total, (long long)at.total);
            expect_values(&p, fl_algo_name(p.algo), NULL);
        }
}
