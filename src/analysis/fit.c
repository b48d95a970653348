/* fit.c: GSL least squares on swept counts (see fit.h; docs/analysis.md). */
#include <flashlab/fit.h>
#include <flashlab/schedule.h>

#include <gsl/gsl_fit.h>
#include <math.h>
#include <stdlib.h>

static double r_squared(const double *y, const double *yhat, size_t n)
{
    double mean = 0.0, ss_tot = 0.0, ss_res = 0.0;
    for (size_t i = 0; i < n; i++) mean += y[i];
    mean /= (double)n;
    for (size_t i = 0; i < n; i++) {
        ss_tot += (y[i] - mean) * (y[i] - mean);
        ss_res += (y[i] - yhat[i]) * (y[i] - yhat[i]);
    }
    return ss_tot > 0.0 ? 1.0 - ss_res / ss_tot : (ss_res == 0.0 ? 1.0 : 0.0);
}

fl_status fl_fit_line(const double *x, const double *y, size_t n, fl_fit *f)
{
    double a, b, c00, c01, c11, sumsq;
    if (n < 3) return fl_fail(FL_EINVAL, "fit: %zu points; a line with standard errors needs at least 3", n);
    if (gsl_fit_linear(x, 1, y, 1, n, &a, &b, &c00, &c01, &c11, &sumsq))
        return fl_fail(FL_EINVAL, "fit: gsl_fit_linear failed (all x equal?)");
    double *yhat = malloc(n * sizeof *yhat);
    if (!yhat) return fl_fail(FL_ENOMEM, "fit: out of memory");
    for (size_t i = 0; i < n; i++) yhat[i] = a + b * x[i];
    f->slope = b;
    f->intercept = a;
    f->se_slope = sqrt(c11);
    f->se_intercept = sqrt(c00);
    f->r2 = r_squared(y, yhat, n);
    f->n = n;
    free(yhat);
    if (!isfinite(b) || !isfinite(f->se_slope)) return fl_fail(FL_EINVAL, "fit: degenerate data (all x equal)");
    return FL_OK;
}

fl_status fl_fit_line_rel(const double *x, const double *y, size_t n, fl_fit *f)
{
    double a, b, c00, c01, c11, chisq;
    if (n < 3) return fl_fail(FL_EINVAL, "fit: %zu points; a line with standard errors needs at least 3", n);
    double *w = malloc(2 * n * sizeof *w), *yhat = w + n;
    if (!w) return fl_fail(FL_ENOMEM, "fit: out of memory");
    fl_status s = FL_OK;
    for (size_t i = 0; i < n && !s; i++) {
        if (!(y[i] > 0.0)) s = fl_fail(FL_EINVAL, "fit: relative residuals need positive y (point %zu)", i);
        else w[i] = 1.0 / (y[i] * y[i]);
    }
    if (!s && gsl_fit_wlinear(x, 1, w, 1, y, 1, n, &a, &b, &c00, &c01, &c11, &chisq))
        s = fl_fail(FL_EINVAL, "fit: gsl_fit_wlinear failed (all x equal?)");
    if (!s) {
        /* gsl_fit_wlinear's covariance takes the weights as exact 1/sigma^2; scale it by the
         * residual variance chisq/(n-2) so that the errors come from the data, as gsl_fit_linear's */
        const double scale = chisq / (double)(n - 2);
        for (size_t i = 0; i < n; i++) yhat[i] = a + b * x[i];
        f->slope = b;
        f->intercept = a;
        f->se_slope = sqrt(c11 * scale);
        f->se_intercept = sqrt(c00 * scale);
        f->r2 = r_squared(y, yhat, n);
        f->n = n;
        if (!isfinite(b) || !isfinite(f->se_slope)) s = fl_fail(FL_EINVAL, "fit: degenerate data (all x equal)");
    }
    free(w);
    return s;
}

/* Fills lx, ly with natural logs; FL_EINVAL on a non-positive value. */
static fl_status logs(const double *x, const double *y, size_t n, double *lx, double *ly)
{
    for (size_t i = 0; i < n; i++) {
        if (!(x[i] > 0.0) || !(y[i] > 0.0))
            return fl_fail(FL_EINVAL, "fit: a log-log fit needs positive values (point %zu)", i);
        lx[i] = log(x[i]);
        ly[i] = log(y[i]);
    }
    return FL_OK;
}

fl_status fl_fit_power(const double *x, const double *y, size_t n, fl_fit *f)
{
    double *l = malloc(2 * (n ? n : 1) * sizeof *l);
    if (!l) return fl_fail(FL_ENOMEM, "fit: out of memory");
    fl_status s = logs(x, y, n, l, l + n);
    if (!s) s = fl_fit_line(l, l + n, n, f);
    free(l);
    return s;
}

