/* problem.h: what a run is asked to do (schedule, N, d, M, block sizes), the schedules'
 * block-size rules and SRAM footprints, and their exact closed-form counts.
 *
 * The formulas here are the ones in docs/model.md; each function names the equation it
 * implements.  They are never the source of a reported count: fl_run (run.h) executes the
 * schedule on the machine, and the tests assert that these formulas equal what it counted.
 */
#ifndef FL_PROBLEM_H
#define FL_PROBLEM_H

#include <stdint.h>

#include "masks.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A schedule, by its index in the registry (src/schedules/registry.c, include/flashlab/
 * schedule.h): 0 .. fl_schedule_count() - 1.  Code outside the schedules asks the registry for
 * a schedule by name (fl_algo_parse), by role (fl_algo_with_role) or by list (fl_algos_all);
 * schedule.h names the positions of the registered schedules for their own tests. */
typedef int fl_algo;

/* The schedule of fl_problem_default(): the registry's position of the one schedule flagged
 * FL_SCHED_DEFAULT (registry.c asserts it at compile time). */
#define FL_ALGO_DEFAULT 2

/* The most schedules the registry may hold (arrays indexed by fl_algo are this long). */
#define FL_ALGO_MAX 64

/* fl_causal (the corner a causal mask is aligned to) lives with the mask rules in masks.h.
 * docs/model.md §masks. */

/* Which passes a run executes. */
typedef enum { FL_PASS_FWD = 1, FL_PASS_BWD = 2, FL_PASS_FWD_BWD = 3 } fl_pass;

typedef struct {
    fl_algo algo;
    int64_t N;          /* sequence length of the queries (and of the keys unless Nk is set) */
    int64_t d;          /* head dimension */
    int64_t M;          /* SRAM capacity in elements */
    int64_t Br, Bc;     /* block sizes; 0 = the schedule's default rule */
    uint64_t seed;      /* inputs of a compute run */
    int elem_bytes;     /* bytes per element of Q, K, V, O, S, P (2 = fp16); statistics are 4 */
    int64_t max_events; /* refuse runs with more tile events than this; 0 = no limit */
    /* Variants.  The defaults below mean plain self-attention, one head, forward.  A schedule
     * that does not accept a non-default value (its descriptor's `accepts`, schedule.h) has it
     * refused by fl_problem_check with a message naming the option, never ignored. */
    int64_t Nk;                  /* keys; 0 = N */
    fl_causal causal;            /* FL_CAUSAL_NONE */
    int64_t window_left;         /* FA2 window: query i sees keys [i + Nk - Nq - L, i + Nk - Nq + R]; */
    int64_t window_right;        /*   -1 = unbounded (the default, both) */
    int64_t batch;               /* 1 */
    int64_t heads;               /* query heads, 1 */
    int64_t kv_heads;            /* 0 = heads (MHA); 1 = MQA; else GQA, must divide heads */
    fl_pass pass;                /* FL_PASS_FWD */
    /* Varlen (docs/model.md rule V1): NULL = every sequence has N queries and Nk keys.  Else
     * batch + 1 offsets into the packed tokens, and N (Nk) is the packed query (key) count;
     * cu_seqlens_k NULL with cu_seqlens_q set means the same array for the keys.  The arrays
     * are the caller's and must outlive the run; their entry counts are cu_seqlens_q_len and
     * cu_seqlens_k_len (at the end of this struct), which must equal batch + 1. */
    const int64_t *cu_seqlens_q;
    const int64_t *cu_seqlens_k;
    /* Fields of the schedules with a problem of their own (decode: a KV cache; blocksparse: a
     * block mask; docs/model.md §Decode, §Block-sparse).  memeff's query and key chunk sizes are
     * Br and Bc. */
    int64_t page_size;           /* decode: rows per KV-cache page; 0 = contiguous cache */
    int64_t pool_pages;          /* decode: physical pages in the pool; 0 = twice the pages used */
    uint64_t page_seed;          /* decode: 0 = identity block table, else a random placement */
    const int64_t *block_table;  /* decode: explicit table (caller-owned), NULL = page_seed's */
    int64_t block_table_len;     /*   entries; must equal ceil(Nk / page_size) */
    int64_t splits;              /* decode: split-KV splits (flash-decoding); 1 */
    double pad_value;            /* decode, compute: rows beyond Nk in the last page; 0 */
    double density;              /* block-sparse: probability s that a block is kept, (0, 1]; 1 */
    uint64_t mask_seed;          /* block-sparse: seed of the block mask; 1 */
    int64_t cu_seqlens_q_len;    /* entries of cu_seqlens_q (0 when it is NULL) */
    int64_t cu_seqlens_k_len;    /* entries of cu_seqlens_k (0 when it is NULL) */
    int64_t max_macs;            /* refuse compute runs of more multiply-adds than this (schedule
                                    and reference, fl_compute_macs in run.h); 0 = no limit; 1e10 */
    unsigned given;              /* FL_GIVEN_*: option groups the caller gave explicitly, even at
                                    their default values (a CLI's --pad 0); 0 */
} fl_problem;

