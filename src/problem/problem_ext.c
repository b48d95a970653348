/* problem_ext.c: rules, blocks and closed forms of decode, blocksparse, memeff and softmax
 * (see problem_ext.h).  Equation labels refer to docs/model.md. */
#include <flashlab/problem_ext.h>
#include "base/checked.h"

#include <math.h>
#include <stdlib.h>

#include <flashlab/blocksparse_mask.h>
#include <flashlab/masks.h>
#include <flashlab/rng.h>

int fl_algo_is_ext(fl_algo a)
{
    return a == FL_ALGO_DECODE || a == FL_ALGO_BLOCKSPARSE || a == FL_ALGO_MEMEFF ||
           a == FL_ALGO_SOFTMAX_SAFE || a == FL_ALGO_SOFTMAX_ONLINE;
}

int64_t fl_ext_Nk(const fl_problem *p) { return p->Nk ? p->Nk : p->N; }

/* Logical pages a paged decode uses and the pool it reads from (rule SD). */
static int64_t pages_used(const fl_problem *p) { return fl_cdiv(fl_ext_Nk(p), p->page_size); }
static int64_t pool_of(const fl_problem *p)
{
    return p->pool_pages ? p->pool_pages : 2 * pages_used(p);
}

static fl_status check_decode(const fl_problem *p)
{
    fl_mask mk;
    FL_TRY(fl_mask_init(&mk, p->N, fl_ext_Nk(p), p->causal, p->window_left, p->window_right));
    if (!p->page_size) {
        if (p->pool_pages || p->page_seed || p->block_table_len)
            return fl_fail(FL_EINVAL, "--pool-pages/--page-seed/--block-table: need --page-size "
                                      "(a paged cache)");
        if (p->pad_value != 0.0)
            return fl_fail(FL_EINVAL, "--pad: only a paged cache has padding rows (set --page-size)");
        return FL_OK;
    }
    const int64_t used = pages_used(p), pool = pool_of(p);
    if (pool < used)
        return fl_fail(FL_EINVAL, "--pool-pages: the pool must hold the %lld pages the sequence "
                                  "uses (ceil(Nk / page-size)), got %lld",
                       (long long)used, (long long)pool);
    if (p->block_table_len) {
        if (p->block_table_len != used)
            return fl_fail(FL_EINVAL, "--block-table: needs ceil(Nk / page-size) = %lld entries, "
                                      "got %lld", (long long)used, (long long)p->block_table_len);
        for (int64_t k = 0; k < used; k++) {
            if (p->block_table[k] < 0 || p->block_table[k] >= pool)
                return fl_fail(FL_EINVAL, "--block-table: entry %lld = %lld points outside the "
                                          "cache pool of %lld pages (valid: 0..%lld)",
                               (long long)k, (long long)p->block_table[k], (long long)pool,
                               (long long)pool - 1);
            for (int64_t q = 0; q < k; q++)
                if (p->block_table[q] == p->block_table[k])
                    return fl_fail(FL_EINVAL, "--block-table: entries %lld and %lld both name "
                                              "physical page %lld (a sequence's pages are distinct)",
                                   (long long)q, (long long)k, (long long)p->block_table[k]);
        }
    }
    return FL_OK;
}

