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

/* The variants of the problem (docs/model.md §14), for one (sequence b, query head h) matrix of
 * Nq queries i and Nk keys j.  Each score, in this order:
 *
 *   s = scale q_i . k_j;  softcap > 0: s = softcap tanh(s / softcap);
 *   alibi_slope != 0: s -= alibi_slope |i + Nk - Nq - j|;  not kept: s = -inf.
 *
 * has_sink: the logit `sink` joins every row's softmax as a key whose value is 0, so
 * L_i = log(sum_j e^(s_ij) + e^sink) and a row with no kept key has O = 0, L = sink.
 * dropout p > 0: O_i = sum_j P_ij Z_ij / (1 - p) V_j with Z_ij = fl_dropout_keep(seed, b, h, i,
 * j, p) (rng.h); L is the softmax's, before dropout.  NULL (or every field 0): plain attention. */
typedef struct {
    double softcap, alibi_slope;
    int has_sink;
    double sink;
    double dropout;
    uint64_t seed;
    int64_t b, h;
} fl_ref_variant;

/* Q is Nq x d, K is Nk x d, V is Nk x dv, all row-major.  Writes O (Nq x dv) and, when L is not
 * NULL, L (Nq).  keep NULL means every key is kept.  FL_EINVAL for non-positive sizes,
 * FL_ENOMEM if the row workspace cannot be allocated. */
fl_status fl_ref_attention(int64_t Nq, int64_t Nk, int64_t d, int64_t dv, const double *Q,
                           const double *K, const double *V, double scale, fl_keep_fn keep,
                           const void *ctx, double *O, double *L);

/* fl_ref_attention with the variants v (NULL: none). */
fl_status fl_ref_attention_v(int64_t Nq, int64_t Nk, int64_t d, int64_t dv, const double *Q,
                             const double *K, const double *V, double scale, fl_keep_fn keep,
                             const void *ctx, const fl_ref_variant *v, double *O, double *L);

/* The scores of row i under v (the first three steps above; -inf where keep drops a key):
 * s[0:Nk], and raw[0:Nk] = scale q_i . k_j before the cap (raw may be NULL). */
void fl_ref_scores(int64_t i, int64_t Nq, int64_t Nk, int64_t d, const double *q, const double *K,
                   double scale, fl_keep_fn keep, const void *ctx, const fl_ref_variant *v,
                   double *s, double *raw);

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
