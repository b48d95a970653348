/* flash1.c: FlashAttention (Dao et al., 2022), Algorithm 1, literally.
 *
 *  1  block sizes Bc, Br                       (chosen by fl_blocks_choose: docs/model.md B1)
 *  2  initialize O = 0, l = 0, m = -inf in HBM  -> stores: Nd + 2N writes
 *  3-4 divide Q, O, l, m into Tr blocks of Br rows; K, V into Tc blocks of Bc rows
 *  5  for j in 1..Tc:
 *  6    load K_j, V_j                           -> 2 Bc d reads
 *  7    for i in 1..Tr:
 *  8      load Q_i, O_i, l_i, m_i               -> 2 Br d + 2 Br reads
 *  9      S_ij = Q_i K_j^T (scaled by 1/sqrt d)
 * 10      mt_ij = rowmax(S_ij), P_ij = exp(S_ij - mt_ij), lt_ij = rowsum(P_ij)
 * 11      mnew_i = max(m_i, mt_ij), lnew_i = e^(m_i - mnew_i) l_i + e^(mt_ij - mnew_i) lt_ij
 * 12      O_i = diag(lnew_i)^-1 (diag(l_i) e^(m_i - mnew_i) O_i + e^(mt_ij - mnew_i) P_ij V_j);
 *         write O_i                             -> Br d writes
 * 13      write l_i = lnew_i, m_i = mnew_i      -> 2 Br writes
 *
 * SRAM: K_j, V_j, Q_i, O_i, S_ij (P_ij overwrites it), and six row vectors l_i, m_i, mt_ij,
 * lt_ij, mnew_i, lnew_i: docs/model.md eq. (F1).  Counts: eq. (C1).
 *
 * Masks (docs/model.md K2-K4): line 7 runs only over the row blocks i0..i1-1 that key block j
 * touches, and K_j, V_j are not loaded when there is none; boundary tiles are masked per
 * element; a row whose scores in a tile are all masked skips lines 10-13 for that tile (its
 * state and O_i are written back unchanged), so a row with no legal key keeps O = 0 (M0).
 */
#include <math.h>
#include <stdio.h>

#include <flashlab/ops.h>

#include "rules.h"
#include "schedules.h"
#include "variants.h"

