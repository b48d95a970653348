/* problem_ext.h: the rules of the schedules of issue 4, items 5-7 -- decode (split-KV over a
 * contiguous or paged KV cache), block-sparse FlashAttention, Rabe-Staats memory-efficient
 * attention and softmax alone (safe and online).  problem.c dispatches to these for
 * fl_algo_is_ext(algo); run.c dispatches fl_run to fl_run_ext (run_ext.c).
 *
 * Everything here is docs/model.md §§ "Decode", "Block-sparse", "Memory-efficient",
 * "Softmax alone": block rules (BD, BS, BM, BX), footprints (FD, FM, FX) and closed forms
 * (CD, CS, CM, CX).  As for the core schedules, the formulas are never the source of a reported
 * count: tests assert they equal what the machine counted.
 */
#ifndef FL_PROBLEM_EXT_H
#define FL_PROBLEM_EXT_H

#include <stdint.h>
#include <stdio.h>

#include "problem.h"
#include "run.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The number of keys: p->Nk, or p->N when Nk is 0. */
int64_t fl_ext_Nk(const fl_problem *p);

/* The rules of the fields this module adds (page size, pool, block table, splits, density):
 * checked for every algorithm (a field set away from its default for a schedule that does not
 * use it is refused, naming the option), and, for the ext algorithms, which of the shared
 * variant fields (Nk, causal, window, heads, pass) each accepts.  FL_EINVAL with one line
 * naming the option and the rule. */
fl_status fl_ext_check(const fl_problem *p);

/* Blocks for an ext algorithm: rule BD (decode), BS (blocksparse = flash2's B2), BM (memeff:
 * Br, Bc are Rabe-Staats' query and key chunk sizes, B2 by default), BX (softmax).  p->Br /
 * p->Bc override.  The problem must have passed fl_problem_check. */
fl_status fl_ext_blocks(const fl_problem *p, fl_blocks *b);

/* The closed forms CD, CS, CM, CX (docs/model.md).  FL_EOVERFLOW if a count overflows. */
fl_status fl_ext_closed_form(const fl_problem *p, const fl_blocks *b, fl_counts *c);

/* Prints the block rule of an ext algorithm and what it derived (decode: pages, splits; blocksparse:
 * the kept blocks; memeff: chunks; softmax: passes) for `--explain`. */
void fl_ext_explain(FILE *out, const fl_problem *p, const fl_blocks *b);

/* ---- decode geometry, shared by the schedule, the closed form and the runner ---- */
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

/* Runs an ext algorithm on the machine with blocks b and closed form cf (called by fl_run after
 * its checks; same contract as fl_run): adds and fills the inputs (decode: the contiguous or
 * paged cache and its block table; softmax: X), runs the schedule, compares with reference/. */
fl_status fl_run_ext(const fl_problem *p, fl_mode mode, fl_trace_fn trace, void *trace_ctx,
                     const fl_blocks *b, const fl_counts *cf, fl_result *r);

/* A compute run of an ext algorithm that also copies its output into out (N x d values, or
 * N x Nk for softmax): for comparing two layouts or schedules value by value. */
fl_status fl_run_ext_values(const fl_problem *p, double *out, fl_result *r);

#ifdef __cplusplus
}
#endif

#endif
