/* smallcache.c: exact attention when SRAM holds less than d^2 elements (Saha & Ye, arXiv
 * 2402.07443, §4: "blocked matrix products with d split"), fused with the online softmax so that
 * no N x N matrix reaches HBM.  docs/model.md §4.6 (loop, Fsc, Bsc, Csc, Esc); docs/bounds.md
 * §3 (why it is Theta(N^2 d / sqrt M) below M = d^2).
 *
 * A query tile of Br rows and a key tile of Bc rows never hold all of d: every product walks d in
 * chunks of Bd columns through two chunk buffers X (Br x Bd) and Y (Bc x Bd).  Per segment:
 *
 *  1  for each row block i (br rows), with the key blocks j0..j1-1 it touches (rule K2):
 *       (none: O_i = 0 is written chunk by chunk, rule M0)
 *  2    on chip: m_i = -inf, l_i = 0
 *  3    for j in j0..j1-1:
 *  4      S_ij = 0; for each d-chunk k: load Q_i[:, k] -> X, K_j[:, k] -> Y;
 *           S_ij += X Y^T / sqrt(d)                            -> (br + bc) bk reads
 *  5      mask a boundary tile per element (K4); per row, one online-softmax step (eq. (OS)) on
 *           m_i, l_i: P_ij = exp(S_ij - m_new) in place, a_i = e^(m_old - m_new)
 *  6      for each d-chunk c: X = O_i[:, c] (loaded, j > j0) or 0 (j = j0); load V_j[:, c] -> Y;
 *           X = diag(a_i) X + P_ij Y; at j = j1 - 1, X = diag(l_i)^-1 X (0 for l = 0, M0);
 *           store X -> O_i[:, c]                           -> ([j > j0] br + bc) bk reads, br bk writes
 *
 * O crosses HBM as an accumulator (read, updated and written once per key block): it is priced in
 * fp32 (docs/model.md rule R8).  SRAM: S_ij (Br x Bc), X, Y and the row vectors m_i, l_i, a_i:
 * eq. (Fsc) = Br Bc + (Br + Bc) Bd + 3 Br.  Every product's operands and partial sums live in
 * these buffers between tile events (docs/bounds.md assumption A1).  Forward only; no
 * logsumexp is saved (nothing reads it).
 */
#include "smallcache.h"

#include <math.h>
#include <string.h>

#include <flashlab/ops.h>
#include "base/checked.h"
#include "problem/segments.h"
#include "variants.h"

