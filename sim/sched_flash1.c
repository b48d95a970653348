/* sched_flash1.c: FlashAttention (Dao et al., 2022), Algorithm 1, literally.
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
 */
#include <math.h>

#include "ops.h"
#include "schedules.h"

fl_status fl_schedule_flash1(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io)
{
    const int64_t N = p->N, d = p->d, Br = b->Br, Bc = b->Bc;
    const double scale = 1.0 / sqrt((double)d);
    int l_t, m_t;
    FL_TRY(fl_tensor_add(m, "l", N, 1, 4, &l_t));
    FL_TRY(fl_tensor_add(m, "m", N, 1, 4, &m_t));

    fl_buf *Kj, *Vj, *Qi, *Oi, *li, *mi, *Sij, *mt, *lt, *mnew, *lnew;
    FL_TRY(fl_sram_alloc(m, "K_j", Bc, d, &Kj));
    FL_TRY(fl_sram_alloc(m, "V_j", Bc, d, &Vj));
    FL_TRY(fl_sram_alloc(m, "Q_i", Br, d, &Qi));
    FL_TRY(fl_sram_alloc(m, "O_i", Br, d, &Oi));
    FL_TRY(fl_sram_alloc(m, "l_i", Br, 1, &li));
    FL_TRY(fl_sram_alloc(m, "m_i", Br, 1, &mi));
    FL_TRY(fl_sram_alloc(m, "S_ij", Br, Bc, &Sij));
    FL_TRY(fl_sram_alloc(m, "mt_ij", Br, 1, &mt));
    FL_TRY(fl_sram_alloc(m, "lt_ij", Br, 1, &lt));
    FL_TRY(fl_sram_alloc(m, "mnew_i", Br, 1, &mnew));
    FL_TRY(fl_sram_alloc(m, "lnew_i", Br, 1, &lnew));

    /* line 2: O = 0, l = 0, m = -inf in HBM, written block by block from SRAM */
    fl_op_fill(Oi, Br, d, 0.0);
    fl_op_fill(li, Br, 1, 0.0);
    fl_op_fill(mi, Br, 1, -INFINITY);
    for (int64_t r0 = 0; r0 < N; r0 += Br) {
        const int64_t br = fl_min64(Br, N - r0);
        FL_TRY(fl_store(m, Oi, io.O, r0, 0, br, d));
        FL_TRY(fl_store(m, li, l_t, r0, 0, br, 1));
        FL_TRY(fl_store(m, mi, m_t, r0, 0, br, 1));
    }

    for (int64_t c0 = 0; c0 < N; c0 += Bc) { /* line 5 */
        const int64_t bc = fl_min64(Bc, N - c0);
        FL_TRY(fl_load(m, Kj, io.K, c0, 0, bc, d)); /* line 6 */
        FL_TRY(fl_load(m, Vj, io.V, c0, 0, bc, d));
        for (int64_t r0 = 0; r0 < N; r0 += Br) { /* line 7 */
            const int64_t br = fl_min64(Br, N - r0);
            FL_TRY(fl_load(m, Qi, io.Q, r0, 0, br, d)); /* line 8 */
            FL_TRY(fl_load(m, Oi, io.O, r0, 0, br, d));
            FL_TRY(fl_load(m, li, l_t, r0, 0, br, 1));
            FL_TRY(fl_load(m, mi, m_t, r0, 0, br, 1));
            fl_op_matmul(Sij, Qi, Kj, br, bc, d, 1, scale, 0); /* line 9 */
            if (fl_computes(m)) {
                for (int64_t r = 0; r < br; r++) {
                    double *s = Sij->x + r * Bc;
                    /* line 10 */
                    double rowmax = -INFINITY, rowsum = 0.0;
                    for (int64_t c = 0; c < bc; c++) rowmax = fmax(rowmax, s[c]);
                    for (int64_t c = 0; c < bc; c++) rowsum += (s[c] = exp(s[c] - rowmax));
                    mt->x[r] = rowmax;
                    lt->x[r] = rowsum;
                    /* line 11 */
                    mnew->x[r] = fmax(mi->x[r], mt->x[r]);
                    lnew->x[r] = exp(mi->x[r] - mnew->x[r]) * li->x[r] +
                                 exp(mt->x[r] - mnew->x[r]) * lt->x[r];
                    /* line 12, in place: each O element from its old value and one dot product */
                    const double a = li->x[r] * exp(mi->x[r] - mnew->x[r]) / lnew->x[r];
                    const double e = exp(mt->x[r] - mnew->x[r]) / lnew->x[r];
                    double *o = Oi->x + r * d;
                    for (int64_t k = 0; k < d; k++) {
                        double pv = 0.0;
                        for (int64_t c = 0; c < bc; c++) pv += s[c] * Vj->x[c * d + k];
                        o[k] = a * o[k] + e * pv;
                    }
                    /* line 13 */
                    li->x[r] = lnew->x[r];
                    mi->x[r] = mnew->x[r];
                }
            }
            FL_TRY(fl_store(m, Oi, io.O, r0, 0, br, d)); /* line 12 */
            FL_TRY(fl_store(m, li, l_t, r0, 0, br, 1));  /* line 13 */
            FL_TRY(fl_store(m, mi, m_t, r0, 0, br, 1));
        }
    }

    fl_buf *all[] = {Kj, Vj, Qi, Oi, li, mi, Sij, mt, lt, mnew, lnew};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) fl_sram_free(m, all[k]);
    return FL_OK;
}
