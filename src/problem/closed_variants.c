/* closed_variants.c: the exact counts of the variants (docs/model.md §4 and the sections on
 * masks, heads, varlen, backward), as sums over a problem's segments of closed forms per row
 * block or key block.  Like (C0)-(C2) they are never the source of a reported count: the tests
 * assert they equal what the machine counted.
 *
 * Per segment (Nq queries, Nk keys, group G, blocks Br, Bc, Bd; Tr = ceil(Nq/Br),
 * Tc = ceil(Nk/Bc), Td = ceil(d/Bd)), with the mask's block ranges (rule K2): row block i
 * touches key blocks [j0_i, j1_i), n_i = j1_i - j0_i of them, covering
 * cols_i = min(Nk, j1_i Bc) - j0_i Bc keys; key block j is touched by row blocks [i0_j, i1_j),
 * m_j of them, covering rows_j = min(Nq, i1_j Br) - i0_j Br queries.  [x] is 1 when x holds.
 *
 * (C2m) flash2 forward:  reads  = sum_i ([n_i > 0] G br_i d + 2 d cols_i)
 *                        writes = G Nq (d + 1);  events = sum_i (G [n_i > 0] + 2 n_i + 2G)
 * (C1m) flash1 forward:  reads  = sum_j [m_j > 0] (2 bc_j d + rows_j (2d + 2))
 *                        writes = Nq (d + 2) + sum_j rows_j (d + 2)
 *                        events = 3 Tr + sum_j ([m_j > 0] 2 + 7 m_j)
 * (C0) standard forward (mask-oblivious), with Nq, Nk in place of N (see problem.c).
 * (C2b) flash2 backward: reads  = 2 G Nq d + sum_j [m_j > 0] ((2 + 2a) bc_j d + G rows_j (3d + 2))
 *                        writes = G Nq (d + 1) + sum_j ([m_j > 0] or f) 2 bc_j d
 *                                 + sum_j G rows_j d
 *                        events = 4 G Tr + sum_j ([m_j > 0] (4 + 2a + 6 G m_j) + [m_j = 0] 2f)
 * (C1b) flash1 backward: reads  = sum_j [m_j > 0] ((2 + 2a) bc_j d + rows_j (4d + 2))
 *                        writes = Nq d + 2 f Nk d + sum_j [m_j > 0] (rows_j d + 2 bc_j d)
 *                        events = Tr + 2 f Tc + sum_j [m_j > 0] (4 + 2a + 7 m_j)
 * (C0b) standard backward: the five steps of sched_standard_bwd.c, below.
 * where f = kv_first and a = 1 - f (a later query head of a shared K/V head adds to dK, dV).
 */
#include <flashlab/problem_ext.h>
#include "base/checked.h"
#include <flashlab/problem.h>
#include "segments.h"
#include "schedules/smallcache.h" /* TEMPORARY registration of smallcache (bounds branch): replaced by one registry line at merge */

static void acc(ck *c, int64_t *x, int64_t v) { *x = add(c, *x, v); }

static void flash2_fwd(ck *c, const fl_seg *s, const fl_blocks *b, int64_t d, fl_counts *r)
{
    const int64_t G = s->group;
    for (int64_t r0 = 0; r0 < s->Nq; r0 += b->Br) {
        const int64_t br = fl_min64(b->Br, s->Nq - r0);
        int64_t j0, j1;
        fl_mask_block_range(&s->mask, r0, br, b->Bc, &j0, &j1);
        const int64_t n = j1 > j0 ? j1 - j0 : 0;
        const int64_t cols = n ? fl_min64(s->Nk, j1 * b->Bc) - j0 * b->Bc : 0;
        if (n) acc(c, &r->reads, mul(c, mul(c, G, br), d));
        acc(c, &r->reads, mul(c, 2, mul(c, d, cols)));
        acc(c, &r->writes, mul(c, mul(c, G, br), d + 1));
        acc(c, &r->events, add(c, add(c, n ? G : 0, mul(c, 2, n)), mul(c, 2, G)));
    }
}

