/* attention_bwd.h: the exact backward pass of attention in double precision, the oracle for the
 * backward schedules.  Readable, not fast: one query row at a time, scores materialized.
 *
 * Forward (as in attention_ref.h):  S = scale Q K^T (-inf where not kept),  P = softmax_row(S),
 * O = P V.  Given the upstream gradient dO (Nq x dv):
 *
 *   dV = P^T dO                       dP = dO V^T
 *   D_i = sum_j P_ij dP_ij  (= rowsum(dO o O)_i)
 *   dS = P o (dP - D)                 (exactly 0 where not kept: P is 0 there)
 *   dQ = scale dS K                   dK = scale dS^T Q
 *
 * A row with no kept key has P = 0, O = 0, dS = 0 and contributes nothing (docs/model.md M0).
 */
#ifndef FL_ATTENTION_BWD_H
#define FL_ATTENTION_BWD_H

#include <stdint.h>

#include "attention_ref.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Q: Nq x d, K: Nk x d, V: Nk x dv, dO: Nq x dv, row-major.  Writes dQ (Nq x d), dK (Nk x d),
 * dV (Nk x dv) and, when not NULL, O (Nq x dv), L (Nq, logsumexp, -inf for an empty row),
 * P (Nq x Nk) and dS (Nq x Nk).  keep NULL keeps every key.  FL_EINVAL for sizes < 1,
 * FL_ENOMEM if the row workspace cannot be allocated. */
fl_status fl_ref_attention_bwd(int64_t Nq, int64_t Nk, int64_t d, int64_t dv, const double *Q,
                               const double *K, const double *V, const double *dO, double scale,
                               fl_keep_fn keep, const void *ctx, double *dQ, double *dK, double *dV,
                               double *O, double *L, double *P, double *dS);

/* The same with the variants v (attention_ref.h; NULL: none).  With dropout (mask Z, keep
 * probability 1 - p): dV = (P o Z)^T dO / (1 - p), dP = (dO V^T) o Z / (1 - p), D_i = sum_j P_ij
 * dP_ij (= rowsum(dO o O)), dS = P o (dP - D); with softcap c, dS is multiplied by the
 * derivative of the cap, 1 - tanh^2(x / c) at the uncapped score x.  P (if not NULL) receives
 * the softmax probabilities before dropout; dsink (if not NULL and v has a sink) receives the
 * sink's gradient, -sum_i e^(sink - L_i) D_i. */
fl_status fl_ref_attention_bwd_v(int64_t Nq, int64_t Nk, int64_t d, int64_t dv, const double *Q,
                                 const double *K, const double *V, const double *dO, double scale,
                                 fl_keep_fn keep, const void *ctx, const fl_ref_variant *v, double *dQ,
                                 double *dK, double *dV, double *O, double *L, double *P, double *dS,
                                 double *dsink);

#ifdef __cplusplus
}
#endif

#endif
