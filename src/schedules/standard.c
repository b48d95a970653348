/* standard.c: standard attention, FlashAttention paper Algorithm 0, run honestly under M.
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
 * The variants (docs/model.md §14): Q K^T runs over d and P V over d_v, both with the one chunk
 * Bd <= max(d, d_v); step 1 caps and biases each tile on chip (no traffic); step 2 starts each
 * row's maximum and sum from the sink and, with dropout, stores P~ = P o Z / (1 - p) and the mask
 * Z (one byte an entry) beside P, which step 3 reads instead of P; under fp8 the tiles of Q, K
 * and V arrive with their scale factors (rule R3b).
 *
 * Where the count is Theta(Nd + N^2) (docs/model.md §5): when Bd = d (M >= 3d^2 by rule B0), Br is
 * at least d and N <= M; then K and V are re-read N/Br <= N/d times (<= N^2 reads each) and S, P
 * cross HBM a fixed number of times.  Below that, chunked d (Td > 1) re-reads P, small Br
 * re-reads K and V, and long rows triple softmax reads: the count grows past c*(Nd + N^2).
 */
#include <math.h>
#include <stdio.h>

#include <flashlab/ops.h>

#include <flashlab/rng.h>

#include "rules.h"
#include "schedules.h"
#include "variants.h"

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

/* A tile load of a product's operand: through the variants' fp8 scales when x says so (x->vr,
 * which >= 0), else plain. */
static fl_status load_op(fl_machine *m, const fl_std_extra *x, int which, int64_t sbase, fl_buf *b, int t,
                         int64_t r, int64_t c, int64_t nr, int64_t nc, int64_t local0)
{
    if (!x || which < 0) return fl_load(m, b, t, r, c, nr, nc);
    return fl_vrun_load(m, x->vr, which, b, t, r, c, nr, nc, sbase, local0);
}

fl_status fl_std_product_nt(fl_machine *m, const fl_blocks *b, fl_buf *B[3], int64_t d, int A_t,
                            int64_t a0, int64_t na, int B_t, int64_t b0, int64_t nb, int C_t,
                            int64_t c0, double alpha, const fl_mask *mk, int skip, const fl_std_extra *x)
{
    const int64_t Br = b->Br, Bc = b->Bc, Bd = fl_min64(b->Bd, d);
    const int64_t Td = fl_cdiv(d, Bd);
    const int aw = x ? x->a_which : -1, bw = x ? x->b_which : -1;
    fl_buf *At = B[0], *Bt = B[1], *Ct = B[2];
    for (int64_t r0 = 0; r0 < na; r0 += Br) {
        const int64_t br = fl_min64(Br, na - r0);
        int64_t j0 = 0, j1 = fl_cdiv(nb, Bc);
        if (skip && mk) fl_mask_block_range(mk, r0, br, Bc, &j0, &j1); /* the tiles the mask keeps (K2) */
        if (j0 >= j1) continue;
        if (Td == 1) FL_TRY(load_op(m, x, aw, x ? x->a_sbase : 0, At, A_t, a0 + r0, 0, br, d, r0)); /* A_i stays for every j */
        for (int64_t q = j0 * Bc; q < fl_min64(nb, j1 * Bc); q += Bc) {
            const int64_t bc = fl_min64(Bc, nb - q);
            for (int64_t k0 = 0; k0 < d; k0 += Bd) {
                const int64_t bk = fl_min64(Bd, d - k0);
                if (Td > 1) FL_TRY(load_op(m, x, aw, x ? x->a_sbase : 0, At, A_t, a0 + r0, k0, br, bk, r0));
                FL_TRY(load_op(m, x, bw, x ? x->b_sbase : 0, Bt, B_t, b0 + q, k0, bc, bk, q));
                fl_op_matmul(Ct, At, Bt, br, bc, bk, 1, alpha, k0 > 0);
            }
            if (x && x->sg) /* the cap, the ALiBi bias, the mask (rules SC, AL, K4) */
                fl_var_scores(x->vr, x->sg, Ct, r0, br, br, q, bc, fl_mask_tile(&x->sg->mask, r0, br, q, bc));
            else if (mk && !skip && fl_mask_tile(mk, r0, br, q, bc) != FL_TILE_FULL)
                fl_tile_mask(Ct, mk, r0, br, br, q, bc);
            FL_TRY(fl_store(m, Ct, C_t, c0 + r0, q, br, bc));
        }
    }
    return FL_OK;
}