static void flash1_fwd(ck *c, const fl_seg *s, const fl_blocks *b, int64_t d, fl_counts *r)
{
    acc(c, &r->writes, mul(c, s->Nq, d + 2));
    acc(c, &r->events, mul(c, 3, fl_cdiv(s->Nq, b->Br)));
    for (int64_t c0 = 0; c0 < s->Nk; c0 += b->Bc) {
        const int64_t bc = fl_min64(b->Bc, s->Nk - c0);
        int64_t i0, i1;
        fl_mask_row_block_range(&s->mask, c0, bc, b->Br, &i0, &i1);
        if (i1 <= i0) continue;
        const int64_t rows = fl_min64(s->Nq, i1 * b->Br) - i0 * b->Br;
        acc(c, &r->reads, add(c, mul(c, 2, mul(c, bc, d)), mul(c, rows, 2 * d + 2)));
        acc(c, &r->writes, mul(c, rows, d + 2));
        acc(c, &r->events, add(c, 2, mul(c, 7, i1 - i0)));
    }
}

/* the products of sched_standard.c on an nq x nk block: _nt (C = A B^T) and _nn (O = P V or,
 * transposed, O = P^T V, with a read-modify-write when acc) */
static void std_nt(ck *c, const fl_blocks *b, int64_t d, int64_t na, int64_t nb, fl_counts *r)
{
    const int64_t Tr = fl_cdiv(na, b->Br), Tc = fl_cdiv(nb, b->Bc), Td = fl_cdiv(d, b->Bd);
    acc(c, &r->reads, Td == 1 ? mul(c, na, d) : mul(c, mul(c, na, d), Tc)); /* A (C0.1) */
    acc(c, &r->reads, mul(c, mul(c, nb, d), Tr));                           /* B */
    acc(c, &r->writes, mul(c, na, nb));
    acc(c, &r->events, Td == 1 ? mul(c, Tr, add(c, 1, mul(c, 2, Tc)))
                               : mul(c, mul(c, Tr, Tc), add(c, mul(c, 2, Td), 1)));
}
static void std_nn(ck *c, const fl_blocks *b, int64_t d, int64_t np, int64_t nk, int transP,
                   int rmw, fl_counts *r)
{
    const int64_t Td = fl_cdiv(d, b->Bd);
    const int64_t nout = transP ? nk : np, nsum = transP ? np : nk;
    const int64_t To = fl_cdiv(nout, transP ? b->Bc : b->Br), Ts = fl_cdiv(nsum, transP ? b->Br : b->Bc);
    acc(c, &r->reads, mul(c, mul(c, np, nk), Td));   /* P (C0.4) */
    acc(c, &r->reads, mul(c, mul(c, nsum, d), To));  /* V */
    if (rmw) acc(c, &r->reads, mul(c, nout, d));
    acc(c, &r->writes, mul(c, nout, d));
    acc(c, &r->events, mul(c, mul(c, To, Td), add(c, mul(c, 2, Ts), 1 + rmw)));
}

static void standard_fwd(ck *c, const fl_problem *p, const fl_seg *s, const fl_blocks *b, fl_counts *r)
{
    const int64_t nq = s->Nq, nk = s->Nk, M = p->M;
    std_nt(c, b, p->d, nq, nk, r); /* step 1 */
    if (nk <= M) {                 /* step 2 (C0.2-3) */
        const int64_t R = fl_min64(M / nk, nq);
        acc(c, &r->reads, mul(c, nq, nk));
        acc(c, &r->events, mul(c, 2, fl_cdiv(nq, R)));
        r->sram_peak = fl_max64(r->sram_peak, mul(c, R, nk));
    } else {
        acc(c, &r->reads, mul(c, 3, mul(c, nq, nk)));
        acc(c, &r->events, mul(c, mul(c, 4, nq), fl_cdiv(nk, M)));
        r->sram_peak = fl_max64(r->sram_peak, M);
    }
    acc(c, &r->writes, mul(c, nq, nk));
    std_nn(c, b, p->d, nq, nk, 0, 0, r); /* step 3 */
}