static fl_status segment(fl_machine *m, const fl_blocks *b, const fl_qkvo *io, const fl_seg *sg, int l_t,
                         int m_t, fl_buf **B, fl_vrun *vr)
{
    const fl_var *v = vr->v;
    const int64_t dq = v->dq, dv = v->dv, Br = b->Br, Bc = b->Bc, Nq = sg->Nq, Nk = sg->Nk, q0 = sg->q0;
    fl_buf *Kj = B[0], *Vj = B[1], *Qi = B[2], *Oi = B[3], *li = B[4], *mi = B[5], *Sij = B[6],
           *mt = B[7], *lt = B[8], *mnew = B[9], *lnew = B[10];
    FL_TRY(fl_vrun_segment(m, vr, sg, FL_V_SINK | FL_V_RNG)); /* sink, dropout seed (rule R3b) */

    /* line 2: O = 0, l = 0, m = -inf in HBM (with a sink: l = 1, m = sink, rule SK), written
     * block by block from SRAM */
    fl_op_fill(Oi, Br, dv, 0.0);
    fl_op_fill(li, Br, 1, 0.0);
    fl_op_fill(mi, Br, 1, -INFINITY);
    fl_var_osm_init(vr, mi, li, Br, Br);
    for (int64_t r0 = 0; r0 < Nq; r0 += Br) {
        const int64_t br = fl_min64(Br, Nq - r0);
        FL_TRY(fl_store(m, Oi, io->O, q0 + r0, 0, br, dv));
        FL_TRY(fl_store(m, li, l_t, q0 + r0, 0, br, 1));
        FL_TRY(fl_store(m, mi, m_t, q0 + r0, 0, br, 1));
    }

    int64_t j0, j1; /* the key blocks some query keeps (all, without a mask): the others cost nothing */
    fl_mask_block_range(&sg->mask, 0, Nq, Bc, &j0, &j1);
    for (int64_t c0 = j0 * Bc; c0 < fl_min64(Nk, j1 * Bc); c0 += Bc) { /* line 5 */
        const int64_t bc = fl_min64(Bc, Nk - c0);
        int64_t i0, i1;
        fl_mask_row_block_range(&sg->mask, c0, bc, Br, &i0, &i1);
        if (i0 >= i1) continue; /* no query sees this key block: nothing loaded (K2) */
        FL_TRY(fl_vrun_load(m, vr, FL_VK, Kj, io->K, sg->k0 + c0, 0, bc, dq, sg->ks0, c0)); /* line 6 */
        FL_TRY(fl_vrun_load(m, vr, FL_VV, Vj, io->V, sg->k0 + c0, 0, bc, dv, sg->ks0, c0));
        for (int64_t i = i0; i < i1; i++) { /* line 7 */
            const int64_t r0 = i * Br, br = fl_min64(Br, Nq - r0);
            FL_TRY(fl_vrun_load(m, vr, FL_VQ, Qi, io->Q, q0 + r0, 0, br, dq, sg->qs0, r0)); /* line 8 */
            FL_TRY(fl_load(m, Oi, io->O, q0 + r0, 0, br, dv));
            FL_TRY(fl_load(m, li, l_t, q0 + r0, 0, br, 1));
            FL_TRY(fl_load(m, mi, m_t, q0 + r0, 0, br, 1));
            fl_op_matmul(Sij, Qi, Kj, br, bc, dq, 1, v->scale, 0); /* line 9 */
            fl_var_scores(vr, sg, Sij, r0, br, br, c0, bc, fl_mask_tile(&sg->mask, r0, br, c0, bc));
            if (fl_computes(m)) {
                for (int64_t r = 0; r < br; r++) {
                    double *s = Sij->x + r * Bc;
                    /* line 10 */
                    double rowmax = -INFINITY, rowsum = 0.0;
                    for (int64_t c = 0; c < bc; c++) rowmax = fmax(rowmax, s[c]);
                    if (rowmax == -INFINITY) continue; /* every key of this tile masked for the row */
                    for (int64_t c = 0; c < bc; c++) rowsum += (s[c] = exp(s[c] - rowmax));
                    mt->x[r] = rowmax;
                    lt->x[r] = rowsum;
                    /* line 11 */
                    mnew->x[r] = fmax(mi->x[r], mt->x[r]);
                    lnew->x[r] = (mi->x[r] == -INFINITY ? 0.0 : exp(mi->x[r] - mnew->x[r]) * li->x[r]) +
                                 exp(mt->x[r] - mnew->x[r]) * lt->x[r];
                    /* line 12, in place: each O element from its old value and one dot product
                     * (dropout: P~ V with P~ = P o Z / (1 - p), rule DR) */
                    const double a = mi->x[r] == -INFINITY ? 0.0
                                     : li->x[r] * exp(mi->x[r] - mnew->x[r]) / lnew->x[r];
                    const double e = exp(mt->x[r] - mnew->x[r]) / lnew->x[r];
                    const double *w = fl_var_drop_row(vr, sg, r0, br, r, c0, bc);
                    double *o = Oi->x + r * dv;
                    for (int64_t k = 0; k < dv; k++) {
                        double pv = 0.0;
                        for (int64_t c = 0; c < bc; c++) pv += (w ? s[c] * w[c] : s[c]) * Vj->x[c * dv + k];
                        o[k] = a * o[k] + e * pv;
                    }
                    /* line 13 */
                    li->x[r] = lnew->x[r];
                    mi->x[r] = mnew->x[r];
                }
            }
            FL_TRY(fl_store(m, Oi, io->O, q0 + r0, 0, br, dv)); /* line 12 */
            FL_TRY(fl_store(m, li, l_t, q0 + r0, 0, br, 1));  /* line 13 */
            FL_TRY(fl_store(m, mi, m_t, q0 + r0, 0, br, 1));
        }
    }
    return FL_OK;
}

static fl_status fl_schedule_flash1(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io)
{
    const int64_t Br = b->Br, Bc = b->Bc;
    fl_var v;
    fl_var_of(p, &v);
    int l_t, m_t;
    FL_TRY(fl_tensor_add(m, "l", io.q_rows, 1, 4, &l_t));
    FL_TRY(fl_tensor_add(m, "m", io.q_rows, 1, 4, &m_t));

    fl_buf *B[11];
    const char *names[11] = {"K_j", "V_j", "Q_i", "O_i", "l_i", "m_i", "S_ij", "mt_ij", "lt_ij", "mnew_i", "lnew_i"};
    const int64_t rows[11] = {Bc, Bc, Br, Br, Br, Br, Br, Br, Br, Br, Br};
    const int64_t cols[11] = {v.dq, v.dv, v.dq, v.dv, 1, 1, Bc, 1, 1, 1, 1};
    for (int k = 0; k < 11; k++) FL_TRY(fl_sram_alloc(m, names[k], rows[k], cols[k], &B[k]));
    fl_vrun vr;
    FL_TRY(fl_vrun_init(&vr, &v, m, &io, 1, Bc));
    fl_status s = FL_OK;
    for (int64_t k = 0; k < io.nseg && !s; k++) {
        fl_seg sg;
        fl_segment_at(io.segs, k, &sg);
        s = segment(m, b, &io, &sg, l_t, m_t, B, &vr);
    }
    fl_vrun_free(&vr);
    if (s) return s;
    for (int k = 0; k < 11; k++) fl_sram_free(m, B[k]);
    return FL_OK;
}

