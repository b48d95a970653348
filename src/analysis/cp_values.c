/* cp_values.c: the forward of a context-parallel schedule with real values, checked against the
 * reference's attention of the whole problem (see fl_cp_check_values in cp.h).  What it proves:
 * the layouts, the step masks (the shifted blocks of striped attention included), the GQA head
 * maps of Ulysses and the merge rule together compute exact attention. */
#include <flashlab/cp.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <flashlab/masks.h>
#include <flashlab/rng.h>
#include <flashlab/run.h>
#include <flashlab/schedule.h>

#include "analysis/cp_layout.h"
#include "attention_ref.h"

typedef struct {
    const fl_cp_spec *s;
    int64_t N, n, d, B, H, Hkv;
    double *Q, *K, *V; /* whole problem, [batch][head][token][d] */
    double *Oacc, *Lacc; /* one device's accumulators, [batch][head][local row][d] and [..][row] */
    double *O;           /* the gathered output */
    double *q, *k, *v, *o, *l; /* one kernel's packed operands */
} work;

static double *row_of(const work *w, const double *X, int64_t heads, int64_t b, int64_t h, int64_t t)
{
    return (double *)X + ((b * heads + h) * w->N + t) * w->d;
}

/* Merges (o, l) into (O, L): L' = log(e^L + e^l), O' = e^(L - L') O + e^(l - L') o (rule CP-M);
 * an empty side (-inf) adds nothing. */
static void merge_row(double *O, double *L, const double *o, double l, int64_t d)
{
    if (l == -INFINITY) return;
    const double m = *L > l ? *L : l, L2 = m + log(exp(*L - m) + exp(l - m));
    const double a = *L == -INFINITY ? 0.0 : exp(*L - L2), c = exp(l - L2);
    for (int64_t k = 0; k < d; k++) O[k] = a * O[k] + c * o[k];
    *L = L2;
}

/* One kernel: the queries of device r at local rows [q_off, q_off + rows) of query heads
 * [q0, q0 + hq) against the keys of block src at [k_off, k_off + rows) of K/V heads [k0, k0 + hk),
 * packed as segments.h lays them out; the result merged into the accumulators (rows q_off..). */
static fl_status kernel(work *w, const fl_problem *q, int64_t r, int64_t src, int64_t q_off, int64_t k_off,
                        int64_t q0, int64_t hq, int64_t k0, int64_t hk)
{
    const fl_cp_spec *s = w->s;
    const int64_t rows = q->N, d = w->d, Tq = w->B * rows;
    for (int64_t b = 0; b < w->B; b++)
        for (int64_t i = 0; i < rows; i++) {
            for (int64_t h = 0; h < hq; h++)
                memcpy(w->q + ((h * Tq) + b * rows + i) * d,
                       row_of(w, w->Q, w->H, b, q0 + h, fl_cp_pos(s, w->n, r, q_off + i)), (size_t)d * sizeof(double));
            for (int64_t h = 0; h < hk; h++) {
                const int64_t t = fl_cp_pos(s, w->n, src, k_off + i);
                memcpy(w->k + ((h * Tq) + b * rows + i) * d, row_of(w, w->K, w->Hkv, b, k0 + h, t), (size_t)d * sizeof(double));
                memcpy(w->v + ((h * Tq) + b * rows + i) * d, row_of(w, w->V, w->Hkv, b, k0 + h, t), (size_t)d * sizeof(double));
            }
        }
    fl_values v = {w->q, w->k, w->v, NULL, w->o, w->l, NULL, NULL, NULL, NULL, NULL};
    fl_result res;
    FL_TRY(fl_run_values(q, &v, &res));
    for (int64_t b = 0; b < w->B; b++)
        for (int64_t h = 0; h < hq; h++)
            for (int64_t i = 0; i < rows; i++) {
                const int64_t row = (h * Tq) + b * rows + i, acc = (b * hq + h) * w->N + q_off + i;
                merge_row(w->Oacc + acc * d, w->Lacc + acc, w->o + row * d, w->l[row], d);
            }
    return FL_OK;
}

/* Empties device accumulators (O = 0, L = -inf) for the given heads. */
static void reset(work *w, int64_t heads)
{
    memset(w->Oacc, 0, (size_t)(w->B * heads * w->N * w->d) * sizeof(double));
    for (int64_t i = 0; i < w->B * heads * w->N; i++) w->Lacc[i] = -INFINITY;
}

/* Puts device r's output rows in place in O. */
static void gather(work *w, int64_t r, int64_t q0, int64_t hq, int64_t rows, int ulysses)
{
    for (int64_t b = 0; b < w->B; b++)
        for (int64_t h = 0; h < hq; h++)
            for (int64_t i = 0; i < rows; i++)
                memcpy(row_of(w, w->O, w->H, b, q0 + h, ulysses ? i : fl_cp_pos(w->s, w->n, r, i)),
                       w->Oacc + ((b * hq + h) * w->N + i) * w->d, (size_t)w->d * sizeof(double));
}

