/* test_masks_sched.c: masks in the schedules (docs/model.md K1-K4, C2m, C1m): over a grid of
 * (Nq, Nk) shapes (unequal, non-multiples of the blocks), every causal corner and windows, for
 * every schedule and pass: counts equal the closed form, values and gradients match the
 * reference (whose own mask rule checks include/flashlab/masks.h), fully masked tiles are never
 * loaded, and the causal square case equals the textbook Tr(Tr+1)/2 tiles. */
#include "grid.h"

/* "all" (one head), from the registry: the schedules whose masks this file checks. */
static fl_algo algos[FL_ALGO_MAX];
static size_t nalgos;

static void init_algos(void) { nalgos = (size_t)fl_algos_all(NULL, algos); }

TestSuite(masks_sched, .init = init_algos);

Test(masks_sched, grid_counts_and_values)
{
    const int64_t shapes[][2] = {{1, 1}, {2, 5}, {5, 2}, {17, 40}, {40, 17}, {64, 64}, {53, 53}};
    const int64_t wins[][2] = {{-1, -1}, {0, 0}, {3, -1}, {-1, 2}, {4, 6}};
    const fl_pass passes[] = {FL_PASS_FWD, FL_PASS_BWD, FL_PASS_FWD_BWD};
    int n = 0;
    double worst = 0.0;
    for (size_t a = 0; a < nalgos; a++)
        for (size_t s = 0; s < 7; s++)
            for (int c = 0; c < 3; c++)
                for (size_t w = 0; w < 5; w++)
                    for (size_t q = 0; q < 3; q++) {
                        fl_problem p = fl_problem_default();
                        p.algo = algos[a], p.N = shapes[s][0], p.Nk = shapes[s][1], p.d = 8, p.M = 900;
                        p.causal = (fl_causal)c, p.window_left = wins[w][0], p.window_right = wins[w][1];
                        p.pass = passes[q], p.seed = 3 + s;
                        char what[128];
                        snprintf(what, sizeof what, "Nq=%lld Nk=%lld causal=%s window=%lld,%lld pass=%d",
                                 (long long)p.N, (long long)p.Nk, fl_causal_name(p.causal),
                                 (long long)p.window_left, (long long)p.window_right, p.pass);
                        expect_exact(&p, what, NULL);
                        if (q != 1) expect_values(&p, what, &worst); /* bwd alone = the same numbers */
                        n++;
                    }
    cr_log_info("masks: %d configurations, worst rel err %.3e", n, worst);
}

/* trace: every K load must touch a key block some query of the current row block may see;
 * counted here as the K elements loaded */
typedef struct { int64_t k_reads; } kcount;
static int on_event(const fl_event *ev, void *ctx)
{
    if (ev->kind == FL_EV_LOAD && strcmp(ev->tensor, "K") == 0) ((kcount *)ctx)->k_reads += ev->nr * ev->nc;
    return 0;
}

Test(masks_sched, causal_square_skips_tiles)
{
    /* N = T*B, square blocks: flash2 loads K for (T(T+1)/2) tiles of B x d, no more */
    for (int64_t T = 1; T <= 6; T++) {
        fl_problem p = fl_problem_default();
        p.algo = FL_ALGO_FLASH2, p.d = 16, p.Br = p.Bc = 24, p.N = T * 24, p.M = 6000;
        p.causal = FL_CAUSAL_BOTTOM_RIGHT;
        kcount k = {0};
        fl_result r;
        cr_assert_eq(fl_run(&p, FL_COUNT, on_event, &k, &r), FL_OK, "%s", fl_last_error());
        cr_assert_eq(k.k_reads, 24 * 16 * T * (T + 1) / 2, "T=%lld: K reads %lld", (long long)T, (long long)k.k_reads);
        p.causal = FL_CAUSAL_NONE;
        kcount kd = {0};
        cr_assert_eq(fl_run(&p, FL_COUNT, on_event, &kd, &r), FL_OK);
        cr_assert_eq(kd.k_reads, 24 * 16 * T * T);
    }
}

Test(masks_sched, fully_masked_rows_are_zero_not_nan)
{
    /* Nq > Nk bottom-right: the first Nq - Nk rows see no key; a window can empty rows too */
    for (size_t a = 0; a < nalgos; a++) {
        fl_problem p = fl_problem_default();
        p.algo = algos[a], p.N = 9, p.Nk = 3, p.d = 4, p.M = 400, p.causal = FL_CAUSAL_BOTTOM_RIGHT;
        p.pass = FL_PASS_FWD_BWD;
        expect_values(&p, "Nq=9 Nk=3 bottom-right", NULL); /* NaN would fail every comparison */
    }
}

Test(masks_sched, window_counts_shrink)
{
    /* a narrow window makes flash traffic linear in N: doubling N about doubles K/V reads */
    fl_problem p = fl_problem_default();
    p.algo = FL_ALGO_FLASH2, p.d = 64, p.window_left = 128, p.window_right = 0;
    fl_result a, b;
    p.N = 8192;
    cr_assert_eq(fl_run(&p, FL_COUNT, NULL, NULL, &a), FL_OK);
    p.N = 16384;
    cr_assert_eq(fl_run(&p, FL_COUNT, NULL, NULL, &b), FL_OK);
    cr_assert_lt((double)b.total / (double)a.total, 2.1);
    cr_assert_gt((double)b.total / (double)a.total, 1.9);
}