fl_status fl_ext_check(const fl_problem *p)
{
    const fl_algo a = p->algo;
    const char *name = fl_algo_name(a);
    if (p->page_size < 0) return fl_fail(FL_EINVAL, "--page-size: must be an integer >= 1 (0 = contiguous cache)");
    if (p->page_size > (INT64_C(1) << 32))
        return fl_fail(FL_EINVAL, "--page-size: at most 2^32 rows per page (got %lld)", (long long)p->page_size);
    if (p->pool_pages < 0) return fl_fail(FL_EINVAL, "--pool-pages: must be an integer >= 1 (0 = twice the pages used)");
    if (p->splits < 1) return fl_fail(FL_EINVAL, "--splits: the number of KV splits must be an integer >= 1");
    if (p->block_table_len < 0 || (p->block_table_len > 0) != (p->block_table != NULL))
        return fl_fail(FL_EINVAL, "--block-table: a table needs its entries and their number");
    if (!(p->density > 0.0 && p->density <= 1.0))
        return fl_fail(FL_EINVAL, "--density: the fraction s of kept blocks must lie in (0, 1]");
    if (a != FL_ALGO_DECODE && (p->page_size || p->pool_pages || p->page_seed ||
                                p->block_table_len || p->splits != 1 || p->pad_value != 0.0))
        return fl_fail(FL_EINVAL, "--page-size/--pool-pages/--page-seed/--block-table/--splits/--pad: "
                                  "only the decode schedule reads a KV cache (got --algo %s)", name);
    if (a != FL_ALGO_BLOCKSPARSE && (p->density != 1.0 || p->mask_seed != 1))
        return fl_fail(FL_EINVAL, "--density/--mask-seed: only the blocksparse schedule has a "
                                  "block mask (got --algo %s)", name);
    if (!fl_algo_is_ext(a)) return FL_OK;

    /* the shared variant fields each ext schedule accepts */
    if (p->batch != 1 || p->heads != 1 || (p->kv_heads != 0 && p->kv_heads != 1))
        return fl_fail(FL_EINVAL, "--batch/--heads/--kv-heads: %s runs one head", name);
    if (p->pass != FL_PASS_FWD) return fl_fail(FL_EINVAL, "--pass: %s is forward only", name);
    if (p->cu_seqlens_q || p->cu_seqlens_k)
        return fl_fail(FL_EINVAL, "--cu-seqlens-q/--cu-seqlens-k: %s runs one sequence", name);
    if (a == FL_ALGO_DECODE) return check_decode(p);
    if (p->causal != FL_CAUSAL_NONE || p->window_left != -1 || p->window_right != -1)
        return fl_fail(FL_EINVAL, "--causal/--window: %s takes no causal or window mask", name);
    if ((a == FL_ALGO_BLOCKSPARSE || a == FL_ALGO_MEMEFF) && p->Nk && p->Nk != p->N)
        return fl_fail(FL_EINVAL, "--Nk: %s attends N queries to N keys (Nk = N)", name);
    return FL_OK;
}


/* (F2) 2 Br d + 2 Bc d + Br Bc + 2 Br, -1 on overflow */
static int64_t f2(int64_t d, int64_t Br, int64_t Bc) { return fl_footprint(FL_ALGO_FLASH2, d, Br, Bc, d); }

/* (FD) decode: F2 + 1 (a block-table entry, paged) + Br d + 2 Br (a split's O, m, l, when the
 * problem asks for more than one split) */
static int64_t fd(const fl_problem *p, int64_t Br, int64_t Bc)
{
    ck c = {0};
    int64_t f = f2(p->d, Br, Bc);
    if (f < 0) return -1;
    f = add(&c, f, p->page_size ? 1 : 0);
    if (p->splits > 1) f = add(&c, f, add(&c, mul(&c, Br, p->d), mul(&c, 2, Br)));
    return c.ovf ? -1 : f;
}
/* (FM) memeff: F2 + Br d + 2 Br -- the key loop's buffers and the combination's O_i, g_i, l_i */
static int64_t fm(const fl_problem *p, int64_t Br, int64_t Bc)
{
    ck c = {0};
    const int64_t f = f2(p->d, Br, Bc), g = add(&c, mul(&c, Br, p->d), mul(&c, 2, Br));
    const int64_t r = add(&c, f, g);
    return (f < 0 || c.ovf) ? -1 : r;
}
/* (FX) softmax: a tile Br x Bc and m, l per row */
static int64_t fx(int64_t Br, int64_t Bc)
{
    ck c = {0};
    const int64_t f = add(&c, mul(&c, Br, Bc), mul(&c, 2, Br));
    return c.ovf ? -1 : f;
}

/* Largest B in [1, hi] with fp(B) in [0, M] (fp nondecreasing), 0 if none. */
static int64_t largest(int64_t hi, int64_t M, int64_t (*fp)(const fl_problem *, int64_t, int64_t),
                       const fl_problem *p, int64_t other, int vary_bc)
{
    int64_t lo = 0;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo + 1) / 2;
        const int64_t f = vary_bc ? fp(p, other, mid) : fp(p, mid, other);
        if (f >= 0 && f <= M) lo = mid; else hi = mid - 1;
    }
    return lo;
}

