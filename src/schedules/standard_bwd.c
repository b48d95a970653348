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
 * dS): 4 reads + 1 write per element (eq. (C0b.3)).  With GQA (several query heads over one K/V
 * head, one segment each), steps 1 and 5 of every segment but the first of its K/V head start each output tile
 * from the value in HBM (read-modify-write, counted).
 *
 * The variants (docs/model.md §14): dV and dP run over d_v, dQ and dK over d; with dropout step
 * 1 reads P~ and step 3 also the mask Z the forward stored (dP = dP~ o Z / (1 - p)); with a cap
 * step 3 also reads S (the capped scores) for the cap's derivative; step 3's rows then hold k =
 * 2 + [dropout] + [cap] arrays (R = floor(M / k Nk) rows; chunks of floor(M / k)); with sinks it
 * also gives dsink = -sum_i (1 - sum_j P_ij) D_i, written per segment (read, added and written
 * back by a later sequence).  A deterministic backward changes nothing: no product accumulates
 * across thread blocks here.
 *
 * Masks (docs/model.md (C0bm)): P is 0 wherever the mask drops an entry, so dV, dQ, dK get
 * nothing from there and dS is 0 there: the backward skips what the mask drops.  Steps 1, 4, 5
 * read only the P and dS tiles the mask keeps (rule K2; a kept tile's dropped entries are zeroed
 * on chip), step 2 computes and writes only the kept tiles of dP, and step 3 reads, per row, only
 * the keys it keeps, [lo_i, hi_i] (one load of each row, or its chunks from lo_i); dS outside
 * that range is never written and never used.  A dense problem runs as before.
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

/* dS = P o (dP - D) on the nr x nc block at row s0, column c0, on chip (Pt, Gt hold P, dP) */
static void dsoftmax_rows(const fl_buf *Pt, fl_buf *Gt, int64_t nr, int64_t nc)
{
    if (!Pt->x) return;
    for (int64_t r = 0; r < nr; r++) {
        const double *pr = Pt->x + r * Pt->cols;
        double *g = Gt->x + r * Gt->cols, D = 0.0;
        for (int64_t c = 0; c < nc; c++) D += pr[c] * g[c];
        for (int64_t c = 0; c < nc; c++) g[c] = pr[c] * (g[c] - D);
    }
}

/* step 3 of standard-skip (no variants) for the nq x nk block at row s0; with a mask that drops
 * entries (mk), row i only over the keys it keeps, [lo_i, hi_i] (C0bm.3) */
