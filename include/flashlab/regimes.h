/* regimes.h: the optimum, each schedule and the lower bound against M on both sides of M = d^2
 * -- the data of figure (g) and the per-regime summary of `flashlab report` (docs/analysis.md
 * §5, docs/bounds.md §3). */
#ifndef FL_REGIMES_H
#define FL_REGIMES_H

#include <stdint.h>
#include <stdio.h>

#include <flashlab/optimize.h>

typedef struct {
    int64_t N, d, M;
    fl_pass pass;               /* FL_PASS_FWD or FL_PASS_BWD (the backward alone) */
    int64_t count[FL_ALGO_MAX]; /* each schedule of fl_regime_scheds at its default rule; -1: its
                                   smallest tiles do not fit, or it has no search for the pass */
    fl_opt opt;                 /* the optimum of the family (optimize.h) and the bound */
} fl_regime_point;

/* The schedules drawn beside the optimum, each at its default rule: those in the family of one
 * dense head for the forward or the backward (a search for the pass, no group stacked), in
 * registry order, less one whose forward loop and block rule an earlier one has (on a dense head
 * it counts alike: standard-skip).  Returns their number. */
int fl_regime_scheds(fl_algo *out);

/* The grid of figure (g): the forward and the backward alone, one dense head, N = 4096, d = 64
 * and 128, M = d, 2d, ..., Nd (pass-major).  Every count is executed on the count-only machine
 * (fl_run, fl_optimize).  The result is kept for the life of the process, so the report's summary
 * and its figure compute it once; *pts points into that store.  FL_ENOMEM or a run's error
 * otherwise. */
fl_status fl_regimes_collect(const fl_regime_point **pts, size_t *n);

/* Fills pt's counts and optimum at its (N, d, M, pass), one dense head; each schedule of
 * fl_regime_scheds at its default rule (-1 where its smallest tiles do not fit), checked equal to
 * its closed form (FL_EBOUNDS otherwise), and fl_optimize's optimum and bound. */
fl_status fl_regime_point_at(fl_regime_point *pt);

/* Computes the points v[0..n) (N, d, M set by the caller) with fl_regime_point_at and keeps v
 * as *store (n points in *nstore), the points on a pool (pool.h); on an error frees v, keeps nothing and returns it. */
fl_status fl_regimes_keep(fl_regime_point *v, size_t n, fl_regime_point **store, size_t *nstore);

/* Writes the column line and one row per point (the columns below), without provenance lines;
 * FL_EIO naming `what` when a write fails. */
fl_status fl_regimes_write_rows(FILE *f, const fl_regime_point *pts, size_t n, const char *what);

/* The summary table's column line (width receives each schedule's column width) and one row:
 * d, M, M/d^2, the optimum with its blocks, the bound, the optimum's and each schedule's ratio to
 * the bound ('-' where a schedule does not fit). */
void fl_regimes_print_header(FILE *out, int ns, const fl_algo *sched, int *width);
void fl_regimes_print_row(FILE *out, const fl_regime_point *p, int ns, const int *width);

/* Writes the grid as CSV with provenance lines ('-' where a schedule does not fit or has no such
 * pass): N,d,M,pass, a column per schedule of fl_regime_scheds, optimum,optimum_algo,opt_Br,
 * opt_Bc,lower_bound,floor,product (opt_Br, opt_Bc: the pass's blocks).
 * FL_EIO when a write fails. */
fl_status fl_regimes_write_csv(FILE *f, const fl_regime_point *pts, size_t n);

/* Prints the summary, per pass: every fourth M (d, 4d, 16d, ...) with the optimum, its ratio to
 * the bound and each schedule's, then per regime (M < d^2, M >= d^2) which schedules are optimal
 * and the range of the optimum's ratio to the bound. */
void fl_regimes_print(FILE *out, const fl_regime_point *pts, size_t n);

/* Collects the grid and writes it as CSV to path (figure (g)'s data).  FL_EIO naming the file. */
fl_status fl_regimes_write_path(const char *path);

/* The gnuplot variables of figure (g): gpu = the GPU records beside the scripts
 * (data/gpu_validate.csv in the folder `scripts`: figures/data/gpu_validate.csv in the repository)
 * when that file can be read, else ''. */
void fl_regimes_gnuplot_vars(const char *scripts, char *vars, size_t n);

#endif