/* ---- the descriptor: footprint, block rule, closed form, explanation ---- */

/* (F1) Bc*(d + d_v) + Br*(d + d_v) + Br*Bc + 6*Br; (F1b) 2*Bc*(d + d_v) + 2*Br*(d + d_v) +
 * 2*Br*Bc + 3*Br (rule D1: Q, K, dQ, dK tiles d wide; V, O, dO, dV tiles d_v wide) */
static int64_t footprint(const fl_problem *p, int bwd, int64_t G, int64_t Br, int64_t Bc, int64_t Bd)
{
    (void)Bd;
    return fl_fp_checked2(bwd ? (fl_fp_split)FL_FP2_FLASH1_BWD : (fl_fp_split)FL_FP2_FLASH1_FWD, G, Br, Bc, p->d,
                          fl_problem_dv(p));
}

/* the paper's shape: Br = min(Bc, d), at most the query length.  docs/model.md rule (B1). */
static int64_t flash1_br(int64_t Bc, int64_t d, int64_t N) { return fl_min64(fl_min64(Bc, d), N); }

static int ok_flash1(int64_t Bc, const fl_rule *r)
{
    return fl_rule_fits(r, flash1_br(Bc, r->p->d, r->nq), Bc, r->p->d);
}

/* (B1) the paper: Bc = ceil(M/4d), Br = min(ceil(M/4d), d); shrunk to the largest
 * Bc <= min(paper Bc, Nk) whose buffers fit, same shape.  (B1b) the same with (F1b). */
static fl_status blocks(const fl_problem *p, int bwd, fl_blocks *b)
{
    fl_rule r;
    fl_rule_init(&r, p, bwd);
    int64_t d4; /* 4d > M (so ceil(M/4d) = 1) when 4d does not fit in 64 bits */
    b->Bd = p->d;
    b->paper_Bc = fl_mul_ok(4, p->d, &d4) ? fl_cdiv(p->M, d4) : 1;
    b->paper_Br = fl_min64(b->paper_Bc, p->d);
    b->paper_footprint = footprint(p, bwd, 1, b->paper_Br, b->paper_Bc, p->d);
    b->Bc = fl_rule_largest(fl_min64(b->paper_Bc, r.nk), ok_flash1, &r);
    b->Br = flash1_br(b->Bc, p->d, r.nq);
    return fl_rule_finish(&r, b, bwd ? "F1b" : "F1", p->d, NULL);
}

/* (C1m) one segment's forward: key block j touches row blocks [i0, i1) of rows_j queries; with
 * the variants (§14): its sink and dropout seed, fp8's scale factors (rule R3b) */
static void segment_fwd(ck *c, const fl_var *v, const fl_seg *s, const fl_blocks *b, fl_counts *r)
{
    const int64_t dq = v->dq, dv = v->dv, once = fl_var_segment_reads(v, 1, FL_V_SINK | FL_V_RNG);
    int64_t lq = -1, lk = -1, lv = -1;
    fl_acc(c, &r->reads, once);
    fl_acc(c, &r->writes, mul(c, s->Nq, dv + 2));
    fl_acc(c, &r->events, add(c, once, mul(c, 3, fl_cdiv(s->Nq, b->Br))));
    int64_t j0, j1; /* only the key blocks some query keeps (a narrow window: few of many) */
    fl_mask_block_range(&s->mask, 0, s->Nq, b->Bc, &j0, &j1);
    for (int64_t c0 = j0 * b->Bc; c0 < fl_min64(s->Nk, j1 * b->Bc); c0 += b->Bc) {
        const int64_t bc = fl_min64(b->Bc, s->Nk - c0);
        int64_t i0, i1;
        fl_mask_row_block_range(&s->mask, c0, bc, b->Br, &i0, &i1);
        if (i1 <= i0) continue;
        const int64_t rows = fl_min64(s->Nq, i1 * b->Br) - i0 * b->Br;
        const int64_t sc = fl_var_scales_entered(v, s->ks0, c0, c0 + bc, &lk) +
                           fl_var_scales_entered(v, s->ks0, c0, c0 + bc, &lv) +
                           fl_var_scales_entered(v, s->qs0, i0 * b->Br, i0 * b->Br + rows, &lq);
        fl_acc(c, &r->reads, add(c, add(c, mul(c, bc, dq + dv), mul(c, rows, dq + dv + 2)), sc));
        fl_acc(c, &r->writes, mul(c, rows, dv + 2));
        fl_acc(c, &r->events, add(c, add(c, 2, mul(c, 7, i1 - i0)), sc));
    }
}

