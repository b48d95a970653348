/* schedules.h: the attention schedules, each written against the machine (machine.h) in a file
 * of its own, to be read beside the algorithm it implements:
 *
 *   sched_standard.c      FlashAttention paper, Algorithm 0 (S and P materialized in HBM)
 *   sched_standard_bwd.c  FlashAttention paper, Algorithm 3 (backward from P saved in HBM)
 *   sched_flash1.c        FlashAttention paper, Algorithm 1 (outer loop over K/V blocks)
 *   sched_flash2.c        FlashAttention-2, Algorithm 1 (forward, query-owned loop); with a
 *                         query-head group > 1 it is the GQA group schedule flash2-gqa
 *   sched_flash_bwd.c     FlashAttention Algorithm 4 (flash1) and FlashAttention-2
 *                         Algorithm 2 (flash2, flash2-gqa): backward with recomputation
 *
 * Contract shared by all: the caller has added the HBM tensors Q, K, V (filled in compute mode)
 * and O, and for a backward pass also dO (filled), dQ, dK, dV, plus whatever the forward
 * schedule of the same algorithm added (its saved statistics).  A schedule adds its own HBM
 * tensors, allocates its SRAM buffers, runs every segment (one (batch, head) attention problem
 * each, below), and frees every buffer it allocated before returning FL_OK.  Scores are scaled
 * by 1/sqrt(d).  A non-OK return leaves the machine's counters as they were at the failure and
 * fl_last_error() explaining it.
 */
#ifndef FL_SCHEDULES_H
#define FL_SCHEDULES_H

#include <flashlab/masks.h>
#include <flashlab/machine.h>
#include <flashlab/problem.h>

#ifdef __cplusplus
extern "C" {
#endif

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

/* The segments of a run, computed on demand (sim/segments.h). */
typedef struct fl_segments fl_segments;

/* Segment k (0 <= k < nseg) of s. */
void fl_segment_at(const fl_segments *s, int64_t k, fl_seg *out);

typedef struct {
    int Q, K, V, O;     /* tensor ids */
    int dO, dQ, dK, dV; /* backward pass only (-1 otherwise) */
    int64_t q_rows;     /* rows of Q (and of the per-row statistics a schedule adds) */
    int64_t k_rows;     /* rows of K */
    const fl_segments *segs; /* the segments, run in order k = 0 .. nseg - 1 */
    int64_t nseg;
} fl_qkvo;

typedef fl_status (*fl_schedule_fn)(fl_machine *m, const fl_problem *p, const fl_blocks *b,
                                    fl_qkvo io);

fl_status fl_schedule_standard(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io);
fl_status fl_schedule_flash1(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io);
fl_status fl_schedule_flash2(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io);

/* issue 4 items 5-7 (contracts in their files: decode and softmax take other tensors) */
fl_status fl_schedule_decode(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io);
fl_status fl_schedule_blocksparse(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io);
fl_status fl_schedule_memeff(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io);
fl_status fl_schedule_softmax_safe(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io);
fl_status fl_schedule_softmax_online(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io);

/* Backward passes.  They read what the forward of the same algorithm saved (standard: P;
 * flash1: l, m; flash2 and flash2-gqa: L), found by name, and write dQ, dK, dV. */
fl_status fl_schedule_standard_bwd(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io);
fl_status fl_schedule_flash1_bwd(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io);
fl_status fl_schedule_flash2_bwd(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io);

/* The forward (bwd = 0) or backward (bwd = 1) schedule function for an algorithm (NULL if
 * unknown). */
fl_schedule_fn fl_schedule_for(fl_algo a);
fl_schedule_fn fl_schedule_bwd_for(fl_algo a);

/* --- helpers the schedules share (sched_util.c) --- */

/* A view of buffer b from its row r0 on: loads and stores through it land at row r0 of b.  It
 * takes no SRAM of its own (b's allocation counts) and is valid while b is live. */
fl_buf fl_buf_rows(const fl_buf *b, int64_t r0);

/* On chip, compute mode only: sets entry (r, c) of the nr x nc tile in b to -inf where the mask
 * drops query r0 + (r mod rows_per_head) and key c0 + c (rule K4: boundary tiles only). */
void fl_tile_mask(fl_buf *b, const fl_mask *mk, int64_t r0, int64_t rows_per_head, int64_t nr,
                  int64_t c0, int64_t nc);

/* The id of the tensor called name, or -1. */
int fl_tensor_find(fl_machine *m, const char *name);

/* Query heads a segment stacks (the rows a group schedule stacks in one tile: G). */
int64_t fl_seg_max_group(const fl_qkvo *io);

/* The longest sequence's key length. */
int64_t fl_seg_max_nk(const fl_qkvo *io);

/* standard's two tiled products (sched_standard.c), shared by its forward and backward, on
 * blocks (Br, Bc, Bd) (eq. (F0)), through the three buffers of fl_std_bufs_alloc (X: Br x Bd,
 * Y: Bc x Bd, Z: Br x Bc), which the caller allocates once for many products:
 *   _nt: C[c0 + i, j] = alpha sum_k A[a0 + i, k] B[b0 + j, k] for i < na, j < nb (C = A B^T),
 *        entries the mask mk drops (if not NULL) set to -inf;
 *   _nn: O[o0 + i, k] (+)= alpha sum_j P[p0 + i, j] V[v0 + j, k] (O = P V: i < np, j < nk) or,
 *        with transP, alpha sum_i P[p0 + i, j] V[v0 + i, k] (O = P^T V: rows j < nk); with acc
 *        each output tile starts from its value in HBM (read-modify-write) instead of 0. */
fl_status fl_std_bufs_alloc(fl_machine *m, const fl_blocks *b, fl_buf *B[3]);
void fl_std_bufs_free(fl_machine *m, fl_buf *B[3]);
fl_status fl_std_product_nt(fl_machine *m, const fl_blocks *b, fl_buf *B[3], int64_t d, int A_t,
                            int64_t a0, int64_t na, int B_t, int64_t b0, int64_t nb, int C_t,
                            int64_t c0, double alpha, const fl_mask *mk);
fl_status fl_std_product_nn(fl_machine *m, const fl_blocks *b, fl_buf *B[3], int64_t d, int P_t,
                            int64_t p0, int64_t np, int64_t nk, int V_t, int64_t v0, int O_t,
                            int64_t o0, double alpha, int transP, int acc);

/* Makes *b a live buffer of rows x cols: keeps it when it already is one of that shape, else
 * frees it (if live) and allocates anew.  *b NULL: allocates. */
fl_status fl_sram_realloc(fl_machine *m, const char *name, int64_t rows, int64_t cols, fl_buf **b);

#ifdef __cplusplus
}
#endif

#endif
