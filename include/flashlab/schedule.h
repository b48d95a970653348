/* schedule.h: a schedule is one descriptor; the registry is one array of them.
 *
 * Everything the system must know about an attention schedule lives in the descriptor, beside the
 * paper's loop in the schedule's own file (src/schedules/<name>.c): its name, the problem fields
 * it accepts, its block rule, its SRAM footprint, its closed form, its tensors, its forward and
 * backward loops, and what `count --explain` prints.  The registry (src/schedules/registry.c)
 * lists the descriptors; the runner (fl_run), the CLI, the optimizer and the conformance tests
 * iterate over it, so a new schedule is one file plus one registry line.
 *
 * The dispatching functions of problem.h (fl_problem_check, fl_blocks_choose_pass,
 * fl_footprint_pass, fl_closed_form_pass, fl_algo_name, ...) look the schedule up here.
 *
 * Contract of the loops (fwd, bwd): the caller (fl_run) has added the HBM tensors Q, K, V (filled
 * in compute mode; K and V laid out by add_kv when the schedule has one) and O, and for a
 * backward pass also dO (filled), dQ, dK, dV, plus whatever the forward of the same schedule
 * added (its saved statistics).  A loop adds its own HBM tensors, allocates its SRAM buffers,
 * runs every segment of io (one (batch, head) attention problem each), and frees every buffer it
 * allocated before returning FL_OK.  Scores are scaled by 1/sqrt(d).  A non-OK return leaves the
 * machine's counters as they were at the failure and fl_last_error() explaining it.
 */
#ifndef FLASHLAB_SCHEDULE_H
#define FLASHLAB_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "machine.h"
#include "masks.h"
#include "problem.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The tensors and segments a loop works on. */
typedef struct {
    int Q, K, V, O;     /* tensor ids */
    int dO, dQ, dK, dV; /* backward pass only (-1 otherwise) */
    int64_t q_rows;     /* rows of Q (and of the per-row statistics a schedule adds) */
    int64_t k_rows;     /* rows of K */
    /* the variants' tensors (docs/model.md §14), -1 when the problem has none: */
    int sink, dsink;    /* sinks: the logits (Hq x 1) and, in a backward, their gradient */
    int rng;            /* dropout: the Philox seed and offset (2 x 1) */
    int Qs, Ks, Vs;     /* fp8: the scale factors of Q, K, V (segments.h lays them out) */
    const fl_segments *segs; /* the segments, run in order k = 0 .. nseg - 1 */
    int64_t nseg;
} fl_qkvo;

typedef fl_status (*fl_schedule_fn)(fl_machine *m, const fl_problem *p, const fl_blocks *b,
                                    fl_qkvo io);

/* What a schedule is, beyond its fields (flags). */
enum {
    FL_SCHED_IN_ALL = 1u << 0,       /* one of "all": the attention schedules compared side by side
                                        (count, sweep --algo all, report's tables); one that stacks
                                        a group only where the problem has groups (fl_algos_all) */
    FL_SCHED_OWN_PROBLEM = 1u << 1,  /* a problem of its own (a KV cache, a block mask, a score
                                        matrix, ...): named explicitly, left out of the default
                                        sweeps; one head, one sequence, forward */
    FL_SCHED_STACKS_GROUP = 1u << 2, /* stacks the G = Hq/Hkv query heads of a K/V head in one
                                        query tile (flash2-gqa): segments have group G */
    FL_SCHED_O_FP32 = 1u << 3,       /* its O crosses HBM as an fp32 accumulator (rule R8) */
    FL_SCHED_SOFTMAX = 1u << 4,      /* softmax of an N x Nk score matrix X into Y: no Q, K, V */
    FL_SCHED_MATERIALIZES = 1u << 5, /* holds Nq x Nk score matrices in HBM (S, P; backward dP,
                                        dS): counted in a compute run's size */
    FL_SCHED_CHUNKS_D = 1u << 6,     /* its tiles hold a chunk Bd of d (Bd is reported) */
    /* Roles: what the analysis asks of a schedule instead of naming it. */
    FL_SCHED_PAPER_LAW = 1u << 7,    /* the FlashAttention paper's Algorithm 1, whose traffic `bound`
                                        and figures (a)-(c) fit to c N²d²/M (its Theorem 2) */
    FL_SCHED_COMPARED = 1u << 8,     /* run at its default blocks beside optimize's result (the
                                        comparison columns of `optimize` and figure (g)) */
    FL_SCHED_DEFAULT = 1u << 9,      /* the schedule of fl_problem_default() (exactly one) */
    FL_SCHED_SAVES_LSE = 1u << 10    /* writes each query row's logsumexp L beside O, so partial
                                        outputs over key blocks merge exactly: a device's kernel of
                                        context parallelism (cp.h) */
};

