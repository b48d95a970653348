/* flash2.c: FlashAttention-2 (Dao, 2023), Algorithm 1 (forward pass), per segment.
 *
 *  1-2 divide Q, O, L into Tr blocks of Br rows; K, V into Tc blocks of Bc rows
 *  3  for i in 1..Tr:
 *       (masks: only the key blocks j0..j1-1 that the row block touches, rule K2; none:
 *        O_i = 0 and L_i = -inf are written without loading anything, rule M0)
 *  4    load Q_i                                  -> Br d reads
 *  5    on chip: O_i = 0, l_i = 0, m_i = -inf
 *  6    for j in j0..j1-1:
 *  7      load K_j, V_j                           -> 2 Bc d reads
 *  8      S_ij = Q_i K_j^T (scaled by 1/sqrt d); boundary tiles masked per element (K4)
 *  9      m_i = max(m_i, rowmax S_ij), P_ij = exp(S_ij - m_i), l_i = e^(m_old - m_i) l_i + rowsum P_ij
 * 10      O_i = diag(e^(m_old - m_i)) O_i + P_ij V_j
 * 12    O_i = diag(l_i)^-1 O_i                    (0 for a row with no legal key, M0)
 * 13    L_i = m_i + log(l_i)
 * 14    write O_i                                 -> Br d writes
 * 15    write L_i                                 -> Br writes
 *
 * flash2-gqa (a segment with group G > 1): the G query heads sharing one K/V head are stacked,
 * G*Br rows per query tile; lines 4, 14, 15 move G tiles, and each K_j, V_j is loaded once for
 * the whole group (docs/model.md eq. (C2g)).
 *
 * Lines 9-10 are one online-softmax step per row (fl_osm_step, docs/model.md eq. (OS)); the old
 * maximum and the rescale factor are per-row scalars (rule R3).  SRAM: Q_i, O_i, K_j, V_j, S_ij
 * and the row vectors m_i (which becomes L_i) and l_i: eq. (F2).  Counts: eq. (C2).
 */
#include <math.h>
#include <stdio.h>

#include <flashlab/ops.h>

#include "rules.h"
#include "schedules.h"
#include "variants.h"

static fl_status segment(fl_machine *m, const fl_blocks *b, const fl_qkvo *io, const fl_seg *sg,
                         int L_t, fl_buf *Qi, fl_buf *Oi, fl_buf *Kj, fl_buf *Vj, fl_buf *Sij,
                         fl_buf *mi, fl_buf *li, fl_vrun *vr)
{
    const int64_t Br = b->Br, Bc = b->Bc, G = sg->group, dq = vr->v->dq, dv = vr->v->dv;
    FL_TRY(fl_vrun_segment(m, vr, sg, FL_V_SINK | FL_V_RNG)); /* sinks, dropout seed (rule R3b) */
    for (int64_t r0 = 0; r0 < sg->Nq; r0 += Br) { /* line 3 */
        const int64_t br = fl_min64(Br, sg->Nq - r0), rows = G * br;
        int64_t j0, j1;
        fl_mask_block_range(&sg->mask, r0, br, Bc, &j0, &j1);
        if (j0 < j1)
            for (int64_t g = 0; g < G; g++) { /* line 4 */
                fl_buf v = fl_buf_rows(Qi, g * br);
                FL_TRY(fl_vrun_load(m, vr, FL_VQ, g ? &v : Qi, io->Q, sg->q0 + g * sg->qstride + r0, 0, br, dq,
                                    sg->qs0 + g * sg->qsstride, r0));
            }
        fl_op_fill(Oi, rows, dv, 0.0); /* line 5 (with sinks: m_i = sink, l_i = 1, rule SK) */
        fl_var_osm_init(vr, mi, li, br, rows);
        for (int64_t j = j0; j < j1; j++) { /* line 6 */
            const int64_t c0 = j * Bc, bc = fl_min64(Bc, sg->Nk - c0);
            FL_TRY(fl_vrun_load(m, vr, FL_VK, Kj, io->K, sg->k0 + c0, 0, bc, dq, sg->ks0, c0)); /* line 7 */
            FL_TRY(fl_vrun_load(m, vr, FL_VV, Vj, io->V, sg->k0 + c0, 0, bc, dv, sg->ks0, c0));
            fl_op_matmul(Sij, Qi, Kj, rows, bc, dq, 1, vr->v->scale, 0); /* line 8 */
            fl_var_scores(vr, sg, Sij, r0, br, rows, c0, bc, fl_mask_tile(&sg->mask, r0, br, c0, bc));
            if (fl_computes(m))
                for (int64_t r = 0; r < rows; r++) /* lines 9-10 (dropout: P~ V, rule DR) */
                    fl_osm_step_w(&mi->x[r], &li->x[r], Oi->x + r * dv, dv, Sij->x + r * Bc, bc, Vj->x, dv,
                                  Sij->x + r * Bc, fl_var_drop_row(vr, sg, r0, br, r, c0, bc));
        }
        if (fl_computes(m))
            for (int64_t r = 0; r < rows; r++) {
                fl_osm_finish(li->x[r], Oi->x + r * dv, dv, Oi->x + r * dv); /* line 12 */
                mi->x[r] = li->x[r] > 0.0 ? mi->x[r] + log(li->x[r]) : -INFINITY; /* line 13 */
            }
        for (int64_t g = 0; g < G; g++) {
            const fl_buf o = fl_buf_rows(Oi, g * br), l = fl_buf_rows(mi, g * br);
            FL_TRY(fl_store(m, g ? &o : Oi, io->O, sg->q0 + g * sg->qstride + r0, 0, br, dv)); /* line 14 */
            FL_TRY(fl_store(m, g ? &l : mi, L_t, sg->q0 + g * sg->qstride + r0, 0, br, 1));   /* line 15 */
        }
    }
    return FL_OK;
}

