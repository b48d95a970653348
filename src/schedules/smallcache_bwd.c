/* smallcache_bwd.c: the backward of smallcache -- exact attention gradients when SRAM holds less
 * than d^2 elements.  Every product walks d in chunks of Bd, as the forward's do (Saha & Ye's
 * "d split"; Li et al., arXiv 2410.09397, give the small-cache backward's order
 * Theta(N^2 d / sqrt M)).  docs/model.md §12.1 (loop, Fscb, Bscb, Cscb, Escb).
 *
 * The forward saved L = m + log l per row (smallcache.c); P is recomputed from Q, K and L.  Two
 * score tiles, S_ij (then P_ij) and dP_ij (then dS_ij), and two chunk buffers, X (Br x Bd: a Q,
 * dO or dQ chunk) and Y (Bc x Bd: a K, V, dK or dV chunk).  Per segment:
 *
 *  0  D = rowsum(dO o O), in row blocks of min(Br, Bc) and chunks of d -> 2 Nq d reads, Nq writes
 *  1  for each row block i (br rows), with the key blocks j0..j1-1 it touches (rule K2):
 *       (none: dQ_i = 0 is written chunk by chunk)
 *  2    load L_i, D_i                                             -> 2 br reads
 *  3    for j in j0..j1-1:
 *  4      S_ij = sum over chunks k of Q_i[:, k] K_j[:, k]^T / sqrt(d)       -> (br + bc) d reads
 *  5      P_ij = exp(S_ij - L_i), 0 where the mask drops the entry (K4, M0)
 *  6      for each chunk c: X = dO_i[:, c], Y = V_j[:, c]; dP_ij += X Y^T;
 *           Y = dV_j[:, c] (0 at its first touch); Y += P_ij^T X; store Y
 *                                                    -> (br + bc + [rmw] bc) d reads, bc d writes
 *  7      dS_ij = P_ij o (dP_ij - D_i)
 *  8      for each chunk c: Y = K_j[:, c]; X = dQ_i[:, c] (0 at j = j0); X += dS_ij Y / sqrt(d);
 *           store X; X = Q_i[:, c]; Y = dK_j[:, c] (0 at its first touch); Y += dS_ij^T X / sqrt(d);
 *           store Y              -> (bc + br + [j > j0] br + [rmw] bc) d reads, (br + bc) d writes
 *  9  a key block no query sees: dK_j = dV_j = 0 written chunk by chunk (first segment of its K/V
 *     head only)
 *
 * dK_j, dV_j start from 0 at the first row block that touches key block j in the first segment of
 * its K/V head, and are read, updated and written back otherwise; dQ_i at its first key block.
 * dQ, dK, dV cross HBM as accumulators (rule R8 prices dQ in fp32, as for every backward).
 * SRAM: eq. (Fscb) = 2 Br Bc + (Br + Bc) Bd + 2 Br; every operand and partial sum lives in these
 * buffers between tile events (docs/bounds.md assumption A1).
 */
#include "smallcache.h"

#include <math.h>
#include <string.h>

#include <flashlab/ops.h>
#include "base/checked.h"
#include "problem/segments.h"
#include "rules.h"

enum { S_T, DP_T, X_B, Y_B, L_B, D_B, NBUF };

typedef struct {
    int L_t, D_t;
    double scale;
    int64_t d;
} tensors;

/* step 0: D = rowsum(dO o O) for rows [0, Nq) of the segment, b rows at a time */
static fl_status preprocess(fl_machine *m, const fl_qkvo *io, const fl_seg *sg, const fl_blocks *b,
                            const tensors *t, fl_buf **B)
{
    const int64_t d = t->d, Bd = b->Bd, rb = fl_min64(b->Br, b->Bc);
    fl_buf *X = B[X_B], *Y = B[Y_B], *Di = B[D_B];
    for (int64_t r0 = 0; r0 < sg->Nq; r0 += rb) {
        const int64_t br = fl_min64(rb, sg->Nq - r0), row = sg->q0 + r0;
        fl_op_fill(Di, br, 1, 0.0);
        for (int64_t c = 0; c < d; c += Bd) {
            const int64_t bk = fl_min64(Bd, d - c);
            FL_TRY(fl_load(m, X, io->O, row, c, br, bk));
            FL_TRY(fl_load(m, Y, io->dO, row, c, br, bk));
            if (fl_computes(m))
                for (int64_t r = 0; r < br; r++)
                    for (int64_t k = 0; k < bk; k++) Di->x[r] += X->x[r * Bd + k] * Y->x[r * Bd + k];
        }
        FL_TRY(fl_store(m, Di, t->D_t, row, 0, br, 1));
    }
    return FL_OK;
}

