/* grid.h: shared by the variant tests: run a problem in both modes and assert that the machine's
 * counts equal the closed form (reads, writes, total, events, SRAM peak) and that in compute mode
 * every output matches the reference to 1e-12 relative (double; docs/model.md §exactness). */
#ifndef FL_TEST_GRID_H
#define FL_TEST_GRID_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>

#include "run.h"

#define FL_TEST_TOL 1e-12

/* Counts equal the closed form; returns the count-mode result in *out (may be NULL). */
static inline void expect_exact(const fl_problem *p, const char *what, fl_result *out)
{
    fl_result r;
    fl_status s = fl_run(p, FL_COUNT, NULL, NULL, &r);
    cr_assert_eq(s, FL_OK, "%s: %s", what, fl_last_error());
    cr_assert_eq(r.reads, r.closed.reads, "%s %s: reads %lld vs closed form %lld", what, fl_algo_name(p->algo),
                 (long long)r.reads, (long long)r.closed.reads);
    cr_assert_eq(r.writes, r.closed.writes, "%s %s: writes %lld vs closed form %lld", what, fl_algo_name(p->algo),
                 (long long)r.writes, (long long)r.closed.writes);
    cr_assert_eq(r.total, r.closed.total, "%s: total", what);
    cr_assert_eq(r.events, r.closed.events, "%s %s: events %lld vs %lld", what, fl_algo_name(p->algo),
                 (long long)r.events, (long long)r.closed.events);
    cr_assert_eq(r.sram_peak, r.closed.sram_peak, "%s %s: sram peak %lld vs %lld", what, fl_algo_name(p->algo),
                 (long long)r.sram_peak, (long long)r.closed.sram_peak);
    cr_assert_leq(r.sram_peak, p->M, "%s: SRAM peak above M", what);
    if (out) *out = r;
}

/* Values match the reference; the compute run counts what the count run counts. */
static inline void expect_values(const fl_problem *p, const char *what, double *worst)
{
    fl_result r, c;
    cr_assert_eq(fl_run(p, FL_COMPUTE, NULL, NULL, &r), FL_OK, "%s: %s", what, fl_last_error());
    cr_assert_eq(fl_run(p, FL_COUNT, NULL, NULL, &c), FL_OK);
    cr_assert_eq(r.total, c.total, "%s: compute and count runs differ", what);
    cr_assert(r.rel_err <= FL_TEST_TOL, "%s %s: O rel err %g", what, fl_algo_name(p->algo), r.rel_err);
    double w = r.rel_err;
    if (!isnan(r.lse_rel_err)) {
        cr_assert(r.lse_rel_err <= FL_TEST_TOL, "%s: L rel err %g", what, r.lse_rel_err);
        w = fmax(w, r.lse_rel_err);
    }
    if (p->pass & FL_PASS_BWD) {
        cr_assert(r.dq_rel_err <= FL_TEST_TOL, "%s %s: dQ rel err %g", what, fl_algo_name(p->algo), r.dq_rel_err);
        cr_assert(r.dk_rel_err <= FL_TEST_TOL, "%s %s: dK rel err %g", what, fl_algo_name(p->algo), r.dk_rel_err);
        cr_assert(r.dv_rel_err <= FL_TEST_TOL, "%s %s: dV rel err %g", what, fl_algo_name(p->algo), r.dv_rel_err);
        w = fmax(w, fmax(r.dq_rel_err, fmax(r.dk_rel_err, r.dv_rel_err)));
    }
    if (worst && w > *worst) *worst = w;
}

#endif
