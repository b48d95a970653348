/* ops.h: arithmetic on SRAM-resident buffers.  A schedule computes only through these (and
 * through the row loops it writes beside the paper's lines), never on HBM tensors.
 *
 * Every op is a no-op in FL_COUNT mode (the buffer has no storage), so a schedule may call
 * them unconditionally; the machine counts nothing for on-chip work (docs/model.md rule R3).
 */
#ifndef FL_OPS_H
#define FL_OPS_H

#include <stdint.h>

#include "machine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sets the top-left nr x nc tile of b to v. */
void fl_op_fill(fl_buf *b, int64_t nr, int64_t nc, double v);

/* C[0:m, 0:n] = alpha * A[0:m, 0:k] * op(B) (+ C when accumulate), where op(B) is B[0:n, 0:k]^T
 * when transB, else B[0:k, 0:n].  C must not alias A or B. */
void fl_op_matmul(fl_buf *C, const fl_buf *A, const fl_buf *B, int64_t m, int64_t n, int64_t k,
                  int transB, double alpha, int accumulate);

/* One step of online softmax for one row (Milakov & Gimelshein; docs/model.md eq. (OS)):
 * state (m, l, u[0:dv]) absorbs scores s[0:n] with value rows v[j*ldv + 0:dv]:
 *   m' = max(m, max s);  a = exp(m - m');  l' = a*l + sum exp(s - m');
 *   u' = a*u + sum_j exp(s_j - m') v_j.
 * Scores of -inf are masked.  A step whose scores are all -inf changes nothing (it is skipped
 * before any exp, since -inf - -inf is undefined).  A NaN or +inf score makes the state NaN,
 * and it stays NaN (docs/errors.md: NaN propagates, it is never taken for a masked score).  Returns the rescale factor a (1 when
 * skipped, 0 when the state was empty).  p (if not NULL) receives exp(s - m'). */
double fl_osm_step(double *m, double *l, double *u, int64_t dv, const double *s, int64_t n,
                   const double *v, int64_t ldv, double *p);

/* fl_osm_step for a caller that holds arrays of known lengths (the Python binding), which this
 * checks instead of trusting: u holds u_len >= dv values; the step absorbs all s_len >= 1 scores
 * of s; v holds v_rows rows of ldv >= dv values, one per score (v_rows == s_len); p, when not
 * NULL, holds p_len >= s_len entries.  FL_EINVAL naming the array and the rule otherwise; else
 * *a receives fl_osm_step's rescale factor. */
fl_status fl_osm_step_checked(double *m, double *l, double *u, int64_t u_len, int64_t dv,
                              const double *s, int64_t s_len, const double *v, int64_t v_rows,
                              int64_t ldv, double *p, int64_t p_len, double *a);

/* Finishes a row: out[0:dv] = u / l, or zeros when l == 0 (no legal key; docs/model.md rule M0);
 * a NaN l gives NaN.
 * out may alias u. */
void fl_osm_finish(double l, const double *u, int64_t dv, double *out);


/* Online softmax over a whole row in tiles of `tile` scores: out[0:dv] = softmax(s[0:n]) V,
 * computed by fl_osm_step per tile and fl_osm_finish.  FL_EINVAL if tile < 1 or n < 1;
 * FL_ENOMEM if the numerator cannot be allocated. */
fl_status fl_osm_tiled(const double *s, int64_t n, const double *V, int64_t dv, int64_t tile,
                       double *out);

/* fl_osm_tiled with the arrays' lengths checked: s has n scores, V holds v_len == n * dv values,
 * out holds out_len >= dv.  FL_EINVAL naming the array and the rule otherwise. */
fl_status fl_osm_tiled_checked(const double *s, int64_t n, const double *V, int64_t v_len, int64_t dv,
                               int64_t tile, double *out, int64_t out_len);

#ifdef __cplusplus
}
#endif

#endif