/* Stores zeros into the nr x d block of tensor ten at row r0, chunk by chunk, through buffer Z. */
static fl_status store_zeros(fl_machine *m, fl_buf *Z, int ten, int64_t r0, int64_t nr, int64_t d, int64_t Bd)
{
    fl_op_fill(Z, nr, Bd, 0.0);
    for (int64_t c = 0; c < d; c += Bd) FL_TRY(fl_store(m, Z, ten, r0, c, nr, fl_min64(Bd, d - c)));
    return FL_OK;
}

/* steps 4-5: S_ij, then P_ij in place */
static fl_status scores(fl_machine *m, const fl_qkvo *io, const fl_seg *sg, const fl_blocks *b,
                        const tensors *t, fl_buf **B, int64_t r0, int64_t br, int64_t c0, int64_t bc)
{
    const int64_t d = t->d, Bd = b->Bd;
    fl_buf *S = B[S_T], *X = B[X_B], *Y = B[Y_B], *Li = B[L_B];
    for (int64_t k = 0; k < d; k += Bd) {
        const int64_t bk = fl_min64(Bd, d - k);
        FL_TRY(fl_load(m, X, io->Q, sg->q0 + r0, k, br, bk));
        FL_TRY(fl_load(m, Y, io->K, sg->k0 + c0, k, bc, bk));
        fl_op_matmul(S, X, Y, br, bc, bk, 1, t->scale, k > 0);
    }
    if (!fl_computes(m)) return FL_OK;
    const int partial = fl_mask_tile(&sg->mask, r0, br, c0, bc) == FL_TILE_PARTIAL;
    for (int64_t r = 0; r < br; r++)
        for (int64_t q = 0; q < bc; q++) {
            double *s = &S->x[r * S->cols + q];
            *s = partial && !fl_mask_keep(&sg->mask, r0 + r, c0 + q) ? 0.0 : exp(*s - Li->x[r]);
        }
    return FL_OK;
}

