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

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int64_t Nq, Nk, Br, Bc; /* score matrix and block sizes */
    int64_t Tr, Tc;         /* block rows ceil(Nq / Br), block columns ceil(Nk / Bc) */
    double density;         /* s in (0, 1] */
    uint64_t seed;
} fl_bsmask;

/* A block mask over an Nq x Nk score matrix in blocks of Br x Bc (all >= 1), density in (0, 1]. */
fl_bsmask fl_bsmask_make(int64_t Nq, int64_t Nk, int64_t Br, int64_t Bc, double density,
                         uint64_t seed);

/* Nonzero when block (bi, bj) is kept (0 <= bi < Tr, 0 <= bj < Tc). */
int fl_bsmask_block(const fl_bsmask *mk, int64_t bi, int64_t bj);

/* The keep rule of one score for the reference (fl_keep_fn, ctx = const fl_bsmask *):
 * keep(i, j) = block (i / Br, j / Bc) is kept. */
int fl_bsmask_keep(int64_t i, int64_t j, const void *ctx);

#ifdef __cplusplus
}
#endif

#endif
