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
 *  7    L_i = m_i + log l_i (-inf for a row with no key, M0); store L_i          -> br writes
 *
 * O crosses HBM as an accumulator (read, updated and written once per key block): it is priced in
 * fp32 (docs/model.md rule R8).  SRAM: S_ij (Br x Bc), X, Y and the row vectors m_i, l_i, a_i:
 * eq. (Fsc) = Br Bc + (Br + Bc) Bd + 3 Br.  Every product's operands and partial sums live in
 * these buffers between tile events (docs/bounds.md assumption A1).  L is what the backward
 * (smallcache_bwd.c) recomputes P from, as FlashAttention-2's forward saves it.
 */
#include "smallcache.h"

#include <math.h>
#include <string.h>

#include <flashlab/ops.h>
#include "base/checked.h"
#include "problem/segments.h"
#include "rules.h"
#include "variants.h"

static fl_status segment(fl_machine *m, const fl_blocks *b, const fl_qkvo *io, const fl_seg *sg,
                         fl_buf **B, fl_vrun *vr, int L_t)
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
        if (j0 >= j1) { /* no key: O_i = 0, L_i = -inf */
            fl_op_fill(X, br, Bv, 0.0);
            for (int64_t c0 = 0; c0 < dv; c0 += Bv)
                FL_TRY(fl_store(m, X, io->O, qr, c0, br, fl_min64(Bv, dv - c0)));
            fl_op_fill(mi, br, 1, -INFINITY);
            FL_TRY(fl_store(m, mi, L_t, qr, 0, br, 1));
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
        if (fl_computes(m)) /* line 7 */
            for (int64_t r = 0; r < br; r++) mi->x[r] = li->x[r] > 0.0 ? mi->x[r] + log(li->x[r]) : -INFINITY;
        FL_TRY(fl_store(m, mi, L_t, qr, 0, br, 1));
    }
    return FL_OK;
}

fl_status fl_schedule_smallcache(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io)
{
    const int64_t Br = b->Br, Bc = b->Bc, Bd = b->Bd;
    fl_var v;
    fl_var_of(p, &v);
    int L_t;
    FL_TRY(fl_tensor_add(m, "L", io.q_rows, 1, 4, &L_t));
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
        s = segment(m, b, &io, &sg, B, &vr, L_t);
    }
    fl_vrun_free(&vr);
    if (s) return s;
    for (int k = 0; k < 6; k++) fl_sram_free(m, B[k]);
    return FL_OK;
}

/* ---- rules: footprint, blocks, closed form ---- */

int64_t fl_smallcache_footprint(const fl_problem *p, int bwd, int64_t G, int64_t Br, int64_t Bc, int64_t Bd)
{
    (void)G;
    if (bwd) return fl_smallcache_bwd_footprint(Br, Bc, Bd);
    (void)p;
    ck c = {0};
    /* (Fsc) Br Bc + (Br + Bc) Bd + 3 Br */
    const int64_t f = add(&c, add(&c, mul(&c, Br, Bc), mul(&c, add(&c, Br, Bc), Bd)), mul(&c, 3, Br));
    return c.ovf ? -1 : f;
}

static int fits(const fl_problem *p, int bwd, int64_t Br, int64_t Bc, int64_t Bd)
{
    const int64_t f = fl_smallcache_footprint(p, bwd, 1, Br, Bc, Bd);
    return f >= 0 && f <= p->M;
}

typedef struct {
    const fl_problem *p;
    int bwd;
    int64_t Br;
} bc_ctx;

static int bc_fits(int64_t Bc, const void *ctx)
{
    const bc_ctx *k = ctx;
    return fits(k->p, k->bwd, k->Br, Bc, 1);
}

/* The largest Bc in [1, hi] that fits with Br and Bd = 1, 0 if none (fitting is monotone). */
static int64_t largest_bc(const fl_problem *p, int bwd, int64_t Br, int64_t hi)
{
    const bc_ctx k = {p, bwd, Br};
    return fl_largest(hi, bc_fits, &k);
}

/* The largest chunk Bd <= max(d, d_v) that fits beside Br x Bc, 0 if none: both footprints grow
 * by Br + Bc per unit of Bd, so (M - footprint at Bd = 0) / (Br + Bc).  Q K^T walks d in chunks of
 * min(Bd, d), P V walks d_v in chunks of min(Bd, d_v). */
