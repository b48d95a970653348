/* flash_bwd.c: backward passes with recomputation: nothing of size Nq x Nk is saved; the
 * score tiles are recomputed from Q, K and the forward's row statistics.  Two algorithms share
 * this loop (docs/model.md §backward):
 *
 * flash2 (and flash2-gqa): FlashAttention-2, Algorithm 2.
 *  3  initialize dQ = 0 in HBM                                 -> Nq d writes
 *  4  D = rowsum(dO o O), write D to HBM (a preprocessing pass) -> 2 Nq d reads, Nq writes
 *  5  for j in 1..Tc (only key blocks some query sees, rule K2):
 *  6    load K_j, V_j                                          -> 2 Bc d reads
 *  7    on chip dK_j = 0, dV_j = 0
 *  8    for i in i0..i1-1 (the row blocks that see key block j):
 *  9      load Q_i, dO_i, dQ_i, L_i, D_i                       -> 3 Br d + 2 Br reads
 *         (the paper's line lists O_i too; it is not used after line 4, and FlashAttention-2's
 *          kernel does not load it, so it is not loaded or counted here)
 * 10      S_ij = Q_i K_j^T / sqrt(d)  (boundary tiles masked, K4)
 * 11      P_ij = exp(S_ij - L_i)      (0 where masked)
 * 12      dV_j += P_ij^T dO_i
 * 13      dP_ij = dO_i V_j^T
 * 14      dS_ij = P_ij o (dP_ij - D_i)
 * 15      dQ_i += dS_ij K_j / sqrt(d), write dQ_i              -> Br d writes
 *         (the paper's line 15 says "load dQ_i ... write back": that load is line 9's, counted
 *          once per tile)
 * 16      dK_j += dS_ij^T Q_i / sqrt(d)
 * 18    write dK_j, dV_j                                       -> 2 Bc d writes
 *
 * flash1: FlashAttention, Algorithm 4 (its forward saved l and m, not L).
 *  4  initialize dQ = 0, dK = 0, dV = 0 in HBM                 -> Nq d + 2 Nk d writes
 *  5-7 as above (line 6 loads K_j, V_j; line 7 zeroes dK_j, dV_j on chip)
 *  9  load Q_i, O_i, dO_i, dQ_i, l_i, m_i                      -> 4 Br d + 2 Br reads
 * 11  P_ij = diag(l_i)^-1 exp(S_ij - m_i)
 * 17  D_i = rowsum(dO_i o O_i) on chip (no preprocessing pass: O_i is re-read instead)
 * 18-22 as lines 14-16 above;  25 write dK_j, dV_j.
 *
 * A key block that no query sees is not loaded; flash2 writes zeros for its dK_j, dV_j (flash1's
 * line 4 already did).  flash2-gqa stacks the G query heads of a group (G Br rows per query
 * tile) so K_j, V_j are loaded and dK_j, dV_j accumulated on chip once per group.  When a K/V
 * head is shared by several segments (GQA run by flash1 or flash2, one query head each), every
 * segment after the first of its K/V head starts dK_j, dV_j from their values in HBM
 * (read-modify-write, 2 Bc d reads, counted) instead of 0.
 *
 * SRAM: K_j, V_j, dK_j, dV_j, Q_i, dO_i, dQ_i, S_ij (P_ij overwrites it), dP_ij (dS_ij overwrites
 * it), and row vectors: eq. (F2b) 4 Bc d + 3 Br d + 2 Br Bc + 2 Br (G Br rows for a group);
 * flash1 also O_i and l_i, m_i, D_i: eq. (F1b) 4 Bc d + 4 Br d + 2 Br Bc + 3 Br.
 */
#include <math.h>

#include <flashlab/ops.h>
#include "rules.h"
#include "schedules.h"
#include "variants.h"

enum { FA1 = 1, FA2 = 2 };

typedef struct {
    fl_buf *Kj, *Vj, *dKj, *dVj, *Qi, *dOi, *dQi, *Oi, *Sij, *dPij, *ri, *Di, *mi;
} bufs;

typedef struct {
    int style;
    int L_t, D_t, l_t, m_t; /* FA2: L, D; FA1: l, m */
    int dQp_t;              /* deterministic: the per-key-block partials of dQ (rule DT), else -1 */
    int64_t dq, dv, Br, Bc;
    fl_vrun *vr;
} ctx;