static fl_status fl_schedule_flash2(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io)
{
    const int64_t Br = b->Br, Bc = b->Bc, G = fl_seg_max_group(&io);
    fl_var v;
    fl_var_of(p, &v);
    const int64_t dq = v.dq, dv = v.dv;
    int L_t;
    FL_TRY(fl_tensor_add(m, "L", io.q_rows, 1, 4, &L_t));

    fl_buf *Qi, *Oi, *Kj, *Vj, *Sij, *mi, *li;
    FL_TRY(fl_sram_alloc(m, "Q_i", G * Br, dq, &Qi));
    FL_TRY(fl_sram_alloc(m, "O_i", G * Br, dv, &Oi));
    FL_TRY(fl_sram_alloc(m, "K_j", Bc, dq, &Kj));
    FL_TRY(fl_sram_alloc(m, "V_j", Bc, dv, &Vj));
    FL_TRY(fl_sram_alloc(m, "S_ij", G * Br, Bc, &Sij));
    FL_TRY(fl_sram_alloc(m, "m_i", G * Br, 1, &mi));
    FL_TRY(fl_sram_alloc(m, "l_i", G * Br, 1, &li));
    fl_vrun vr;
    FL_TRY(fl_vrun_init(&vr, &v, m, &io, G, Bc));

    fl_status s = FL_OK;
    for (int64_t k = 0; k < io.nseg && !s; k++) {
        fl_seg sg;
        fl_segment_at(io.segs, k, &sg);
        s = segment(m, b, &io, &sg, L_t, Qi, Oi, Kj, Vj, Sij, mi, li, &vr);
    }
    fl_vrun_free(&vr);
    if (s) return s;
    fl_buf *all[] = {Qi, Oi, Kj, Vj, Sij, mi, li};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) fl_sram_free(m, all[k]);
    return FL_OK;
}

/* ---- the descriptors of flash2 and flash2-gqa: footprint, block rules, closed form ---- */

/* (F2), (F2g) with R = G*Br: R*(d + d_v) + Bc*(d + d_v) + R*Bc + 2*R; (F2b) 2*R*d + R*d_v +
 * 2*Bc*(d + d_v) + 2*R*Bc + 2*R, or its preprocessing's O_i, dO_i, D_i (2*Br*d_v + Br, per query
 * head) when that is more (d_v > 2d + ...: rule D1) */
static int64_t footprint(const fl_problem *p, int bwd, int64_t G, int64_t Br, int64_t Bc, int64_t Bd)
{
    (void)Bd;
    const int64_t dq = p->d, dv = fl_problem_dv(p);
    if (!bwd) return fl_fp_checked2((fl_fp_split)FL_FP2_FLASH2_FWD, G, Br, Bc, dq, dv);
    const int64_t f = fl_fp_checked2((fl_fp_split)FL_FP2_FLASH2_BWD, G, Br, Bc, dq, dv);
    const int64_t pre = fl_fp_checked2((fl_fp_split){0, 2, 0, 0, 0, 1}, 1, Br, Bc, dq, dv);
    return f < 0 || pre < 0 ? -1 : fl_max64(f, pre);
}

