/* run_ext.c: fl_run for decode, blocksparse, memeff and softmax (see problem_ext.h): their
 * inputs, their schedule, their reference. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention_ref.h"
#include <flashlab/blocksparse_mask.h>
#include <flashlab/masks.h>
#include <flashlab/rng.h>
#include "softmax_ref.h"
#include <flashlab/problem_ext.h>
#include "schedules/schedules.h"

/* Fills *r from the machine after a schedule ran (one forward pass, no snapshots): problem,
 * blocks, closed form, per-tensor and total counts, peak SRAM, events; errors NaN. */
static void collect(fl_machine *m, const fl_problem *p, const fl_blocks *b, const fl_counts *cf,
                    fl_result *r)
{
    memset(r, 0, sizeof *r);
    r->p = *p;
    r->b = *b;
    r->closed = *cf;
    r->segments = 1;
    r->ntensors = fl_tensor_count(m);
    for (int t = 0; t < r->ntensors; t++) {
        const fl_tensor *T = fl_tensor_get(m, t);
        memcpy(r->t[t].name, T->name, sizeof T->name);
        r->t[t].reads = T->reads;
        r->t[t].writes = T->writes;
        r->t[t].elem_bytes = T->elem_bytes;
        r->bytes += (T->reads + T->writes) * T->elem_bytes;
    }
    r->reads = fl_machine_reads(m);
    r->writes = fl_machine_writes(m);
    r->total = r->reads + r->writes;
    r->fwd_total = r->total;
    r->sram_peak = fl_machine_sram_peak(m);
    r->events = fl_machine_events(m);
    r->max_abs_err = r->rel_err = r->lse_rel_err = NAN;
    r->dq_rel_err = r->dk_rel_err = r->dv_rel_err = NAN;
}

static int keep_mask(int64_t i, int64_t j, const void *ctx) { return fl_mask_keep(ctx, i, j); }

/* Values a compute run holds in HBM (inputs, outputs, partials, summaries). */
static fl_status check_compute_size(const fl_problem *p, const fl_blocks *b)
{
    const int64_t N = p->N, Nk = fl_ext_Nk(p), d = p->d;
    double v; /* in double: only compared with a limit far below 2^53 */
    switch (p->algo) {
    case FL_ALGO_DECODE: {
        fl_decode_geom g;
        fl_decode_geometry(p, b, &g);
        const double keys = g.paged ? (double)g.pool * g.P : (double)Nk;
        v = 2.0 * N * d + 2.0 * keys * d + 2.0 * Nk * d + (double)g.S * N * (d + 2);
        break;
    }
    case FL_ALGO_MEMEFF: v = 4.0 * N * d + (double)fl_cdiv(N, b->Bc) * N * (d + 2); break;
    case FL_ALGO_SOFTMAX_SAFE:
    case FL_ALGO_SOFTMAX_ONLINE: v = 2.0 * N * Nk; break;
    default: v = 4.0 * N * d; break;
    }
    if (v > (double)FL_COMPUTE_MAX_VALUES)
        return fl_fail(FL_EINVAL, "--N/--Nk/--d: a compute run of %s would hold more than %lld "
                                  "values in HBM; use count (no arithmetic) for sizes this large",
                       fl_algo_name(p->algo), (long long)FL_COMPUTE_MAX_VALUES);
    return FL_OK;
}

/* Logsumexp comparison: rows with no kept key must be -inf in both. */
static double lse_err(const double *L, const double *Lref, int64_t n)
{
    double e = 0.0, scale = 0.0;
    for (int64_t i = 0; i < n; i++) {
        if (Lref[i] == -INFINITY || L[i] == -INFINITY) {
            if (L[i] != Lref[i]) return NAN;
            continue;
        }
        e = fmax(e, fabs(L[i] - Lref[i]));
        scale = fmax(scale, fabs(Lref[i]));
        if (isnan(L[i])) return NAN;
    }
    return scale > 0.0 ? e / scale : e;
}

/* Adds decode's cache: contiguous K, V (Nk x d), or the pool (pool * P x d) with the logical
 * pages placed through the block table, unused pages NaN (never read), the padding rows of the
 * last page p->pad_value; and BT.  Kl, Vl (compute): the logical cache, for the reference. */
