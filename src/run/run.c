/* run.c: one schedule on the machine, counts copied out, output checked (see run.h).  Every
 * schedule runs through the same steps; what differs is read from its descriptor
 * (include/flashlab/schedule.h): blocks, closed form, event floor, compute size, the layout of
 * K and V, the reference's keep rule, and the loops. */
#include <flashlab/run.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <flashlab/footprint.h>
#include <flashlab/rng.h>

#include "attention_bwd.h"
#include "attention_ref.h"
#include "problem/segments.h"
#include "ref_mask.h"
#include "softmax_ref.h"

/* The rule for the tensors of an attention run (docs/model.md §heads): Q, K, V, O (+ dO, dQ, dK,
 * dV), S and P (+ dP, dS) for a schedule that materializes them, and per-row statistics. */
static fl_status check_compute_size(const fl_problem *p, const fl_schedule *s, const fl_segments *sg)
{
    int64_t nq, nk, qd, kd, sq = 0, total = 0, dd;
    const int bwd = (p->pass & FL_PASS_BWD) != 0;
    fl_problem_lengths(p, &nq, &nk);
    /* Q, K (d) and V, O (d_v) wide; the backward's dO, dQ, dK, dV as many again */
    int ok = fl_add_ok(p->d, fl_problem_dv(p), &dd) && fl_mul_ok(sg->q_rows, dd, &qd) &&
             fl_mul_ok(sg->k_rows, dd, &kd) && fl_add_ok(qd, kd, &total) &&
             fl_mul_ok(total, bwd ? 2 : 1, &total) && fl_add_ok(total, 4 * sg->q_rows, &total);
    if (ok && (s->flags & FL_SCHED_MATERIALIZES))
        ok = fl_mul_ok(sg->q_rows, nk, &sq) && fl_mul_ok(sq, bwd ? 4 : 2, &sq) && fl_add_ok(total, sq, &total);
    if (!ok || total > FL_COMPUTE_MAX_VALUES)
        return fl_fail(FL_EINVAL,
                       "{N}/{d}: a compute run of %s at N = %lld, d = %lld (%lld query rows over "
                       "all heads) would hold more than %lld values in HBM; use count (no "
                       "arithmetic) for sizes this large",
                       s->name, (long long)p->N, (long long)p->d,
                       (long long)sg->q_rows, (long long)FL_COMPUTE_MAX_VALUES);
    return FL_OK;
}

/* a * b and a + b, saturating at INT64_MAX (both >= 0) */
static int64_t smul(int64_t a, int64_t b)
{
    int64_t r;
    return fl_mul_ok(a, b, &r) ? r : INT64_MAX;
}
static int64_t sadd(int64_t a, int64_t b)
{
    int64_t r;
    return fl_add_ok(a, b, &r) ? r : INT64_MAX;
}

int64_t fl_compute_macs(const fl_problem *p)
{
    const fl_schedule *s = fl_schedule_get(p->algo);
    const int softmax = s && (s->flags & FL_SCHED_SOFTMAX);
    /* per query-key pair: d multiply-adds for the score and d_v for P V (each twice: schedule and
     * reference), 3.5 times that with the backward */
    const int64_t per = softmax ? 2 : sadd(p->d, fl_problem_dv(p)), factor = (p->pass & FL_PASS_BWD) ? 7 : 2;
    const int64_t Nk = p->Nk ? p->Nk : p->N;
    int64_t sum = 0;
    if (p->cu_seqlens_q) {
        const int64_t *cq = p->cu_seqlens_q, *ck = p->cu_seqlens_k ? p->cu_seqlens_k : cq;
        for (int64_t b = 0; b < p->batch; b++) sum = sadd(sum, smul(cq[b + 1] - cq[b], ck[b + 1] - ck[b]));
    } else {
        sum = smul(p->batch, smul(p->N, Nk));
    }
    return smul(smul(smul(sum, p->heads), per), factor);
}

