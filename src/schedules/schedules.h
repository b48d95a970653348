/* schedules.h: what the schedule files share (private to src/schedules/): the loops that a
 * descriptor in another file refers to, and small helpers on buffers, masks and tensors.
 * The loops' contract, fl_seg and fl_qkvo are in include/flashlab/schedule.h; each loop is in a
 * file of its own, to be read beside the algorithm it implements:
 *
 *   standard.c      FlashAttention paper, Algorithm 0 (S and P materialized in HBM)
 *   standard_bwd.c  FlashAttention paper, Algorithm 3 (backward from P saved in HBM)
 *   flash1.c        FlashAttention paper, Algorithm 1 (outer loop over K/V blocks)
 *   flash2.c        FlashAttention-2, Algorithm 1 (forward, query-owned loop); with a
 *                   query-head group > 1 it is the GQA group schedule flash2-gqa
 *   flash_bwd.c     FlashAttention Algorithm 4 (flash1) and FlashAttention-2 Algorithm 2
 *                   (flash2, flash2-gqa): backward with recomputation
 *   decode.c, blocksparse.c, memeff.c, softmax.c: the schedules with a problem of their own
 */
#ifndef FL_SCHEDULES_H
#define FL_SCHEDULES_H

#include <flashlab/machine.h>
#include <flashlab/masks.h>
#include <flashlab/problem.h>
#include <flashlab/schedule.h>

#include "base/checked.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Backward passes, in files of their own.  They read what the forward of the same algorithm
 * saved (standard: P; flash1: l, m; flash2 and flash2-gqa: L), found by name, and write dQ,
 * dK, dV. */
fl_status fl_schedule_standard_bwd(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io);
fl_status fl_schedule_standard_skip_bwd(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io);
fl_status fl_schedule_flash1_bwd(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io);
fl_status fl_schedule_flash2_bwd(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io);

/* The closed forms of the backward passes, per segment, beside their loops (docs/model.md
 * (C0b) in standard_bwd.c; (C1b) with fa1 = 1 and (C2b) with fa1 = 0 in flash_bwd.c): added
 * into *r through the overflow flag c. */
void fl_closed_standard_bwd(ck *c, int skip, const fl_problem *p, const fl_seg *s, const fl_blocks *b, fl_counts *r);

/* Lemma O4's bound on standard-skip's backward count (C0bm) over one query head of p kept by mk,
 * for blocks Br and every Bc <= cmax (docs/model.md §7): skipping makes that count rise with the
 * blocks too (tiles cover what the mask drops), so lemma O3 does not hold for it. */
double fl_standard_bwd_count_floor(const fl_problem *p, const fl_mask *mk, int64_t Br, int64_t cmax);
void fl_closed_flash_bwd(ck *c, int fa1, const fl_problem *p, const fl_seg *s, const fl_blocks *b, fl_counts *r);

/* The counts of standard's two tiled products (standard.c; used by both its passes'
 * closed forms): _nt for C = A B^T of na x d by nb x d; _nn for O = P V (np x nk by nk x d) or,
 * transP, P^T V, with a read-modify-write of O when rmw (docs/model.md (C0.1), (C0.4)); with
 * skip (not NULL), the tiles the mask skip drops skipped as fl_std_product_nt/_nn do (C0bm). */
void fl_closed_std_nt(ck *c, const fl_blocks *b, int64_t d, int64_t na, int64_t nb, const fl_mask *skip,
                      fl_counts *r);
void fl_closed_std_nn(ck *c, const fl_blocks *b, int64_t d, int64_t np, int64_t nk, int transP, int rmw,
                      const fl_mask *skip, fl_counts *r);
/* --- helpers the schedules share (util.c) --- */

/* A view of buffer b from its row r0 on: loads and stores through it land at row r0 of b.  It
 * takes no SRAM of its own (b's allocation counts) and is valid while b is live. */
fl_buf fl_buf_rows(const fl_buf *b, int64_t r0);

/* On chip, compute mode only: sets entry (r, c) of the nr x nc tile in b to -inf where the mask
 * drops query r0 + (r mod rows_per_head) and key c0 + c (rule K4: boundary tiles only). */
