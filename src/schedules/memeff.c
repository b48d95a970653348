/* memeff.c: memory-efficient attention (Rabe & Staats, "Self-attention does not need
 * O(n^2) memory", 2021, their Figure 1 / JAX code), on the machine.  Queries in chunks of
 * Br rows (query_chunk_size), keys in chunks of Bc rows (key_chunk_size):
 *
 *  for each query chunk i:                                          load Q_i
 *    for each key chunk j (summarize_chunk):                        load K_j, V_j
 *      s = Q_i K_j^T / sqrt d;  m_j = rowmax s;  e = exp(s - m_j)
 *      u_j = e V_j;  l_j = rowsum e                                 store u_j, l_j, m_j
 *    (the per-chunk summaries are stacked in memory by lax.map: here, HBM tensors U, Ls, Ms)
 *    g = max_j m_j                                                  load m_j   (every j)
 *    O_i = sum_j e^(m_j - g) u_j / sum_j e^(m_j - g) l_j            load m_j, l_j, u_j
 *                                                                   store O_i
 *
 * Unlike FlashAttention, the summaries are not folded on chip as they are made (no online
 * rescaling): they go to memory and are combined after the key loop, which costs
 * N Tc (d + 2) writes and N Tc (d + 3) reads more than flash2 (eq. (CM)).  SRAM: Q_i, u_j,
 * K_j, V_j, S_ij, m_j, l_j -- eq. (F2) -- and, for the combination, O_i, g_i, l_i: eq. (FM).
 * Rows with no kept key cannot occur (no masks).  Rabe-Staats return no logsumexp: only O.
 */
#include <math.h>

#include <stdio.h>

#include <flashlab/ops.h>

#include "rules.h"
#include "schedules.h"

static fl_status fl_schedule_memeff(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io)
{
    const int64_t N = p->N, d = p->d, dv = fl_problem_dv(p), Br = b->Br, Bc = b->Bc, Tc = fl_cdiv(N, Bc);
    const double scale = 1.0 / sqrt((double)d);
    const int cmp = fl_computes(m);
    int U_t, L_t, M_t;
    FL_TRY(fl_tensor_add(m, "U", Tc * N, dv, 4, &U_t)); /* summaries, fp32: row j*N + query */
    FL_TRY(fl_tensor_add(m, "Ls", Tc * N, 1, 4, &L_t));
    FL_TRY(fl_tensor_add(m, "Ms", Tc * N, 1, 4, &M_t));

    fl_buf *Qi, *Uj, *Kj, *Vj, *Sij, *mj, *lj, *Oi, *g, *lsum;
    FL_TRY(fl_sram_alloc(m, "Q_i", Br, d, &Qi));
    FL_TRY(fl_sram_alloc(m, "u_j", Br, dv, &Uj));
    FL_TRY(fl_sram_alloc(m, "K_j", Bc, d, &Kj));
    FL_TRY(fl_sram_alloc(m, "V_j", Bc, dv, &Vj));
    FL_TRY(fl_sram_alloc(m, "S_ij", Br, Bc, &Sij));
    FL_TRY(fl_sram_alloc(m, "m_j", Br, 1, &mj));
    FL_TRY(fl_sram_alloc(m, "l_j", Br, 1, &lj));
    FL_TRY(fl_sram_alloc(m, "O_i", Br, dv, &Oi)); /* the combination */
    FL_TRY(fl_sram_alloc(m, "g_i", Br, 1, &g));
    FL_TRY(fl_sram_alloc(m, "l_i", Br, 1, &lsum));

    for (int64_t r0 = 0; r0 < N; r0 += Br) {
        const int64_t br = fl_min64(Br, N - r0);
        FL_TRY(fl_load(m, Qi, io.Q, r0, 0, br, d));
        for (int64_t j = 0, c0 = 0; c0 < N; j++, c0 += Bc) { /* summarize_chunk */
            const int64_t bc = fl_min64(Bc, N - c0);
            FL_TRY(fl_load(m, Kj, io.K, c0, 0, bc, d));
            FL_TRY(fl_load(m, Vj, io.V, c0, 0, bc, dv));
            fl_op_matmul(Sij, Qi, Kj, br, bc, d, 1, scale, 0);
            if (cmp)
                for (int64_t r = 0; r < br; r++) { /* a fresh state per chunk: m_j, l_j, u_j */
                    mj->x[r] = -INFINITY;
                    lj->x[r] = 0.0;
                    for (int64_t c = 0; c < dv; c++) Uj->x[r * dv + c] = 0.0;
                    fl_osm_step(&mj->x[r], &lj->x[r], Uj->x + r * dv, dv, Sij->x + r * Bc, bc,
                                Vj->x, dv, NULL);
                }
            FL_TRY(fl_store(m, Uj, U_t, j * N + r0, 0, br, dv));
            FL_TRY(fl_store(m, lj, L_t, j * N + r0, 0, br, 1));
            FL_TRY(fl_store(m, mj, M_t, j * N + r0, 0, br, 1));
        }
        /* combine: global max over the chunks' maxima, then the rescaled sums; the chunk's
         * summary is loaded back into u_j, m_j, l_j */
        fl_op_fill(g, br, 1, -INFINITY);
        fl_op_fill(lsum, br, 1, 0.0);
        fl_op_fill(Oi, br, dv, 0.0);
        for (int64_t j = 0; j < Tc; j++) { /* global_max = max(chunk_max) */
            FL_TRY(fl_load(m, mj, M_t, j * N + r0, 0, br, 1));
            if (cmp)
                for (int64_t r = 0; r < br; r++) g->x[r] = fmax(g->x[r], mj->x[r]);
        }
        for (int64_t j = 0; j < Tc; j++) { /* max_diffs = exp(chunk_max - global_max); sums */
            FL_TRY(fl_load(m, mj, M_t, j * N + r0, 0, br, 1));
            FL_TRY(fl_load(m, lj, L_t, j * N + r0, 0, br, 1));
            FL_TRY(fl_load(m, Uj, U_t, j * N + r0, 0, br, dv));
            if (cmp)
                for (int64_t r = 0; r < br; r++) {
                    const double w = exp(mj->x[r] - g->x[r]);
                    lsum->x[r] += w * lj->x[r];
                    for (int64_t c = 0; c < dv; c++) Oi->x[r * dv + c] += w * Uj->x[r * dv + c];
                }
        }
        if (cmp)
            for (int64_t r = 0; r < br; r++) fl_osm_finish(lsum->x[r], Oi->x + r * dv, dv, Oi->x + r * dv);
        FL_TRY(fl_store(m, Oi, io.O, r0, 0, br, dv));
    }
    fl_buf *all[] = {Qi, Uj, Kj, Vj, Sij, mj, lj, Oi, g, lsum};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) fl_sram_free(m, all[k]);
    return FL_OK;
}