static fl_status segment(fl_machine *m, const fl_blocks *b, const fl_qkvo *io, const fl_seg *sg,
                         fl_buf **B, fl_vrun *vr)
{
    const fl_var *v = vr->v;
    const int64_t Br = b->Br, Bc = b->Bc, dq = v->dq, dv = v->dv;
    const int64_t Bq = fl_min64(b->Bd, dq), Bv = fl_min64(b->Bd, dv); /* the chunks of d and d_v */
    fl_buf *S = B[0], *X = B[1], *Y = B[2], *mi = B[3], *li = B[4], *ai = B[5];
    FL_TRY(fl_vrun_segment(m, vr, sg, FL_V_SINK | FL_V_RNG)); /* sink, dropout seed (rule R3b) */
    for (int64_t r0 = 0; r0 < sg->Nq; r0 += Br) { /* line 1 */
        const int64_t br = fl_min64(Br, sg->Nq - r0), qr = sg->q0 + r0;
        int64_t j0, j1;
        fl_mask_block_range(&sg->mask, r0, br, Bc, &j0, &j1);
        if (j0 >= j1) { /* no key: O_i = 0 */
            fl_op_fill(X, br, Bv, 0.0);
            for (int64_t c0 = 0; c0 < dv; c0 += Bv)
                FL_TRY(fl_store(m, X, io->O, qr, c0, br, fl_min64(Bv, dv - c0)));
            continue;
        }
        fl_op_fill(mi, br, 1, -INFINITY); /* line 2 (with a sink: m_i = sink, l_i = 1, rule SK) */
        fl_op_fill(li, br, 1, 0.0);
        fl_var_osm_init(vr, mi, li, br, br);
        for (int64_t j = j0; j < j1; j++) { /* line 3 */
            const int64_t c0 = j * Bc, bc = fl_min64(Bc, sg->Nk - c0), kr = sg->k0 + c0;
            for (int64_t k0 = 0; k0 < dq; k0 += Bq) { /* line 4 */
                const int64_t bk = fl_min64(Bq, dq - k0);
                FL_TRY(fl_vrun_load(m, vr, FL_VQ, X, io->Q, qr, k0, br, bk, sg->qs0, r0));
                FL_TRY(fl_vrun_load(m, vr, FL_VK, Y, io->K, kr, k0, bc, bk, sg->ks0, c0));
                fl_op_matmul(S, X, Y, br, bc, bk, 1, v->scale, k0 > 0);
            }
            fl_var_scores(vr, sg, S, r0, br, br, c0, bc, fl_mask_tile(&sg->mask, r0, br, c0, bc)); /* line 5 */
            if (fl_computes(m))
                for (int64_t r = 0; r < br; r++) {
                    ai->x[r] = fl_osm_step(&mi->x[r], &li->x[r], NULL, 0, S->x + r * Bc, bc, NULL, 0, S->x + r * Bc);
                    const double *w = fl_var_drop_row(vr, sg, r0, br, r, c0, bc); /* P~ = P o Z / (1 - p) */
                    for (int64_t c = 0; w && c < bc; c++) S->x[r * Bc + c] *= w[c];
                }
            for (int64_t c = 0; c < dv; c += Bv) { /* line 6 */
                const int64_t bk = fl_min64(Bv, dv - c);
                if (j > j0) FL_TRY(fl_load(m, X, io->O, qr, c, br, bk));
                else fl_op_fill(X, br, bk, 0.0);
                FL_TRY(fl_vrun_load(m, vr, FL_VV, Y, io->V, kr, c, bc, bk, sg->ks0, c0));
                if (fl_computes(m)) {
                    if (j > j0)
                        for (int64_t r = 0; r < br; r++)
                            for (int64_t t = 0; t < bk; t++) X->x[r * X->cols + t] *= ai->x[r];
                    fl_op_matmul(X, S, Y, br, bk, bc, 0, 1.0, 1);
                    if (j == j1 - 1)
                        for (int64_t r = 0; r < br; r++)
                            fl_osm_finish(li->x[r], X->x + r * X->cols, bk, X->x + r * X->cols);
                }
                FL_TRY(fl_store(m, X, io->O, qr, c, br, bk));
            }
        }
    }
    return FL_OK;
}

fl_status fl_schedule_smallcache(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io)
{
    const int64_t Br = b->Br, Bc = b->Bc, Bd = b->Bd;
    fl_var v;
    fl_var_of(p, &v);
    fl_buf *B[6];
    const char *names[6] = {"S_ij", "X", "Y", "m_i", "l_i", "a_i"};
    const int64_t rows[6] = {Br, Br, Bc, Br, Br, Br}, cols[6] = {Bc, Bd, Bd, 1, 1, 1};
    for (int k = 0; k < 6; k++) FL_TRY(fl_sram_alloc(m, names[k], rows[k], cols[k], &B[k]));
    fl_vrun vr;
    FL_TRY(fl_vrun_init(&vr, &v, m, &io, 1, Bc));
    fl_status s = FL_OK;
    for (int64_t k = 0; k < io.nseg && !s; k++) {
        fl_seg sg;
        fl_segment_at(io.segs, k, &sg);
        s = segment(m, b, &io, &sg, B, &vr);
    }
    fl_vrun_free(&vr);
    if (s) return s;
    for (int k = 0; k < 6; k++) fl_sram_free(m, B[k]);
    return FL_OK;
}

/* ---- rules: footprint, blocks, closed form ---- */

