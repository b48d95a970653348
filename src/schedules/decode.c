/* decode.c: decode with a KV cache -- few queries over a long cache -- as flash-decoding
 * (split-KV, Dao et al. 2023) on the machine, reading a contiguous or a paged cache.
 *
 * Keys [0, Nk) are cut into S splits of Ls keys (a multiple of the page, or of the key tile);
 * tiles of Bc keys never straddle a page (Bc divides P), rule SD.  For each query block i:
 *
 *   for each split s holding kept keys of block i:     (masks.h: the tiles [t0, t1) it keeps)
 *     load Q_i;  O = 0, l = 0, m = -inf
 *     for each kept tile t of the split:
 *       paged: on entering a page, load its block-table entry        -> 1 read
 *       load K_t, V_t (paged: from physical page table[t Bc / P], a whole tile, even rows
 *                      past Nk in the last page -- as a TMA load does)  -> Bc (d + d_v) reads
 *       S = Q_i K_t^T / sqrt d; masked scores (keep rule, keys >= Nk) = -inf
 *       m' = max(m, rowmax S); P = exp(S - m'); l = e^(m - m') l + rowsum P
 *       O = diag(e^(m - m')) O + P V_t                    (a dense product, as an MMA does)
 *     S = 1: write O / l and L = m + log l.   S > 1: write the partial (O / l, m, l) of split s
 *   S > 1: load every partial of block i and merge exactly:
 *     m = max_s m_s;  l = sum_s e^(m_s - m) l_s;  O = sum_s e^(m_s - m) l_s O_s / l;  L = m + log l
 *
 * The dense P V is why padding must be finite: a masked probability is 0, and 0 * NaN = NaN.
 * In compute mode the schedule checks every padding row it loads and refuses a non-finite one,
 * naming the page and the row (the nan-padding example).  Whole pages the sequence does not use
 * are never loaded, so they may hold anything.
 *
 * Caller's tensors: Q (Nq x d), O (Nq x d_v), K (Nk x d) and V (Nk x d_v), or the pools of
 * pool * P rows when paged, and, paged, BT (pages x 1, int32).  The schedule adds L and, S > 1, the partials.
 * SRAM: eq. (FD).  Counts: eq. (CD).
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <stdio.h>

#include <flashlab/decode.h>
#include <flashlab/masks.h>
#include <flashlab/ops.h>
#include <flashlab/rng.h>

#include "rules.h"
#include "schedules.h"

/* The number of keys: p->Nk, or p->N when Nk is 0. */
static int64_t nk_of(const fl_problem *p) { return p->Nk ? p->Nk : p->N; }

static const fl_kv_cache *kv(const fl_problem *p) { return fl_kv_cache_of(p); }

fl_kv_cache fl_kv_cache_default(void)
{
    const fl_kv_cache kv = {FL_KV_CACHE_FIELDS(FL_FIELD_DEFAULT)};
    return kv;
}

const fl_kv_cache *fl_kv_cache_of(const fl_problem *p)
{
    static const fl_kv_cache none = {FL_KV_CACHE_FIELDS(FL_FIELD_DEFAULT)};
    return p->kv_cache ? p->kv_cache : &none;
}

const fl_field *fl_kv_cache_fields(int *n)
{
#define FL_ENTRY(kind, type, name, dflt, what) {#name, offsetof(fl_kv_cache, name), sizeof(type), kind},
    static const fl_field f[] = {FL_KV_CACHE_FIELDS(FL_ENTRY)};
#undef FL_ENTRY
    *n = (int)(sizeof f / sizeof f[0]);
    return f;
}