/* How `optimize` searches a pass's blocks (docs/model.md §7): the lemma that makes the search
 * exact.  FL_SEARCH_NONE leaves the schedule out of the family for problems that run the pass. */
typedef enum {
    FL_SEARCH_NONE = 0,
    FL_SEARCH_ROWS_FREE, /* lemma O1: the count is least at Br = 1 for each Bc (walks Bc) */
    FL_SEARCH_COLS_FREE, /* lemma O2: the count is least at Bc = 1 for each Br (walks Br) */
    FL_SEARCH_FRONTIER,  /* lemma O3: the count falls as Br, Bc or Bd grows (walks Br and the
                            chunk counts of d on the frontier "Bc the largest that fits") */
    FL_SEARCH_BOUND      /* lemma O4: branch and bound with the descriptor's count_floor against
                            the least count of the other schedules (searched after them) */
} fl_search;

/* The problem fields beyond N, d, M, Br, Bc, seed, elem_bytes, max_events that a schedule
 * accepts (accepts).  A field set away from its default (problem.h) for a schedule that does not
 * accept it is refused by fl_problem_check, naming the option; never ignored. */
enum {
    FL_ACCEPT_NK = 1u << 0,         /* Nk != N */
    FL_ACCEPT_MASK = 1u << 1,       /* causal, window */
    FL_ACCEPT_HEADS = 1u << 2,      /* batch, heads, kv_heads */
    FL_ACCEPT_VARLEN = 1u << 3,     /* cu_seqlens_q, cu_seqlens_k */
    FL_ACCEPT_BWD = 1u << 4,        /* pass bwd, fwd+bwd */
    FL_ACCEPT_KV_CACHE = 1u << 5,   /* page_size, pool_pages, page_seed, block_table, splits, pad_value */
    FL_ACCEPT_BLOCK_MASK = 1u << 6, /* density, mask_seed */
    /* the variants of docs/model.md §14 */
    FL_ACCEPT_DV = 1u << 7,         /* d_v != d (Q, K tiles d wide; V, O tiles d_v wide) */
    FL_ACCEPT_SINKS = 1u << 8,      /* sinks (and their gradient in a backward) */
    FL_ACCEPT_SCORE_MODS = 1u << 9, /* softcap, alibi */
    FL_ACCEPT_DROPOUT = 1u << 10,   /* dropout */
    FL_ACCEPT_FP8 = 1u << 11,       /* dtype fp8 (elem_bytes 1) with its scale factors, scale_block */
    FL_ACCEPT_DETERMINISTIC = 1u << 12, /* deterministic (the backward's dQ in a fixed order) */
    FL_ACCEPT_VARIANTS = FL_ACCEPT_DV | FL_ACCEPT_SINKS | FL_ACCEPT_SCORE_MODS | FL_ACCEPT_DROPOUT | FL_ACCEPT_FP8 |
                         FL_ACCEPT_DETERMINISTIC /* all of §14 */
};

/* The positions of the registered schedules (registry.c), for the tests and fuzzers of these
 * schedules alone: the rest of the house asks the registry (fl_algo_parse, fl_algo_with_role,
 * fl_algos_all, fl_algos_with).  scripts/check_layers.py refuses them elsewhere, and
 * tests/conformance/test_registry.c checks each against its name. */
enum {
    FL_ALGO_STANDARD = 0,       /* FlashAttention paper, Algorithm 0: S and P in HBM */
    FL_ALGO_FLASH1 = 1,         /* FlashAttention paper, Algorithm 1: outer K/V, inner Q */
    FL_ALGO_FLASH2 = 2,         /* FlashAttention-2 forward: query-owned loop */
    FL_ALGO_FLASH2_GQA = 3,     /* flash2 with the query heads of a GQA group stacked */
    FL_ALGO_DECODE = 4,         /* flash-decoding: split-KV over a (paged) KV cache */
    FL_ALGO_BLOCKSPARSE = 5,    /* block-sparse FlashAttention (paper, Algorithm 5 / Prop. 4) */
    FL_ALGO_MEMEFF = 6,         /* Rabe-Staats memory-efficient chunked attention */
    FL_ALGO_SOFTMAX_SAFE = 7,   /* softmax alone, safe: 3 passes (Milakov-Gimelshein Alg. 2) */
    FL_ALGO_SOFTMAX_ONLINE = 8  /* softmax alone, online normalizer: 2 passes (Alg. 3) */
};

/* Largest number of values a compute run may hold in its HBM tensors (2^27 doubles = 1 GiB). */
#define FL_COMPUTE_MAX_VALUES (INT64_C(1) << 27)

typedef struct fl_schedule fl_schedule;