fl_status fl_compute_check(const fl_problem *p)
{
    const int64_t macs = fl_compute_macs(p);
    if (p->max_macs <= 0 || macs <= p->max_macs) return FL_OK;
    char n[48];
    if (macs == INT64_MAX) snprintf(n, sizeof n, "more than %lld", (long long)INT64_MAX);
    else snprintf(n, sizeof n, "%lld", (long long)macs);
    return fl_fail(FL_EINVAL,
                   "{max_macs}: a compute run of %s at N = %lld, d = %lld makes up to %s multiply-adds "
                   "(schedule and reference), more than the limit %lld; raise {max_macs}, or use count "
                   "(no arithmetic)",
                   fl_algo_name(p->algo), (long long)p->N, (long long)p->d, n, (long long)p->max_macs);
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

/* The inputs of a run, as the reference sees them: Q, K, V (and dO) in the packed layout of
 * segments.h, K and V logical (a schedule's own HBM layout, e.g. decode's pool, is not theirs). */
typedef struct {
    const double *Q, *K, *V, *dO;
    double *Kl, *Vl; /* owned: the logical K, V of a schedule with add_kv */
    const double *sink; /* the sink logits (Hq) */
    double *Qd, *Kd, *Vd; /* owned, fp8: Q, K, V times their scale factors (what the reference sees) */
} inputs;

/* The keep rule the reference applies: the schedule's own (block-sparse), or else the causal/
 * window mask of each segment, built by the reference from the definitions (ref_mask.h), not
 * taken from the schedules' masks. */
typedef struct {
    int (*keep)(int64_t i, int64_t j, const void *ctx);
    _Alignas(16) unsigned char ctx[256];
    int own;
} ref_keep;

/* The reference for every segment (each query head of a group), gradients of a shared K/V head
 * summed over its query heads, with the problem's variants (docs/model.md §14); then the errors
 * of O, L, the gradients and dsink. */
static fl_status check_attention(fl_machine *m, const fl_problem *p, const fl_segments *sg, fl_qkvo io,
                                 const inputs *in, const ref_keep *rk, int bwd, fl_result *r)
{
    const int64_t d = p->d, dv = fl_problem_dv(p), Hq = p->heads;
    const int64_t qn = sg->q_rows * d, kn = sg->k_rows * d, qv = sg->q_rows * dv, kv = sg->k_rows * dv;
    const double scale = 1.0 / sqrt((double)d);
    const double *Q = in->Qd ? in->Qd : in->Q, *K = in->Kd ? in->Kd : in->K, *V = in->Vd ? in->Vd : in->V;
    const double *dO = in->dO;
    double *O = calloc((size_t)qv, sizeof *O), *L = calloc((size_t)sg->q_rows, sizeof *L);
    double *dQ = bwd ? calloc((size_t)qn, sizeof *dQ) : NULL, *dK = bwd ? calloc((size_t)kn, sizeof *dK) : NULL,
           *dV = bwd ? calloc((size_t)kv, sizeof *dV) : NULL;
    double *dsink = bwd && p->sinks ? calloc((size_t)Hq, sizeof *dsink) : NULL;
    int64_t maxk = sg->max_nk;
    double *tk = bwd ? malloc((size_t)(maxk * d) * sizeof *tk) : NULL,
           *tv = bwd ? malloc((size_t)(maxk * dv) * sizeof *tv) : NULL;
    fl_status s = FL_OK;
    if (!O || !L || (bwd && (!dQ || !dK || !dV || !tk || !tv)) || (bwd && p->sinks && !dsink)) {
        s = fl_fail(FL_ENOMEM, "out of memory for the reference");
        goto out;
    }
    for (int64_t k = 0; k < io.nseg && !s; k++) {
        fl_seg seg;
        fl_segment_at(io.segs, k, &seg);
        const fl_seg *g = &seg;
        const fl_ref_mask rm = {g->Nq, g->Nk, (int)p->causal, p->window_left, p->window_right};
        fl_keep_fn keep = rk->own ? rk->keep : fl_ref_mask_dense(&rm) ? NULL : fl_ref_keep;
        const void *ctx = rk->own ? (const void *)rk->ctx : (const void *)&rm;
        for (int64_t h = 0; h < g->group && !s; h++) {
            const int64_t q0 = g->q0 + h * g->qstride, head = g->head + h;
            const fl_ref_variant v = {p->softcap, p->alibi ? fl_alibi_slope(head, Hq) : 0.0, p->sinks,
                                      p->sinks ? in->sink[head] : 0.0, p->dropout, p->seed, g->seq, head};
            if (!bwd) {
                s = fl_ref_attention_v(g->Nq, g->Nk, d, dv, Q + q0 * d, K + g->k0 * d, V + g->k0 * dv, scale,
                                       keep, ctx, &v, O + q0 * dv, L + q0);
                continue;
            }
            double ds = 0.0;
            s = fl_ref_attention_bwd_v(g->Nq, g->Nk, d, dv, Q + q0 * d, K + g->k0 * d, V + g->k0 * dv,
                                       dO + q0 * dv, scale, keep, ctx, &v, dQ + q0 * d, tk, tv, O + q0 * dv,
                                       L + q0, NULL, NULL, &ds);
            if (dsink) dsink[head] += ds;
            for (int64_t i = 0; i < g->Nk * d; i++) dK[g->k0 * d + i] += tk[i];
            for (int64_t i = 0; i < g->Nk * dv; i++) dV[g->k0 * dv + i] += tv[i];
        }
    }
    if (s) goto out;
    r->computed = 1;
    r->max_abs_err = fl_max_abs_diff(fl_tensor_get(m, io.O)->data, O, qv);
    r->rel_err = fl_rel_err(fl_tensor_get(m, io.O)->data, O, qv);
    const int L_t = fl_tensor_find(m, "L");
    if (L_t >= 0) r->lse_rel_err = rel_err_inf(fl_tensor_get(m, L_t)->data, L, sg->q_rows);
    if (bwd) {
        r->dq_rel_err = fl_rel_err(fl_tensor_get(m, io.dQ)->data, dQ, qn);
        r->dk_rel_err = fl_rel_err(fl_tensor_get(m, io.dK)->data, dK, kn);
        r->dv_rel_err = fl_rel_err(fl_tensor_get(m, io.dV)->data, dV, kv);
        if (dsink) r->dsink_rel_err = fl_rel_err(fl_tensor_get(m, io.dsink)->data, dsink, Hq);
    }
out:
    free(O), free(L), free(dQ), free(dK), free(dV), free(tk), free(tv), free(dsink);
    return s;
}

/* The softmax of every row of X (N x Nk) against Y. */
static fl_status check_softmax(fl_machine *m, const fl_problem *p, fl_qkvo io, fl_result *r)
{
    const int64_t N = p->N, Nk = p->Nk ? p->Nk : p->N;
    const double *X = fl_tensor_get(m, io.Q)->data, *Y = fl_tensor_get(m, io.O)->data;
    double *ref = malloc((size_t)(N * Nk) * sizeof *ref);
    if (!ref) return fl_fail(FL_ENOMEM, "out of memory for the reference of %s", fl_algo_name(p->algo));
    for (int64_t i = 0; i < N; i++) fl_ref_softmax(X + i * Nk, Nk, ref + i * Nk);
    r->computed = 1;
    r->max_abs_err = fl_max_abs_diff(Y, ref, N * Nk);
    r->rel_err = fl_rel_err(Y, ref, N * Nk);
    free(ref);
    return FL_OK;
}

/* Copies n values into x, or fills x at random from *st (uniform in [lo, hi)) when src is NULL. */
static void fill(double *x, const double *src, int64_t n, uint64_t *st, double lo, double hi)
{
    if (src) memcpy(x, src, (size_t)n * sizeof *x);
    else fl_rng_fill(st, x, n, lo, hi);
}

/* Copies tensor `name` out to dst (if both exist). */
static void copy_out(fl_machine *m, const char *name, double *dst)
{
    const int t = fl_tensor_find(m, name);
    if (t < 0 || !dst) return;
    const fl_tensor *T = fl_tensor_get(m, t);
    memcpy(dst, T->data, (size_t)(T->rows * T->cols) * sizeof *dst);
}

/* fp8's scale factors: 2^k for k uniform in -2..2, drawn from *st (exact products in double). */
static void fill_scales(double *x, int64_t n, uint64_t *st)
{
    for (int64_t i = 0; i < n; i++) x[i] = ldexp(1.0, (int)(fl_rng_next(st) % 5) - 2);
}

/* fp8: Q, K, V times their scale factors, row by row as segments.h lays them out (the reference's
 * inputs; docs/model.md rule Q8). */
static fl_status dequantize(fl_machine *m, const fl_problem *p, const fl_segments *sg, const fl_qkvo *io,
                            inputs *in)
{
    const int64_t d = p->d, dv = fl_problem_dv(p), qn = sg->q_rows * d, kn = sg->k_rows * d, kv = sg->k_rows * dv;
    const double *qs = fl_tensor_get(m, io->Qs)->data, *ks = fl_tensor_get(m, io->Ks)->data,
                 *vs = fl_tensor_get(m, io->Vs)->data;
    if (!(in->Qd = malloc((size_t)qn * sizeof *in->Qd)) || !(in->Kd = malloc((size_t)kn * sizeof *in->Kd)) ||
        !(in->Vd = malloc((size_t)kv * sizeof *in->Vd)))
        return fl_fail(FL_ENOMEM, "out of memory for the dequantized inputs");
    for (int64_t k = 0; k < sg->nseg; k++) {
        fl_seg g;
        fl_segment_at(sg, k, &g);
        for (int64_t h = 0; h < g.group; h++)
            for (int64_t i = 0; i < g.Nq; i++) {
                const int64_t row = g.q0 + h * g.qstride + i;
                const double f = qs[g.qs0 + h * g.qsstride + (sg->sb ? i / sg->sb : 0)];
                for (int64_t c = 0; c < d; c++) in->Qd[row * d + c] = in->Q[row * d + c] * f;
            }
        for (int64_t j = 0; j < g.Nk; j++) {
            const int64_t row = g.k0 + j, blk = g.ks0 + (sg->sb ? j / sg->sb : 0);
            for (int64_t c = 0; c < d; c++) in->Kd[row * d + c] = in->K[row * d + c] * ks[blk];
            for (int64_t c = 0; c < dv; c++) in->Vd[row * dv + c] = in->V[row * dv + c] * vs[blk];
        }
    }
    return FL_OK;
}

/* Adds the HBM tensors a run starts with and, in compute mode, fills the inputs (drawn in the
 * order Q, K, V, dO from one stream seeded with p->seed, unless vals gives them, then the
 * variants' inputs: sinks, fp8's scale factors):
 *   softmax: X (N x Nk, uniform in [-10, 10)) as io.Q and Y as io.O;
 *   attention: Q, then K and V (the schedule's add_kv lays them out, else plain packed
 *   tensors), O, and for a backward pass dO, dQ, dK, dV; Q and K are d wide, V, O, dO and dV
 *   d_v wide (docs/model.md rule D1); the variants' tensors (run.h).
 * Rule R8 (docs/model.md): accumulators that cross HBM are fp32: the running O of a schedule
 * flagged FL_SCHED_O_FP32 and every backward's dQ.  Rule Q8: under fp8 only Q, K, V take one
 * byte; O and the gradients are bf16. */
static fl_status add_tensors(fl_machine *m, const fl_problem *p, const fl_schedule *s, const fl_blocks *b,
                             const fl_segments *sg, int bwd, const fl_values *vals, fl_qkvo *io,
                             inputs *in)
{
    const int eb = p->elem_bytes, xb = fl_problem_out_bytes(p);
    const int ob = (s->flags & FL_SCHED_O_FP32) ? FL_ACCUM_BYTES : xb;
    const int64_t d = p->d, dv = fl_problem_dv(p);
    const int cmp = fl_computes(m);
    uint64_t st = p->seed;
    io->dO = io->dQ = io->dK = io->dV = -1;
    io->K = io->V = -1;
    io->sink = io->dsink = io->rng = io->Qs = io->Ks = io->Vs = -1;
    if (s->flags & FL_SCHED_SOFTMAX) {
        const int64_t Nk = p->Nk ? p->Nk : p->N;
        FL_TRY(fl_tensor_add(m, "X", p->N, Nk, eb, &io->Q));
        FL_TRY(fl_tensor_add(m, "Y", p->N, Nk, eb, &io->O));
        if (cmp) fill(fl_tensor_get(m, io->Q)->data, vals ? vals->Q : NULL, p->N * Nk, &st, -10.0, 10.0);
        return FL_OK;
    }
    const int64_t qn = sg->q_rows * d, kn = sg->k_rows * d, kv = sg->k_rows * dv, qv = sg->q_rows * dv;
    FL_TRY(fl_tensor_add(m, "Q", sg->q_rows, d, eb, &io->Q));
    if (s->add_kv) {
        if (cmp) { /* the logical K, V, drawn after Q; the schedule places them */
            fill(fl_tensor_get(m, io->Q)->data, vals ? vals->Q : NULL, qn, &st, -1.0, 1.0);
            in->Kl = malloc((size_t)kn * sizeof *in->Kl);
            in->Vl = malloc((size_t)kv * sizeof *in->Vl);
            if (!in->Kl || !in->Vl) return fl_fail(FL_ENOMEM, "out of memory for the inputs of %s", s->name);
            fill(in->Kl, vals ? vals->K : NULL, kn, &st, -1.0, 1.0);
            fill(in->Vl, vals ? vals->V : NULL, kv, &st, -1.0, 1.0);
        }
        FL_TRY(s->add_kv(m, p, b, io, in->Kl, in->Vl));
    } else {
        FL_TRY(fl_tensor_add(m, "K", sg->k_rows, d, eb, &io->K));
        FL_TRY(fl_tensor_add(m, "V", sg->k_rows, dv, eb, &io->V));
    }
    FL_TRY(fl_tensor_add(m, "O", sg->q_rows, dv, ob, &io->O));
    if (bwd) {
        FL_TRY(fl_tensor_add(m, "dO", sg->q_rows, dv, xb, &io->dO));
        FL_TRY(fl_tensor_add(m, "dQ", sg->q_rows, d, FL_ACCUM_BYTES, &io->dQ));
        FL_TRY(fl_tensor_add(m, "dK", sg->k_rows, d, xb, &io->dK));
        FL_TRY(fl_tensor_add(m, "dV", sg->k_rows, dv, xb, &io->dV));
    }
    if (p->sinks) FL_TRY(fl_tensor_add(m, "sink", p->heads, 1, FL_STAT_BYTES, &io->sink));
    if (p->sinks && bwd) FL_TRY(fl_tensor_add(m, "dsink", p->heads, 1, FL_STAT_BYTES, &io->dsink));
    if (p->dropout > 0.0) FL_TRY(fl_tensor_add(m, "rng", 2, 1, 8, &io->rng));
    if (fl_problem_fp8(p)) {
        FL_TRY(fl_tensor_add(m, "Q_scale", sg->q_scale_rows, 1, FL_STAT_BYTES, &io->Qs));
        FL_TRY(fl_tensor_add(m, "K_scale", sg->k_scale_rows, 1, FL_STAT_BYTES, &io->Ks));
        FL_TRY(fl_tensor_add(m, "V_scale", sg->k_scale_rows, 1, FL_STAT_BYTES, &io->Vs));
    }
    if (!cmp) return FL_OK;
    in->Q = fl_tensor_get(m, io->Q)->data;
    if (!s->add_kv) {
        fill(fl_tensor_get(m, io->Q)->data, vals ? vals->Q : NULL, qn, &st, -1.0, 1.0);
        fill(fl_tensor_get(m, io->K)->data, vals ? vals->K : NULL, kn, &st, -1.0, 1.0);
        fill(fl_tensor_get(m, io->V)->data, vals ? vals->V : NULL, kv, &st, -1.0, 1.0);
        in->K = fl_tensor_get(m, io->K)->data;
        in->V = fl_tensor_get(m, io->V)->data;
    } else {
        in->K = in->Kl;
        in->V = in->Vl;
    }
    if (bwd) {
        fill(fl_tensor_get(m, io->dO)->data, vals ? vals->dO : NULL, qv, &st, -1.0, 1.0);
        in->dO = fl_tensor_get(m, io->dO)->data;
    }
    if (p->sinks) {
        fill(fl_tensor_get(m, io->sink)->data, vals ? vals->sink : NULL, p->heads, &st, -1.0, 1.0);
        in->sink = fl_tensor_get(m, io->sink)->data;
    }
    if (p->dropout > 0.0) fl_tensor_get(m, io->rng)->data[0] = (double)p->seed; /* offset 0 */
    if (fl_problem_fp8(p)) {
        fill_scales(fl_tensor_get(m, io->Qs)->data, sg->q_scale_rows, &st);
        fill_scales(fl_tensor_get(m, io->Ks)->data, sg->k_scale_rows, &st);
        fill_scales(fl_tensor_get(m, io->Vs)->data, sg->k_scale_rows, &st);
        FL_TRY(dequantize(m, p, sg, io, in));
    }
    return FL_OK;
}

/* Copies the machine's counters into *r: per tensor (less what a hidden forward moved: snap),
 * totals, bytes (FL_EOVERFLOW when they do not fit), peak, events. */
static fl_status collect(fl_machine *m, const fl_problem *p, int64_t snap[][2], int64_t snap_events,
                         fl_result *r)
{
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
            !fl_add_ok(r->bytes, tb, &r->bytes))
            return fl_fail(FL_EOVERFLOW,
                           "{N}/{d}: the bytes %s moves at N = %lld, d = %lld would overflow 64-bit "
                           "arithmetic", fl_algo_name(p->algo), (long long)p->N, (long long)p->d);
    }
    r->total = r->reads + r->writes;
    r->sram_peak = fl_machine_sram_peak(m);
    r->events = fl_machine_events(m) - snap_events;
    return FL_OK;
}