/* On chip, compute mode only: zeroes the entries of the nr x nc tile of queries [r0, r0 + nr)
 * and keys [c0, c0 + nc) in t that mk drops. */
static void zero_dropped(fl_buf *t, const fl_mask *mk, int64_t r0, int64_t nr, int64_t c0, int64_t nc)
{
    if (!t->x || fl_mask_tile(mk, r0, nr, c0, nc) == FL_TILE_FULL) return;
    for (int64_t r = 0; r < nr; r++)
        for (int64_t c = 0; c < nc; c++)
            if (!fl_mask_keep(mk, r0 + r, c0 + c)) t->x[r * t->cols + c] = 0.0;
}

fl_status fl_std_product_nn(fl_machine *m, const fl_blocks *b, fl_buf *B[3], int64_t d, int P_t,
                            int64_t p0, int64_t np, int64_t nk, int V_t, int64_t v0, int O_t,
                            int64_t o0, double alpha, int transP, int acc, const fl_mask *skip, const fl_std_extra *x)
{
    const int64_t Br = b->Br, Bc = b->Bc, Bd = fl_min64(b->Bd, d);
    const int vw = x ? x->b_which : -1;
    /* untransposed: output rows index P's rows (np of them), the sum runs over P's nk columns;
     * transposed: output rows index P's columns (nk), the sum runs over P's np rows */
    const int64_t nout = transP ? nk : np, nsum = transP ? np : nk;
    const int64_t Bo = transP ? Bc : Br, Bs = transP ? Br : Bc;
    /* P tiles in Z (Br x Bc); V tiles of Bs rows and O tiles of Bo rows in X (Br x Bd) and
     * Y (Bc x Bd) */
    fl_buf *Pt = B[2], *Vt = transP ? B[0] : B[1], *Ot = transP ? B[1] : B[0];
    for (int64_t r0 = 0; r0 < nout; r0 += Bo) {
        const int64_t br = fl_min64(Bo, nout - r0);
        int64_t s0 = 0, s1 = fl_cdiv(nsum, Bs); /* the sum's blocks; with skip, those the mask keeps */
        if (skip && transP) fl_mask_row_block_range(skip, r0, br, Bs, &s0, &s1);
        else if (skip) fl_mask_block_range(skip, r0, br, Bs, &s0, &s1);
        if (s0 >= s1 && acc) continue; /* nothing to add: the tile stays as it is in HBM */
        for (int64_t k0 = 0; k0 < d; k0 += Bd) {
            const int64_t bk = fl_min64(Bd, d - k0);
            if (acc) FL_TRY(fl_load(m, Ot, O_t, o0 + r0, k0, br, bk)); /* add to what is there */
            else fl_op_fill(Ot, br, bk, 0.0);
            for (int64_t q = s0 * Bs; q < fl_min64(nsum, s1 * Bs); q += Bs) {
                const int64_t bs = fl_min64(Bs, nsum - q);
                if (transP) {
                    FL_TRY(fl_load(m, Pt, P_t, p0 + q, r0, bs, br));
                    FL_TRY(fl_load(m, Vt, V_t, v0 + q, k0, bs, bk));
                    if (skip) zero_dropped(Pt, skip, q, bs, r0, br);
                    if (Ot->x) /* O += alpha P_tile^T V_tile */
                        for (int64_t i = 0; i < bs; i++)
                            for (int64_t r = 0; r < br; r++) {
                                const double w = alpha * Pt->x[i * Pt->cols + r];
                                for (int64_t c = 0; c < bk; c++) Ot->x[r * Ot->cols + c] += w * Vt->x[i * Vt->cols + c];
                            }
                } else {
                    FL_TRY(fl_load(m, Pt, P_t, p0 + r0, q, br, bs));
                    FL_TRY(load_op(m, x, vw, x ? x->b_sbase : 0, Vt, V_t, v0 + q, k0, bs, bk, q));
                    if (skip) zero_dropped(Pt, skip, r0, br, q, bs);
                    fl_op_matmul(Ot, Pt, Vt, br, bk, bs, 0, alpha, 1);
                }
            }
            FL_TRY(fl_store(m, Ot, O_t, o0 + r0, k0, br, bk));
        }
    }
    return FL_OK;
}