fl_status fl_kv_cache_check(const fl_kv_cache *c)
{
    if (c->page_size < 0) return fl_fail(FL_EINVAL, "{page_size}: must be an integer >= 1 (0 = contiguous cache)");
    if (c->page_size > (INT64_C(1) << 32))
        return fl_fail(FL_EINVAL, "{page_size}: at most 2^32 rows per page (got %lld)", (long long)c->page_size);
    if (c->pool_pages < 0) return fl_fail(FL_EINVAL, "{pool_pages}: must be an integer >= 1 (0 = twice the pages used)");
    if (c->splits < 1) return fl_fail(FL_EINVAL, "{splits}: the number of KV splits must be an integer >= 1");
    if (c->block_table_len < 0 || (c->block_table_len > 0) != (c->block_table != NULL))
        return fl_fail(FL_EINVAL, "{block_table}: a table needs its entries and their number");
    return FL_OK;
}


/* Refuses a padding row (key position >= Nk) of the tile that is not finite. */
static fl_status check_padding(const fl_decode_geom *g, const fl_buf *K, const fl_buf *V,
                               int64_t c0, int64_t rows, const int64_t *table)
{
    for (int64_t r = fl_max64(0, g->Nk - c0); r < rows; r++)
        for (int64_t c = 0; c < fl_max64(g->d, g->dv); c++) {
            const char *which = c < g->d && !isfinite(K->x[r * g->d + c])     ? "K"
                                : c < g->dv && !isfinite(V->x[r * g->dv + c]) ? "V"
                                                                              : NULL;
            if (!which) continue;
            const int64_t pos = c0 + r, lp = pos / g->P;
            return fl_fail(FL_EINVAL,
                           "decode: %s row %lld of physical page %lld (logical page %lld, key "
                           "position %lld >= Nk = %lld: padding of the last page) is not finite; "
                           "its score is masked, but probability 0 times a non-finite value is NaN: "
                           "keep the loaded padding rows finite ({pad})",
                           which, (long long)(pos % g->P), (long long)table[lp], (long long)lp,
                           (long long)pos, (long long)g->Nk);
        }
    return FL_OK;
}

/* One split's key loop for query block [r0, r0 + br): tiles [s0, s1). */
static fl_status split_loop(fl_machine *m, const fl_problem *p, const fl_decode_geom *g,
                            fl_qkvo io, int bt_t, const int64_t *table, const fl_mask *mk,
                            fl_buf **B, int64_t r0, int64_t br, int64_t s0, int64_t s1)
{
    fl_buf *Qi = B[0], *Oi = B[1], *Kj = B[2], *Vj = B[3], *Sij = B[4], *mi = B[5], *li = B[6],
           *bt = B[7];
    const int64_t d = g->d, dv = g->dv, Bc = g->Bc;
    const double scale = 1.0 / sqrt((double)d);
    const int cmp = fl_computes(m);
    int64_t page = -1;
    FL_TRY(fl_load(m, Qi, io.Q, r0, 0, br, d));
    fl_op_fill(Oi, br, dv, 0.0);
    fl_op_fill(li, br, 1, 0.0);
    fl_op_fill(mi, br, 1, -INFINITY);
    for (int64_t t = s0; t < s1; t++) {
        const int64_t c0 = t * Bc, valid = fl_min64(Bc, g->Nk - c0);
        int64_t row = c0, rows = valid;
        if (g->paged) {
            if (c0 / g->P != page) { /* entering a page: its block-table entry */
                page = c0 / g->P;
                FL_TRY(fl_load(m, bt, bt_t, page, 0, 1, 1));
            }
            const int64_t phys = cmp ? (int64_t)bt->x[0] : page; /* count mode: no table (above) */
            row = phys * g->P + c0 % g->P;
            rows = Bc; /* a whole tile, padding rows of the last page included */
        }
        FL_TRY(fl_load(m, Kj, io.K, row, 0, rows, d));
        FL_TRY(fl_load(m, Vj, io.V, row, 0, rows, dv));
        if (!cmp) continue;
        if (g->paged && rows > valid) FL_TRY(check_padding(g, Kj, Vj, c0, rows, table));
        fl_op_matmul(Sij, Qi, Kj, br, rows, d, 1, scale, 0);
        const fl_tile_kind kind = fl_mask_tile(mk, r0, br, c0, valid);
        for (int64_t r = 0; r < br; r++) {
            double *s = Sij->x + r * Bc, mt = -INFINITY, sum = 0.0;
            for (int64_t j = 0; j < rows; j++) {
                if (j >= valid || (kind != FL_TILE_FULL && !fl_mask_keep(mk, r0 + r, c0 + j)))
                    s[j] = -INFINITY;
                mt = fmax(mt, s[j]);
            }
            const double mold = mi->x[r], mnew = fmax(mold, mt);
            const double a = mnew == -INFINITY ? 1.0 : exp(mold - mnew); /* 0 from an empty state */
            for (int64_t j = 0; j < rows; j++) {
                s[j] = mnew == -INFINITY ? 0.0 : exp(s[j] - mnew);
                sum += s[j];
            }
            li->x[r] = a * li->x[r] + sum;
            mi->x[r] = mnew;
            for (int64_t c = 0; c < dv; c++) Oi->x[r * dv + c] *= a;
        }
        fl_op_matmul(Oi, Sij, Vj, br, dv, rows, 0, 1.0, 1); /* O += P V, dense */
    }
    return FL_OK;
}

