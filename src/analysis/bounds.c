/* bounds.c: lower bounds on HBM traffic (see bounds.h; derivations in docs/bounds.md). */
#include <flashlab/bounds.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <flashlab/blocksparse_mask.h>
#include <flashlab/masks.h>
#include <flashlab/schedule.h>

/* Saturating arithmetic on non-negative counts: a sum too large for 64 bits becomes INT64_MAX,
 * which is still a lower bound of the true value. */
static int64_t sat_add(int64_t a, int64_t b)
{
    int64_t r;
    return fl_add_ok(a, b, &r) ? r : INT64_MAX;
}
static int64_t sat_mul(int64_t a, int64_t b)
{
    int64_t r;
    return fl_mul_ok(a, b, &r) ? r : INT64_MAX;
}

/* ---- what a causal/window mask needs (docs/bounds.md §1.2) ----
 * Row i keeps keys [lo(i), hi(i)] with lo(i) = max(0, i + a) (0 without a lower offset) and
 * hi(i) = min(Nk - 1, i + b) (Nk - 1 without an upper one); len(i) = hi - lo + 1 when positive.
 * lo and hi are nondecreasing and piecewise linear with slopes 0 and 1, so len is concave and
 * piecewise linear with at most three pieces, split where i + a = 0 and i + b = Nk - 1. */

static int64_t lo_of(const fl_mask *mk, int64_t i) { return mk->has_a ? fl_max64(0, i + mk->a) : 0; }
static int64_t hi_of(const fl_mask *mk, int64_t i) { return mk->has_b ? fl_min64(mk->Nk - 1, i + mk->b) : mk->Nk - 1; }
static int64_t len_of(const fl_mask *mk, int64_t i) { return hi_of(mk, i) - lo_of(mk, i) + 1; }

/* Within the piece [p0, p1] where len is linear, the rows with len >= t: [*u, *v] (empty when
 * *u > *v) and the sum of len over them (*sum). */
static void piece(const fl_mask *mk, int64_t p0, int64_t p1, int64_t t, int64_t *u, int64_t *v, double *sum)
{
    const int64_t l0 = len_of(mk, p0), l1 = len_of(mk, p1);
    *u = p1 + 1, *v = p1, *sum = 0.0;
    if (p0 > p1) return;
    const int64_t s = p1 > p0 ? (l1 - l0) / (p1 - p0) : 0; /* -1, 0 or 1 */
    if (s == 0) {
        if (l0 >= t) *u = p0, *v = p1;
    } else if (s > 0) { /* len(i) = l0 + (i - p0) >= t  <=>  i >= p0 + t - l0 */
        *u = fl_max64(p0, p0 + (t - l0)), *v = p1;
    } else { /* len(i) = l0 - (i - p0) >= t  <=>  i <= p0 + l0 - t */
        *u = p0, *v = fl_min64(p1, p0 + (l0 - t));
    }
    if (*u > *v) return;
    *sum = (double)(*v - *u + 1) * (double)(len_of(mk, *u) + len_of(mk, *v)) / 2.0;
}

/* Rows with len >= t (one interval, len being concave): [*u, *v], and the sum of their len. */
static void rows_at_least(const fl_mask *mk, int64_t t, int64_t *u, int64_t *v, double *sum)
{
    int64_t cut[4], n = 0;
    const int64_t Nq = mk->Nq;
    cut[n++] = 0;
    if (mk->has_a && -mk->a + 1 > 0 && -mk->a + 1 < Nq) cut[n++] = -mk->a + 1;              /* lo = i + a from here */
    if (mk->has_b && mk->Nk - mk->b > 0 && mk->Nk - mk->b < Nq) cut[n++] = mk->Nk - mk->b; /* hi = Nk - 1 from here */
    if (n == 3 && cut[1] > cut[2]) {
        const int64_t x = cut[1];
        cut[1] = cut[2], cut[2] = x;
    }
    cut[n] = Nq;
    *u = Nq, *v = -1, *sum = 0.0;
    for (int64_t k = 0; k < n; k++) {
        int64_t a, b;
        double s;
        piece(mk, cut[k], cut[k + 1] - 1, t, &a, &b, &s);
        if (a > b) continue;
        *u = fl_min64(*u, a), *v = fl_max64(*v, b), *sum += s;
    }
}

void fl_need_of_mask(const fl_mask *mk, fl_need *o)
{
    int64_t u, v;
    double s;
    memset(o, 0, sizeof *o);
    rows_at_least(mk, 1, &u, &v, &s);
    if (u <= v) {
        o->r1 = v - u + 1;
        o->k1 = hi_of(mk, v) - lo_of(mk, u) + 1; /* the kept intervals of consecutive rows touch */
    }
    rows_at_least(mk, 2, &u, &v, &s);
    if (u <= v) {
        o->r2 = v - u + 1;
        o->k2 = hi_of(mk, v) - lo_of(mk, u) + 1;
        o->s2 = s;
    }
}

/* The need of a block-sparse problem: block (bi, bj) of the Br x Bc grid is kept or not
 * (blocksparse_mask.h); the rows of a block row keep the same keys. */
