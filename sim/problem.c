/* problem.c: schedule names, block-size rules, footprints and closed forms (see problem.h).
 * Equation labels refer to docs/model.md. */
#include "problem.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const algo_names[FL_NALGO] = {"standard", "flash1", "flash2"};

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
    return fl_fail(FL_EINVAL, "--algo: unknown schedule '%s' (choose standard, flash1 or flash2)",
                   name ? name : "");
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
    /* Variants not implemented yet are refused, never ignored. */
    if (p->Nk != 0 && p->Nk != p->N) return fl_fail(FL_EINVAL, "--Nk: unequal query and key lengths are not implemented yet");
    if (p->causal != FL_CAUSAL_NONE) return fl_fail(FL_EINVAL, "--causal: masks are not implemented yet");
    if (p->window_left != -1 || p->window_right != -1) return fl_fail(FL_EINVAL, "--window: windows are not implemented yet");
    if (p->batch != 1 || p->heads != 1 || (p->kv_heads != 0 && p->kv_heads != 1))
        return fl_fail(FL_EINVAL, "--batch/--heads/--kv-heads: several heads are not implemented yet");
    if (p->pass != FL_PASS_FWD) return fl_fail(FL_EINVAL, "--pass: only the forward pass is implemented yet");
    return FL_OK;
}

/* Checked arithmetic with a sticky overflow flag, so a formula reads as a formula. */
typedef struct { int ovf; } ck;
static int64_t mul(ck *c, int64_t a, int64_t b)
{
    int64_t r;
    if (!fl_mul_ok(a, b, &r)) { c->ovf = 1; return 0; }
    return r;
}
static int64_t add(ck *c, int64_t a, int64_t b)
{
    int64_t r;
    if (!fl_add_ok(a, b, &r)) { c->ovf = 1; return 0; }
    return r;
}

int64_t fl_footprint(fl_algo a, int64_t d, int64_t Br, int64_t Bc, int64_t Bd)
{
    ck c = {0};
    int64_t f = -1;
    switch (a) {
    case FL_ALGO_STANDARD: /* (F0) Br*Bd + Bc*Bd + Br*Bc */
        f = add(&c, add(&c, mul(&c, Br, Bd), mul(&c, Bc, Bd)), mul(&c, Br, Bc));
        break;
    case FL_ALGO_FLASH1: /* (F1) 2*Bc*d + 2*Br*d + Br*Bc + 6*Br */
        f = add(&c, add(&c, mul(&c, 2, mul(&c, Bc, d)), mul(&c, 2, mul(&c, Br, d))),
                add(&c, mul(&c, Br, Bc), mul(&c, 6, Br)));
        break;
    case FL_ALGO_FLASH2: /* (F2) 2*Br*d + 2*Bc*d + Br*Bc + 2*Br */
        f = add(&c, add(&c, mul(&c, 2, mul(&c, Br, d)), mul(&c, 2, mul(&c, Bc, d))),
                add(&c, mul(&c, Br, Bc), mul(&c, 2, Br)));
        break;
    default: return -1;
    }
    return c.ovf ? -1 : f;
}

static int fits(fl_algo a, int64_t d, int64_t Br, int64_t Bc, int64_t Bd, int64_t M)
{
    int64_t f = fl_footprint(a, d, Br, Bc, Bd);
    return f >= 0 && f <= M;
}

/* flash1's paper shape: Br = min(Bc, d), both at most N.  docs/model.md rule (B1). */
static int64_t flash1_br(int64_t Bc, int64_t d, int64_t N) { return fl_min64(fl_min64(Bc, d), N); }

/* Largest B in [1, hi] with ok(B) (ok monotone: true up to some B); 0 if none. */
static int64_t largest(int64_t hi, int (*ok)(int64_t, const fl_problem *), const fl_problem *p)
{
    int64_t lo = 0; /* ok(lo) holds (or lo = 0) */
    if (hi < 1) return 0;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2 + (hi - lo) % 2; /* ceil((lo + hi) / 2), no overflow */
        if (ok(mid, p)) lo = mid; else hi = mid - 1;
    }
    return lo;
}
static int ok_flash1(int64_t Bc, const fl_problem *p)
{
    return fits(FL_ALGO_FLASH1, p->d, flash1_br(Bc, p->d, p->N), Bc, p->d, p->M);
}
static int ok_flash2(int64_t B, const fl_problem *p)
{
    return fits(FL_ALGO_FLASH2, p->d, B, B, p->d, p->M);
}
static int ok_panel(int64_t B, const fl_problem *p)
{
    return fits(FL_ALGO_STANDARD, p->d, B, B, p->d, p->M);
}

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

