/* sched_flash2.c: FlashAttention-2 (Dao, 2023), Algorithm 1 (forward pass).
 *
 *  1-2 divide Q, O, L into Tr blocks of Br rows; K, V into Tc blocks of Bc rows
 *  3  for i in 1..Tr:
 *  4    load Q_i                                  -> Br d reads
 *  5    on chip: O_i = 0, l_i = 0, m_i = -inf
 *  6    for j in 1..Tc:
 *  7      load K_j, V_j                           -> 2 Bc d reads
 *  8      S_ij = Q_i K_j^T (scaled by 1/sqrt d)
 *  9      m_i = max(m_i, rowmax S_ij), P_ij = exp(S_ij - m_i), l_i = e^(m_old - m_i) l_i + rowsum P_ij
 * 10      O_i = diag(e^(m_old - m_i)) O_i + P_ij V_j
 * 12    O_i = diag(l_i)^-1 O_i
 * 13    L_i = m_i + log(l_i)
 * 14    write O_i                                 -> Br d writes
 * 15    write L_i                                 -> Br writes
 *
 * Lines 9-10 are one online-softmax step per row (fl_osm_step, docs/model.md eq. (OS)); the old
 * maximum and the rescale factor are per-row scalars (rule R3).  SRAM: Q_i, O_i, K_j, V_j, S_ij
 * and the row vectors m_i (which becomes L_i) and l_i: eq. (F2).  Counts: eq. (C2).
 */
#include <math.h>

#include "ops.h"
#include "schedules.h"

fl_status fl_schedule_flash2(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io)
{
    const int64_t N = p->N, d = p->d, Br = b->Br, Bc = b->Bc;
    const double scale = 1.0 / sqrt((double)d);
    int L_t;
    FL_TRY(fl_tensor_add(m, "L", N, 1, 4, &L_t));

    fl_buf *Qi, *Oi, *Kj, *Vj, *Sij, *mi, *li;
    FL_TRY(fl_sram_alloc(m, "Q_i", Br, d, &Qi));
    FL_TRY(fl_sram_alloc(m, "O_i", Br, d, &Oi));
    FL_TRY(fl_sram_alloc(m, "K_j", Bc, d, &Kj));
    FL_TRY(fl_sram_alloc(m, "V_j", Bc, d, &Vj));
    FL_TRY(fl_sram_alloc(m, "S_ij", Br, Bc, &Sij));
    FL_TRY(fl_sram_alloc(m, "m_i", Br, 1, &mi));
    FL_TRY(fl_sram_alloc(m, "l_i", Br, 1, &li));

    for (int64_t r0 = 0; r0 < N; r0 += Br) { /* line 3 */
        const int64_t br = fl_min64(Br, N - r0);
        FL_TRY(fl_load(m, Qi, io.Q, r0, 0, br, d)); /* line 4 */
        fl_op_fill(Oi, br, d, 0.0);                  /* line 5 */
        fl_op_fill(li, br, 1, 0.0);
        fl_op_fill(mi, br, 1, -INFINITY);
        for (int64_t c0 = 0; c0 < N; c0 += Bc) { /* line 6 */
            const int64_t bc = fl_min64(Bc, N - c0);
            FL_TRY(fl_load(m, Kj, io.K, c0, 0, bc, d)); /* line 7 */
            FL_TRY(fl_load(m, Vj, io.V, c0, 0, bc, d));
            fl_op_matmul(Sij, Qi, Kj, br, bc, d, 1, scale, 0); /* line 8 */
            if (fl_computes(m))
                for (int64_t r = 0; r < br; r++) /* lines 9-10 */
                    fl_osm_step(&mi->x[r], &li->x[r], Oi->x + r * d, d, Sij->x + r * Bc, bc,
                                Vj->x, d, Sij->x + r * Bc);
        }
        if (fl_computes(m))
            for (int64_t r = 0; r < br; r++) {
                fl_osm_finish(li->x[r], Oi->x + r * d, d, Oi->x + r * d); /* line 12 */
                mi->x[r] = li->x[r] > 0.0 ? mi->x[r] + log(li->x[r]) : -INFINITY; /* line 13 */
            }
        FL_TRY(fl_store(m, Oi, io.O, r0, 0, br, d)); /* line 14 */
        FL_TRY(fl_store(m, mi, L_t, r0, 0, br, 1));  /* line 15 */
    }

    fl_buf *all[] = {Qi, Oi, Kj, Vj, Sij, mi, li};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) fl_sram_free(m, all[k]);
    return FL_OK;
}
