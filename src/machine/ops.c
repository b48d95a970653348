/* ops.c: on-chip arithmetic (see ops.h). */
#include <flashlab/ops.h>

#include <math.h>
#include <stdlib.h>

void fl_op_fill(fl_buf *b, int64_t nr, int64_t nc, double v)
{
    if (!b->x) return;
    for (int64_t r = 0; r < nr; r++)
        for (int64_t c = 0; c < nc; c++) b->x[r * b->cols + c] = v;
}

void fl_op_matmul(fl_buf *C, const fl_buf *A, const fl_buf *B, int64_t m, int64_t n, int64_t k,
                  int transB, double alpha, int accumulate)
{
    if (!C->x) return;
    const int64_t lc = C->cols, la = A->cols, lb = B->cols;
    for (int64_t i = 0; i < m; i++) {
        double *c = C->x + i * lc;
        const double *a = A->x + i * la;
        if (!accumulate)
            for (int64_t j = 0; j < n; j++) c[j] = 0.0;
        if (transB) {
            for (int64_t j = 0; j < n; j++) {
                const double *b = B->x + j * lb;
                double s = 0.0;
                for (int64_t t = 0; t < k; t++) s += a[t] * b[t];
                c[j] += alpha * s;
            }
        } else {
            for (int64_t t = 0; t < k; t++) {
                const double at = alpha * a[t];
                const double *b = B->x + t * lb;
                for (int64_t j = 0; j < n; j++) c[j] += at * b[j];
            }
        }
    }
}

double fl_osm_step(double *m, double *l, double *u, int64_t dv, const double *s, int64_t n,
                   const double *v, int64_t ldv, double *p)
{
    return fl_osm_step_w(m, l, u, dv, s, n, v, ldv, p, NULL);
}

double fl_osm_step_w(double *m, double *l, double *u, int64_t dv, const double *s, int64_t n,
                     const double *v, int64_t ldv, double *p, const double *w)
{
    double mt = -INFINITY;
    for (int64_t j = 0; j < n; j++)
        if (s[j] > mt || isnan(s[j])) mt = s[j]; /* a NaN score is not skipped: it propagates */
    if (mt == -INFINITY) { /* no legal key in this tile: skip it before any exp */
        if (p)
            for (int64_t j = 0; j < n; j++) p[j] = 0.0;
        return 1.0;
    }
    const double mnew = *m > mt ? *m : mt;
    const double a = (*m == -INFINITY) ? 0.0 : exp(*m - mnew);
    double sum = 0.0;
    for (int64_t c = 0; c < dv; c++) u[c] *= a;
    for (int64_t j = 0; j < n; j++) {
        if (s[j] == -INFINITY) { /* masked: contributes nothing, not even 0 * value */
            if (p) p[j] = 0.0;
            continue;
        }
        const double e = exp(s[j] - mnew);
        if (p) p[j] = e;
        sum += e;
        const double ew = w ? e * w[j] : e;
        if (ew != 0.0 || !w)
            for (int64_t c = 0; c < dv; c++) u[c] += ew * v[j * ldv + c];
    }
    *l = a * *l + sum;
    *m = mnew;
    return a;
}

void fl_osm_finish(double l, const double *u, int64_t dv, double *out)
{
    for (int64_t c = 0; c < dv; c++) out[c] = (l == 0.0) ? 0.0 : u[c] / l; /* NaN l stays NaN */
}

fl_status fl_osm_tiled(const double *s, int64_t n, const double *V, int64_t dv, int64_t tile,
                       double *out)
{
    if (tile < 1) return fl_fail(FL_EINVAL, "tile: size must be >= 1 (got %lld)", (long long)tile);
    if (n < 1 || dv < 1) return fl_fail(FL_EINVAL, "row: needs at least one score and one value column");
    double m = -INFINITY, l = 0.0;
    double *u = calloc((size_t)dv, sizeof *u);
    if (!u) return fl_fail(FL_ENOMEM, "out of memory for the numerator");
    for (int64_t j0 = 0; j0 < n; j0 += tile) {
        const int64_t nt = (n - j0 < tile) ? n - j0 : tile;
        fl_osm_step(&m, &l, u, dv, s + j0, nt, V + j0 * dv, dv, NULL);
    }
    fl_osm_finish(l, u, dv, out);
    free(u);
    return FL_OK;
}

fl_status fl_osm_step_checked(double *m, double *l, double *u, int64_t u_len, int64_t dv,
                              const double *s, int64_t s_len, const double *v, int64_t v_rows,
                              int64_t ldv, double *p, int64_t p_len, double *a)
{
    if (dv < 1 || u_len < dv)
        return fl_fail(FL_EINVAL, "u: the numerator holds %lld values, the step needs dv = %lld >= 1",
                       (long long)u_len, (long long)dv);
    if (s_len < 1) return fl_fail(FL_EINVAL, "scores: a step needs at least one score (got %lld)", (long long)s_len);
    if (v_rows != s_len || ldv < dv)
        return fl_fail(FL_EINVAL, "values: %lld rows of %lld values for %lld scores of dimension %lld "
                                  "(one row per score, at least dv values each)",
                       (long long)v_rows, (long long)ldv, (long long)s_len, (long long)dv);
    if (p && p_len < s_len)
        return fl_fail(FL_EINVAL, "p: %lld entries for %lld scores", (long long)p_len, (long long)s_len);
    *a = fl_osm_step(m, l, u, dv, s, s_len, v, ldv, p);
    return FL_OK;
}

fl_status fl_osm_tiled_checked(const double *s, int64_t n, const double *V, int64_t v_len, int64_t dv,
                               int64_t tile, double *out, int64_t out_len)
{
    int64_t need;
    if (n < 1 || dv < 1 || !fl_mul_ok(n, dv, &need) || v_len != need)
        return fl_fail(FL_EINVAL, "values: %lld values for %lld scores of dimension %lld (need n * dv)",
                       (long long)v_len, (long long)n, (long long)dv);
    if (out_len < dv) return fl_fail(FL_EINVAL, "out: %lld entries for dimension %lld", (long long)out_len, (long long)dv);
    return fl_osm_tiled(s, n, V, dv, tile, out);
}
