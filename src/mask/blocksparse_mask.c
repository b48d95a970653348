/* blocksparse_mask.c: the block mask (see include/flashlab/blocksparse_mask.h). */
#include <flashlab/blocksparse_mask.h>

#include <flashlab/rng.h>

fl_bsmask fl_bsmask_make(int64_t Nq, int64_t Nk, int64_t Br, int64_t Bc, double density,
                         uint64_t seed)
{
    fl_bsmask mk = {Nq, Nk, Br, Bc, (Nq + Br - 1) / Br, (Nk + Bc - 1) / Bc, density, seed};
    return mk;
}

int fl_bsmask_block(const fl_bsmask *mk, int64_t bi, int64_t bj)
{
    /* one splitmix64 step from a state that mixes the seed and the block index */
    uint64_t st = mk->seed ^ (0xD1B54A32D192ED03ULL * (uint64_t)(bi * mk->Tc + bj + 1));
    const double u = (double)(fl_rng_next(&st) >> 11) * 0x1.0p-53; /* in [0, 1) */
    return u < mk->density;
}

int fl_bsmask_keep(int64_t i, int64_t j, const void *ctx)
{
    const fl_bsmask *mk = ctx;
    return fl_bsmask_block(mk, i / mk->Br, j / mk->Bc);
}