/* Compute mode: row r of P (n entries from key c0) becomes P~ = P o Z / (1 - p) (into y), or Z
 * itself (0 or 1) when mask (rule DR; Z from Philox: the query is i of head sg->head). */
static void drop_row(const fl_vrun *vr, const fl_seg *sg, int64_t i, const double *P, double *y, int64_t c0,
                     int64_t n, int mask)
{
    const fl_var *v = vr->v;
    for (int64_t c = 0; c < n; c++) {
        const int keep = fl_dropout_keep(v->seed, sg->seq, sg->head, i, c0 + c, v->dropout);
        y[c] = mask ? (double)keep : keep ? P[c] / (1.0 - v->dropout) : 0.0;
    }
}

/* step 2: P = softmax(S), row by row, for the segment's Nq x Nk score block; *tp is the row
 * buffer, kept between segments of the same shape (the caller frees it).  With a sink the row's
 * maximum and sum start from it (rule SK); with dropout each tile of P is followed by P~ (Pd_t)
 * and the mask Z (Z_t, one byte an entry), made in place (rule DR). */
static fl_status softmax(fl_machine *m, const fl_problem *p, fl_vrun *vr, const fl_seg *sg, int S_t, int P_t,
                         int Pd_t, int Z_t, fl_buf **tp)
{
    const int64_t M = p->M, s0 = sg->q0, nq = sg->Nq, nk = sg->Nk;
    const int drop = vr->v->dropout > 0.0;
    const double sink = vr->v->sinks && vr->sink ? vr->sink[0] : -INFINITY;
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
                    double *s = t->x + r * nk, mx = sink, sum = 0.0;
                    for (int64_t c = 0; c < nk; c++) mx = fmax(mx, s[c]);
                    if (mx == -INFINITY) { /* no legal key: P = 0 (rule M0) */
                        for (int64_t c = 0; c < nk; c++) s[c] = 0.0;
                        continue;
                    }
                    if (vr->v->sinks) sum = exp(sink - mx);
                    for (int64_t c = 0; c < nk; c++) sum += (s[c] = exp(s[c] - mx));
                    for (int64_t c = 0; c < nk; c++) s[c] /= sum;
                }
            FL_TRY(fl_store(m, t, P_t, s0 + r0, 0, nr, nk));
            for (int k = 0; drop && k < 2; k++) { /* P~, then Z, in place */
                if (fl_computes(m))
                    for (int64_t r = 0; r < nr; r++) drop_row(vr, sg, r0 + r, t->x + r * nk, t->x + r * nk, 0, nk, k);
                FL_TRY(fl_store(m, t, k ? Z_t : Pd_t, s0 + r0, 0, nr, nk));
            }
        }
    } else { /* a row does not fit: safe softmax in three passes over chunks of M */
        FL_TRY(fl_sram_realloc(m, "S_chunk", 1, M, tp));
        t = *tp;
        for (int64_t r = 0; r < nq; r++) {
            double mx = sink, sum = 0.0; /* per-row scalars (rule R3) */
            for (int64_t c0 = 0; c0 < nk; c0 += M) { /* pass 1: max */
                const int64_t nc = fl_min64(M, nk - c0);
                FL_TRY(fl_load(m, t, S_t, s0 + r, c0, 1, nc));
                if (t->x)
                    for (int64_t c = 0; c < nc; c++) mx = fmax(mx, t->x[c]);
            }
            if (vr->v->sinks && mx != -INFINITY) sum = exp(sink - mx);
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
                for (int k = 0; drop && k < 2; k++) {
                    if (t->x) drop_row(vr, sg, r, t->x, t->x, c0, nc, k);
                    FL_TRY(fl_store(m, t, k ? Z_t : Pd_t, s0 + r, c0, 1, nc));
                }
            }
        }
    }
    return FL_OK;
}

