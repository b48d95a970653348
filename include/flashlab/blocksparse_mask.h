/* blocksparse_mask.h: the block mask of block-sparse FlashAttention (the FlashAttention paper, §3.3,
 * Algorithm 5): the score matrix is cut into blocks of Br x Bc (the schedule's tiles) and a
 * block is either kept whole or skipped whole.  docs/model.md §"Block-sparse" (rule KS).
 *
 * The mask is a pure function of (seed, block row, block column): block (bi, bj) is kept when
 * u(seed, bi * Tc + bj) < s, with u a splitmix64 hash mapped to [0, 1).  So each block is kept
 * with probability s (density), s = 1 keeps every block, nothing is stored, and the reference,
 * the schedule and the closed form ask the same function.
 */
#ifndef FL_BLOCKSPARSE_H
#define FL_BLOCKSPARSE_H

#include <stdint.h>

#include "fields.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- blocksparse's own problem: the block mask's density and seed (fl_problem.block_mask
 * points at one) ---- X(kind, type, name, default, what), as fields.h describes. */
#define FL_BLOCK_SPARSITY_FIELDS(X)                                                               \
    X(FL_FK_F64, double, density, 1.0, "probability s that a block is kept, in (0, 1]")          \
    X(FL_FK_U64, uint64_t, mask_seed, 1, "seed of the block mask")

struct fl_block_sparsity {
    FL_BLOCK_SPARSITY_FIELDS(FL_FIELD_MEMBER)
};
typedef struct fl_block_sparsity fl_block_sparsity;

/* Every block kept, seed 1: every field at its default. */
fl_block_sparsity fl_block_sparsity_default(void);

/* The mask of a problem's extension: what bm points at, or the default when it is NULL. */
const fl_block_sparsity *fl_block_sparsity_or_default(const fl_block_sparsity *bm);

/* The fields of fl_block_sparsity in order; *n receives their number. */
const fl_field *fl_block_sparsity_fields(int *n);

/* density in (0, 1]; FL_EINVAL naming it otherwise. */
fl_status fl_block_sparsity_check(const fl_block_sparsity *bm);

typedef struct {
    int64_t Nq, Nk, Br, Bc; /* score matrix and block sizes */
    int64_t Tr, Tc;         /* block rows ceil(Nq / Br), block columns ceil(Nk / Bc) */
    double density;         /* s in (0, 1] */
    uint64_t seed;
} fl_bsmask;

/* A block mask over an Nq x Nk score matrix in blocks of Br x Bc (all >= 1), density in (0, 1]. */
fl_bsmask fl_bsmask_make(int64_t Nq, int64_t Nk, int64_t Br, int64_t Bc, double density,
                         uint64_t seed);

/* The block mask of an extension bm (NULL: the default, every block kept). */
fl_bsmask fl_bsmask_of(int64_t Nq, int64_t Nk, int64_t Br, int64_t Bc, const fl_block_sparsity *bm);

/* Nonzero when block (bi, bj) is kept (0 <= bi < Tr, 0 <= bj < Tc). */
int fl_bsmask_block(const fl_bsmask *mk, int64_t bi, int64_t bj);

/* The keep rule of one score for the reference (fl_keep_fn, ctx = const fl_bsmask *):
 * keep(i, j) = block (i / Br, j / Bc) is kept. */
int fl_bsmask_keep(int64_t i, int64_t j, const void *ctx);

#ifdef __cplusplus
}
#endif

#endif
