/* optimize.h: the IO-optimal tiling search (`flashlab optimize`).  docs/model.md §optimize.
 *
 * For a problem p (N, d, M, and its pass, mask and heads), search the feasible tiled schedules —
 * the loop order (flash1: K/V outer; flash2: queries outer), the query-head grouping (flash2-gqa
 * when several query heads share a K/V head), and every block pair (Br, Bc) on the search grid
 * below that fits in M for every pass — for the fewest HBM accesses.
 *
 * Search grid: for Br in {1, 2, 4, ...} and the longest query sequence, the largest Bc that fits;
 * for Bc in {1, 2, 4, ...} and the longest key sequence, the largest Br that fits; and each
 * schedule's default blocks.  Candidates are ranked by their exact closed form (cheap); the
 * best `top` of them and the default flash1 and flash2 schedules are then EXECUTED on the
 * count-only machine, and the reported best is the least simulated count.  A simulated count
 * that disagrees with its closed form is an error (FL_EBOUNDS), never a silent choice.  The
 * defaults are always among the executed candidates, so the result is never worse than the
 * better of flash1 and flash2 at the same M.
 */
#ifndef FL_OPTIMIZE_H
#define FL_OPTIMIZE_H

#include "run.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    fl_result best;           /* the winning schedule and blocks, as simulated */
    fl_result flash1, flash2; /* the fixed schedules at their default rules, as simulated */
    int have_flash1, have_flash2;
    int64_t considered;       /* candidates (schedule, Br, Bc) that fit in M */
    int64_t simulated;        /* candidates executed on the machine */
} fl_opt;

/* Searches as described above; `top` >= 1 is how many of the best-ranked candidates are
 * executed.  p->algo, p->Br and p->Bc are ignored (they are what is searched).  FL_ECAPACITY
 * when no schedule fits in M; other errors as fl_run. */
fl_status fl_optimize(const fl_problem *p, int top, fl_opt *out);

#ifdef __cplusplus
}
#endif

#endif