/* Moves the G per-head tiles of br rows between the stacked buffer b and tensor t (at row r0 of
 * tensor row `base` = the segment's rows, or of the partials' block). */
static fl_status load_g(fl_machine *m, fl_buf *b, int t, const fl_seg *sg, int64_t base, int64_t r0,
                        int64_t br, int64_t nc)
{
    for (int64_t g = 0; g < sg->group; g++) {
        fl_buf v = fl_buf_rows(b, g * br);
        FL_TRY(fl_load(m, g ? &v : b, t, base + g * sg->qstride + r0, 0, br, nc));
    }
    return FL_OK;
}
static fl_status store_g(fl_machine *m, const fl_buf *b, int t, const fl_seg *sg, int64_t base, int64_t r0,
                         int64_t br, int64_t nc)
{
    for (int64_t g = 0; g < sg->group; g++) {
        const fl_buf v = fl_buf_rows(b, g * br);
        FL_TRY(fl_store(m, g ? &v : b, t, base + g * sg->qstride + r0, 0, br, nc));
    }
    return FL_OK;
}

/* The end of a query head's dsink (rule SK): the first segment of the head writes it, a later one
 * (another sequence) reads, adds and writes it back. */
static fl_status dsink_store(fl_machine *m, const fl_qkvo *io, const fl_seg *sg, int64_t h, double acc)
{
    double prev = 0.0;
    if (!sg->head_first) FL_TRY(fl_load_scalar(m, io->dsink, h, 0, &prev));
    return fl_store_scalar(m, prev + acc, io->dsink, h, 0);
}

/* flash2 lines 3-4: dQ = 0 (not with deterministic partials), D = rowsum(dO o O), per query head,
 * in row blocks of Br, through the buffers X (Br x max(d, d_v): O_i, then L_i and the zeros of
 * dQ_i), dO_i, D_i; with sinks, dsink -= sum_i e^(sink - L_i) D_i (L_i loaded, rule SK) */
static fl_status preprocess(fl_machine *m, const fl_qkvo *io, const fl_seg *sg, const ctx *c, fl_buf *X,
                            fl_buf *dOi, fl_buf *Di)
{
    const int64_t dv = c->dv, Br = c->Br;
    const fl_vrun *vr = c->vr;
    for (int64_t g = 0; g < sg->group; g++) {
        double acc = 0.0; /* dsink of head g (a register) */
        for (int64_t r0 = 0; r0 < sg->Nq; r0 += Br) {
            const int64_t br = fl_min64(Br, sg->Nq - r0), row = sg->q0 + g * sg->qstride + r0;
            FL_TRY(fl_load(m, X, io->O, row, 0, br, dv));
            FL_TRY(fl_load(m, dOi, io->dO, row, 0, br, dv));
            if (fl_computes(m))
                for (int64_t r = 0; r < br; r++) {
                    double D = 0.0;
                    for (int64_t k = 0; k < dv; k++) D += dOi->x[r * dv + k] * X->x[r * X->cols + k];
                    Di->x[r] = D;
                }
            if (vr->v->sinks) {
                FL_TRY(fl_load(m, X, c->L_t, row, 0, br, 1));
                if (fl_computes(m))
                    for (int64_t r = 0; r < br; r++) acc -= exp(vr->sink[g] - X->x[r * X->cols]) * Di->x[r];
            }
            FL_TRY(fl_store(m, Di, c->D_t, row, 0, br, 1));
            if (c->dQp_t < 0) {
                fl_op_fill(X, br, c->dq, 0.0);
                FL_TRY(fl_store(m, X, io->dQ, row, 0, br, c->dq)); /* line 3: dQ = 0 */
            }
        }
        if (vr->v->sinks) FL_TRY(dsink_store(m, io, sg, sg->head + g, acc));
    }
    return FL_OK;
}

/* flash1 line 4: dQ = 0 (each query head; not with deterministic partials), dK = dV = 0 (once
 * per K/V head) */
