/* rng.c: splitmix64 (Steele, Lea & Flood, 2014) and Philox4x32-10 (Salmon et al., 2011), see rng.h. */
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

/* one Philox round: two 32 x 32 -> 64-bit products, their halves mixed with the key */
static void philox_round(uint32_t c[4], const uint32_t k[2])
{
    const uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
    const uint32_t x0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k[0], x2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k[1];
    c[1] = (uint32_t)p1;
    c[3] = (uint32_t)p0;
    c[0] = x0;
    c[2] = x2;
}

void fl_philox4x32(uint64_t seed, uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t out[4])
{
    uint32_t c[4] = {c0, c1, c2, c3}, k[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    for (int r = 0; r < 10; r++) {
        philox_round(c, k);
        k[0] += 0x9E3779B9u; /* the Weyl key schedule */
        k[1] += 0xBB67AE85u;
    }
    for (int i = 0; i < 4; i++) out[i] = c[i];
}

int fl_dropout_keep(uint64_t seed, int64_t b, int64_t h, int64_t i, int64_t j, double p)
{
    uint32_t w[4];
    fl_philox4x32(seed, (uint32_t)i, (uint32_t)j, (uint32_t)h, (uint32_t)b, w);
    return (double)w[0] * 0x1.0p-32 >= p;
}
