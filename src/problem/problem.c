/* problem.c: schedule names, block-size rules, footprints and closed forms (see problem.h).
 * Equation labels refer to docs/model.md. */
#include <flashlab/problem.h>
#include "base/checked.h"

#include <flashlab/heads.h>
#include <flashlab/problem_ext.h>
#include "schedules/smallcache.h" /* TEMPORARY registration of smallcache (bounds branch): replaced by one registry line at merge */

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const algo_names[FL_NALGO] = {"standard", "flash1", "flash2", "flash2-gqa",
    "decode", "blocksparse", "memeff", "softmax-safe", "softmax-online",
    "smallcache" /* TEMPORARY registration of smallcache (bounds branch): replaced by one registry line at merge */};

const char *fl_algo_name(fl_algo a)
{
    return (a >= 0 && a < FL_NALGO) ? algo_names[a] : NULL;
}

fl_status fl_algo_parse(const char *name, fl_algo *out)
{
    for (int a = 0; a < FL_NALGO; a++)
        if (name && strcmp(name, algo_names[a]) == 0) {
            *out = (fl_algo)a;
            return FL_OK;
        }
    return fl_fail(FL_EINVAL, "--algo: unknown schedule '%s' (choose %s)", name ? name : "",
                   fl_algo_choices());
}

const char *fl_algo_choices(void)
{
    static _Thread_local char buf[256];
    size_t len = 0;
    buf[0] = 0;
    for (int a = 0; a < FL_NALGO && len < sizeof buf; a++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", a == 0 ? "" : a == FL_NALGO - 1 ? " or " : ", ",
                                algo_names[a]);
    return buf;
}

fl_problem fl_problem_default(void)
{
    fl_problem p = {0};
    p.algo = FL_ALGO_FLASH2;
    p.N = 1024;
    p.d = 64;
    p.M = 98304;
    p.seed = 1;
    p.elem_bytes = 2;
    p.max_events = 10000000000LL;
    p.Nk = 0;
    p.causal = FL_CAUSAL_NONE;
    p.window_left = p.window_right = -1;
    p.batch = p.heads = 1;
    p.kv_heads = 0;
    p.pass = FL_PASS_FWD;
    /* issue 4 items 5-7 (sim/problem_ext.h) */
    p.page_size = 0;
    p.pool_pages = 0;
    p.page_seed = 0;
    p.block_table = NULL;
    p.block_table_len = 0;
    p.splits = 1;
    p.pad_value = 0.0;
    p.density = 1.0;
    p.mask_seed = 1;
    return p;
}

