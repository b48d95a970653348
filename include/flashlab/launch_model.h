/* launch_model.h: one whole kernel launch over batch x heads, in the order its grid runs, through
 * the L2 of l2_parts.h (docs/third_party.md §3).
 *
 * gpu_order.h describes flashlab's own kernels for one head.  A library's attention kernel runs
 * every (batch, head) in one launch: its grid lists work items (a query or key tile of one head),
 * the GPU runs them on SMs x CTAs-per-SM slots that advance in lock step, one tile access each per
 * step, each slot taking the next work item in grid order when its own ends (rule S1 of
 * docs/third_party.md §3; with work items of equal length these are waves), and heads share the
 * L2, whose two partitions (l2_parts.h) each hold a copy of what SMs on both sides read.  A
 * launch here is one such kernel: a family (the loop a CTA runs), its tiles, how the grid orders
 * work items (the tile index fastest, or the head fastest), and three things library kernels do
 * that flashlab's kernels do not:
 *
 *   persistent grids  P CTAs take the work items in grid order, each the next one when it ends
 *                     (a tile scheduler: the P slots of rule S1);
 *   cluster multicast the K and V tiles of a cluster of C CTAs (consecutive query tiles of one
 *                     head) are read from L2 once and delivered to all C SMs;
 *   split-KV          a query tile's keys are cut into S ranges, each its own work item writing a
 *                     partial O and logsumexp in fp32; FL_LF_COMBINE then reads the partials.
 *
 * Tensors are (B, H, N, d) row-major (heads contiguous), logsumexp and D are (B, H, N) in fp32,
 * the dQ accumulator (B, H, N, d) in fp32; each starts on a 2 MiB boundary.  Causal masking is the
 * lower triangle (Nq = Nk: top-left and bottom-right coincide); a tile pair is visited when any of
 * its elements is kept.  The counts come from walking the access lists, never from a formula.
 */
#ifndef FL_LAUNCH_MODEL_H
#define FL_LAUNCH_MODEL_H
#include <stdint.h>

#include "cta_timing.h"
#include "status.h"

typedef enum {
    FL_LF_FWD_Q,       /* flash2 order: Q_i once; per kept key tile: K_j, V_j; write O_i, L_i */
    FL_LF_FWD_QKV,     /* Q re-read: per kept key tile: Q_i, K_j, V_j; write O_i, L_i (CUTLASS mem-eff) */
    FL_LF_BWD_KV,      /* K_j, V_j; per kept query tile: Q_i, dO_i, L_i, D_i, dQ_i (fp32) read and
                          written (atomic_dq: reduced in L2, not read by the SM); write dK_j, dV_j */
    FL_LF_BWD_TWOPASS, /* Triton's tutorial: K_j, V_j; per kept BLOCK_M1 step: Q, dO, L, D; write dK_j,
                          dV_j; then Q_m, dO_m, L_m, D_m; per kept BLOCK_N2 step: K, V; write dQ_m */
    FL_LF_BWD_MEMEFF,  /* CUTLASS's (xFormers, PyTorch memory-efficient) backward, one key tile a CTA:
                          D = rowsum(dO o O) for all N rows (O, dO read, D written); K_j (kept when
                          d <= 64); per kept query tile, from tile j on (causal: i >= the tile of
                          key k0), Q_i, [K_j again when d > 64], L_i, dO_i twice, V_j, D_i, dQ_i
                          (fp32) read, K_j, dQ_i written (fp32; the last key tile to arrive
                          writes dQ), Q_i again; write dK_j, dV_j (docs/third_party.md §6) */
    FL_LF_PRE,         /* D = rowsum(dO o O): per tile of Br rows: O, dO read; D written (+ dQ acc = 0) */
    FL_LF_CONVERT,     /* dQ = dQ acc: per tile of Br rows: dQ acc (fp32) read, dQ written */
    FL_LF_COMBINE      /* split-KV: per query tile: the S partial O_i, L_i read; O_i, L_i written */
} fl_launch_family;

typedef enum { FL_GO_TILE_FASTEST, FL_GO_HEAD_FASTEST } fl_grid_order;

/* The tensors of a launch (elements counted per tensor in fl_launch_pred). */
typedef enum {
    FL_LT_Q, FL_LT_K, FL_LT_V, FL_LT_O, FL_LT_L, FL_LT_dO, FL_LT_D, FL_LT_dQacc, FL_LT_dQ, FL_LT_dK, FL_LT_dV,
    FL_LT_Opart, FL_LT_Lpart, FL_LT_COUNT
} fl_launch_tensor;

