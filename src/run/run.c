/* run.c: one schedule on the machine, counts copied out, output checked (see run.h). */
#include <flashlab/run.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention_bwd.h"
#include "attention_ref.h"
#include <flashlab/rng.h>
#include <flashlab/problem_ext.h>
#include "schedules/schedules.h"
#include "problem/segments.h"
#include "schedules/smallcache.h" /* TEMPORARY registration of smallcache (bounds branch): replaced by one registry line at merge */

fl_schedule_fn fl_schedule_for(fl_algo a)
{
    switch (a) {
    case FL_ALGO_STANDARD: return fl_schedule_standard;
    case FL_ALGO_FLASH1: return fl_schedule_flash1;
    case FL_ALGO_FLASH2:
    case FL_ALGO_FLASH2_GQA: return fl_schedule_flash2;
    case FL_ALGO_DECODE: return fl_schedule_decode;
    case FL_ALGO_BLOCKSPARSE: return fl_schedule_blocksparse;
    case FL_ALGO_MEMEFF: return fl_schedule_memeff;
    case FL_ALGO_SOFTMAX_SAFE: return fl_schedule_softmax_safe;
    case FL_ALGO_SOFTMAX_ONLINE: return fl_schedule_softmax_online;
    case FL_ALGO_SMALLCACHE: return fl_schedule_smallcache; /* TEMPORARY registration of smallcache (bounds branch): replaced by one registry line at merge */
    default: return NULL;
    }
}

fl_schedule_fn fl_schedule_bwd_for(fl_algo a)
{
    switch (a) {
    case FL_ALGO_STANDARD: return fl_schedule_standard_bwd;
    case FL_ALGO_FLASH1: return fl_schedule_flash1_bwd;
    case FL_ALGO_FLASH2:
    case FL_ALGO_FLASH2_GQA: return fl_schedule_flash2_bwd;
    default: return NULL;
    }
}

/* Values a compute run holds in HBM: Q, K, V, O (+ dO, dQ, dK, dV), S and P (+ dP, dS) for
 * standard, and per-row statistics. */
static fl_status check_compute_size(const fl_problem *p, const fl_segments *sg)
{
    int64_t nq, nk, qd, kd, sq = 0, total = 0;
    const int bwd = (p->pass & FL_PASS_BWD) != 0;
    fl_problem_lengths(p, &nq, &nk);
    int ok = fl_mul_ok(sg->q_rows, p->d, &qd) && fl_mul_ok(sg->k_rows, p->d, &kd) &&
             fl_add_ok(qd, kd, &total) && fl_mul_ok(total, bwd ? 4 : 2, &total) &&
             fl_add_ok(total, 4 * sg->q_rows, &total);
    if (ok && p->algo == FL_ALGO_STANDARD)
        ok = fl_mul_ok(sg->q_rows, nk, &sq) && fl_mul_ok(sq, bwd ? 4 : 2, &sq) && fl_add_ok(total, sq, &total);
    if (!ok || total > FL_COMPUTE_MAX_VALUES)
        return fl_fail(FL_EINVAL,
                       "--N/--d: a compute run of %s at N = %lld, d = %lld (%lld query rows over "
                       "all heads) would hold more than %lld values in HBM; use count (no "
                       "arithmetic) for sizes this large",
                       fl_algo_name(p->algo), (long long)p->N, (long long)p->d,
                       (long long)sg->q_rows, (long long)FL_COMPUTE_MAX_VALUES);
    return FL_OK;
}

/* max |a - b| / max |b| over finite b, where equal values (infinities included) differ by 0 */
static double rel_err_inf(const double *a, const double *b, int64_t n)
{
    double e = 0.0, s = 0.0;
    for (int64_t i = 0; i < n; i++) {
        if (isfinite(b[i])) s = fmax(s, fabs(b[i]));
        if (a[i] == b[i]) continue;
        const double x = fabs(a[i] - b[i]);
        if (isnan(x)) return NAN;
        e = fmax(e, x);
    }
    return s > 0.0 ? e / s : e;
}