struct fl_schedule {
    const char *name;    /* as on the command line: "flash2" */
    const char *summary; /* one line: the algorithm and its source */
    unsigned flags;      /* FL_SCHED_* */
    unsigned accepts;    /* FL_ACCEPT_* */

    /* Its own rules beyond `accepts` (e.g. decode's page table), on a problem whose common
     * fields are valid; FL_EINVAL naming the option and the rule.  NULL: none. */
    fl_status (*check)(const fl_problem *p);

    /* The block rule of docs/model.md §3 for a pass (bwd = 0 forward, 1 backward), p->Br / p->Bc
     * overriding it where nonzero; sets every field of *b.  FL_ECAPACITY when nothing fits in M,
     * FL_EINVAL naming --Br/--Bc when an override does not fit. */
    fl_status (*blocks)(const fl_problem *p, int bwd, fl_blocks *b);

    /* The SRAM footprint (elements) of the pass's tile buffers for blocks (Br, Bc, Bd) on problem
     * p (its head dimensions d, d_v and variants) with a group of G stacked query heads; -1 on
     * overflow.  NULL: the schedule's footprint depends on more of the problem than its blocks
     * (its blocks report it). */
    int64_t (*footprint)(const fl_problem *p, int bwd, int64_t G, int64_t Br, int64_t Bc, int64_t Bd);

    /* The exact counts of a pass with that pass's blocks (docs/model.md §4).  FL_EOVERFLOW when
     * a count does not fit in 64 bits. */
    fl_status (*closed_form)(const fl_problem *p, int bwd, const fl_blocks *b, fl_counts *c);

    /* A lower bound on the tile events of the run (forward blocks b, backward blocks bb or NULL),
     * cheap to compute and saturating at INT64_MAX, checked against max_events before a closed
     * form that walks every block is evaluated.  NULL: the closed form is cheap. */
    int64_t (*events_floor)(const fl_problem *p, const fl_blocks *b, const fl_blocks *bb);

    /* Refuses a compute run that would hold more than FL_COMPUTE_MAX_VALUES values (run.h).
     * NULL: the rule for Q, K, V, O (and the backward's tensors) of the packed heads. */
    fl_status (*compute_size)(const fl_problem *p, const fl_blocks *b);

    /* Adds K and V to the machine in the schedule's own HBM layout (decode: a paged pool and
     * its block table) and, in compute mode, fills them from the logical Nk x d arrays Kl, Vl.
     * NULL: K and V are plain packed tensors. */
    fl_status (*add_kv)(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo *io,
                        const double *Kl, const double *Vl);

    /* The keep predicate the reference applies for this schedule's problem in place of the
     * causal/window mask (block-sparse: its block mask, built for blocks b): sets *keep and
     * fills ctx (cap bytes) and returns 1; NULL: the problem's causal/window mask. */
    int (*reference_keep)(const fl_problem *p, const fl_blocks *b,
                          int (**keep)(int64_t i, int64_t j, const void *ctx), void *ctx, size_t cap);

    fl_schedule_fn fwd; /* the forward loop */
    fl_schedule_fn bwd; /* the backward loop; NULL: forward only (then FL_ACCEPT_BWD is unset) */

    /* Prints the block rule and what it derived, for `count --explain` (lines starting with two
     * spaces; the runner prints the chosen blocks after it).  b: the forward's blocks. */
    void (*explain)(FILE *out, const fl_problem *p, const fl_blocks *b);
    /* More lines printed after the chosen blocks (NULL: none). */
    void (*explain_after)(FILE *out, const fl_problem *p, const fl_blocks *b);
    /* One line naming the backward's block rule (after "  backward: "). */
    const char *explain_bwd;

    /* ---- optimize's family (docs/model.md §7) ---- */
    /* The search of the forward's [0] and the backward's [1] blocks; a schedule is in the family
     * of a problem when it has a search for every pass the problem runs (and, stacking a group,
     * when the problem has groups).  Its closed form must be exact for every block pair. */
    fl_search search[2];
    /* Block terms its closed form walks for one sequence of nq queries and nk keys with blocks
     * (Br, Bc) in a pass, dense (no mask, no window) or not: optimize's measure of work.  The
     * forward of one dense head must be O(1) (optimize counts it as 1).  NULL: 1. */
    int64_t (*closed_form_terms)(int bwd, int dense, int64_t nq, int64_t nk, int64_t Br, int64_t Bc);
    /* FL_SEARCH_BOUND: a lower bound on the count of a pass (bwd = 0 forward, 1 backward) of p's
     * problem (its d and d_v) over one sequence whose keep rule is mk (one query head), for blocks Br and every
     * Bc <= cmax (lemma O4).  It walks the row blocks (and, backward, the keys) of mk once. */
    double (*count_floor)(int bwd, const fl_problem *p, const fl_mask *mk, int64_t Br, int64_t cmax);