int64_t fl_smallcache_footprint(const fl_problem *p, int bwd, int64_t G, int64_t Br, int64_t Bc, int64_t Bd)
{
    (void)p, (void)bwd, (void)G;
    ck c = {0};
    /* (Fsc) Br Bc + (Br + Bc) Bd + 3 Br */
    const int64_t f = add(&c, add(&c, mul(&c, Br, Bc), mul(&c, add(&c, Br, Bc), Bd)), mul(&c, 3, Br));
    return c.ovf ? -1 : f;
}

static int fits(const fl_problem *p, int64_t Br, int64_t Bc, int64_t Bd)
{
    const int64_t f = fl_smallcache_footprint(p, 0, 1, Br, Bc, Bd);
    return f >= 0 && f <= p->M;
}

/* Largest x in [1, hi] with fits(Br = x) (rows) or fits(Bc = x); 0 if none (fits is monotone). */
static int64_t largest(const fl_problem *p, int rows, int64_t other, int64_t Bd, int64_t hi)
{
    int64_t lo = 0;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo + 1) / 2;
        if (rows ? fits(p, mid, other, Bd) : fits(p, other, mid, Bd)) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* The largest chunk Bd <= max(d, d_v) that fits beside Br x Bc, 0 if none: (M - Br Bc - 3 Br) /
 * (Br + Bc).  Q K^T walks d in chunks of min(Bd, d), P V walks d_v in chunks of min(Bd, d_v). */
static int64_t chunk(const fl_problem *p, int64_t Br, int64_t Bc)
{
    ck c = {0};
    const int64_t used = add(&c, mul(&c, Br, Bc), mul(&c, 3, Br)), sides = add(&c, Br, Bc);
    if (c.ovf || used >= p->M) return 0;
    return fl_min64(fl_max64(p->d, fl_problem_dv(p)), (p->M - used) / sides);
}

fl_status fl_smallcache_check(const fl_problem *p)
{
    if (p->pass != FL_PASS_FWD)
        return fl_fail(FL_EINVAL, "{pass}: smallcache is forward only (its O is not normalised until the "
                                  "last key block, and it saves no logsumexp for a backward)");
    return FL_OK;
}

fl_status fl_smallcache_blocks(const fl_problem *p, int bwd, fl_blocks *b)
{
    int64_t nq, nk;
    FL_TRY(fl_smallcache_check(p));
    if (bwd) return fl_fail(FL_EINVAL, "{pass}: smallcache is forward only");
    fl_problem_lengths(p, &nq, &nk);
    memset(b, 0, sizeof *b);
    /* (Bsc) the tiles take about two thirds of M, A = floor(2M/3), and the two chunk buffers and
     * the row vectors the rest (so Bd grows like sqrt(M)/5: fewer tile events).  Among the Br
     * within 32 of sqrt(2A/3) (where 3/Bc + 2/Br, the shape of (Csc), is least on Br Bc = A),
     * the tallest Br that holds every key (Bc = Nk) and Br = Nq, each with Bc = min(Nk,
     * floor(A/Br)) -- or the largest Bc that fits with Bd = 1 when that does not -- the pair
     * with the least dense count Nq (3 Tc - 1) + 2 Nk Tr (per d) of the longest sequence; then
     * Bd the largest chunk that fits beside Br x Bc. */
    const int64_t A = fl_max64(1, p->M / 3 * 2 + (p->M % 3) * 2 / 3);
    const int64_t r = (int64_t)floor(sqrt(2.0 * (double)A / 3.0));
    int64_t Br = 0, Bc = 0;
    double best = 0.0;
    int64_t cand[67], nc = 0;
    for (int64_t x = fl_max64(1, r - 32); x <= r + 32 && x <= nq; x++) cand[nc++] = x;
    cand[nc++] = fl_min64(nq, fl_max64(1, A / nk));
    cand[nc++] = nq;
    for (int64_t k = 0; k < nc; k++) {
        const int64_t br = cand[k];
        int64_t bc = fl_min64(nk, A / br);
        if (bc < 1 || !fits(p, br, bc, 1)) bc = largest(p, 0, br, 1, nk);
        if (bc < 1) continue;
        const double v = (double)nq * (double)(3 * fl_cdiv(nk, bc) - 1) + 2.0 * (double)nk * (double)fl_cdiv(nq, br);
        if (!Br || v < best) best = v, Br = br, Bc = bc;
    }
    if (!Br)
        return fl_fail(FL_ECAPACITY,
                       "{M}: smallcache needs at least 6 elements of SRAM for its smallest tiles "
                       "(Br = Bc = Bd = 1, docs/model.md eq. Fsc); M = %lld is too small", (long long)p->M);
    b->Br = Br, b->Bc = Bc;
    if (p->Br || p->Bc) {
        b->overridden = 1;
        if (p->Br) b->Br = p->Br;
        if (p->Bc) b->Bc = p->Bc;
    }
    b->Bd = chunk(p, b->Br, b->Bc);
    if (b->Bd < 1) {
        const int64_t need = fl_smallcache_footprint(p, 0, 1, b->Br, b->Bc, 1);
        if (need < 0)
            return fl_fail(FL_EINVAL, "{Br}/{Bc}: smallcache blocks Br = %lld, Bc = %lld need more than %lld elements "
                                      "of SRAM (docs/model.md eq. Fsc), more than M = %lld",
                           (long long)b->Br, (long long)b->Bc, (long long)INT64_MAX, (long long)p->M);
        return fl_fail(FL_EINVAL, "{Br}/{Bc}: smallcache blocks Br = %lld, Bc = %lld need %lld elements of SRAM "
                                  "with Bd = 1 (docs/model.md eq. Fsc), more than M = %lld",
                       (long long)b->Br, (long long)b->Bc, (long long)need, (long long)p->M);
    }
    b->footprint = fl_smallcache_footprint(p, 0, 1, b->Br, b->Bc, b->Bd);
    return FL_OK;
}