/* O = O / l (zeros when l = 0, rule M0) and m := L = m + log l, rows [0, br). */
static void finish(fl_buf *Oi, fl_buf *mi, const fl_buf *li, int64_t br, int64_t d)
{
    for (int64_t r = 0; r < br; r++) {
        fl_osm_finish(li->x[r], Oi->x + r * d, d, Oi->x + r * d);
        mi->x[r] = li->x[r] > 0.0 ? mi->x[r] + log(li->x[r]) : -INFINITY;
    }
}

static fl_status fl_schedule_decode(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io)
{
    fl_decode_geom g;
    fl_mask mk;
    fl_decode_geometry(p, b, &g);
    FL_TRY(fl_mask_init(&mk, g.Nq, g.Nk, p->causal, p->window_left, p->window_right));
    const int64_t d = g.d, dv = g.dv, Br = g.Br, Nq = g.Nq, S = g.S;
    const int cmp = fl_computes(m);
    int L_t, Op_t = -1, mp_t = -1, lp_t = -1, bt_t = -1;
    FL_TRY(fl_tensor_add(m, "L", Nq, 1, 4, &L_t));
    if (S > 1) { /* the partials of every split, fp32: row s * Nq + query */
        FL_TRY(fl_tensor_add(m, "O_split", S * Nq, dv, 4, &Op_t));
        FL_TRY(fl_tensor_add(m, "m_split", S * Nq, 1, 4, &mp_t));
        FL_TRY(fl_tensor_add(m, "l_split", S * Nq, 1, 4, &lp_t));
    }
    int64_t *table = NULL; /* compute mode only: the counts do not depend on where pages lie, so a
                              count-only run reads logical page k from physical page k and holds no
                              table (a cache of 10^15 pages costs nothing to count) */
    if (g.paged) {
        if ((bt_t = fl_tensor_find(m, "BT")) < 0)
            return fl_fail(FL_EINVAL, "decode: a paged run needs the block table tensor BT");
        if (cmp) {
            if (!(table = malloc((size_t)g.pages * sizeof *table)))
                return fl_fail(FL_ENOMEM, "decode: out of memory for the block table");
            fl_status s = fl_decode_block_table(p, &g, table);
            if (s) { free(table); return s; }
        }
    }

    fl_buf *B[8] = {0}, *Os = NULL, *ms = NULL, *ls = NULL;
    fl_status s;
    if ((s = fl_sram_alloc(m, "Q_i", Br, d, &B[0])) || (s = fl_sram_alloc(m, "O_i", Br, dv, &B[1])) ||
        (s = fl_sram_alloc(m, "K_j", g.Bc, d, &B[2])) || (s = fl_sram_alloc(m, "V_j", g.Bc, dv, &B[3])) ||
        (s = fl_sram_alloc(m, "S_ij", Br, g.Bc, &B[4])) || (s = fl_sram_alloc(m, "m_i", Br, 1, &B[5])) ||
        (s = fl_sram_alloc(m, "l_i", Br, 1, &B[6])) ||
        (g.paged && (s = fl_sram_alloc(m, "bt", 1, 1, &B[7]))) ||
        (S > 1 && ((s = fl_sram_alloc(m, "O_s", Br, dv, &Os)) || (s = fl_sram_alloc(m, "m_s", Br, 1, &ms)) ||
                   (s = fl_sram_alloc(m, "l_s", Br, 1, &ls)))))
        goto done;
    fl_buf *Oi = B[1], *mi = B[5], *li = B[6];

    for (int64_t r0 = 0; r0 < Nq; r0 += Br) {
        const int64_t br = fl_min64(Br, Nq - r0);
        int64_t t0, t1, active = 0;
        fl_decode_tiles(p, &g, r0, br, &t0, &t1);
        for (int64_t sp = 0; sp < S; sp++) {
            int64_t s0, s1;
            fl_decode_split_tiles(&g, t0, t1, sp, &s0, &s1);
            if (s0 >= s1) continue;
            active++;
            if ((s = split_loop(m, p, &g, io, bt_t, table, &mk, B, r0, br, s0, s1))) goto done;
            if (S == 1) break;
            if (cmp) /* the partial: O_s = O / l, m_s, l_s (m_s = -inf, l_s = 0: no kept key) */
                for (int64_t r = 0; r < br; r++) fl_osm_finish(li->x[r], Oi->x + r * dv, dv, Oi->x + r * dv);
            if ((s = fl_store(m, Oi, Op_t, sp * Nq + r0, 0, br, dv)) ||
                (s = fl_store(m, mi, mp_t, sp * Nq + r0, 0, br, 1)) ||
                (s = fl_store(m, li, lp_t, sp * Nq + r0, 0, br, 1)))
                goto done;
        }
        if (S > 1 || !active) { /* merge the partials (none: the rows keep no key, O = 0) */
            fl_op_fill(Oi, br, dv, 0.0);
            fl_op_fill(li, br, 1, 0.0);
            fl_op_fill(mi, br, 1, -INFINITY);
        }
        for (int64_t sp = 0; S > 1 && sp < S; sp++) {
            int64_t s0, s1;
            fl_decode_split_tiles(&g, t0, t1, sp, &s0, &s1);
            if (s0 >= s1) continue;
            if ((s = fl_load(m, Os, Op_t, sp * Nq + r0, 0, br, dv)) ||
                (s = fl_load(m, ms, mp_t, sp * Nq + r0, 0, br, 1)) ||
                (s = fl_load(m, ls, lp_t, sp * Nq + r0, 0, br, 1)))
                goto done;
            if (!cmp) continue;
            for (int64_t r = 0; r < br; r++) {
                const double msr = ms->x[r], mold = mi->x[r];
                if (msr == -INFINITY) continue; /* this split kept no key of row r */
                const double mnew = fmax(mold, msr);
                const double a = exp(mold - mnew), w = exp(msr - mnew) * ls->x[r];
                for (int64_t c = 0; c < dv; c++)
                    Oi->x[r * dv + c] = a * Oi->x[r * dv + c] + w * Os->x[r * dv + c];
                li->x[r] = a * li->x[r] + w;
                mi->x[r] = mnew;
            }
        }
        if (cmp) finish(Oi, mi, li, br, dv);
        if ((s = fl_store(m, Oi, io.O, r0, 0, br, dv)) || (s = fl_store(m, mi, L_t, r0, 0, br, 1)))
            goto done;
    }
done:
    for (int k = 0; k < 8; k++) fl_sram_free(m, B[k]);
    fl_sram_free(m, Os);
    fl_sram_free(m, ms);
    fl_sram_free(m, ls);
    free(table);
    return s;
}

