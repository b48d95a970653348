/* blocksparse.c: block-sparse FlashAttention (Dao et al., 2022, §3.3, Algorithm 5),
 * written on the FlashAttention-2 loop (flash2.c) so that only the skipping differs:
 *
 *  for i in 1..Tr:                         load Q_i                         -> Br d reads
 *    O_i = 0, l_i = 0, m_i = -inf
 *    for j in 1..Tc with mask block (i, j) kept   (Algorithm 5, line 8: "if M_ij != 0")
 *      load K_j, V_j                                                        -> 2 Bc d reads
 *      S_ij = Q_i K_j^T / sqrt d;  online-softmax step (eq. (OS))
 *    O_i = O_i / l_i (0 for a row with no kept block, rule M0);  L_i = m_i + log l_i
 *    write O_i, L_i                        (every row block, kept blocks or not: O in full)
 *
 * A skipped block costs nothing: no K_j, V_j loads.  So the K/V traffic is 2 d times the rows
 * of the kept blocks, about s times flash2's, and the total is Theta(N d + N^2 d^2 s / M), the
 * paper's Proposition 4.  Mask: include/flashlab/blocksparse_mask.h (rule KS).  Counts: eq. (CS).
 */
#include <math.h>

#include <stdio.h>
#include <string.h>

#include <flashlab/blocksparse_mask.h>
#include <flashlab/ops.h>

#include "rules.h"
#include "schedules.h"

static fl_status fl_schedule_blocksparse(fl_machine *m, const fl_problem *p, const fl_blocks *b,
                                         fl_qkvo io)
{
    const int64_t N = p->N, d = p->d, dv = fl_problem_dv(p), Br = b->Br, Bc = b->Bc;
    const double scale = 1.0 / sqrt((double)d);
    const fl_bsmask mask = fl_bsmask_of(N, N, Br, Bc, p->block_mask);
    int L_t;
    FL_TRY(fl_tensor_add(m, "L", N, 1, 4, &L_t));

    fl_buf *Qi, *Oi, *Kj, *Vj, *Sij, *mi, *li;
    FL_TRY(fl_sram_alloc(m, "Q_i", Br, d, &Qi));
    FL_TRY(fl_sram_alloc(m, "O_i", Br, dv, &Oi));
    FL_TRY(fl_sram_alloc(m, "K_j", Bc, d, &Kj));
    FL_TRY(fl_sram_alloc(m, "V_j", Bc, dv, &Vj));
    FL_TRY(fl_sram_alloc(m, "S_ij", Br, Bc, &Sij));
    FL_TRY(fl_sram_alloc(m, "m_i", Br, 1, &mi));
    FL_TRY(fl_sram_alloc(m, "l_i", Br, 1, &li));

    for (int64_t i = 0, r0 = 0; r0 < N; i++, r0 += Br) {
        const int64_t br = fl_min64(Br, N - r0);
        FL_TRY(fl_load(m, Qi, io.Q, r0, 0, br, d));
        fl_op_fill(Oi, br, dv, 0.0);
        fl_op_fill(li, br, 1, 0.0);
        fl_op_fill(mi, br, 1, -INFINITY);
        for (int64_t j = 0, c0 = 0; c0 < N; j++, c0 += Bc) {
            if (!fl_bsmask_block(&mask, i, j)) continue; /* Algorithm 5, line 8 */
            const int64_t bc = fl_min64(Bc, N - c0);
            FL_TRY(fl_load(m, Kj, io.K, c0, 0, bc, d));
            FL_TRY(fl_load(m, Vj, io.V, c0, 0, bc, dv));
            fl_op_matmul(Sij, Qi, Kj, br, bc, d, 1, scale, 0);
            if (fl_computes(m))
                for (int64_t r = 0; r < br; r++)
                    fl_osm_step(&mi->x[r], &li->x[r], Oi->x + r * dv, dv, Sij->x + r * Bc, bc,
                                Vj->x, dv, NULL);
        }
        if (fl_computes(m))
            for (int64_t r = 0; r < br; r++) {
                fl_osm_finish(li->x[r], Oi->x + r * dv, dv, Oi->x + r * dv);
                mi->x[r] = li->x[r] > 0.0 ? mi->x[r] + log(li->x[r]) : -INFINITY;
            }
        FL_TRY(fl_store(m, Oi, io.O, r0, 0, br, dv));
        FL_TRY(fl_store(m, mi, L_t, r0, 0, br, 1));
    }

    fl_buf *all[] = {Qi, Oi, Kj, Vj, Sij, mi, li};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) fl_sram_free(m, all[k]);
    return FL_OK;
}

/* ---- the descriptor: rule BS, the closed form CS, the mask the reference applies ---- */

/* flash2's rule B2 for an N-query, head dimension d problem (blocks Br = Bc). */
static fl_status b2(const fl_problem *p, int64_t N, fl_blocks *b)
{
    fl_problem q = fl_problem_default();
    q.algo = FL_ALGO_FLASH2;
    q.N = N;
    q.d = p->d;
    q.d_v = p->d_v;
    q.M = p->M;
    q.Br = p->Br;
    q.Bc = p->Bc;
    q.elem_bytes = p->elem_bytes;
    q.max_events = p->max_events;
    return fl_blocks_choose(&q, b);
}

