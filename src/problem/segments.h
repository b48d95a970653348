/* segments.h: a problem's (batch, head) attention problems laid out in packed HBM tensors
 * (docs/model.md §heads, §varlen).
 *
 * Layout: Q, O, dO, dQ and the per-row statistics have Hq * Tq rows, query head h's tokens at
 * rows h*Tq + t; K, V, dK, dV have Hkv * Tk rows, K/V head k's tokens at k*Tk + t.  Tq (Tk) is
 * the packed token count: batch * N (batch * Nk) for fixed lengths, N (Nk) with cu_seqlens.
 * Segments run sequence by sequence, and within a sequence query head by query head
 * (flash2-gqa: one segment per K/V head, stacking its G = Hq/Hkv query heads), so the first
 * segment to touch a K/V head's rows of a sequence is the one of its first query head
 * (kv_first).  Empty sequences have no segment.  Each segment carries the mask of its own
 * Nq x Nk problem.
 *
 * Segments are computed on demand (fl_segment_at), never stored: a count-only run over
 * millions of (batch, head) pairs holds no list.
 */
#ifndef FL_SEGMENTS_H
#define FL_SEGMENTS_H

#include <flashlab/problem.h>

#ifdef __cplusplus
extern "C" {
#endif

struct fl_segments {
    int64_t nseg;           /* segments: (non-empty sequences) * Hq / G */
    int64_t q_rows, k_rows; /* Hq * Tq and Hkv * Tk */
    int64_t Tq, Tk;
    int64_t Hq, Hkv, G, ratio; /* ratio = Hq / Hkv; G = ratio for flash2-gqa, else 1 */
    int64_t max_nq, max_nk;    /* the longest sequence's lengths */
    int64_t N, Nk;             /* per-sequence lengths without varlen */
    const int64_t *cq, *ck;    /* cu_seqlens (NULL without varlen) */
    int64_t *seq, nseq;        /* varlen: the non-empty sequences' indices */
    fl_causal causal;
    int64_t window_left, window_right;
    /* fp8's scale factors (docs/model.md rule Q8): rows per scale block (0: one per sequence and
     * head); per head, SQ Q scales and SK K/V scales; varlen: the scales of the sequences before
     * b, sq_pre[b] and sk_pre[b] (NULL otherwise) */
    int64_t sb, SQ, SK, q_scale_rows, k_scale_rows;
    int64_t *sq_pre, *sk_pre;
};

/* The scale blocks of a sequence of n rows with blocks of sb rows (0: one block): the scale
 * factors fp8 gives it (docs/model.md rule Q8). */
int64_t fl_scale_blocks(int64_t n, int64_t sb);

/* Describes the segments of p (which must pass fl_problem_check), whose schedule stacks G
 * query heads per segment (fl_problem_group, schedule.h).  FL_ENOMEM if the varlen index
 * cannot be allocated, FL_EOVERFLOW when the packed sizes do not fit.  Free with
 * fl_segments_free. */
fl_status fl_segments_build(const fl_problem *p, int64_t G, fl_segments *out);

/* Frees what fl_segments_build allocated; NULL is a no-op. */
void fl_segments_free(fl_segments *s);

#ifdef __cplusplus
}
#endif

#endif