/* (Csc) one segment: row block i (br rows) touching n key blocks that cover cols keys, Q and K
 * chunks over d (Tq of them), V and O chunks over d_v (Tv; rule D1).
 *   n = 0: writes br d_v, events Tv;
 *   n > 0: reads n br d (Q, per key block) + (d + d_v) cols (K, V) + (n - 1) br d_v (O),
 *          writes n br d_v (O), events 2 n Tq + Tv (3n - 1)  (Esc);
 * and the segment's sink and dropout seed, fp8's scale factors in the loop's order (rule R3b). */
static void segment_counts(ck *c, const fl_var *v, const fl_seg *s, const fl_blocks *b, fl_counts *r)
{
    const int64_t dq = v->dq, dv = v->dv;
    const int64_t Tq = fl_cdiv(dq, fl_min64(b->Bd, dq)), Tv = fl_cdiv(dv, fl_min64(b->Bd, dv));
    const int64_t once = fl_var_segment_reads(v, 1, FL_V_SINK | FL_V_RNG);
    r->reads = add(c, r->reads, once);
    r->events = add(c, r->events, once);
    if (fl_mask_is_dense(&s->mask) && !v->fp8) { /* every row block touches all Tc key blocks, cols = Nk */
        const int64_t Tr = fl_cdiv(s->Nq, b->Br), Tc = fl_cdiv(s->Nk, b->Bc);
        r->reads = add(c, r->reads, add(c, add(c, mul(c, mul(c, s->Nq, dq), Tc), mul(c, mul(c, s->Nq, dv), Tc - 1)),
                                        mul(c, mul(c, s->Nk, dq + dv), Tr)));
        r->writes = add(c, r->writes, mul(c, Tc, mul(c, s->Nq, dv)));
        r->events = add(c, r->events, mul(c, Tr, add(c, mul(c, 2 * Tc, Tq), mul(c, Tv, 3 * Tc - 1))));
        return;
    }
    int64_t lq = -1, lk = -1, lv = -1;
    for (int64_t r0 = 0; r0 < s->Nq; r0 += b->Br) {
        const int64_t br = fl_min64(b->Br, s->Nq - r0);
        int64_t j0, j1;
        fl_mask_block_range(&s->mask, r0, br, b->Bc, &j0, &j1);
        if (j0 >= j1) {
            r->writes = add(c, r->writes, mul(c, br, dv));
            r->events = add(c, r->events, Tv);
            continue;
        }
        const int64_t n = j1 - j0, cols = fl_min64(s->Nk, j1 * b->Bc) - j0 * b->Bc;
        r->reads = add(c, r->reads, add(c, add(c, mul(c, n, mul(c, br, dq)), mul(c, n - 1, mul(c, br, dv))),
                                        mul(c, dq + dv, cols)));
        r->writes = add(c, r->writes, mul(c, n, mul(c, br, dv)));
        r->events = add(c, r->events, add(c, mul(c, 2 * n, Tq), mul(c, Tv, 3 * n - 1)));
        for (int64_t j = j0; v->fp8 && j < j1; j++) { /* Q and K per chunk of d, V per chunk of d_v */
            const int64_t c0 = j * b->Bc, c1 = fl_min64(s->Nk, c0 + b->Bc);
            int64_t x = 0;
            for (int64_t k = 0; k < Tq; k++)
                x += fl_var_scales_entered(v, s->qs0, r0, r0 + br, &lq) + fl_var_scales_entered(v, s->ks0, c0, c1, &lk);
            for (int64_t k = 0; k < Tv; k++) x += fl_var_scales_entered(v, s->ks0, c0, c1, &lv);
            r->reads = add(c, r->reads, x);
            r->events = add(c, r->events, x);
        }
    }
}