fl_status fl_fit_ratio(const double *x, const double *y, size_t n, fl_fit_const *f)
{
    if (n < 3) return fl_fail(FL_EINVAL, "fit: %zu points; a constant with a standard error needs at least 3", n);
    double *buf = malloc(4 * n * sizeof *buf);
    if (!buf) return fl_fail(FL_ENOMEM, "fit: out of memory");
    double *one = buf, *ratio = buf + n, *ly = buf + 2 * n, *lhat = buf + 3 * n;
    fl_status s = FL_OK;
    for (size_t i = 0; i < n && !s; i++) {
        if (!(x[i] > 0.0) || !(y[i] > 0.0)) s = fl_fail(FL_EINVAL, "fit: y ~= c x needs positive values");
        one[i] = 1.0;
        ratio[i] = y[i] / x[i];
    }
    double c, cov, sumsq;
    if (!s && gsl_fit_mul(one, 1, ratio, 1, n, &c, &cov, &sumsq)) s = fl_fail(FL_EINVAL, "fit: gsl_fit_mul failed");
    if (!s) {
        for (size_t i = 0; i < n; i++) {
            ly[i] = log(y[i]);
            lhat[i] = log(c * x[i]);
        }
        f->c = c;
        f->se = sqrt(cov);
        f->r2 = r_squared(ly, lhat, n);
        f->n = n;
    }
    free(buf);
    return s;
}

/* Standard attention's regimes hold for a schedule of "all" that materializes S and P. */
static int materializes(fl_algo a)
{
    const fl_schedule *s = fl_schedule_get(a);
    return s && (s->flags & FL_SCHED_IN_ALL) && (s->flags & FL_SCHED_MATERIALIZES);
}

int fl_regime_holds(fl_regime r, const fl_point *p)
{
    switch (r) {
    case FL_REGIME_ANY: return 1;
    case FL_REGIME_PAPER: return p->d <= p->M && (double)p->M <= (double)p->N * (double)p->d;
    case FL_REGIME_STD_IN: return materializes(p->algo) && p->Bd == p->d && p->N <= p->M;
    case FL_REGIME_STD_OUT: return materializes(p->algo) && (p->Bd < p->d || p->N > p->M);
    }
    return 0;
}

double fl_shape_value(fl_shape s, const fl_point *p)
{
    const double N = (double)p->N, d = (double)p->d, M = (double)p->M;
    return s == FL_SHAPE_N2D2_M ? N * N * d * d / M /* (L1) */ : N * d + N * N /* (L0) */;
}

static int keep(const fl_select *s, const fl_point *p)
{
    return p->algo == s->algo && (!s->N || p->N == s->N) && (!s->d || p->d == s->d) &&
           (!s->M || p->M == s->M) && fl_regime_holds(s->regime, p);
}

/* Collects (x, y) of the kept points into freshly allocated arrays. */
static fl_status gather(const fl_table *t, const fl_select *sel, fl_axis ax, fl_shape sh, int shape,
                        double **x, double **y, size_t *n)
{
    *n = 0;
    *x = malloc((t->n ? t->n : 1) * sizeof **x);
    *y = malloc((t->n ? t->n : 1) * sizeof **y);
    if (!*x || !*y) {
        free(*x), free(*y);
        return fl_fail(FL_ENOMEM, "fit: out of memory");
    }
    for (size_t i = 0; i < t->n; i++) {
        const fl_point *p = &t->p[i];
        if (!keep(sel, p)) continue;
        (*x)[*n] = shape ? fl_shape_value(sh, p)
                         : (double)(ax == FL_AXIS_M ? p->M : ax == FL_AXIS_N ? p->N : p->d);
        (*y)[*n] = (double)p->total;
        (*n)++;
    }
    return FL_OK;
}

fl_status fl_law_fit(const fl_table *t, const fl_select *sel, fl_axis ax, fl_fit *f)
{
    double *x, *y;
    size_t n;
    FL_TRY(gather(t, sel, ax, FL_SHAPE_N2D2_M, 0, &x, &y, &n));
    fl_status s = fl_fit_power(x, y, n, f);
    free(x), free(y);
    return s;
}

fl_status fl_law_constant(const fl_table *t, const fl_select *sel, fl_shape sh, fl_fit_const *f)
{
    double *x, *y;
    size_t n;
    FL_TRY(gather(t, sel, FL_AXIS_M, sh, 1, &x, &y, &n));
    fl_status s = fl_fit_ratio(x, y, n, f);
    free(x), free(y);
    return s;
}

fl_status fl_law_two_term(const fl_table *t, const fl_select *sel, fl_fit *f)
{
    double *x, *y;
    size_t n = 0;
    x = malloc((t->n ? t->n : 1) * sizeof *x);
    y = malloc((t->n ? t->n : 1) * sizeof *y);
    if (!x || !y) {
        free(x), free(y);
        return fl_fail(FL_ENOMEM, "fit: out of memory");
    }
    for (size_t i = 0; i < t->n; i++) {
        const fl_point *p = &t->p[i];
        if (!keep(sel, p)) continue;
        const double Nd = (double)p->N * (double)p->d;
        x[n] = Nd / (double)p->M;        /* (L2): total/(Nd) = a + c Nd/M */
        y[n++] = (double)p->total / Nd;
    }
    fl_status s = fl_fit_line_rel(x, y, n, f);
    free(x), free(y);
    return s;
}
