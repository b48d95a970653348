/* rules.c: the block-rule skeleton, checked footprints and segment sums the tiled schedules
 * share (see rules.h).  Equation labels refer to docs/model.md. */
#include "rules.h"

#include <stdio.h>

#include "problem/segments.h"

void fl_rule_init(fl_rule *r, const fl_problem *p, int bwd)
{
    r->p = p;
    r->bwd = bwd;
    r->G = fl_problem_group(p);
    fl_problem_lengths(p, &r->nq, &r->nk);
}

int fl_rule_fits(const fl_rule *r, int64_t Br, int64_t Bc, int64_t Bd)
{
    int64_t f = fl_footprint_of(r->p, r->bwd, r->G, Br, Bc, Bd);
    return f >= 0 && f <= r->p->M;
}

int64_t fl_largest(int64_t hi, int (*ok)(int64_t B, const void *ctx), const void *ctx)
{
    int64_t lo = 0; /* ok(lo) holds (or lo = 0) */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2 + (hi - lo) % 2; /* ceil((lo + hi) / 2), no overflow */
        if (ok(mid, ctx)) lo = mid; else hi = mid - 1;
    }
    return lo;
}

typedef struct {
    int (*ok)(int64_t, const fl_rule *);
    const fl_rule *r;
} rule_ok;

static int call_rule_ok(int64_t B, const void *ctx)
{
    const rule_ok *k = ctx;
    return k->ok(B, k->r);
}

int64_t fl_rule_largest(int64_t hi, int (*ok)(int64_t, const fl_rule *), const fl_rule *r)
{
    const rule_ok k = {ok, r};
    return fl_largest(hi, call_rule_ok, &k);
}

int fl_rule_ok_square(int64_t B, const fl_rule *r) { return fl_rule_fits(r, B, B, r->p->d); }

const char *fl_need_text(int64_t need, char *buf, size_t n)
{
    if (need < 0) snprintf(buf, n, "more than %lld", (long long)INT64_MAX);
    else snprintf(buf, n, "%lld", (long long)need);
    return buf;
}

fl_status fl_rule_finish(const fl_rule *r, fl_blocks *b, const char *label, int64_t need_bd,
                         int64_t (*bd_of)(const fl_problem *p, int64_t Br, int64_t Bc))
{
    const fl_problem *p = r->p;
    char nb[48];
    if (b->Br < 1 || b->Bc < 1 || b->Bd < 1) {
        int64_t need = fl_footprint_of(p, r->bwd, r->G, 1, 1, need_bd);
        return fl_fail(FL_ECAPACITY,
                       "{M}: %s%s needs %s%s elements of SRAM for its smallest tiles "
                       "(Br = Bc = 1, d = %lld); M = %lld is too small",
                       fl_algo_name(p->algo), r->bwd ? " backward" : "", need < 0 ? "" : "at least ",
                       fl_need_text(need, nb, sizeof nb), (long long)p->d, (long long)p->M);
    }
    if (p->Br || p->Bc) {
        b->overridden = 1;
        if (p->Br) b->Br = p->Br;
        if (p->Bc) b->Bc = p->Bc;
        if (bd_of) b->Bd = bd_of(p, b->Br, b->Bc);
        if (b->Bd < 1 || !fl_rule_fits(r, b->Br, b->Bc, b->Bd)) {
            int64_t need = fl_footprint_of(p, r->bwd, r->G, b->Br, b->Bc, need_bd);
            return fl_fail(FL_EINVAL,
                           "{Br}/{Bc}: %s%s blocks Br = %lld, Bc = %lld need %s elements of SRAM "
                           "(docs/model.md eq. %s), more than M = %lld",
                           fl_algo_name(p->algo), r->bwd ? " backward" : "", (long long)b->Br,
                           (long long)b->Bc, fl_need_text(need, nb, sizeof nb), label, (long long)p->M);
        }
    }
    b->footprint = fl_footprint_of(p, r->bwd, r->G, b->Br, b->Bc, b->Bd);
    return FL_OK;
}

int64_t fl_fp_checked2(fl_fp_split k, int64_t G, int64_t Br, int64_t Bc, int64_t Dq, int64_t Dv)
{
    ck c = {0};
    const int64_t R = mul(&c, G, Br);
    const int64_t rows = add(&c, mul(&c, mul(&c, k.rq, R), Dq), mul(&c, mul(&c, k.rv, R), Dv));
    const int64_t cols = add(&c, mul(&c, mul(&c, k.cq, Bc), Dq), mul(&c, mul(&c, k.cv, Bc), Dv));
    const int64_t f = add(&c, add(&c, rows, cols), add(&c, mul(&c, mul(&c, k.rc, R), Bc), mul(&c, k.r, R)));
    return c.ovf ? -1 : f;
}

