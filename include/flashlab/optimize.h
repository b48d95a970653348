/* optimize.h: the exact IO-optimal tiling search (`flashlab optimize`).  docs/model.md §7 states
 * the family and proves the pruning rules; docs/bounds.md the lower bound it is compared with.
 *
 * For a problem p (N, Nk, d, M, its pass, mask or window, heads, varlen) the family is every
 * registered schedule whose descriptor has a search for each pass p runs (schedule.h: `search`;
 * a schedule that stacks a GQA group only when Hq > Hkv) -- today standard, flash1, flash2,
 * flash2-gqa and, for the forward, smallcache -- with every block pair (Br, Bc) in
 * [1, longest Nq] x [1, longest Nk] whose footprint fits in M, chosen separately for the forward
 * and the backward (--pass fwd+bwd runs the same schedule's forward and backward with their own
 * blocks); a schedule that chunks d takes Bd = the largest chunk that fits beside Br x Bc.  The
 * minimum of the closed forms over the family is found exactly, by the lemma each descriptor
 * names: least at Br = 1 for each Bc (O1), at Bc = 1 for each Br (O2), on the frontier "Bc the
 * largest that fits" for each (Br, chunk count) (O3), or by branch and bound with the
 * schedule's proven count floor (O4).  Among equal counts the fewest tile events found win.  The
 * best `top` candidates are then EXECUTED on the count-only machine (a fwd+bwd candidate as its
 * two passes, `count --pass fwd` plus `count --pass bwd` with their blocks); a simulated count
 * that differs from its closed form is an error (FL_EBOUNDS), never a silent choice.
 */
#ifndef FL_OPTIMIZE_H
#define FL_OPTIMIZE_H

#include "bounds.h"
#include "run.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One schedule of the family with its blocks, as executed. */
typedef struct {
    fl_algo algo;
    int64_t Br, Bc, Bd;             /* the forward's blocks (0 when the pass has no forward) */
    int64_t Br_bwd, Bc_bwd, Bd_bwd; /* the backward's blocks (0 when the pass has no backward) */
    int64_t fwd_total, bwd_total;   /* elements each pass moved, simulated */
    int64_t total, events;          /* their sums */
    int64_t sram_peak;              /* the larger of the passes' peaks */
} fl_opt_choice;

/* The most schedules optimize runs beside its result (those flagged FL_SCHED_COMPARED). */
#define FL_OPT_MAX_COMPARED 4

typedef struct {
    fl_opt_choice best;       /* the least simulated count of the family */
    struct {                  /* the schedules flagged FL_SCHED_COMPARED (schedule.h), in registry */
        fl_algo algo;         /* order, at their default rules, as simulated (have = 0: they */
        int have;             /* refused the problem, e.g. nothing fits in M) */
        fl_result r;
    } compared[FL_OPT_MAX_COMPARED];
    int ncompared;
    fl_lower_bound lb;        /* the problem's lower bound (bounds.h) */
    int64_t evaluated;        /* closed forms evaluated */
    int64_t pruned;           /* block pairs skipped by the bound of lemma O4 */
    int64_t simulated;        /* candidates executed on the machine */
    int64_t work;             /* block terms the evaluated closed forms walked */
    int64_t steps;            /* work, plus the tile events of the executed candidates and of the
                               * compared schedules: what counted against max_work */
    int nfamily;              /* the family searched (schedule.h: a search for each pass the */
    fl_algo family[FL_ALGO_MAX]; /* problem runs), in the order searched */
} fl_opt;

/* FL_EINVAL, naming the option, when p sets a field of a problem that is not the family's: a KV
 * cache (decode) or a block mask (blocksparse).  FL_OK otherwise (p->algo is ignored; the rest
 * of p is checked by fl_optimize). */
fl_status fl_optimize_check(const fl_problem *p);

/* Steps of optimize a second here: a block term of a closed form or a tile event of an executed
 * run (each runs at about 1e8 a second on the 2-core build machine: run.h). */
#define FL_OPT_STEPS_PER_SECOND 1e8

/* The default of `max_work`: the steps of one optimize, the search's block terms and the tile
 * events of the candidates and compared schedules it executes (about 30 s here). */
#define FL_OPT_MAX_WORK INT64_C(3000000000)

/* What fl_optimize(p, ...) will take at least, before any work: the up-front estimate of the
 * search's block terms and the compared schedules' tile events (the executed candidates' are
 * known only after the search).  For a caller that optimizes a list of problems (of M) in one
 * budget.  FL_EINVAL etc. as fl_optimize's checks of p. */
fl_status fl_optimize_estimate(const fl_problem *p, int64_t *steps);

/* Searches the family above.  top >= 1: how many of the best candidates are executed.
 * max_work >= 1: the budget of the whole call in steps (a block term walked, a tile event
 * executed): refused (FL_EINVAL naming --max-work, with the estimate) up front when the search's
 * estimate and the compared schedules' events pass it, else when the search's running count
 * passes what the compared schedules leave, else, before any is executed, when the candidates'
 * events (from their closed forms) would pass it; out->steps says what was used.  p->algo, p->Br and p->Bc are ignored (they are what is searched).
 * FL_ECAPACITY when no schedule fits in M; FL_EINVAL naming the option for the fields of a
 * KV cache or a block mask (fl_optimize_check) and for a best candidate that makes more than
 * p->max_events tile events; other errors as fl_run. */
fl_status fl_optimize(const fl_problem *p, int top, int64_t max_work, fl_opt *out);

/* fl_optimize for each of the n problems p[0..n), into out[0..n), up to `jobs` at once on threads
 * (pool.h; 0: the default).  The result is that of the loop over k in order: on an error, the
 * error of the first failing k (later problems may have run; their results are unspecified). */
fl_status fl_optimize_each(const fl_problem *p, int n, int top, int64_t max_work, int jobs, fl_opt *out);

#ifdef __cplusplus
}
#endif

#endif