static void standard_bwd(ck *c, const fl_problem *p, const fl_seg *s, const fl_blocks *b, fl_counts *r)
{
    const int64_t nq = s->Nq, nk = s->Nk, M = p->M, d = p->d;
    const int a = !s->kv_first;
    std_nn(c, b, d, nq, nk, 1, a, r); /* 1: dV = P^T dO */
    std_nt(c, b, d, nq, nk, r);       /* 2: dP = dO V^T */
    if (2 * nk <= M) {                /* 3: dS (C0b.3) */
        const int64_t R = fl_min64(M / (2 * nk), nq);
        acc(c, &r->reads, mul(c, 2, mul(c, nq, nk)));
        acc(c, &r->events, mul(c, 3, fl_cdiv(nq, R)));
        r->sram_peak = fl_max64(r->sram_peak, mul(c, 2, mul(c, R, nk)));
    } else {
        const int64_t C = M / 2;
        acc(c, &r->reads, mul(c, 4, mul(c, nq, nk)));
        acc(c, &r->events, mul(c, mul(c, 5, nq), fl_cdiv(nk, C)));
        r->sram_peak = fl_max64(r->sram_peak, 2 * C);
    }
    acc(c, &r->writes, mul(c, nq, nk));
    std_nn(c, b, d, nq, nk, 0, 0, r); /* 4: dQ = dS K */
    std_nn(c, b, d, nq, nk, 1, a, r); /* 5: dK = dS^T Q */
}

static void flash_bwd(ck *c, int fa1, const fl_seg *s, const fl_blocks *b, int64_t d, fl_counts *r)
{
    const int64_t G = s->group, Tr = fl_cdiv(s->Nq, b->Br), Tc = fl_cdiv(s->Nk, b->Bc);
    const int f = s->kv_first, a = !f;
    if (fa1) { /* line 4: dQ = 0, dK = dV = 0 */
        acc(c, &r->writes, add(c, mul(c, mul(c, G, s->Nq), d), f ? mul(c, 2, mul(c, s->Nk, d)) : 0));
        acc(c, &r->events, add(c, mul(c, G, Tr), f ? 2 * Tc : 0));
    } else { /* lines 3-4: dQ = 0, D = rowsum(dO o O) */
        acc(c, &r->reads, mul(c, 2, mul(c, mul(c, G, s->Nq), d)));
        acc(c, &r->writes, mul(c, mul(c, G, s->Nq), d + 1));
        acc(c, &r->events, mul(c, 4, mul(c, G, Tr)));
    }
    for (int64_t c0 = 0; c0 < s->Nk; c0 += b->Bc) {
        const int64_t bc = fl_min64(b->Bc, s->Nk - c0);
        int64_t i0, i1;
        fl_mask_row_block_range(&s->mask, c0, bc, b->Br, &i0, &i1);
        if (i1 <= i0) {
            if (!fa1 && f) {
                acc(c, &r->writes, mul(c, 2, mul(c, bc, d)));
                acc(c, &r->events, 2);
            }
            continue;
        }
        const int64_t rows = fl_min64(s->Nq, i1 * b->Br) - i0 * b->Br, n = i1 - i0;
        acc(c, &r->reads, mul(c, 2 + 2 * a, mul(c, bc, d)));
        acc(c, &r->reads, mul(c, mul(c, G, rows), fa1 ? 4 * d + 2 : 3 * d + 2));
        acc(c, &r->writes, add(c, mul(c, mul(c, G, rows), d), mul(c, 2, mul(c, bc, d))));
        acc(c, &r->events, add(c, 4 + 2 * a, mul(c, mul(c, G, n), fa1 ? 7 : 6)));
    }
}

/* The plain forward of one head, dense, Nq = Nk: docs/model.md (C0)-(C2) in problem.c. */
fl_status fl_closed_form_plain(const fl_problem *p, const fl_blocks *b, fl_counts *out);

static int plain(const fl_problem *p, int bwd)
{
    return !bwd && p->algo != FL_ALGO_FLASH2_GQA && p->batch == 1 && p->heads == 1 &&
           !p->cu_seqlens_q && (p->Nk == 0 || p->Nk == p->N) && p->causal == FL_CAUSAL_NONE &&
           p->window_left == -1 && p->window_right == -1;
}

