/* attention_ref.c: exact attention in double precision (see attention_ref.h). */
#include "attention_ref.h"

#include <math.h>
#include <stdlib.h>

#include <flashlab/rng.h>

fl_status fl_ref_attention(int64_t Nq, int64_t Nk, int64_t d, int64_t dv, const double *Q,
                           const double *K, const double *V, double scale, fl_keep_fn keep,
                           const void *ctx, double *O, double *L)
{
    return fl_ref_attention_v(Nq, Nk, d, dv, Q, K, V, scale, keep, ctx, NULL, O, L);
}

void fl_ref_scores(int64_t i, int64_t Nq, int64_t Nk, int64_t d, const double *q, const double *K,
                   double scale, fl_keep_fn keep, const void *ctx, const fl_ref_variant *v,
                   double *s, double *raw)
{
    for (int64_t j = 0; j < Nk; j++) {
        double dot = 0.0;
        for (int64_t t = 0; t < d; t++) dot += q[t] * K[j * d + t];
        const double x = scale * dot;
        if (raw) raw[j] = x;
        if (keep && !keep(i, j, ctx)) { s[j] = -INFINITY; continue; }
        s[j] = x;
        if (v && v->softcap > 0.0) s[j] = v->softcap * tanh(x / v->softcap);
        if (v && v->alibi_slope != 0.0) s[j] -= v->alibi_slope * fabs((double)(i + Nk - Nq - j));
    }
}

fl_status fl_ref_attention_v(int64_t Nq, int64_t Nk, int64_t d, int64_t dv, const double *Q,
                             const double *K, const double *V, double scale, fl_keep_fn keep,
                             const void *ctx, const fl_ref_variant *v, double *O, double *L)
{
    if (Nq < 1 || Nk < 1 || d < 1 || dv < 1)
        return fl_fail(FL_EINVAL, "reference: sizes must be >= 1");
    double *s = malloc((size_t)Nk * sizeof *s);
    if (!s) return fl_fail(FL_ENOMEM, "reference: out of memory for a row of %lld scores", (long long)Nk);
    const int plain = !v || (!v->has_sink && v->dropout == 0.0);
    for (int64_t i = 0; i < Nq; i++) {
        fl_ref_scores(i, Nq, Nk, d, Q + i * d, K, scale, keep, ctx, v, s, NULL);
        double *o = O + i * dv;
        if (plain) {
            const double lse = fl_ref_softmax_row(s, Nk, V, dv, o);
            if (L) L[i] = lse;
            continue;
        }
        /* the sink joins the softmax with value 0; dropout scales the kept probabilities */
        double mx = v->has_sink ? v->sink : -INFINITY, sum = 0.0;
        for (int64_t j = 0; j < Nk; j++)
            if (s[j] > mx || isnan(s[j])) mx = s[j];
        for (int64_t c = 0; c < dv; c++) o[c] = 0.0;
        if (mx == -INFINITY) { /* no kept key and no sink */
            if (L) L[i] = -INFINITY;
            continue;
        }
        if (v->has_sink) sum += exp(v->sink - mx);
        for (int64_t j = 0; j < Nk; j++) {
            if (s[j] == -INFINITY) continue;
            const double e = exp(s[j] - mx);
            sum += e;
            if (v->dropout > 0.0 && !fl_dropout_keep(v->seed, v->b, v->h, i, j, v->dropout)) continue;
            const double w = v->dropout > 0.0 ? e / (1.0 - v->dropout) : e;
            for (int64_t c = 0; c < dv; c++) o[c] += w * V[j * dv + c];
        }
        for (int64_t c = 0; c < dv; c++) o[c] /= sum;
        if (L) L[i] = mx + log(sum);
    }
    free(s);
    return FL_OK;
}

double fl_ref_softmax_row(const double *s, int64_t n, const double *V, int64_t dv, double *out)
{
    double mx = -INFINITY, sum = 0.0;
    for (int64_t j = 0; j < n; j++)
        if (s[j] > mx || isnan(s[j])) mx = s[j]; /* NaN propagates (docs/errors.md) */
    for (int64_t c = 0; c < dv; c++) out[c] = 0.0;
    if (mx == -INFINITY) return -INFINITY; /* no legal key: zeros */
    for (int64_t j = 0; j < n; j++) {
        if (s[j] == -INFINITY) continue;
        const double e = exp(s[j] - mx);
        sum += e;
        for (int64_t c = 0; c < dv; c++) out[c] += e * V[j * dv + c];
    }
    for (int64_t c = 0; c < dv; c++) out[c] /= sum;
    return mx + log(sum);
}

double fl_max_abs_diff(const double *a, const double *b, int64_t n)
{
    double m = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs(a[i] - b[i]);
        if (isnan(e)) return NAN;
        if (e > m) m = e;
    }
    return m;
}

double fl_rel_err(const double *a, const double *b, int64_t n)
{
    double scale = 0.0;
    for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(b[i]));
    double e = fl_max_abs_diff(a, b, n);
    return scale > 0.0 ? e / scale : e;
}