static int64_t chunk(const fl_problem *p, int bwd, int64_t Br, int64_t Bc)
{
    const int64_t used = fl_smallcache_footprint(p, bwd, 1, Br, Bc, 0);
    if (used < 0 || used >= p->M) return 0;
    return fl_min64(fl_max64(p->d, fl_problem_dv(p)), (p->M - used) / (Br + Bc));
}

fl_status fl_smallcache_check(const fl_problem *p)
{
    if (p->pass != FL_PASS_FWD && fl_problem_asks_variants(p))
        return fl_fail(FL_EINVAL, "{pass}: smallcache's backward takes none of the variants (d_v != d, sinks, "
                                  "softcap, ALiBi, dropout, fp8); flash1, flash2 and standard run their backward");
    return FL_OK;
}

/* The two block rules differ in their numbers only (docs/model.md §4.6, §12.1). */
typedef struct {
    int64_t num, den;          /* the score tiles take A = floor(num M / den) */
    int64_t tiles;             /* score tiles on chip: Br Bc per tile, tiles Br Bc in all */
    double shape;              /* Br near sqrt(shape A) */
    double q_tc, q_one, k_tr;  /* the dense count per d: Nq (q_tc Tc + q_one) + k_tr Nk Tr */
    const char *what, *label;  /* in messages */
} rule;

static const rule rules[2] = {
    {2, 3, 1, 2.0 / 3.0, 3.0, -1.0, 2.0, "smallcache", "Fsc"},          /* (Bsc) */
    {12, 19, 2, 7.0 / 10.0, 5.0, 0.0, 7.0, "smallcache backward", "Fscb"} /* (Bscb) */
};

fl_status fl_smallcache_blocks(const fl_problem *p, int bwd, fl_blocks *b)
{
    const rule *u = &rules[bwd != 0];
    int64_t nq, nk;
    fl_problem_lengths(p, &nq, &nk);
    memset(b, 0, sizeof *b);
    /* (Bsc), (Bscb): the score tiles take A (about 2/3 of M forward, 12/19 backward) and the two
     * chunk buffers and the row vectors the rest (so Bd grows like sqrt(M): fewer tile events).
     * Among the Br within 32 of sqrt(shape A) (where the shape of (Csc), resp. (Cscb), is least
     * on tiles Br Bc = A), the tallest Br that holds every key and Br = Nq, each with
     * Bc = min(Nk, floor(A / (tiles Br))) -- or the largest Bc that fits with Bd = 1 when that does
     * not -- the pair with the least dense count of the longest sequence; then Bd the largest
     * chunk that fits beside Br x Bc. */
    const int64_t A = fl_max64(u->tiles, p->M / u->den * u->num + (p->M % u->den) * u->num / u->den);
    const int64_t r = (int64_t)floor(sqrt(u->shape * (double)A));
    int64_t Br = 0, Bc = 0;
    double best = 0.0;
    int64_t cand[67], nc = 0;
    for (int64_t x = fl_max64(1, r - 32); x <= r + 32 && x <= nq; x++) cand[nc++] = x;
    cand[nc++] = fl_min64(nq, fl_max64(1, A / (u->tiles * nk)));
    cand[nc++] = nq;
    for (int64_t k = 0; k < nc; k++) {
        const int64_t br = cand[k];
        int64_t bc = fl_min64(nk, A / (u->tiles * br));
        if (bc < 1 || !fits(p, bwd, br, bc, 1)) bc = largest_bc(p, bwd, br, nk);
        if (bc < 1) continue;
        const double v = (double)nq * (u->q_tc * (double)fl_cdiv(nk, bc) + u->q_one) +
                         u->k_tr * (double)nk * (double)fl_cdiv(nq, br);
        if (!Br || v < best) best = v, Br = br, Bc = bc;
    }
    if (!Br)
        return fl_fail(FL_ECAPACITY,
                       "{M}: %s needs at least 6 elements of SRAM for its smallest tiles "
                       "(Br = Bc = Bd = 1, docs/model.md eq. %s); M = %lld is too small", u->what, u->label,
                       (long long)p->M);
    b->Br = Br, b->Bc = Bc;
    if (p->Br || p->Bc) {
        b->overridden = 1;
        if (p->Br) b->Br = p->Br;
        if (p->Bc) b->Bc = p->Bc;
    }
    b->Bd = chunk(p, bwd, b->Br, b->Bc);
    if (b->Bd < 1) {
        const int64_t need = fl_smallcache_footprint(p, bwd, 1, b->Br, b->Bc, 1);
        if (need < 0)
            return fl_fail(FL_EINVAL, "{Br}/{Bc}: %s blocks Br = %lld, Bc = %lld need more than %lld elements "
                                      "of SRAM (docs/model.md eq. %s), more than M = %lld",
                           u->what, (long long)b->Br, (long long)b->Bc, (long long)INT64_MAX, u->label, (long long)p->M);
        return fl_fail(FL_EINVAL, "{Br}/{Bc}: %s blocks Br = %lld, Bc = %lld need %lld elements of SRAM "
                                  "with Bd = 1 (docs/model.md eq. %s), more than M = %lld",
                       u->what, (long long)b->Br, (long long)b->Bc, (long long)need, u->label, (long long)p->M);
    }
    b->footprint = fl_smallcache_footprint(p, bwd, 1, b->Br, b->Bc, b->Bd);
    return FL_OK;
}