/* The reference for every segment (each query head of a group), gradients of a shared K/V head
 * summed over its query heads; then the errors. */
static fl_status check(fl_machine *m, const fl_problem *p, const fl_segments *sg, fl_qkvo io, int bwd,
                       fl_result *r)
{
    const int64_t d = p->d, qn = sg->q_rows * d, kn = sg->k_rows * d;
    const double scale = 1.0 / sqrt((double)d);
    const double *Q = fl_tensor_get(m, io.Q)->data, *K = fl_tensor_get(m, io.K)->data,
                 *V = fl_tensor_get(m, io.V)->data, *dO = bwd ? fl_tensor_get(m, io.dO)->data : NULL;
    double *O = calloc((size_t)qn, sizeof *O), *L = calloc((size_t)sg->q_rows, sizeof *L);
    double *dQ = bwd ? calloc((size_t)qn, sizeof *dQ) : NULL, *dK = bwd ? calloc((size_t)kn, sizeof *dK) : NULL,
           *dV = bwd ? calloc((size_t)kn, sizeof *dV) : NULL;
    int64_t maxk = fl_seg_max_nk(&io);
    double *tk = bwd ? malloc((size_t)(maxk * d) * sizeof *tk) : NULL,
           *tv = bwd ? malloc((size_t)(maxk * d) * sizeof *tv) : NULL;
    fl_status s = FL_OK;
    if (!O || !L || (bwd && (!dQ || !dK || !dV || !tk || !tv))) {
        s = fl_fail(FL_ENOMEM, "out of memory for the reference");
        goto out;
    }
    for (int64_t k = 0; k < io.nseg && !s; k++) {
        fl_seg seg;
        fl_segment_at(io.segs, k, &seg);
        const fl_seg *g = &seg;
        for (int64_t h = 0; h < g->group && !s; h++) {
            const int64_t q0 = g->q0 + h * g->qstride;
            const fl_keep_fn keep = fl_mask_is_dense(&g->mask) ? NULL : fl_mask_keep_fn;
            if (!bwd) {
                s = fl_ref_attention(g->Nq, g->Nk, d, d, Q + q0 * d, K + g->k0 * d, V + g->k0 * d, scale,
                                     keep, &g->mask, O + q0 * d, L + q0);
                continue;
            }
            s = fl_ref_attention_bwd(g->Nq, g->Nk, d, d, Q + q0 * d, K + g->k0 * d, V + g->k0 * d,
                                     dO + q0 * d, scale, keep, &g->mask, dQ + q0 * d, tk, tv,
                                     O + q0 * d, L + q0, NULL, NULL);
            for (int64_t i = 0; i < g->Nk * d; i++) {
                dK[g->k0 * d + i] += tk[i];
                dV[g->k0 * d + i] += tv[i];
            }
        }
    }
    if (s) goto out;
    r->computed = 1;
    r->max_abs_err = fl_max_abs_diff(fl_tensor_get(m, io.O)->data, O, qn);
    r->rel_err = fl_rel_err(fl_tensor_get(m, io.O)->data, O, qn);
    const int L_t = fl_tensor_find(m, "L");
    if (L_t >= 0) r->lse_rel_err = rel_err_inf(fl_tensor_get(m, L_t)->data, L, sg->q_rows);
    if (bwd) {
        r->dq_rel_err = fl_rel_err(fl_tensor_get(m, io.dQ)->data, dQ, qn);
        r->dk_rel_err = fl_rel_err(fl_tensor_get(m, io.dK)->data, dK, kn);
        r->dv_rel_err = fl_rel_err(fl_tensor_get(m, io.dV)->data, dV, kn);
    }
out:
    free(O), free(L), free(dQ), free(dK), free(dV), free(tk), free(tv);
    return s;
}

