/* sched_softmax.c: softmax alone, row by row over an N x Nk matrix X (Milakov & Gimelshein,
 * "Online normalizer calculation for softmax", 2018).  Each pass re-reads X, as the paper's
 * algorithms do: a pass keeps nothing of X on chip for the next one.
 *
 * softmax-safe (their Algorithm 2, 3 passes):          softmax-online (their Algorithm 3):
 *  1 m = -inf; for j: m = max(m, x_j)     load x         1 m = -inf, l = 0; for j:
 *  2 l = 0;    for j: l += e^(x_j - m)    load x             m' = max(m, x_j),
 *  3 for j: y_j = e^(x_j - m) / l         load x, store y    l = l e^(m - m') + e^(x_j - m')  load x
 *                                                         2 for j: y_j = e^(x_j - m) / l   load x, store y
 *
 * so per element: 3 reads + 1 write (safe) against 2 reads + 1 write (online): the paper's
 * "4 memory accesses per element vs 3".  Tiles are Br rows x Bc columns of X; the output tile
 * overwrites the input tile on chip.  SRAM: the tile and m, l per row, eq. (FX).  Counts: (CX).
 * The caller adds X (N x Nk) as io.Q and Y (N x Nk) as io.O; io.K and io.V are unused.
 */
#include <math.h>

#include <flashlab/ops.h>
#include <flashlab/problem_ext.h>
#include "schedules.h"

static fl_status softmax(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io,
                         int online)
{
    const int64_t N = p->N, Nk = fl_ext_Nk(p), Br = b->Br, Bc = b->Bc;
    fl_buf *X, *mx, *l;
    FL_TRY(fl_sram_alloc(m, "X_ij", Br, Bc, &X));
    FL_TRY(fl_sram_alloc(m, "m_i", Br, 1, &mx));
    FL_TRY(fl_sram_alloc(m, "l_i", Br, 1, &l));
    const int cmp = fl_computes(m);
    for (int64_t r0 = 0; r0 < N; r0 += Br) {
        const int64_t br = fl_min64(Br, N - r0);
        fl_op_fill(mx, br, 1, -INFINITY);
        fl_op_fill(l, br, 1, 0.0);
        for (int pass = online ? 1 : 0; pass < 2; pass++) /* safe: max pass, then sum pass */
            for (int64_t c0 = 0; c0 < Nk; c0 += Bc) {
                const int64_t bc = fl_min64(Bc, Nk - c0);
                FL_TRY(fl_load(m, X, io.Q, r0, c0, br, bc));
                if (!cmp) continue;
                for (int64_t r = 0; r < br; r++) {
                    const double *x = X->x + r * Bc;
                    double *mr = &mx->x[r], *lr = &l->x[r];
                    for (int64_t j = 0; j < bc; j++) {
                        if (online) { /* Algorithm 3, line 4-5 */
                            const double mn = fmax(*mr, x[j]);
                            *lr = *lr * exp(*mr - mn) + exp(x[j] - mn);
                            *mr = mn;
                        } else if (pass == 0) {
                            *mr = fmax(*mr, x[j]);
                        } else {
                            *lr += exp(x[j] - *mr);
                        }
                    }
                }
            }
        for (int64_t c0 = 0; c0 < Nk; c0 += Bc) { /* the output pass */
            const int64_t bc = fl_min64(Bc, Nk - c0);
            FL_TRY(fl_load(m, X, io.Q, r0, c0, br, bc));
            if (cmp)
                for (int64_t r = 0; r < br; r++)
                    for (int64_t j = 0; j < bc; j++)
                        X->x[r * Bc + j] = exp(X->x[r * Bc + j] - mx->x[r]) / l->x[r];
            FL_TRY(fl_store(m, X, io.O, r0, c0, br, bc));
        }
    }
    fl_sram_free(m, X);
    fl_sram_free(m, mx);
    fl_sram_free(m, l);
    return FL_OK;
}

fl_status fl_schedule_softmax_safe(fl_machine *m, const fl_problem *p, const fl_blocks *b,
                                   fl_qkvo io)
{
    return softmax(m, p, b, io, 0);
}

fl_status fl_schedule_softmax_online(fl_machine *m, const fl_problem *p, const fl_blocks *b,
                                     fl_qkvo io)
{
    return softmax(m, p, b, io, 1);
}