static fl_status fl_schedule_standard(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io)
{
    const int64_t nk = fl_seg_max_nk(&io);
    fl_var v;
    fl_var_of(p, &v);
    const int ob = fl_problem_out_bytes(p);
    int S_t, P_t, Pd_t = -1, Z_t = -1;
    FL_TRY(fl_tensor_add(m, "S", io.q_rows, nk, ob, &S_t));
    FL_TRY(fl_tensor_add(m, "P", io.q_rows, nk, ob, &P_t));
    if (v.dropout > 0.0) { /* the materializing pipeline stores P~ and the mask (rule DR) */
        FL_TRY(fl_tensor_add(m, "Pd", io.q_rows, nk, ob, &Pd_t));
        FL_TRY(fl_tensor_add(m, "Z", io.q_rows, nk, 1, &Z_t));
    }
    fl_vrun vr;
    FL_TRY(fl_vrun_init(&vr, &v, m, &io, 1, 1));
    /* step by step over all segments (one batched kernel per step, like a framework's
     * attention): each step's buffers are allocated once */
    fl_buf *B[3], *rows = NULL;
    fl_seg sg;
    fl_status s = fl_std_bufs_alloc(m, b, B); /* step 1: S = QK^T / sqrt(d), capped, biased, masked */
    for (int64_t k = 0; k < io.nseg && !s; k++) {
        fl_segment_at(io.segs, k, &sg);
        const fl_std_extra x = {&vr, &sg, FL_VQ, FL_VK, sg.qs0, sg.ks0};
        if (!(s = fl_vrun_segment(m, &vr, &sg, 0)))
            s = fl_std_product_nt(m, b, B, v.dq, io.Q, sg.q0, sg.Nq, io.K, sg.k0, sg.Nk, S_t, sg.q0, v.scale, NULL, 0, &x);
    }
    fl_std_bufs_free(m, B);
    for (int64_t k = 0; k < io.nseg && !s; k++) { /* step 2: P = softmax(S) (its sink, its seed) */
        fl_segment_at(io.segs, k, &sg);
        if (!(s = fl_vrun_segment(m, &vr, &sg, FL_V_SINK | FL_V_RNG)))
            s = softmax(m, p, &vr, &sg, S_t, P_t, Pd_t, Z_t, &rows);
    }
    fl_sram_free(m, rows);
    if (!s) s = fl_std_bufs_alloc(m, b, B); /* step 3: O = P V (P~ V with dropout) */
    for (int64_t k = 0; k < io.nseg && !s; k++) {
        fl_segment_at(io.segs, k, &sg);
        const fl_std_extra x = {&vr, NULL, -1, FL_VV, 0, sg.ks0};
        if (!(s = fl_vrun_segment(m, &vr, &sg, 0)))
            s = fl_std_product_nn(m, b, B, v.dv, Pd_t >= 0 ? Pd_t : P_t, sg.q0, sg.Nq, sg.Nk, io.V, sg.k0, io.O,
                                  sg.q0, 1.0, 0, 0, NULL, &x);
    }
    fl_vrun_free(&vr);
    if (s) return s;
    fl_std_bufs_free(m, B);
    return FL_OK;
}

/* ---- the descriptor: footprint, block rule, closed form, explanation ---- */

/* (F0) Br*Bd + Bc*Bd + Br*Bc: the products' tiles, both passes (docs/model.md §3) */
static int64_t footprint(const fl_problem *p, int bwd, int64_t G, int64_t Br, int64_t Bc, int64_t Bd)
{
    (void)bwd, (void)p;
    return fl_fp_checked((fl_fp_coef)FL_FP_STANDARD, G, Br, Bc, Bd);
}

/* The wider head dimension: the chunk Bd serves both products, Q K^T over d and P V over d_v
 * (rule D1); a product over a narrower dimension takes chunks of min(Bd, its d). */
static int64_t dmax(const fl_problem *p) { return fl_max64(p->d, fl_problem_dv(p)); }