fl_status fl_problem_check(const fl_problem *p)
{
    if (!fl_algo_name(p->algo)) return fl_fail(FL_EINVAL, "--algo: unknown schedule");
    if (p->N < 1) return fl_fail(FL_EINVAL, "--N: sequence length must be an integer >= 1");
    if (p->d < 1) return fl_fail(FL_EINVAL, "--d: head dimension must be an integer >= 1");
    if (p->M < 1) return fl_fail(FL_EINVAL, "--M: SRAM capacity must be an integer >= 1 element");
    if (p->Br < 0) return fl_fail(FL_EINVAL, "--Br: block size must be an integer >= 1");
    if (p->Bc < 0) return fl_fail(FL_EINVAL, "--Bc: block size must be an integer >= 1");
    if (p->elem_bytes != 2 && p->elem_bytes != 4 && p->elem_bytes != 8)
        return fl_fail(FL_EINVAL, "--dtype: element size must be 2, 4 or 8 bytes");
    if (p->max_events < 0) return fl_fail(FL_EINVAL, "--max-events: must be >= 0 (0 = no limit)");
    const struct { const char *opt; int64_t v; } sizes[] = {
        {"--N", p->N}, {"--Nk", p->Nk}, {"--d", p->d}, {"--M", p->M}, {"--Br", p->Br}, {"--Bc", p->Bc},
        {"--batch", p->batch}, {"--heads", p->heads}, {"--kv-heads", p->kv_heads},
        {"--window", p->window_left}, {"--window", p->window_right}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) /* sums of two sizes fit in 64 bits */
        if (sizes[i].v > FL_SIZE_MAX)
            return fl_fail(FL_EINVAL, "%s: %lld is more than the largest size %lld", sizes[i].opt,
                           (long long)sizes[i].v, (long long)FL_SIZE_MAX);
    /* Variants (issue 4): docs/model.md K1 (masks), H1 (heads), V1 (varlen). */
    if (p->Nk < 0) return fl_fail(FL_EINVAL, "--Nk: key length must be an integer >= 1 (0 = N)");
    if (!fl_causal_name(p->causal)) return fl_fail(FL_EINVAL, "--causal: unknown corner (choose none, top-left or bottom-right)");
    if (p->window_left < -1 || p->window_right < -1)
        return fl_fail(FL_EINVAL, "--window: each side must be >= 0, or -1 for unbounded");
    if (p->batch < 1) return fl_fail(FL_EINVAL, "--batch: must be an integer >= 1");
    FL_TRY(fl_heads_check(p->heads, p->kv_heads ? p->kv_heads : p->heads));
    if (p->pass != FL_PASS_FWD && p->pass != FL_PASS_BWD && p->pass != FL_PASS_FWD_BWD)
        return fl_fail(FL_EINVAL, "--pass: choose fwd, bwd or fwd+bwd");
    if (p->cu_seqlens_k && !p->cu_seqlens_q)
        return fl_fail(FL_EINVAL, "--cu-seqlens-k: needs --cu-seqlens-q too (varlen describes both)");
    if (p->cu_seqlens_q) {
        const int64_t Nk = p->Nk ? p->Nk : p->N;
        const int64_t *cq = p->cu_seqlens_q, *ck = p->cu_seqlens_k ? p->cu_seqlens_k : p->cu_seqlens_q;
        FL_TRY(fl_cu_seqlens_check("--cu-seqlens-q", cq, p->batch + 1, p->batch, p->N));
        FL_TRY(fl_cu_seqlens_check(p->cu_seqlens_k ? "--cu-seqlens-k" : "--cu-seqlens-q (as keys)", ck,
                                   p->batch + 1, p->batch, Nk));
        for (int64_t b = 0; b < p->batch; b++)
            if ((cq[b + 1] == cq[b]) != (ck[b + 1] == ck[b]))
                return fl_fail(FL_EINVAL,
                               "--cu-seqlens-q/--cu-seqlens-k: sequence %lld has %lld queries and %lld keys; "
                               "a sequence is empty on both sides or on neither",
                               (long long)b, (long long)(cq[b + 1] - cq[b]), (long long)(ck[b + 1] - ck[b]));
    }
    FL_TRY(fl_ext_check(p)); /* issue 4 items 5-7: sim/problem_ext.c */
    if (p->algo == FL_ALGO_SMALLCACHE) FL_TRY(fl_smallcache_check(p)); /* TEMPORARY registration of smallcache (bounds branch): replaced by one registry line at merge */
    return FL_OK;
}

void fl_problem_lengths(const fl_problem *p, int64_t *max_nq, int64_t *max_nk)
{
    const int64_t Nk = p->Nk ? p->Nk : p->N;
    if (!p->cu_seqlens_q) {
        *max_nq = p->N;
        *max_nk = Nk;
        return;
    }
    const int64_t *cq = p->cu_seqlens_q, *ck = p->cu_seqlens_k ? p->cu_seqlens_k : cq;
    *max_nq = *max_nk = 1;
    for (int64_t b = 0; b < p->batch; b++) {
        *max_nq = fl_max64(*max_nq, cq[b + 1] - cq[b]);
        *max_nk = fl_max64(*max_nk, ck[b + 1] - ck[b]);
    }
}

int64_t fl_problem_group_ratio(const fl_problem *p)
{
    return p->heads / (p->kv_heads ? p->kv_heads : p->heads);
}