/* Copies n values into tensor t, or fills it at random from *st when src is NULL. */
static void fill(fl_machine *m, int t, const double *src, int64_t n, uint64_t *st)
{
    double *x = fl_tensor_get(m, t)->data;
    if (src) memcpy(x, src, (size_t)n * sizeof *x);
    else fl_rng_fill(st, x, n, -1.0, 1.0);
}

/* Copies tensor `name` out to dst (if both exist). */
static void copy_out(fl_machine *m, const char *name, double *dst)
{
    const int t = fl_tensor_find(m, name);
    if (t < 0 || !dst) return;
    const fl_tensor *T = fl_tensor_get(m, t);
    memcpy(dst, T->data, (size_t)(T->rows * T->cols) * sizeof *dst);
}

static fl_status add_tensors(fl_machine *m, const fl_problem *p, const fl_segments *sg, int bwd,
                             const fl_values *in, fl_qkvo *io)
{
    const int eb = p->elem_bytes;
    /* rule R8 (docs/model.md): accumulators that cross HBM are fp32: flash1's running O,
     * updated in HBM after every key block, and every backward's dQ (FlashAttention's dq_accum) */
    const int ob = p->algo == FL_ALGO_FLASH1 || p->algo == FL_ALGO_SMALLCACHE /* TEMPORARY registration of smallcache (bounds branch): replaced by one registry line at merge */ ? 4 : eb;
    io->dO = io->dQ = io->dK = io->dV = -1;
    FL_TRY(fl_tensor_add(m, "Q", sg->q_rows, p->d, eb, &io->Q));
    FL_TRY(fl_tensor_add(m, "K", sg->k_rows, p->d, eb, &io->K));
    FL_TRY(fl_tensor_add(m, "V", sg->k_rows, p->d, eb, &io->V));
    FL_TRY(fl_tensor_add(m, "O", sg->q_rows, p->d, ob, &io->O));
    if (bwd) {
        FL_TRY(fl_tensor_add(m, "dO", sg->q_rows, p->d, eb, &io->dO));
        FL_TRY(fl_tensor_add(m, "dQ", sg->q_rows, p->d, 4, &io->dQ));
        FL_TRY(fl_tensor_add(m, "dK", sg->k_rows, p->d, eb, &io->dK));
        FL_TRY(fl_tensor_add(m, "dV", sg->k_rows, p->d, eb, &io->dV));
    }
    if (fl_computes(m)) {
        uint64_t st = p->seed;
        fill(m, io->Q, in ? in->Q : NULL, sg->q_rows * p->d, &st);
        fill(m, io->K, in ? in->K : NULL, sg->k_rows * p->d, &st);
        fill(m, io->V, in ? in->V : NULL, sg->k_rows * p->d, &st);
        if (bwd) fill(m, io->dO, in ? in->dO : NULL, sg->q_rows * p->d, &st);
    }
    return FL_OK;
}

/* A lower bound of the tile events of a core schedule, cheap to compute (saturating): the
 * forward stores every row block's output at least once (ceil(Nq / Br) per segment), and the
 * backward touches every key block of a segment that first writes its dK, dV (ceil(Nk / Bc)). */
static int64_t events_lower_bound(const fl_problem *p, const fl_blocks *b, const fl_blocks *bb)
{
    const int64_t Hq = p->heads, Hkv = p->kv_heads ? p->kv_heads : p->heads;
    const int64_t G = fl_problem_group(p), Nk = p->Nk ? p->Nk : p->N;
    const int64_t segs = Hq / G, first = p->algo == FL_ALGO_FLASH2_GQA ? segs : Hkv; /* per sequence */
    int64_t lb = 0, t;
    for (int64_t s = 0; s < (p->cu_seqlens_q ? p->batch : 1); s++) {
        const int64_t *cq = p->cu_seqlens_q, *ck = p->cu_seqlens_k ? p->cu_seqlens_k : cq;
        const int64_t nq = cq ? cq[s + 1] - cq[s] : p->N, nk = cq ? ck[s + 1] - ck[s] : Nk;
        const int64_t reps = cq ? 1 : p->batch;
        if (!fl_mul_ok(reps, fl_mul_ok(segs, fl_cdiv(nq, b->Br), &t) ? t : INT64_MAX, &t) ||
            !fl_add_ok(lb, t, &lb))
            return INT64_MAX;
        if (bb && (!fl_mul_ok(reps, fl_mul_ok(first, fl_cdiv(nk, bb->Bc), &t) ? t : INT64_MAX, &t) ||
                   !fl_add_ok(lb, t, &lb)))
            return INT64_MAX;
    }
    return lb;
}

