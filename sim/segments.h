/* segments.h: a problem's (batch, head) attention problems laid out in packed HBM tensors
 * (docs/model.md §heads, §varlen).
 *
 * Layout: Q, O, dO, dQ and the per-row statistics have Hq * Tq rows, query head h's tokens at
 * rows h*Tq + t; K, V, dK, dV have Hkv * Tk rows, K/V head k's tokens at k*Tk + t.  Tq (Tk) is
 * the packed token count: batch * N (batch * Nk) for fixed lengths, N (Nk) with cu_seqlens.
 * Segments run batch by batch, and within a sequence query head by query head (flash2-gqa: one
 * segment per K/V head, stacking its G = Hq/Hkv query heads), so the first segment to touch a
 * K/V head's rows of a sequence is the one of its first query head (kv_first).  Empty sequences
 * have no segment.  Each segment carries the mask of its own Nq x Nk problem.
 */
#ifndef FL_SEGMENTS_H
#define FL_SEGMENTS_H

#include "problem.h"
#include "schedules.h"

typedef struct {
    fl_seg *seg;
    int64_t nseg;
    int64_t q_rows, k_rows; /* Hq * Tq and Hkv * Tk */
    int64_t Tq, Tk;
} fl_segments;

/* Most (batch, head) problems one run may hold (the list takes about 100 bytes each). */
#define FL_MAX_SEGMENTS (INT64_C(1) << 20)

/* Builds the segments of p (which must pass fl_problem_check).  FL_ENOMEM if the list cannot be
 * allocated, FL_EOVERFLOW when the packed sizes do not fit, FL_EINVAL (naming --batch/--heads)
 * beyond FL_MAX_SEGMENTS segments.  Free with fl_segments_free. */
fl_status fl_segments_build(const fl_problem *p, fl_segments *out);

/* Frees the list; NULL or an empty list is a no-op. */
void fl_segments_free(fl_segments *s);

#endif