int64_t fl_problem_group(const fl_problem *p)
{
    return p->algo == FL_ALGO_FLASH2_GQA ? fl_problem_group_ratio(p) : 1;
}


int64_t fl_footprint_pass(fl_algo a, int bwd, int64_t G, int64_t d, int64_t Br, int64_t Bc, int64_t Bd)
{
    ck c = {0};
    int64_t f = -1;
    const int64_t R = mul(&c, G, Br); /* rows of a query tile: a group's G heads stacked */
    if (a == FL_ALGO_SMALLCACHE) return fl_smallcache_footprint(bwd, G, d, Br, Bc, Bd); /* TEMPORARY registration of smallcache (bounds branch): replaced by one registry line at merge */
    switch (a) {
    case FL_ALGO_STANDARD: /* (F0) Br*Bd + Bc*Bd + Br*Bc, both passes (products only) */
        f = add(&c, add(&c, mul(&c, Br, Bd), mul(&c, Bc, Bd)), mul(&c, Br, Bc));
        break;
    case FL_ALGO_FLASH1:
        if (!bwd) /* (F1) 2*Bc*d + 2*Br*d + Br*Bc + 6*Br */
            f = add(&c, add(&c, mul(&c, 2, mul(&c, Bc, d)), mul(&c, 2, mul(&c, Br, d))),
                    add(&c, mul(&c, Br, Bc), mul(&c, 6, Br)));
        else /* (F1b) 4*Bc*d + 4*Br*d + 2*Br*Bc + 3*Br */
            f = add(&c, add(&c, mul(&c, 4, mul(&c, Bc, d)), mul(&c, 4, mul(&c, Br, d))),
                    add(&c, mul(&c, 2, mul(&c, Br, Bc)), mul(&c, 3, Br)));
        break;
    case FL_ALGO_FLASH2:
    case FL_ALGO_FLASH2_GQA:
        if (!bwd) /* (F2), (F2g) with R = G*Br: 2*R*d + 2*Bc*d + R*Bc + 2*R */
            f = add(&c, add(&c, mul(&c, 2, mul(&c, R, d)), mul(&c, 2, mul(&c, Bc, d))),
                    add(&c, mul(&c, R, Bc), mul(&c, 2, R)));
        else /* (F2b) 4*Bc*d + 3*R*d + 2*R*Bc + 2*R */
            f = add(&c, add(&c, mul(&c, 4, mul(&c, Bc, d)), mul(&c, 3, mul(&c, R, d))),
                    add(&c, mul(&c, 2, mul(&c, R, Bc)), mul(&c, 2, R)));
        break;
    default: return -1;
    }
    return c.ovf ? -1 : f;
}

int64_t fl_footprint(fl_algo a, int64_t d, int64_t Br, int64_t Bc, int64_t Bd)
{
    return fl_footprint_pass(a, 0, 1, d, Br, Bc, Bd);
}

/* What a block rule is chosen for: the problem, the pass, the longest sequences. */
typedef struct {
    const fl_problem *p;
    int bwd;
    int64_t G, nq, nk;
} rule;

static int fits(const rule *r, int64_t Br, int64_t Bc, int64_t Bd)
{
    int64_t f = fl_footprint_pass(r->p->algo, r->bwd, r->G, r->p->d, Br, Bc, Bd);
    return f >= 0 && f <= r->p->M;
}

/* flash1's paper shape: Br = min(Bc, d), at most the query length.  docs/model.md rule (B1). */
static int64_t flash1_br(int64_t Bc, int64_t d, int64_t N) { return fl_min64(fl_min64(Bc, d), N); }