/* flash2's rule B2 for an N-query, head dimension d problem (blocks Br = Bc). */
static fl_status b2(const fl_problem *p, int64_t N, fl_blocks *b)
{
    fl_problem q = fl_problem_default();
    q.algo = FL_ALGO_FLASH2;
    q.N = N;
    q.d = p->d;
    q.M = p->M;
    q.Br = p->Br;
    q.Bc = p->Bc;
    q.elem_bytes = p->elem_bytes;
    q.max_events = p->max_events;
    return fl_blocks_choose(&q, b);
}

static fl_status blocks_decode(const fl_problem *p, fl_blocks *b)
{
    const int64_t Nq = p->N, Nk = fl_ext_Nk(p), P = p->page_size;
    const int64_t need = fd(p, 1, 1);
    if (need < 0 || need > p->M)
        return fl_fail(FL_ECAPACITY, "--M: decode needs at least %lld elements of SRAM for its "
                                     "smallest tiles (Br = Bc = 1, d = %lld, eq. FD); M = %lld is too small",
                       (long long)need, (long long)p->d, (long long)p->M);
    /* (BD) Br: flash2's square rule capped at Nq (all queries in one block when they fit),
     * then the largest Bc <= Nk (paged: a divisor of P, so no tile straddles a page) that fits */
    int64_t Br = p->Br;
    if (!Br) {
        int64_t lo = 1, hi = Nq; /* largest B <= Nq with FD(B, B) <= M; FD(1, 1) <= M above */
        while (lo < hi) {
            const int64_t mid = lo + (hi - lo + 1) / 2, f = fd(p, mid, mid);
            if (f >= 0 && f <= p->M) lo = mid; else hi = mid - 1;
        }
        Br = lo;
    }
    int64_t Bc = p->Bc;
    if (!Bc) {
        Bc = largest(P ? P : Nk, p->M, fd, p, Br, 1); /* 0 when not even Bc = 1 fits */
        if (P && Bc >= 1 && P % Bc) { /* the largest divisor of P that is <= Bc: O(sqrt P) */
            int64_t best = 1;
            for (int64_t k = 1; k <= P / k; k++)
                if (P % k == 0) {
                    if (k <= Bc) best = fl_max64(best, k);
                    if (P / k <= Bc) best = fl_max64(best, P / k);
                }
            Bc = best;
        }
    }
    b->Br = Br;
    b->Bc = Bc;
    b->Bd = p->d;
    b->overridden = p->Br || p->Bc;
    b->footprint = Bc >= 1 ? fd(p, Br, Bc) : -1;
    if (P && Bc >= 1 && P % Bc)
        return fl_fail(FL_EINVAL, "--Bc: with --page-size %lld the key block must divide the page "
                                  "size (a tile never straddles a page), got %lld",
                       (long long)P, (long long)Bc);
    if (Bc < 1) { /* no key block fits beside the query block (fd = -1: beyond 64 bits) */
        const int64_t need1 = fd(p, Br, 1);
        return fl_fail(FL_EINVAL, "--Br: decode's query block Br = %lld needs %s%lld elements of SRAM even "
                                  "with Bc = 1 (docs/model.md eq. FD), more than M = %lld",
                       (long long)Br, need1 < 0 ? "more than " : "", (long long)(need1 < 0 ? INT64_MAX : need1),
                       (long long)p->M);
    }
    if (b->footprint < 0 || b->footprint > p->M)
        return fl_fail(FL_EINVAL, "--Br/--Bc: decode blocks Br = %lld, Bc = %lld need %lld elements "
                                  "of SRAM (docs/model.md eq. FD), more than M = %lld",
                       (long long)Br, (long long)Bc, (long long)b->footprint, (long long)p->M);
    return FL_OK;
}

static int64_t fx_p(const fl_problem *p, int64_t Br, int64_t Bc) { (void)p; return fx(Br, Bc); }