static fl_status add_cache(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo *io,
                           const double *Kl, const double *Vl)
{
    fl_decode_geom g;
    fl_decode_geometry(p, b, &g);
    const int64_t d = p->d, rows = g.paged ? g.pool * g.P : g.Nk;
    int bt;
    FL_TRY(fl_tensor_add(m, "K", rows, d, p->elem_bytes, &io->K));
    FL_TRY(fl_tensor_add(m, "V", rows, d, p->elem_bytes, &io->V));
    if (!g.paged) {
        if (fl_computes(m)) {
            memcpy(fl_tensor_get(m, io->K)->data, Kl, (size_t)(g.Nk * d) * sizeof(double));
            memcpy(fl_tensor_get(m, io->V)->data, Vl, (size_t)(g.Nk * d) * sizeof(double));
        }
        return FL_OK;
    }
    FL_TRY(fl_tensor_add(m, "BT", g.pages, 1, 4, &bt));
    if (!fl_computes(m)) return FL_OK;
    double *K = fl_tensor_get(m, io->K)->data, *V = fl_tensor_get(m, io->V)->data;
    int64_t *table = malloc((size_t)g.pages * sizeof *table);
    if (!table) return fl_fail(FL_ENOMEM, "out of memory for the block table");
    fl_status s = fl_decode_block_table(p, &g, table);
    if (s) { free(table); return s; }
    for (int64_t k = 0; k < rows * d; k++) K[k] = V[k] = NAN; /* unused pages: anything */
    for (int64_t pos = 0; pos < g.pages * g.P; pos++) {
        const int64_t row = table[pos / g.P] * g.P + pos % g.P;
        for (int64_t c = 0; c < d; c++) {
            K[row * d + c] = pos < g.Nk ? Kl[pos * d + c] : p->pad_value;
            V[row * d + c] = pos < g.Nk ? Vl[pos * d + c] : p->pad_value;
        }
    }
    for (int64_t k = 0; k < g.pages; k++) fl_tensor_get(m, bt)->data[k] = (double)table[k];
    free(table);
    return FL_OK;
}