/* Largest B in [1, hi] with ok(B) (ok monotone: true up to some B); 0 if none. */
static int64_t largest(int64_t hi, int (*ok)(int64_t, const rule *), const rule *r)
{
    int64_t lo = 0; /* ok(lo) holds (or lo = 0) */
    if (hi < 1) return 0;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2 + (hi - lo) % 2; /* ceil((lo + hi) / 2), no overflow */
        if (ok(mid, r)) lo = mid; else hi = mid - 1;
    }
    return lo;
}
static int ok_flash1(int64_t Bc, const rule *r)
{
    return fits(r, flash1_br(Bc, r->p->d, r->nq), Bc, r->p->d);
}
static int ok_square(int64_t B, const rule *r) { return fits(r, B, B, r->p->d); }
/* flash2-gqa backward: the stacked query tile G*Br about as tall as the key tile is wide */
static int64_t gqa_br(int64_t Bc, const rule *r) { return fl_max64(1, fl_min64(Bc / r->G, r->nq)); }
static int ok_gqa_bwd(int64_t Bc, const rule *r) { return fits(r, gqa_br(Bc, r), Bc, r->p->d); }

/* standard: with Br, Bc fixed, the largest chunk Bd <= d that fits (rule B0), 0 if none. */
static int64_t standard_bd(const fl_problem *p, int64_t Br, int64_t Bc)
{
    int64_t area;
    if (!fl_mul_ok(Br, Bc, &area) || area > p->M || p->M - area < Br + Bc) return 0;
    return fl_min64(p->d, (p->M - area) / (Br + Bc));
}

/* A footprint for a message: its value, or "more than 2^63 - 1" when fl_footprint overflowed. */
static const char *need_text(int64_t need, char *buf, size_t n)
{
    if (need < 0) snprintf(buf, n, "more than %lld", (long long)INT64_MAX);
    else snprintf(buf, n, "%lld", (long long)need);
    return buf;
}

static fl_status too_small(const rule *r)
{
    const fl_problem *p = r->p;
    char nb[48];
    int64_t need = fl_footprint_pass(p->algo, r->bwd, r->G, p->d, 1, 1, p->algo == FL_ALGO_STANDARD ? 1 : p->d);
    return fl_fail(FL_ECAPACITY,
                   "--M: %s%s needs %s%s elements of SRAM for its smallest tiles "
                   "(Br = Bc = 1, d = %lld); M = %lld is too small",
                   fl_algo_name(p->algo), r->bwd ? " backward" : "", need < 0 ? "" : "at least ",
                   need_text(need, nb, sizeof nb), (long long)p->d, (long long)p->M);
}

static const char *footprint_label(fl_algo a, int bwd)
{
    if (a == FL_ALGO_STANDARD) return "F0";
    if (a == FL_ALGO_FLASH1) return bwd ? "F1b" : "F1";
    if (a == FL_ALGO_FLASH2_GQA) return bwd ? "F2b" : "F2g";
    return bwd ? "F2b" : "F2";
}

