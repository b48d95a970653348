/* rng.c: splitmix64 (Steele, Lea & Flood, 2014), see rng.h. */
#include <flashlab/rng.h>

uint64_t fl_rng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void fl_rng_fill(uint64_t *state, double *x, int64_t n, double lo, double hi)
{
    for (int64_t i = 0; i < n; i++) {
        double u = (double)(fl_rng_next(state) >> 11) * 0x1.0p-53; /* [0, 1) */
        x[i] = lo + (hi - lo) * u;
    }
}