static void segment_counts(ck *c, const fl_problem *p, int bwd, const fl_seg *s, const fl_blocks *b, fl_counts *r)
{
    fl_var v;
    fl_var_of(p, &v);
    if (bwd) fl_closed_flash_bwd(c, 1, p, s, b, r);
    else segment_fwd(c, &v, s, b, r);
}

/* (C1) reads = N(d + d_v) + Tc(N(d + d_v) + 2N); writes = (N d_v + 2N) + Tc(N d_v + 2N);
 * (E1) events = 3Tr + Tc(2 + 7Tr) */
static void closed_plain(ck *c, const fl_problem *p, const fl_blocks *b, fl_counts *r)
{
    const int64_t N = p->N, dd = p->d + fl_problem_dv(p), Ndv = mul(c, N, fl_problem_dv(p));
    const int64_t Tr = fl_cdiv(N, b->Br), Tc = fl_cdiv(N, b->Bc);
    const int64_t Ndd = mul(c, N, dd);
    r->reads = add(c, Ndd, mul(c, Tc, add(c, Ndd, mul(c, 2, N))));
    r->writes = add(c, add(c, Ndv, mul(c, 2, N)), mul(c, Tc, add(c, Ndv, mul(c, 2, N))));
    r->events = add(c, mul(c, 3, Tr), mul(c, Tc, add(c, 2, mul(c, 7, Tr))));
    r->sram_peak = b->footprint;
}

static fl_status closed_form(const fl_problem *p, int bwd, const fl_blocks *b, fl_counts *out)
{
    return fl_closed_tiled(p, bwd, b, closed_plain, segment_counts, out);
}

static void explain(FILE *out, const fl_problem *p, const fl_blocks *b)
{
    fprintf(out,
            "  paper (Algorithm 1, line 1): Bc = ceil(M/4d) = %lld, Br = min(Bc, d) = %lld\n"
            "  its on-chip buffers K_j, V_j, Q_i, O_i, S_ij and six row vectors need\n"
            "    2*Bc*d + 2*Br*d + Br*Bc + 6*Br = %lld elements (docs/model.md eq. F1): %s\n",
            (long long)b->paper_Bc, (long long)b->paper_Br, (long long)b->paper_footprint,
            b->paper_footprint <= p->M ? "fits in M" : "MORE than M");
    fprintf(out, "  rule B1: keep Br = min(Bc, d), Bc <= N, shrink Bc to the largest that fits\n");
}

const fl_schedule fl_sched_flash1 = {
    .name = "flash1",
    .summary = "FlashAttention paper, Algorithm 1: outer loop over K/V blocks, running O, l, m in HBM",
    .flags = FL_SCHED_IN_ALL | FL_SCHED_O_FP32 | FL_SCHED_PAPER_LAW | FL_SCHED_COMPARED,
    .accepts = FL_ACCEPT_NK | FL_ACCEPT_MASK | FL_ACCEPT_HEADS | FL_ACCEPT_VARLEN | FL_ACCEPT_BWD | FL_ACCEPT_VARIANTS,
    .blocks = blocks,
    .footprint = footprint,
    .closed_form = closed_form,
    .events_floor = fl_events_floor_tiled,
    .fwd = fl_schedule_flash1,
    .bwd = fl_schedule_flash1_bwd,
    .explain = explain,
    .explain_bwd = "rule B1b: Br = min(Bc, d), Bc the largest <= ceil(M/4d) with 4*Bc*d + 4*Br*d + 2*Br*Bc + 3*Br <= M (F1b)",
    .search = {FL_SEARCH_ROWS_FREE, FL_SEARCH_ROWS_FREE},
    .closed_form_terms = fl_terms_key_blocks,
    .paper_fig2 = "4.4 GB (FlashAttention)",
};