static fl_status refuse_events(const fl_problem *p, const char *what, int64_t events)
{
    return fl_fail(FL_EINVAL,
                   "{max_events}: %s at N = %lld, d = %lld, M = %lld makes %s%lld tile events (%s), "
                   "more than the limit %lld; raise {max_events} or M",
                   fl_algo_name(p->algo), (long long)p->N, (long long)p->d, (long long)p->M, what,
                   (long long)events, fl_seconds_of(events, FL_EVENTS_PER_SECOND), (long long)p->max_events);
}

const char *fl_seconds_of(int64_t work, double per_second)
{
    static _Thread_local char buf[4][48];
    static _Thread_local int next;
    char *b = buf[next++ % 4];
    const double s = (double)work / per_second;
    if (s < 1) snprintf(b, 48, "under a second here");
    else if (s < 120) snprintf(b, 48, "about %.0f s here", s);
    else if (s < 7200) snprintf(b, 48, "about %.0f min here", s / 60);
    else snprintf(b, 48, "about %.0f h here", s / 3600);
    return b;
}

/* The blocks and the exact tile events of a run of p, refusing past p->max_events before the
 * closed forms that walk every block (run's first step; fl_run_events without its blocks). */
static fl_status events_of(const fl_problem *p, fl_blocks *b, fl_blocks *bb, fl_counts *cf, fl_counts *cb,
                           int64_t *events)
{
    const int bwd = (p->pass & FL_PASS_BWD) != 0;
    const fl_schedule *sc = fl_schedule_get(p->algo);
    memset(bb, 0, sizeof *bb);
    memset(cb, 0, sizeof *cb);
    FL_TRY(fl_blocks_choose(p, b));
    if (bwd) FL_TRY(fl_blocks_choose_pass(p, 1, bb));
    if (p->max_events > 0 && sc->events_floor) {
        /* a closed form that walks every row (column) block: refuse a run that must exceed the
         * limit before walking ~N/Br blocks per segment to count it exactly */
        const int64_t lb = sc->events_floor(p, b, bwd ? bb : NULL);
        if (lb > p->max_events) {
            *events = lb;
            return refuse_events(p, "at least ", lb);
        }
    }
    FL_TRY(fl_closed_form_pass(p, 0, b, cf));
    if (bwd) FL_TRY(fl_closed_form_pass(p, 1, bb, cb));
    *events = cf->events + cb->events; /* both passes execute */
    if (p->max_events > 0 && *events > p->max_events) return refuse_events(p, "", *events);
    return FL_OK;
}

