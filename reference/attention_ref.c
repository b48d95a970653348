/* attention_ref.c: exact attention in double precision (see attention_ref.h). */
#include "attention_ref.h"

#include <math.h>
#include <stdlib.h>

fl_status fl_ref_attention(int64_t Nq, int64_t Nk, int64_t d, int64_t dv, const double *Q,
                           const double *K, const double *V, double scale, fl_keep_fn keep,
                           const void *ctx, double *O, double *L)
{
    if (Nq < 1 || Nk < 1 || d < 1 || dv < 1)
        return fl_fail(FL_EINVAL, "reference: sizes must be >= 1");
    double *s = malloc((size_t)Nk * sizeof *s);
    if (!s) return fl_fail(FL_ENOMEM, "reference: out of memory for a row of %lld scores", (long long)Nk);
    for (int64_t i = 0; i < Nq; i++) {
        for (int64_t j = 0; j < Nk; j++) {
            if (keep && !keep(i, j, ctx)) { s[j] = -INFINITY; continue; }
            double dot = 0.0;
            for (int64_t t = 0; t < d; t++) dot += Q[i * d + t] * K[j * d + t];
            s[j] = scale * dot;
        }
        const double lse = fl_ref_softmax_row(s, Nk, V, dv, O + i * dv);
        if (L) L[i] = lse;
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
