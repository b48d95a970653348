/* grid.h: shared by the schedule tests: run a problem in both modes and assert that the
 * machine's counts equal the closed form (reads, writes, total, events, SRAM peak) and that in
 * compute mode every output matches the reference to 1e-12 relative (double; docs/model.md
 * §exactness).  1e-12 relative in double is about 4500 ulp (DBL_EPSILON = 2.2e-16): room for
 * the reordered sums of a tiled schedule, far below any real bug. */
#ifndef FL_TEST_GRID_H
#define FL_TEST_GRID_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "blocksparse_mask.h"
#include "decode.h"
#include "run.h"
#include "schedule.h"

#define FL_TEST_TOL 1e-12

/* The registered schedules whose descriptor accepts every field group of `accepts` (FL_ACCEPT_*)
 * and has none of the flags `without` (FL_SCHED_*), in registry order: the lists a test iterates
 * instead of typing them (scripts/check_layers.py refuses typed lists).  Returns their number. */
static inline int sched_list(unsigned accepts, unsigned without, fl_algo *out)
{
    int n = 0;
    for (int a = 0; a < fl_schedule_count(); a++) {
        const fl_schedule *s = fl_schedule_get((fl_algo)a);
        if ((s->accepts & accepts) == accepts && !(s->flags & without)) out[n++] = (fl_algo)a;
    }
    return n;
}
#define FL_TEST_REL_TOL FL_TEST_TOL

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
    int saves_L = 0; /* a schedule that saves the logsumexp L is checked on it */
    for (int t = 0; t < r.ntensors; t++) saves_L |= strcmp(r.t[t].name, "L") == 0;
    if (saves_L) {
        cr_assert(r.lse_rel_err <= FL_TEST_TOL, "%s: L rel err %g", what, r.lse_rel_err);
        w = fmax(w, r.lse_rel_err);
    }
    if (p->pass & FL_PASS_BWD) {
        cr_assert(r.dq_rel_err <= FL_TEST_TOL, "%s %s: dQ rel err %g", what, fl_algo_name(p->algo), r.dq_rel_err);
        cr_assert(r.dk_rel_err <= FL_TEST_TOL, "%s %s: dK rel err %g", what, fl_algo_name(p->algo), r.dk_rel_err);
        cr_assert(r.dv_rel_err <= FL_TEST_TOL, "%s %s: dV rel err %g", what, fl_algo_name(p->algo), r.dv_rel_err);
        w = fmax(w, fmax(r.dq_rel_err, fmax(r.dk_rel_err, r.dv_rel_err)));
        if (p->sinks) { /* the sinks' gradient too (docs/model.md rule SK) */
            cr_assert(r.dsink_rel_err <= FL_TEST_TOL, "%s %s: dsink rel err %g", what, fl_algo_name(p->algo),
                      r.dsink_rel_err);
            w = fmax(w, r.dsink_rel_err);
        }
    }
    if (worst && w > *worst) *worst = w;
}

/* A problem in one line, for messages: every field a schedule may read. */
static inline void describe(const fl_problem *p, char *buf, size_t n)
{
    snprintf(buf, n, "%s N=%lld Nk=%lld d=%lld d_v=%lld M=%lld Br=%lld Bc=%lld P=%lld S=%lld causal=%d "
                     "win=%lld,%lld s=%g sinks=%d cap=%g alibi=%d drop=%g eb=%d sb=%lld det=%d pass=%d",
             fl_algo_name(p->algo), (long long)p->N, (long long)p->Nk, (long long)p->d, (long long)p->d_v,
             (long long)p->M, (long long)p->Br, (long long)p->Bc, (long long)fl_kv_cache_of(p)->page_size,
             (long long)fl_kv_cache_of(p)->splits, (int)p->causal, (long long)p->window_left,
             (long long)p->window_right, fl_block_sparsity_or_default(p->block_mask)->density, p->sinks,
             p->softcap, p->alibi, p->dropout, p->elem_bytes, (long long)p->scale_block, p->deterministic,
             (int)p->pass);
}

/* expect_exact, then (compute set) expect_values, with p described in the messages; the
 * count-mode result through *out. */
static inline void check_exact(const fl_problem *p, int compute, fl_result *out)
{
    char what[256];
    describe(p, what, sizeof what);
    expect_exact(p, what, out);
    if (compute) expect_values(p, what, NULL);
}

#endif
