/* softmax.c: softmax alone, row by row over an N x Nk matrix X (Milakov & Gimelshein,
 * "Online normalizer calculation for softmax", 2018).  Each pass re-reads X, as the paper's
 * algorithms do: a pass keeps nothing of X on chip for the next one.
 *
 * softmax-safe (their Algorithm 2, 3 passes):          softmax-online (their Algorithm 3):
 *  1 m = -inf; for j: m = max(m, x_j)     load x         1 m = -inf, l = 0; for j:
 *  2 l = 0;    for j: l += e^(x_j - m)    load x             m' = max(m, x_j),
 *  3 for j: y_j = e^(x_j - m) / l         load x, store y    l = l e^(m - m') + e^(x_j - m')  load x
 *                                                         2 for j: y_j = e^(x_j - m) / l   load x, store y
 *
 * so per element: 3 reads + 1 write (safe) against 2 reads + 1 write (online): the paper's
 * "4 memory accesses per element vs 3".  Tiles are Br rows x Bc columns of X; the output tile
 * overwrites the input tile on chip.  SRAM: the tile and m, l per row, eq. (FX).  Counts: (CX).
 * The caller adds X (N x Nk) as io.Q and Y (N x Nk) as io.O; io.K and io.V are unused.
 */
#include <math.h>

#include <stdio.h>

#include <flashlab/ops.h>

#include "rules.h"
#include "schedules.h"

static fl_status softmax(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io,
                         int online)
{
    const int64_t N = p->N, Nk = p->Nk ? p->Nk : p->N, Br = b->Br, Bc = b->Bc;
    fl_buf *X, *mx, *l;
    FL_TRY(fl_sram_alloc(m, "X_ij", Br, Bc, &X));
    FL_TRY(fl_sram_alloc(m, "m_i", Br, 1, &mx));
    FL_TRY(fl_sram_alloc(m, "l_i", Br, 1, &l));
    const int cmp = fl_computes(m);
    for (int64_t r0 = 0; r0 < N; r0 += Br) {
        const int64_t br = fl_min64(Br, N - r0);
        fl_op_fill(mx, br, 1, -INFINITY);
        fl_op_fill(l, br, 1, 0.0);
        for (int pass = online ? 1 : 0; pass < 2; pass++) /* safe: max pass, then sum pass */
            for (int64_t c0 = 0; c0 < Nk; c0 += Bc) {
                const int64_t bc = fl_min64(Bc, Nk - c0);
                FL_TRY(fl_load(m, X, io.Q, r0, c0, br, bc));
                if (!cmp) continue;
                for (int64_t r = 0; r < br; r++) {
                    const double *x = X->x + r * Bc;
                    double *mr = &mx->x[r], *lr = &l->x[r];
                    for (int64_t j = 0; j < bc; j++) {
                        if (online) { /* Algorithm 3, line 4-5 */
                            const double mn = fmax(*mr, x[j]);
                            *lr = *lr * exp(*mr - mn) + exp(x[j] - mn);
                            *mr = mn;
                        } else if (pass == 0) {
                            *mr = fmax(*mr, x[j]);
                        } else {
                            *lr += exp(x[j] - *mr);
                        }
                    }
                }
            }
        for (int64_t c0 = 0; c0 < Nk; c0 += Bc) { /* the output pass */
            const int64_t bc = fl_min64(Bc, Nk - c0);
            FL_TRY(fl_load(m, X, io.Q, r0, c0, br, bc));
            if (cmp)
                for (int64_t r = 0; r < br; r++)
                    for (int64_t j = 0; j < bc; j++)
                        X->x[r * Bc + j] = exp(X->x[r * Bc + j] - mx->x[r]) / l->x[r];
            FL_TRY(fl_store(m, X, io.O, r0, c0, br, bc));
        }
    }
    fl_sram_free(m, X);
    fl_sram_free(m, mx);
    fl_sram_free(m, l);
    return FL_OK;
}

static fl_status fl_schedule_softmax_safe(fl_machine *m, const fl_problem *p, const fl_blocks *b,
                                          fl_qkvo io)
{
    return softmax(m, p, b, io, 0);
}

static fl_status fl_schedule_softmax_online(fl_machine *m, const fl_problem *p, const fl_blocks *b,
                                            fl_qkvo io)
{
    return softmax(m, p, b, io, 1);
}

/* ---- the descriptors: rule BX, footprint FX, the closed form CX ---- */

/* (FX) softmax: a tile Br x Bc and m, l per row */
static int64_t fx(int64_t Br, int64_t Bc)
{
    ck c = {0};
    const int64_t f = add(&c, mul(&c, Br, Bc), mul(&c, 2, Br));
    return c.ovf ? -1 : f;
}