/* (Csc) one segment: row block i (br rows) touching n key blocks that cover cols keys, Q and K
 * chunks over d (Tq of them), V and O chunks over d_v (Tv; rule D1).
 *   n = 0: writes br d_v + br (O, L), events Tv + 1;
 *   n > 0: reads n br d (Q, per key block) + (d + d_v) cols (K, V) + (n - 1) br d_v (O),
 *          writes n br d_v + br (O, L), events 2 n Tq + Tv (3n - 1) + 1  (Esc);
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
        r->writes = add(c, r->writes, add(c, mul(c, Tc, mul(c, s->Nq, dv)), s->Nq));
        r->events = add(c, r->events, add(c, mul(c, Tr, add(c, mul(c, 2 * Tc, Tq), mul(c, Tv, 3 * Tc - 1))), Tr));
        return;
    }
    int64_t lq = -1, lk = -1, lv = -1;
    for (int64_t r0 = 0; r0 < s->Nq; r0 += b->Br) {
        const int64_t br = fl_min64(b->Br, s->Nq - r0);
        int64_t j0, j1;
        fl_mask_block_range(&s->mask, r0, br, b->Bc, &j0, &j1);
        if (j0 >= j1) {
            r->writes = add(c, r->writes, add(c, mul(c, br, dv), br));
            r->events = add(c, r->events, Tv + 1);
            continue;
        }
        const int64_t n = j1 - j0, cols = fl_min64(s->Nk, j1 * b->Bc) - j0 * b->Bc;
        r->reads = add(c, r->reads, add(c, add(c, mul(c, n, mul(c, br, dq)), mul(c, n - 1, mul(c, br, dv))),
                                        mul(c, dq + dv, cols)));
        r->writes = add(c, r->writes, add(c, mul(c, n, mul(c, br, dv)), br));
        r->events = add(c, r->events, add(c, add(c, mul(c, 2 * n, Tq), mul(c, Tv, 3 * n - 1)), 1));
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

static void pass_counts(ck *c, const fl_problem *p, int bwd, const fl_seg *s, const fl_blocks *b, fl_counts *r)
{
    if (bwd) {
        fl_smallcache_bwd_segment(c, s, b, p->d, r);
        return;
    }
    fl_var v;
    fl_var_of(p, &v);
    segment_counts(c, &v, s, b, r);
}

fl_status fl_smallcache_closed_form(const fl_problem *p, int bwd, const fl_blocks *b, fl_counts *out)
{
    return fl_closed_sum(p, bwd, b, pass_counts, out);
}

int64_t fl_smallcache_events_floor(const fl_problem *p, const fl_blocks *b, const fl_blocks *bb)
{
    /* (Esc): every row block of every segment makes at least Tv events (its O chunks); (Escb):
     * the backward's step 0 makes 2 Td + 1 per block of min(Br, Bc) rows */
    const int64_t dv = fl_problem_dv(p), Td = fl_cdiv(dv, fl_min64(b->Bd, dv)), n = p->cu_seqlens_q ? p->batch : 1;
    const int64_t Tdb = bb ? fl_cdiv(p->d, bb->Bd) : 0, rb = bb ? fl_min64(bb->Br, bb->Bc) : 1;
    int64_t total = 0, t, u = 0;
    for (int64_t s = 0; s < n; s++) {
        const int64_t nq = p->cu_seqlens_q ? p->cu_seqlens_q[s + 1] - p->cu_seqlens_q[s] : p->N;
        const int64_t reps = p->cu_seqlens_q ? p->heads : p->batch;
        if (!fl_mul_ok(fl_cdiv(nq, b->Br), Td, &t) || (bb && !fl_mul_ok(fl_cdiv(nq, rb), 2 * Tdb + 1, &u)) ||
            !fl_add_ok(t, u, &t) || !fl_mul_ok(t, reps, &t) || (!p->cu_seqlens_q && !fl_mul_ok(t, p->heads, &t)) ||
            !fl_add_ok(total, t, &total))
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

/* Block terms (Csc) walks per sequence: the row blocks under a mask, one term without; (Cscb) the
 * row and the key blocks (optimize's work measure, schedule.h). */
static int64_t closed_form_terms(int bwd, int dense, int64_t nq, int64_t nk, int64_t Br, int64_t Bc)
{
    if (bwd) return fl_cdiv(nq, Br) + fl_cdiv(nk, Bc);
    return dense ? 1 : fl_cdiv(nq, Br);
}

/* Lemma O4's bound (docs/model.md §7) on (Csc) for blocks Br and any Bc <= cmax over one sequence
 * kept by mk: a row block keeping K keys (the span of its kept keys) touches at least
 * ceil(K / Bc) >= ceil(K / cmax) key blocks covering at least K keys, and moves
 * br (n (d + 2 d_v) - d_v) + (d + d_v) cols + br; one keeping none writes br d_v + br (O, L).
 * The variants' scalars (sinks, the dropout seed, fp8's scale factors) only add to the count.
 * The backward's: fl_smallcache_bwd_count_floor (it takes none of the variants). */
static double count_floor(int bwd, const fl_problem *p, const fl_mask *mk, int64_t Br, int64_t cmax)
{
    if (bwd) return fl_smallcache_bwd_count_floor(mk, p->d, Br, cmax);
    const double d = (double)p->d, dv = (double)fl_problem_dv(p);
    double seg = 0.0;
    for (int64_t r0 = 0; r0 < mk->Nq; r0 += Br) {
        const int64_t br = fl_min64(Br, mk->Nq - r0);
        int64_t j0, j1;
        fl_mask_block_range(mk, r0, br, 1, &j0, &j1); /* with unit key blocks: the kept span */
        if (j1 <= j0) seg += (double)br * (dv + 1.0);
        else
            seg += (double)br * ((double)fl_cdiv(j1 - j0, cmax) * (d + 2.0 * dv) - dv) + (d + dv) * (double)(j1 - j0) +
                   (double)br;
    }
    return seg;
}

const fl_schedule fl_sched_smallcache = {
    .name = "smallcache",
    .summary = "exact attention below M = d^2 (Saha & Ye): both products blocked over d, fused with the online softmax",
    .flags = FL_SCHED_O_FP32 | FL_SCHED_CHUNKS_D,
    .accepts = FL_ACCEPT_NK | FL_ACCEPT_MASK | FL_ACCEPT_HEADS | FL_ACCEPT_VARLEN | FL_ACCEPT_BWD |
               (FL_ACCEPT_VARIANTS & ~FL_ACCEPT_DETERMINISTIC), /* the backward refuses them: check */
    .check = fl_smallcache_check,
    .blocks = fl_smallcache_blocks,
    .footprint = fl_smallcache_footprint,
    .closed_form = fl_smallcache_closed_form,
    .events_floor = fl_smallcache_events_floor,
    .fwd = fl_schedule_smallcache,
    .bwd = fl_schedule_smallcache_bwd,
    .explain = fl_smallcache_explain,
    .explain_bwd = "rule Bscb: the score tiles S_ij, dP_ij about 2M/3 (Br ~ 1.4 Bc), the pair with the least count; "
                   "2*Br*Bc + (Br + Bc)*Bd + 2*Br <= M (Fscb), Bd the largest that fits",
    .search = {FL_SEARCH_BOUND, FL_SEARCH_BOUND},
    .closed_form_terms = closed_form_terms,
    .count_floor = count_floor,
};
