/* attention_ref.h: exact attention in double precision, the oracle every schedule and kernel is
 * checked against.  This is the readable reference: one row at a time, scores materialized, no
 * tiling, no cleverness.
 *
 *   S = scale * Q K^T,  S_ij = -inf where keep(i, j) is false,
 *   O_i = sum_j softmax(S_i)_j V_j,  L_i = log sum_j exp(S_ij)   (the logsumexp)
 *
 * A row with no kept key outputs zeros and L_i = -inf (the FlashAttention convention; ordinary
 * softmax of an all -inf row is undefined).  The exponentials are shifted by the row maximum, so
 * adding a constant to every score changes nothing.
 */
#ifndef FL_ATTENTION_REF_H
#define FL_ATTENTION_REF_H

#include <stdint.h>

#include <flashlab/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* keep(i, j, ctx): nonzero when query i may attend to key j. */
typedef int (*fl_keep_fn)(int64_t i, int64_t j, const void *ctx);

/* Q is Nq x d, K is Nk x d, V is Nk x dv, all row-major.  Writes O (Nq x dv) and, when L is not
 * NULL, L (Nq).  keep NULL means every key is kept.  FL_EINVAL for non-positive sizes,
 * FL_ENOMEM if the row workspace cannot be allocated. */
fl_status fl_ref_attention(int64_t Nq, int64_t Nk, int64_t d, int64_t dv, const double *Q,
                           const double *K, const double *V, double scale, fl_keep_fn keep,
                           const void *ctx, double *O, double *L);

/* One row: out[0:dv] = softmax(s[0:n]) V, with V n x dv row-major and -inf scores masked.
 * Returns the row's logsumexp (-inf, with out = 0, when every score is -inf).  A NaN or +inf
 * score gives a NaN output and logsumexp (docs/errors.md). */
double fl_ref_softmax_row(const double *s, int64_t n, const double *V, int64_t dv, double *out);

/* max |a - b| over n values, and the relative error max|a - b| / max|b| (max|a - b| when b is
 * all zeros).  NaN anywhere gives NaN. */
double fl_max_abs_diff(const double *a, const double *b, int64_t n);
double fl_rel_err(const double *a, const double *b, int64_t n);

#ifdef __cplusplus
}
#endif

#endif