/* ---- the descriptor: rules SD, BD, FD, the closed form CD, the cache layout ---- */

/* Logical pages a paged decode uses and the pool it reads from (rule SD). */
static int64_t pages_used(const fl_problem *p) { return fl_cdiv(nk_of(p), kv(p)->page_size); }
static int64_t pool_of(const fl_problem *p)
{
    return kv(p)->pool_pages ? kv(p)->pool_pages : 2 * pages_used(p);
}


static fl_status check(const fl_problem *p)
{
    fl_mask mk;
    int64_t rows;
    FL_TRY(fl_mask_init(&mk, p->N, nk_of(p), p->causal, p->window_left, p->window_right));
    const int64_t dd = fl_max64(p->d, fl_problem_dv(p)); /* the wider of K and V */
    if (!kv(p)->page_size && !fl_mul_ok(nk_of(p), dd, &rows))
        return fl_fail(FL_EINVAL, "{Nk}/{d}: a contiguous cache of %lld keys of d = %lld elements does not fit "
                                  "64-bit counts", (long long)nk_of(p), (long long)p->d);
    if (kv(p)->page_size && (!fl_mul_ok(pool_of(p), kv(p)->page_size, &rows) || !fl_mul_ok(rows, dd, &rows)))
        return fl_fail(FL_EINVAL, "{pool_pages}: a pool of %lld pages of %lld rows of d = %lld elements does not "
                                  "fit 64-bit counts", (long long)pool_of(p), (long long)kv(p)->page_size, (long long)p->d);
    if (!kv(p)->page_size) {
        if (kv(p)->pool_pages || kv(p)->page_seed || kv(p)->block_table_len)
            return fl_fail(FL_EINVAL, "{pool_pages}/{page_seed}/{block_table}: need {page_size} "
                                      "(a paged cache)");
        if (kv(p)->pad_value != 0.0)
            return fl_fail(FL_EINVAL, "{pad}: only a paged cache has padding rows (set {page_size})");
        return FL_OK;
    }
    const int64_t used = pages_used(p), pool = pool_of(p);
    if (pool < used)
        return fl_fail(FL_EINVAL, "{pool_pages}: the pool must hold the %lld pages the sequence "
                                  "uses (ceil(Nk / page-size)), got %lld",
                       (long long)used, (long long)pool);
    if (kv(p)->block_table_len) {
        if (kv(p)->block_table_len != used)
            return fl_fail(FL_EINVAL, "{block_table}: needs ceil(Nk / page-size) = %lld entries, "
                                      "got %lld", (long long)used, (long long)kv(p)->block_table_len);
        for (int64_t k = 0; k < used; k++) {
            if (kv(p)->block_table[k] < 0 || kv(p)->block_table[k] >= pool)
                return fl_fail(FL_EINVAL, "{block_table}: entry %lld = %lld points outside the "
                                          "cache pool of %lld pages (valid: 0..%lld)",
                               (long long)k, (long long)kv(p)->block_table[k], (long long)pool,
                               (long long)pool - 1);
            for (int64_t q = 0; q < k; q++)
                if (kv(p)->block_table[q] == kv(p)->block_table[k])
                    return fl_fail(FL_EINVAL, "{block_table}: entries %lld and %lld both name "
                                              "physical page %lld (a sequence's pages are distinct)",
                                   (long long)q, (long long)k, (long long)kv(p)->block_table[k]);
        }
    }
    return FL_OK;
}