fl_status fl_blocks_choose_pass(const fl_problem *p, int bwd, fl_blocks *b)
{
    FL_TRY(fl_problem_check(p));
    rule r = {p, bwd, fl_problem_group(p), 0, 0};
    fl_problem_lengths(p, &r.nq, &r.nk);
    const int64_t n = fl_max64(r.nq, r.nk);
    memset(b, 0, sizeof *b);
    if (fl_algo_is_ext(p->algo)) return fl_ext_blocks(p, b); /* sim/problem_ext.c */
    if (p->algo == FL_ALGO_SMALLCACHE) return fl_smallcache_blocks(p, bwd, b); /* TEMPORARY registration of smallcache (bounds branch): replaced by one registry line at merge */
    b->Bd = p->d;
    switch (p->algo) {
    case FL_ALGO_FLASH1: {
        /* (B1) the paper: Bc = ceil(M/4d), Br = min(ceil(M/4d), d) */
        int64_t d4; /* 4d > M (so ceil(M/4d) = 1) when 4d does not fit in 64 bits */
        b->paper_Bc = fl_mul_ok(4, p->d, &d4) ? fl_cdiv(p->M, d4) : 1;
        b->paper_Br = fl_min64(b->paper_Bc, p->d);
        b->paper_footprint = fl_footprint_pass(FL_ALGO_FLASH1, bwd, 1, p->d, b->paper_Br, b->paper_Bc, p->d);
        /* shrink to the largest Bc <= min(paper Bc, Nk) whose buffers fit, same shape */
        b->Bc = largest(fl_min64(b->paper_Bc, r.nk), ok_flash1, &r);
        b->Br = flash1_br(b->Bc, p->d, r.nq);
        break;
    }
    case FL_ALGO_FLASH2_GQA:
        if (bwd) { /* (B2gb) Bc the largest with Br = max(1, floor(Bc/G)) fitting (F2b) */
            b->Bc = largest(n, ok_gqa_bwd, &r);
            b->Br = b->Bc ? gqa_br(b->Bc, &r) : 0;
        } else { /* (B2g) square blocks, a query tile of G*Br stacked rows (F2g) */
            b->Br = b->Bc = largest(n, ok_square, &r);
        }
        break;
    case FL_ALGO_FLASH2: /* (B2) square blocks Br = Bc, the largest (<= max(Nq, Nk)) that fit */
        b->Br = b->Bc = largest(n, ok_square, &r);
        break;
    case FL_ALGO_STANDARD: {
        /* (B0) panels (Bd = d) when they give tiles at least as large as cubes of side
         * t = floor(sqrt(M/3)); else cubes (Br = Bc = Bd = t).  Both passes. */
        int64_t t = (int64_t)floor(sqrt((double)p->M / 3.0));
        const int64_t third = p->M / 3; /* 3t^2 <= M  <=>  t <= floor(M/3) / t: no overflow */
        while (t + 1 <= third / (t + 1)) t++;
        while (t > 0 && t > third / t) t--;
        int64_t panel = largest(fl_max64(n, t), ok_square, &r);
        if (panel >= t && panel > 0) {
            b->Br = b->Bc = fl_min64(panel, n);
            b->Bd = p->d;
        } else {
            b->Br = b->Bc = fl_min64(t, n);
            b->Bd = fl_min64(t, p->d);
        }
        break;
    }
    default: return fl_fail(FL_EINVAL, "--algo: unknown schedule");
    }
    if (b->Br < 1 || b->Bc < 1 || b->Bd < 1) return too_small(&r);

    if (p->Br || p->Bc) {
        b->overridden = 1;
        if (p->Br) b->Br = p->Br;
        if (p->Bc) b->Bc = p->Bc;
        if (p->algo == FL_ALGO_STANDARD) b->Bd = standard_bd(p, b->Br, b->Bc);
        if (b->Bd < 1 || !fits(&r, b->Br, b->Bc, b->Bd)) {
            char nb[48];
            int64_t need = fl_footprint_pass(p->algo, bwd, r.G, p->d, b->Br, b->Bc,
                                             p->algo == FL_ALGO_STANDARD ? 1 : p->d);
            return fl_fail(FL_EINVAL,
                           "--Br/--Bc: %s%s blocks Br = %lld, Bc = %lld need %s elements of SRAM "
                           "(docs/model.md eq. %s), more than M = %lld",
                           fl_algo_name(p->algo), bwd ? " backward" : "", (long long)b->Br,
                           (long long)b->Bc, need_text(need, nb, sizeof nb), footprint_label(p->algo, bwd),
                           (long long)p->M);
        }
    }
    b->footprint = fl_footprint_pass(p->algo, bwd, r.G, p->d, b->Br, b->Bc, b->Bd);
    return FL_OK;
}

fl_status fl_blocks_choose(const fl_problem *p, fl_blocks *b)
{
    return fl_blocks_choose_pass(p, 0, b);
}

static fl_status overflow(const fl_problem *p)
{
    return fl_fail(FL_EOVERFLOW,
                   "--N/--d: counts for N = %lld, d = %lld would overflow 64-bit arithmetic",
                   (long long)p->N, (long long)p->d);
}

