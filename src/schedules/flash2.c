/* sched_flash2.c: FlashAttention-2 (Dao, 2023), Algorithm 1 (forward pass), per segment.
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

#include <flashlab/ops.h>
#include "schedules.h"

static fl_status segment(fl_machine *m, const fl_blocks *b, const fl_qkvo *io, const fl_seg *sg,
                         int L_t, fl_buf *Qi, fl_buf *Oi, fl_buf *Kj, fl_buf *Vj, fl_buf *Sij,
                         fl_buf *mi, fl_buf *li, double scale, int64_t d)
{
    const int64_t Br = b->Br, Bc = b->Bc, G = sg->group;
    for (int64_t r0 = 0; r0 < sg->Nq; r0 += Br) { /* line 3 */
        const int64_t br = fl_min64(Br, sg->Nq - r0), rows = G * br;
        int64_t j0, j1;
        fl_mask_block_range(&sg->mask, r0, br, Bc, &j0, &j1);
        if (j0 < j1)
            for (int64_t g = 0; g < G; g++) { /* line 4 */
                fl_buf v = fl_buf_rows(Qi, g * br);
                FL_TRY(fl_load(m, g ? &v : Qi, io->Q, sg->q0 + g * sg->qstride + r0, 0, br, d));
            }
        fl_op_fill(Oi, rows, d, 0.0); /* line 5 */
        fl_op_fill(li, rows, 1, 0.0);
        fl_op_fill(mi, rows, 1, -INFINITY);
        for (int64_t j = j0; j < j1; j++) { /* line 6 */
            const int64_t c0 = j * Bc, bc = fl_min64(Bc, sg->Nk - c0);
            FL_TRY(fl_load(m, Kj, io->K, sg->k0 + c0, 0, bc, d)); /* line 7 */
            FL_TRY(fl_load(m, Vj, io->V, sg->k0 + c0, 0, bc, d));
            fl_op_matmul(Sij, Qi, Kj, rows, bc, d, 1, scale, 0); /* line 8 */
            if (fl_mask_tile(&sg->mask, r0, br, c0, bc) == FL_TILE_PARTIAL)
                fl_tile_mask(Sij, &sg->mask, r0, br, rows, c0, bc);
            if (fl_computes(m))
                for (int64_t r = 0; r < rows; r++) /* lines 9-10 */
                    fl_osm_step(&mi->x[r], &li->x[r], Oi->x + r * d, d, Sij->x + r * Bc, bc,
                                Vj->x, d, Sij->x + r * Bc);
        }
        if (fl_computes(m))
            for (int64_t r = 0; r < rows; r++) {
                fl_osm_finish(li->x[r], Oi->x + r * d, d, Oi->x + r * d); /* line 12 */
                mi->x[r] = li->x[r] > 0.0 ? mi->x[r] + log(li->x[r]) : -INFINITY; /* line 13 */
            }
        for (int64_t g = 0; g < G; g++) {
            const fl_buf o = fl_buf_rows(Oi, g * br), l = fl_buf_rows(mi, g * br);
            FL_TRY(fl_store(m, g ? &o : Oi, io->O, sg->q0 + g * sg->qstride + r0, 0, br, d)); /* line 14 */
            FL_TRY(fl_store(m, g ? &l : mi, L_t, sg->q0 + g * sg->qstride + r0, 0, br, 1));   /* line 15 */
        }
    }
    return FL_OK;
}

fl_status fl_schedule_flash2(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io)
{
    const int64_t d = p->d, Br = b->Br, Bc = b->Bc, G = fl_seg_max_group(&io);
    const double scale = 1.0 / sqrt((double)d);
    int L_t;
    FL_TRY(fl_tensor_add(m, "L", io.q_rows, 1, 4, &L_t));

    fl_buf *Qi, *Oi, *Kj, *Vj, *Sij, *mi, *li;
    FL_TRY(fl_sram_alloc(m, "Q_i", G * Br, d, &Qi));
    FL_TRY(fl_sram_alloc(m, "O_i", G * Br, d, &Oi));
    FL_TRY(fl_sram_alloc(m, "K_j", Bc, d, &Kj));
    FL_TRY(fl_sram_alloc(m, "V_j", Bc, d, &Vj));
    FL_TRY(fl_sram_alloc(m, "S_ij", G * Br, Bc, &Sij));
    FL_TRY(fl_sram_alloc(m, "m_i", G * Br, 1, &mi));
    FL_TRY(fl_sram_alloc(m, "l_i", G * Br, 1, &li));

    for (int64_t s = 0; s < io.nseg; s++) {
        fl_seg sg;
        fl_segment_at(io.segs, s, &sg);
        FL_TRY(segment(m, b, &io, &sg, L_t, Qi, Oi, Kj, Vj, Sij, mi, li, scale, d));
    }

    fl_buf *all[] = {Qi, Oi, Kj, Vj, Sij, mi, li};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) fl_sram_free(m, all[k]);
    return FL_OK;
}
