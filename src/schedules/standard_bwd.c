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
 *
 * The variants (docs/model.md §14): dV and dP run over d_v, dQ and dK over d; with dropout step
 * 1 reads P~ and step 3 also the mask Z the forward stored (dP = dP~ o Z / (1 - p)); with a cap
 * step 3 also reads S (the capped scores) for the cap's derivative; step 3's rows then hold k =
 * 2 + [dropout] + [cap] arrays (R = floor(M / k Nk) rows; chunks of floor(M / k)); with sinks it
 * also gives dsink = -sum_i (1 - sum_j P_ij) D_i, written per segment (read, added and written
 * back by a later sequence).  A deterministic backward changes nothing: no product accumulates
 * across thread blocks here.
 */
#include <math.h>

#include <flashlab/ops.h>
#include "rules.h"
#include "schedules.h"
#include "variants.h"

/* The rows step 3 reads per element: P and dP, the mask Z with dropout, S with a cap (the cap's
 * derivative needs the capped score, which S holds: rules DR, SC). */
static int64_t ds_arrays(const fl_var *v) { return 2 + (v->dropout > 0.0) + (v->softcap > 0.0); }

/* Compute mode, one row of step 3 from c0 on (n entries): g holds dP~ = (dO V^T) on entry; with
 * dropout it becomes dP = dP~ o Z / (1 - p) (z the row of Z), and the row's D is accumulated. */
static void ds_dp(const fl_var *v, const double *pr, double *g, const double *z, int64_t n, double *D)
{
    for (int64_t c = 0; c < n; c++) {
        if (z) g[c] = z[c] != 0.0 ? g[c] / (1.0 - v->dropout) : 0.0;
        *D += pr[c] * g[c];
    }
}

/* dS = P (dP - D), times the cap's derivative 1 - (s_c / c)^2 at the capped score (S less the
 * ALiBi bias of query i, keys c0 .. c0 + n - 1) */
static void ds_row(const fl_var *v, const fl_seg *sg, int64_t i, int64_t c0, const double *pr, double *g,
                   const double *S, int64_t n, double D)
{
    const double slope = v->alibi ? fl_alibi_slope(sg->head, v->Hq) : 0.0;
    for (int64_t c = 0; c < n; c++) {
        g[c] = pr[c] * (g[c] - D);
        if (S && pr[c] != 0.0) {
            const double t = (S[c] + slope * fabs((double)(i + sg->Nk - sg->Nq - (c0 + c)))) / v->softcap;
            g[c] *= 1.0 - t * t;
        }
    }
}

/* step 3 for the segment's Nq x Nk block: dS from P, dP (and Z, S); with sinks the segment's
 * dsink -= sum_i (1 - sum_j P_ij) D_i (the sink's probability: rule SK) into *dsink */