    /* The FlashAttention paper's Figure 2 traffic for this schedule (fwd+bwd, A100), as printed
     * in the report's table; NULL: none. */
    const char *paper_fig2;
};

/* ---- Dispatch through the registry: the problem's schedule decides ---- */

/* The schedule's name ("standard", "flash1", ...), or NULL when a is not registered. */
const char *fl_algo_name(fl_algo a);

/* "standard, flash1, ... or X": every registered schedule's name, for messages. */
const char *fl_algo_choices(void);

/* Parses a schedule name; FL_EINVAL (naming the schedule option and the choices) if unknown. */
fl_status fl_algo_parse(const char *name, fl_algo *out);

/* The query heads one segment of p's schedule stacks: Hq / Hkv for a schedule that stacks a
 * group (FL_SCHED_STACKS_GROUP: flash2-gqa), 1 otherwise. */
int64_t fl_problem_group(const fl_problem *p);

/* Checks p: fl_problem_check_fields (problem.h), then that every field set away from its
 * default is one p's schedule accepts (naming the option otherwise), then the schedule's own
 * rules.  FL_EINVAL naming the option and the rule. */
fl_status fl_problem_check(const fl_problem *p);

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
 * (F1b)/(F2b), and flash2-gqa's stacked query tiles G*Br (F2g, F2b).  -1 on overflow.  The
 * problem is the default one of schedule a at head dimension d (d_v = d, no variant). */
int64_t fl_footprint_pass(fl_algo a, int bwd, int64_t G, int64_t d, int64_t Br, int64_t Bc, int64_t Bd);

/* The footprint of a pass of p's schedule on p itself (its d, d_v and variants: docs/model.md
 * rule D1), G query heads stacked.  -1 on overflow or for a schedule without a footprint
 * function. */
int64_t fl_footprint_of(const fl_problem *p, int bwd, int64_t G, int64_t Br, int64_t Bc, int64_t Bd);

/* The closed forms of docs/model.md §4: (C0) standard, (C1) flash1, (C2) flash2, and with the
 * variants (src/schedules/dispatch.c): masks (C2m, C1m), heads and varlen (sums over segments),
 * GQA groups (C2g), backward (C0b, C1b, C2b).  b is the forward's blocks; a backward pass uses
 * fl_blocks_choose_pass(p, 1).  p->pass selects fwd, bwd or their sum.
 * FL_EOVERFLOW (naming --N and --d) if a count does not fit in 64 bits. */
fl_status fl_closed_form(const fl_problem *p, const fl_blocks *b, fl_counts *c);

/* The same for one pass (bwd = 0 forward, 1 backward) with that pass's blocks. */
fl_status fl_closed_form_pass(const fl_problem *p, int bwd, const fl_blocks *b, fl_counts *c);

/* The descriptor's flags (FL_SCHED_*) of schedule a, 0 when a is not registered: for front ends
 * that cannot read the descriptor (the Python binding). */
unsigned fl_algo_flags(fl_algo a);

/* The schedules of "all" for problem p (NULL: a problem without query-head groups), in registry
 * order: those flagged FL_SCHED_IN_ALL, one that stacks a group only when p's query heads form
 * groups (Hq > Hkv).  Writes at most FL_ALGO_MAX values to out; returns their number. */
int fl_algos_all(const fl_problem *p, fl_algo *out);

/* Every registered schedule that has all of the flags `with` (0: every schedule), in registry
 * order; returns their number (at most FL_ALGO_MAX). */
int fl_algos_with(unsigned with, fl_algo *out);

/* The one schedule flagged `role` (FL_SCHED_DEFAULT, FL_SCHED_PAPER_LAW): the first registered
 * one that has it.  The conformance suite checks there is exactly one of each. */
fl_algo fl_algo_with_role(unsigned role);

/* Whether a schedule name follows the registry's rule: a lowercase letter, then lowercase
 * letters, digits and single hyphens, at most 31 characters, no trailing hyphen.  A name that
 * breaks it (e.g. "Flash_X") can never be a schedule; negative tests use one. */
int fl_algo_name_valid(const char *name);

/* The number of registered schedules; fl_algo values are 0 .. fl_schedule_count() - 1. */
int fl_schedule_count(void);

/* The descriptor of schedule a, or NULL when a is not registered. */
const fl_schedule *fl_schedule_get(fl_algo a);

/* The schedule called name (NULL if none), and its index through *a. */
const fl_schedule *fl_schedule_find(const char *name, fl_algo *a);

#ifdef __cplusplus
}
#endif

#endif
