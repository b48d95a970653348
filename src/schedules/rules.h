/* rules.h: what the tiled schedules' descriptors share (private to src/schedules/):
 *
 *   fl_rule_*        the skeleton of a block rule (docs/model.md §3): the problem's longest
 *                    sequences and group, "fits in M", the largest block that fits, and the end
 *                    every rule shares (too small, overrides, footprint);
 *   fl_fp_checked    a footprint of include/flashlab/footprint.h's coefficients, overflow-checked;
 *   fl_closed_*      the closed form of a tiled attention schedule as a sum over the problem's
 *                    segments of per-segment counts (docs/model.md §4, the variants' sums).
 */
#ifndef FL_SCHEDULES_RULES_H
#define FL_SCHEDULES_RULES_H

#include <stdint.h>

#include <flashlab/footprint.h>
#include <flashlab/footprint_split.h>
#include <flashlab/schedule.h>

#include "base/checked.h"

/* What a block rule is chosen for: the problem, the pass, the group G of stacked query heads,
 * the longest query and key sequences. */
typedef struct {
    const fl_problem *p;
    int bwd;
    int64_t G, nq, nk;
} fl_rule;

void fl_rule_init(fl_rule *r, const fl_problem *p, int bwd);

/* Nonzero when the pass's footprint at (Br, Bc, Bd) is at most M. */
int fl_rule_fits(const fl_rule *r, int64_t Br, int64_t Bc, int64_t Bd);

/* Largest B in [1, hi] with ok(B, ctx) (ok monotone: true up to some B); 0 if none.  The one
 * binary search every block rule uses. */
int64_t fl_largest(int64_t hi, int (*ok)(int64_t B, const void *ctx), const void *ctx);

/* fl_largest for a rule's ok(B, r). */
int64_t fl_rule_largest(int64_t hi, int (*ok)(int64_t, const fl_rule *), const fl_rule *r);

/* ok() for square blocks Br = Bc = B with Bd = d. */
int fl_rule_ok_square(int64_t B, const fl_rule *r);

/* The end of every tiled rule: *b holds the rule's blocks (0 where nothing fits).  Fails with
 * FL_ECAPACITY when the smallest tiles do not fit (their footprint computed with Bd = need_bd);
 * applies p->Br / p->Bc where nonzero (bd_of, when not NULL, recomputes Bd for them, 0 = none
 * fits) and refuses overrides that do not fit, naming eq. `label`; sets b->footprint. */
fl_status fl_rule_finish(const fl_rule *r, fl_blocks *b, const char *label, int64_t need_bd,
                         int64_t (*bd_of)(const fl_problem *p, int64_t Br, int64_t Bc));

/* rd*R*D + cd*C*D + rc*R*C + r*R (footprint.h) with R = G*Br, C = Bc, D = Bd; -1 on overflow. */
int64_t fl_fp_checked(fl_fp_coef k, int64_t G, int64_t Br, int64_t Bc, int64_t Bd);

/* fl_fp2_eval (footprint_split.h: Q-side columns Dq, V-side Dv) with R = G*Br, C = Bc; -1 on overflow. */
int64_t fl_fp_checked2(fl_fp_split k, int64_t G, int64_t Br, int64_t Bc, int64_t Dq, int64_t Dv);

/* A footprint larger than 2^63 - 1 as text ("more than ..."), else the number, for messages. */
const char *fl_need_text(int64_t need, char *buf, size_t n);

/* One segment's counts of a pass (bwd) with blocks b, added into *r through the sticky
 * overflow flag c (r->sram_peak: the largest of the segment's own buffers). */
typedef void (*fl_segment_counts)(ck *c, const fl_problem *p, int bwd, const fl_seg *s,
                                  const fl_blocks *b, fl_counts *r);

/* The closed form of a tiled attention schedule: the sum of seg over every segment of p
 * (evaluated once per distinct segment shape), peak max(footprint, segments' peaks).
 * FL_EOVERFLOW naming N, d, batch and heads when a count cannot fit. */
fl_status fl_closed_sum(const fl_problem *p, int bwd, const fl_blocks *b, fl_segment_counts seg,
                        fl_counts *out);

/* Nonzero for the plain problem whose closed forms (C0)-(C2) are O(1): one dense head, Nq = Nk,
 * one sequence, forward, no group stacking, and no variant that adds traffic (sinks, dropout,
 * fp8; d_v, softcap and ALiBi are in the O(1) forms). */
int fl_closed_is_plain(const fl_problem *p, int bwd);

/* A schedule's O(1) counts of the plain problem (reads, writes, events, sram_peak into *r
 * through the overflow flag c). */
typedef void (*fl_plain_counts)(ck *c, const fl_problem *p, const fl_blocks *b, fl_counts *r);

/* The closed form of a tiled attention schedule: plain's counts for the plain problem, else the
 * sum of seg over the segments (fl_closed_sum).  FL_EOVERFLOW naming N and d on overflow. */
fl_status fl_closed_tiled(const fl_problem *p, int bwd, const fl_blocks *b, fl_plain_counts plain,
                          fl_segment_counts seg, fl_counts *out);

/* The refusal of a closed form that overflows 64 bits: FL_EOVERFLOW naming N and d. */
fl_status fl_closed_overflow(const fl_problem *p);

/* x += v through c. */
static inline void fl_acc(ck *c, int64_t *x, int64_t v) { *x = add(c, *x, v); }

/* The tile events a tiled attention run must at least make (forward blocks b, backward blocks
 * bb or NULL), saturating: every row block's output is stored once per segment, and the
 * backward touches every key block of a segment that first writes its dK, dV. */
int64_t fl_events_floor_tiled(const fl_problem *p, const fl_blocks *b, const fl_blocks *bb);

/* The closed_form_terms of a closed form that walks the key blocks of a sequence in every pass
 * (flash1's (C1), every backward's): ceil(nk / Bc) (schedule.h). */
int64_t fl_terms_key_blocks(int bwd, int dense, int64_t nq, int64_t nk, int64_t Br, int64_t Bc);

#endif

/* Largest B in [1, hi] with fp(B) in [0, M] (fp nondecreasing in B), 0 if none; B is Bc (the
 * other block fixed at `other`) when vary_bc is 1, Br when 0, and both (square blocks) when 2. */
int64_t fl_largest_fp(int64_t hi, int64_t M, int64_t (*fp)(const fl_problem *, int64_t, int64_t),
                      const fl_problem *p, int64_t other, int vary_bc);

/* The end of the closed form of a schedule with a problem of its own: s is the status of its
 * sum (FL_EOVERFLOW, or the flag of c, when a count overflowed); sets r->total and copies *r to
 * *out.  FL_EOVERFLOW naming N, Nk and d on overflow; other errors as they are. */
fl_status fl_closed_finish_own(const fl_problem *p, fl_status s, ck *c, fl_counts *r, fl_counts *out);

/* FL_EINVAL naming N, Nk, d when a compute run would hold `values` > FL_COMPUTE_MAX_VALUES values
 * in HBM (the compute_size of the schedules with a problem of their own). */
fl_status fl_compute_size_refuse(const fl_problem *p, double values);
