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

/* Philox4x32-10 (Salmon, Moraes, Dror & Shaw, "Parallel random numbers: as easy as 1, 2, 3",
 * SC 2011), the counter-based generator FlashAttention's dropout uses: the 128-bit counter
 * (c0, c1, c2, c3) under the 64-bit key `seed` gives four 32-bit words; out[0..3] receive
 * them.  No state: the same counter gives the same words, so a backward regenerates the
 * forward's dropout mask from the seed alone. */
void fl_philox4x32(uint64_t seed, uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t out[4]);

/* Dropout's keep rule (docs/model.md rule DR): entry (i, j) of query head h of sequence b is
 * kept when the first word of Philox at counter (i, j, h, b) under `seed`, divided by 2^32, is
 * at least p.  i, j, h, b are taken modulo 2^32. */
int fl_dropout_keep(uint64_t seed, int64_t b, int64_t h, int64_t i, int64_t j, double p);

#ifdef __cplusplus
}
#endif

#endif
