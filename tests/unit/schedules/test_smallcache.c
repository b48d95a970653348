/* test_smallcache.c: the small-cache schedule (docs/model.md §4.6).  Its counts equal its closed
 * form (Csc, Esc, Fsc) over masks, windows, unequal lengths, heads, batches, varlen and block
 * overrides; its values equal the reference to 1e-12; its count over N^2 d / sqrt(M) is flat in
 * M from 4d to d^2/2 (slope -1/2 within one standard error) and below flash1's and flash2's
 * there; above d^2 flash1 keeps its N^2 d^2 / M constant. */
#include <stdlib.h>
#include <string.h>

#include "grid.h"
#include "rng.h"
#include "schedules/smallcache.h"
#include "smallcache_test.h"

static int64_t count(fl_problem p, fl_algo a)
{
    fl_result r;
    p.algo = a;
    if (fl_run(&p, FL_COUNT, NULL, NULL, &r) != FL_OK) return -1;
    return r.total;
}

Test(smallcache, counts_equal_the_closed_form_and_values_the_reference)
{
    fl_time_limit(FL_T(300));
    const int64_t shapes[][2] = {{1, 1}, {2, 5}, {5, 2}, {17, 40}, {40, 17}, {64, 64}, {53, 53}};
    const int64_t wins[][2] = {{-1, -1}, {0, 0}, {3, -1}, {-1, 2}, {4, 6}};
    const int64_t Ms[] = {6, 37, 300, 5000};
    const int64_t ds[] = {1, 8, 24};
    int n = 0;
    double worst = 0.0;
    for (size_t s = 0; s < 7; s++)
        for (int c = 0; c < 3; c++)
            for (size_t w = 0; w < 5; w++)
                for (size_t m = 0; m < 4; m++) {
                    fl_problem p = sc_prob(shapes[s][0], ds[(s + w) % 3], Ms[m], FL_PASS_FWD);
                    p.Nk = shapes[s][1];
                    p.causal = (fl_causal)c, p.window_left = wins[w][0], p.window_right = wins[w][1];
                    p.seed = 5 + s;
                    char what[160];
                    snprintf(what, sizeof what, "Nq=%lld Nk=%lld d=%lld M=%lld causal=%s window=%lld,%lld",
                             (long long)p.N, (long long)p.Nk, (long long)p.d, (long long)p.M, fl_causal_name(p.causal),
                             (long long)p.window_left, (long long)p.window_right);
                    expect_exact(&p, what, NULL);
                    expect_values(&p, what, &worst);
                    n++;
                }
    cr_log_info("smallcache: %d configurations, worst rel err %.3e", n, worst);
    cr_assert_eq(n, 420);
}

Test(smallcache, heads_batches_varlen_and_overrides)
{
    fl_time_limit(FL_T(300));
    static const int64_t cq[] = {0, 13, 13, 60}, ck[] = {0, 20, 20, 47};
    uint64_t st = 77;
    double worst = 0.0;
    for (int k = 0; k < 60; k++) {
        fl_problem p = sc_prob(60, 1 + (int64_t)(fl_rng_next(&st) % 20), 20 + (int64_t)(fl_rng_next(&st) % 3000),
                               FL_PASS_FWD);
        p.Nk = 47;
        p.causal = (fl_causal)(k % 3);
        if (k % 4 == 1) p.heads = 6, p.kv_heads = 2;
        if (k % 4 == 2) p.batch = 3, p.cu_seqlens_q = cq, p.cu_seqlens_k = ck, p.cu_seqlens_q_len = p.cu_seqlens_k_len = 4;
        if (k % 4 == 3) p.batch = 2, p.heads = 3, p.kv_heads = 1;
        if (k % 2) p.Br = 1 + (int64_t)(fl_rng_next(&st) % 30), p.Bc = 1 + (int64_t)(fl_rng_next(&st) % 30);
        fl_blocks b;
        if (fl_blocks_choose(&p, &b) != FL_OK) {
            cr_assert(p.Br, "the rule always fits: %s", fl_last_error());
            cr_assert(strstr(fl_last_error_raw(), "{Br}/{Bc}"), "%s", fl_last_error_raw());
            continue;
        }
        char what[96];
        snprintf(what, sizeof what, "case %d (Br %lld, Bc %lld, Bd %lld)", k, (long long)b.Br, (long long)b.Bc,
                 (long long)b.Bd);
        fl_result r;
        expect_exact(&p, what, &r);
        expect_values(&p, what, &worst);
        const int64_t floor_ev = fl_smallcache_events_floor(&p, &b, NULL);
        cr_assert(floor_ev >= 1 && floor_ev <= r.events, "%s: events floor %lld, events %lld", what,
                  (long long)floor_ev, (long long)r.events);
        /* Bd is the largest chunk that fits beside Br x Bc (eq. Fsc) */
        cr_assert_leq(fl_smallcache_footprint(&p, 0, 1, b.Br, b.Bc, b.Bd), p.M);
        if (b.Bd < p.d) cr_assert_gt(fl_smallcache_footprint(&p, 0, 1, b.Br, b.Bc, b.Bd + 1), p.M);
    }
    cr_assert_leq(worst, FL_TEST_TOL);
}

