/* standard_bwd.c: standard attention backward, FlashAttention paper Algorithm 3, from P
 * saved in HBM by the forward (Theta(Nd + N^2) traffic; docs/model.md eq. (C0b)).
 *
 *  1  load P, dO by blocks, compute dV = P^T dO, write dV                  (product _nn, P^T)
 *  2  load dO, V by blocks, compute dP = dO V^T, write dP to HBM           (product _nt)
 *  3  read P, dP, compute dS_ij = P_ij (dP_ij - sum_l P_il dP_il), write dS to HBM
 *  4  load dS and K by blocks, compute dQ = dS K (scaled by 1/sqrt d), write dQ
 *  5  load dS and Q by blocks, compute dK = dS^T Q (scaled), write dK
 *
 * The two products use the forward's tiling (Br, Bc, Bd) (eq. (F0)).  Step 3 works on whole
 * rows when a row of P and one of dP fit (2 Nk <= M: R = floor(M / 2Nk) rows of each per tile,
 * 2 reads + 1 write per element); otherwise in two passes over chunks of floor(M/2) (D_i, then
 * dS): 4 reads + 1 write per element (eq. (C0b.3)).  Masked entries need no rule here: P is 0
 * there, so dS is exactly 0.  With GQA (several query heads over one K/V head, one segment
 * each), steps 1 and 5 of every segment but the first of its K/V head start each output tile
 * from the value in HBM (read-modify-write, counted).
 */
#include <math.h>

#include <flashlab/ops.h>
#include "rules.h"
#include "schedules.h"

/* step 3 for the nq x nk block at row s0 */
static fl_status dsoftmax(fl_machine *m, const fl_problem *p, int P_t, int dP_t, int dS_t,
                          int64_t s0, int64_t nq, int64_t nk, fl_buf **Pp, fl_buf **Gp)
{
    const int64_t M = p->M;
    fl_buf *Pt, *Gt;
    if (2 * nk <= M) { /* whole rows fit */
        const int64_t R = fl_min64(M / (2 * nk), nq);
        FL_TRY(fl_sram_realloc(m, "P_rows", R, nk, Pp));
        FL_TRY(fl_sram_realloc(m, "dP_rows", R, nk, Gp));
        Pt = *Pp, Gt = *Gp;
        for (int64_t r0 = 0; r0 < nq; r0 += R) {
            const int64_t nr = fl_min64(R, nq - r0);
            FL_TRY(fl_load(m, Pt, P_t, s0 + r0, 0, nr, nk));
            FL_TRY(fl_load(m, Gt, dP_t, s0 + r0, 0, nr, nk));
            if (fl_computes(m))
                for (int64_t r = 0; r < nr; r++) {
                    const double *pr = Pt->x + r * nk;
                    double *g = Gt->x + r * nk, D = 0.0;
                    for (int64_t c = 0; c < nk; c++) D += pr[c] * g[c];
                    for (int64_t c = 0; c < nk; c++) g[c] = pr[c] * (g[c] - D);
                }
            FL_TRY(fl_store(m, Gt, dS_t, s0 + r0, 0, nr, nk));
        }
    } else { /* two passes over chunks of C = floor(M/2) */
        const int64_t C = M / 2;
        FL_TRY(fl_sram_realloc(m, "P_chunk", 1, C, Pp));
        FL_TRY(fl_sram_realloc(m, "dP_chunk", 1, C, Gp));
        Pt = *Pp, Gt = *Gp;
        for (int64_t r = 0; r < nq; r++) {
            double D = 0.0; /* per-row scalar (rule R3) */
            for (int64_t c0 = 0; c0 < nk; c0 += C) { /* pass 1: D_i */
                const int64_t nc = fl_min64(C, nk - c0);
                FL_TRY(fl_load(m, Pt, P_t, s0 + r, c0, 1, nc));
                FL_TRY(fl_load(m, Gt, dP_t, s0 + r, c0, 1, nc));
                if (Pt->x)
                    for (int64_t c = 0; c < nc; c++) D += Pt->x[c] * Gt->x[c];
            }
            for (int64_t c0 = 0; c0 < nk; c0 += C) { /* pass 2: dS */
                const int64_t nc = fl_min64(C, nk - c0);
                FL_TRY(fl_load(m, Pt, P_t, s0 + r, c0, 1, nc));
                FL_TRY(fl_load(m, Gt, dP_t, s0 + r, c0, 1, nc));
                if (Pt->x)
                    for (int64_t c = 0; c < nc; c++) Gt->x[c] = Pt->x[c] * (Gt->x[c] - D);
                FL_TRY(fl_store(m, Gt, dS_t, s0 + r, c0, 1, nc));
            }
        }
    }
    return FL_OK;
}