static fl_status blocks_softmax(const fl_problem *p, fl_blocks *b)
{
    const int64_t N = p->N, Nk = fl_ext_Nk(p);
    if (p->M < 3)
        return fl_fail(FL_ECAPACITY, "--M: softmax needs at least 3 elements of SRAM (one score, "
                                     "m and l, eq. FX); M = %lld is too small", (long long)p->M);
    /* (BX) Bc: the whole row when it fits (M - 2), then as many rows as fit */
    int64_t Bc = p->Bc ? p->Bc : p->Br ? fl_min64(Nk, p->M / p->Br - 2) : fl_min64(Nk, p->M - 2);
    int64_t Br = p->Br ? p->Br : (Bc >= 1 ? largest(N, p->M, fx_p, p, Bc, 0) : 0);
    b->Br = Br;
    b->Bc = Bc;
    b->Bd = p->d;
    b->overridden = p->Br || p->Bc;
    b->footprint = (Br >= 1 && Bc >= 1) ? fx(Br, Bc) : -1;
    if (b->footprint < 0 || b->footprint > p->M)
        return fl_fail(FL_EINVAL, "--Br/--Bc: softmax tiles Br = %lld, Bc = %lld need Br*Bc + 2*Br "
                                  "elements of SRAM (docs/model.md eq. FX), more than M = %lld",
                       (long long)Br, (long long)Bc, (long long)p->M);
    return FL_OK;
}

fl_status fl_ext_blocks(const fl_problem *p, fl_blocks *b)
{
    switch (p->algo) {
    case FL_ALGO_DECODE: return blocks_decode(p, b);
    case FL_ALGO_SOFTMAX_SAFE:
    case FL_ALGO_SOFTMAX_ONLINE: return blocks_softmax(p, b);
    case FL_ALGO_BLOCKSPARSE: return b2(p, p->N, b); /* (BS) = B2: the mask is over flash2's tiles */
    case FL_ALGO_MEMEFF: {
        /* (BM) chunks Br x Bc: the largest square B <= N with FM(B, B) <= M, unless given */
        const int64_t need = fm(p, 1, 1);
        if (need < 0 || need > p->M)
            return fl_fail(FL_ECAPACITY, "--M: memeff needs at least %lld elements of SRAM for its "
                                         "smallest chunks (Br = Bc = 1, d = %lld, eq. FM); M = %lld is too small",
                           (long long)need, (long long)p->d, (long long)p->M);
        int64_t lo = 1, hi = p->N;
        while (lo < hi) {
            const int64_t mid = lo + (hi - lo + 1) / 2, f = fm(p, mid, mid);
            if (f >= 0 && f <= p->M) lo = mid; else hi = mid - 1;
        }
        b->Br = p->Br ? p->Br : lo;
        b->Bc = p->Bc ? p->Bc : lo;
        b->Bd = p->d;
        b->overridden = p->Br || p->Bc;
        b->footprint = fm(p, b->Br, b->Bc);
        if (b->footprint < 0 || b->footprint > p->M)
            return fl_fail(FL_EINVAL, "--Br/--Bc: memeff chunks Br = %lld, Bc = %lld need %lld "
                                      "elements of SRAM (docs/model.md eq. FM), more than M = %lld",
                           (long long)b->Br, (long long)b->Bc, (long long)b->footprint, (long long)p->M);
        return FL_OK;
    }
    default: return fl_fail(FL_EINVAL, "--algo: not a schedule of problem_ext");
    }
}

/* ---- decode geometry (rule SD) ---- */
void fl_decode_geometry(const fl_problem *p, const fl_blocks *b, fl_decode_geom *g)
{
    g->Nq = p->N;
    g->Nk = fl_ext_Nk(p);
    g->d = p->d;
    g->Br = b->Br;
    g->Bc = b->Bc;
    g->Tr = fl_cdiv(g->Nq, g->Br);
    g->Tc = fl_cdiv(g->Nk, g->Bc);
    g->paged = p->page_size > 0;
    g->P = p->page_size;
    g->pages = g->paged ? pages_used(p) : 0;
    g->pool = g->paged ? pool_of(p) : 0;
    /* splits: ceil(Nk / splits) keys each, rounded up to the unit U (a page, or a key tile) */
    const int64_t U = g->paged ? g->P : g->Bc, units = fl_cdiv(g->Nk, U);
    const int64_t per = fl_cdiv(units, fl_min64(p->splits, units));
    g->Ls = per * U;
    g->S = fl_cdiv(units, per);
}

/* The slot of index i in the sparse permutation's hash table (its own, or the empty one where
 * it goes). */