int64_t fl_fp_checked(fl_fp_coef k, int64_t G, int64_t Br, int64_t Bc, int64_t Bd)
{
    ck c = {0};
    const int64_t R = mul(&c, G, Br);
    const int64_t f = add(&c, add(&c, mul(&c, mul(&c, k.rd, R), Bd), mul(&c, mul(&c, k.cd, Bc), Bd)),
                          add(&c, mul(&c, mul(&c, k.rc, R), Bc), mul(&c, k.r, R)));
    return c.ovf ? -1 : f;
}

int fl_closed_is_plain(const fl_problem *p, int bwd)
{
    return !bwd && !(fl_schedule_get(p->algo)->flags & FL_SCHED_STACKS_GROUP) &&
           p->batch == 1 && p->heads == 1 && !p->cu_seqlens_q && (p->Nk == 0 || p->Nk == p->N) &&
           p->causal == FL_CAUSAL_NONE && p->window_left == -1 && p->window_right == -1 &&
           !p->sinks && !(p->dropout > 0.0) && !fl_problem_fp8(p); /* no variant that moves more */
}

fl_status fl_closed_tiled(const fl_problem *p, int bwd, const fl_blocks *b, fl_plain_counts plain,
                          fl_segment_counts seg, fl_counts *out)
{
    if (!fl_closed_is_plain(p, bwd)) return fl_closed_sum(p, bwd, b, seg, out);
    ck c = {0};
    fl_counts r = {0};
    plain(&c, p, b, &r);
    r.total = add(&c, r.reads, r.writes);
    if (c.ovf) return fl_closed_overflow(p);
    *out = r;
    return FL_OK;
}

fl_status fl_closed_overflow(const fl_problem *p)
{
    return fl_fail(FL_EOVERFLOW, "{N}/{d}: counts for N = %lld, d = %lld would overflow 64-bit arithmetic",
                   (long long)p->N, (long long)p->d);
}

/* r += n * x (counts), peak = max */
static void add_times(ck *c, fl_counts *r, const fl_counts *x, int64_t n)
{
    if (n <= 0) return;
    fl_acc(c, &r->reads, mul(c, n, x->reads));
    fl_acc(c, &r->writes, mul(c, n, x->writes));
    fl_acc(c, &r->events, mul(c, n, x->events));
    r->sram_peak = fl_max64(r->sram_peak, x->sram_peak);
}

fl_status fl_closed_sum(const fl_problem *p, int bwd, const fl_blocks *b, fl_segment_counts seg,
                        fl_counts *out)
{
    fl_segments sg;
    FL_TRY(fl_segments_build(p, fl_problem_group(p), &sg));
    ck c = {0};
    fl_counts r = {0};
    r.sram_peak = b->footprint;
    /* The sums below loop over the row and key blocks of one segment per sequence.  Refuse,
     * before looping, counts that cannot fit: every count is at most
     * 8 (Hq Tq + Hkv Tk) d (Tr + Tc + 2) + 8 Hq Tq Nk_max, a small factor above the largest. */
    {
        const int64_t T = add(&c, fl_cdiv(sg.max_nq, b->Br), fl_cdiv(sg.max_nk, b->Bc));
        const int64_t rows = add(&c, sg.q_rows, sg.k_rows);
        add(&c, mul(&c, 8, mul(&c, mul(&c, rows, p->d), add(&c, T, 2))), mul(&c, 8, mul(&c, sg.q_rows, sg.max_nk)));
        if (c.ovf) {
            fl_segments_free(&sg);
            return fl_fail(FL_EOVERFLOW, "{N}/{d}/{batch}/{heads}: counts for N = %lld, d = %lld would overflow 64-bit arithmetic",
                           (long long)p->N, (long long)p->d);
        }
    }
    /* Within a sequence the segments differ only in their offsets and in kv_first: per sequence,
     * Hkv segments come first on their K/V head and Hq/G - Hkv do not (0 for a group schedule).
     * Without varlen every sequence is alike but for head_first (the first sequence's segments
     * write the sinks' gradient, later ones add to it): the first sequence once, then the others
     * batch - 1 times. */
    const int64_t per = sg.Hq / sg.G, nfirst = sg.Hkv, nother = per - sg.Hkv;
    const int64_t nseq = sg.cq ? sg.nseq : (sg.nseg ? 1 : 0);
    for (int64_t i = 0; i < nseq; i++)
        for (int later = 0; later < (sg.cq ? 1 : 2); later++) {
            const int64_t times = sg.cq ? 1 : later ? p->batch - 1 : 1;
            if (times < 1) continue;
            fl_seg s;
            fl_segment_at(&sg, i * per, &s); /* head 0: first on its K/V head */
            if (later) s.head_first = 0;
            fl_counts f = {0}, o = {0};
            seg(&c, p, bwd, &s, b, &f);
            add_times(&c, &r, &f, mul(&c, times, nfirst));
            if (nother > 0) {
                s.kv_first = 0;
                seg(&c, p, bwd, &s, b, &o);
                add_times(&c, &r, &o, mul(&c, times, nother));
            }
        }
    fl_segments_free(&sg);
    r.total = add(&c, r.reads, r.writes);
    if (c.ovf)
        return fl_fail(FL_EOVERFLOW, "{N}/{d}/{batch}/{heads}: counts would overflow 64-bit arithmetic");
    *out = r;
    return FL_OK;
}

