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

typedef enum {
    FL_ALGO_STANDARD = 0, /* FlashAttention paper, Algorithm 0: S and P in HBM */
    FL_ALGO_FLASH1 = 1,   /* FlashAttention paper, Algorithm 1: outer K/V, inner Q */
    FL_ALGO_FLASH2 = 2,   /* FlashAttention-2 forward: query-owned loop */
    FL_ALGO_FLASH2_GQA = 3, /* flash2 with the query heads of a GQA group stacked: K/V loaded once per group */
    /* issue 4, items 5-7 (sim/problem_ext.h) */
    FL_ALGO_DECODE = 4,         /* flash-decoding: split-KV over a (paged) KV cache */
    FL_ALGO_BLOCKSPARSE = 5,    /* block-sparse FlashAttention (paper, Algorithm 5 / Prop. 4) */
    FL_ALGO_MEMEFF = 6,         /* Rabe-Staats memory-efficient chunked attention */
    FL_ALGO_SOFTMAX_SAFE = 7,   /* softmax alone, safe: 3 passes (Milakov-Gimelshein Alg. 2) */
    FL_ALGO_SOFTMAX_ONLINE = 8, /* softmax alone, online normalizer: 2 passes (Alg. 3) */
    FL_ALGO_SMALLCACHE = 9,     /* TEMPORARY registration of smallcache (bounds branch): replaced by one registry line at merge */
    FL_NALGO = 10
} fl_algo;

/* "all" in the CLI, sweeps and the report: the paper's three schedules (standard, flash1,
 * flash2), values 0 .. FL_NALGO_CORE - 1.  flash2-gqa is named explicitly (it equals flash2 for
 * one K/V head per query head). */
#define FL_NALGO_CORE 3

/* The schedule's name ("standard", "flash1", "flash2", "flash2-gqa"), or NULL for an unknown
 * value. */
const char *fl_algo_name(fl_algo a);

/* "standard, flash1, ... or X": every schedule name, for messages. */
const char *fl_algo_choices(void);

/* Nonzero for the schedules of issue 4 items 5-7 (decode, blocksparse, memeff, softmax-safe,
 * softmax-online: sim/problem_ext.h).  Each has a problem of its own (a KV cache, a block mask,
 * a score matrix), so `all` and the default sweeps leave them out: they are named explicitly. */
int fl_algo_is_ext(fl_algo a);

/* Parses a schedule name; FL_EINVAL (message names --algo and the choices) if unknown. */
fl_status fl_algo_parse(const char *name, fl_algo *out);

/* fl_causal (the corner a causal mask is aligned to) lives with the mask rules in
 * reference/masks.h.  docs/model.md §masks. */

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
    /* Variants (issue 4).  The defaults below mean plain self-attention, one head, forward.
     * A schedule that does not implement a non-default value must reject it in
     * fl_problem_check with a message naming the option, never ignore it. */
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
     * are the caller's and must outlive the run. */
    const int64_t *cu_seqlens_q;
    const int64_t *cu_seqlens_k;
    /* ---- Variants of issue 4 items 5-7: decode, block-sparse, memory-efficient, softmax
     * (sim/problem_ext.h states the rules; defaults in fl_problem_default, checks in
     * fl_problem_check).  Rabe-Staats' query and key chunk sizes are Br and Bc. ---- */
    int64_t page_size;           /* decode: rows per KV-cache page; 0 = contiguous cache */
    int64_t pool_pages;          /* decode: physical pages in the pool; 0 = twice the pages used */
    uint64_t page_seed;          /* decode: 0 = identity block table, else a random placement */
    const int64_t *block_table;  /* decode: explicit table (caller-owned), NULL = page_seed's */
    int64_t block_table_len;     /*   entries; must equal ceil(Nk / page_size) */
    int64_t splits;              /* decode: split-KV splits (flash-decoding); 1 */
    double pad_value;            /* decode, compute: rows beyond Nk in the last page; 0 */
    double density;              /* block-sparse: probability s that a block is kept, (0, 1]; 1 */
    uint64_t mask_seed;          /* block-sparse: seed of the block mask; 1 */
    /* ---- end of issue 4 items 5-7 ---- */
} fl_problem;

/* The query and key lengths of the longest sequence (N and Nk without varlen).  Assumes
 * fl_problem_check passed. */
void fl_problem_lengths(const fl_problem *p, int64_t *max_nq, int64_t *max_nk);

