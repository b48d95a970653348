/* problem.h: what a run is asked to do (schedule, N, d, M, block sizes), the schedules'
 * block-size rules and SRAM footprints, and their exact closed-form counts.
 *
 * The formulas here are the ones in docs/model.md; each function names the equation it
 * implements.  They are never the source of a reported count: fl_run (run.h) executes the
 * schedule on the machine, and the tests assert that these formulas equal what it counted.
 */
#ifndef FL_PROBLEM_H
#define FL_PROBLEM_H

#include <stddef.h>
#include <stdint.h>

#include "fields.h"
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

/* ---- The fields of a problem: one list ----
 *
 * X(kind, type, name, default, what): every field of fl_problem in order.  The struct below,
 * fl_problem_default(), the field table the Python binding builds its structure from
 * (fl_problem_fields) and notebooks/abi.c's layout check are all made from this list, so a field
 * is added here once (the kinds: fields.h).  Problems of schedules of their own (decode's KV
 * cache, blocksparse's block mask) live in extensions defined in those schedules' headers
 * (decode.h, blocksparse_mask.h): the core problem is what every attention schedule shares.
 *
 * The variants' defaults mean plain self-attention, one head, forward.  A schedule that does not
 * accept a non-default value (its descriptor's `accepts`, schedule.h) has it refused by
 * fl_problem_check with a message naming the quantity, never ignored. */
#define FL_PROBLEM_FIELDS(X)                                                                          \
    X(FL_FK_ALGO, fl_algo, algo, FL_ALGO_DEFAULT, "the schedule (registry position)")               \
    X(FL_FK_I64, int64_t, N, 1024, "sequence length of the queries (and of the keys unless Nk)")   \
    X(FL_FK_I64, int64_t, d, 64, "head dimension")                                                  \
    X(FL_FK_I64, int64_t, M, 98304, "SRAM capacity in elements (A100: 192 KiB in fp16)")           \
    X(FL_FK_I64, int64_t, Br, 0, "rows of a query tile; 0 = the schedule's rule")                  \
    X(FL_FK_I64, int64_t, Bc, 0, "rows of a key tile; 0 = the schedule's rule")                    \
    X(FL_FK_U64, uint64_t, seed, 1, "the inputs of a compute run")                                 \
    X(FL_FK_INT, int, elem_bytes, 2, "bytes of an element of Q, K, V, O, S, P (1: fp8, Q K V only)") \
    X(FL_FK_I64, int64_t, max_events, INT64_C(3000000000), "refuse more tile events; 0 = none")    \
    X(FL_FK_I64, int64_t, Nk, 0, "keys; 0 = N")                                                     \
    X(FL_FK_INT, fl_causal, causal, FL_CAUSAL_NONE, "the corner a causal mask is aligned to")      \
    X(FL_FK_I64, int64_t, window_left, -1, "FA2 window: query i sees keys [i + Nk - Nq - L,")      \
    X(FL_FK_I64, int64_t, window_right, -1, "  i + Nk - Nq + R]; -1 = unbounded")                 \
    X(FL_FK_I64, int64_t, batch, 1, "sequences")                                                    \
    X(FL_FK_I64, int64_t, heads, 1, "query heads")                                                  \
    X(FL_FK_I64, int64_t, kv_heads, 0, "key/value heads; 0 = heads (MHA), 1 = MQA, else GQA")      \
    X(FL_FK_INT, fl_pass, pass, FL_PASS_FWD, "which passes run")                                    \
    X(FL_FK_I64_ARRAY, const int64_t *, cu_seqlens_q, NULL, "varlen: batch + 1 query offsets")     \
    X(FL_FK_I64, int64_t, cu_seqlens_q_len, 0, "  its entries (0 when NULL)")                     \
    X(FL_FK_I64_ARRAY, const int64_t *, cu_seqlens_k, NULL, "varlen: key offsets; NULL = q's")     \
    X(FL_FK_I64, int64_t, cu_seqlens_k_len, 0, "  its entries (0 when NULL)")                     \
    X(FL_FK_I64, int64_t, max_macs, INT64_C(10000000000), "refuse compute runs of more MACs")      \
    X(FL_FK_I64, int64_t, d_v, 0, "head dimension of V and O; 0 = d (d is Q's and K's: d_qk)")      \
    X(FL_FK_INT, int, sinks, 0, "1 = a learnable logit per query head joins each row's softmax")   \
    X(FL_FK_F64, double, softcap, 0.0, "c > 0: scores become c tanh(s / c); 0 = none")              \
    X(FL_FK_INT, int, alibi, 0, "1 = ALiBi: score - m_h |i + Nk - Nq - j|, m_h = 2^(-8(h+1)/Hq)")  \
    X(FL_FK_F64, double, dropout, 0.0, "probability of dropping an entry of P (Philox from seed)")  \
    X(FL_FK_I64, int64_t, scale_block, 0, "fp8: rows per scale factor; 0 = one per sequence and head") \
    X(FL_FK_INT, int, deterministic, 0, "1 = the backward's dQ in a fixed order (partials), not atomics") \
    X(FL_FK_EXT, const struct fl_kv_cache *, kv_cache, NULL, "decode's KV cache (decode.h)")       \
    X(FL_FK_EXT, const struct fl_block_sparsity *, block_mask, NULL, "blocksparse's mask (blocksparse_mask.h)")