static fl_status run_devices(work *w)
{
    const fl_cp_spec *s = w->s;
    for (int64_t r = 0; r < s->P; r++) {
        if (s->kind == FL_CP_ULYSSES) {
            int64_t q0, hq, k0, hk;
            fl_cp_heads(s, r, &q0, &hq, &k0, &hk);
            const fl_problem q = fl_cp_kernel_problem(s, w->N, s->p.causal ? FL_CAUSAL_TOP_LEFT : FL_CAUSAL_NONE, -1, hq, hk, 0);
            reset(w, hq);
            FL_TRY(kernel(w, &q, 0, 0, 0, 0, q0, hq, k0, hk));
            gather(w, r, q0, hq, w->N, 1);
            continue;
        }
        reset(w, w->H);
        for (int64_t t = 0; t < s->P; t++) {
            const int64_t src = ((r - t) % s->P + s->P) % s->P;
            fl_cp_step st;
            fl_cp_step_of(s, w->n, r, src, &st);
            if (st.empty) continue;
            const fl_problem q = fl_cp_kernel_problem(s, st.rows, st.causal, st.window_right, w->H, w->Hkv, 0);
            FL_TRY(kernel(w, &q, r, src, st.q_off, st.k_off, 0, w->H, 0, w->Hkv));
        }
        gather(w, r, 0, w->H, w->n, 0);
    }
    return FL_OK;
}

/* Ulysses runs one kernel per device with the plain positions 0..N-1: fl_cp_pos is the ring's
 * with r = 0, which is the identity. */
fl_status fl_cp_check_values(const fl_cp_spec *s, double *rel_err)
{
    FL_TRY(fl_cp_check(s));
    work w = {.s = s, .N = s->p.N, .n = s->p.N / s->P, .d = s->p.d, .B = s->p.batch, .H = s->p.heads,
              .Hkv = s->p.kv_heads ? s->p.kv_heads : s->p.heads};
    int64_t qn, kn, nd;
    if (!fl_mul_ok(w.N, w.d, &nd) || !fl_mul_ok(w.B, w.H, &qn) || !fl_mul_ok(qn, nd, &qn) || !fl_mul_ok(w.B, w.Hkv, &kn) ||
        !fl_mul_ok(kn, nd, &kn) || qn > FL_COMPUTE_MAX_VALUES / 8 || kn > FL_COMPUTE_MAX_VALUES / 8)
        return fl_fail(FL_EINVAL, "{N}: a compute run of N = %lld, d = %lld over all heads holds more than %lld values; "
                                  "check values on a smaller problem", (long long)w.N, (long long)w.d,
                       (long long)FL_COMPUTE_MAX_VALUES);
    fl_status e = FL_OK;
    w.Q = malloc((size_t)qn * sizeof(double)), w.K = malloc((size_t)kn * sizeof(double));
    w.V = malloc((size_t)kn * sizeof(double)), w.O = calloc((size_t)qn, sizeof(double));
    w.Oacc = malloc((size_t)qn * sizeof(double)), w.Lacc = malloc((size_t)(w.B * w.H * w.N) * sizeof(double));
    w.q = malloc((size_t)qn * sizeof(double)), w.o = malloc((size_t)qn * sizeof(double));
    w.k = malloc((size_t)kn * sizeof(double)), w.v = malloc((size_t)kn * sizeof(double));
    w.l = malloc((size_t)(w.B * w.H * w.N) * sizeof(double));
    double *ref = malloc((size_t)qn * sizeof(double));
    if (!w.Q || !w.K || !w.V || !w.O || !w.Oacc || !w.Lacc || !w.q || !w.o || !w.k || !w.v || !w.l || !ref)
        e = fl_fail(FL_ENOMEM, "context parallelism: out of memory for the values");
    if (!e) {
        uint64_t st = s->p.seed;
        fl_rng_fill(&st, w.Q, qn, -1, 1);
        fl_rng_fill(&st, w.K, kn, -1, 1);
        fl_rng_fill(&st, w.V, kn, -1, 1);
        e = run_devices(&w);
    }
    fl_mask mk;
    if (!e) e = fl_mask_init(&mk, w.N, w.N, s->p.causal ? FL_CAUSAL_TOP_LEFT : FL_CAUSAL_NONE, -1, -1);
    const int64_t g = w.H / w.Hkv;
    for (int64_t b = 0; b < w.B && !e; b++)
        for (int64_t h = 0; h < w.H && !e; h++)
            e = fl_ref_attention(w.N, w.N, w.d, w.d, row_of(&w, w.Q, w.H, b, h, 0), row_of(&w, w.K, w.Hkv, b, h / g, 0),
                                 row_of(&w, w.V, w.Hkv, b, h / g, 0), 1.0 / sqrt((double)w.d),
                                 s->p.causal ? fl_mask_keep_fn : NULL, &mk, row_of(&w, ref, w.H, b, h, 0), NULL);
    if (!e) *rel_err = fl_rel_err(w.O, ref, qn);
    free(w.Q), free(w.K), free(w.V), free(w.O), free(w.Oacc), free(w.Lacc);
    free(w.q), free(w.o), free(w.k), free(w.v), free(w.l), free(ref);
    return e;
}
