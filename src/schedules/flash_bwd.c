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

enum { FA1 = 1, FA2 = 2 };

typedef struct {
    fl_buf *Kj, *Vj, *dKj, *dVj, *Qi, *dOi, *dQi, *Oi, *Sij, *dPij, *ri, *Di, *mi;
} bufs;

typedef struct {
    int style;
    int L_t, D_t, l_t, m_t; /* FA2: L, D; FA1: l, m */
    double scale;
    int64_t d, Br, Bc;
} ctx;

/* Moves the G per-head tiles of br rows between the stacked buffer b and tensor t. */
static fl_status load_g(fl_machine *m, fl_buf *b, int t, const fl_seg *sg, int64_t r0, int64_t br,
                        int64_t nc)
{
    for (int64_t g = 0; g < sg->group; g++) {
        fl_buf v = fl_buf_rows(b, g * br);
        FL_TRY(fl_load(m, g ? &v : b, t, sg->q0 + g * sg->qstride + r0, 0, br, nc));
    }
    return FL_OK;
}
static fl_status store_g(fl_machine *m, const fl_buf *b, int t, const fl_seg *sg, int64_t r0,
                         int64_t br, int64_t nc)
{
    for (int64_t g = 0; g < sg->group; g++) {
        const fl_buf v = fl_buf_rows(b, g * br);
        FL_TRY(fl_store(m, g ? &v : b, t, sg->q0 + g * sg->qstride + r0, 0, br, nc));
    }
    return FL_OK;
}

/* flash2 lines 3-4: dQ = 0, D = rowsum(dO o O), per query head, in row blocks of Br, through
 * the buffers O_i, dO_i, D_i */
static fl_status preprocess(fl_machine *m, const fl_qkvo *io, const fl_seg *sg, const ctx *c, fl_buf *Oi,
                            fl_buf *dOi, fl_buf *Di)
{
    const int64_t d = c->d, Br = c->Br;
    for (int64_t g = 0; g < sg->group; g++)
        for (int64_t r0 = 0; r0 < sg->Nq; r0 += Br) {
            const int64_t br = fl_min64(Br, sg->Nq - r0), row = sg->q0 + g * sg->qstride + r0;
            FL_TRY(fl_load(m, Oi, io->O, row, 0, br, d));
            FL_TRY(fl_load(m, dOi, io->dO, row, 0, br, d));
            if (fl_computes(m))
                for (int64_t r = 0; r < br; r++) {
                    double D = 0.0;
                    for (int64_t k = 0; k < d; k++) D += dOi->x[r * d + k] * Oi->x[r * d + k];
                    Di->x[r] = D;
                }
            FL_TRY(fl_store(m, Di, c->D_t, row, 0, br, 1));
            fl_op_fill(Oi, br, d, 0.0);
            FL_TRY(fl_store(m, Oi, io->dQ, row, 0, br, d)); /* line 3: dQ = 0 */
        }
    return FL_OK;
}

/* flash1 line 4: dQ = 0 (each query head), dK = dV = 0 (once per K/V head) */
static fl_status zero_init(fl_machine *m, const fl_qkvo *io, const fl_seg *sg, const ctx *c, bufs *B)
{
    const int64_t d = c->d, Br = c->Br, Bc = c->Bc;
    fl_op_fill(B->dQi, Br, d, 0.0);
    fl_op_fill(B->dKj, Bc, d, 0.0);
    for (int64_t g = 0; g < sg->group; g++)
        for (int64_t r0 = 0; r0 < sg->Nq; r0 += Br)
            FL_TRY(fl_store(m, B->dQi, io->dQ, sg->q0 + g * sg->qstride + r0, 0, fl_min64(Br, sg->Nq - r0), d));
    if (sg->kv_first)
        for (int64_t c0 = 0; c0 < sg->Nk; c0 += Bc) {
            const int64_t bc = fl_min64(Bc, sg->Nk - c0);
            FL_TRY(fl_store(m, B->dKj, io->dK, sg->k0 + c0, 0, bc, d));
            FL_TRY(fl_store(m, B->dKj, io->dV, sg->k0 + c0, 0, bc, d));
        }
    return FL_OK;
}