/* One segment: steps 1-9. */
static fl_status segment(fl_machine *m, const fl_qkvo *io, const fl_seg *sg, const fl_blocks *b,
                         const tensors *t, fl_buf **B)
{
    const int64_t d = t->d, Br = b->Br, Bc = b->Bc, Bd = b->Bd;
    fl_buf *S = B[S_T], *G = B[DP_T], *X = B[X_B], *Y = B[Y_B], *Li = B[L_B], *Di = B[D_B];
    for (int64_t r0 = 0; r0 < sg->Nq; r0 += Br) { /* step 1 */
        const int64_t br = fl_min64(Br, sg->Nq - r0), qr = sg->q0 + r0;
        int64_t j0, j1;
        fl_mask_block_range(&sg->mask, r0, br, Bc, &j0, &j1);
        if (j0 >= j1) {
            FL_TRY(store_zeros(m, X, io->dQ, qr, br, d, Bd));
            continue;
        }
        FL_TRY(fl_load(m, Li, t->L_t, qr, 0, br, 1)); /* step 2 */
        FL_TRY(fl_load(m, Di, t->D_t, qr, 0, br, 1));
        for (int64_t j = j0; j < j1; j++) { /* step 3 */
            const int64_t c0 = j * Bc, bc = fl_min64(Bc, sg->Nk - c0), kr = sg->k0 + c0;
            int64_t i0, i1;
            fl_mask_row_block_range(&sg->mask, c0, bc, Br, &i0, &i1);
            const int fresh = sg->kv_first && r0 / Br == i0; /* dK_j, dV_j start from 0 */
            FL_TRY(scores(m, io, sg, b, t, B, r0, br, c0, bc)); /* steps 4-5 */
            for (int64_t c = 0; c < d; c += Bd) {               /* step 6 */
                const int64_t bk = fl_min64(Bd, d - c);
                FL_TRY(fl_load(m, X, io->dO, qr, c, br, bk));
                FL_TRY(fl_load(m, Y, io->V, kr, c, bc, bk));
                fl_op_matmul(G, X, Y, br, bc, bk, 1, 1.0, c > 0);
                if (fresh) fl_op_fill(Y, bc, bk, 0.0);
                else FL_TRY(fl_load(m, Y, io->dV, kr, c, bc, bk));
                fl_matmul_tn(Y, S, X, bc, bk, br, 1.0);
                FL_TRY(fl_store(m, Y, io->dV, kr, c, bc, bk));
            }
            if (fl_computes(m)) /* step 7 */
                for (int64_t r = 0; r < br; r++)
                    for (int64_t q = 0; q < bc; q++) {
                        double *g = &G->x[r * G->cols + q];
                        *g = S->x[r * S->cols + q] * (*g - Di->x[r]);
                    }
            for (int64_t c = 0; c < d; c += Bd) { /* step 8 */
                const int64_t bk = fl_min64(Bd, d - c);
                FL_TRY(fl_load(m, Y, io->K, kr, c, bc, bk));
                if (j == j0) fl_op_fill(X, br, bk, 0.0);
                else FL_TRY(fl_load(m, X, io->dQ, qr, c, br, bk));
                fl_op_matmul(X, G, Y, br, bk, bc, 0, t->scale, 1);
                FL_TRY(fl_store(m, X, io->dQ, qr, c, br, bk));
                FL_TRY(fl_load(m, X, io->Q, qr, c, br, bk));
                if (fresh) fl_op_fill(Y, bc, bk, 0.0);
                else FL_TRY(fl_load(m, Y, io->dK, kr, c, bc, bk));
                fl_matmul_tn(Y, G, X, bc, bk, br, t->scale);
                FL_TRY(fl_store(m, Y, io->dK, kr, c, bc, bk));
            }
        }
    }
    if (sg->kv_first) /* step 9 */
        for (int64_t c0 = 0; c0 < sg->Nk; c0 += Bc) {
            const int64_t bc = fl_min64(Bc, sg->Nk - c0);
            int64_t i0, i1;
            fl_mask_row_block_range(&sg->mask, c0, bc, Br, &i0, &i1);
            if (i0 < i1) continue;
            FL_TRY(store_zeros(m, Y, io->dK, sg->k0 + c0, bc, d, Bd));
            FL_TRY(store_zeros(m, Y, io->dV, sg->k0 + c0, bc, d, Bd));
        }
    return FL_OK;
}

fl_status fl_schedule_smallcache_bwd(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io)
{
    const int64_t Br = b->Br, Bc = b->Bc, Bd = b->Bd;
    tensors t = {fl_tensor_find(m, "L"), -1, 1.0 / sqrt((double)p->d), p->d};
    if (t.L_t < 0) return fl_fail(FL_EBOUNDS, "smallcache backward: the forward's L is not in HBM");
    FL_TRY(fl_tensor_add(m, "D", io.q_rows, 1, 4, &t.D_t));
    fl_buf *B[NBUF];
    const char *names[NBUF] = {"S_ij", "dP_ij", "X", "Y", "L_i", "D_i"};
    const int64_t rows[NBUF] = {Br, Br, Br, Bc, Br, Br}, cols[NBUF] = {Bc, Bc, Bd, Bd, 1, 1};
    for (int k = 0; k < NBUF; k++) FL_TRY(fl_sram_alloc(m, names[k], rows[k], cols[k], &B[k]));
    for (int64_t s = 0; s < io.nseg; s++) { /* step 0 for every segment, then the gradients */
        fl_seg sg;
        fl_segment_at(io.segs, s, &sg);
        FL_TRY(preprocess(m, &io, &sg, b, &t, B));
    }
    for (int64_t s = 0; s < io.nseg; s++) {
        fl_seg sg;
        fl_segment_at(io.segs, s, &sg);
        FL_TRY(segment(m, &io, &sg, b, &t, B));
    }
    for (int k = 0; k < NBUF; k++) fl_sram_free(m, B[k]);
    return FL_OK;
}

/* ---- rules: footprint, closed form, count floor (the block rule Bscb: smallcache.c) ---- */

int64_t fl_smallcache_bwd_footprint(int64_t Br, int64_t Bc, int64_t Bd)
{
    ck c = {0};
    /* (Fscb) 2 Br Bc + (Br + Bc) Bd + 2 Br */
    const int64_t f = add(&c, add(&c, mul(&c, 2, mul(&c, Br, Bc)), mul(&c, add(&c, Br, Bc), Bd)), mul(&c, 2, Br));
    return c.ovf ? -1 : f;
}