struct fl_kv_cache;
struct fl_block_sparsity;

/* What a run is asked to do.  Always start from fl_problem_default(): fields added later then
 * keep their defaults.  Varlen (docs/model.md rule V1): cu_seqlens_q NULL = every sequence has N
 * queries and Nk keys; else batch + 1 offsets into the packed tokens, N (Nk) the packed query
 * (key) count; cu_seqlens_k NULL with cu_seqlens_q set means the same array for the keys; the
 * arrays are the caller's, must outlive the run, and their lengths must equal batch + 1.  The
 * extensions (kv_cache, block_mask) are the caller's too: a problem that points at one asks for
 * the schedule that reads it, even with every field of it at its default. */
typedef struct {
    FL_PROBLEM_FIELDS(FL_FIELD_MEMBER)
} fl_problem;

/* The fields of fl_problem in order (FL_PROBLEM_FIELDS, fields.h); *n receives their number. */
const fl_field *fl_problem_fields(int *n);

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
    int64_t head;  /* its (first) query head h, 0 <= h < Hq; query head g of the group is h + g */
    int64_t seq;   /* its sequence b, 0 <= b < batch */
    int head_first; /* backward with sinks: the first segment of its query heads (the first
                       non-empty sequence) writes their dsink; later ones read, add, write back */
    /* fp8 (docs/model.md rule Q8): its scale factors, one per block of scale_block rows of each
     * (sequence, head) (one per (sequence, head) when scale_block is 0): query head g's first Q
     * scale at row qs0 + g*qsstride of the Q scales, its K/V head's first at ks0 of the K and V
     * scales */
    int64_t qs0, qsstride, ks0;
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

/* The head dimension of V and O: p->d_v, or p->d (Q's and K's) when d_v is 0 (docs/model.md
 * §14, rule D1). */
int64_t fl_problem_dv(const fl_problem *p);

/* The ALiBi slope of query head h of Hq (docs/model.md rule AL): m_h = 2^(-8 (h + 1) / Hq), the
 * geometric sequence of Press, Smith & Lewis (2022) for any number of heads; a function of the
 * head, so no tensor holds it. */
double fl_alibi_slope(int64_t h, int64_t Hq);

/* 1 when p's Q, K, V are fp8 (e4m3: elem_bytes 1) with scale factors (docs/model.md §14, rule
 * Q8), else 0. */
int fl_problem_fp8(const fl_problem *p);

/* The bytes of an element of the tensors of p other than Q, K, V and the fp32 statistics and
 * accumulators: the dtype's size, except under fp8, where they are bf16 (2 bytes; rule Q8). */
int fl_problem_out_bytes(const fl_problem *p);

/* A problem with the defaults: flash2, N = 1024, d = 64, M = 98304 (A100: 192 KiB in fp16),
 * default blocks, seed 1, fp16 sizes, at most 3e9 tile events and 1e10 multiply-adds, and the variant fields at their
 * defaults (Nk = N, no mask, no window, one head, forward).  Always start from this: fields
 * added later then keep their defaults. */
fl_problem fl_problem_default(void);

/* 1 when p asks for a KV cache (it points at one, decode.h), else 0. */
int fl_problem_asks_kv_cache(const fl_problem *p);

/* 1 when p asks for a block mask (it points at one, blocksparse_mask.h), else 0. */
int fl_problem_asks_block_mask(const fl_problem *p);

/* 1 when p asks for any variant of docs/model.md §14 that changes its scores or tensors (d_v != d,
 * sinks, softcap, ALiBi, dropout, fp8), else 0. */
int fl_problem_asks_variants(const fl_problem *p);

/* The field of the first variant p asks for, in the order d_v, sinks, softcap, alibi, dropout,
 * dtype (fp8): "d_v", "sinks", ..., "dtype"; NULL when it asks for none.  A static string. */
const char *fl_problem_variant_field(const fl_problem *p);

/* Largest value of a size field (N, Nk, d, d_v, M, Br, Bc, batch, heads, kv_heads, window sides, scale_block):
 * 2^61 - 1, the CLI's bound too, so that the sum of any two sizes fits in 64 bits. */
#define FL_SIZE_MAX (INT64_MAX / 4)

/* The rules every problem obeys, whatever its schedule: N, d, M >= 1, every size field <=
 * FL_SIZE_MAX, elem_bytes in {1, 2, 4, 8}, the variant fields (Nk, causal, window, batch/heads/
 * kv_heads, pass, cu_seqlens and their lengths: docs/model.md K1, H1, V1; d_v, sinks, softcap,
 * alibi, dropout, fp8's scale_block, deterministic and their combinations: §14) and the fields
 * of the schedules with a problem of their own (page size, pool, block table, splits, density);
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