static fl_status zero_init(fl_machine *m, const fl_qkvo *io, const fl_seg *sg, const ctx *c, bufs *B)
{
    const int64_t Br = c->Br, Bc = c->Bc;
    fl_op_fill(B->dQi, Br, c->dq, 0.0);
    fl_op_fill(B->dKj, Bc, c->dq, 0.0);
    fl_op_fill(B->dVj, Bc, c->dv, 0.0);
    if (c->dQp_t < 0)
        for (int64_t g = 0; g < sg->group; g++)
            for (int64_t r0 = 0; r0 < sg->Nq; r0 += Br)
                FL_TRY(fl_store(m, B->dQi, io->dQ, sg->q0 + g * sg->qstride + r0, 0, fl_min64(Br, sg->Nq - r0), c->dq));
    if (sg->kv_first)
        for (int64_t c0 = 0; c0 < sg->Nk; c0 += Bc) {
            const int64_t bc = fl_min64(Bc, sg->Nk - c0);
            FL_TRY(fl_store(m, B->dKj, io->dK, sg->k0 + c0, 0, bc, c->dq));
            FL_TRY(fl_store(m, B->dVj, io->dV, sg->k0 + c0, 0, bc, c->dv));
        }
    return FL_OK;
}

/* lines 10-16 on chip for one (i, j) tile of rows x bc (G heads stacked, br rows each), with the
 * variants (rules SC, AL, DR: the backward's recomputation applies them).  FA1 with sinks adds
 * the rows' dsink terms at their first key block (first = 1); the partial of a deterministic run
 * starts from 0 (rule DT). */
static void tile_grads(const ctx *c, bufs *B, const fl_seg *sg, int64_t r0, int64_t br, int64_t rows,
                       int64_t c0, int64_t bc, fl_tile_kind kind, int first, double *dsink)
{
    const int64_t dq = c->dq, dv = c->dv;
    fl_vrun *vr = c->vr;
    fl_op_matmul(B->Sij, B->Qi, B->Kj, rows, bc, dq, 1, vr->v->scale, 0); /* line 10 */
    fl_var_scores(vr, sg, B->Sij, r0, br, rows, c0, bc, kind);
    for (int64_t r = 0; r < rows; r++) { /* FA1 line 17: D_i on chip */
        if (c->style != FA1) continue;
        double D = 0.0;
        for (int64_t k = 0; k < dv; k++) D += B->dOi->x[r * dv + k] * B->Oi->x[r * dv + k];
        B->Di->x[r] = D;
        if (first && vr->v->sinks) /* -e^(sink - L) D with L = m + log l */
            *dsink -= exp(vr->sink[0] - B->mi->x[r]) / B->ri->x[r] * D;
    }
    /* line 11: S <- P (times the cap's derivative), dP <- P~ = P o Z / (1 - p) */
    fl_var_bwd_p(vr, sg, B->Sij, B->dPij, c->style == FA1 ? B->mi->x : B->ri->x, c->style == FA1 ? B->ri->x : NULL,
                 r0, br, rows, c0, bc);
    fl_matmul_tn(B->dVj, B->dPij, B->dOi, bc, dv, rows, 1.0);                /* line 12 */
    fl_op_matmul(B->dPij, B->dOi, B->Vj, rows, bc, dv, 1, 1.0, 0);       /* line 13 */
    fl_var_bwd_ds(vr, sg, B->Sij, B->dPij, B->Di->x, r0, br, rows, c0, bc); /* line 14 */
    fl_op_matmul(B->dQi, B->dPij, B->Kj, rows, dq, bc, 0, vr->v->scale, c->dQp_t < 0); /* line 15 */
    fl_matmul_tn(B->dKj, B->dPij, B->Qi, bc, dq, rows, vr->v->scale);         /* line 16 */
}

/* Deterministic (rule DT): dQ_i = the sum of its partials over the key blocks that touch row
 * block i, in the order of j, loaded into Q_i and added up in dQ_i. */
static fl_status reduce_dq(fl_machine *m, const fl_qkvo *io, const fl_seg *sg, const ctx *c, bufs *B)
{
    const int64_t dq = c->dq, Br = c->Br;
    for (int64_t r0 = 0; r0 < sg->Nq; r0 += Br) {
        const int64_t br = fl_min64(Br, sg->Nq - r0), rows = sg->group * br;
        int64_t j0, j1;
        fl_mask_block_range(&sg->mask, r0, br, c->Bc, &j0, &j1);
        fl_op_fill(B->dQi, rows, dq, 0.0);
        for (int64_t j = j0; j < j1; j++) {
            FL_TRY(load_g(m, B->Qi, c->dQp_t, sg, j * io->q_rows + sg->q0, r0, br, dq));
            if (B->dQi->x)
                for (int64_t x = 0; x < rows * dq; x++) B->dQi->x[x] += B->Qi->x[x];
        }
        FL_TRY(store_g(m, B->dQi, io->dQ, sg, sg->q0, r0, br, dq));
    }
    return FL_OK;
}