/* lines 10-16 on chip for one (i, j) tile of rows x bc (G heads stacked, br rows each) */
static void tile_grads(const ctx *c, bufs *B, const fl_seg *sg, int64_t r0, int64_t br, int64_t rows,
                       int64_t c0, int64_t bc, fl_tile_kind kind)
{
    const int64_t d = c->d;
    fl_op_matmul(B->Sij, B->Qi, B->Kj, rows, bc, d, 1, c->scale, 0); /* line 10 */
    for (int64_t r = 0; r < rows; r++) {                             /* line 11 (FA1: 17) */
        double *s = B->Sij->x + r * B->Sij->cols;
        const int64_t i = r0 + r % br;
        double D;
        if (c->style == FA1) {
            D = 0.0;
            for (int64_t k = 0; k < d; k++) D += B->dOi->x[r * d + k] * B->Oi->x[r * d + k];
        } else {
            D = B->Di->x[r];
        }
        B->Di->x[r] = D;
        for (int64_t q = 0; q < bc; q++) {
            if (kind == FL_TILE_PARTIAL && !fl_mask_keep(&sg->mask, i, c0 + q)) {
                s[q] = 0.0; /* masked: P = 0, hence dS = 0 exactly */
                continue;
            }
            s[q] = c->style == FA1 ? exp(s[q] - B->mi->x[r]) / B->ri->x[r] : exp(s[q] - B->ri->x[r]);
        }
    }
    fl_matmul_tn(B->dVj, B->Sij, B->dOi, bc, d, rows, 1.0);             /* line 12 */
    fl_op_matmul(B->dPij, B->dOi, B->Vj, rows, bc, d, 1, 1.0, 0);      /* line 13 */
    for (int64_t r = 0; r < rows; r++)                                 /* line 14 */
        for (int64_t q = 0; q < bc; q++) {
            double *g = &B->dPij->x[r * B->dPij->cols + q];
            *g = B->Sij->x[r * B->Sij->cols + q] * (*g - B->Di->x[r]);
        }
    fl_op_matmul(B->dQi, B->dPij, B->Kj, rows, d, bc, 0, c->scale, 1); /* line 15 */
    fl_matmul_tn(B->dKj, B->dPij, B->Qi, bc, d, rows, c->scale);        /* line 16 */
}

static fl_status segment(fl_machine *m, const fl_qkvo *io, const fl_seg *sg, const ctx *c, bufs *B)
{
    const int64_t d = c->d, Br = c->Br, Bc = c->Bc;
    for (int64_t c0 = 0; c0 < sg->Nk; c0 += Bc) { /* line 5 */
        const int64_t bc = fl_min64(Bc, sg->Nk - c0), krow = sg->k0 + c0;
        int64_t i0, i1;
        fl_mask_row_block_range(&sg->mask, c0, bc, Br, &i0, &i1);
        if (i0 >= i1) { /* no query sees key block j: its gradients are 0 */
            if (c->style == FA2 && sg->kv_first) {
                fl_op_fill(B->dKj, bc, d, 0.0);
                FL_TRY(fl_store(m, B->dKj, io->dK, krow, 0, bc, d));
                FL_TRY(fl_store(m, B->dKj, io->dV, krow, 0, bc, d));
            }
            continue;
        }
        FL_TRY(fl_load(m, B->Kj, io->K, krow, 0, bc, d)); /* line 6 */
        FL_TRY(fl_load(m, B->Vj, io->V, krow, 0, bc, d));
        if (sg->kv_first) { /* line 7 */
            fl_op_fill(B->dKj, bc, d, 0.0);
            fl_op_fill(B->dVj, bc, d, 0.0);
        } else { /* another query head of this K/V head came first: add to its gradients */
            FL_TRY(fl_load(m, B->dKj, io->dK, krow, 0, bc, d));
            FL_TRY(fl_load(m, B->dVj, io->dV, krow, 0, bc, d));
        }
        for (int64_t i = i0; i < i1; i++) { /* line 8 */
            const int64_t r0 = i * Br, br = fl_min64(Br, sg->Nq - r0), rows = sg->group * br;
            FL_TRY(load_g(m, B->Qi, io->Q, sg, r0, br, d)); /* line 9 */
            if (c->style == FA1) FL_TRY(load_g(m, B->Oi, io->O, sg, r0, br, d));
            FL_TRY(load_g(m, B->dOi, io->dO, sg, r0, br, d));
            FL_TRY(load_g(m, B->dQi, io->dQ, sg, r0, br, d));
            if (c->style == FA1) {
                FL_TRY(load_g(m, B->ri, c->l_t, sg, r0, br, 1));
                FL_TRY(load_g(m, B->mi, c->m_t, sg, r0, br, 1));
            } else {
                FL_TRY(load_g(m, B->ri, c->L_t, sg, r0, br, 1));
                FL_TRY(load_g(m, B->Di, c->D_t, sg, r0, br, 1));
            }
            if (fl_computes(m))
                tile_grads(c, B, sg, r0, br, rows, c0, bc, fl_mask_tile(&sg->mask, r0, br, c0, bc));
            FL_TRY(store_g(m, B->dQi, io->dQ, sg, r0, br, d)); /* line 15 */
        }
        FL_TRY(fl_store(m, B->dKj, io->dK, krow, 0, bc, d)); /* line 18 */
        FL_TRY(fl_store(m, B->dVj, io->dV, krow, 0, bc, d));
    }
    return FL_OK;
}