static fl_status need_of_blocks(const fl_problem *p, const fl_blocks *b, fl_need *o)
{
    const int64_t N = p->N;
    const fl_bsmask mk = fl_bsmask_of(N, N, b->Br, b->Bc, p->block_mask);
    int64_t blocks;
    if (!fl_mul_ok(mk.Tr, mk.Tc, &blocks) || blocks > (INT64_C(1) << 31))
        return fl_fail(FL_EINVAL, "{N}/{M}: the block mask has %lld x %lld blocks; the lower bound walks "
                                  "at most 2^31 of them", (long long)mk.Tr, (long long)mk.Tc);
    unsigned char *kept = calloc((size_t)mk.Tc, 1); /* bit 0: kept by a row with >= 1 key, bit 1: >= 2 */
    if (!kept) return fl_fail(FL_ENOMEM, "out of memory for the block mask (%lld key blocks)", (long long)mk.Tc);
    memset(o, 0, sizeof *o);
    for (int64_t bi = 0; bi < mk.Tr; bi++) {
        const int64_t br = fl_min64(b->Br, N - bi * b->Br);
        int64_t keys = 0;
        for (int64_t bj = 0; bj < mk.Tc; bj++)
            if (fl_bsmask_block(&mk, bi, bj)) keys += fl_min64(b->Bc, N - bj * b->Bc);
        if (keys < 1) continue;
        o->r1 += br;
        if (keys >= 2) o->r2 += br, o->s2 += (double)br * (double)keys;
        const unsigned char bit = keys >= 2 ? 3 : 1;
        for (int64_t bj = 0; bj < mk.Tc; bj++)
            if (fl_bsmask_block(&mk, bi, bj)) kept[bj] |= bit;
    }
    for (int64_t bj = 0; bj < mk.Tc; bj++) {
        const int64_t bc = fl_min64(b->Bc, N - bj * b->Bc);
        if (kept[bj] & 1) o->k1 += bc;
        if (kept[bj] & 2) o->k2 += bc;
    }
    free(kept);
    return FL_OK;
}

/* ---- (LB1) ---- */

/* R (ceil(W / f) - 1) for W products and segments of R moves forming at most f each (eq. (LB1)):
 * f rounded up and W rounded down by a relative 1e-9, so ceil can only come out too small;
 * saturating at INT64_MAX. */
static int64_t segments_bound(long double W, long double f, long double R)
{
    if (!(W > 0.0L) || !(f > 0.0L) || !isfinite(f)) return 0;
    const long double segs = ceill(W * (1.0L - 1e-9L) / (f * (1.0L + 1e-9L))) - 1.0L; /* certainly complete */
    if (segs < 1.0L) return 0;
    const long double lb = R * segs;
    return lb >= 9.2e18L ? INT64_MAX : (int64_t)lb;
}

/* LB1 of a pass (docs/bounds.md eqs. (LB1), (LB1-fb)): over the R grid, the forward's products
 * against f_f, the backward's against f_b, and with both passes also all of them against
 * f_f + f_b (a segment forms at most f_f of the one and f_b of the other).  A grid point whose
 * candidates cannot pass the best so far even with the program's values at a few feasible points
 * in place of its maximum (fl_segment_products_taken) is skipped: its branch and bound would
 * change nothing. */
static int64_t pass_bound(double Wf, double Wb, int64_t d, int64_t M, int64_t *Rbest)
{
    int64_t best = 0;
    *Rbest = 0;
    if (d < 1 || M < 1) return 0;
    for (int j = FL_SEGMENT_NR - 1; j >= 0; j--) {
        const long double R = floorl((long double)M * (long double)fl_segment_r(j));
        if (R < 1.0L) continue;
        long double ceiling = 0.0L; /* the most this R can give */
        if (Wf > 0.0) ceiling += Wf / fl_segment_products_taken(FL_PRODUCTS_FWD, d, M, j);
        if (Wb > 0.0) ceiling += Wb / fl_segment_products_taken(FL_PRODUCTS_BWD, d, M, j);
        if (R * ceiling <= (long double)best) continue;
        const long double ff = Wf > 0.0 ? fl_segment_products(FL_PRODUCTS_FWD, d, M, j) : 0.0L;
        const long double fb = Wb > 0.0 ? fl_segment_products(FL_PRODUCTS_BWD, d, M, j) : 0.0L;
        const int64_t v[3] = {segments_bound(Wf, ff, R), segments_bound(Wb, fb, R),
                              Wf > 0.0 && Wb > 0.0 ? segments_bound((long double)Wf + Wb, ff + fb, R) : 0};
        for (int k = 0; k < 3; k++)
            if (v[k] > best) best = v[k], *Rbest = (int64_t)R;
    }
    return best;
}

int64_t fl_product_bound(fl_products kind, double W, int64_t d, int64_t M, int64_t *R)
{
    return kind == FL_PRODUCTS_FWD ? pass_bound(W, 0.0, d, M, R) : pass_bound(0.0, W, d, M, R);
}

/* ---- the problem ---- */