static fl_status segment(fl_machine *m, const fl_qkvo *io, const fl_seg *sg, const ctx *c, bufs *B)
{
    const int64_t dq = c->dq, dv = c->dv, Br = c->Br, Bc = c->Bc;
    const int det = c->dQp_t >= 0;
    double dsink = 0.0; /* FA1: this segment's dsink (a register) */
    for (int64_t c0 = 0; c0 < sg->Nk; c0 += Bc) { /* line 5 */
        const int64_t bc = fl_min64(Bc, sg->Nk - c0), krow = sg->k0 + c0, j = c0 / Bc;
        int64_t i0, i1;
        fl_mask_row_block_range(&sg->mask, c0, bc, Br, &i0, &i1);
        if (i0 >= i1) { /* no query sees key block j: its gradients are 0 */
            if (c->style == FA2 && sg->kv_first) {
                fl_op_fill(B->dKj, bc, dq, 0.0);
                fl_op_fill(B->dVj, bc, dv, 0.0);
                FL_TRY(fl_store(m, B->dKj, io->dK, krow, 0, bc, dq));
                FL_TRY(fl_store(m, B->dVj, io->dV, krow, 0, bc, dv));
            }
            continue;
        }
        FL_TRY(fl_load(m, B->Kj, io->K, krow, 0, bc, dq)); /* line 6 */
        FL_TRY(fl_load(m, B->Vj, io->V, krow, 0, bc, dv));
        if (sg->kv_first) { /* line 7 */
            fl_op_fill(B->dKj, bc, dq, 0.0);
            fl_op_fill(B->dVj, bc, dv, 0.0);
        } else { /* another query head of this K/V head came first: add to its gradients */
            FL_TRY(fl_load(m, B->dKj, io->dK, krow, 0, bc, dq));
            FL_TRY(fl_load(m, B->dVj, io->dV, krow, 0, bc, dv));
        }
        for (int64_t i = i0; i < i1; i++) { /* line 8 */
            const int64_t r0 = i * Br, br = fl_min64(Br, sg->Nq - r0), rows = sg->group * br;
            FL_TRY(load_g(m, B->Qi, io->Q, sg, sg->q0, r0, br, dq)); /* line 9 */
            if (c->style == FA1) FL_TRY(load_g(m, B->Oi, io->O, sg, sg->q0, r0, br, dv));
            FL_TRY(load_g(m, B->dOi, io->dO, sg, sg->q0, r0, br, dv));
            if (!det) FL_TRY(load_g(m, B->dQi, io->dQ, sg, sg->q0, r0, br, dq));
            if (c->style == FA1) {
                FL_TRY(load_g(m, B->ri, c->l_t, sg, sg->q0, r0, br, 1));
                FL_TRY(load_g(m, B->mi, c->m_t, sg, sg->q0, r0, br, 1));
            } else {
                FL_TRY(load_g(m, B->ri, c->L_t, sg, sg->q0, r0, br, 1));
                FL_TRY(load_g(m, B->Di, c->D_t, sg, sg->q0, r0, br, 1));
            }
            int64_t j0, j1; /* FA1 with sinks: a row block's dsink terms at its first key block */
            fl_mask_block_range(&sg->mask, r0, br, Bc, &j0, &j1);
            if (fl_computes(m))
                tile_grads(c, B, sg, r0, br, rows, c0, bc, fl_mask_tile(&sg->mask, r0, br, c0, bc), j == j0, &dsink);
            if (det) FL_TRY(store_g(m, B->dQi, c->dQp_t, sg, j * io->q_rows + sg->q0, r0, br, dq)); /* partial */
            else FL_TRY(store_g(m, B->dQi, io->dQ, sg, sg->q0, r0, br, dq)); /* line 15 */
        }
        FL_TRY(fl_store(m, B->dKj, io->dK, krow, 0, bc, dq)); /* line 18 */
        FL_TRY(fl_store(m, B->dVj, io->dV, krow, 0, bc, dv));
    }
    if (c->style == FA1 && c->vr->v->sinks) FL_TRY(dsink_store(m, io, sg, sg->head, dsink));
    return det ? reduce_dq(m, io, sg, c, B) : FL_OK;
}

