/* fit.h: least-squares fits (GSL) of the IO-complexity laws to swept counts.
 *
 * Generic fits (any data):
 *   fl_fit_line   y = a + b x                       gsl_fit_linear; SEs from the residuals
 *   fl_fit_line_rel  the same with relative residuals  gsl_fit_wlinear, weights 1/y^2
 *   fl_fit_power  ln y = a + b ln x (b: log-log slope, e^a: prefactor)
 *   fl_fit_ratio  y ~= c x with relative residuals: gsl_fit_mul on (1, y_i/x_i), so every
 *                 point weighs the same whatever its size; R^2 is taken in log space.
 *
 * Laws over a sweep table (sweep.h), docs/analysis.md:
 *   fl_law_fit       the log-log slope of HBM traffic (elements) in M, N or d, over the points
 *                    that a selection keeps (schedule, fixed coordinates, regime);
 *   fl_law_constant  c in traffic ~= c * shape, shape N^2 d^2 / M (the Theta of the
 *                    FlashAttention paper, Theorem 2) or Nd + N^2 (standard attention).
 *
 * Regimes (docs/analysis.md):
 *   FL_REGIME_PAPER   d <= M <= N d                      (the paper's Theorem 2 / Prop. 3 range)
 *   FL_REGIME_STD_IN  standard with Bd = d and N <= M     (Theta(Nd + N^2): tiles hold all of d
 *                                                          and a softmax row fits in SRAM)
 *   FL_REGIME_STD_OUT standard with Bd < d or N > M       (limited SRAM: above Theta(Nd + N^2))
 *
 * Every function returns FL_EINVAL (naming the fit) when fewer than 3 points remain, or a value
 * is not positive where a logarithm is taken.
 */
#ifndef FL_FIT_H
#define FL_FIT_H

#include <stddef.h>

#include "sweep.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    double slope, intercept;       /* b, a */
    double se_slope, se_intercept; /* standard errors (residual-based) */
    double r2;                     /* coefficient of determination */
    size_t n;                      /* points */
} fl_fit;

typedef struct {
    double c, se; /* constant and its standard error */
    double r2;    /* R^2 of ln y against ln(c x) */
    size_t n;
} fl_fit_const;

fl_status fl_fit_line(const double *x, const double *y, size_t n, fl_fit *f);
/* The same line with relative residuals, (y - a - b x)/y: gsl_fit_wlinear with weights 1/y^2,
 * its covariance scaled by the residual variance (errors from the data, as fl_fit_line's). */
fl_status fl_fit_line_rel(const double *x, const double *y, size_t n, fl_fit *f);
fl_status fl_fit_power(const double *x, const double *y, size_t n, fl_fit *f);
fl_status fl_fit_ratio(const double *x, const double *y, size_t n, fl_fit_const *f);

typedef enum { FL_AXIS_M, FL_AXIS_N, FL_AXIS_D } fl_axis;
typedef enum { FL_REGIME_ANY, FL_REGIME_PAPER, FL_REGIME_STD_IN, FL_REGIME_STD_OUT } fl_regime;
typedef enum { FL_SHAPE_N2D2_M, FL_SHAPE_ND_N2 } fl_shape;

/* Which points of a table a law is fitted on: algo, and N, d, M when > 0, in a regime. */
typedef struct {
    fl_algo algo;
    int64_t N, d, M;
    fl_regime regime;
} fl_select;

/* Nonzero when point p is in regime r. */
int fl_regime_holds(fl_regime r, const fl_point *p);

/* The shape's value at p: N^2 d^2 / M (docs/analysis.md eq. (L1)) or N d + N^2 (L0). */
double fl_shape_value(fl_shape s, const fl_point *p);

/* Log-log slope of p->total in the axis over the selected points. */
fl_status fl_law_fit(const fl_table *t, const fl_select *sel, fl_axis x, fl_fit *f);

/* c in total ~= c * shape over the selected points (fl_fit_ratio). */
fl_status fl_law_constant(const fl_table *t, const fl_select *sel, fl_shape s, fl_fit_const *f);

/* The two-term law (docs/analysis.md eq. (L2)): total ~= a Nd + c N^2 d^2 / M, i.e. the Omega(Nd)
 * floor plus the Theta(N^2 d^2 / M) passes, fitted as the line total/(Nd) = a + c (Nd/M)
 * with relative residuals (fl_fit_line_rel), so the small-M points that carry the floor count as
 * much as the large ones: f->intercept = a, f->slope = c, their standard errors, R^2. */
fl_status fl_law_two_term(const fl_table *t, const fl_select *sel, fl_fit *f);

#ifdef __cplusplus
}
#endif

#endif
