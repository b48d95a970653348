/* softmax_ref.h: softmax of one row in double precision, the oracle of the softmax-alone
 * schedules (softmax-safe, softmax-online).  Readable, not clever: the row maximum, then the
 * shifted exponentials and their sum, then the quotients. */
#ifndef FL_SOFTMAX_REF_H
#define FL_SOFTMAX_REF_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* y[0:n] = exp(x - max x) / sum exp(x - max x), n >= 1, finite x.  y may alias x. */
void fl_ref_softmax(const double *x, int64_t n, double *y);

#ifdef __cplusplus
}
#endif

#endif
