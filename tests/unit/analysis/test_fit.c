/* test_fit.c: the GSL fits (include/flashlab/fit.h) on synthetic data with known answers, and the law the
 * analyzer claims: flash1's traffic falls as M^-1 within one standard error over the paper's
 * regime d <= M <= Nd (docs/analysis.md). */
#include <criterion/criterion.h>
#include <math.h>

#include "fit.h"
#include "rng.h"

Test(fit, exact_power_law_is_recovered)
{
    double x[9], y[9];
    for (int i = 0; i < 9; i++) {
        x[i] = 3.1 * pow(1.7, i);
        y[i] = 2.385 * pow(x[i], -1.37);
    }
    fl_fit f;
    cr_assert_eq(fl_fit_power(x, y, 9, &f), FL_OK, "%s", fl_last_error());
    cr_assert(fabs(f.slope + 1.37) < 1e-12, "slope %.15g", f.slope);
    cr_assert(fabs(exp(f.intercept) - 2.385) < 1e-10);
    cr_assert(f.se_slope < 1e-12 && f.r2 > 1.0 - 1e-12);
    cr_assert_eq(f.n, 9);
}

Test(fit, noisy_slope_is_within_three_standard_errors_and_the_error_is_honest)
{
    enum { n = 40 };
    double x[n], y[n];
    uint64_t st = 2385;
    int inside = 0;
    for (int rep = 0; rep < 50; rep++) {
        for (int i = 0; i < n; i++) {
            double u[1];
            fl_rng_fill(&st, u, 1, -0.1, 0.1);
            x[i] = 1000.0 * pow(1.25, i);
            y[i] = 7.3 * pow(x[i], 0.613) * exp(u[0]);
        }
        fl_fit f;
        cr_assert_eq(fl_fit_power(x, y, n, &f), FL_OK);
        cr_assert(f.se_slope > 0.0);
        cr_assert(fabs(f.slope - 0.613) < 4.0 * f.se_slope, "rep %d: %.5f ± %.5f", rep, f.slope, f.se_slope);
        inside += fabs(f.slope - 0.613) <= f.se_slope;
    }
    /* about 68% of the fits land within one SE of the truth; far fewer means the SE is too small */
    cr_assert(inside >= 25 && inside <= 45, "%d of 50 within one SE", inside);
}

Test(fit, ratio_constant_and_its_error)
{
    enum { n = 30 };
    double x[n], y[n];
    uint64_t st = 7;
    for (int i = 0; i < n; i++) {
        double u[1];
        fl_rng_fill(&st, u, 1, -0.05, 0.05);
        x[i] = pow(2.0, i);
        y[i] = 12.37 * x[i] * (1.0 + u[0]);
    }
    fl_fit_const c;
    cr_assert_eq(fl_fit_ratio(x, y, n, &c), FL_OK);
    cr_assert(fabs(c.c - 12.37) < 4.0 * c.se && c.se > 0.0 && c.se < 0.2, "c = %g ± %g", c.c, c.se);
    cr_assert(c.r2 > 0.999);
}

Test(fit, too_few_or_non_positive_points_are_refused)
{
    double x[3] = {1, 2, 4}, y[3] = {1, 2, -1};
    fl_fit f;
    fl_fit_const c;
    cr_assert_eq(fl_fit_power(x, y, 2, &f), FL_EINVAL);
    cr_assert_eq(fl_fit_power(x, y, 3, &f), FL_EINVAL);
    cr_assert_eq(fl_fit_ratio(x, y, 3, &c), FL_EINVAL);
    double same[3] = {2, 2, 2};
    cr_assert_eq(fl_fit_line(same, x, 3, &f), FL_EINVAL);
}

/* flash1 at N = 65536 over M = 4096..Nd (x2), the grid of the report's sweep. */
static void flash1_slope(int64_t d, fl_fit *f, fl_table *t)
{
    static int64_t M[16];
    const int64_t N[] = {65536}, dd[] = {d};
    int nM = 0;
    for (int64_t m = 4096; m <= 65536 * d; m *= 2) M[nM++] = m;
    fl_sweep_spec s = fl_sweep_spec_init();
    s.algos[0] = FL_ALGO_FLASH1, s.nalgos = 1;
    s.N = N, s.nN = 1, s.d = dd, s.nd = 1, s.M = M, s.nM = nM;
    cr_assert_eq(fl_sweep_collect(&s, t, NULL), FL_OK, "%s", fl_last_error());
    cr_assert_eq(t->skipped, 0);
    fl_select sel = {FL_ALGO_FLASH1, 65536, d, 0, FL_REGIME_PAPER};
    cr_assert_eq(fl_law_fit(t, &sel, FL_AXIS_M, f), FL_OK, "%s", fl_last_error());
}