void fl_tile_mask(fl_buf *b, const fl_mask *mk, int64_t r0, int64_t rows_per_head, int64_t nr,
                  int64_t c0, int64_t nc);

/* On chip, compute mode only: C[0:mm, 0:n] += alpha A[0:k, 0:mm]^T B[0:k, 0:n] (the backward's
 * P^T dO and dS^T Q). */
void fl_matmul_tn(fl_buf *C, const fl_buf *A, const fl_buf *B, int64_t mm, int64_t n, int64_t k, double alpha);

/* Query heads a segment stacks (the rows a group schedule stacks in one tile: G). */
int64_t fl_seg_max_group(const fl_qkvo *io);

/* The longest sequence's key length. */
int64_t fl_seg_max_nk(const fl_qkvo *io);

struct fl_vrun;

/* What the forward's products do beside the arithmetic (docs/model.md §14): x->sg set, the
 * score rules (cap, ALiBi, mask) on each tile of C = A B^T; a_which / b_which (FL_VQ, FL_VK,
 * FL_VV of variants.h, or -1), fp8 scale factors at scale rows a_sbase / b_sbase of the operand A
 * (rows) and of B (the summed operand V in _nn).  NULL: none. */
typedef struct {
    struct fl_vrun *vr;
    const fl_seg *sg;
    int a_which, b_which;
    int64_t a_sbase, b_sbase;
} fl_std_extra;

/* standard's two tiled products (standard.c), shared by its forward and backward, on
 * blocks (Br, Bc, Bd) (eq. (F0); a product of a narrower d takes chunks of min(Bd, d)), through
 * the three buffers of fl_std_bufs_alloc (X: Br x Bd, Y: Bc x Bd, Z: Br x Bc), which the caller
 * allocates once for many products:
 *   _nt: C[c0 + i, j] = alpha sum_k A[a0 + i, k] B[b0 + j, k] for i < na, j < nb (C = A B^T),
 *        then (x, with x->sg) the segment's score rules, entries its mask drops -inf, else
 *        entries the mask mk drops (if not NULL) set to -inf; with skip, the tiles mk drops
 *        entirely are neither computed nor stored (and nothing is set to -inf);
 *   _nn: O[o0 + i, k] (+)= alpha sum_j P[p0 + i, j] V[v0 + j, k] (O = P V: i < np, j < nk) or,
 *        with transP, alpha sum_i P[p0 + i, j] V[v0 + i, k] (O = P^T V: rows j < nk); with acc
 *        each output tile starts from its value in HBM (read-modify-write) instead of 0; with
 *        skip (not NULL) only the P tiles that mask keeps are read (rule K2), their dropped
 *        entries zeroed on chip, and an accumulated output tile no kept tile touches is left as
 *        it is in HBM (neither read nor written). */
fl_status fl_std_bufs_alloc(fl_machine *m, const fl_blocks *b, fl_buf *B[3]);
void fl_std_bufs_free(fl_machine *m, fl_buf *B[3]);
fl_status fl_std_product_nt(fl_machine *m, const fl_blocks *b, fl_buf *B[3], int64_t d, int A_t,
                            int64_t a0, int64_t na, int B_t, int64_t b0, int64_t nb, int C_t,
                            int64_t c0, double alpha, const fl_mask *mk, int skip, const fl_std_extra *x);
fl_status fl_std_product_nn(fl_machine *m, const fl_blocks *b, fl_buf *B[3], int64_t d, int P_t,
                            int64_t p0, int64_t np, int64_t nk, int V_t, int64_t v0, int O_t,
                            int64_t o0, double alpha, int transP, int acc, const fl_mask *skip,
                            const fl_std_extra *x);

/* Makes *b a live buffer of rows x cols: keeps it when it already is one of that shape, else
 * frees it (if live) and allocates anew.  *b NULL: allocates. */
fl_status fl_sram_realloc(fl_machine *m, const char *name, int64_t rows, int64_t cols, fl_buf **b);

#ifdef __cplusplus
}
#endif

#endif