/* Groups of fields a caller may mark as given (fl_problem.given): a schedule that does not take
 * the group refuses it as it refuses a value away from the default. */
enum {
    FL_GIVEN_KV_CACHE = 1u << 0,   /* page_size, pool_pages, page_seed, block_table, splits, pad_value */
    FL_GIVEN_BLOCK_MASK = 1u << 1  /* density, mask_seed */
};

/* ---- Segments: the (batch, head) attention problems of a run ---- */

/* One attention problem inside the packed tensors (docs/model.md §heads): `group` consecutive
 * query heads (1 except for a group schedule) that share one K/V head.  Query head g of the
 * group has its Nq rows at q0 + g*qstride in Q, O, dO, dQ and in the per-row statistics (L, D,
 * l, m) and the score rows of S, P; its keys are the Nk rows at k0 of K, V, dK, dV. */
typedef struct {
    int64_t q0, qstride, k0;
    int64_t Nq, Nk;
    int64_t group;
    int kv_first;  /* backward: first segment to touch its K/V rows (writes dK, dV; later
                      segments of the same K/V head read, add and write them back) */
    fl_mask mask;
} fl_seg;

/* The segments of a run, computed on demand (src/problem/segments.c). */
typedef struct fl_segments fl_segments;

/* Segment k (0 <= k < nseg) of s. */
void fl_segment_at(const fl_segments *s, int64_t k, fl_seg *out);

/* The query and key lengths of the longest sequence (N and Nk without varlen).  Assumes
 * fl_problem_check passed. */
void fl_problem_lengths(const fl_problem *p, int64_t *max_nq, int64_t *max_nk);

/* Query heads per K/V head (Hq / Hkv). */
int64_t fl_problem_group_ratio(const fl_problem *p);

/* A problem with the defaults: flash2, N = 1024, d = 64, M = 98304 (A100: 192 KiB in fp16),
 * default blocks, seed 1, fp16 sizes, at most 1e10 tile events and 1e10 multiply-adds, and the variant fields at their
 * defaults (Nk = N, no mask, no window, one head, forward).  Always start from this: fields
 * added later then keep their defaults. */
fl_problem fl_problem_default(void);

/* 1 when p asks for a KV cache (a decode field away from its default, or FL_GIVEN_KV_CACHE),
 * else 0. */
int fl_problem_asks_kv_cache(const fl_problem *p);

/* 1 when p asks for a block mask (density or mask_seed away from its default, or
 * FL_GIVEN_BLOCK_MASK), else 0. */
int fl_problem_asks_block_mask(const fl_problem *p);

/* Largest value of a size field (N, Nk, d, M, Br, Bc, batch, heads, kv_heads, window sides):
 * 2^61 - 1, the CLI's bound too, so that the sum of any two sizes fits in 64 bits. */
#define FL_SIZE_MAX (INT64_MAX / 4)

/* The rules every problem obeys, whatever its schedule: N, d, M >= 1, every size field <=
 * FL_SIZE_MAX, elem_bytes in {2, 4, 8}, the variant fields (Nk, causal, window, batch/heads/
 * kv_heads, pass, cu_seqlens and their lengths: docs/model.md K1, H1, V1) and the fields of the
 * schedules with a problem of their own (page size, pool, block table, splits, density);
 * FL_EINVAL naming the quantity and the rule otherwise.  fl_problem_check (schedule.h) adds what
 * the problem's schedule accepts and its own rules. */
fl_status fl_problem_check_fields(const fl_problem *p);

typedef struct {
    int64_t Br, Bc;      /* rows of a Q (and O, S) tile; rows of a K/V tile */
    int64_t Bd;          /* standard only: the chunk of d one tile holds (= d for flash1/2) */
    int64_t footprint;   /* SRAM elements the schedule's tile buffers take (docs/model.md) */
    int overridden;      /* Br or Bc came from the caller */
    /* flash1 only: the paper's rule Bc = ceil(M/4d), Br = min(Bc, d) and what it would need */
    int64_t paper_Br, paper_Bc, paper_footprint;
} fl_blocks;

/* Exact counts a schedule makes (elements), as closed forms of (N, d, M, Br, Bc, Bd). */
typedef struct {
    int64_t reads, writes, total;
    int64_t events;    /* tile loads + stores */
    int64_t sram_peak; /* largest SRAM use */
} fl_counts;

#ifdef __cplusplus
}
#endif

#endif