typedef struct {
    fl_launch_family family;
    int64_t batch, heads, N, d;
    int64_t kv_heads;  /* K/V heads (GQA): 0 or heads, one per query head; else a divisor of heads, and
                          query head h reads the K, V tiles of K/V head h / (heads / kv_heads) (consecutive
                          query heads share one, the seeds' rule); dK, dV are written per query head (FA2's
                          backward writes them so and sums them in a separate kernel) */
    int causal;        /* 0: none; 1: the lower triangle */
    int elem_bytes;    /* Q, K, V, O, dO, dQ, dK, dV: 2 (fp16, bf16) or 4 */
    int64_t Br, Bc;    /* query, key tile rows (BWD_TWOPASS: BLOCK_M1, BLOCK_N1; PRE, CONVERT: rows) */
    int64_t Br2, Bc2;  /* BWD_TWOPASS's dQ pass: BLOCK_M2, BLOCK_N2 */
    int atomic_dq;     /* BWD_KV: dQ accumulated by reductions in L2 */
    int zero_dq;       /* PRE: also writes the dQ accumulator (fp32) = 0 */
    fl_grid_order order;
    int64_t persistent; /* 0: one CTA per work item; P >= 1: P CTAs, each taking the next item in grid
                           order when its own ends (a tile scheduler) */
    int static_rr;      /* with persistent: CTA b takes items b, b + P, b + 2P, ... whatever their
                           lengths (a static round robin: flashlab's version 12) */
    int longest_first;  /* FWD families, causal: a head's query tile t runs as tile Tr - 1 - t, the
                           longest first (flashlab's versions 10 and 12, FlashAttention-3) */
    int pairs;          /* FWD_Q, causal: a work item is the query tiles at positions p and Tr - 1 - p
                           of a head, in that order, positions longest first (a middle tile alone):
                           flashlab's version 12; implies longest_first */
    int64_t cluster;    /* >= 1: CTAs per cluster sharing K_j, V_j by multicast (FWD families) */
    int64_t splits;     /* >= 1: key ranges per query tile (FWD_Q, COMBINE) */
    int64_t sms, ctas_per_sm; /* the machine: 132 SMs on the H200; resident CTAs per SM (>= 1) */
    int l2_parts;       /* L2 partitions (l2_parts.h): 2 on the H200; 1: one LRU.  The CTA in slot k of
                           a wave runs on SM k mod sms, on the side (k mod sms) mod l2_parts */
    const fl_cta_time *timing; /* NULL: rule S1.  Else measured (cta_timing.h), one entry per work item
                           in grid order (timing_n of them): rule S2, the walk runs every item's accesses
                           spread evenly over its [start, end), all items' in time order (ties: the
                           earlier item first), each on the side sm mod l2_parts; persistent and
                           ctas_per_sm do not apply */
    int64_t timing_n;
} fl_launch;

/* What a launch moves.  Bytes are sectors x sector bytes (docs/l2_model.md rule L1). */
typedef struct {
    int64_t ctas, items, waves;
    int64_t sm_read_B;   /* sectors delivered to the SMs (a multicast counts once per receiving SM) */
    int64_t l2_read_B;   /* L2 read lookups (a multicast counts once) */
    int64_t sm_write_B;  /* sectors the SMs write */
    int64_t red_B;       /* sectors reduced in L2 (atomic dQ) */
    int64_t dram_read_B; /* read and reduction misses x sector */
    int64_t fabric_B;    /* sectors crossing between L2 partitions x sector (l2_parts.h; 0 with one) */
    int64_t writeback_B; /* dirty sectors evicted during the launch x sector */
    int64_t read_miss_B, fabric_read_miss_B, red_miss_B; /* the lookups that missed (fl_l2p_stats) x sector:
                            dram_read_B = read misses homed on the reading side + fabric_read_miss_B + red_miss_B */
    int64_t reads[FL_LT_COUNT], writes[FL_LT_COUNT]; /* elements per tensor (reductions: in writes) */
} fl_launch_pred;

/* A launch with the defaults: family f, problem B x H x N x d, no mask, 2-byte elements, tiles
 * Br x Bc, the tile index fastest, one CTA per item, no cluster, no split, 132 SMs, 1 CTA/SM,
 * 2 L2 partitions (the H200). */
fl_launch fl_launch_default(fl_launch_family f, int64_t B, int64_t H, int64_t N, int64_t d, int64_t Br, int64_t Bc);

/* Checks every field (FL_EINVAL naming the CLI option of the first that breaks its rule: sizes
 * >= 1, tiles <= N, BWD_TWOPASS's Bc a multiple of Br and Br2 of Bc2, a cluster only for the
 * forward families, splits only for FWD_Q and COMBINE, elem_bytes 2 or 4, l2_parts 1 or 2;
 * kv_heads 0 or a divisor of heads, static_rr only with persistent and no timing, longest_first only for the forward families with
 * causal, pairs only for FWD_Q with causal and without splits or cluster), then
 * walks the launch in GPU order through an L2 of l2_bytes in l2_parts LRU partitions (l2_parts.h)
 * in sectors of `sector` bytes, emptied first (ncu --cache-control all), and fills *out.
 * With a timing, also --cta-timing: one entry per work item, each SM < sms.
 * FL_ENOMEM when the host runs out of memory. */
fl_status fl_launch_predict(const fl_launch *L, int64_t l2_bytes, int64_t sector, fl_launch_pred *out);

/* Parses a family name (fwd-q, fwd-qkv, bwd-kv, bwd-twopass, pre, convert, combine): FL_EINVAL
 * naming --launch otherwise.  fl_launch_family_name is its inverse. */
fl_status fl_launch_family_parse(const char *s, fl_launch_family *out);
const char *fl_launch_family_name(fl_launch_family f);
const char *fl_launch_tensor_name(fl_launch_tensor t);
#endif