static int64_t perm_slot(const int64_t *key, int64_t cap, int64_t i)
{
    int64_t h = (int64_t)(((uint64_t)i * UINT64_C(0x9E3779B97F4A7C15)) % (uint64_t)cap);
    while (key[h] >= 0 && key[h] != i) h = (h + 1) % cap;
    return h;
}

fl_status fl_decode_block_table(const fl_problem *p, const fl_decode_geom *g, int64_t *table)
{
    if (p->block_table) {
        for (int64_t k = 0; k < g->pages; k++) table[k] = p->block_table[k];
        return FL_OK;
    }
    if (!p->page_seed) {
        for (int64_t k = 0; k < g->pages; k++) table[k] = k;
        return FL_OK;
    }
    /* a random placement: the first `pages` entries of a Fisher-Yates shuffle of the pool.  The
     * shuffle is sparse: perm[i] = i except where a swap wrote it, and only those (at most
     * 2 * pages) are stored, so a pool of 10^12 pages costs no more than the pages used. */
    const int64_t cap = 4 * g->pages + 4; /* open addressing, load <= 1/2 */
    int64_t *key = malloc((size_t)cap * sizeof *key), *val = malloc((size_t)cap * sizeof *val);
    if (!key || !val) {
        free(key);
        free(val);
        return fl_fail(FL_ENOMEM, "out of memory for a block table of %lld pages", (long long)g->pages);
    }
    for (int64_t i = 0; i < cap; i++) key[i] = -1;
    uint64_t st = p->page_seed;
    for (int64_t k = 0; k < g->pages; k++) {
        const int64_t r = k + (int64_t)(fl_rng_next(&st) % (uint64_t)(g->pool - k));
        const int64_t sk = perm_slot(key, cap, k), sr = perm_slot(key, cap, r);
        const int64_t vk = key[sk] < 0 ? k : val[sk], vr = key[sr] < 0 ? r : val[sr];
        key[sk] = k, val[sk] = vr; /* swap perm[k] and perm[r] */
        const int64_t sr2 = perm_slot(key, cap, r); /* (r may equal k) */
        key[sr2] = r, val[sr2] = r == k ? vr : vk;
        table[k] = vr;
    }
    free(key);
    free(val);
    return FL_OK;
}

void fl_decode_tiles(const fl_problem *p, const fl_decode_geom *g, int64_t r0, int64_t br,
                     int64_t *t0, int64_t *t1)
{
    fl_mask mk;
    fl_mask_init(&mk, g->Nq, g->Nk, p->causal, p->window_left, p->window_right); /* checked */
    fl_mask_block_range(&mk, r0, br, g->Bc, t0, t1);
}

void fl_decode_split_tiles(const fl_decode_geom *g, int64_t t0, int64_t t1, int64_t s,
                           int64_t *s0, int64_t *s1)
{
    const int64_t per = g->Ls / g->Bc; /* tiles per split (Ls is a multiple of Bc) */
    *s0 = fl_max64(t0, s * per);
    *s1 = fl_min64(t1, (s + 1) * per);
}

