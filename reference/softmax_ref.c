/* softmax_ref.c: softmax of one row (see softmax_ref.h). */
#include "softmax_ref.h"

#include <math.h>

void fl_ref_softmax(const double *x, int64_t n, double *y)
{
    double mx = -INFINITY, sum = 0.0;
    for (int64_t j = 0; j < n; j++) mx = fmax(mx, x[j]);
    for (int64_t j = 0; j < n; j++) sum += exp(x[j] - mx);
    for (int64_t j = 0; j < n; j++) y[j] = exp(x[j] - mx) / sum;
}
