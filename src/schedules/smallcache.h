/* smallcache.h: the small-cache schedule (smallcache.c, smallcache_bwd.c), for the runner's
 * dispatch and the tests.
 *
 * Exact attention for SRAM smaller than d^2 (Saha & Ye, arXiv 2402.07443, §4): every product
 * is blocked over d, so no tile needs a whole row of d.  docs/model.md §4.6 states the forward's
 * loop, footprint (Fsc), block rule (Bsc) and closed form (Csc), §12.1 the backward's (Fscb,
 * Bscb, Cscb); docs/bounds.md why both attain Theta(N^2 d / sqrt M) there.  The forward writes the
 * logsumexp L that the backward recomputes P from. */
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

/* (Fsc) Br*Bc + (Br + Bc)*Bd + 3*Br: S_ij, a Q/O chunk, a K/V chunk, and m_i, l_i, a_i; with bwd,
 * (Fscb).  G is accepted for the descriptor's signature (1).  -1 on overflow. */
int64_t fl_smallcache_footprint(const fl_problem *p, int bwd, int64_t G, int64_t Br, int64_t Bc, int64_t Bd);

/* The backward takes none of the variants of docs/model.md §14: FL_EINVAL naming {pass} when p
 * asks for its backward with any of them; FL_OK otherwise. */
fl_status fl_smallcache_check(const fl_problem *p);

/* Rule (Bsc) (forward) or (Bscb) (bwd), overrides p->Br / p->Bc, Bd the largest chunk that fits
 * beside them.  FL_ECAPACITY when nothing fits; FL_EINVAL naming --Br/--Bc when an override does
 * not fit. */
fl_status fl_smallcache_blocks(const fl_problem *p, int bwd, fl_blocks *b);

/* (Csc) or, bwd, (Cscb), summed over the problem's segments.  FL_EOVERFLOW when a count does not
 * fit. */
fl_status fl_smallcache_closed_form(const fl_problem *p, int bwd, const fl_blocks *b, fl_counts *c);

/* ---- the backward (smallcache_bwd.c) ---- */

/* The backward loop (contract of schedules.h); it reads the L its forward saved. */
fl_status fl_schedule_smallcache_bwd(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io);

/* (Fscb) 2 Br Bc + (Br + Bc) Bd + 2 Br: S_ij/P_ij, dP_ij/dS_ij, a chunk of Br rows, one of Bc rows,
 * and L_i, D_i.  -1 on overflow. */
int64_t fl_smallcache_bwd_footprint(int64_t Br, int64_t Bc, int64_t Bd);

/* (Cscb), (Escb) of one segment, added into *r through the overflow flag c. */
void fl_smallcache_bwd_segment(ck *c, const fl_seg *s, const fl_blocks *b, int64_t d, fl_counts *r);

/* Lemma O4's bound on (Cscb) over one sequence kept by mk, for blocks Br and every Bc <= cmax at
 * head dimension d (docs/model.md §7). */
double fl_smallcache_bwd_count_floor(const fl_mask *mk, int64_t d, int64_t Br, int64_t cmax);

/* A lower bound on the tile events of a run with forward blocks b and backward blocks bb (NULL
 * without a backward), cheap, saturating at INT64_MAX: every row block of every segment stores
 * its O in Td chunks (Esc), and the backward's step 0 makes 2 Td + 1 events per block (Escb).
 * For the descriptor's events_floor, checked against --max-events before the closed form walks
 * the row blocks of a masked problem. */
int64_t fl_smallcache_events_floor(const fl_problem *p, const fl_blocks *b, const fl_blocks *bb);

/* `count --explain`: the block rule and what it derived. */
void fl_smallcache_explain(FILE *out, const fl_problem *p, const fl_blocks *b);

#ifdef __cplusplus
}
#endif

#endif