/* ---- the descriptor: rule BM, footprint FM, the closed form CM ---- */

/* (FM) memeff: F2 + Br d_v + 2 Br -- the key loop's buffers (F2: (Br + Bc)(d + d_v) + Br Bc +
 * 2 Br) and the combination's O_i, g_i, l_i */
static int64_t fm(const fl_problem *p, int64_t Br, int64_t Bc)
{
    ck c = {0};
    const int64_t dv = fl_problem_dv(p);
    const int64_t f = fl_fp_checked2((fl_fp_split)FL_FP2_FLASH2_FWD, 1, Br, Bc, p->d, dv);
    const int64_t g = add(&c, mul(&c, Br, dv), mul(&c, 2, Br));
    const int64_t r = add(&c, f, g);
    return (f < 0 || c.ovf) ? -1 : r;
}
static fl_status blocks(const fl_problem *p, int bwd, fl_blocks *b)
{
    (void)bwd;
    /* (BM) chunks Br x Bc: the largest square B <= N with FM(B, B) <= M, unless given */
    const int64_t need = fm(p, 1, 1);
    if (need < 0 || need > p->M)
        return fl_fail(FL_ECAPACITY, "{M}: memeff needs at least %lld elements of SRAM for its "
                                     "smallest chunks (Br = Bc = 1, d = %lld, eq. FM); M = %lld is too small",
                       (long long)need, (long long)p->d, (long long)p->M);
    const int64_t lo = fl_largest_fp(p->N, p->M, fm, p, 0, 2); /* >= 1: FM(1, 1) <= M above */
    b->Br = p->Br ? p->Br : lo;
    b->Bc = p->Bc ? p->Bc : lo;
    b->Bd = p->d;
    b->overridden = p->Br || p->Bc;
    b->footprint = fm(p, b->Br, b->Bc);
    if (b->footprint < 0 || b->footprint > p->M)
        return fl_fail(FL_EINVAL, "{Br}/{Bc}: memeff chunks Br = %lld, Bc = %lld need %lld "
                                  "elements of SRAM (docs/model.md eq. FM), more than M = %lld",
                       (long long)b->Br, (long long)b->Bc, (long long)b->footprint, (long long)p->M);
    return FL_OK;
}

/* (CM) reads = N d + N (d + d_v) Tr + N Tc (d_v + 3); writes = N Tc (d_v + 2) + N d_v;
 * events = Tr (2 + 9 Tc) */
static fl_status closed_form(const fl_problem *p, int bwd, const fl_blocks *b, fl_counts *out)
{
    (void)bwd;
    ck c = {0};
    fl_counts r = {0};
    const int64_t N = p->N, d = p->d, dv = fl_problem_dv(p), Tr = fl_cdiv(N, b->Br), Tc = fl_cdiv(N, b->Bc);
    r.reads = add(&c, add(&c, mul(&c, N, d), mul(&c, mul(&c, N, d + dv), Tr)), mul(&c, mul(&c, N, Tc), dv + 3));
    r.writes = add(&c, mul(&c, mul(&c, N, Tc), dv + 2), mul(&c, N, dv));
    r.events = mul(&c, Tr, add(&c, 2, mul(&c, 9, Tc)));
    r.sram_peak = b->footprint;
    return fl_closed_finish_own(p, FL_OK, &c, &r, out);
}

static void explain(FILE *out, const fl_problem *p, const fl_blocks *b)
{
    (void)p, (void)b;
    fprintf(out, "  rule BM: query chunks Br and key chunks Bc (Rabe-Staats' query_chunk_size,\n"
                 "    key_chunk_size): the largest square with F2 + Br d + 2 Br <= M (eq. FM),\n"
                 "    unless --Br/--Bc\n");
}

/* Q, K, V, O and the per-chunk summaries U, Ls, Ms */
static fl_status compute_size(const fl_problem *p, const fl_blocks *b)
{
    const double dv = (double)fl_problem_dv(p);
    return fl_compute_size_refuse(p, 2.0 * p->N * (p->d + dv) + (double)fl_cdiv(p->N, b->Bc) * p->N * (dv + 2));
}

const fl_schedule fl_sched_memeff = {
    .name = "memeff",
    .summary = "Rabe-Staats memory-efficient attention: per-chunk summaries to memory, combined after",
    .flags = FL_SCHED_OWN_PROBLEM,
    .accepts = FL_ACCEPT_DV,
    .blocks = blocks,
    .closed_form = closed_form,
    .compute_size = compute_size,
    .fwd = fl_schedule_memeff,
    .explain = explain,
};