/* Adds the floor and products of one query-key matrix with need n, met by hq query heads and
 * hkv K/V heads, to *o (docs/bounds.md eqs. (F-fwd), (F-bwd), (F-fb)). */
static void add_need(const fl_problem *p, const fl_need *n, int64_t hq, int64_t hkv, fl_lower_bound *o)
{
    /* Q, K, dQ, dK rows are d wide, V, O, dO, dV rows d_v wide (docs/model.md rule D1) */
    const int64_t d = p->d, dv = fl_problem_dv(p);
    const int64_t q2 = sat_mul(hq, n->r2), q1 = sat_mul(hq, n->r1);
    const int64_t kk2 = sat_mul(hkv, n->k2), kk1 = sat_mul(hkv, n->k1);
    const int64_t qk = sat_mul(d, sat_add(q2, kk2)), v1 = sat_mul(dv, kk1), o1 = sat_mul(dv, q1);
    int64_t rd = 0, wr = 0;
    const double scores = (double)hq * n->s2; /* the needed scores: rows with two or more keys */
    switch (p->pass) {
    case FL_PASS_FWD: /* read Q (r2), K (k2), V (k1); write O (r1) */
        rd = sat_add(qk, v1);
        wr = o1;
        break;
    case FL_PASS_BWD: /* read dO (r1); write dQ (r2), dK (k2), dV (k1) */
        rd = o1;
        wr = sat_add(qk, v1);
        break;
    default: /* both: read Q, K, V, dO; write O, dQ, dK, dV */
        rd = sat_add(sat_add(qk, v1), o1);
        wr = sat_add(sat_add(qk, v1), o1);
        break;
    }
    o->floor_reads = sat_add(o->floor_reads, rd);
    o->floor_writes = sat_add(o->floor_writes, wr);
    /* a complete product tree needs its inner dimension of operands from each side: with d_qk !=
     * d_v the smaller one bounds the leaves of either family (docs/bounds.md §2.7), so the
     * products are counted, and the segments' capacity taken, at min(d, d_v) */
    const double dm = (double)fl_min64(d, dv);
    if (p->pass & FL_PASS_FWD) o->products_fwd += 2.0 * dm * scores; /* (W-f) */
    if (p->pass & FL_PASS_BWD) o->products_bwd += 4.0 * dm * scores; /* (W-b) */
}

fl_status fl_lower_bound_of(const fl_problem *p, const fl_blocks *b, fl_lower_bound *o)
{
    FL_TRY(fl_problem_check_fields(p));
    memset(o, 0, sizeof *o);
    const int64_t Nk = p->Nk ? p->Nk : p->N;
    const int64_t hq = p->heads, hkv = p->kv_heads ? p->kv_heads : p->heads;
    if (fl_schedule_get(p->algo) && (fl_schedule_get(p->algo)->flags & FL_SCHED_SOFTMAX)) {
        /* softmax of an N x Nk matrix: every entry of a row of two or more is read; Y written */
        const int64_t all = sat_mul(p->N, Nk);
        o->floor_reads = Nk >= 2 ? all : 0;
        o->floor_writes = all;
    } else if (fl_schedule_get(p->algo) && (fl_schedule_get(p->algo)->accepts & FL_ACCEPT_BLOCK_MASK)) {
        if (!b || b->Br < 1 || b->Bc < 1)
            return fl_fail(FL_EINVAL, "blocksparse: the lower bound needs the blocks its block mask is cut along");
        fl_need n;
        FL_TRY(need_of_blocks(p, b, &n));
        add_need(p, &n, 1, 1, o);
    } else if (!p->cu_seqlens_q) {
        fl_mask mk;
        fl_need n;
        FL_TRY(fl_mask_init(&mk, p->N, Nk, p->causal, p->window_left, p->window_right));
        fl_need_of_mask(&mk, &n);
        add_need(p, &n, sat_mul(p->batch, hq), sat_mul(p->batch, hkv), o);
    } else {
        const int64_t *cq = p->cu_seqlens_q, *ck = p->cu_seqlens_k ? p->cu_seqlens_k : cq;
        for (int64_t s = 0; s < p->batch; s++) {
            const int64_t nq = cq[s + 1] - cq[s], nk = ck[s + 1] - ck[s];
            if (nq < 1 || nk < 1) continue; /* an empty sequence (fl_problem_check: empty on both sides) */
            fl_mask mk;
            fl_need n;
            FL_TRY(fl_mask_init(&mk, nq, nk, p->causal, p->window_left, p->window_right));
            fl_need_of_mask(&mk, &n);
            add_need(p, &n, hq, hkv, o);
        }
    }
    o->floor = sat_add(o->floor_reads, o->floor_writes);
    o->products = o->products_fwd + o->products_bwd;
    o->product = pass_bound(o->products_fwd, o->products_bwd, fl_min64(p->d, fl_problem_dv(p)), p->M, &o->segment);
    o->bound = fl_max64(o->floor, o->product);
    o->small_cache = p->d > p->M / p->d; /* M < d^2, without forming d^2 */
    o->shape = o->small_cache ? o->products / sqrt((double)p->M) : o->products * (double)p->d / (double)p->M;
    return FL_OK;
}
