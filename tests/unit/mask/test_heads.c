/* test_heads.c: batch, heads and GQA/MQA (docs/model.md H1, C2g): the kv-head map, invalid counts
 * refused with the rule, counts equal to the closed form and values/gradients equal to the
 * reference over a grid (every schedule, flash2-gqa included, every pass, with masks), the GQA
 * group schedule loading each K/V tile once per group, and count-only speed at GPT-2 scale. */
#include <time.h>

#include "grid.h"
#include "heads.h"

Test(heads, kv_map_consecutive_groups)
{
    const int64_t want[] = {0, 0, 0, 1, 1, 1};
    for (int64_t h = 0; h < 6; h++) {
        cr_assert_eq(fl_kv_head(h, 6, 2), want[h]);
        cr_assert_eq(fl_kv_head(h, 6, 1), 0);
        cr_assert_eq(fl_kv_head(h, 6, 6), h);
    }
    cr_assert_eq(fl_heads_check(6, 2), FL_OK);
    cr_assert_eq(fl_heads_check(5, 2), FL_EINVAL);
    cr_assert(strstr(fl_last_error_raw(), "{kv_heads}") && strstr(fl_last_error_raw(), "divide"));
    cr_assert_eq(fl_heads_check(0, 1), FL_EINVAL);
    cr_assert_eq(fl_heads_check(4, 0), FL_EINVAL);
    cr_assert_eq(fl_heads_check(2, 4), FL_EINVAL);
}

Test(heads, grid_counts_and_values)
{
    const int64_t hk[][2] = {{1, 1}, {3, 3}, {4, 2}, {6, 2}, {6, 1}};
    fl_algo algos[FL_ALGO_MAX]; /* every schedule with heads and a backward, from the registry */
    const size_t nalgos = (size_t)sched_list(FL_ACCEPT_HEADS | FL_ACCEPT_BWD, 0, algos);
    const fl_pass passes[] = {FL_PASS_FWD, FL_PASS_BWD, FL_PASS_FWD_BWD};
    int n = 0;
    double worst = 0.0;
    for (size_t a = 0; a < nalgos; a++)
        for (size_t h = 0; h < 5; h++)
            for (int64_t B = 1; B <= 2; B++)
                for (int c = 0; c < 3; c += 2)
                    for (size_t q = 0; q < 3; q++) {
                        fl_problem p = fl_problem_default();
                        p.algo = algos[a], p.N = 13, p.Nk = 21, p.d = 6, p.M = 1200, p.batch = B;
                        p.heads = hk[h][0], p.kv_heads = hk[h][1], p.causal = (fl_causal)c;
                        p.pass = passes[q], p.seed = 5 + h;
                        char what[96];
                        snprintf(what, sizeof what, "B=%lld H=%lld Hkv=%lld causal=%d pass=%d", (long long)B,
                                 (long long)p.heads, (long long)p.kv_heads, c, p.pass);
                        expect_exact(&p, what, NULL);
                        if (q != 1) expect_values(&p, what, &worst);
                        n++;
                    }
    cr_log_info("heads: %d configurations, worst rel err %.3e", n, worst);
}

static int64_t kv_reads(const fl_result *r)
{
    int64_t s = 0;
    for (int t = 0; t < r->ntensors; t++)
        if (!strcmp(r->t[t].name, "K") || !strcmp(r->t[t].name, "V")) s += r->t[t].reads;
    return s;
}

Test(heads, gqa_group_schedule_saves_kv_traffic)
{
    /* same blocks for both: flash2 loads each K/V tile once per query head, flash2-gqa once per
     * group, so its K/V reads are exactly 1/G of flash2's */
    for (int64_t G = 1; G <= 8; G *= 2) {
        fl_problem p = fl_problem_default();
        p.N = 512, p.d = 64, p.heads = 8, p.kv_heads = 8 / G, p.Br = p.Bc = 32, p.M = 200000;
        fl_result a, b;
        p.algo = FL_ALGO_FLASH2;
        cr_assert_eq(fl_run(&p, FL_COUNT, NULL, NULL, &a), FL_OK);
        p.algo = FL_ALGO_FLASH2_GQA;
        cr_assert_eq(fl_run(&p, FL_COUNT, NULL, NULL, &b), FL_OK, "%s", fl_last_error());
        cr_assert_eq(kv_reads(&a), G * kv_reads(&b), "G=%lld", (long long)G);
        cr_assert_eq(a.total - kv_reads(&a), b.total - kv_reads(&b)); /* Q, O, L traffic unchanged */
    }
    /* default blocks, both passes: the group schedule moves less */
    fl_problem p = fl_problem_default();
    p.batch = 4, p.heads = 16, p.kv_heads = 4, p.pass = FL_PASS_FWD_BWD;
    fl_result a, b;
    p.algo = FL_ALGO_FLASH2;
    cr_assert_eq(fl_run(&p, FL_COUNT, NULL, NULL, &a), FL_OK);
    p.algo = FL_ALGO_FLASH2_GQA;
    cr_assert_eq(fl_run(&p, FL_COUNT, NULL, NULL, &b), FL_OK);
    cr_assert_lt(b.fwd_total, a.fwd_total);
    cr_assert_lt(b.bwd_total, a.bwd_total);
}

Test(heads, gpt2_count_only_is_fast)
{
    /* batch 64 x 16 heads, N 1024, d 64, forward + backward, every schedule: well under 2 s */
    fl_algo algos[FL_ALGO_MAX]; /* every schedule with heads and a backward, from the registry */
    const size_t nalgos = (size_t)sched_list(FL_ACCEPT_HEADS | FL_ACCEPT_BWD, 0, algos);
    clock_t t0 = clock();
    for (size_t a = 0; a < nalgos; a++) {
        fl_problem p = fl_problem_default();
        p.algo = algos[a], p.batch = 64, p.heads = 16, p.kv_heads = 4, p.pass = FL_PASS_FWD_BWD;
        fl_result r;
        cr_assert_eq(fl_run(&p, FL_COUNT, NULL, NULL, &r), FL_OK);
        cr_assert_eq(r.total, r.closed.total);
    }
    const double s = (double)(clock() - t0) / CLOCKS_PER_SEC;
    cr_log_info("GPT-2 shape, %zu schedules fwd+bwd: %.3f s", nalgos, s);
    cr_assert_lt(s, 2.0);
}

Test(heads, group_schedule_with_windows_and_corners)
{
    const int64_t wins[][2] = {{-1, -1}, {2, 0}, {0, 3}, {5, 5}};
    double worst = 0.0;
    int n = 0;
    for (int c = 0; c < 3; c++)
        for (size_t w = 0; w < 4; w++)
            for (int q = 1; q <= 3; q += 2) {
                fl_problem p = fl_problem_default();
                p.algo = FL_ALGO_FLASH2_GQA, p.N = 19, p.Nk = 11, p.d = 4, p.M = 700, p.batch = 2;
                p.heads = 6, p.kv_heads = 2, p.causal = (fl_causal)c;
                p.window_left = wins[w][0], p.window_right = wins[w][1], p.pass = (fl_pass)q;
                char what[96];
                snprintf(what, sizeof what, "gqa causal=%d window=%lld,%lld pass=%d", c, (long long)wins[w][0],
                         (long long)wins[w][1], q);
                expect_exact(&p, what, NULL);
                expect_values(&p, what, &worst);
                n++;
            }
    cr_log_info("flash2-gqa with masks: %d configurations, worst rel err %.3e", n, worst);
}