/* With Br, Bc fixed, the largest chunk Bd <= max(d, d_v) that fits (rule B0), 0 if none. */
static int64_t standard_bd(const fl_problem *p, int64_t Br, int64_t Bc)
{
    int64_t area;
    if (!fl_mul_ok(Br, Bc, &area) || area > p->M || p->M - area < Br + Bc) return 0;
    return fl_min64(dmax(p), (p->M - area) / (Br + Bc));
}

static int ok_panel(int64_t B, const fl_rule *r) { return fl_rule_fits(r, B, B, dmax(r->p)); }

/* (B0) panels (Bd = max(d, d_v)) when they give tiles at least as large as cubes of side
 * t = floor(sqrt(M/3)); else cubes (Br = Bc = Bd = t).  Both passes. */
static fl_status blocks(const fl_problem *p, int bwd, fl_blocks *b)
{
    fl_rule r;
    fl_rule_init(&r, p, bwd);
    const int64_t n = fl_max64(r.nq, r.nk), D = dmax(p);
    int64_t t = (int64_t)floor(sqrt((double)p->M / 3.0));
    const int64_t third = p->M / 3; /* 3t^2 <= M  <=>  t <= floor(M/3) / t: no overflow */
    while (t + 1 <= third / (t + 1)) t++;
    while (t > 0 && t > third / t) t--;
    b->Bd = D;
    int64_t panel = fl_rule_largest(fl_max64(n, t), ok_panel, &r);
    if (panel >= t && panel > 0) {
        b->Br = b->Bc = fl_min64(panel, n);
        b->Bd = D;
    } else {
        b->Br = b->Bc = fl_min64(t, n);
        b->Bd = fl_min64(t, D);
    }
    return fl_rule_finish(&r, b, "F0", 1, standard_bd);
}

void fl_closed_std_nt(ck *c, const fl_blocks *b, int64_t d, int64_t na, int64_t nb, const fl_mask *skip,
                      fl_counts *r)
{
    const int64_t Tr = fl_cdiv(na, b->Br), Tc = fl_cdiv(nb, b->Bc), Td = fl_cdiv(d, b->Bd);
    if (!skip) {
        fl_acc(c, &r->reads, Td == 1 ? mul(c, na, d) : mul(c, mul(c, na, d), Tc)); /* A (C0.1) */
        fl_acc(c, &r->reads, mul(c, mul(c, nb, d), Tr));                           /* B */
        fl_acc(c, &r->writes, mul(c, na, nb));
        fl_acc(c, &r->events, Td == 1 ? mul(c, Tr, add(c, 1, mul(c, 2, Tc)))
                                      : mul(c, mul(c, Tr, Tc), add(c, mul(c, 2, Td), 1)));
        return;
    }
    for (int64_t r0 = 0; r0 < na; r0 += b->Br) { /* (C0bm.2): row block i keeps n tiles over cols keys */
        const int64_t br = fl_min64(b->Br, na - r0);
        int64_t j0, j1;
        fl_mask_block_range(skip, r0, br, b->Bc, &j0, &j1);
        if (j0 >= j1) continue;
        const int64_t n = j1 - j0, cols = fl_min64(nb, j1 * b->Bc) - j0 * b->Bc;
        fl_acc(c, &r->reads, add(c, mul(c, Td == 1 ? 1 : n, mul(c, br, d)), mul(c, cols, d)));
        fl_acc(c, &r->writes, mul(c, br, cols));
        fl_acc(c, &r->events, Td == 1 ? add(c, 1, mul(c, 2, n)) : mul(c, n, add(c, mul(c, 2, Td), 1)));
    }
}