static fl_status dsoftmax(fl_machine *m, const fl_problem *p, const fl_var *v, const fl_seg *sg, const int t[4],
                          int dS_t, fl_buf *bf[4], double *dsink)
{
    const int64_t M = p->M, s0 = sg->q0, nq = sg->Nq, nk = sg->Nk, k = ds_arrays(v);
    static const char *const rn[4] = {"P_rows", "dP_rows", "Z_rows", "S_rows"}, *const cn[4] = {"P_chunk", "dP_chunk",
                                                                                                "Z_chunk", "S_chunk"};
    const int use[4] = {1, 1, v->dropout > 0.0, v->softcap > 0.0};
    if (k * nk <= M) { /* whole rows fit */
        const int64_t R = fl_min64(M / (k * nk), nq);
        for (int a = 0; a < 4; a++)
            if (use[a]) FL_TRY(fl_sram_realloc(m, rn[a], R, nk, &bf[a]));
        for (int64_t r0 = 0; r0 < nq; r0 += R) {
            const int64_t nr = fl_min64(R, nq - r0);
            for (int a = 0; a < 4; a++)
                if (use[a]) FL_TRY(fl_load(m, bf[a], t[a], s0 + r0, 0, nr, nk));
            if (fl_computes(m))
                for (int64_t r = 0; r < nr; r++) {
                    const double *pr = bf[0]->x + r * nk;
                    double *g = bf[1]->x + r * nk, D = 0.0, psum = 0.0;
                    ds_dp(v, pr, g, use[2] ? bf[2]->x + r * nk : NULL, nk, &D);
                    for (int64_t c = 0; c < nk; c++) psum += pr[c];
                    if (v->sinks) *dsink -= (1.0 - psum) * D;
                    ds_row(v, sg, r0 + r, 0, pr, g, use[3] ? bf[3]->x + r * nk : NULL, nk, D);
                }
            FL_TRY(fl_store(m, bf[1], dS_t, s0 + r0, 0, nr, nk));
        }
    } else { /* two passes over chunks of C = floor(M/k) */
        const int64_t C = M / k;
        for (int a = 0; a < 4; a++)
            if (use[a]) FL_TRY(fl_sram_realloc(m, cn[a], 1, C, &bf[a]));
        for (int64_t r = 0; r < nq; r++) {
            double D = 0.0, psum = 0.0; /* per-row scalars (rule R3) */
            for (int64_t c0 = 0; c0 < nk; c0 += C) { /* pass 1: D_i from P, dP (and Z) */
                const int64_t nc = fl_min64(C, nk - c0);
                for (int a = 0; a < 3; a++)
                    if (use[a]) FL_TRY(fl_load(m, bf[a], t[a], s0 + r, c0, 1, nc));
                if (bf[0]->x) {
                    ds_dp(v, bf[0]->x, bf[1]->x, use[2] ? bf[2]->x : NULL, nc, &D);
                    for (int64_t c = 0; c < nc; c++) psum += bf[0]->x[c];
                }
            }
            if (v->sinks) *dsink -= (1.0 - psum) * D;
            for (int64_t c0 = 0; c0 < nk; c0 += C) { /* pass 2: dS */
                const int64_t nc = fl_min64(C, nk - c0);
                for (int a = 0; a < 4; a++)
                    if (use[a]) FL_TRY(fl_load(m, bf[a], t[a], s0 + r, c0, 1, nc));
                if (bf[0]->x) {
                    double unused = 0.0;
                    ds_dp(v, bf[0]->x, bf[1]->x, use[2] ? bf[2]->x : NULL, nc, &unused);
                    ds_row(v, sg, r, c0, bf[0]->x, bf[1]->x, use[3] ? bf[3]->x : NULL, nc, D);
                }
                FL_TRY(fl_store(m, bf[1], dS_t, s0 + r, c0, 1, nc));
            }
        }
    }
    return FL_OK;
}

fl_status fl_schedule_standard_bwd(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io)
{
    const int64_t nk = fl_seg_max_nk(&io);
    fl_var v;
    fl_var_of(p, &v);
    const int P_t = fl_tensor_find(m, "P"), Pd_t = fl_tensor_find(m, "Pd"), Z_t = fl_tensor_find(m, "Z"),
              S_t = fl_tensor_find(m, "S");
    int dP_t, dS_t;
    if (P_t < 0 || S_t < 0 || (v.dropout > 0.0 && (Pd_t < 0 || Z_t < 0)))
        return fl_fail(FL_EBOUNDS, "standard backward: the forward's S, P (and P~, Z) are not in HBM");
    FL_TRY(fl_tensor_add(m, "dP", io.q_rows, nk, fl_problem_out_bytes(p), &dP_t));
    FL_TRY(fl_tensor_add(m, "dS", io.q_rows, nk, fl_problem_out_bytes(p), &dS_t));
    /* step by step over all segments, each step's buffers allocated once (as in the forward) */
    fl_buf *B[3], *rows[4] = {0};
    fl_seg sg;
    const int t4[4] = {P_t, dP_t, Z_t, S_t};
    FL_TRY(fl_std_bufs_alloc(m, b, B));
    for (int64_t s = 0; s < io.nseg; s++) { /* 1: dV = P^T dO (P~^T dO with dropout) */
        fl_segment_at(io.segs, s, &sg);
        FL_TRY(fl_std_product_nn(m, b, B, v.dv, Pd_t >= 0 ? Pd_t : P_t, sg.q0, sg.Nq, sg.Nk, io.dO, sg.q0, io.dV,
                                 sg.k0, 1.0, 1, !sg.kv_first, NULL));
    }
    for (int64_t s = 0; s < io.nseg; s++) { /* 2: dP = dO V^T (over d_v) */
        fl_segment_at(io.segs, s, &sg);
        FL_TRY(fl_std_product_nt(m, b, B, v.dv, io.dO, sg.q0, sg.Nq, io.V, sg.k0, sg.Nk, dP_t, sg.q0, 1.0, NULL));
    }
    fl_std_bufs_free(m, B);
    for (int64_t s = 0; s < io.nseg; s++) { /* 3: dS = P o (dP - D) (and the sinks' gradient) */
        fl_segment_at(io.segs, s, &sg);
        double dsink = 0.0, prev = 0.0;
        FL_TRY(dsoftmax(m, p, &v, &sg, t4, dS_t, rows, &dsink));
        if (v.sinks) { /* the first sequence writes a head's dsink, later ones add to it */
            if (!sg.head_first) FL_TRY(fl_load_scalar(m, io.dsink, sg.head, 0, &prev));
            FL_TRY(fl_store_scalar(m, prev + dsink, io.dsink, sg.head, 0));
        }
    }
    for (int a = 0; a < 4; a++) fl_sram_free(m, rows[a]);
    FL_TRY(fl_std_bufs_alloc(m, b, B));
    for (int64_t s = 0; s < io.nseg; s++) { /* 4: dQ = dS K / sqrt(d) */
        fl_segment_at(io.segs, s, &sg);
        FL_TRY(fl_std_product_nn(m, b, B, v.dq, dS_t, sg.q0, sg.Nq, sg.Nk, io.K, sg.k0, io.dQ, sg.q0, v.scale, 0, 0,
                                 NULL));
    }
    for (int64_t s = 0; s < io.nseg; s++) { /* 5: dK = dS^T Q / sqrt(d) */
        fl_segment_at(io.segs, s, &sg);
        FL_TRY(fl_std_product_nn(m, b, B, v.dq, dS_t, sg.q0, sg.Nq, sg.Nk, io.Q, sg.q0, io.dK, sg.k0, v.scale, 1,
                                 !sg.kv_first, NULL));
    }
    fl_std_bufs_free(m, B);
    return FL_OK;
}

