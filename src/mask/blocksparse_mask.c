/* blocksparse_mask.c: the block mask (see include/flashlab/blocksparse_mask.h). */
#include <flashlab/blocksparse_mask.h>

#include <flashlab/rng.h>

#include <stddef.h>

fl_bsmask fl_bsmask_make(int64_t Nq, int64_t Nk, int64_t Br, int64_t Bc, double density,
                         uint64_t seed)
{
    fl_bsmask mk = {Nq, Nk, Br, Bc, (Nq + Br - 1) / Br, (Nk + Bc - 1) / Bc, density, seed};
    return mk;
}

fl_bsmask fl_bsmask_of(int64_t Nq, int64_t Nk, int64_t Br, int64_t Bc, const fl_block_sparsity *bm)
{
    bm = fl_block_sparsity_or_default(bm);
    return fl_bsmask_make(Nq, Nk, Br, Bc, bm->density, bm->mask_seed);
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

fl_block_sparsity fl_block_sparsity_default(void)
{
    const fl_block_sparsity bm = {FL_BLOCK_SPARSITY_FIELDS(FL_FIELD_DEFAULT)};
    return bm;
}

const fl_block_sparsity *fl_block_sparsity_or_default(const fl_block_sparsity *bm)
{
    static const fl_block_sparsity none = {FL_BLOCK_SPARSITY_FIELDS(FL_FIELD_DEFAULT)};
    return bm ? bm : &none;
}

const fl_field *fl_block_sparsity_fields(int *n)
{
#define FL_ENTRY(kind, type, name, dflt, what) {#name, offsetof(fl_block_sparsity, name), sizeof(type), kind},
    static const fl_field f[] = {FL_BLOCK_SPARSITY_FIELDS(FL_ENTRY)};
#undef FL_ENTRY
    *n = (int)(sizeof f / sizeof f[0]);
    return f;
}

fl_status fl_block_sparsity_check(const fl_block_sparsity *bm)
{
    if (!(bm->density > 0.0 && bm->density <= 1.0))
        return fl_fail(FL_EINVAL, "{density}: the fraction s of kept blocks must lie in (0, 1]");
    return FL_OK;
}