/* (CD) decode, summed over row blocks and splits (docs/model.md §Decode). */
static fl_status closed_decode(const fl_problem *p, const fl_blocks *b, fl_counts *r)
{
    ck c = {0};
    fl_decode_geom g;
    fl_decode_geometry(p, b, &g);
    const int64_t d = g.d;
    int64_t rd = 0, wr = 0, ev = 0;
    int64_t work;
    if (!fl_mul_ok(g.Tr, g.S, &work) || work > (INT64_C(1) << 32))
        return fl_fail(FL_EINVAL, "--N/--splits: decode's closed form sums over %lld query blocks x %lld "
                                  "splits, more than 2^32 terms (raise M or lower N)", (long long)g.Tr, (long long)g.S);
    for (int64_t r0 = 0; r0 < g.Nq && !c.ovf; r0 += g.Br) {
        const int64_t br = fl_min64(g.Br, g.Nq - r0);
        int64_t t0, t1, A = 0;
        fl_decode_tiles(p, &g, r0, br, &t0, &t1);
        for (int64_t s = 0; s < g.S; s++) {
            int64_t s0, s1;
            fl_decode_split_tiles(&g, t0, t1, s, &s0, &s1);
            if (s0 >= s1) continue;
            A++;
            /* K, V rows: whole tiles when paged, else clipped at Nk */
            const int64_t rows = g.paged ? mul(&c, s1 - s0, g.Bc)
                                         : fl_min64(s1 * g.Bc, g.Nk) - s0 * g.Bc;
            const int64_t pg = g.paged ? (s1 - 1) * g.Bc / g.P - s0 * g.Bc / g.P + 1 : 0;
            rd = add(&c, rd, add(&c, mul(&c, br, d), add(&c, mul(&c, 2, mul(&c, rows, d)), pg)));
            ev = add(&c, ev, add(&c, 1, add(&c, mul(&c, 2, s1 - s0), pg)));
        }
        if (g.S > 1 && A > 0) { /* partials (O_s, m_s, l_s) stored, then loaded to combine */
            const int64_t part = mul(&c, mul(&c, A, br), d + 2);
            rd = add(&c, rd, part);
            wr = add(&c, wr, part);
            ev = add(&c, ev, mul(&c, 6, A));
        }
        wr = add(&c, wr, mul(&c, br, d + 1)); /* O_i, L_i */
        ev = add(&c, ev, 2);
    }
    r->reads = rd;
    r->writes = wr;
    r->events = ev;
    r->sram_peak = f2(d, g.Br, g.Bc) + (g.paged ? 1 : 0) +
                   (g.S > 1 ? g.Br * d + 2 * g.Br : 0);
    return c.ovf ? FL_EOVERFLOW : FL_OK;
}

/* (CS) block-sparse: reads = N d + 2 d sum over kept blocks of their key rows. */
static fl_status closed_blocksparse(const fl_problem *p, const fl_blocks *b, fl_counts *r)
{
    ck c = {0};
    const int64_t N = p->N, d = p->d, Tr = fl_cdiv(N, b->Br), Tc = fl_cdiv(N, b->Bc);
    const fl_bsmask mk = fl_bsmask_make(N, N, b->Br, b->Bc, p->density, p->mask_seed);
    int64_t kept = 0, rows = 0, blocks;
    /* the dense count (s = 1, eq. (C2)) bounds this one: refuse sizes where it overflows, and
     * masks too large to evaluate block by block */
    add(&c, mul(&c, N, d), mul(&c, 2, mul(&c, mul(&c, N, d), Tr)));
    if (c.ovf) return FL_EOVERFLOW;
    if (!fl_mul_ok(Tr, Tc, &blocks) || blocks > (INT64_C(1) << 32))
        return fl_fail(FL_EINVAL, "--N/--M: blocksparse evaluates its mask block by block; %lld x %lld "
                                  "blocks is more than 2^32 (raise M or lower N)", (long long)Tr, (long long)Tc);
    for (int64_t i = 0; i < Tr; i++)
        for (int64_t j = 0; j < Tc; j++)
            if (fl_bsmask_block(&mk, i, j)) {
                kept++;
                rows += fl_min64(b->Bc, N - j * b->Bc);
            }
    r->reads = add(&c, mul(&c, N, d), mul(&c, 2 * d, rows));
    r->writes = add(&c, mul(&c, N, d), N);
    r->events = add(&c, mul(&c, 3, Tr), mul(&c, 2, kept));
    r->sram_peak = b->footprint;
    return c.ovf ? FL_EOVERFLOW : FL_OK;
}