fl_status fl_smallcache_closed_form(const fl_problem *p, int bwd, const fl_blocks *b, fl_counts *out)
{
    if (bwd) return fl_fail(FL_EINVAL, "{pass}: smallcache is forward only");
    fl_segments sg;
    FL_TRY(fl_segments_build(p, fl_problem_group(p), &sg));
    fl_var v;
    fl_var_of(p, &v);
    ck c = {0};
    fl_counts r = {0};
    /* every segment of a sequence has the same counts (the K/V head does not matter forward; fp8's
     * scale rows are offsets only): one per sequence, times the query heads (and the batch
     * without varlen) */
    const int64_t per = sg.Hq / sg.G, nseq = sg.cq ? sg.nseq : (sg.nseg ? 1 : 0);
    const int64_t times = mul(&c, per, sg.cq ? 1 : p->batch);
    for (int64_t i = 0; i < nseq && !c.ovf; i++) {
        fl_seg s;
        fl_counts f = {0};
        fl_segment_at(&sg, i * per, &s);
        segment_counts(&c, &v, &s, b, &f);
        r.reads = add(&c, r.reads, mul(&c, times, f.reads));
        r.writes = add(&c, r.writes, mul(&c, times, f.writes));
        r.events = add(&c, r.events, mul(&c, times, f.events));
    }
    fl_segments_free(&sg);
    r.total = add(&c, r.reads, r.writes);
    r.sram_peak = b->footprint;
    if (c.ovf)
        return fl_fail(FL_EOVERFLOW, "{N}/{d}/{batch}/{heads}: counts of smallcache at N = %lld, d = %lld would "
                                     "overflow 64-bit arithmetic", (long long)p->N, (long long)p->d);
    *out = r;
    return FL_OK;
}

int64_t fl_smallcache_events_floor(const fl_problem *p, const fl_blocks *b, const fl_blocks *bb)
{
    (void)bb;
    /* (Esc): every row block of every segment makes at least Tv events (its O chunks) */
    const int64_t dv = fl_problem_dv(p), Td = fl_cdiv(dv, fl_min64(b->Bd, dv)), n = p->cu_seqlens_q ? p->batch : 1;
    int64_t total = 0, t;
    for (int64_t s = 0; s < n; s++) {
        const int64_t nq = p->cu_seqlens_q ? p->cu_seqlens_q[s + 1] - p->cu_seqlens_q[s] : p->N;
        const int64_t reps = p->cu_seqlens_q ? p->heads : p->batch;
        if (!fl_mul_ok(fl_cdiv(nq, b->Br), Td, &t) || !fl_mul_ok(t, reps, &t) ||
            (!p->cu_seqlens_q && !fl_mul_ok(t, p->heads, &t)) || !fl_add_ok(total, t, &total))
            return INT64_MAX;
    }
    return total;
}

