/* smallcache_test.h: shared by the small-cache schedule's tests (test_smallcache.c, the forward;
 * test_smallcache_bwd.c, the backward): the schedule from the registry, a problem of it, and the
 * check of its regime below d^2 (docs/model.md §4.6, §12.1). */
#ifndef FL_TEST_SMALLCACHE_H
#define FL_TEST_SMALLCACHE_H

#include <criterion/criterion.h>
#include <gsl/gsl_fit.h>
#include <math.h>
#include <stdio.h>

#include "run.h"
#include "schedule.h"

/* The small-cache schedule, asked of the registry by name. */
static inline fl_algo sc(void)
{
    fl_algo a;
    cr_assert_eq(fl_algo_parse("smallcache", &a), FL_OK);
    return a;
}

/* The default problem run by the small-cache schedule at N, d, M over the passes `pass`. */
static inline fl_problem sc_prob(int64_t N, int64_t d, int64_t M, fl_pass pass)
{
    fl_problem p = fl_problem_default();
    p.algo = sc(), p.N = N, p.d = d, p.M = M, p.pass = pass;
    return p;
}

/* Over M = 4d .. d^2/2 (x2) at N = 4096 and d = 64, 128, the small-cache count of the passes
 * `pass` is Theta(N^2 d / sqrt M): its constant count sqrt(M) / (N^2 d) stays in [cmin, cmax],
 * compare(p, count) holds at each point (the test's comparisons with other schedules), and least
 * squares (GSL, as `flashlab bound` fits) on (ln M, ln count) gives a slope of -1/2 within one
 * standard error over at least 4 points.  Prints "<what> d = D: slope in M ..." for the log. */
static inline void expect_sqrt_m_regime(fl_pass pass, double cmin, double cmax,
                                        void (*compare)(const fl_problem *p, int64_t count), const char *what)
{
    const int64_t N = 4096, dims[] = {64, 128};
    for (int k = 0; k < 2; k++) {
        const int64_t d = dims[k];
        double x[16], y[16];
        size_t n = 0;
        for (int64_t M = 4 * d; M <= d * d / 2; M *= 2) {
            const fl_problem p = sc_prob(N, d, M, pass);
            fl_result r;
            cr_assert_eq(fl_run(&p, FL_COUNT, NULL, NULL, &r), FL_OK, "%s", fl_last_error());
            const double c = (double)r.total * sqrt((double)M) / ((double)N * (double)N * (double)d);
            cr_assert(c >= cmin && c <= cmax, "%s d %ld M %ld: constant %.3f", what, (long)d, (long)M, c);
            compare(&p, r.total);
            x[n] = log((double)M), y[n] = log((double)r.total), n++;
        }
        double c0, c1, v00, v01, v11, ss;
        gsl_fit_linear(x, 1, y, 1, n, &c0, &c1, &v00, &v01, &v11, &ss);
        const double se = sqrt(v11);
        printf("%s d = %ld: slope in M %.4f +- %.4f over %zu points (M = 4d .. d^2/2)\n", what, (long)d, c1, se, n);
        cr_assert_geq(n, 4);
        cr_assert(fabs(c1 + 0.5) <= se, "%s d %ld: slope %.4f +- %.4f", what, (long)d, c1, se);
    }
}

#endif