fl_status fl_ext_closed_form(const fl_problem *p, const fl_blocks *b, fl_counts *out)
{
    ck c = {0};
    fl_counts r = {0};
    const int64_t N = p->N, d = p->d, Nk = fl_ext_Nk(p);
    const int64_t Tr = fl_cdiv(N, b->Br), Tc = fl_cdiv(Nk, b->Bc);
    const int64_t Nd = mul(&c, N, d);
    fl_status s = FL_OK;
    switch (p->algo) {
    case FL_ALGO_DECODE: s = closed_decode(p, b, &r); break;
    case FL_ALGO_BLOCKSPARSE: s = closed_blocksparse(p, b, &r); break;
    case FL_ALGO_MEMEFF:
        /* (CM) reads = N d + 2 N d Tr + N Tc (d + 3); writes = N Tc (d + 2) + N d;
         * events = Tr (2 + 9 Tc) */
        r.reads = add(&c, add(&c, Nd, mul(&c, mul(&c, 2, Nd), Tr)), mul(&c, mul(&c, N, Tc), d + 3));
        r.writes = add(&c, mul(&c, mul(&c, N, Tc), d + 2), Nd);
        r.events = mul(&c, Tr, add(&c, 2, mul(&c, 9, Tc)));
        r.sram_peak = b->footprint;
        break;
    case FL_ALGO_SOFTMAX_SAFE:
    case FL_ALGO_SOFTMAX_ONLINE: {
        /* (CX) reads = 3 N Nk (safe) or 2 N Nk (online); writes = N Nk;
         * events = 4 Tr Tc (safe) or 3 Tr Tc (online) */
        const int online = p->algo == FL_ALGO_SOFTMAX_ONLINE;
        const int64_t NN = mul(&c, N, Nk);
        r.reads = mul(&c, online ? 2 : 3, NN);
        r.writes = NN;
        r.events = mul(&c, mul(&c, online ? 3 : 4, Tr), Tc);
        r.sram_peak = b->footprint;
        break;
    }
    default: return fl_fail(FL_EINVAL, "--algo: not a schedule of problem_ext");
    }
    if (s && s != FL_EOVERFLOW) return s;
    r.total = add(&c, r.reads, r.writes);
    if (s || c.ovf)
        return fl_fail(FL_EOVERFLOW, "--N/--Nk/--d: counts for N = %lld, Nk = %lld, d = %lld would "
                                     "overflow 64-bit arithmetic", (long long)N, (long long)Nk, (long long)d);
    *out = r;
    return FL_OK;
}

void fl_ext_explain(FILE *out, const fl_problem *p, const fl_blocks *b)
{
    switch (p->algo) {
    case FL_ALGO_DECODE: {
        fl_decode_geom g;
        fl_decode_geometry(p, b, &g);
        fprintf(out, "  rule BD: Br = the largest B <= Nq with FD(B, B) <= M; Bc = the largest <= Nk%s with\n"
                     "    FD = F2 + [paged] + [splits > 1](Br d + 2 Br) <= M (docs/model.md eq. FD)\n",
                g.paged ? " dividing the page size" : "");
        fprintf(out, "  rule SD: Nq = %lld queries over Nk = %lld keys; %lld split%s of %lld keys (asked %lld)",
                (long long)g.Nq, (long long)g.Nk, (long long)g.S, g.S == 1 ? "" : "s", (long long)g.Ls,
                (long long)p->splits);
        if (g.paged)
            fprintf(out, "; pages of %lld: %lld used of a pool of %lld, tiles loaded whole (%lld padding rows)",
                    (long long)g.P, (long long)g.pages, (long long)g.pool, (long long)(g.Tc * g.Bc - g.Nk));
        fputc('\n', out);
        break;
    }
    case FL_ALGO_BLOCKSPARSE: {
        const fl_bsmask mk = fl_bsmask_make(p->N, p->N, b->Br, b->Bc, p->density, p->mask_seed);
        int64_t kept = 0;
        for (int64_t i = 0; i < mk.Tr; i++)
            for (int64_t j = 0; j < mk.Tc; j++) kept += fl_bsmask_block(&mk, i, j);
        fprintf(out, "  rule BS = B2 (flash2's square blocks); mask KS: each block kept with probability s = %g\n"
                     "    (seed %llu): %lld of %lld blocks kept (%.4f)\n", p->density,
                (unsigned long long)p->mask_seed, (long long)kept, (long long)(mk.Tr * mk.Tc),
                (double)kept / (double)(mk.Tr * mk.Tc));
        break;
    }
    case FL_ALGO_MEMEFF:
        fprintf(out, "  rule BM: query chunks Br and key chunks Bc (Rabe-Staats' query_chunk_size,\n"
                     "    key_chunk_size): the largest square with F2 + Br d + 2 Br <= M (eq. FM),\n"
                     "    unless --Br/--Bc\n");
        break;
    default:
        fprintf(out, "  rule BX: Bc = min(Nk, M - 2), Br = the most rows with Br Bc + 2 Br <= M (eq. FX);\n"
                     "    %s: %d reads + 1 write per element (eq. CX)\n",
                fl_algo_name(p->algo), p->algo == FL_ALGO_SOFTMAX_SAFE ? 3 : 2);
        break;
    }
}
