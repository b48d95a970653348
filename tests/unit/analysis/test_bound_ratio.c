/* test_bound_ratio.c: how far optimize's optimum is from the lower bound (docs/bounds.md §3).
 * At N = 4096, d = 64 and 128, dense and causal (bottom-right), at M from d to N d -- powers of
 * two, the edges of the regimes, odd M between them and the tops a fine scan found -- the optimum of optimize's family over
 * the bound of docs/bounds.md is at least 1 and at most 4 forward, at most 8 backward.  The
 * ratios are those `flashlab optimize` prints in its /bound column (the same fl_optimize).  The
 * check has teeth: a bound that charges half the products (the first product of the forward
 * alone, as before docs/bounds.md §2 charged both), a plausible slip, goes over the limits at
 * some M of the grid. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "bounds.h"
#include "optimize.h"
#include "time_limit.h"

/* The M of the largest ratio a scan of `flashlab optimize` found for (d, causal, backward): steps
 * of 2^(1/4) from d to N d, then 2 % and 0.1-0.2 % around the largest (docs/bounds.md §3).  The
 * ratio climbs in teeth: each top is the last M before the optimum's count of row (forward) or
 * key (backward) blocks drops by one, where the bound is the floor or just above it. */
static int64_t peak(int64_t d, int causal, int bwd)
{
    static const int64_t M[2][2][2] = {{{101260, 4514}, {48565, 105909}}, {{202521, 524288}, {105552, 206764}}};
    return M[d == 128][causal][bwd];
}

Test(bound_ratio, optimum_within_4_forward_and_8_backward_of_the_bound)
{
    fl_time_limit(FL_T(900));
    const int64_t N = 4096, dims[] = {64, 128};
    const fl_causal masks[] = {FL_CAUSAL_NONE, FL_CAUSAL_BOTTOM_RIGHT};
    int all = 0;
    for (int b = 0; b < 2; b++) {
        const double limit = b ? 8.0 : 4.0;
        double worst = 0.0, worst_half = 0.0;
        int64_t worst_M = 0, worst_d = 0;
        int worst_c = 0, n = 0;
        for (int k = 0; k < 2; k++)
            for (int c = 0; c < 2; c++) {
                const int64_t d = dims[k], Nd = N * d;
                const int64_t Ms[] = {d,          d + 1,      3 * d + 1,   d * d / 4 + 1, d * d / 2, d * d - 1,
                                      d * d,      d * d + 1,  4 * d * d + 3, 16 * d * d,  Nd / 4,    Nd / 3 + 1,
                                      Nd / 2 + 7, Nd - 1,     Nd,          peak(d, c, b)};
                for (size_t i = 0; i < sizeof Ms / sizeof Ms[0]; i++) {
                    fl_problem p = fl_problem_default();
                    p.N = N, p.d = d, p.M = Ms[i], p.causal = masks[c], p.pass = b ? FL_PASS_BWD : FL_PASS_FWD;
                    fl_opt o;
                    cr_assert_eq(fl_optimize(&p, 1, FL_OPT_MAX_WORK, &o), FL_OK, "d %ld M %ld: %s", (long)d,
                                 (long)p.M, fl_last_error());
                    const double ratio = (double)o.best.total / (double)o.lb.bound;
                    cr_assert_geq(o.best.total, o.lb.bound, "%s d %ld M %ld causal %d", b ? "bwd" : "fwd", (long)d,
                                  (long)p.M, c);
                    cr_assert_leq(ratio, limit, "%s d %ld M %ld causal %d: %s moves %ld, %.2f x the bound %ld",
                                  b ? "bwd" : "fwd", (long)d, (long)p.M, c, fl_algo_name(o.best.algo),
                                  (long)o.best.total, ratio, (long)o.lb.bound);
                    if (ratio > worst) worst = ratio, worst_M = p.M, worst_d = d, worst_c = c;
                    /* the slip: half the products charged (W / 2), the same floor */
                    int64_t R;
                    const double W = b ? o.lb.products_bwd : o.lb.products_fwd;
                    const int64_t half = fl_product_bound(b ? FL_PRODUCTS_BWD : FL_PRODUCTS_FWD, W / 2.0, d, p.M, &R);
                    const int64_t slip = half > o.lb.floor ? half : o.lb.floor;
                    const double r_half = (double)o.best.total / (double)slip;
                    if (r_half > worst_half) worst_half = r_half;
                    n++;
                }
            }
        printf("optimum / bound, %s: at most %.2f (d %ld, M %ld, %s) over %d problems; with half the products "
               "charged it would be %.2f\n", b ? "backward" : "forward", worst, (long)worst_d, (long)worst_M,
               worst_c ? "causal" : "dense", n, worst_half);
        cr_assert_gt(worst_half, limit, "the slip stays under %.0f: the check has no teeth", limit);
        all += n;
    }
    cr_assert_eq(all, 2 * 2 * 2 * 16);
}