int64_t fl_events_floor_tiled(const fl_problem *p, const fl_blocks *b, const fl_blocks *bb)
{
    if (fl_closed_is_plain(p, bb != NULL)) return 0; /* the plain closed form is O(1) */
    const int64_t Hq = p->heads, Hkv = p->kv_heads ? p->kv_heads : p->heads;
    const int64_t G = fl_problem_group(p), Nk = p->Nk ? p->Nk : p->N;
    const int64_t segs = Hq / G, first = G > 1 ? segs : Hkv; /* per sequence */
    int64_t lb = 0, t;
    for (int64_t s = 0; s < (p->cu_seqlens_q ? p->batch : 1); s++) {
        const int64_t *cq = p->cu_seqlens_q, *ck_ = p->cu_seqlens_k ? p->cu_seqlens_k : cq;
        const int64_t nq = cq ? cq[s + 1] - cq[s] : p->N, nk = cq ? ck_[s + 1] - ck_[s] : Nk;
        const int64_t reps = cq ? 1 : p->batch;
        if (!fl_mul_ok(reps, fl_mul_ok(segs, fl_cdiv(nq, b->Br), &t) ? t : INT64_MAX, &t) ||
            !fl_add_ok(lb, t, &lb))
            return INT64_MAX;
        if (bb && (!fl_mul_ok(reps, fl_mul_ok(first, fl_cdiv(nk, bb->Bc), &t) ? t : INT64_MAX, &t) ||
                   !fl_add_ok(lb, t, &lb)))
            return INT64_MAX;
    }
    return lb;
}

typedef struct {
    int64_t (*fp)(const fl_problem *, int64_t, int64_t);
    const fl_problem *p;
    int64_t M, other;
    int vary_bc;
} fp_fits;

static int call_fp_fits(int64_t B, const void *ctx)
{
    const fp_fits *k = ctx;
    const int64_t f = k->vary_bc == 2 ? k->fp(k->p, B, B) : k->vary_bc ? k->fp(k->p, k->other, B)
                                                                      : k->fp(k->p, B, k->other);
    return f >= 0 && f <= k->M;
}

int64_t fl_largest_fp(int64_t hi, int64_t M, int64_t (*fp)(const fl_problem *, int64_t, int64_t),
                      const fl_problem *p, int64_t other, int vary_bc)
{
    const fp_fits k = {fp, p, M, other, vary_bc};
    return fl_largest(hi, call_fp_fits, &k);
}

fl_status fl_closed_finish_own(const fl_problem *p, fl_status s, ck *c, fl_counts *r, fl_counts *out)
{
    if (s && s != FL_EOVERFLOW) return s;
    r->total = add(c, r->reads, r->writes);
    if (s || c->ovf)
        return fl_fail(FL_EOVERFLOW, "{N}/{Nk}/{d}: counts for N = %lld, Nk = %lld, d = %lld would "
                                     "overflow 64-bit arithmetic", (long long)p->N,
                       (long long)(p->Nk ? p->Nk : p->N), (long long)p->d);
    *out = *r;
    return FL_OK;
}

fl_status fl_compute_size_refuse(const fl_problem *p, double values)
{
    if (values > (double)FL_COMPUTE_MAX_VALUES) /* in double: compared with a limit far below 2^53 */
        return fl_fail(FL_EINVAL, "{N}/{Nk}/{d}: a compute run of %s would hold more than %lld "
                                  "values in HBM; use count (no arithmetic) for sizes this large",
                       fl_algo_name(p->algo), (long long)FL_COMPUTE_MAX_VALUES);
    return FL_OK;
}

int64_t fl_terms_key_blocks(int bwd, int dense, int64_t nq, int64_t nk, int64_t Br, int64_t Bc)
{
    return fl_cdiv(nk, Bc);
}