/* fl_run_ext, and with out (not NULL, compute mode) a copy of the output. */
static fl_status run_ext(const fl_problem *p, fl_mode mode, fl_trace_fn trace, void *trace_ctx,
                         const fl_blocks *b, const fl_counts *cf, double *out, fl_result *r)
{
    const int64_t N = p->N, Nk = fl_ext_Nk(p), d = p->d;
    const int softmax = p->algo == FL_ALGO_SOFTMAX_SAFE || p->algo == FL_ALGO_SOFTMAX_ONLINE;
    const int cmp = mode == FL_COMPUTE;
    if (cmp) FL_TRY(check_compute_size(p, b));
    fl_machine *m = fl_machine_alloc(p->M, mode, fl_algo_name(p->algo));
    if (!m) return FL_ENOMEM;
    fl_machine_set_trace(m, trace, trace_ctx);
    fl_qkvo io = {.Q = -1, .K = -1, .V = -1, .O = -1, .dO = -1, .dQ = -1, .dK = -1, .dV = -1};
    double *Q = NULL, *K = NULL, *V = NULL, *Oref = NULL, *Lref = NULL;
    const int64_t nout = softmax ? N * Nk : N * d;
    fl_status s = FL_OK;
    uint64_t st = p->seed;
    if (cmp) { /* the inputs, drawn in the order Q (or X), K, V */
        const int64_t nq = softmax ? N * Nk : N * d;
        Q = malloc((size_t)nq * sizeof *Q);
        Oref = malloc((size_t)nout * sizeof *Oref);
        Lref = malloc((size_t)N * sizeof *Lref);
        if (!softmax) {
            K = malloc((size_t)(Nk * d) * sizeof *K);
            V = malloc((size_t)(Nk * d) * sizeof *V);
        }
        if (!Q || !Oref || !Lref || (!softmax && (!K || !V))) {
            s = fl_fail(FL_ENOMEM, "out of memory for the inputs of %s", fl_algo_name(p->algo));
            goto done;
        }
        fl_rng_fill(&st, Q, nq, softmax ? -10.0 : -1.0, softmax ? 10.0 : 1.0);
        if (!softmax) {
            fl_rng_fill(&st, K, Nk * d, -1.0, 1.0);
            fl_rng_fill(&st, V, Nk * d, -1.0, 1.0);
        }
    }
    if (softmax) {
        if ((s = fl_tensor_add(m, "X", N, Nk, p->elem_bytes, &io.Q)) ||
            (s = fl_tensor_add(m, "Y", N, Nk, p->elem_bytes, &io.O)))
            goto done;
    } else {
        if ((s = fl_tensor_add(m, "Q", N, d, p->elem_bytes, &io.Q))) goto done;
        if (p->algo == FL_ALGO_DECODE) s = add_cache(m, p, b, &io, K, V);
        else if (!(s = fl_tensor_add(m, "K", N, d, p->elem_bytes, &io.K)) &&
                 !(s = fl_tensor_add(m, "V", N, d, p->elem_bytes, &io.V)) && cmp) {
            memcpy(fl_tensor_get(m, io.K)->data, K, (size_t)(N * d) * sizeof(double));
            memcpy(fl_tensor_get(m, io.V)->data, V, (size_t)(N * d) * sizeof(double));
        }
        if (s || (s = fl_tensor_add(m, "O", N, d, p->elem_bytes, &io.O))) goto done;
    }
    if (cmp) memcpy(fl_tensor_get(m, io.Q)->data, Q, (size_t)(softmax ? N * Nk : N * d) * sizeof(double));
    if ((s = fl_schedule_for(p->algo)(m, p, b, io))) goto done;

    collect(m, p, b, cf, r);
    if (!cmp) goto done;
    /* the reference */
    const double scale = 1.0 / sqrt((double)d);
    if (softmax) {
        for (int64_t i = 0; i < N; i++) fl_ref_softmax(Q + i * Nk, Nk, Oref + i * Nk);
    } else if (p->algo == FL_ALGO_DECODE) {
        fl_mask mk;
        if ((s = fl_mask_init(&mk, N, Nk, p->causal, p->window_left, p->window_right)) ||
            (s = fl_ref_attention(N, Nk, d, d, Q, K, V, scale, keep_mask, &mk, Oref, Lref)))
            goto done;
    } else if (p->algo == FL_ALGO_BLOCKSPARSE) {
        const fl_bsmask mk = fl_bsmask_make(N, N, b->Br, b->Bc, p->density, p->mask_seed);
        if ((s = fl_ref_attention(N, N, d, d, Q, K, V, scale, fl_bsmask_keep, &mk, Oref, Lref)))
            goto done;
    } else if ((s = fl_ref_attention(N, N, d, d, Q, K, V, scale, NULL, NULL, Oref, Lref))) {
        goto done;
    }
    const double *O = fl_tensor_get(m, io.O)->data;
    if (out) memcpy(out, O, (size_t)nout * sizeof *out);
    r->computed = 1;
    r->max_abs_err = fl_max_abs_diff(O, Oref, nout);
    r->rel_err = fl_rel_err(O, Oref, nout);
    for (int t = 0; t < fl_tensor_count(m); t++)
        if (strcmp(fl_tensor_get(m, t)->name, "L") == 0)
            r->lse_rel_err = lse_err(fl_tensor_get(m, t)->data, Lref, N);
done:
    free(Q);
    free(K);
    free(V);
    free(Oref);
    free(Lref);
    fl_machine_free(m);
    return s;
}

fl_status fl_run_ext(const fl_problem *p, fl_mode mode, fl_trace_fn trace, void *trace_ctx,
                     const fl_blocks *b, const fl_counts *cf, fl_result *r)
{
    return run_ext(p, mode, trace, trace_ctx, b, cf, NULL, r);
}

fl_status fl_run_ext_values(const fl_problem *p, double *out, fl_result *r)
{
    fl_blocks b;
    fl_counts cf;
    if (!fl_algo_is_ext(p->algo))
        return fl_fail(FL_EINVAL, "--algo: fl_run_ext_values runs decode, blocksparse, memeff or softmax");
    FL_TRY(fl_blocks_choose(p, &b));
    FL_TRY(fl_closed_form(p, &b, &cf));
    return run_ext(p, FL_COMPUTE, NULL, NULL, &b, &cf, out, r);
}