/* Whether the closed form walks the blocks of every segment shape (sim/closed_variants.c: all
 * but the plain forward of one dense head, whose closed form is O(1)). */
static int walks_blocks(const fl_problem *p)
{
    return p->pass != FL_PASS_FWD || p->algo == FL_ALGO_FLASH2_GQA || p->batch != 1 || p->heads != 1 ||
           p->cu_seqlens_q || (p->Nk != 0 && p->Nk != p->N) || p->causal != FL_CAUSAL_NONE ||
           p->window_left != -1 || p->window_right != -1;
}

static fl_status run(const fl_problem *p, fl_mode mode, fl_trace_fn trace, void *trace_ctx,
                     fl_values *vals, fl_result *r)
{
    const int bwd = (p->pass & FL_PASS_BWD) != 0, fwd_counted = (p->pass & FL_PASS_FWD) != 0;
    fl_blocks b, bb;
    fl_counts cf, cb = {0};
    memset(&bb, 0, sizeof bb);
    FL_TRY(fl_blocks_choose(p, &b));
    if (bwd) FL_TRY(fl_blocks_choose_pass(p, 1, &bb));
    if (p->max_events > 0 && (p->algo == FL_ALGO_DECODE || (!fl_algo_is_ext(p->algo) && walks_blocks(p)))) {
        /* these closed forms walk every row (column) block: refuse a run that must exceed the
         * limit before walking ~N/Br blocks per segment to count it exactly (decode runs one
         * segment and stores every row block's output too) */
        const int64_t lb = p->algo == FL_ALGO_DECODE ? fl_cdiv(p->N, b.Br)
                                                     : events_lower_bound(p, &b, bwd ? &bb : NULL);
        if (lb > p->max_events)
            return fl_fail(FL_EINVAL,
                           "--max-events: %s at N = %lld, d = %lld, M = %lld makes at least %lld tile "
                           "events, more than the limit %lld; raise --max-events or M",
                           fl_algo_name(p->algo), (long long)p->N, (long long)p->d, (long long)p->M,
                           (long long)lb, (long long)p->max_events);
    }
    FL_TRY(fl_closed_form_pass(p, 0, &b, &cf));
    if (bwd) FL_TRY(fl_closed_form_pass(p, 1, &bb, &cb));
    const int64_t events = cf.events + cb.events; /* both passes execute */
    if (p->max_events > 0 && events > p->max_events)
        return fl_fail(FL_EINVAL,
                       "--max-events: %s at N = %lld, d = %lld, M = %lld makes %lld tile events, "
                       "more than the limit %lld; raise --max-events or M",
                       fl_algo_name(p->algo), (long long)p->N, (long long)p->d, (long long)p->M,
                       (long long)events, (long long)p->max_events);
    if (fl_algo_is_ext(p->algo)) return fl_run_ext(p, mode, trace, trace_ctx, &b, &cf, r); /* problem_ext.h */
    fl_segments sg;
    FL_TRY(fl_segments_build(p, &sg));
    fl_status s = FL_OK;
    fl_machine *m = NULL;
    int64_t snap[FL_MAX_TENSORS][2] = {{0}}, snap_events = 0;
    if (mode == FL_COMPUTE && (s = check_compute_size(p, &sg))) goto done;
    if (!(m = fl_machine_alloc(p->M, mode, fl_algo_name(p->algo)))) {
        s = FL_ENOMEM;
        goto done;
    }
    /* a bwd-only run hides the forward from the trace (and from the counts and peak below) */
    fl_machine_set_trace(m, fwd_counted ? trace : NULL, trace_ctx);
    fl_qkvo io;
    if ((s = add_tensors(m, p, &sg, bwd, vals, &io))) goto done;
    io.q_rows = sg.q_rows;
    io.k_rows = sg.k_rows;
    io.segs = &sg;
    io.nseg = sg.nseg;
    if ((s = fl_schedule_for(p->algo)(m, p, &b, io))) goto done;
    memset(r, 0, sizeof *r);
    if (!fwd_counted) { /* bwd alone: what the forward moved is not reported */
        for (int t = 0; t < fl_tensor_count(m); t++) {
            snap[t][0] = fl_tensor_get(m, t)->reads;
            snap[t][1] = fl_tensor_get(m, t)->writes;
        }
        snap_events = fl_machine_events(m);
    }
    r->fwd_total = fwd_counted ? fl_machine_reads(m) + fl_machine_writes(m) : 0;
    if (!fwd_counted) {
        fl_machine_reset_peak(m);
        fl_machine_set_trace(m, trace, trace_ctx);
    }
    if (bwd && (s = fl_schedule_bwd_for(p->algo)(m, p, &bb, io))) goto done;

    r->p = *p;
    r->b = b;
    r->b_bwd = bb;
    r->segments = sg.nseg;
    r->closed = cf;
    if (bwd) {
        fl_counts c = cb;
        if (fwd_counted) {
            c.reads += cf.reads, c.writes += cf.writes, c.total += cf.total, c.events += cf.events;
            c.sram_peak = fl_max64(cf.sram_peak, cb.sram_peak);
        }
        r->closed = c;
    }
    r->ntensors = fl_tensor_count(m);
    for (int t = 0; t < r->ntensors; t++) {
        const fl_tensor *T = fl_tensor_get(m, t);
        memcpy(r->t[t].name, T->name, sizeof T->name);
        r->t[t].reads = T->reads - snap[t][0];
        r->t[t].writes = T->writes - snap[t][1];
        r->t[t].elem_bytes = T->elem_bytes;
        int64_t tb; /* bytes can overflow where the element counts do not */
        r->reads += r->t[t].reads;
        r->writes += r->t[t].writes;
        if (!fl_add_ok(r->t[t].reads, r->t[t].writes, &tb) || !fl_mul_ok(tb, T->elem_bytes, &tb) ||
            !fl_add_ok(r->bytes, tb, &r->bytes)) {
            s = fl_fail(FL_EOVERFLOW,
                        "--N/--d: the bytes %s moves at N = %lld, d = %lld would overflow 64-bit "
                        "arithmetic", fl_algo_name(p->algo), (long long)p->N, (long long)p->d);
            goto done;
        }
    }
    r->total = r->reads + r->writes;
    r->bwd_total = bwd ? r->total - r->fwd_total : 0;
    r->sram_peak = fl_machine_sram_peak(m);
    r->events = fl_machine_events(m) - snap_events;
    r->lse_rel_err = r->dq_rel_err = r->dk_rel_err = r->dv_rel_err = NAN;
    r->max_abs_err = r->rel_err = NAN;
    if (mode == FL_COMPUTE) s = check(m, p, &sg, io, bwd, r);
    if (vals && !s) {
        copy_out(m, "O", vals->O);
        copy_out(m, "L", vals->L);
        if (bwd) {
            copy_out(m, "dQ", vals->dQ);
            copy_out(m, "dK", vals->dK);
            copy_out(m, "dV", vals->dV);
        }
    }
done:
    fl_machine_free(m);
    fl_segments_free(&sg);
    return s;
}

fl_status fl_run(const fl_problem *p, fl_mode mode, fl_trace_fn trace, void *trace_ctx,
                 fl_result *r)
{
    return run(p, mode, trace, trace_ctx, NULL, r);
}

fl_status fl_run_values(const fl_problem *p, fl_values *v, fl_result *r)
{
    return run(p, FL_COMPUTE, NULL, NULL, v, r);
}