static fl_status too_small(const fl_problem *p)
{
    char nb[48];
    int64_t need = fl_footprint(p->algo, p->d, 1, 1, p->algo == FL_ALGO_STANDARD ? 1 : p->d);
    return fl_fail(FL_ECAPACITY,
                   "--M: %s needs %s%s elements of SRAM for its smallest tiles "
                   "(Br = Bc = 1, d = %lld); M = %lld is too small",
                   fl_algo_name(p->algo), need < 0 ? "" : "at least ", need_text(need, nb, sizeof nb),
                   (long long)p->d, (long long)p->M);
}

fl_status fl_blocks_choose(const fl_problem *p, fl_blocks *b)
{
    FL_TRY(fl_problem_check(p));
    memset(b, 0, sizeof *b);
    b->Bd = p->d;
    switch (p->algo) {
    case FL_ALGO_FLASH1: {
        /* (B1) the paper: Bc = ceil(M/4d), Br = min(ceil(M/4d), d) */
        int64_t d4; /* 4d > M (so ceil(M/4d) = 1) when 4d does not fit in 64 bits */
        b->paper_Bc = fl_mul_ok(4, p->d, &d4) ? fl_cdiv(p->M, d4) : 1;
        b->paper_Br = fl_min64(b->paper_Bc, p->d);
        b->paper_footprint = fl_footprint(FL_ALGO_FLASH1, p->d, b->paper_Br, b->paper_Bc, p->d);
        /* shrink to the largest Bc <= min(paper Bc, N) whose buffers fit, same shape */
        b->Bc = largest(fl_min64(b->paper_Bc, p->N), ok_flash1, p);
        b->Br = flash1_br(b->Bc, p->d, p->N);
        break;
    }
    case FL_ALGO_FLASH2: /* (B2) square blocks, the largest that fit, at most N */
        b->Br = b->Bc = largest(p->N, ok_flash2, p);
        break;
    case FL_ALGO_STANDARD: {
        /* (B0) panels (Bd = d) when they give tiles at least as large as cubes of side
         * t = floor(sqrt(M/3)); else cubes (Br = Bc = Bd = t) */
        int64_t t = (int64_t)floor(sqrt((double)p->M / 3.0));
        const int64_t third = p->M / 3; /* 3t^2 <= M  <=>  t <= floor(M/3) / t: no overflow */
        while (t + 1 <= third / (t + 1)) t++;
        while (t > 0 && t > third / t) t--;
        int64_t panel = largest(fl_max64(p->N, t), ok_panel, p);
        if (panel >= t && panel > 0) {
            b->Br = b->Bc = fl_min64(panel, p->N);
            b->Bd = p->d;
        } else {
            b->Br = b->Bc = fl_min64(t, p->N);
            b->Bd = fl_min64(t, p->d);
        }
        break;
    }
    default: return fl_fail(FL_EINVAL, "--algo: unknown schedule");
    }
    if (b->Br < 1 || b->Bc < 1 || b->Bd < 1) return too_small(p);

    if (p->Br || p->Bc) {
        b->overridden = 1;
        if (p->Br) b->Br = p->Br;
        if (p->Bc) b->Bc = p->Bc;
        if (p->algo == FL_ALGO_STANDARD) b->Bd = standard_bd(p, b->Br, b->Bc);
        if (b->Bd < 1 || !fits(p->algo, p->d, b->Br, b->Bc, b->Bd, p->M)) {
            char nb[48];
            int64_t need = fl_footprint(p->algo, p->d, b->Br, b->Bc, p->algo == FL_ALGO_STANDARD ? 1 : p->d);
            return fl_fail(FL_EINVAL,
                           "--Br/--Bc: %s blocks Br = %lld, Bc = %lld need %s elements of SRAM "
                           "(docs/model.md eq. %s), more than M = %lld",
                           fl_algo_name(p->algo), (long long)b->Br, (long long)b->Bc,
                           need_text(need, nb, sizeof nb), p->algo == FL_ALGO_STANDARD ? "F0" :
                           p->algo == FL_ALGO_FLASH1 ? "F1" : "F2", (long long)p->M);
        }
    }
    b->footprint = fl_footprint(p->algo, p->d, b->Br, b->Bc, b->Bd);
    return FL_OK;
}

static fl_status overflow(const fl_problem *p)
{
    return fl_fail(FL_EOVERFLOW,
                   "--N/--d: counts for N = %lld, d = %lld would overflow 64-bit arithmetic",
                   (long long)p->N, (long long)p->d);
}

fl_status fl_closed_form(const fl_problem *p, const fl_blocks *b, fl_counts *out)
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