void fl_closed_std_nn(ck *c, const fl_blocks *b, int64_t d, int64_t np, int64_t nk, int transP, int rmw,
                      const fl_mask *skip, fl_counts *r)
{
    const int64_t Td = fl_cdiv(d, b->Bd);
    const int64_t nout = transP ? nk : np, nsum = transP ? np : nk;
    const int64_t Bo = transP ? b->Bc : b->Br, Bs = transP ? b->Br : b->Bc;
    const int64_t To = fl_cdiv(nout, Bo), Ts = fl_cdiv(nsum, Bs);
    if (!skip) {
        fl_acc(c, &r->reads, mul(c, mul(c, np, nk), Td));  /* P (C0.4) */
        fl_acc(c, &r->reads, mul(c, mul(c, nsum, d), To)); /* V */
        if (rmw) fl_acc(c, &r->reads, mul(c, nout, d));
        fl_acc(c, &r->writes, mul(c, nout, d));
        fl_acc(c, &r->events, mul(c, mul(c, To, Td), add(c, mul(c, 2, Ts), 1 + rmw)));
        return;
    }
    for (int64_t r0 = 0; r0 < nout; r0 += Bo) { /* (C0bm.1): output block o keeps m tiles over span */
        const int64_t bo = fl_min64(Bo, nout - r0);
        int64_t s0, s1;
        if (transP) fl_mask_row_block_range(skip, r0, bo, Bs, &s0, &s1);
        else fl_mask_block_range(skip, r0, bo, Bs, &s0, &s1);
        const int64_t m = s1 > s0 ? s1 - s0 : 0, span = m ? fl_min64(nsum, s1 * Bs) - s0 * Bs : 0;
        if (!m && rmw) continue;
        fl_acc(c, &r->reads, add(c, mul(c, Td, mul(c, span, bo)), mul(c, span, d))); /* P tiles per chunk; V */
        if (rmw) fl_acc(c, &r->reads, mul(c, bo, d));
        fl_acc(c, &r->writes, mul(c, bo, d));
        fl_acc(c, &r->events, mul(c, Td, add(c, mul(c, 2, m), 1 + rmw)));
    }
}

/* fp8 (rule Q8): the scale factors the forward's products load, in their order -- step 1's Q
 * tiles (once per row block, or per key block and chunk) and K tiles, step 3's V tiles -- with
 * the registers of rule R3b emptied at each product of a segment. */
static int64_t std_scales(const fl_var *v, const fl_seg *s, const fl_blocks *b)
{
    int64_t n = 0, lq = -1, lk = -1, lv = -1;
    const int64_t Tdq = fl_cdiv(v->dq, fl_min64(b->Bd, v->dq)), Tdv = fl_cdiv(v->dv, fl_min64(b->Bd, v->dv));
    for (int64_t r0 = 0; r0 < s->Nq; r0 += b->Br) { /* step 1 */
        const int64_t br = fl_min64(b->Br, s->Nq - r0);
        if (Tdq == 1) n += fl_var_scales_entered(v, s->qs0, r0, r0 + br, &lq);
        for (int64_t q = 0; q < s->Nk; q += b->Bc)
            for (int64_t k = 0; k < Tdq; k++) {
                if (Tdq > 1) n += fl_var_scales_entered(v, s->qs0, r0, r0 + br, &lq);
                n += fl_var_scales_entered(v, s->ks0, q, fl_min64(s->Nk, q + b->Bc), &lk);
            }
    }
    for (int64_t r0 = 0; r0 < s->Nq; r0 += b->Br) /* step 3 */
        for (int64_t k = 0; k < Tdv; k++)
            for (int64_t q = 0; q < s->Nk; q += b->Bc) n += fl_var_scales_entered(v, s->ks0, q, fl_min64(s->Nk, q + b->Bc), &lv);
    return n;
}

/* (C0) one segment's forward: the three steps above on its Nq x Nk problem (mask-oblivious),
 * Q K^T over d and P V over d_v (rule D1); step 2 with its sink and seed, and under dropout
 * the stores of P~ and Z (rule DR); fp8's scale factors */
