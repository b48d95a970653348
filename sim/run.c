/* run.c: one schedule on the machine, counts copied out, output checked (see run.h). */
#include "run.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../reference/attention_ref.h"
#include "../reference/rng.h"
#include "schedules.h"

fl_schedule_fn fl_schedule_for(fl_algo a)
{
    switch (a) {
    case FL_ALGO_STANDARD: return fl_schedule_standard;
    case FL_ALGO_FLASH1: return fl_schedule_flash1;
    case FL_ALGO_FLASH2: return fl_schedule_flash2;
    default: return NULL;
    }
}

/* Values a compute run holds in HBM: Q, K, V, O, plus S and P for standard, + N stats. */
static fl_status check_compute_size(const fl_problem *p)
{
    int64_t Nd, NN = 0, total;
    int ok = fl_mul_ok(p->N, p->d, &Nd) && fl_mul_ok(Nd, 4, &total);
    if (ok && p->algo == FL_ALGO_STANDARD)
        ok = fl_mul_ok(p->N, p->N, &NN) && fl_mul_ok(NN, 2, &NN) && fl_add_ok(total, NN, &total);
    if (!ok || total > FL_COMPUTE_MAX_VALUES)
        return fl_fail(FL_EINVAL,
                       "--N/--d: a compute run of %s at N = %lld, d = %lld would hold more than "
                       "%lld values in HBM; use count (no arithmetic) for sizes this large",
                       fl_algo_name(p->algo), (long long)p->N, (long long)p->d,
                       (long long)FL_COMPUTE_MAX_VALUES);
    return FL_OK;
}

static void compare(fl_machine *m, const fl_problem *p, fl_qkvo io, fl_result *r, double *Oref,
                    double *Lref)
{
    const int64_t Nd = p->N * p->d;
    const double *O = fl_tensor_get(m, io.O)->data;
    r->computed = 1;
    r->max_abs_err = fl_max_abs_diff(O, Oref, Nd);
    r->rel_err = fl_rel_err(O, Oref, Nd);
    r->lse_rel_err = NAN;
    for (int t = 0; t < fl_tensor_count(m); t++) {
        fl_tensor *T = fl_tensor_get(m, t);
        if (strcmp(T->name, "L") == 0) r->lse_rel_err = fl_rel_err(T->data, Lref, p->N);
    }
}

fl_status fl_run(const fl_problem *p, fl_mode mode, fl_trace_fn trace, void *trace_ctx,
                 fl_result *r)
{
    fl_blocks b;
    fl_counts cf;
    FL_TRY(fl_blocks_choose(p, &b));
    FL_TRY(fl_closed_form(p, &b, &cf));
    if (p->max_events > 0 && cf.events > p->max_events)
        return fl_fail(FL_EINVAL,
                       "--max-events: %s at N = %lld, d = %lld, M = %lld makes %lld tile events, "
                       "more than the limit %lld; raise --max-events or M",
                       fl_algo_name(p->algo), (long long)p->N, (long long)p->d, (long long)p->M,
                       (long long)cf.events, (long long)p->max_events);
    if (mode == FL_COMPUTE) FL_TRY(check_compute_size(p));

    fl_machine *m = fl_machine_alloc(p->M, mode, fl_algo_name(p->algo));
    if (!m) return FL_ENOMEM;
    fl_machine_set_trace(m, trace, trace_ctx);
    fl_qkvo io;
    double *Oref = NULL, *Lref = NULL;
    fl_status s;
    if ((s = fl_tensor_add(m, "Q", p->N, p->d, p->elem_bytes, &io.Q)) ||
        (s = fl_tensor_add(m, "K", p->N, p->d, p->elem_bytes, &io.K)) ||
        (s = fl_tensor_add(m, "V", p->N, p->d, p->elem_bytes, &io.V)) ||
        (s = fl_tensor_add(m, "O", p->N, p->d, p->elem_bytes, &io.O)))
        goto done;
    if (mode == FL_COMPUTE) {
        uint64_t st = p->seed;
        const int64_t Nd = p->N * p->d;
        fl_rng_fill(&st, fl_tensor_get(m, io.Q)->data, Nd, -1.0, 1.0);
        fl_rng_fill(&st, fl_tensor_get(m, io.K)->data, Nd, -1.0, 1.0);
        fl_rng_fill(&st, fl_tensor_get(m, io.V)->data, Nd, -1.0, 1.0);
    }
    if ((s = fl_schedule_for(p->algo)(m, p, &b, io))) goto done;

    memset(r, 0, sizeof *r);
    r->p = *p;
    r->b = b;
    r->closed = cf;
    r->ntensors = fl_tensor_count(m);
    for (int t = 0; t < r->ntensors; t++) {
        const fl_tensor *T = fl_tensor_get(m, t);
        memcpy(r->t[t].name, T->name, sizeof T->name);
        r->t[t].reads = T->reads;
        r->t[t].writes = T->writes;
        r->t[t].elem_bytes = T->elem_bytes;
        int64_t tb; /* bytes can overflow where the element counts do not */
        if (!fl_add_ok(T->reads, T->writes, &tb) || !fl_mul_ok(tb, T->elem_bytes, &tb) ||
            !fl_add_ok(r->bytes, tb, &r->bytes)) {
            s = fl_fail(FL_EOVERFLOW,
                        "--N/--d: the bytes %s moves at N = %lld, d = %lld would overflow 64-bit "
                        "arithmetic", fl_algo_name(p->algo), (long long)p->N, (long long)p->d);
            goto done;
        }
    }
    r->reads = fl_machine_reads(m);
    r->writes = fl_machine_writes(m);
    r->total = r->reads + r->writes;
    r->sram_peak = fl_machine_sram_peak(m);
    r->events = fl_machine_events(m);
    r->lse_rel_err = NAN;
    r->max_abs_err = r->rel_err = NAN;
    if (mode == FL_COMPUTE) {
        Oref = malloc((size_t)(p->N * p->d) * sizeof *Oref);
        Lref = malloc((size_t)p->N * sizeof *Lref);
        if (!Oref || !Lref) {
            s = fl_fail(FL_ENOMEM, "out of memory for the reference output");
            goto done;
        }
        const fl_tensor *Q = fl_tensor_get(m, io.Q), *K = fl_tensor_get(m, io.K),
                        *V = fl_tensor_get(m, io.V);
        if ((s = fl_ref_attention(p->N, p->N, p->d, p->d, Q->data, K->data, V->data,
                                  1.0 / sqrt((double)p->d), NULL, NULL, Oref, Lref)))
            goto done;
        compare(m, p, io, r, Oref, Lref);
    }
done:
    free(Oref);
    free(Lref);
    fl_machine_free(m);
    return s;
}