/* (Cscb), (Escb) for one segment (docs/model.md §12.1). */
void fl_smallcache_bwd_segment(ck *c, const fl_seg *s, const fl_blocks *b, int64_t d, fl_counts *r)
{
    const int64_t Br = b->Br, Bc = b->Bc, Td = fl_cdiv(d, b->Bd), f = s->kv_first;
    /* step 0: D, in row blocks of min(Br, Bc) */
    fl_acc(c, &r->reads, mul(c, 2, mul(c, s->Nq, d)));
    fl_acc(c, &r->writes, s->Nq);
    fl_acc(c, &r->events, mul(c, fl_cdiv(s->Nq, fl_min64(Br, Bc)), add(c, mul(c, 2, Td), 1)));
    for (int64_t r0 = 0; r0 < s->Nq; r0 += Br) { /* steps 1-8, the row-block terms */
        const int64_t br = fl_min64(Br, s->Nq - r0), brd = mul(c, br, d);
        int64_t j0, j1;
        fl_mask_block_range(&s->mask, r0, br, Bc, &j0, &j1);
        if (j0 >= j1) { /* dQ_i = 0 */
            fl_acc(c, &r->writes, brd);
            fl_acc(c, &r->events, Td);
            continue;
        }
        const int64_t n = j1 - j0, cols = fl_min64(s->Nk, j1 * Bc) - j0 * Bc;
        /* per tile: Q twice, dO, dQ (read after the first), 3 bc d of K, V, K; L_i, D_i once */
        fl_acc(c, &r->reads, add(c, mul(c, add(c, mul(c, 3, n), n - 1), brd), add(c, mul(c, 3, mul(c, cols, d)), 2 * br)));
        fl_acc(c, &r->writes, add(c, mul(c, n, brd), mul(c, 2, mul(c, cols, d))));
        fl_acc(c, &r->events, add(c, 2, mul(c, Td, add(c, mul(c, 10, n), -1))));
    }
    for (int64_t c0 = 0; c0 < s->Nk; c0 += Bc) { /* the key-block terms: dV, dK read after a first touch */
        const int64_t bc = fl_min64(Bc, s->Nk - c0), bcd = mul(c, bc, d);
        int64_t i0, i1;
        fl_mask_row_block_range(&s->mask, c0, bc, Br, &i0, &i1);
        if (i0 >= i1) {
            if (f) fl_acc(c, &r->writes, mul(c, 2, bcd)), fl_acc(c, &r->events, mul(c, 2, Td));
            continue;
        }
        const int64_t again = i1 - i0 - f;
        fl_acc(c, &r->reads, mul(c, 2, mul(c, again, bcd)));
        fl_acc(c, &r->events, mul(c, 2, mul(c, again, Td)));
    }
}

double fl_smallcache_bwd_count_floor(const fl_mask *mk, int64_t d_, int64_t Br, int64_t cmax)
{
    /* per row block keeping K keys (the span of its kept keys): n >= ceil(K / cmax) key blocks
     * covering cols >= K keys move (5n - 1) br d + 5 d cols + 2 br; one keeping none writes br d;
     * per key kept by R rows: its key block is touched by at least ceil(R / Br) row blocks, so
     * dK, dV are read at least 2 d (ceil(R / Br) - 1) for it; and D: 2 Nq d + Nq */
    const double d = (double)d_;
    double t = 2.0 * (double)mk->Nq * d + (double)mk->Nq;
    for (int64_t r0 = 0; r0 < mk->Nq; r0 += Br) {
        const int64_t br = fl_min64(Br, mk->Nq - r0);
        int64_t j0, j1;
        fl_mask_block_range(mk, r0, br, 1, &j0, &j1);
        if (j1 <= j0) t += (double)br * d;
        else t += (double)br * d * (5.0 * (double)fl_cdiv(j1 - j0, cmax) - 1.0) + 5.0 * d * (double)(j1 - j0) + 2.0 * (double)br;
    }
    for (int64_t k = 0; k < mk->Nk; k++) {
        int64_t i0, i1;
        fl_mask_row_block_range(mk, k, 1, 1, &i0, &i1); /* the rows that keep key k */
        if (i1 > i0) t += 2.0 * d * (double)(fl_cdiv(i1 - i0, Br) - 1);
    }
    return t;
}