static void segment_fwd(ck *c, const fl_problem *p, const fl_seg *s, const fl_blocks *b, fl_counts *r)
{
    fl_var v;
    fl_var_of(p, &v);
    const int64_t nq = s->Nq, nk = s->Nk, M = p->M, drop = v.dropout > 0.0;
    const int64_t once = fl_var_segment_reads(&v, 1, FL_V_SINK | FL_V_RNG);
    fl_closed_std_nt(c, b, v.dq, nq, nk, NULL, r); /* step 1 */
    fl_acc(c, &r->reads, once);
    fl_acc(c, &r->events, once);
    if (nk <= M) {                           /* step 2 (C0.2-3) */
        const int64_t R = fl_min64(M / nk, nq);
        fl_acc(c, &r->reads, mul(c, nq, nk));
        fl_acc(c, &r->events, mul(c, 2 + 2 * drop, fl_cdiv(nq, R)));
        r->sram_peak = fl_max64(r->sram_peak, mul(c, R, nk));
    } else {
        fl_acc(c, &r->reads, mul(c, 3, mul(c, nq, nk)));
        fl_acc(c, &r->events, mul(c, mul(c, 4 + 2 * drop, nq), fl_cdiv(nk, M)));
        r->sram_peak = fl_max64(r->sram_peak, M);
    }
    fl_acc(c, &r->writes, mul(c, 1 + 2 * drop, mul(c, nq, nk)));
    fl_closed_std_nn(c, b, v.dv, nq, nk, 0, 0, NULL, r); /* step 3 */
    if (v.fp8) {
        const int64_t n = std_scales(&v, s, b);
        fl_acc(c, &r->reads, n);
        fl_acc(c, &r->events, n);
    }
}

static void segment_counts(ck *c, const fl_problem *p, int bwd, const fl_seg *s, const fl_blocks *b, fl_counts *r)
{
    if (bwd) fl_closed_standard_bwd(c, 0, p, s, b, r);
    else segment_fwd(c, p, s, b, r);
}

static void segment_counts_skip(ck *c, const fl_problem *p, int bwd, const fl_seg *s, const fl_blocks *b,
                                fl_counts *r)
{
    if (bwd) fl_closed_standard_bwd(c, 1, p, s, b, r);
    else segment_fwd(c, p, s, b, r);
}

/* (C0) the plain problem (one dense head, Nq = Nk = N, forward) in O(1), Q K^T over d and P V
 * over d_v */
static void closed_plain(ck *c, const fl_problem *p, const fl_blocks *b, fl_counts *r)
{
    const int64_t N = p->N, d = p->d, dv = fl_problem_dv(p), M = p->M;
    const int64_t Tr = fl_cdiv(N, b->Br), Tc = fl_cdiv(N, b->Bc);
    const int64_t Nd = mul(c, N, d), Ndv = mul(c, N, dv), NN = mul(c, N, N);
    const int64_t Td = fl_cdiv(d, fl_min64(b->Bd, d)), Tdv = fl_cdiv(dv, fl_min64(b->Bd, dv));
    const int row_fits = N <= M;                         /* (C0.3) */
    const int64_t R = row_fits ? fl_min64(M / N, N) : 0; /* rows per softmax tile */
    const int64_t soft_buf = row_fits ? mul(c, R, N) : M;
    /* (C0.1) S = QK^T: Q read once per row block when Td = 1, else once per (i, j) */
    int64_t q = Td == 1 ? Nd : mul(c, Nd, Tc);
    int64_t k = mul(c, Nd, Tr);
    /* (C0.2) softmax: 1 read per element when a row fits in SRAM, else 3 (max, sum, out) */
    int64_t s = row_fits ? NN : mul(c, 3, NN);
    /* (C0.4) O = PV: P read once per d_v-chunk, V once per row block */
    int64_t pr = mul(c, NN, Tdv), v = mul(c, Ndv, Tr);
    r->reads = add(c, add(c, add(c, q, k), s), add(c, pr, v));
    r->writes = add(c, mul(c, 2, NN), Ndv); /* S, P and O written once */
    /* (E0) events */
    int64_t e1 = Td == 1 ? mul(c, Tr, add(c, 1, mul(c, 2, Tc)))
                         : mul(c, mul(c, Tr, Tc), add(c, mul(c, 2, Td), 1));
    int64_t e2 = row_fits ? mul(c, 2, fl_cdiv(N, R)) : mul(c, mul(c, 4, N), fl_cdiv(N, M));
    int64_t e3 = mul(c, mul(c, Tr, Tdv), add(c, mul(c, 2, Tc), 1));
    r->events = add(c, add(c, e1, e2), e3);
    r->sram_peak = fl_max64(b->footprint, soft_buf);
}

static fl_status closed_form(const fl_problem *p, int bwd, const fl_blocks *b, fl_counts *out)
{
    return fl_closed_tiled(p, bwd, b, closed_plain, segment_counts, out);
}

