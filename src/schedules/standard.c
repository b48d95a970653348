/* sched_standard.c: standard attention, FlashAttention paper Algorithm 0, run honestly under M.
 *
 *  1  load Q, K by blocks, compute S = QK^T, write S to HBM
 *  2  read S, compute P = softmax(S), write P to HBM
 *  3  load P and V by blocks, compute O = PV, write O to HBM
 *
 * The paper's algorithm does not say how its blocks fit in SRAM; here they must.  Both matrix
 * products use one tiling (Br, Bc, Bd): an output tile of Br rows, Bc keys, and a chunk of Bd of
 * the d columns (eq. (F0): Br*Bd + Bc*Bd + Br*Bc <= M; rule (B0) picks them).
 *
 *  step 1: for each row block i: for each key block j: for each d-chunk k: load Q[i,k] (once
 *          per i when Bd = d), load K[j,k], accumulate; write S_ij            eq. (C0.1)
 *  step 2: a row of S fits when N <= M: load R = floor(M/N) whole rows, softmax in place, write
 *          P.  Otherwise the classic safe softmax in chunks of M: one pass for the row max, one
 *          for the sum of exponentials, one to normalise and write: 3 reads, 1 write. (C0.2-3)
 *  step 3: for each row block i: for each d-chunk c: O tile = 0; for each key block j: load
 *          P[i,j], load V[j,c], accumulate; write the O tile                   eq. (C0.4)
 *
 * Several (batch, head) segments: each step runs over every segment before the next begins (one
 * batched kernel per step, as a framework runs it); the counts are those of the segments one by
 * one, and each step's buffers are allocated once.
 *
 * Masks (docs/model.md §masks): the materializing baseline is mask-oblivious in its traffic, like
 * S = QK^T; S.masked_fill(~keep, -inf): every tile of S is computed, written and read, and the
 * masked entries are set to -inf on chip (the rule needs no HBM tensor).  A row with no legal
 * key gets P = 0 and O = 0 (rule M0).  With Nq != Nk, S and P are Nq x Nk.
 *
 * Where the count is Theta(Nd + N^2) (docs/model.md §5): when Bd = d (M >= 3d^2 by rule B0), Br is
 * at least d and N <= M; then K and V are re-read N/Br <= N/d times (<= N^2 reads each) and S, P
 * cross HBM a fixed number of times.  Below that, chunked d (Td > 1) re-reads P, small Br
 * re-reads K and V, and long rows triple softmax reads: the count grows past c*(Nd + N^2).
 */
#include <math.h>

#include <flashlab/ops.h>
#include "schedules.h"

fl_status fl_std_bufs_alloc(fl_machine *m, const fl_blocks *b, fl_buf *B[3])
{
    FL_TRY(fl_sram_alloc(m, "X_ik", b->Br, b->Bd, &B[0]));
    FL_TRY(fl_sram_alloc(m, "Y_jk", b->Bc, b->Bd, &B[1]));
    return fl_sram_alloc(m, "Z_ij", b->Br, b->Bc, &B[2]);
}

void fl_std_bufs_free(fl_machine *m, fl_buf *B[3])
{
    for (int k = 0; k < 3; k++) fl_sram_free(m, B[k]);
}

fl_status fl_std_product_nt(fl_machine *m, const fl_blocks *b, fl_buf *B[3], int64_t d, int A_t,
                            int64_t a0, int64_t na, int B_t, int64_t b0, int64_t nb, int C_t,
                            int64_t c0, double alpha, const fl_mask *mk)
{
    const int64_t Br = b->Br, Bc = b->Bc, Bd = b->Bd;
    const int64_t Td = fl_cdiv(d, Bd);
    fl_buf *At = B[0], *Bt = B[1], *Ct = B[2];
    for (int64_t r0 = 0; r0 < na; r0 += Br) {
        const int64_t br = fl_min64(Br, na - r0);
        if (Td == 1) FL_TRY(fl_load(m, At, A_t, a0 + r0, 0, br, d)); /* A_i stays for every j */
        for (int64_t q = 0; q < nb; q += Bc) {
            const int64_t bc = fl_min64(Bc, nb - q);
            for (int64_t k0 = 0; k0 < d; k0 += Bd) {
                const int64_t bk = fl_min64(Bd, d - k0);
                if (Td > 1) FL_TRY(fl_load(m, At, A_t, a0 + r0, k0, br, bk));
                FL_TRY(fl_load(m, Bt, B_t, b0 + q, k0, bc, bk));
                fl_op_matmul(Ct, At, Bt, br, bc, bk, 1, alpha, k0 > 0);
            }
            if (mk && fl_mask_tile(mk, r0, br, q, bc) != FL_TILE_FULL)
                fl_tile_mask(Ct, mk, r0, br, br, q, bc);
            FL_TRY(fl_store(m, Ct, C_t, c0 + r0, q, br, bc));
        }
    }
    return FL_OK;
}