/* (F2) (Br + Bc)(d + d_v) + Br Bc + 2 Br, -1 on overflow */
static int64_t f2(int64_t d, int64_t dv, int64_t Br, int64_t Bc)
{
    return fl_fp_checked2((fl_fp_split)FL_FP2_FLASH2_FWD, 1, Br, Bc, d, dv);
}


/* (FD) decode: F2 + 1 (a block-table entry, paged) + Br d_v + 2 Br (a split's O, m, l, when the
 * problem asks for more than one split) */
static int64_t fd(const fl_problem *p, int64_t Br, int64_t Bc)
{
    ck c = {0};
    int64_t f = f2(p->d, fl_problem_dv(p), Br, Bc);
    if (f < 0) return -1;
    f = add(&c, f, kv(p)->page_size ? 1 : 0);
    if (kv(p)->splits > 1) f = add(&c, f, add(&c, mul(&c, Br, fl_problem_dv(p)), mul(&c, 2, Br)));
    return c.ovf ? -1 : f;
}

static fl_status blocks(const fl_problem *p, int bwd, fl_blocks *b)
{
    (void)bwd;
    const int64_t Nq = p->N, Nk = nk_of(p), P = kv(p)->page_size;
    const int64_t need = fd(p, 1, 1);
    if (need < 0 || need > p->M)
        return fl_fail(FL_ECAPACITY, "{M}: decode needs at least %lld elements of SRAM for its "
                                     "smallest tiles (Br = Bc = 1, d = %lld, eq. FD); M = %lld is too small",
                       (long long)need, (long long)p->d, (long long)p->M);
    /* (BD) Br: flash2's square rule capped at Nq (all queries in one block when they fit),
     * then the largest Bc <= Nk (paged: a divisor of P, so no tile straddles a page) that fits */
    int64_t Br = p->Br;
    if (!Br) Br = fl_largest_fp(Nq, p->M, fd, p, 0, 2); /* >= 1: FD(1, 1) <= M above */
    int64_t Bc = p->Bc;
    if (!Bc) {
        Bc = fl_largest_fp(P ? P : Nk, p->M, fd, p, Br, 1); /* 0 when not even Bc = 1 fits */
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
        return fl_fail(FL_EINVAL, "{Bc}: with {page_size} %lld the key block must divide the page "
                                  "size (a tile never straddles a page), got %lld",
                       (long long)P, (long long)Bc);
    if (Bc < 1) { /* no key block fits beside the query block (fd = -1: beyond 64 bits) */
        const int64_t need1 = fd(p, Br, 1);
        return fl_fail(FL_EINVAL, "{Br}: decode's query block Br = %lld needs %s%lld elements of SRAM even "
                                  "with Bc = 1 (docs/model.md eq. FD), more than M = %lld",
                       (long long)Br, need1 < 0 ? "more than " : "", (long long)(need1 < 0 ? INT64_MAX : need1),
                       (long long)p->M);
    }
    if (b->footprint < 0 || b->footprint > p->M)
        return fl_fail(FL_EINVAL, "{Br}/{Bc}: decode blocks Br = %lld, Bc = %lld need %lld elements "
                                  "of SRAM (docs/model.md eq. FD), more than M = %lld",
                       (long long)Br, (long long)Bc, (long long)b->footprint, (long long)p->M);
    return FL_OK;
}


/* ---- decode geometry (rule SD) ---- */
void fl_decode_geometry(const fl_problem *p, const fl_blocks *b, fl_decode_geom *g)
{
    g->Nq = p->N;
    g->Nk = nk_of(p);
    g->d = p->d;
    g->dv = fl_problem_dv(p);
    g->Br = b->Br;
    g->Bc = b->Bc;
    g->Tr = fl_cdiv(g->Nq, g->Br);
    g->Tc = fl_cdiv(g->Nk, g->Bc);
    g->paged = kv(p)->page_size > 0;
    g->P = kv(p)->page_size;
    g->pages = g->paged ? pages_used(p) : 0;
    g->pool = g->paged ? pool_of(p) : 0;
    /* splits: ceil(Nk / splits) keys each, rounded up to the unit U (a page, or a key tile) */
    const int64_t U = g->paged ? g->P : g->Bc, units = fl_cdiv(g->Nk, U);
    const int64_t per = fl_cdiv(units, fl_min64(kv(p)->splits, units));
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
    if (kv(p)->block_table) {
        for (int64_t k = 0; k < g->pages; k++) table[k] = kv(p)->block_table[k];
        return FL_OK;
    }
    if (!kv(p)->page_seed) {
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
    uint64_t st = kv(p)->page_seed;
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
static fl_status closed_counts(const fl_problem *p, const fl_blocks *b, fl_counts *r)
{
    ck c = {0};
    fl_decode_geom g;
    fl_decode_geometry(p, b, &g);
    const int64_t d = g.d, dv = g.dv;
    int64_t rd = 0, wr = 0, ev = 0;
    int64_t work;
    if (!fl_mul_ok(g.Tr, g.S, &work) || work > (INT64_C(1) << 32))
        return fl_fail(FL_EINVAL, "{N}/{splits}: decode's closed form sums over %lld query blocks x %lld "
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
            rd = add(&c, rd, add(&c, mul(&c, br, d), add(&c, mul(&c, rows, d + dv), pg)));
            ev = add(&c, ev, add(&c, 1, add(&c, mul(&c, 2, s1 - s0), pg)));
        }
        if (g.S > 1 && A > 0) { /* partials (O_s, m_s, l_s) stored, then loaded to combine */
            const int64_t part = mul(&c, mul(&c, A, br), dv + 2);
            rd = add(&c, rd, part);
            wr = add(&c, wr, part);
            ev = add(&c, ev, mul(&c, 6, A));
        }
        wr = add(&c, wr, mul(&c, br, dv + 1)); /* O_i, L_i */
        ev = add(&c, ev, 2);
    }
    r->reads = rd;
    r->writes = wr;
    r->events = ev;
    r->sram_peak = f2(d, dv, g.Br, g.Bc) + (g.paged ? 1 : 0) + (g.S > 1 ? g.Br * dv + 2 * g.Br : 0);
    return c.ovf ? FL_EOVERFLOW : FL_OK;
}


static void explain(FILE *out, const fl_problem *p, const fl_blocks *b)
{
    fl_decode_geom g;
    fl_decode_geometry(p, b, &g);
    fprintf(out, "  rule BD: Br = the largest B <= Nq with FD(B, B) <= M; Bc = the largest <= Nk%s with\n"
                 "    FD = F2 + [paged] + [splits > 1](Br d_v + 2 Br) <= M (docs/model.md eq. FD)\n",
            g.paged ? " dividing the page size" : "");
    fprintf(out, "  rule SD: Nq = %lld queries over Nk = %lld keys; %lld split%s of %lld keys (asked %lld)",
            (long long)g.Nq, (long long)g.Nk, (long long)g.S, g.S == 1 ? "" : "s", (long long)g.Ls,
            (long long)kv(p)->splits);
    if (g.paged)
        fprintf(out, "; pages of %lld: %lld used of a pool of %lld, tiles loaded whole (%lld padding rows)",
                (long long)g.P, (long long)g.pages, (long long)g.pool, (long long)(g.Tc * g.Bc - g.Nk));
    fputc('\n', out);
}

/* Adds decode's cache: contiguous K, V (Nk x d), or the pool (pool * P x d) with the logical
 * pages placed through the block table, unused pages NaN (never read), the padding rows of the
 * last page kv(p)->pad_value; and BT.  Kl, Vl (compute): the logical cache, for the reference. */
static fl_status add_kv(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo *io,
                        const double *Kl, const double *Vl)
{
    fl_decode_geom g;
    fl_decode_geometry(p, b, &g);
    const int64_t d = p->d, dv = g.dv, rows = g.paged ? g.pool * g.P : g.Nk;
    int bt;
    FL_TRY(fl_tensor_add(m, "K", rows, d, p->elem_bytes, &io->K));
    FL_TRY(fl_tensor_add(m, "V", rows, dv, p->elem_bytes, &io->V));
    if (!g.paged) {
        if (fl_computes(m)) {
            memcpy(fl_tensor_get(m, io->K)->data, Kl, (size_t)(g.Nk * d) * sizeof(double));
            memcpy(fl_tensor_get(m, io->V)->data, Vl, (size_t)(g.Nk * dv) * sizeof(double));
        }
        return FL_OK;
    }
    FL_TRY(fl_tensor_add(m, "BT", g.pages, 1, 4, &bt));
    if (!fl_computes(m)) return FL_OK;
    double *K = fl_tensor_get(m, io->K)->data, *V = fl_tensor_get(m, io->V)->data;
    int64_t *table = malloc((size_t)g.pages * sizeof *table);
    if (!table) return fl_fail(FL_ENOMEM, "out of memory for the block table");
    fl_status s = fl_decode_block_table(p, &g, table);
    if (s) { free(table); return s; }
    for (int64_t k = 0; k < rows * d; k++) K[k] = NAN; /* unused pages: anything */
    for (int64_t k = 0; k < rows * dv; k++) V[k] = NAN;
    for (int64_t pos = 0; pos < g.pages * g.P; pos++) {
        const int64_t row = table[pos / g.P] * g.P + pos % g.P;
        for (int64_t c = 0; c < d; c++) K[row * d + c] = pos < g.Nk ? Kl[pos * d + c] : kv(p)->pad_value;
        for (int64_t c = 0; c < dv; c++) V[row * dv + c] = pos < g.Nk ? Vl[pos * dv + c] : kv(p)->pad_value;
    }
    for (int64_t k = 0; k < g.pages; k++) fl_tensor_get(m, bt)->data[k] = (double)table[k];
    free(table);
    return FL_OK;
}


static fl_status closed_form(const fl_problem *p, int bwd, const fl_blocks *b, fl_counts *out)
{
    (void)bwd;
    fl_counts r = {0};
    ck c = {0};
    return fl_closed_finish_own(p, closed_counts(p, b, &r), &c, &r, out);
}

/* decode's forward stores every row block's output: ceil(N / Br) tile events at least; without a
 * mask every row block keeps every key, so each of the S splits that hold keys also loads Q_i
 * and at least one K and V tile: 3 S events a row block (docs/model.md rule SD) */
static int64_t events_floor(const fl_problem *p, const fl_blocks *b, const fl_blocks *bb)
{
    (void)bb;
    const int64_t Tr = fl_cdiv(p->N, b->Br);
    if (p->causal != FL_CAUSAL_NONE || p->window_left != -1 || p->window_right != -1) return Tr;
    fl_decode_geom g;
    fl_decode_geometry(p, b, &g);
    int64_t t;
    return fl_mul_ok(Tr, g.S, &t) && fl_mul_ok(t, 3, &t) ? t : INT64_MAX;
}

/* Q, O, the logical cache, the pool (or contiguous K, V), the partials of every split */
static fl_status compute_size(const fl_problem *p, const fl_blocks *b)
{
    const int64_t N = p->N, Nk = nk_of(p), d = p->d, dv = fl_problem_dv(p);
    fl_decode_geom g;
    fl_decode_geometry(p, b, &g);
    const double keys = g.paged ? (double)g.pool * g.P : (double)Nk;
    return fl_compute_size_refuse(p, (double)N * (d + dv) + (keys + Nk) * (d + dv) + (double)g.S * N * (dv + 2));
}

const fl_schedule fl_sched_decode = {
    .name = "decode",
    .summary = "flash-decoding: few queries over a long contiguous or paged KV cache, split-KV",
    .flags = FL_SCHED_OWN_PROBLEM,
    .accepts = FL_ACCEPT_NK | FL_ACCEPT_MASK | FL_ACCEPT_KV_CACHE | FL_ACCEPT_DV,
    .check = check,
    .blocks = blocks,
    .closed_form = closed_form,
    .events_floor = events_floor,
    .compute_size = compute_size,
    .add_kv = add_kv,
    .fwd = fl_schedule_decode,
    .explain = explain,
};