void fl_smallcache_explain(FILE *out, const fl_problem *p, const fl_blocks *b)
{
    fprintf(out,
            "  rule Bsc: tiles Br x Bc of about A = 2M/3 = %lld elements, Br near sqrt(2A/3) (Bc ~ 1.5 Br, where\n"
            "    3/Bc + 2/Br is least), the pair with the least count; the chunk buffers X (Br x Bd),\n"
            "    Y (Bc x Bd) and m_i, l_i, a_i take the rest: Br*Bc + (Br + Bc)*Bd + 3*Br <= M\n"
            "    (docs/model.md eq. Fsc); Bd = %lld, the largest that fits: each product walks d in %lld chunks\n",
            (long long)fl_max64(1, p->M / 3 * 2 + (p->M % 3) * 2 / 3), (long long)b->Bd,
            (long long)fl_cdiv(p->d, b->Bd));
}

/* Block terms (Csc) walks per sequence: the row blocks under a mask, one term without (optimize's
 * work measure, schedule.h). */
static int64_t closed_form_terms(int bwd, int dense, int64_t nq, int64_t nk, int64_t Br, int64_t Bc)
{
    return dense ? 1 : fl_cdiv(nq, Br);
}

/* Lemma O4's bound (docs/model.md §7) on (Csc) for blocks Br and any Bc <= cmax over one sequence
 * kept by mk: a row block keeping K keys (the span of its kept keys) touches at least
 * ceil(K / Bc) >= ceil(K / cmax) key blocks covering at least K keys, and moves
 * br (n (d + 2 d_v) - d_v) + (d + d_v) cols; one keeping none writes br d_v.  The variants' scalars
 * (sinks, the dropout seed, fp8's scale factors) only add to the count. */
static double count_floor(const fl_mask *mk, int64_t d_, int64_t dv_, int64_t Br, int64_t cmax)
{
    const double d = (double)d_, dv = (double)dv_;
    double seg = 0.0;
    for (int64_t r0 = 0; r0 < mk->Nq; r0 += Br) {
        const int64_t br = fl_min64(Br, mk->Nq - r0);
        int64_t j0, j1;
        fl_mask_block_range(mk, r0, br, 1, &j0, &j1); /* with unit key blocks: the kept span */
        if (j1 <= j0) seg += (double)br * dv;
        else
            seg += (double)br * ((double)fl_cdiv(j1 - j0, cmax) * (d + 2.0 * dv) - dv) + (d + dv) * (double)(j1 - j0);
    }
    return seg;
}

const fl_schedule fl_sched_smallcache = {
    .name = "smallcache",
    .summary = "exact attention below M = d^2 (Saha & Ye): both products blocked over d, fused with the online softmax",
    .flags = FL_SCHED_O_FP32 | FL_SCHED_CHUNKS_D,
    .accepts = FL_ACCEPT_NK | FL_ACCEPT_MASK | FL_ACCEPT_HEADS | FL_ACCEPT_VARLEN |
               (FL_ACCEPT_VARIANTS & ~FL_ACCEPT_DETERMINISTIC), /* forward only: no dQ to order */
    .blocks = fl_smallcache_blocks,
    .footprint = fl_smallcache_footprint,
    .closed_form = fl_smallcache_closed_form,
    .events_floor = fl_smallcache_events_floor,
    .fwd = fl_schedule_smallcache,
    .explain = fl_smallcache_explain,
    .search = {FL_SEARCH_BOUND, FL_SEARCH_NONE},
    .closed_form_terms = closed_form_terms,
    .count_floor = count_floor,
};
