/* smallcache.h: the small-cache schedule (smallcache.c), for the runner's dispatch and the tests.
 *
 * Exact attention for SRAM smaller than d^2 (Saha & Ye, arXiv 2402.07443, §4): both products
 * are blocked over d, so no tile needs a whole row of d.  docs/model.md §4.6 states the loop,
 * the footprint (Fsc), the block rule (Bsc) and the closed form (Csc); docs/bounds.md why it
 * attains Theta(N^2 d / sqrt M) there.  Forward only; no logsumexp is written. */
#ifndef FL_SCHED_SMALLCACHE_H
#define FL_SCHED_SMALLCACHE_H

#include <stdio.h>

#include <flashlab/problem.h>
#include "schedules.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The forward loop (contract of schedules.h). */
fl_status fl_schedule_smallcache(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io);

/* (Fsc) Br*Bc + (Br + Bc)*Bd + 3*Br: S_ij, a Q/O chunk, a K/V chunk, and m_i, l_i, a_i.  The
 * forward's; bwd and G are accepted for the descriptor's signature (bwd must be 0, G is 1).
 * -1 on overflow. */
int64_t fl_smallcache_footprint(const fl_problem *p, int bwd, int64_t G, int64_t Br, int64_t Bc, int64_t Bd);

/* Rule (Bsc), overrides p->Br / p->Bc, Bd the largest chunk that fits beside them.  bwd must be
 * 0 (forward only).  FL_ECAPACITY when M < 6; FL_EINVAL naming --Br/--Bc when an override does
 * not fit. */
fl_status fl_smallcache_blocks(const fl_problem *p, int bwd, fl_blocks *b);

/* (Csc), summed over the problem's segments.  FL_EOVERFLOW when a count does not fit. */
fl_status fl_smallcache_closed_form(const fl_problem *p, int bwd, const fl_blocks *b, fl_counts *c);

/* FL_EINVAL naming --pass unless p is a forward problem. */
fl_status fl_smallcache_check(const fl_problem *p);

/* A lower bound on the tile events of a run with forward blocks b (bb unused: forward only),
 * cheap, saturating at INT64_MAX: every row block of every segment stores its O in Td chunks
 * (Esc).  For the descriptor's events_floor, checked against --max-events before the closed
 * form walks the row blocks of a masked problem. */
int64_t fl_smallcache_events_floor(const fl_problem *p, const fl_blocks *b, const fl_blocks *bb);

/* `count --explain`: the block rule and what it derived. */
void fl_smallcache_explain(FILE *out, const fl_problem *p, const fl_blocks *b);

#ifdef __cplusplus
}
#endif

#endif
