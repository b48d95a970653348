/* rng.h: a small deterministic random number generator (splitmix64), so that the same --seed
 * gives the same inputs on every machine and every run. */
#ifndef FL_RNG_H
#define FL_RNG_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Next 64 random bits; advances *state. */
uint64_t fl_rng_next(uint64_t *state);

/* Fills x[0:n] with values uniform in [lo, hi), drawn in order from *state. */
void fl_rng_fill(uint64_t *state, double *x, int64_t n, double lo, double hi);

#ifdef __cplusplus
}
#endif

#endif