/* Query heads per K/V head (Hq / Hkv), and the query heads one segment of the schedule stacks
 * (that ratio for flash2-gqa, 1 otherwise). */
int64_t fl_problem_group_ratio(const fl_problem *p);
int64_t fl_problem_group(const fl_problem *p);

/* A problem with the defaults: flash2, N = 1024, d = 64, M = 98304 (A100: 192 KiB in fp16),
 * default blocks, seed 1, fp16 sizes, at most 1e10 tile events, and the variant fields at their
 * defaults (Nk = N, no mask, no window, one head, forward).  Always start from this: fields
 * added later then keep their defaults. */
fl_problem fl_problem_default(void);

/* Largest value of a size field (N, Nk, d, M, Br, Bc, batch, heads, kv_heads, window sides):
 * 2^61 - 1, the CLI's bound too, so that the sum of any two sizes fits in 64 bits. */
#define FL_SIZE_MAX (INT64_MAX / 4)

/* Checks N, d, M >= 1, every size field <= FL_SIZE_MAX, elem_bytes in {2, 4, 8}, and the
 * variant fields (Nk, causal, window, batch/heads/kv_heads, pass, cu_seqlens: docs/model.md K1,
 * H1, V1); FL_EINVAL naming the option and the rule otherwise. */
fl_status fl_problem_check(const fl_problem *p);

typedef struct {
    int64_t Br, Bc;      /* rows of a Q (and O, S) tile; rows of a K/V tile */
    int64_t Bd;          /* standard only: the chunk of d one tile holds (= d for flash1/2) */
    int64_t footprint;   /* SRAM elements the schedule's tile buffers take (docs/model.md) */
    int overridden;      /* Br or Bc came from the caller */
    /* flash1 only: the paper's rule Bc = ceil(M/4d), Br = min(Bc, d) and what it would need */
    int64_t paper_Br, paper_Bc, paper_footprint;
} fl_blocks;

/* SRAM footprint of a schedule's tile buffers for blocks (Br, Bc, Bd) at head dimension d.
 * docs/model.md eqs. (F0) standard, (F1) flash1, (F2) flash2.  Returns -1 on overflow. */
int64_t fl_footprint(fl_algo a, int64_t d, int64_t Br, int64_t Bc, int64_t Bd);

/* Chooses the blocks for p: the schedule's default rule (docs/model.md §3), with p->Br / p->Bc
 * overriding it where nonzero.  FL_ECAPACITY, naming M and what the smallest tile needs, when
 * nothing fits; FL_EINVAL naming --Br/--Bc when an override does not fit in M.  This is the
 * forward pass's choice; fl_blocks_choose_pass(p, 1, b) gives the backward's (its buffers differ:
 * eqs. (F0), (F1b), (F2b)). */
fl_status fl_blocks_choose(const fl_problem *p, fl_blocks *b);
fl_status fl_blocks_choose_pass(const fl_problem *p, int bwd, fl_blocks *b);

/* Footprint of a pass: fl_footprint for the forward with group G = 1; the backward's
 * (F1b)/(F2b), and flash2-gqa's stacked query tiles G*Br (F2g, F2b).  -1 on overflow. */
int64_t fl_footprint_pass(fl_algo a, int bwd, int64_t G, int64_t d, int64_t Br, int64_t Bc, int64_t Bd);

/* Exact counts a schedule makes (elements), as closed forms of (N, d, M, Br, Bc, Bd). */
typedef struct {
    int64_t reads, writes, total;
    int64_t events;    /* tile loads + stores */
    int64_t sram_peak; /* largest SRAM use */
} fl_counts;

/* The closed forms of docs/model.md §4: (C0) standard, (C1) flash1, (C2) flash2, and with the
 * variants (sim/closed_variants.c): masks (C2m, C1m), heads and varlen (sums over segments),
 * GQA groups (C2g), backward (C0b, C1b, C2b).  b is the forward's blocks; a backward pass uses
 * fl_blocks_choose_pass(p, 1).  p->pass selects fwd, bwd or their sum.
 * FL_EOVERFLOW (naming --N and --d) if a count does not fit in 64 bits. */
fl_status fl_closed_form(const fl_problem *p, const fl_blocks *b, fl_counts *c);

/* The same for one pass (bwd = 0 forward, 1 backward) with that pass's blocks. */
fl_status fl_closed_form_pass(const fl_problem *p, int bwd, const fl_blocks *b, fl_counts *c);

#ifdef __cplusplus
}
#endif

#endif