/* (BS) = B2: the mask is over flash2's tiles */
static fl_status blocks(const fl_problem *p, int bwd, fl_blocks *b)
{
    (void)bwd;
    return b2(p, p->N, b);
}

/* (CS) block-sparse: reads = N d + (d + d_v) sum over kept blocks of their key rows. */
static fl_status closed_counts(const fl_problem *p, const fl_blocks *b, fl_counts *r)
{
    ck c = {0};
    const int64_t N = p->N, d = p->d, dv = fl_problem_dv(p), Tr = fl_cdiv(N, b->Br), Tc = fl_cdiv(N, b->Bc);
    const fl_bsmask mk = fl_bsmask_of(N, N, b->Br, b->Bc, p->block_mask);
    int64_t kept = 0, rows = 0, blocks;
    /* the dense count (s = 1, eq. (C2)) bounds this one: refuse sizes where it overflows, and
     * masks too large to evaluate block by block */
    add(&c, mul(&c, N, d), mul(&c, mul(&c, N, d + dv), Tr));
    if (c.ovf) return FL_EOVERFLOW;
    if (!fl_mul_ok(Tr, Tc, &blocks) || blocks > (INT64_C(1) << 32))
        return fl_fail(FL_EINVAL, "{N}/{M}: blocksparse evaluates its mask block by block; %lld x %lld "
                                  "blocks is more than 2^32 (raise M or lower N)", (long long)Tr, (long long)Tc);
    for (int64_t i = 0; i < Tr; i++)
        for (int64_t j = 0; j < Tc; j++)
            if (fl_bsmask_block(&mk, i, j)) {
                kept++;
                rows += fl_min64(b->Bc, N - j * b->Bc);
            }
    r->reads = add(&c, mul(&c, N, d), mul(&c, d + dv, rows));
    r->writes = add(&c, mul(&c, N, dv), N);
    r->events = add(&c, mul(&c, 3, Tr), mul(&c, 2, kept));
    r->sram_peak = b->footprint;
    return c.ovf ? FL_EOVERFLOW : FL_OK;
}

static fl_status closed_form(const fl_problem *p, int bwd, const fl_blocks *b, fl_counts *out)
{
    (void)bwd;
    fl_counts r = {0};
    ck c = {0};
    return fl_closed_finish_own(p, closed_counts(p, b, &r), &c, &r, out);
}

static void explain(FILE *out, const fl_problem *p, const fl_blocks *b)
{
    const fl_bsmask mk = fl_bsmask_of(p->N, p->N, b->Br, b->Bc, p->block_mask);
    int64_t kept = 0;
    for (int64_t i = 0; i < mk.Tr; i++)
        for (int64_t j = 0; j < mk.Tc; j++) kept += fl_bsmask_block(&mk, i, j);
    fprintf(out, "  rule BS = B2 (flash2's square blocks); mask KS: each block kept with probability s = %g\n"
                 "    (seed %llu): %lld of %lld blocks kept (%.4f)\n", mk.density,
            (unsigned long long)mk.seed, (long long)kept, (long long)(mk.Tr * mk.Tc),
            (double)kept / (double)(mk.Tr * mk.Tc));
}

/* every row block loads Q_i and stores O_i and L_i whatever its mask keeps: 3 ceil(N / Br)
 * events (eq. CS), known before the closed form walks the Tr x Tc mask blocks */
static int64_t events_floor(const fl_problem *p, const fl_blocks *b, const fl_blocks *bb)
{
    (void)bb;
    int64_t t;
    return fl_mul_ok(3, fl_cdiv(p->N, b->Br), &t) ? t : INT64_MAX;
}

/* Q, K, V, O */
static fl_status compute_size(const fl_problem *p, const fl_blocks *b)
{
    (void)b;
    return fl_compute_size_refuse(p, 2.0 * p->N * (p->d + fl_problem_dv(p)));
}

/* the reference attends through the same block mask (rule KS) */
static int reference_keep(const fl_problem *p, const fl_blocks *b,
                          int (**keep)(int64_t i, int64_t j, const void *ctx), void *ctx, size_t cap)
{
    if (cap < sizeof(fl_bsmask)) return 0;
    const fl_bsmask mk = fl_bsmask_of(p->N, p->N, b->Br, b->Bc, p->block_mask);
    memcpy(ctx, &mk, sizeof mk);
    *keep = fl_bsmask_keep;
    return 1;
}

const fl_schedule fl_sched_blocksparse = {
    .name = "blocksparse",
    .summary = "block-sparse FlashAttention (paper, Algorithm 5 / Prop. 4) on flash2's loop",
    .flags = FL_SCHED_OWN_PROBLEM,
    .accepts = FL_ACCEPT_BLOCK_MASK | FL_ACCEPT_DV,
    .blocks = blocks,
    .closed_form = closed_form,
    .events_floor = events_floor,
    .compute_size = compute_size,
    .reference_keep = reference_keep,
    .fwd = fl_schedule_blocksparse,
    .explain = explain,
};
