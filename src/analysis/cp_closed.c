/* cp_closed.c: the closed forms of docs/context_parallel.md §4 for one device and one pass:
 * link elements (CP-R1, CP-R2, CP-U1, CP-U2), kept pairs (CP-K), kernels, and HBM as the
 * single-device closed forms of docs/model.md §4 times the steps that run them plus the merges
 * (CP-M).  They are never a reported count: the tests hold them equal to fl_cp_run's. */
#include <flashlab/cp.h>

#include <string.h>

#include <flashlab/schedule.h>

#include "analysis/cp_layout.h"

typedef struct {
    int overflow;
} acc;

static int64_t mul(acc *a, int64_t x, int64_t y)
{
    int64_t r;
    if (!fl_mul_ok(x, y, &r)) a->overflow = 1, r = 0;
    return r;
}

static int64_t add(acc *a, int64_t x, int64_t y)
{
    int64_t r;
    if (!fl_add_ok(x, y, &r)) a->overflow = 1, r = 0;
    return r;
}

/* The single-device closed form (docs/model.md §4) of one kernel: reads + writes. */
static fl_status kernel_closed(const fl_cp_spec *s, int64_t rows, fl_causal causal, int64_t h, int64_t hk, int bwd,
                               int64_t *total)
{
    const fl_problem q = fl_cp_kernel_problem(s, rows, causal, -1, h, hk, bwd);
    fl_blocks b;
    fl_counts c;
    FL_TRY(fl_blocks_choose_pass(&q, bwd, &b));
    FL_TRY(fl_closed_form_pass(&q, bwd, &b, &c));
    *total = c.total;
    return FL_OK;
}

/* Pairs of one head: rows^2 dense, rows (rows + 1) / 2 causal (CP-K). */
static int64_t pairs_of(acc *a, int64_t rows, int causal)
{
    return causal ? mul(a, rows, rows + 1) / 2 : mul(a, rows, rows);
}

fl_status fl_cp_closed(const fl_cp_spec *s, int64_t dev, int bwd, fl_cp_closed_counts *c)
{
    FL_TRY(fl_cp_check(s));
    acc a = {0};
    memset(c, 0, sizeof *c);
    const int64_t P = s->P, N = s->p.N, n = N / P, d = s->p.d, b = s->p.batch, H = s->p.heads;
    const int64_t Hkv = s->p.kv_heads ? s->p.kv_heads : H;
    const int causal = s->p.causal != FL_CAUSAL_NONE;
    if (s->kind == FL_CP_ULYSSES) {
        const int64_t hq = H / P, hk = Hkv >= P ? Hkv / P : 1, rep = Hkv >= P ? 1 : P / Hkv;
        /* CP-U1, CP-U2: (P-1) b n d (2 H/P + 2 hk), forward and backward alike */
        c->link_sent = c->link_recv = mul(&a, mul(&a, mul(&a, P - 1, b), mul(&a, n, d)), 2 * hq + 2 * hk);
        c->pairs = mul(&a, mul(&a, b, hq), pairs_of(&a, N, causal));
        c->kernels = 1;
        if (!s->link_only) {
            FL_TRY(kernel_closed(s, N, causal ? FL_CAUSAL_TOP_LEFT : FL_CAUSAL_NONE, hq, hk, bwd, &c->kernel_total));
            if (bwd && rep > 1) /* CP-M: dK and dV, each K/V head: rep partials read, the sum written */
                c->merge_total = mul(&a, mul(&a, 2 * Hkv, rep + 1), mul(&a, mul(&a, n, b), d));
        }
        return a.overflow ? fl_fail(FL_EOVERFLOW, "{N}: closed forms overflow") : FL_OK;
    }
    /* ring, striped: the steps of device dev by kind (CP-S): full blocks, diagonal blocks
     * (causal n x n), shifted blocks (causal n-1 x n-1, striped only) */
    const int64_t kv = mul(&a, mul(&a, 2 * b, Hkv), mul(&a, n, d));
    int64_t full = P, diag = 0, shifted = 0;
    if (causal && s->kind == FL_CP_RING) full = dev, diag = 1;
    if (causal && s->kind == FL_CP_STRIPED) full = 0, diag = dev + 1, shifted = n > 1 ? P - 1 - dev : 0;
    /* CP-R1, CP-R2: (P-1) blocks of K, V forward; backward also P dK, dV accumulators */
    c->link_sent = c->link_recv = P > 1 ? mul(&a, kv, bwd ? 2 * P - 1 : P - 1) : 0;
    c->kernels = full + diag + shifted;
    c->pairs = mul(&a, mul(&a, b, H),
                  add(&a, add(&a, mul(&a, full, pairs_of(&a, n, 0)), mul(&a, diag, pairs_of(&a, n, 1))),
                     mul(&a, shifted, pairs_of(&a, n - 1, 1))));
    if (!s->link_only) {
        int64_t cf = 0, cd = 0, cs = 0;
        if (full) FL_TRY(kernel_closed(s, n, FL_CAUSAL_NONE, H, Hkv, bwd, &cf));
        if (diag) FL_TRY(kernel_closed(s, n, FL_CAUSAL_TOP_LEFT, H, Hkv, bwd, &cd));
        if (shifted) FL_TRY(kernel_closed(s, n - 1, FL_CAUSAL_TOP_LEFT, H, Hkv, bwd, &cs));
        c->kernel_total = add(&a, add(&a, mul(&a, full, cf), mul(&a, diag, cd)), mul(&a, shifted, cs));
        /* CP-M: every kernel after a device's first merges (forward: 3 R (d + 1) for R query
         * rows; backward: 3 R d for dQ, and 6 R' d for dK, dV over R' key rows).  The first
         * kernel is step 0, a full or diagonal block of n rows; shifted blocks cover n - 1. */
        const int64_t merges_n = c->kernels - 1 - shifted, rq = mul(&a, b, H), rk = mul(&a, b, Hkv);
        if (!bwd)
            c->merge_total = mul(&a, mul(&a, 3 * rq, d + 1), add(&a, mul(&a, merges_n, n), mul(&a, shifted, n - 1)));
        else
            c->merge_total = mul(&a, mul(&a, 3 * d, add(&a, rq, 2 * rk)), add(&a, mul(&a, merges_n, n), mul(&a, shifted, n - 1)));
    }
    return a.overflow ? fl_fail(FL_EOVERFLOW, "{N}: closed forms overflow") : FL_OK;
}