static fl_status run(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io, int style)
{
    const int64_t d = p->d, Br = b->Br, Bc = b->Bc, G = fl_seg_max_group(&io);
    ctx c = {style, -1, -1, -1, -1, 1.0 / sqrt((double)d), d, Br, Bc};
    if (style == FA2) {
        c.L_t = fl_tensor_find(m, "L");
        if (c.L_t < 0) return fl_fail(FL_EBOUNDS, "flash2 backward: the forward's L is not in HBM");
        FL_TRY(fl_tensor_add(m, "D", io.q_rows, 1, 4, &c.D_t));
        fl_buf *Oi, *dOi, *Di;
        FL_TRY(fl_sram_alloc(m, "O_i", Br, d, &Oi));
        FL_TRY(fl_sram_alloc(m, "dO_i", Br, d, &dOi));
        FL_TRY(fl_sram_alloc(m, "D_i", Br, 1, &Di));
        for (int64_t s = 0; s < io.nseg; s++) {
            fl_seg sg;
            fl_segment_at(io.segs, s, &sg);
            FL_TRY(preprocess(m, &io, &sg, &c, Oi, dOi, Di));
        }
        fl_sram_free(m, Oi);
        fl_sram_free(m, dOi);
        fl_sram_free(m, Di);
    } else {
        c.l_t = fl_tensor_find(m, "l");
        c.m_t = fl_tensor_find(m, "m");
        if (c.l_t < 0 || c.m_t < 0) return fl_fail(FL_EBOUNDS, "flash1 backward: the forward's l, m are not in HBM");
    }
    bufs B = {0};
    struct { fl_buf **b; const char *name; int64_t rows, cols; int need; } spec[] = {
        {&B.Kj, "K_j", Bc, d, 1}, {&B.Vj, "V_j", Bc, d, 1}, {&B.dKj, "dK_j", Bc, d, 1},
        {&B.dVj, "dV_j", Bc, d, 1}, {&B.Qi, "Q_i", G * Br, d, 1}, {&B.dOi, "dO_i", G * Br, d, 1},
        {&B.dQi, "dQ_i", G * Br, d, 1}, {&B.Oi, "O_i", G * Br, d, style == FA1},
        {&B.Sij, "S_ij", G * Br, Bc, 1}, {&B.dPij, "dP_ij", G * Br, Bc, 1},
        {&B.ri, style == FA1 ? "l_i" : "L_i", G * Br, 1, 1}, {&B.Di, "D_i", G * Br, 1, 1},
        {&B.mi, "m_i", G * Br, 1, style == FA1},
    };
    const int n = (int)(sizeof spec / sizeof spec[0]);
    for (int k = 0; k < n; k++)
        if (spec[k].need) FL_TRY(fl_sram_alloc(m, spec[k].name, spec[k].rows, spec[k].cols, spec[k].b));
    for (int64_t s = 0; s < io.nseg; s++) {
        fl_seg sg;
        fl_segment_at(io.segs, s, &sg);
        if (style == FA1) FL_TRY(zero_init(m, &io, &sg, &c, &B));
        FL_TRY(segment(m, &io, &sg, &c, &B));
    }
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

/* (C1b) with fa1 = 1, (C2b) with fa1 = 0: one segment (docs/model.md §backward) */
void fl_closed_flash_bwd(ck *c, int fa1, const fl_seg *s, const fl_blocks *b, int64_t d, fl_counts *r)
{
    const int64_t G = s->group, Tr = fl_cdiv(s->Nq, b->Br), Tc = fl_cdiv(s->Nk, b->Bc);
    const int f = s->kv_first, a = !f;
    if (fa1) { /* line 4: dQ = 0, dK = dV = 0 */
        fl_acc(c, &r->writes, add(c, mul(c, mul(c, G, s->Nq), d), f ? mul(c, 2, mul(c, s->Nk, d)) : 0));
        fl_acc(c, &r->events, add(c, mul(c, G, Tr), f ? 2 * Tc : 0));
    } else { /* lines 3-4: dQ = 0, D = rowsum(dO o O) */
        fl_acc(c, &r->reads, mul(c, 2, mul(c, mul(c, G, s->Nq), d)));
        fl_acc(c, &r->writes, mul(c, mul(c, G, s->Nq), d + 1));
        fl_acc(c, &r->events, mul(c, 4, mul(c, G, Tr)));
    }
    for (int64_t c0 = 0; c0 < s->Nk; c0 += b->Bc) {
        const int64_t bc = fl_min64(b->Bc, s->Nk - c0);
        int64_t i0, i1;
        fl_mask_row_block_range(&s->mask, c0, bc, b->Br, &i0, &i1);
        if (i1 <= i0) {
            if (!fa1 && f) {
                fl_acc(c, &r->writes, mul(c, 2, mul(c, bc, d)));
                fl_acc(c, &r->events, 2);
            }
            continue;
        }
        const int64_t rows = fl_min64(s->Nq, i1 * b->Br) - i0 * b->Br, n = i1 - i0;
        fl_acc(c, &r->reads, mul(c, 2 + 2 * a, mul(c, bc, d)));
        fl_acc(c, &r->reads, mul(c, mul(c, G, rows), fa1 ? 4 * d + 2 : 3 * d + 2));
        fl_acc(c, &r->writes, add(c, mul(c, mul(c, G, rows), d), mul(c, 2, mul(c, bc, d))));
        fl_acc(c, &r->events, add(c, 4 + 2 * a, mul(c, mul(c, G, n), fa1 ? 7 : 6)));
    }
}
