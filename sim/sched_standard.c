/* sched_standard.c: standard attention, FlashAttention paper Algorithm 0, run honestly under M.
 *
 *  1  load Q, K by blocks, compute S = QK^T, write S to HBM
 *  2  read S, compute P = softmax(S), write P to HBM
 *  3  load P and V by blocks, compute O = PV, write O to HBM
 *
 * The paper's algorithm does not say how its blocks fit in SRAM; here they must.  Both matrix
 * products use one tiling (Br, Bc, Bd): an output tile of Br rows, Bc keys, and a chunk of Bd of
 * the d columns (eq. (F0): Br*Bd + Bc*Bd + Br*Bc <= M; rule (B0) picks them).
 *
 *  step 1: for each row block i: for each key block j: for each d-chunk k: load Q[i,k] (once
 *          per i when Bd = d), load K[j,k], accumulate; write S_ij            eq. (C0.1)
 *  step 2: a row of S fits when N <= M: load R = floor(M/N) whole rows, softmax in place, write
 *          P.  Otherwise the classic safe softmax in chunks of M: one pass for the row max, one
 *          for the sum of exponentials, one to normalise and write: 3 reads, 1 write. (C0.2-3)
 *  step 3: for each row block i: for each d-chunk c: O tile = 0; for each key block j: load
 *          P[i,j], load V[j,c], accumulate; write the O tile                   eq. (C0.4)
 *
 * Where the count is Theta(Nd + N^2) (docs/model.md §5): when Bd = d (M >= 3d^2 by rule B0), Br is
 * at least d and N <= M; then K and V are re-read N/Br <= N/d times (<= N^2 reads each) and S, P
 * cross HBM a fixed number of times.  Below that, chunked d (Td > 1) re-reads P, small Br
 * re-reads K and V, and long rows triple softmax reads: the count grows past c*(Nd + N^2).
 */
#include <math.h>

#include "ops.h"
#include "schedules.h"

/* step 1: S = QK^T / sqrt(d) */
static fl_status scores(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io, int S_t)
{
    const int64_t N = p->N, d = p->d, Br = b->Br, Bc = b->Bc, Bd = b->Bd;
    const int64_t Td = fl_cdiv(d, Bd);
    const double scale = 1.0 / sqrt((double)d);
    fl_buf *Qt, *Kt, *St;
    FL_TRY(fl_sram_alloc(m, "Q_ik", Br, Bd, &Qt));
    FL_TRY(fl_sram_alloc(m, "K_jk", Bc, Bd, &Kt));
    FL_TRY(fl_sram_alloc(m, "S_ij", Br, Bc, &St));
    for (int64_t r0 = 0; r0 < N; r0 += Br) {
        const int64_t br = fl_min64(Br, N - r0);
        if (Td == 1) FL_TRY(fl_load(m, Qt, io.Q, r0, 0, br, d)); /* Q_i stays for every j */
        for (int64_t c0 = 0; c0 < N; c0 += Bc) {
            const int64_t bc = fl_min64(Bc, N - c0);
            for (int64_t k0 = 0; k0 < d; k0 += Bd) {
                const int64_t bk = fl_min64(Bd, d - k0);
                if (Td > 1) FL_TRY(fl_load(m, Qt, io.Q, r0, k0, br, bk));
                FL_TRY(fl_load(m, Kt, io.K, c0, k0, bc, bk));
                fl_op_matmul(St, Qt, Kt, br, bc, bk, 1, scale, k0 > 0);
            }
            FL_TRY(fl_store(m, St, S_t, r0, c0, br, bc));
        }
    }
    fl_sram_free(m, Qt);
    fl_sram_free(m, Kt);
    fl_sram_free(m, St);
    return FL_OK;
}

