/* sched_memeff.c: memory-efficient attention (Rabe & Staats, "Self-attention does not need
 * O(n^2) memory", 2021, their Figure 1 / JAX code), on the machine.  Queries in chunks of
 * Br rows (query_chunk_size), keys in chunks of Bc rows (key_chunk_size):
 *
 *  for each query chunk i:                                          load Q_i
 *    for each key chunk j (summarize_chunk):                        load K_j, V_j
 *      s = Q_i K_j^T / sqrt d;  m_j = rowmax s;  e = exp(s - m_j)
 *      u_j = e V_j;  l_j = rowsum e                                 store u_j, l_j, m_j
 *    (the per-chunk summaries are stacked in memory by lax.map: here, HBM tensors U, Ls, Ms)
 *    g = max_j m_j                                                  load m_j   (every j)
 *    O_i = sum_j e^(m_j - g) u_j / sum_j e^(m_j - g) l_j            load m_j, l_j, u_j
 *                                                                   store O_i
 *
 * Unlike FlashAttention, the summaries are not folded on chip as they are made (no online
 * rescaling): they go to memory and are combined after the key loop, which costs
 * N Tc (d + 2) writes and N Tc (d + 3) reads more than flash2 (eq. (CM)).  SRAM: Q_i, u_j,
 * K_j, V_j, S_ij, m_j, l_j -- eq. (F2) -- and, for the combination, O_i, g_i, l_i: eq. (FM).
 * Rows with no kept key cannot occur (no masks).  Rabe-Staats return no logsumexp: only O.
 */
#include <math.h>

#include <flashlab/ops.h>
#include <flashlab/problem_ext.h>
#include "schedules.h"

fl_status fl_schedule_memeff(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io)
{
    const int64_t N = p->N, d = p->d, Br = b->Br, Bc = b->Bc, Tc = fl_cdiv(N, Bc);
    const double scale = 1.0 / sqrt((double)d);
    const int cmp = fl_computes(m);
    int U_t, L_t, M_t;
    FL_TRY(fl_tensor_add(m, "U", Tc * N, d, 4, &U_t)); /* summaries, fp32: row j*N + query */
    FL_TRY(fl_tensor_add(m, "Ls", Tc * N, 1, 4, &L_t));
    FL_TRY(fl_tensor_add(m, "Ms", Tc * N, 1, 4, &M_t));

    fl_buf *Qi, *Uj, *Kj, *Vj, *Sij, *mj, *lj, *Oi, *g, *lsum;
    FL_TRY(fl_sram_alloc(m, "Q_i", Br, d, &Qi));
    FL_TRY(fl_sram_alloc(m, "u_j", Br, d, &Uj));
    FL_TRY(fl_sram_alloc(m, "K_j", Bc, d, &Kj));
    FL_TRY(fl_sram_alloc(m, "V_j", Bc, d, &Vj));
    FL_TRY(fl_sram_alloc(m, "S_ij", Br, Bc, &Sij));
    FL_TRY(fl_sram_alloc(m, "m_j", Br, 1, &mj));
    FL_TRY(fl_sram_alloc(m, "l_j", Br, 1, &lj));
    FL_TRY(fl_sram_alloc(m, "O_i", Br, d, &Oi)); /* the combination */
    FL_TRY(fl_sram_alloc(m, "g_i", Br, 1, &g));
    FL_TRY(fl_sram_alloc(m, "l_i", Br, 1, &lsum));

    for (int64_t r0 = 0; r0 < N; r0 += Br) {
        const int64_t br = fl_min64(Br, N - r0);
        FL_TRY(fl_load(m, Qi, io.Q, r0, 0, br, d));
        for (int64_t j = 0, c0 = 0; c0 < N; j++, c0 += Bc) { /* summarize_chunk */
            const int64_t bc = fl_min64(Bc, N - c0);
            FL_TRY(fl_load(m, Kj, io.K, c0, 0, bc, d));
            FL_TRY(fl_load(m, Vj, io.V, c0, 0, bc, d));
            fl_op_matmul(Sij, Qi, Kj, br, bc, d, 1, scale, 0);
            if (cmp)
                for (int64_t r = 0; r < br; r++) { /* a fresh state per chunk: m_j, l_j, u_j */
                    mj->x[r] = -INFINITY;
                    lj->x[r] = 0.0;
                    for (int64_t c = 0; c < d; c++) Uj->x[r * d + c] = 0.0;
                    fl_osm_step(&mj->x[r], &lj->x[r], Uj->x + r * d, d, Sij->x + r * Bc, bc,
                                Vj->x, d, NULL);
                }
            FL_TRY(fl_store(m, Uj, U_t, j * N + r0, 0, br, d));
            FL_TRY(fl_store(m, lj, L_t, j * N + r0, 0, br, 1));
            FL_TRY(fl_store(m, mj, M_t, j * N + r0, 0, br, 1));
        }
        /* combine: global max over the chunks' maxima, then the rescaled sums; the chunk's
         * summary is loaded back into u_j, m_j, l_j */
        fl_op_fill(g, br, 1, -INFINITY);
        fl_op_fill(lsum, br, 1, 0.0);
        fl_op_fill(Oi, br, d, 0.0);
        for (int64_t j = 0; j < Tc; j++) { /* global_max = max(chunk_max) */
            FL_TRY(fl_load(m, mj, M_t, j * N + r0, 0, br, 1));
            if (cmp)
                for (int64_t r = 0; r < br; r++) g->x[r] = fmax(g->x[r], mj->x[r]);
        }
        for (int64_t j = 0; j < Tc; j++) { /* max_diffs = exp(chunk_max - global_max); sums */
            FL_TRY(fl_load(m, mj, M_t, j * N + r0, 0, br, 1));
            FL_TRY(fl_load(m, lj, L_t, j * N + r0, 0, br, 1));
            FL_TRY(fl_load(m, Uj, U_t, j * N + r0, 0, br, d));
            if (cmp)
                for (int64_t r = 0; r < br; r++) {
                    const double w = exp(mj->x[r] - g->x[r]);
                    lsum->x[r] += w * lj->x[r];
                    for (int64_t c = 0; c < d; c++) Oi->x[r * d + c] += w * Uj->x[r * d + c];
                }
        }
        if (cmp)
            for (int64_t r = 0; r < br; r++) fl_osm_finish(lsum->x[r], Oi->x + r * d, d, Oi->x + r * d);
        FL_TRY(fl_store(m, Oi, io.O, r0, 0, br, d));
    }
    fl_buf *all[] = {Qi, Uj, Kj, Vj, Sij, mj, lj, Oi, g, lsum};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) fl_sram_free(m, all[k]);
    return FL_OK;
}