/* One segment's counts into *r (sram_peak: the largest of the segment's buffers). */
static void segment_counts(ck *c, const fl_problem *p, int bwd, const fl_seg *s, const fl_blocks *b,
                           fl_counts *r)
{
    switch (p->algo) {
    case FL_ALGO_STANDARD:
        if (bwd) standard_bwd(c, p, s, b, r);
        else standard_fwd(c, p, s, b, r);
        break;
    case FL_ALGO_FLASH1:
        if (bwd) flash_bwd(c, 1, s, b, p->d, r);
        else flash1_fwd(c, s, b, p->d, r);
        break;
    default:
        if (bwd) flash_bwd(c, 0, s, b, p->d, r);
        else flash2_fwd(c, s, b, p->d, r);
        break;
    }
}

/* r += n * x (counts), peak = max */
static void add_times(ck *c, fl_counts *r, const fl_counts *x, int64_t n)
{
    if (n <= 0) return;
    acc(c, &r->reads, mul(c, n, x->reads));
    acc(c, &r->writes, mul(c, n, x->writes));
    acc(c, &r->events, mul(c, n, x->events));
    r->sram_peak = fl_max64(r->sram_peak, x->sram_peak);
}

fl_status fl_closed_form_pass(const fl_problem *p, int bwd, const fl_blocks *b, fl_counts *out)
{
    if (fl_algo_is_ext(p->algo)) return fl_ext_closed_form(p, b, out); /* sim/problem_ext.c */
    if (p->algo == FL_ALGO_SMALLCACHE) return fl_smallcache_closed_form(p, bwd, b, out); /* TEMPORARY registration of smallcache (bounds branch): replaced by one registry line at merge */
    if (plain(p, bwd)) return fl_closed_form_plain(p, b, out);
    fl_segments sg;
    FL_TRY(fl_segments_build(p, &sg));
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
            return fl_fail(FL_EOVERFLOW, "--N/--d/--batch/--heads: counts for N = %lld, d = %lld would overflow 64-bit arithmetic",
                           (long long)p->N, (long long)p->d);
        }
    }
    /* Within a sequence the segments differ only in their offsets and in kv_first: per sequence,
     * Hkv segments come first on their K/V head and Hq/G - Hkv do not (0 for flash2-gqa).  Without
     * varlen every sequence is alike. */
    const int64_t per = sg.Hq / sg.G, nfirst = sg.Hkv, nother = per - sg.Hkv;
    const int64_t nseq = sg.cq ? sg.nseq : (sg.nseg ? 1 : 0), times = sg.cq ? 1 : p->batch;
    for (int64_t i = 0; i < nseq; i++) {
        fl_seg s;
        fl_segment_at(&sg, i * per, &s); /* head 0: first on its K/V head */
        fl_counts f = {0}, o = {0};
        segment_counts(&c, p, bwd, &s, b, &f);
        add_times(&c, &r, &f, mul(&c, times, nfirst));
        if (nother > 0) {
            s.kv_first = 0;
            segment_counts(&c, p, bwd, &s, b, &o);
            add_times(&c, &r, &o, mul(&c, times, nother));
        }
    }
    fl_segments_free(&sg);
    r.total = add(&c, r.reads, r.writes);
    if (c.ovf)
        return fl_fail(FL_EOVERFLOW, "--N/--d/--batch/--heads: counts would overflow 64-bit arithmetic");
    *out = r;
    return FL_OK;
}

fl_status fl_closed_form(const fl_problem *p, const fl_blocks *b, fl_counts *out)
{
    fl_counts f = {0}, g = {0};
    if (p->pass & FL_PASS_FWD) FL_TRY(fl_closed_form_pass(p, 0, b, &f));
    if (p->pass & FL_PASS_BWD) {
        fl_blocks bb;
        FL_TRY(fl_blocks_choose_pass(p, 1, &bb));
        FL_TRY(fl_closed_form_pass(p, 1, &bb, &g));
    }
    int64_t t;
    fl_counts r;
    if (!fl_add_ok(f.reads, g.reads, &r.reads) || !fl_add_ok(f.writes, g.writes, &r.writes) ||
        !fl_add_ok(r.reads, r.writes, &t) || !fl_add_ok(f.events, g.events, &r.events))
        return fl_fail(FL_EOVERFLOW, "--N/--d: counts would overflow 64-bit arithmetic");
    r.total = t;
    r.sram_peak = fl_max64(f.sram_peak, g.sram_peak);
    *out = r;
    return FL_OK;
}