fl_status fl_run_events(const fl_problem *p, int64_t *events)
{
    fl_blocks b, bb;
    fl_counts cf, cb;
    *events = 0;
    FL_TRY(fl_problem_check(p));
    return events_of(p, &b, &bb, &cf, &cb, events);
}

static fl_status run(const fl_problem *p, fl_mode mode, fl_trace_fn trace, void *trace_ctx,
                     fl_values *vals, fl_result *r)
{
    const int bwd = (p->pass & FL_PASS_BWD) != 0, fwd_counted = (p->pass & FL_PASS_FWD) != 0;
    fl_blocks b, bb;
    fl_counts cf, cb;
    int64_t events;
    FL_TRY(events_of(p, &b, &bb, &cf, &cb, &events));
    const fl_schedule *sc = fl_schedule_get(p->algo);
    fl_segments sg;
    FL_TRY(fl_segments_build(p, fl_problem_group(p), &sg));
    fl_status s = FL_OK;
    fl_machine *m = NULL;
    inputs in = {0};
    ref_keep rk = {0};
    int64_t snap[FL_MAX_TENSORS][2] = {{0}}, snap_events = 0;
    if (mode == FL_COMPUTE && ((s = fl_compute_check(p)) ||
                               (s = sc->compute_size ? sc->compute_size(p, &b) : check_compute_size(p, sc, &sg))))
        goto done;
    if (!(m = fl_machine_alloc(p->M, mode, sc->name))) {
        s = FL_ENOMEM;
        goto done;
    }
    /* a bwd-only run hides the forward from the trace (and from the counts and peak below) */
    fl_machine_set_trace(m, fwd_counted ? trace : NULL, trace_ctx);
    fl_qkvo io;
    if ((s = add_tensors(m, p, sc, &b, &sg, bwd, vals, &io, &in))) goto done;
    io.q_rows = sg.q_rows;
    io.k_rows = sg.k_rows;
    io.segs = &sg;
    io.nseg = sg.nseg;
    if ((s = sc->fwd(m, p, &b, io))) goto done;
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
    if (bwd && (s = sc->bwd(m, p, &bb, io))) goto done;

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
    if ((s = collect(m, p, snap, snap_events, r))) goto done;
    r->bwd_total = bwd ? r->total - r->fwd_total : 0;
    r->lse_rel_err = r->dq_rel_err = r->dk_rel_err = r->dv_rel_err = r->dsink_rel_err = NAN;
    r->max_abs_err = r->rel_err = NAN;
    if (mode == FL_COMPUTE) {
        if (sc->flags & FL_SCHED_SOFTMAX) {
            s = check_softmax(m, p, io, r);
        } else {
            if (sc->reference_keep) rk.own = sc->reference_keep(p, &b, &rk.keep, rk.ctx, sizeof rk.ctx);
            s = check_attention(m, p, &sg, io, &in, &rk, bwd, r);
        }
    }
    if (vals && !s) {
        copy_out(m, (sc->flags & FL_SCHED_SOFTMAX) ? "Y" : "O", vals->O);
        copy_out(m, "L", vals->L);
        if (bwd) {
            copy_out(m, "dQ", vals->dQ);
            copy_out(m, "dK", vals->dK);
            copy_out(m, "dV", vals->dV);
            copy_out(m, "dsink", vals->dsink);
        }
    }
done:
    free(in.Kl);
    free(in.Vl);
    free(in.Qd);
    free(in.Kd);
    free(in.Vd);
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