/* ---- the closed form of this loop ---- */

void fl_closed_std_dsoftmax(ck *c, const fl_problem *p, int64_t nq, int64_t nk, fl_counts *r)
{
    fl_var v;
    fl_var_of(p, &v);
    const int64_t M = p->M, k = ds_arrays(&v), k1 = k - (v.softcap > 0.0); /* pass 1 reads no S */
    if (k * nk <= M) { /* (C0b.3): every array read once, dS written once */
        const int64_t R = fl_min64(M / (k * nk), nq);
        fl_acc(c, &r->reads, mul(c, k, mul(c, nq, nk)));
        fl_acc(c, &r->events, mul(c, k + 1, fl_cdiv(nq, R)));
        r->sram_peak = fl_max64(r->sram_peak, mul(c, k, mul(c, R, nk)));
    } else { /* two passes: D (P, dP, Z), then dS (all k) */
        const int64_t C = M / k;
        fl_acc(c, &r->reads, mul(c, k1 + k, mul(c, nq, nk)));
        fl_acc(c, &r->events, mul(c, mul(c, k1 + k + 1, nq), fl_cdiv(nk, C)));
        r->sram_peak = fl_max64(r->sram_peak, mul(c, k, C));
    }
    fl_acc(c, &r->writes, mul(c, nq, nk));
}

/* (C0b) one segment: the five steps above (docs/model.md §backward), dV and dP over d_v, dQ and
 * dK over d (rule D1), step 1 from P~ and step 3 with Z under dropout, S with a cap, dsink */
void fl_closed_standard_bwd(ck *c, const fl_problem *p, const fl_seg *s, const fl_blocks *b, fl_counts *r)
{
    const int64_t nq = s->Nq, nk = s->Nk, d = p->d, dv = fl_problem_dv(p);
    const int a = !s->kv_first;
    fl_closed_std_nn(c, b, dv, nq, nk, 1, a, r); /* 1: dV = P^T dO */
    fl_closed_std_nt(c, b, dv, nq, nk, r);       /* 2: dP = dO V^T */
    fl_closed_std_dsoftmax(c, p, nq, nk, r);     /* 3: dS */
    if (p->sinks) {                              /* the segment's dsink (read first by a later sequence) */
        fl_acc(c, &r->reads, !s->head_first);
        fl_acc(c, &r->writes, 1);
        fl_acc(c, &r->events, 1 + !s->head_first);
    }
    fl_closed_std_nn(c, b, d, nq, nk, 0, 0, r); /* 4: dQ = dS K */
    fl_closed_std_nn(c, b, d, nq, nk, 1, a, r); /* 5: dK = dS^T Q */
}