static fl_status dsoftmax_kept(fl_machine *m, const fl_problem *p, int P_t, int dP_t, int dS_t,
                          int64_t s0, int64_t nq, int64_t nk, const fl_mask *mk, fl_buf **Pp, fl_buf **Gp)
{
    const int64_t M = p->M;
    fl_buf *Pt, *Gt;
    if (2 * nk <= M) { /* whole rows fit */
        const int64_t R = fl_min64(M / (2 * nk), nq);
        FL_TRY(fl_sram_realloc(m, "P_rows", R, nk, Pp));
        FL_TRY(fl_sram_realloc(m, "dP_rows", R, nk, Gp));
        Pt = *Pp, Gt = *Gp;
        for (int64_t r = 0; mk && r < nq; r++) { /* one row at a time, its kept keys only */
            int64_t lo, hi;
            fl_mask_row_range(mk, r, &lo, &hi);
            if (lo > hi) continue;
            FL_TRY(fl_load(m, Pt, P_t, s0 + r, lo, 1, hi - lo + 1));
            FL_TRY(fl_load(m, Gt, dP_t, s0 + r, lo, 1, hi - lo + 1));
            dsoftmax_rows(Pt, Gt, 1, hi - lo + 1);
            FL_TRY(fl_store(m, Gt, dS_t, s0 + r, lo, 1, hi - lo + 1));
        }
        for (int64_t r0 = 0; !mk && r0 < nq; r0 += R) {
            const int64_t nr = fl_min64(R, nq - r0);
            FL_TRY(fl_load(m, Pt, P_t, s0 + r0, 0, nr, nk));
            FL_TRY(fl_load(m, Gt, dP_t, s0 + r0, 0, nr, nk));
            dsoftmax_rows(Pt, Gt, nr, nk);
            FL_TRY(fl_store(m, Gt, dS_t, s0 + r0, 0, nr, nk));
        }
    } else { /* two passes over chunks of C = floor(M/2) */
        const int64_t C = M / 2;
        FL_TRY(fl_sram_realloc(m, "P_chunk", 1, C, Pp));
        FL_TRY(fl_sram_realloc(m, "dP_chunk", 1, C, Gp));
        Pt = *Pp, Gt = *Gp;
        for (int64_t r = 0; r < nq; r++) {
            double D = 0.0; /* per-row scalar (rule R3) */
            int64_t lo = 0, hi = nk - 1;
            if (mk) fl_mask_row_range(mk, r, &lo, &hi); /* chunks from lo_i over the kept keys */
            for (int64_t c0 = lo; c0 <= hi; c0 += C) { /* pass 1: D_i */
                const int64_t nc = fl_min64(C, hi + 1 - c0);
                FL_TRY(fl_load(m, Pt, P_t, s0 + r, c0, 1, nc));
                FL_TRY(fl_load(m, Gt, dP_t, s0 + r, c0, 1, nc));
                if (Pt->x)
                    for (int64_t c = 0; c < nc; c++) D += Pt->x[c] * Gt->x[c];
            }
            for (int64_t c0 = lo; c0 <= hi; c0 += C) { /* pass 2: dS */
                const int64_t nc = fl_min64(C, hi + 1 - c0);
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

/* The mask the backward skips by: NULL without skipping or for a dense one (nothing to skip; the
 * dense forms) */
static const fl_mask *dropping(const fl_mask *mk, int skip) { return !skip || fl_mask_is_dense(mk) ? NULL : mk; }

static fl_status run_bwd(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io, int skip)
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
                                 sg.k0, 1.0, 1, !sg.kv_first, dropping(&sg.mask, skip), NULL));
    }
    for (int64_t s = 0; s < io.nseg; s++) { /* 2: dP = dO V^T (over d_v) */
        fl_segment_at(io.segs, s, &sg);
        FL_TRY(fl_std_product_nt(m, b, B, v.dv, io.dO, sg.q0, sg.Nq, io.V, sg.k0, sg.Nk, dP_t, sg.q0, 1.0,
                                 dropping(&sg.mask, skip), 1, NULL));
    }
    fl_std_bufs_free(m, B);
    for (int64_t s = 0; s < io.nseg; s++) { /* 3: dS = P o (dP - D) (and the sinks' gradient) */
        fl_segment_at(io.segs, s, &sg);
        const fl_mask *mk = dropping(&sg.mask, skip);
        if (mk) { /* standard-skip: it takes no variants */
            FL_TRY(dsoftmax_kept(m, p, P_t, dP_t, dS_t, sg.q0, sg.Nq, sg.Nk, mk, &rows[0], &rows[1]));
            continue;
        }
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
                                 dropping(&sg.mask, skip), NULL));
    }
    for (int64_t s = 0; s < io.nseg; s++) { /* 5: dK = dS^T Q / sqrt(d) */
        fl_segment_at(io.segs, s, &sg);
        FL_TRY(fl_std_product_nn(m, b, B, v.dq, dS_t, sg.q0, sg.Nq, sg.Nk, io.Q, sg.q0, io.dK, sg.k0, v.scale, 1,
                                 !sg.kv_first, dropping(&sg.mask, skip), NULL));
    }
    fl_std_bufs_free(m, B);
    return FL_OK;
}

fl_status fl_schedule_standard_bwd(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io)
{
    return run_bwd(m, p, b, io, 0);
}