/* (B2) square blocks Br = Bc, the largest (<= max(Nq, Nk)) that fit (F2, F2b) */
static fl_status blocks(const fl_problem *p, int bwd, fl_blocks *b)
{
    fl_rule r;
    fl_rule_init(&r, p, bwd);
    b->Bd = p->d;
    b->Br = b->Bc = fl_rule_largest(fl_max64(r.nq, r.nk), fl_rule_ok_square, &r);
    return fl_rule_finish(&r, b, bwd ? "F2b" : "F2", p->d, NULL);
}

/* flash2-gqa backward: the stacked query tile G*Br about as tall as the key tile is wide */
static int64_t gqa_br(int64_t Bc, const fl_rule *r) { return fl_max64(1, fl_min64(Bc / r->G, r->nq)); }
static int ok_gqa_bwd(int64_t Bc, const fl_rule *r) { return fl_rule_fits(r, gqa_br(Bc, r), Bc, r->p->d); }

/* (B2g) square blocks, a query tile of G*Br stacked rows (F2g); (B2gb) Bc the largest with
 * Br = max(1, floor(Bc/G)) fitting (F2b) */
static fl_status blocks_gqa(const fl_problem *p, int bwd, fl_blocks *b)
{
    fl_rule r;
    fl_rule_init(&r, p, bwd);
    const int64_t n = fl_max64(r.nq, r.nk);
    b->Bd = p->d;
    if (bwd) {
        b->Bc = fl_rule_largest(n, ok_gqa_bwd, &r);
        b->Br = b->Bc ? gqa_br(b->Bc, &r) : 0;
    } else {
        b->Br = b->Bc = fl_rule_largest(n, fl_rule_ok_square, &r);
    }
    return fl_rule_finish(&r, b, bwd ? "F2b" : "F2g", p->d, NULL);
}

/* (C2m) one segment's forward: row block i touches key blocks [j0, j1) covering cols_i keys;
 * with the variants (§14): the segment's sink logits and dropout seed, fp8's scale factors */
static void segment_fwd(ck *c, const fl_var *v, const fl_seg *s, const fl_blocks *b, fl_counts *r)
{
    const int64_t G = s->group, dq = v->dq, dv = v->dv;
    const int64_t once = fl_var_segment_reads(v, G, FL_V_SINK | FL_V_RNG);
    int64_t lq = -1, lk = -1, lv = -1; /* the fp8 registers (rule R3b) */
    fl_acc(c, &r->reads, once);
    fl_acc(c, &r->events, once);
    for (int64_t r0 = 0; r0 < s->Nq; r0 += b->Br) {
        const int64_t br = fl_min64(b->Br, s->Nq - r0);
        int64_t j0, j1;
        fl_mask_block_range(&s->mask, r0, br, b->Bc, &j0, &j1);
        const int64_t n = j1 > j0 ? j1 - j0 : 0;
        const int64_t cols = n ? fl_min64(s->Nk, j1 * b->Bc) - j0 * b->Bc : 0;
        int64_t sc = 0;
        if (n) {
            fl_acc(c, &r->reads, mul(c, mul(c, G, br), dq));
            for (int64_t g = 0; g < G; g++) sc += fl_var_scales_entered(v, s->qs0 + g * s->qsstride, r0, r0 + br, &lq);
            sc += fl_var_scales_entered(v, s->ks0, j0 * b->Bc, j0 * b->Bc + cols, &lk);
            sc += fl_var_scales_entered(v, s->ks0, j0 * b->Bc, j0 * b->Bc + cols, &lv);
        }
        fl_acc(c, &r->reads, add(c, mul(c, dq + dv, cols), sc));
        fl_acc(c, &r->writes, mul(c, mul(c, G, br), dv + 1));
        fl_acc(c, &r->events, add(c, add(c, add(c, n ? G : 0, mul(c, 2, n)), mul(c, 2, G)), sc));
    }
}

static void segment_counts(ck *c, const fl_problem *p, int bwd, const fl_seg *s, const fl_blocks *b, fl_counts *r)
{
    fl_var v;
    fl_var_of(p, &v);
    if (bwd) fl_closed_flash_bwd(c, 0, p, s, b, r);
    else segment_fwd(c, &v, s, b, r);
}

