/* attention_bwd.c: exact attention backward in double (see attention_bwd.h). */
#include "attention_bwd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <flashlab/rng.h>

fl_status fl_ref_attention_bwd(int64_t Nq, int64_t Nk, int64_t d, int64_t dv, const double *Q,
                               const double *K, const double *V, const double *dO, double scale,
                               fl_keep_fn keep, const void *ctx, double *dQ, double *dK, double *dV,
                               double *O, double *L, double *P, double *dS)
{
    return fl_ref_attention_bwd_v(Nq, Nk, d, dv, Q, K, V, dO, scale, keep, ctx, NULL, dQ, dK, dV, O, L, P,
                                  dS, NULL);
}

fl_status fl_ref_attention_bwd_v(int64_t Nq, int64_t Nk, int64_t d, int64_t dv, const double *Q,
                                 const double *K, const double *V, const double *dO, double scale,
                                 fl_keep_fn keep, const void *ctx, const fl_ref_variant *v, double *dQ,
                                 double *dK, double *dV, double *O, double *L, double *P, double *dS,
                                 double *dsink)
{
    if (Nq < 1 || Nk < 1 || d < 1 || dv < 1)
        return fl_fail(FL_EINVAL, "reference: sizes must be >= 1");
    double *s = malloc((size_t)Nk * sizeof *s), *p = malloc((size_t)Nk * sizeof *p),
           *ds = malloc((size_t)Nk * sizeof *ds), *raw = malloc((size_t)Nk * sizeof *raw),
           *z = malloc((size_t)Nk * sizeof *z);
    if (!s || !p || !ds || !raw || !z) {
        free(s), free(p), free(ds), free(raw), free(z);
        return fl_fail(FL_ENOMEM, "reference: out of memory for a row of %lld scores", (long long)Nk);
    }
    const int sink = v && v->has_sink;
    const double drop = v ? v->dropout : 0.0, cap = v ? v->softcap : 0.0;
    memset(dK, 0, (size_t)(Nk * d) * sizeof *dK);
    memset(dV, 0, (size_t)(Nk * dv) * sizeof *dV);
    if (dsink) *dsink = 0.0;
    for (int64_t i = 0; i < Nq; i++) {
        /* the row's scores and probabilities (the sink, if any, joins the softmax) */
        fl_ref_scores(i, Nq, Nk, d, Q + i * d, K, scale, keep, ctx, v, s, raw);
        double mx = sink ? v->sink : -INFINITY, sum = 0.0;
        for (int64_t j = 0; j < Nk; j++)
            if (s[j] > mx) mx = s[j];
        for (int64_t j = 0; j < Nk; j++) {
            p[j] = (s[j] == -INFINITY) ? 0.0 : exp(s[j] - mx);
            sum += p[j];
        }
        double psink = sink && mx != -INFINITY ? exp(v->sink - mx) : 0.0;
        sum += psink;
        for (int64_t j = 0; j < Nk; j++) p[j] = sum > 0.0 ? p[j] / sum : 0.0;
        psink = sum > 0.0 ? psink / sum : 0.0;
        /* the dropout mask scaled by 1 / (1 - p): z_j = Z_ij / (1 - p) */
        for (int64_t j = 0; j < Nk; j++)
            z[j] = drop > 0.0 ? (fl_dropout_keep(v->seed, v->b, v->h, i, j, drop) ? 1.0 / (1.0 - drop) : 0.0) : 1.0;
        if (L) L[i] = sum > 0.0 ? mx + log(sum) : -INFINITY;
        if (O)
            for (int64_t c = 0; c < dv; c++) {
                double o = 0.0;
                for (int64_t j = 0; j < Nk; j++) o += p[j] * z[j] * V[j * dv + c];
                O[i * dv + c] = o;
            }
        /* dP = (dO V^T) o z, D = sum P dP, dS = P (dP - D) (times the cap's derivative) */
        const double *g = dO + i * dv;
        double D = 0.0;
        for (int64_t j = 0; j < Nk; j++) {
            double dp = 0.0;
            for (int64_t c = 0; c < dv; c++) dp += g[c] * V[j * dv + c];
            ds[j] = dp * z[j];
            D += p[j] * ds[j];
        }
        for (int64_t j = 0; j < Nk; j++) {
            ds[j] = (p[j] == 0.0 && s[j] == -INFINITY) ? 0.0 : p[j] * (ds[j] - D);
            if (cap > 0.0) {
                const double t = tanh(raw[j] / cap);
                ds[j] *= 1.0 - t * t;
            }
        }
        if (dsink) *dsink -= psink * D;
        /* dQ_i = scale sum_j dS_ij K_j;  dK_j += scale dS_ij Q_i;  dV_j += P_ij z_j dO_i */
        for (int64_t t = 0; t < d; t++) {
            double q = 0.0;
            for (int64_t j = 0; j < Nk; j++) q += ds[j] * K[j * d + t];
            dQ[i * d + t] = scale * q;
        }
        for (int64_t j = 0; j < Nk; j++) {
            for (int64_t t = 0; t < d; t++) dK[j * d + t] += scale * ds[j] * Q[i * d + t];
            for (int64_t c = 0; c < dv; c++) dV[j * dv + c] += p[j] * z[j] * g[c];
        }
        if (P) memcpy(P + i * Nk, p, (size_t)Nk * sizeof *p);
        if (dS) memcpy(dS + i * Nk, ds, (size_t)Nk * sizeof *ds);
    }
    free(s), free(p), free(ds), free(raw), free(z);
    return FL_OK;
}