/* The plain case (one head, dense, Nq = Nk, forward); the variants are in closed_variants.c. */
fl_status fl_closed_form_plain(const fl_problem *p, const fl_blocks *b, fl_counts *out);
fl_status fl_closed_form_plain(const fl_problem *p, const fl_blocks *b, fl_counts *out)
{
    ck c = {0};
    const int64_t N = p->N, d = p->d, M = p->M;
    const int64_t Tr = fl_cdiv(N, b->Br), Tc = fl_cdiv(N, b->Bc);
    const int64_t Nd = mul(&c, N, d), NN = mul(&c, N, N);
    fl_counts r = {0};
    switch (p->algo) {
    case FL_ALGO_FLASH1:
        /* (C1) reads = 2Nd + Tc(2Nd + 2N); writes = (Nd + 2N) + Tc(Nd + 2N) */
        r.reads = add(&c, mul(&c, 2, Nd), mul(&c, Tc, add(&c, mul(&c, 2, Nd), mul(&c, 2, N))));
        r.writes = add(&c, add(&c, Nd, mul(&c, 2, N)), mul(&c, Tc, add(&c, Nd, mul(&c, 2, N))));
        /* (E1) events = 3Tr + Tc(2 + 7Tr) */
        r.events = add(&c, mul(&c, 3, Tr), mul(&c, Tc, add(&c, 2, mul(&c, 7, Tr))));
        r.sram_peak = b->footprint;
        break;
    case FL_ALGO_FLASH2:
        /* (C2) reads = Nd + 2Nd*Tr; writes = Nd + N */
        r.reads = add(&c, Nd, mul(&c, mul(&c, 2, Nd), Tr));
        r.writes = add(&c, Nd, N);
        /* (E2) events = Tr(3 + 2Tc) */
        r.events = mul(&c, Tr, add(&c, 3, mul(&c, 2, Tc)));
        r.sram_peak = b->footprint;
        break;
    case FL_ALGO_STANDARD: {
        const int64_t Td = fl_cdiv(d, b->Bd);
        const int row_fits = N <= M;                       /* (C0.3) */
        const int64_t R = row_fits ? fl_min64(M / N, N) : 0; /* rows per softmax tile */
        const int64_t soft_buf = row_fits ? mul(&c, R, N) : M;
        /* (C0.1) S = QK^T: Q read once per row block when Td = 1, else once per (i, j) */
        int64_t q = Td == 1 ? Nd : mul(&c, Nd, Tc);
        int64_t k = mul(&c, Nd, Tr);
        /* (C0.2) softmax: 1 read per element when a row fits in SRAM, else 3 (max, sum, out) */
        int64_t s = row_fits ? NN : mul(&c, 3, NN);
        /* (C0.4) O = PV: P read once per d-chunk, V once per row block */
        int64_t pr = mul(&c, NN, Td), v = mul(&c, Nd, Tr);
        r.reads = add(&c, add(&c, add(&c, q, k), s), add(&c, pr, v));
        r.writes = add(&c, mul(&c, 2, NN), Nd); /* S, P and O written once */
        /* (E0) events */
        int64_t e1 = Td == 1 ? mul(&c, Tr, add(&c, 1, mul(&c, 2, Tc)))
                             : mul(&c, mul(&c, Tr, Tc), add(&c, mul(&c, 2, Td), 1));
        int64_t e2 = row_fits ? mul(&c, 2, fl_cdiv(N, R)) : mul(&c, mul(&c, 4, N), fl_cdiv(N, M));
        int64_t e3 = mul(&c, mul(&c, Tr, Td), add(&c, mul(&c, 2, Tc), 1));
        r.events = add(&c, add(&c, e1, e2), e3);
        r.sram_peak = fl_max64(b->footprint, soft_buf);
        break;
    }
    default: return fl_fail(FL_EINVAL, "--algo: unknown schedule");
    }
    r.total = add(&c, r.reads, r.writes);
    if (c.ovf) return overflow(p);
    *out = r;
    return FL_OK;
}