/* (C2) reads = Nd + N(d + d_v)Tr; writes = N d_v + N; (E2) events = Tr(3 + 2Tc) */
static void closed_plain(ck *c, const fl_problem *p, const fl_blocks *b, fl_counts *r)
{
    const int64_t N = p->N, d = p->d, dv = fl_problem_dv(p);
    const int64_t Tr = fl_cdiv(N, b->Br), Tc = fl_cdiv(N, b->Bc);
    r->reads = add(c, mul(c, N, d), mul(c, mul(c, N, d + dv), Tr));
    r->writes = add(c, mul(c, N, dv), N);
    r->events = mul(c, Tr, add(c, 3, mul(c, 2, Tc)));
    r->sram_peak = b->footprint;
}

static fl_status closed_form(const fl_problem *p, int bwd, const fl_blocks *b, fl_counts *out)
{
    return fl_closed_tiled(p, bwd, b, closed_plain, segment_counts, out);
}

static void explain(FILE *out, const fl_problem *p, const fl_blocks *b)
{
    (void)p, (void)b;
    fprintf(out, "  rule B2: square blocks Br = Bc, the largest (<= N) with\n"
                 "    2*Br*d + 2*Bc*d + Br*Bc + 2*Br <= M (docs/model.md eq. F2)\n");
}

static void explain_gqa(FILE *out, const fl_problem *p, const fl_blocks *b)
{
    (void)b;
    fprintf(out, "  rule B2g: square blocks with the %lld query heads of a group stacked: a query tile\n"
                 "    of G*Br rows, 2*G*Br*d + 2*Bc*d + G*Br*Bc + 2*G*Br <= M (docs/model.md eq. F2g)\n",
            (long long)fl_problem_group(p));
}

#define FLASH2_ACCEPTS (FL_ACCEPT_NK | FL_ACCEPT_MASK | FL_ACCEPT_HEADS | FL_ACCEPT_VARLEN | FL_ACCEPT_BWD | \
                        FL_ACCEPT_VARIANTS)

/* Block terms (C2) walks per sequence: the row blocks in the forward, the key blocks in the
 * backward (optimize's work measure, schedule.h). */
static int64_t closed_form_terms(int bwd, int dense, int64_t nq, int64_t nk, int64_t Br, int64_t Bc)
{
    return bwd ? fl_cdiv(nk, Bc) : fl_cdiv(nq, Br);
}

const fl_schedule fl_sched_flash2 = {
    .name = "flash2",
    .summary = "FlashAttention-2, Algorithm 1: query-owned loop, each Q block streams K and V once",
    .flags = FL_SCHED_IN_ALL | FL_SCHED_COMPARED | FL_SCHED_DEFAULT | FL_SCHED_SAVES_LSE,
    .accepts = FLASH2_ACCEPTS,
    .blocks = blocks,
    .footprint = footprint,
    .closed_form = closed_form,
    .events_floor = fl_events_floor_tiled,
    .fwd = fl_schedule_flash2,
    .bwd = fl_schedule_flash2_bwd,
    .explain = explain,
    .explain_bwd = "rule B2b: square blocks with 4*Bc*d + 3*Br*d + 2*Br*Bc + 2*Br <= M (F2b)",
    .search = {FL_SEARCH_COLS_FREE, FL_SEARCH_ROWS_FREE},
    .closed_form_terms = closed_form_terms,
};

const fl_schedule fl_sched_flash2_gqa = {
    .name = "flash2-gqa",
    .summary = "flash2 with the query heads of a GQA group stacked in one tile: K, V loaded once per group",
    .flags = FL_SCHED_IN_ALL | FL_SCHED_STACKS_GROUP | FL_SCHED_SAVES_LSE,
    .accepts = FLASH2_ACCEPTS,
    .blocks = blocks_gqa,
    .footprint = footprint,
    .closed_form = closed_form,
    .events_floor = fl_events_floor_tiled,
    .fwd = fl_schedule_flash2,
    .bwd = fl_schedule_flash2_bwd,
    .explain_after = explain_gqa,
    .explain_bwd = "rule B2gb: Bc the largest with Br = max(1, Bc/G) and 4*Bc*d + 3*G*Br*d + 2*G*Br*Bc + 2*G*Br <= M (F2b)",
    .search = {FL_SEARCH_COLS_FREE, FL_SEARCH_ROWS_FREE},
    .closed_form_terms = closed_form_terms,
};