/* step 2: P = softmax(S), row by row */
static fl_status softmax(fl_machine *m, const fl_problem *p, int S_t, int P_t)
{
    const int64_t N = p->N, M = p->M;
    fl_buf *t;
    if (N <= M) { /* whole rows fit: R rows per tile, one read and one write per element */
        const int64_t R = fl_min64(M / N, N);
        FL_TRY(fl_sram_alloc(m, "S_rows", R, N, &t));
        for (int64_t r0 = 0; r0 < N; r0 += R) {
            const int64_t nr = fl_min64(R, N - r0);
            FL_TRY(fl_load(m, t, S_t, r0, 0, nr, N));
            if (fl_computes(m))
                for (int64_t r = 0; r < nr; r++) {
                    double *s = t->x + r * N, mx = -INFINITY, sum = 0.0;
                    for (int64_t c = 0; c < N; c++) mx = fmax(mx, s[c]);
                    for (int64_t c = 0; c < N; c++) sum += (s[c] = exp(s[c] - mx));
                    for (int64_t c = 0; c < N; c++) s[c] /= sum;
                }
            FL_TRY(fl_store(m, t, P_t, r0, 0, nr, N));
        }
    } else { /* a row does not fit: safe softmax in three passes over chunks of M */
        FL_TRY(fl_sram_alloc(m, "S_chunk", 1, M, &t));
        for (int64_t r = 0; r < N; r++) {
            double mx = -INFINITY, sum = 0.0; /* per-row scalars (rule R3) */
            for (int64_t c0 = 0; c0 < N; c0 += M) { /* pass 1: max */
                const int64_t nc = fl_min64(M, N - c0);
                FL_TRY(fl_load(m, t, S_t, r, c0, 1, nc));
                if (t->x)
                    for (int64_t c = 0; c < nc; c++) mx = fmax(mx, t->x[c]);
            }
            for (int64_t c0 = 0; c0 < N; c0 += M) { /* pass 2: sum of exponentials */
                const int64_t nc = fl_min64(M, N - c0);
                FL_TRY(fl_load(m, t, S_t, r, c0, 1, nc));
                if (t->x)
                    for (int64_t c = 0; c < nc; c++) sum += exp(t->x[c] - mx);
            }
            for (int64_t c0 = 0; c0 < N; c0 += M) { /* pass 3: normalise and write P */
                const int64_t nc = fl_min64(M, N - c0);
                FL_TRY(fl_load(m, t, S_t, r, c0, 1, nc));
                if (t->x)
                    for (int64_t c = 0; c < nc; c++) t->x[c] = exp(t->x[c] - mx) / sum;
                FL_TRY(fl_store(m, t, P_t, r, c0, 1, nc));
            }
        }
    }
    fl_sram_free(m, t);
    return FL_OK;
}

/* step 3: O = PV */
static fl_status output(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io, int P_t)
{
    const int64_t N = p->N, d = p->d, Br = b->Br, Bc = b->Bc, Bd = b->Bd;
    fl_buf *Pt, *Vt, *Ot;
    FL_TRY(fl_sram_alloc(m, "P_ij", Br, Bc, &Pt));
    FL_TRY(fl_sram_alloc(m, "V_jk", Bc, Bd, &Vt));
    FL_TRY(fl_sram_alloc(m, "O_ik", Br, Bd, &Ot));
    for (int64_t r0 = 0; r0 < N; r0 += Br) {
        const int64_t br = fl_min64(Br, N - r0);
        for (int64_t k0 = 0; k0 < d; k0 += Bd) {
            const int64_t bk = fl_min64(Bd, d - k0);
            fl_op_fill(Ot, br, bk, 0.0);
            for (int64_t c0 = 0; c0 < N; c0 += Bc) {
                const int64_t bc = fl_min64(Bc, N - c0);
                FL_TRY(fl_load(m, Pt, P_t, r0, c0, br, bc));
                FL_TRY(fl_load(m, Vt, io.V, c0, k0, bc, bk));
                fl_op_matmul(Ot, Pt, Vt, br, bk, bc, 0, 1.0, 1);
            }
            FL_TRY(fl_store(m, Ot, io.O, r0, k0, br, bk));
        }
    }
    fl_sram_free(m, Pt);
    fl_sram_free(m, Vt);
    fl_sram_free(m, Ot);
    return FL_OK;
}

fl_status fl_schedule_standard(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io)
{
    int S_t, P_t;
    FL_TRY(fl_tensor_add(m, "S", p->N, p->N, p->elem_bytes, &S_t));
    FL_TRY(fl_tensor_add(m, "P", p->N, p->N, p->elem_bytes, &P_t));
    FL_TRY(scores(m, p, b, io, S_t));
    FL_TRY(softmax(m, p, S_t, P_t));
    return output(m, p, b, io, P_t);
}