/* (Csc) written out independently for one dense head: every row block touches all Tc key blocks,
 * reads Q Tc times, K and V Tr times, O Tc - 1 times, writes O Tc times and L once. */
Test(smallcache, dense_count_is_the_textbook_form)
{
    const int64_t Ns[] = {1, 9, 100, 257}, ds[] = {1, 7, 64}, Ms[] = {6, 50, 777, 20000};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++) {
                fl_problem p = sc_prob(Ns[i], ds[j], Ms[k], FL_PASS_FWD);
                fl_result r;
                cr_assert_eq(fl_run(&p, FL_COUNT, NULL, NULL, &r), FL_OK, "%s", fl_last_error());
                const int64_t N = p.N, d = p.d, Tr = (N + r.b.Br - 1) / r.b.Br, Tc = (N + r.b.Bc - 1) / r.b.Bc;
                const int64_t Td = (d + r.b.Bd - 1) / r.b.Bd;
                cr_assert_eq(r.reads, N * d * Tc + 2 * N * d * Tr + N * d * (Tc - 1));
                cr_assert_eq(r.writes, N * d * Tc + N);
                cr_assert_eq(r.events, Tr * Td * (5 * Tc - 1) + Tr);
                cr_assert_eq(r.sram_peak, r.b.Br * r.b.Bc + (r.b.Br + r.b.Bc) * r.b.Bd + 3 * r.b.Br);
            }
}

/* flash1 and flash2, where they fit, move more than smallcache's count t of p. */
static void flash1_and_flash2_move_more(const fl_problem *p, int64_t t)
{
    const int64_t f1 = count(*p, FL_ALGO_FLASH1), f2 = count(*p, FL_ALGO_FLASH2);
    if (f1 >= 0) cr_assert_lt(t, f1, "d %ld M %ld: flash1 %ld", (long)p->d, (long)p->M, (long)f1);
    if (f2 >= 0) cr_assert_lt(t, f2, "d %ld M %ld: flash2 %ld", (long)p->d, (long)p->M, (long)f2);
}

/* docs/model.md §4.6 and docs/bounds.md §3: over M = 4d .. d^2/2 (x2) at N = 4096, the count is
 * Theta(N^2 d / sqrt M): least squares on (ln M, ln count) gives -1/2 within one standard error,
 * the constant count sqrt(M) / (N^2 d) stays in [5.8, 6.3], and flash1 and flash2 (where they
 * fit) move more. */
Test(smallcache, slope_is_minus_one_half_below_d_squared)
{
    fl_time_limit(FL_T(300));
    expect_sqrt_m_regime(FL_PASS_FWD, 5.8, 6.3, flash1_and_flash2_move_more, "smallcache");
}

/* Above d^2 flash1 keeps Theta(N^2 d^2 / M): its constant stays between 12 and 16 from d^2 to
 * Nd/4 (docs/analysis.md §3: about 14 up to 4d^2, a bump to about 15 between 4d^2 and 8d^2,
 * about 12.3 above). */
