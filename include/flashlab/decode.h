/* decode.h: the geometry of the decode schedule (flash-decoding: split-KV over a contiguous or
 * paged KV cache; docs/model.md §Decode, rule SD), shared by its loop, its closed form and the
 * tests: how keys split into pages, tiles and splits, and the block table.  The schedule
 * itself is registered as "decode" (schedule.h). */
#ifndef FLASHLAB_DECODE_H
#define FLASHLAB_DECODE_H

#include <stdint.h>

#include "problem.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int64_t Nq, Nk, d, Br, Bc;
    int64_t Tr, Tc;      /* query blocks; key tiles of Bc rows (the last one partial) */
    int paged;           /* page_size > 0 */
    int64_t P;           /* page size (paged), else 0 */
    int64_t pages;       /* logical pages the sequence uses: ceil(Nk / P) (paged) */
    int64_t pool;        /* physical pages in the pool (paged) */
    int64_t Ls;          /* keys per split: a multiple of the unit U = P (paged) or Bc */
    int64_t S;           /* splits that hold keys: ceil(Nk / Ls) (<= the splits asked for) */
} fl_decode_geom;

/* The geometry of a decode problem with blocks b (docs/model.md rule SD). */
void fl_decode_geometry(const fl_problem *p, const fl_blocks *b, fl_decode_geom *g);

/* The block table: table[k] = physical page of logical page k, for k < g->pages.  The caller's
 * p->block_table if given, else identity (page_seed 0) or a random placement in the pool drawn
 * from page_seed (distinct pages).  FL_ENOMEM if scratch cannot be allocated. */
fl_status fl_decode_block_table(const fl_problem *p, const fl_decode_geom *g, int64_t *table);

/* Decode's per-row-block work: the key tiles [*t0, *t1) the row block [r0, r0 + br) keeps
 * (masks.h tile ranges) and, for split s, its part [*s0, *s1) of them (empty when
 * *s0 >= *s1). */
void fl_decode_tiles(const fl_problem *p, const fl_decode_geom *g, int64_t r0, int64_t br,
                     int64_t *t0, int64_t *t1);
void fl_decode_split_tiles(const fl_decode_geom *g, int64_t t0, int64_t t1, int64_t s,
                           int64_t *s0, int64_t *s1);

#ifdef __cplusplus
}
#endif

#endif