fl_status fl_schedule_standard_skip_bwd(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io)
{
    return run_bwd(m, p, b, io, 1);
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
 * dK over d (rule D1), step 1 from P~ and step 3 with Z under dropout, S with a cap, dsink; with
 * skip and a mask that drops entries, (C0bm): the tiles and keys it keeps (no variants there) */
void fl_closed_standard_bwd(ck *c, int skip, const fl_problem *p, const fl_seg *s, const fl_blocks *b, fl_counts *r)
{
    const int64_t nq = s->Nq, nk = s->Nk, M = p->M, d = p->d, dv = fl_problem_dv(p);
    const int a = !s->kv_first;
    const fl_mask *mk = dropping(&s->mask, skip);
    fl_closed_std_nn(c, b, dv, nq, nk, 1, a, mk, r); /* 1: dV = P^T dO */
    fl_closed_std_nt(c, b, dv, nq, nk, mk, r);       /* 2: dP = dO V^T */
    if (!mk) {
        fl_closed_std_dsoftmax(c, p, nq, nk, r); /* 3: dS (C0b.3) */
    } else {                                      /* 3: dS (C0bm.3) */
        int64_t rows = nq, kept = mul(c, nq, nk), chunks = 0;
        const int64_t C = 2 * nk <= M ? 1 : M / 2;
        if (!fl_mask_row_sums(mk, C, &rows, &kept, &chunks)) c->ovf = 1;
        if (2 * nk <= M) {
            const int64_t R = fl_min64(M / (2 * nk), nq);
            fl_acc(c, &r->reads, mul(c, 2, kept));
            fl_acc(c, &r->events, mul(c, 3, rows));
            r->sram_peak = fl_max64(r->sram_peak, mul(c, 2, mul(c, R, nk)));
        } else {
            fl_acc(c, &r->reads, mul(c, 4, kept));
            fl_acc(c, &r->events, mul(c, 5, chunks));
            r->sram_peak = fl_max64(r->sram_peak, 2 * C);
        }
        fl_acc(c, &r->writes, kept);
    }
    if (p->sinks) { /* the segment's dsink (read first by a later sequence) */
        fl_acc(c, &r->reads, !s->head_first);
        fl_acc(c, &r->writes, 1);
        fl_acc(c, &r->events, 1 + !s->head_first);
    }
    fl_closed_std_nn(c, b, d, nq, nk, 0, 0, mk, r); /* 4: dQ = dS K */
    fl_closed_std_nn(c, b, d, nq, nk, 1, a, mk, r); /* 5: dK = dS^T Q */
}

double fl_standard_bwd_count_floor(const fl_problem *p, const fl_mask *mk, int64_t Br, int64_t cmax)
{
    /* Lemma O4's bound on (C0bm) (and (C0b), the dense case) for blocks Br and every Bc <= cmax (docs/model.md §7).
     * With Bc >= 1 the chunk is at most Bd1 = the largest beside Br x 1, so Td >= Td1.  Over one
     * query head of mk:
     *  steps 1, 5 (dV, dK): P/dS tiles Td sum_j span_j bc_j >= Td1 s1 (s1 the kept entries: a key
     *    block's tiles cover every row that keeps one of its keys); dO/Q sum_j span_j d >=
     *    d s1 / cmax; the output, at least min(Nk, 2 k1) d each (the first segment of a K/V head
     *    writes all Nk rows, a later one reads and writes the k1 keys some row keeps);
     *  step 2 (dP): V sum_i cols_i d >= d SK, dO >= d sum_i br_i [K_i > 0] (Td1 = 1) or
     *    d sum_i br_i ceil(K_i / cmax), writes sum_i br_i cols_i >= SBK (K_i the keys row block i
     *    keeps, SK = sum K_i, SBK = sum br_i K_i);
     *  step 3 (dS): exactly (C0b.3)/(C0bm.3);
     *  step 4 (dQ): dS tiles >= Td1 SBK, K >= d SK, writes Nq d. */
    const double d = (double)p->d, M = (double)p->M;
    const double Bd1 = fl_min64(p->d, (p->M - Br) / (Br + 1)), Td1 = Bd1 >= 1 ? ceil(d / Bd1) : 1.0;
    int64_t rows, kept, chunks;
    fl_mask_row_sums(mk, 1, &rows, &kept, &chunks);
    const double s1 = (double)kept;
    double SK = 0.0, SBK = 0.0, dO = 0.0;
    int64_t first = -1, last = -1; /* the kept keys (one interval) */
    for (int64_t r0 = 0; r0 < mk->Nq; r0 += Br) {
        const int64_t br = fl_min64(Br, mk->Nq - r0);
        int64_t j0, j1;
        fl_mask_block_range(mk, r0, br, 1, &j0, &j1); /* unit key blocks: the kept span */
        if (j1 <= j0) continue;
        if (first < 0) first = j0;
        last = j1;
        SK += (double)(j1 - j0), SBK += (double)br * (double)(j1 - j0);
        dO += (double)br * (Td1 > 1.0 ? (double)fl_cdiv(j1 - j0, cmax) : 1.0);
    }
    const double step3 = (2.0 * (double)mk->Nk <= M ? 2.0 : 4.0) * s1 + s1;
    const double out = (double)fl_min64(mk->Nk, first < 0 ? 0 : 2 * (last - first));
    return 2.0 * (Td1 * s1 + d * s1 / (double)cmax + out * d) + d * SK + d * dO + SBK + step3 +
           Td1 * SBK + d * SK + (double)mk->Nq * d;
}