fl_status fl_std_product_nn(fl_machine *m, const fl_blocks *b, fl_buf *B[3], int64_t d, int P_t,
                            int64_t p0, int64_t np, int64_t nk, int V_t, int64_t v0, int O_t,
                            int64_t o0, double alpha, int transP, int acc)
{
    const int64_t Br = b->Br, Bc = b->Bc, Bd = b->Bd;
    /* untransposed: output rows index P's rows (np of them), the sum runs over P's nk columns;
     * transposed: output rows index P's columns (nk), the sum runs over P's np rows */
    const int64_t nout = transP ? nk : np, nsum = transP ? np : nk;
    const int64_t Bo = transP ? Bc : Br, Bs = transP ? Br : Bc;
    /* P tiles in Z (Br x Bc); V tiles of Bs rows and O tiles of Bo rows in X (Br x Bd) and
     * Y (Bc x Bd) */
    fl_buf *Pt = B[2], *Vt = transP ? B[0] : B[1], *Ot = transP ? B[1] : B[0];
    for (int64_t r0 = 0; r0 < nout; r0 += Bo) {
        const int64_t br = fl_min64(Bo, nout - r0);
        for (int64_t k0 = 0; k0 < d; k0 += Bd) {
            const int64_t bk = fl_min64(Bd, d - k0);
            if (acc) FL_TRY(fl_load(m, Ot, O_t, o0 + r0, k0, br, bk)); /* add to what is there */
            else fl_op_fill(Ot, br, bk, 0.0);
            for (int64_t q = 0; q < nsum; q += Bs) {
                const int64_t bs = fl_min64(Bs, nsum - q);
                if (transP) {
                    FL_TRY(fl_load(m, Pt, P_t, p0 + q, r0, bs, br));
                    FL_TRY(fl_load(m, Vt, V_t, v0 + q, k0, bs, bk));
                    if (Ot->x) /* O += alpha P_tile^T V_tile */
                        for (int64_t i = 0; i < bs; i++)
                            for (int64_t r = 0; r < br; r++) {
                                const double w = alpha * Pt->x[i * Pt->cols + r];
                                for (int64_t c = 0; c < bk; c++) Ot->x[r * Ot->cols + c] += w * Vt->x[i * Vt->cols + c];
                            }
                } else {
                    FL_TRY(fl_load(m, Pt, P_t, p0 + r0, q, br, bs));
                    FL_TRY(fl_load(m, Vt, V_t, v0 + q, k0, bs, bk));
                    fl_op_matmul(Ot, Pt, Vt, br, bk, bs, 0, alpha, 1);
                }
            }
            FL_TRY(fl_store(m, Ot, O_t, o0 + r0, k0, br, bk));
        }
    }
    return FL_OK;
}

/* step 2: P = softmax(S), row by row, for the nq x nk score block at row s0; *tp is the row
 * buffer, kept between segments of the same shape (the caller frees it) */
