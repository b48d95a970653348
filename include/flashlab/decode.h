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

/* ---- decode's own problem: the KV cache (fl_problem.kv_cache points at one) ----
 * X(kind, type, name, default, what), as fields.h describes. */
#define FL_KV_CACHE_FIELDS(X)                                                                          \
    X(FL_FK_I64, int64_t, page_size, 0, "rows per KV-cache page; 0 = contiguous cache")              \
    X(FL_FK_I64, int64_t, pool_pages, 0, "physical pages in the pool; 0 = twice the pages used")     \
    X(FL_FK_U64, uint64_t, page_seed, 0, "0 = identity block table, else a random placement")        \
    X(FL_FK_I64_ARRAY, const int64_t *, block_table, NULL, "explicit table (caller-owned); NULL = page_seed's") \
    X(FL_FK_I64, int64_t, block_table_len, 0, "  its entries: ceil(Nk / page_size)")                 \
    X(FL_FK_I64, int64_t, splits, 1, "split-KV splits (flash-decoding)")                             \
    X(FL_FK_F64, double, pad_value, 0.0, "compute: the rows beyond Nk in the last page")

struct fl_kv_cache {
    FL_KV_CACHE_FIELDS(FL_FIELD_MEMBER)
};
typedef struct fl_kv_cache fl_kv_cache;

/* A contiguous cache, one split: every field at its default. */
fl_kv_cache fl_kv_cache_default(void);

/* p's cache: what p->kv_cache points at, or the default cache when it is NULL. */
const fl_kv_cache *fl_kv_cache_of(const fl_problem *p);

/* The fields of fl_kv_cache in order (FL_KV_CACHE_FIELDS); *n receives their number. */
const fl_field *fl_kv_cache_fields(int *n);

/* The rules every cache obeys, whatever its problem: page_size >= 0 and at most 2^32, pool_pages
 * >= 0, splits >= 1, a table with its entries; FL_EINVAL naming the quantity and the rule.  The
 * rules that depend on the problem (the pool holds the pages, the table's entries) are decode's
 * check (schedule.h). */
fl_status fl_kv_cache_check(const fl_kv_cache *kv);

typedef struct {
    int64_t Nq, Nk, d, dv, Br, Bc; /* d: Q's and K's head dimension; dv: V's and O's (rule D1) */
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
 * cache's block_table if given, else identity (page_seed 0) or a random placement in the pool
 * drawn from page_seed (distinct pages).  FL_ENOMEM if scratch cannot be allocated. */
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