static fl_status run(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io, int style)
{
    const int64_t Br = b->Br, Bc = b->Bc, G = fl_seg_max_group(&io);
    fl_var v;
    fl_var_of(p, &v);
    const int64_t dq = v.dq, dv = v.dv;
    fl_vrun vr;
    ctx c = {style, -1, -1, -1, -1, -1, dq, dv, Br, Bc, &vr};
    if (style == FA2) {
        c.L_t = fl_tensor_find(m, "L");
        if (c.L_t < 0) return fl_fail(FL_EBOUNDS, "flash2 backward: the forward's L is not in HBM");
        FL_TRY(fl_tensor_add(m, "D", io.q_rows, 1, 4, &c.D_t));
    } else {
        c.l_t = fl_tensor_find(m, "l");
        c.m_t = fl_tensor_find(m, "m");
        if (c.l_t < 0 || c.m_t < 0) return fl_fail(FL_EBOUNDS, "flash1 backward: the forward's l, m are not in HBM");
    }
    if (p->deterministic) /* row j * q_rows + q: the partial of key block j for query row q */
        FL_TRY(fl_tensor_add(m, "dQ_part", fl_cdiv(fl_seg_max_nk(&io), Bc) * io.q_rows, dq, FL_ACCUM_BYTES, &c.dQp_t));
    FL_TRY(fl_vrun_init(&vr, &v, m, &io, G, Bc));
    fl_status s = FL_OK;
    if (style == FA2) { /* lines 3-4, a pass of its own before the main loop */
        fl_buf *X = NULL, *dOi = NULL, *Di = NULL;
        if (!(s = fl_sram_alloc(m, "O_i", Br, fl_max64(dq, dv), &X)) && !(s = fl_sram_alloc(m, "dO_i", Br, dv, &dOi)) &&
            !(s = fl_sram_alloc(m, "D_i", Br, 1, &Di)))
            for (int64_t k = 0; k < io.nseg && !s; k++) {
                fl_seg sg;
                fl_segment_at(io.segs, k, &sg);
                if (!(s = fl_vrun_segment(m, &vr, &sg, FL_V_SINK))) s = preprocess(m, &io, &sg, &c, X, dOi, Di);
            }
        fl_sram_free(m, X);
        fl_sram_free(m, dOi);
        fl_sram_free(m, Di);
    }
    bufs B = {0};
    struct { fl_buf **b; const char *name; int64_t rows, cols; int need; } spec[] = {
        {&B.Kj, "K_j", Bc, dq, 1}, {&B.Vj, "V_j", Bc, dv, 1}, {&B.dKj, "dK_j", Bc, dq, 1},
        {&B.dVj, "dV_j", Bc, dv, 1}, {&B.Qi, "Q_i", G * Br, dq, 1}, {&B.dOi, "dO_i", G * Br, dv, 1},
        {&B.dQi, "dQ_i", G * Br, dq, 1}, {&B.Oi, "O_i", G * Br, dv, style == FA1},
        {&B.Sij, "S_ij", G * Br, Bc, 1}, {&B.dPij, "dP_ij", G * Br, Bc, 1},
        {&B.ri, style == FA1 ? "l_i" : "L_i", G * Br, 1, 1}, {&B.Di, "D_i", G * Br, 1, 1},
        {&B.mi, "m_i", G * Br, 1, style == FA1},
    };
    const int n = (int)(sizeof spec / sizeof spec[0]);
    for (int k = 0; k < n && !s; k++)
        if (spec[k].need) s = fl_sram_alloc(m, spec[k].name, spec[k].rows, spec[k].cols, spec[k].b);
    for (int64_t k = 0; k < io.nseg && !s; k++) {
        fl_seg sg;
        fl_segment_at(io.segs, k, &sg);
        /* the segment's registers: FA1 its sink (for dsink), both the dropout seed (rule R3b) */
        if ((s = fl_vrun_segment(m, &vr, &sg, (style == FA1 ? FL_V_SINK : 0) | FL_V_RNG))) break;
        if (style == FA1 && (s = zero_init(m, &io, &sg, &c, &B))) break;
        s = segment(m, &io, &sg, &c, &B);
    }
    fl_vrun_free(&vr);
    if (s) return s;
    for (int k = 0; k < n; k++)
        if (spec[k].need) fl_sram_free(m, *spec[k].b);
    return FL_OK;
}