/* standard-skip: (C0) forward, (C0bm) backward */
static fl_status closed_form_skip(const fl_problem *p, int bwd, const fl_blocks *b, fl_counts *out)
{
    return fl_closed_tiled(p, bwd, b, closed_plain, segment_counts_skip, out);
}

static void explain(FILE *out, const fl_problem *p, const fl_blocks *b)
{
    (void)b;
    fprintf(out, "  rule B0: matmul tiles Br x Bc with a chunk Bd of d; panels (Bd = d) when\n"
                 "    they allow tiles at least as large as cubes of side floor(sqrt(M/3)),\n"
                 "    else cubes; Br*Bd + Bc*Bd + Br*Bc <= M (docs/model.md eq. F0);\n"
                 "    softmax %s\n",
            p->N <= p->M ? "holds whole rows (N <= M): 1 read + 1 write per element"
                         : "cannot hold a row (N > M): 3 passes, 3 reads + 1 write per element");
}

/* Block terms a closed form walks per sequence: one, but standard-skip's masked backward walks its
 * row and key blocks (C0bm) (optimize's work measure, schedule.h). */
static int64_t closed_form_terms(int bwd, int dense, int64_t nq, int64_t nk, int64_t Br, int64_t Bc)
{
    return bwd && !dense ? fl_cdiv(nq, Br) + fl_cdiv(nk, Bc) : 1;
}

/* Lemma O4's floor of standard-skip's backward (the forward is searched by lemma O3). */
static double count_floor(int bwd, const fl_problem *p, const fl_mask *mk, int64_t Br, int64_t cmax)
{
    return bwd ? fl_standard_bwd_count_floor(p, mk, Br, cmax) : 0.0;
}

const fl_schedule fl_sched_standard = {
    .name = "standard",
    .summary = "FlashAttention paper, Algorithm 0: S = QK^T and P = softmax(S) materialized in HBM",
    .flags = FL_SCHED_IN_ALL | FL_SCHED_MATERIALIZES | FL_SCHED_CHUNKS_D,
    .accepts = FL_ACCEPT_NK | FL_ACCEPT_MASK | FL_ACCEPT_HEADS | FL_ACCEPT_VARLEN | FL_ACCEPT_BWD | FL_ACCEPT_VARIANTS,
    .blocks = blocks,
    .footprint = footprint,
    .closed_form = closed_form,
    .events_floor = fl_events_floor_tiled,
    .fwd = fl_schedule_standard,
    .bwd = fl_schedule_standard_bwd,
    .explain = explain,
    .explain_bwd = "rule B0 on the same tiling; dS rows need k*Nk <= M to fit (else two passes; k = 2, + Z with dropout, + S with a cap)",
    .search = {FL_SEARCH_FRONTIER, FL_SEARCH_FRONTIER},
    .paper_fig2 = "40.3 GB",
};

/* standard-skip: standard whose backward skips what a mask drops (C0bm); the same forward, blocks
 * and footprint.  Not one of "all": standard stands for the framework pipeline (and the GPU
 * kernels validated against it), mask-oblivious in both passes. */
const fl_schedule fl_sched_standard_skip = {
    .name = "standard-skip",
    .summary = "standard whose backward (Algorithm 3) skips the tiles and keys a causal mask or window drops",
    .flags = FL_SCHED_MATERIALIZES | FL_SCHED_CHUNKS_D,
    .accepts = FL_ACCEPT_NK | FL_ACCEPT_MASK | FL_ACCEPT_HEADS | FL_ACCEPT_VARLEN | FL_ACCEPT_BWD,
    .blocks = blocks,
    .footprint = footprint,
    .closed_form = closed_form_skip,
    .events_floor = fl_events_floor_tiled,
    .fwd = fl_schedule_standard,
    .bwd = fl_schedule_standard_skip_bwd,
    .explain = explain,
    .explain_bwd = "rule B0 on the same tiling; only the tiles and keys the mask keeps (docs/model.md C0bm)",
    .search = {FL_SEARCH_FRONTIER, FL_SEARCH_BOUND},
    .closed_form_terms = closed_form_terms,
    .count_floor = count_floor,
};