Test(law, flash1_traffic_falls_as_one_over_M_within_one_standard_error)
{
    for (int64_t d = 64; d <= 128; d *= 2) {
        fl_fit f;
        fl_table t = {0};
        flash1_slope(d, &f, &t);
        cr_assert(fabs(f.slope + 1.0) <= f.se_slope, "d = %lld: slope %.4f ± %.4f", (long long)d, f.slope,
                  f.se_slope);
        cr_assert(f.se_slope < 0.05 && f.r2 > 0.99, "d = %lld: SE %.4f, R² %.4f", (long long)d, f.se_slope, f.r2);
        fl_fit_const c;
        fl_select sel = {FL_ALGO_FLASH1, 0, 0, 0, FL_REGIME_PAPER};
        cr_assert_eq(fl_law_constant(&t, &sel, FL_SHAPE_N2D2_M, &c), FL_OK);
        /* each pass moves about 3Nd with Bc ~ M/4d: c between 9 and 16 (docs/analysis.md) */
        cr_assert(c.c > 9.0 && c.c < 16.0 && c.r2 > 0.99, "c = %.3f ± %.3f, R² %.4f", c.c, c.se, c.r2);
        fl_table_free(&t);
    }
}

Test(law, standard_is_theta_Nd_plus_N2_in_its_regime)
{
    const int64_t N[] = {2048}, d[] = {64}, M[] = {16384, 32768, 65536, 131072};
    fl_sweep_spec s = fl_sweep_spec_init();
    s.algos[0] = FL_ALGO_STANDARD, s.nalgos = 1;
    s.N = N, s.nN = 1, s.d = d, s.nd = 1, s.M = M, s.nM = 4;
    fl_table t = {0};
    cr_assert_eq(fl_sweep_collect(&s, &t, NULL), FL_OK);
    fl_select sel = {FL_ALGO_STANDARD, 0, 0, 0, FL_REGIME_STD_IN};
    fl_fit f;
    cr_assert_eq(fl_law_fit(&t, &sel, FL_AXIS_M, &f), FL_OK, "%s", fl_last_error());
    /* K and V are re-read N/Br <= N/d times, so M changes only the constant: a shallow slope */
    cr_assert(f.slope < 0.0 && f.slope > -0.25, "standard's M-slope in its regime: %.4f", f.slope);
    fl_fit_const c;
    cr_assert_eq(fl_law_constant(&t, &sel, FL_SHAPE_ND_N2, &c), FL_OK);
    cr_assert(c.c > 2.0 && c.c < 6.0, "c(Nd + N²): c = %.3f", c.c);
    fl_table_free(&t);
}

Test(fit, relative_line_recovers_floor_and_slope)
{
    enum { n = 12 };
    double x[n], y[n];
    for (int i = 0; i < n; i++) {
        x[i] = pow(2.0, i);
        y[i] = 3.031 + 12.25 * x[i];
    }
    fl_fit f;
    cr_assert_eq(fl_fit_line_rel(x, y, n, &f), FL_OK, "%s", fl_last_error());
    cr_assert(fabs(f.intercept - 3.031) < 1e-9 && fabs(f.slope - 12.25) < 1e-9, "a = %.12g, c = %.12g",
              f.intercept, f.slope);
    /* with 3% multiplicative noise the floor is still found within a few standard errors */
    uint64_t st = 99;
    for (int i = 0; i < n; i++) {
        double u[1];
        fl_rng_fill(&st, u, 1, -0.03, 0.03);
        y[i] = (3.031 + 12.25 * x[i]) * (1.0 + u[0]);
    }
    cr_assert_eq(fl_fit_line_rel(x, y, n, &f), FL_OK);
    cr_assert(f.se_intercept > 0.0 && fabs(f.intercept - 3.031) < 4.0 * f.se_intercept, "a = %g ± %g",
              f.intercept, f.se_intercept);
    cr_assert(fabs(f.slope - 12.25) < 4.0 * f.se_slope, "c = %g ± %g", f.slope, f.se_slope);
}