static fl_status softmax(fl_machine *m, const fl_problem *p, int S_t, int P_t, int64_t s0,
                         int64_t nq, int64_t nk, fl_buf **tp)
{
    const int64_t M = p->M;
    fl_buf *t;
    if (nk <= M) { /* whole rows fit: R rows per tile, one read and one write per element */
        const int64_t R = fl_min64(M / nk, nq);
        FL_TRY(fl_sram_realloc(m, "S_rows", R, nk, tp));
        t = *tp;
        for (int64_t r0 = 0; r0 < nq; r0 += R) {
            const int64_t nr = fl_min64(R, nq - r0);
            FL_TRY(fl_load(m, t, S_t, s0 + r0, 0, nr, nk));
            if (fl_computes(m))
                for (int64_t r = 0; r < nr; r++) {
                    double *s = t->x + r * nk, mx = -INFINITY, sum = 0.0;
                    for (int64_t c = 0; c < nk; c++) mx = fmax(mx, s[c]);
                    if (mx == -INFINITY) { /* no legal key: P = 0 (rule M0) */
                        for (int64_t c = 0; c < nk; c++) s[c] = 0.0;
                        continue;
                    }
                    for (int64_t c = 0; c < nk; c++) sum += (s[c] = exp(s[c] - mx));
                    for (int64_t c = 0; c < nk; c++) s[c] /= sum;
                }
            FL_TRY(fl_store(m, t, P_t, s0 + r0, 0, nr, nk));
        }
    } else { /* a row does not fit: safe softmax in three passes over chunks of M */
        FL_TRY(fl_sram_realloc(m, "S_chunk", 1, M, tp));
        t = *tp;
        for (int64_t r = 0; r < nq; r++) {
            double mx = -INFINITY, sum = 0.0; /* per-row scalars (rule R3) */
            for (int64_t c0 = 0; c0 < nk; c0 += M) { /* pass 1: max */
                const int64_t nc = fl_min64(M, nk - c0);
                FL_TRY(fl_load(m, t, S_t, s0 + r, c0, 1, nc));
                if (t->x)
                    for (int64_t c = 0; c < nc; c++) mx = fmax(mx, t->x[c]);
            }
            for (int64_t c0 = 0; c0 < nk; c0 += M) { /* pass 2: sum of exponentials */
                const int64_t nc = fl_min64(M, nk - c0);
                FL_TRY(fl_load(m, t, S_t, s0 + r, c0, 1, nc));
                if (t->x && mx != -INFINITY)
                    for (int64_t c = 0; c < nc; c++) sum += exp(t->x[c] - mx);
            }
            for (int64_t c0 = 0; c0 < nk; c0 += M) { /* pass 3: normalise and write P */
                const int64_t nc = fl_min64(M, nk - c0);
                FL_TRY(fl_load(m, t, S_t, s0 + r, c0, 1, nc));
                if (t->x)
                    for (int64_t c = 0; c < nc; c++) t->x[c] = sum > 0.0 ? exp(t->x[c] - mx) / sum : 0.0;
                FL_TRY(fl_store(m, t, P_t, s0 + r, c0, 1, nc));
            }
        }
    }
    return FL_OK;
}

fl_status fl_schedule_standard(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io)
{
    const int64_t nk = fl_seg_max_nk(&io);
    const double scale = 1.0 / sqrt((double)p->d);
    int S_t, P_t;
    FL_TRY(fl_tensor_add(m, "S", io.q_rows, nk, p->elem_bytes, &S_t));
    FL_TRY(fl_tensor_add(m, "P", io.q_rows, nk, p->elem_bytes, &P_t));
    /* step by step over all segments (one batched kernel per step, like a framework's
     * attention): each step's buffers are allocated once */
    fl_buf *B[3], *rows = NULL;
    fl_seg sg;
    FL_TRY(fl_std_bufs_alloc(m, b, B)); /* step 1: S = QK^T / sqrt(d), masked entries -inf */
    for (int64_t s = 0; s < io.nseg; s++) {
        fl_segment_at(io.segs, s, &sg);
        FL_TRY(fl_std_product_nt(m, b, B, p->d, io.Q, sg.q0, sg.Nq, io.K, sg.k0, sg.Nk, S_t, sg.q0,
                                 scale, &sg.mask));
    }
    fl_std_bufs_free(m, B);
    for (int64_t s = 0; s < io.nseg; s++) { /* step 2: P = softmax(S) */
        fl_segment_at(io.segs, s, &sg);
        FL_TRY(softmax(m, p, S_t, P_t, sg.q0, sg.Nq, sg.Nk, &rows));
    }
    fl_sram_free(m, rows);
    FL_TRY(fl_std_bufs_alloc(m, b, B)); /* step 3: O = PV */
    for (int64_t s = 0; s < io.nseg; s++) {
        fl_segment_at(io.segs, s, &sg);
        FL_TRY(fl_std_product_nn(m, b, B, p->d, P_t, sg.q0, sg.Nq, sg.Nk, io.V, sg.k0, io.O, sg.q0,
                                 1.0, 0, 0));
    }
    fl_std_bufs_free(m, B);
    return FL_OK;
}