Test(smallcache, above_d_squared_flash1_keeps_n2d2_over_M)
{
    const int64_t N = 4096, d = 64;
    for (int64_t M = d * d; M <= N * d / 4; M *= 2) {
        fl_problem p = sc_prob(N, d, M, FL_PASS_FWD);
        const double c = (double)count(p, FL_ALGO_FLASH1) * (double)M / ((double)N * N * d * d);
        cr_assert(c >= 12.0 && c <= 16.0, "M %ld: flash1 constant %.3f", (long)M, c);
    }
}

Test(smallcache, rules_and_refusals)
{
    fl_problem p = sc_prob(100, 16, 5, FL_PASS_FWD);
    fl_blocks b;
    cr_assert_eq(fl_blocks_choose(&p, &b), FL_ECAPACITY);
    cr_assert(strstr(fl_last_error_raw(), "{M}: smallcache needs at least 6"), "%s", fl_last_error_raw());
    p.M = 6;
    cr_assert_eq(fl_blocks_choose(&p, &b), FL_OK);
    cr_assert(b.Br == 1 && b.Bc == 1 && b.Bd == 1);
    p.M = 1000, p.Br = 40, p.Bc = 40;
    cr_assert_eq(fl_blocks_choose(&p, &b), FL_EINVAL);
    cr_assert(strstr(fl_last_error_raw(), "{Br}/{Bc}: smallcache blocks Br = 40, Bc = 40 need 1800"), "%s", fl_last_error_raw());
    p = sc_prob(100, 16, 5, FL_PASS_FWD); /* the backward's smallest tiles need as many (Fscb: 2 + 2 + 2) */
    cr_assert_eq(fl_blocks_choose_pass(&p, 1, &b), FL_ECAPACITY);
    cr_assert(strstr(fl_last_error_raw(), "{M}: smallcache backward needs at least 6"), "%s", fl_last_error_raw());
    p.M = 6;
    cr_assert_eq(fl_blocks_choose_pass(&p, 1, &b), FL_OK);
    cr_assert(b.Br == 1 && b.Bc == 1 && b.Bd == 1 && b.footprint == 6);
    /* blocks never exceed the sequence */
    p = sc_prob(7, 16, 1 << 20, FL_PASS_FWD);
    p.Nk = 5;
    cr_assert_eq(fl_blocks_choose(&p, &b), FL_OK);
    cr_assert(b.Br <= 7 && b.Bc <= 5 && b.Bd == 16);
    /* --explain names the rule and the chunk it derived */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    p = sc_prob(4096, 256, 4096, FL_PASS_FWD);
    cr_assert_eq(fl_blocks_choose(&p, &b), FL_OK);
    fl_smallcache_explain(f, &p, &b);
    fclose(f);
    char want[64];
    snprintf(want, sizeof want, "Bd = %lld, the largest that fits", (long long)b.Bd);
    cr_assert(strstr(buf, "rule Bsc") && strstr(buf, want), "%s", buf);
    free(buf);
}

/* docs/model.md §4.5: flash2 at its default square blocks is not Theta(N^2 d^2 / M) above d^2:
 * once the square side passes d its count falls like 1/sqrt(M), so the slope over d^2 .. Nd is
 * well above -1 and the constant count M / (N^2 d^2) grows several-fold. */
Test(smallcache, flash2_square_blocks_leave_n2d2_over_M_above_d_squared)
{
    const int64_t N = 16384, d = 64;
    double x[16], y[16], c_first = 0, c_last = 0;
    size_t n = 0;
    for (int64_t M = d * d; M <= N * d; M *= 2) {
        fl_problem p = sc_prob(N, d, M, FL_PASS_FWD);
        const int64_t t = count(p, FL_ALGO_FLASH2);
        const double c = (double)t * (double)M / ((double)N * N * d * d);
        if (!n) c_first = c;
        c_last = c;
        x[n] = log((double)M), y[n] = log((double)t), n++;
    }
    double c0, c1, v00, v01, v11, ss;
    gsl_fit_linear(x, 1, y, 1, n, &c0, &c1, &v00, &v01, &v11, &ss);
    printf("flash2 (square blocks) at N = %ld, d = %ld: slope %.3f +- %.3f over M = d^2 .. Nd, constant %.1f -> %.1f\n",
           (long)N, (long)d, c1, sqrt(v11), c_first, c_last);
    cr_assert_gt(c1, -0.85);
    cr_assert_gt(c_last, 3.0 * c_first);
}