static int64_t fx_p(const fl_problem *p, int64_t Br, int64_t Bc) { (void)p; return fx(Br, Bc); }

static fl_status blocks(const fl_problem *p, int bwd, fl_blocks *b)
{
    (void)bwd;
    const int64_t N = p->N, Nk = p->Nk ? p->Nk : p->N;
    if (p->M < 3)
        return fl_fail(FL_ECAPACITY, "{M}: softmax needs at least 3 elements of SRAM (one score, "
                                     "m and l, eq. FX); M = %lld is too small", (long long)p->M);
    /* (BX) Bc: the whole row when it fits (M - 2), then as many rows as fit */
    int64_t Bc = p->Bc ? p->Bc : p->Br ? fl_min64(Nk, p->M / p->Br - 2) : fl_min64(Nk, p->M - 2);
    int64_t Br = p->Br ? p->Br : (Bc >= 1 ? fl_largest_fp(N, p->M, fx_p, p, Bc, 0) : 0);
    b->Br = Br;
    b->Bc = Bc;
    b->Bd = p->d;
    b->overridden = p->Br || p->Bc;
    b->footprint = (Br >= 1 && Bc >= 1) ? fx(Br, Bc) : -1;
    if (b->footprint < 0 || b->footprint > p->M)
        return fl_fail(FL_EINVAL, "{Br}/{Bc}: softmax tiles Br = %lld, Bc = %lld need Br*Bc + 2*Br "
                                  "elements of SRAM (docs/model.md eq. FX), more than M = %lld",
                       (long long)Br, (long long)Bc, (long long)p->M);
    return FL_OK;
}

/* (CX) reads = 3 N Nk (safe) or 2 N Nk (online); writes = N Nk;
 * events = 4 Tr Tc (safe) or 3 Tr Tc (online) */
static fl_status closed(const fl_problem *p, const fl_blocks *b, int online, fl_counts *out)
{
    ck c = {0};
    fl_counts r = {0};
    const int64_t N = p->N, Nk = p->Nk ? p->Nk : p->N;
    const int64_t Tr = fl_cdiv(N, b->Br), Tc = fl_cdiv(Nk, b->Bc), NN = mul(&c, N, Nk);
    r.reads = mul(&c, online ? 2 : 3, NN);
    r.writes = NN;
    r.events = mul(&c, mul(&c, online ? 3 : 4, Tr), Tc);
    r.sram_peak = b->footprint;
    return fl_closed_finish_own(p, FL_OK, &c, &r, out);
}
static fl_status closed_safe(const fl_problem *p, int bwd, const fl_blocks *b, fl_counts *out)
{
    (void)bwd;
    return closed(p, b, 0, out);
}
static fl_status closed_online(const fl_problem *p, int bwd, const fl_blocks *b, fl_counts *out)
{
    (void)bwd;
    return closed(p, b, 1, out);
}

static void explain(FILE *out, const fl_problem *p, const fl_blocks *b)
{
    (void)b;
    fprintf(out, "  rule BX: Bc = min(Nk, M - 2), Br = the most rows with Br Bc + 2 Br <= M (eq. FX);\n"
                 "    %s: %d reads + 1 write per element (eq. CX)\n",
            fl_algo_name(p->algo), p->algo == FL_ALGO_SOFTMAX_SAFE ? 3 : 2);
}

/* X and Y */
static fl_status compute_size(const fl_problem *p, const fl_blocks *b)
{
    (void)b;
    return fl_compute_size_refuse(p, 2.0 * p->N * (p->Nk ? p->Nk : p->N));
}

const fl_schedule fl_sched_softmax_safe = {
    .name = "softmax-safe",
    .summary = "softmax alone, safe: 3 passes over X (Milakov-Gimelshein Algorithm 2)",
    .flags = FL_SCHED_OWN_PROBLEM | FL_SCHED_SOFTMAX,
    .accepts = FL_ACCEPT_NK,
    .blocks = blocks,
    .closed_form = closed_safe,
    .compute_size = compute_size,
    .fwd = fl_schedule_softmax_safe,
    .explain = explain,
};

const fl_schedule fl_sched_softmax_online = {
    .name = "softmax-online",
    .summary = "softmax alone, online normalizer: 2 passes over X (Milakov-Gimelshein Algorithm 3)",
    .flags = FL_SCHED_OWN_PROBLEM | FL_SCHED_SOFTMAX,
    .accepts = FL_ACCEPT_NK,
    .blocks = blocks,
    .closed_form = closed_online,
    .compute_size = compute_size,
    .fwd = fl_schedule_softmax_online,
    .explain = explain,
};
