/* sched_blocksparse.c: block-sparse FlashAttention (Dao et al., 2022, §3.3, Algorithm 5),
 * written on the FlashAttention-2 loop (sched_flash2.c) so that only the skipping differs:
 *
 *  for i in 1..Tr:                         load Q_i                         -> Br d reads
 *    O_i = 0, l_i = 0, m_i = -inf
 *    for j in 1..Tc with mask block (i, j) kept   (Algorithm 5, line 8: "if M_ij != 0")
 *      load K_j, V_j                                                        -> 2 Bc d reads
 *      S_ij = Q_i K_j^T / sqrt d;  online-softmax step (eq. (OS))
 *    O_i = O_i / l_i (0 for a row with no kept block, rule M0);  L_i = m_i + log l_i
 *    write O_i, L_i                        (every row block, kept blocks or not: O in full)
 *
 * A skipped block costs nothing: no K_j, V_j loads.  So the K/V traffic is 2 d times the rows
 * of the kept blocks, about s times flash2's, and the total is Theta(N d + N^2 d^2 s / M), the
 * paper's Proposition 4.  Mask: reference/blocksparse.h (rule KS).  Counts: eq. (CS).
 */
#include <math.h>

#include <flashlab/blocksparse_mask.h>
#include <flashlab/ops.h>
#include <flashlab/problem_ext.h>
#include "schedules.h"

fl_status fl_schedule_blocksparse(fl_machine *m, const fl_problem *p, const fl_blocks *b,
                                  fl_qkvo io)
{
    const int64_t N = p->N, d = p->d, Br = b->Br, Bc = b->Bc;
    const double scale = 1.0 / sqrt((double)d);
    const fl_bsmask mask = fl_bsmask_make(N, N, Br, Bc, p->density, p->mask_seed);
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

    for (int64_t i = 0, r0 = 0; r0 < N; i++, r0 += Br) {
        const int64_t br = fl_min64(Br, N - r0);
        FL_TRY(fl_load(m, Qi, io.Q, r0, 0, br, d));
        fl_op_fill(Oi, br, d, 0.0);
        fl_op_fill(li, br, 1, 0.0);
        fl_op_fill(mi, br, 1, -INFINITY);
        for (int64_t j = 0, c0 = 0; c0 < N; j++, c0 += Bc) {
            if (!fl_bsmask_block(&mask, i, j)) continue; /* Algorithm 5, line 8 */
            const int64_t bc = fl_min64(Bc, N - c0);
            FL_TRY(fl_load(m, Kj, io.K, c0, 0, bc, d));
            FL_TRY(fl_load(m, Vj, io.V, c0, 0, bc, d));
            fl_op_matmul(Sij, Qi, Kj, br, bc, d, 1, scale, 0);
            if (fl_computes(m))
                for (int64_t r = 0; r < br; r++)
                    fl_osm_step(&mi->x[r], &li->x[r], Oi->x + r * d, d, Sij->x + r * Bc, bc,
                                Vj->x, d, NULL);
        }
        if (fl_computes(m))
            for (int64_t r = 0; r < br; r++) {
                fl_osm_finish(li->x[r], Oi->x + r * d, d, Oi->x + r * d);
                mi->x[r] = li->x[r] > 0.0 ? mi->x[r] + log(li->x[r]) : -INFINITY;
            }
        FL_TRY(fl_store(m, Oi, io.O, r0, 0, br, d));
        FL_TRY(fl_store(m, mi, L_t, r0, 0, br, 1));
    }

    fl_buf *all[] = {Qi, Oi, Kj, Vj, Sij, mi, li};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) fl_sram_free(m, all[k]);
    return FL_OK;
}
