/* attention_bwd.c: exact attention backward in double (see attention_bwd.h). */
#include "attention_bwd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

fl_status fl_ref_attention_bwd(int64_t Nq, int64_t Nk, int64_t d, int64_t dv, const double *Q,
                               const double *K, const double *V, const double *dO, double scale,
                               fl_keep_fn keep, const void *ctx, double *dQ, double *dK, double *dV,
                               double *O, double *L, double *P, double *dS)
{
    if (Nq < 1 || Nk < 1 || d < 1 || dv < 1)
        return fl_fail(FL_EINVAL, "reference: sizes must be >= 1");
    double *s = malloc((size_t)Nk * sizeof *s), *p = malloc((size_t)Nk * sizeof *p),
           *ds = malloc((size_t)Nk * sizeof *ds);
    if (!s || !p || !ds) {
        free(s), free(p), free(ds);
        return fl_fail(FL_ENOMEM, "reference: out of memory for a row of %lld scores", (long long)Nk);
    }
    memset(dK, 0, (size_t)(Nk * d) * sizeof *dK);
    memset(dV, 0, (size_t)(Nk * dv) * sizeof *dV);
    for (int64_t i = 0; i < Nq; i++) {
        /* the row's scores and probabilities */
        double mx = -INFINITY, sum = 0.0;
        for (int64_t j = 0; j < Nk; j++) {
            if (keep && !keep(i, j, ctx)) { s[j] = -INFINITY; continue; }
            double dot = 0.0;
            for (int64_t t = 0; t < d; t++) dot += Q[i * d + t] * K[j * d + t];
            s[j] = scale * dot;
            if (s[j] > mx) mx = s[j];
        }
        for (int64_t j = 0; j < Nk; j++) {
            p[j] = (s[j] == -INFINITY) ? 0.0 : exp(s[j] - mx);
            sum += p[j];
        }
        for (int64_t j = 0; j < Nk; j++) p[j] = sum > 0.0 ? p[j] / sum : 0.0;
        if (L) L[i] = sum > 0.0 ? mx + log(sum) : -INFINITY;
        if (O)
            for (int64_t c = 0; c < dv; c++) {
                double o = 0.0;
                for (int64_t j = 0; j < Nk; j++) o += p[j] * V[j * dv + c];
                O[i * dv + c] = o;
            }
        /* dP = dO V^T, D = sum P dP, dS = P (dP - D) */
        const double *g = dO + i * dv;
        double D = 0.0;
        for (int64_t j = 0; j < Nk; j++) {
            double dp = 0.0;
            for (int64_t c = 0; c < dv; c++) dp += g[c] * V[j * dv + c];
            ds[j] = dp;
            D += p[j] * dp;
        }
        for (int64_t j = 0; j < Nk; j++) ds[j] = (p[j] == 0.0 && s[j] == -INFINITY) ? 0.0 : p[j] * (ds[j] - D);
        /* dQ_i = scale sum_j dS_ij K_j;  dK_j += scale dS_ij Q_i;  dV_j += P_ij dO_i */
        for (int64_t t = 0; t < d; t++) {
            double q = 0.0;
            for (int64_t j = 0; j < Nk; j++) q += ds[j] * K[j * d + t];
            dQ[i * d + t] = scale * q;
        }
        for (int64_t j = 0; j < Nk; j++) {
            for (int64_t t = 0; t < d; t++) dK[j * d + t] += scale * ds[j] * Q[i * d + t];
            for (int64_t c = 0; c < dv; c++) dV[j * dv + c] += p[j] * g[c];
        }
        if (P) memcpy(P + i * Nk, p, (size_t)Nk * sizeof *p);
        if (dS) memcpy(dS + i * Nk, ds, (size_t)Nk * sizeof *ds);
    }
    free(s), free(p), free(ds);
    return FL_OK;
}