fl_status fl_schedule_standard_bwd(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io)
{
    const int64_t nk = fl_seg_max_nk(&io), d = p->d;
    const double scale = 1.0 / sqrt((double)d);
    const int P_t = fl_tensor_find(m, "P");
    int dP_t, dS_t;
    if (P_t < 0) return fl_fail(FL_EBOUNDS, "standard backward: the forward's P is not in HBM");
    FL_TRY(fl_tensor_add(m, "dP", io.q_rows, nk, p->elem_bytes, &dP_t));
    FL_TRY(fl_tensor_add(m, "dS", io.q_rows, nk, p->elem_bytes, &dS_t));
    /* step by step over all segments, each step's buffers allocated once (as in the forward) */
    fl_buf *B[3], *Pr = NULL, *Gr = NULL;
    fl_seg sg;
    FL_TRY(fl_std_bufs_alloc(m, b, B));
    for (int64_t s = 0; s < io.nseg; s++) { /* 1: dV = P^T dO */
        fl_segment_at(io.segs, s, &sg);
        FL_TRY(fl_std_product_nn(m, b, B, d, P_t, sg.q0, sg.Nq, sg.Nk, io.dO, sg.q0, io.dV, sg.k0, 1.0, 1,
                                 !sg.kv_first));
    }
    for (int64_t s = 0; s < io.nseg; s++) { /* 2: dP = dO V^T */
        fl_segment_at(io.segs, s, &sg);
        FL_TRY(fl_std_product_nt(m, b, B, d, io.dO, sg.q0, sg.Nq, io.V, sg.k0, sg.Nk, dP_t, sg.q0, 1.0, NULL));
    }
    fl_std_bufs_free(m, B);
    for (int64_t s = 0; s < io.nseg; s++) { /* 3: dS = P o (dP - D) */
        fl_segment_at(io.segs, s, &sg);
        FL_TRY(dsoftmax(m, p, P_t, dP_t, dS_t, sg.q0, sg.Nq, sg.Nk, &Pr, &Gr));
    }
    fl_sram_free(m, Pr);
    fl_sram_free(m, Gr);
    FL_TRY(fl_std_bufs_alloc(m, b, B));
    for (int64_t s = 0; s < io.nseg; s++) { /* 4: dQ = dS K / sqrt(d) */
        fl_segment_at(io.segs, s, &sg);
        FL_TRY(fl_std_product_nn(m, b, B, d, dS_t, sg.q0, sg.Nq, sg.Nk, io.K, sg.k0, io.dQ, sg.q0, scale, 0, 0));
    }
    for (int64_t s = 0; s < io.nseg; s++) { /* 5: dK = dS^T Q / sqrt(d) */
        fl_segment_at(io.segs, s, &sg);
        FL_TRY(fl_std_product_nn(m, b, B, d, dS_t, sg.q0, sg.Nq, sg.Nk, io.Q, sg.q0, io.dK, sg.k0, scale, 1,
                                 !sg.kv_first));
    }
    fl_std_bufs_free(m, B);
    return FL_OK;
}

/* ---- the closed form of this loop ---- */

/* (C0b) one segment: the five steps above (docs/model.md §backward) */
void fl_closed_standard_bwd(ck *c, const fl_problem *p, const fl_seg *s, const fl_blocks *b, fl_counts *r)
{
    const int64_t nq = s->Nq, nk = s->Nk, M = p->M, d = p->d;
    const int a = !s->kv_first;
    fl_closed_std_nn(c, b, d, nq, nk, 1, a, r); /* 1: dV = P^T dO */
    fl_closed_std_nt(c, b, d, nq, nk, r);       /* 2: dP = dO V^T */
    if (2 * nk <= M) {                /* 3: dS (C0b.3) */
        const int64_t R = fl_min64(M / (2 * nk), nq);
        fl_acc(c, &r->reads, mul(c, 2, mul(c, nq, nk)));
        fl_acc(c, &r->events, mul(c, 3, fl_cdiv(nq, R)));
        r->sram_peak = fl_max64(r->sram_peak, mul(c, 2, mul(c, R, nk)));
    } else {
        const int64_t C = M / 2;
        fl_acc(c, &r->reads, mul(c, 4, mul(c, nq, nk)));
        fl_acc(c, &r->events, mul(c, mul(c, 5, nq), fl_cdiv(nk, C)));
        r->sram_peak = fl_max64(r->sram_peak, 2 * C);
    }
    fl_acc(c, &r->writes, mul(c, nq, nk));
    fl_closed_std_nn(c, b, d, nq, nk, 0, 0, r); /* 4: dQ = dS K */
    fl_closed_std_nn(c, b, d, nq, nk, 1, a, r); /* 5: dK = dS^T Q */
}
