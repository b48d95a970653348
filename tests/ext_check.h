/* ext_check.h: the checks every test of the issue-4 items 5-7 schedules makes on one problem
 * (header-only, static; included by tests/test_decode.c, test_blocksparse.c, test_memeff.c,
 * test_softmax_alone.c):
 *   count mode: reads, writes, events and SRAM peak equal the closed form (docs/model.md);
 *   compute mode: the same counts, and the output within 1e-12 relative of reference/.
 * Tolerance: 1e-12 relative in double is about 4500 ulp (DBL_EPSILON = 2.2e-16): room for the
 * reordered sums of a tiled schedule, far below any real bug. */
#ifndef FL_TEST_EXT_CHECK_H
#define FL_TEST_EXT_CHECK_H

#include <criterion/criterion.h>
#include <float.h>
#include <stdio.h>
#include <string.h>
#include <math.h>

#include "run.h"

#define FL_TEST_REL_TOL (4500.0 * DBL_EPSILON)

static void describe(const fl_problem *p, char *buf, size_t n)
{
    snprintf(buf, n, "%s N=%lld Nk=%lld d=%lld M=%lld Br=%lld Bc=%lld P=%lld S=%lld causal=%d "
                     "win=%lld,%lld s=%g",
             fl_algo_name(p->algo), (long long)p->N, (long long)p->Nk, (long long)p->d,
             (long long)p->M, (long long)p->Br, (long long)p->Bc, (long long)p->page_size,
             (long long)p->splits, (int)p->causal, (long long)p->window_left,
             (long long)p->window_right, p->density);
}

/* Runs p in count mode (and compute mode when compute is set) and asserts the counts equal the
 * closed form and the values the reference.  Returns the count-mode result through *out. */
static void check_exact(const fl_problem *p, int compute, fl_result *out)
{
    char what[256];
    fl_result r;
    describe(p, what, sizeof what);
    cr_assert_eq(fl_run(p, FL_COUNT, NULL, NULL, &r), FL_OK, "%s: %s", what, fl_last_error());
    cr_expect_eq(r.reads, r.closed.reads, "%s: reads %lld, closed form %lld", what,
                 (long long)r.reads, (long long)r.closed.reads);
    cr_expect_eq(r.writes, r.closed.writes, "%s: writes %lld, closed form %lld", what,
                 (long long)r.writes, (long long)r.closed.writes);
    cr_expect_eq(r.events, r.closed.events, "%s: events %lld, closed form %lld", what,
                 (long long)r.events, (long long)r.closed.events);
    cr_expect_eq(r.sram_peak, r.closed.sram_peak, "%s: SRAM peak %lld, closed form %lld", what,
                 (long long)r.sram_peak, (long long)r.closed.sram_peak);
    cr_expect_leq(r.sram_peak, p->M, "%s: SRAM peak above M", what);
    if (out) *out = r;
    if (!compute) return;
    fl_result c;
    cr_assert_eq(fl_run(p, FL_COMPUTE, NULL, NULL, &c), FL_OK, "%s: %s", what, fl_last_error());
    cr_expect_eq(c.total, r.total, "%s: compute and count modes differ", what);
    cr_expect(c.rel_err <= FL_TEST_REL_TOL, "%s: rel. error %g", what, c.rel_err);
    if (!isnan(c.lse_rel_err) || p->algo == FL_ALGO_DECODE || p->algo == FL_ALGO_BLOCKSPARSE)
        cr_expect(c.lse_rel_err <= FL_TEST_REL_TOL, "%s: logsumexp rel. error %g", what, c.lse_rel_err);
}

#endif