fl_status fl_schedule_flash1_bwd(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io)
{
    return run(m, p, b, io, FA1);
}

fl_status fl_schedule_flash2_bwd(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io)
{
    return run(m, p, b, io, FA2);
}

/* ---- the closed form of this loop ---- */

/* (C1b) with fa1 = 1, (C2b) with fa1 = 0: one segment (docs/model.md §backward), with d_v (rule
 * D1), sinks (SK), the dropout seed (DR) and deterministic partials (DT) */
void fl_closed_flash_bwd(ck *c, int fa1, const fl_problem *p, const fl_seg *s, const fl_blocks *b, fl_counts *r)
{
    fl_var v;
    fl_var_of(p, &v);
    const int64_t G = s->group, Tr = fl_cdiv(s->Nq, b->Br), Tc = fl_cdiv(s->Nk, b->Bc);
    const int64_t dq = v.dq, dv = v.dv, GNq = mul(c, G, s->Nq);
    const int f = s->kv_first, a = !f, det = p->deterministic != 0;
    /* the segment's registers (rule R3b) and, with sinks, dsink written (read first by a later
     * sequence) */
    const int64_t once = fl_var_segment_reads(&v, G, FL_V_SINK | FL_V_RNG);
    const int64_t rmw = v.sinks && !s->head_first ? G : 0, wsink = v.sinks ? G : 0;
    fl_acc(c, &r->reads, add(c, once, rmw));
    fl_acc(c, &r->writes, wsink);
    fl_acc(c, &r->events, add(c, add(c, once, rmw), wsink));
    if (fa1) { /* line 4: dQ = 0 (not with partials), dK = dV = 0 */
        fl_acc(c, &r->writes, add(c, det ? 0 : mul(c, GNq, dq), f ? mul(c, s->Nk, dq + dv) : 0));
        fl_acc(c, &r->events, add(c, det ? 0 : mul(c, G, Tr), f ? 2 * Tc : 0));
    } else { /* lines 3-4: dQ = 0 (not with partials), D = rowsum(dO o O); with sinks L too */
        fl_acc(c, &r->reads, add(c, mul(c, 2, mul(c, GNq, dv)), v.sinks ? GNq : 0));
        fl_acc(c, &r->writes, add(c, GNq, det ? 0 : mul(c, GNq, dq)));
        fl_acc(c, &r->events, mul(c, mul(c, G, Tr), 3 + !det + (v.sinks != 0)));
    }
    const int64_t qrow = dq + dv + (det ? 0 : dq) + 2 + (fa1 ? dv : 0); /* Q, dO, dQ, L and D (l, m), O */
    for (int64_t c0 = 0; c0 < s->Nk; c0 += b->Bc) {
        const int64_t bc = fl_min64(b->Bc, s->Nk - c0);
        int64_t i0, i1;
        fl_mask_row_block_range(&s->mask, c0, bc, b->Br, &i0, &i1);
        if (i1 <= i0) {
            if (!fa1 && f) {
                fl_acc(c, &r->writes, mul(c, bc, dq + dv));
                fl_acc(c, &r->events, 2);
            }
            continue;
        }
        const int64_t rows = fl_min64(s->Nq, i1 * b->Br) - i0 * b->Br, n = i1 - i0;
        fl_acc(c, &r->reads, mul(c, 1 + a, mul(c, bc, dq + dv)));
        fl_acc(c, &r->reads, mul(c, mul(c, G, rows), qrow));
        fl_acc(c, &r->writes, add(c, mul(c, mul(c, G, rows), dq), mul(c, bc, dq + dv)));
        fl_acc(c, &r->events, add(c, 4 + 2 * a, mul(c, mul(c, G, n), (fa1 ? 7 : 6) - det)));
        if (det) { /* the reduction loads every partial once */
            fl_acc(c, &r->reads, mul(c, mul(c, G, rows), dq));
            fl_acc(c, &r->events, mul(c, G, n));
        }
    }
    if (det) { /* and writes every row of dQ */
        fl_acc(c, &r->writes, mul(c, GNq, dq));
        fl_acc(c, &r->events, mul(c, G, Tr));
    }
}
