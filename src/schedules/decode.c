/* sched_decode.c: decode with a KV cache -- few queries over a long cache -- as flash-decoding
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
 *                      past Nk in the last page -- as a TMA load does)  -> 2 Bc d reads
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
 * Caller's tensors: Q (Nq x d), O (Nq x d), K and V (Nk x d, or the pool: pool * P x d when
 * paged) and, paged, BT (pages x 1, int32).  The schedule adds L and, S > 1, the partials.
 * SRAM: eq. (FD).  Counts: eq. (CD).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <flashlab/masks.h>
#include <flashlab/ops.h>
#include <flashlab/problem_ext.h>
#include "schedules.h"

/* Refuses a padding row (key position >= Nk) of the tile that is not finite. */
static fl_status check_padding(const fl_decode_geom *g, const fl_buf *K, const fl_buf *V,
                               int64_t c0, int64_t rows, const int64_t *table)
{
    for (int64_t r = fl_max64(0, g->Nk - c0); r < rows; r++)
        for (int64_t c = 0; c < g->d; c++) {
            const char *which = !isfinite(K->x[r * g->d + c]) ? "K" : !isfinite(V->x[r * g->d + c]) ? "V" : NULL;
            if (!which) continue;
            const int64_t pos = c0 + r, lp = pos / g->P;
            return fl_fail(FL_EINVAL,
                           "decode: %s row %lld of physical page %lld (logical page %lld, key "
                           "position %lld >= Nk = %lld: padding of the last page) is not finite; "
                           "its score is masked, but probability 0 times a non-finite value is NaN "
                           "-- keep the loaded padding rows finite (--pad)",
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
    const int64_t d = g->d, Bc = g->Bc;
    const double scale = 1.0 / sqrt((double)d);
    const int cmp = fl_computes(m);
    int64_t page = -1;
    FL_TRY(fl_load(m, Qi, io.Q, r0, 0, br, d));
    fl_op_fill(Oi, br, d, 0.0);
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
            const int64_t phys = cmp ? (int64_t)bt->x[0] : table[page];
            row = phys * g->P + c0 % g->P;
            rows = Bc; /* a whole tile, padding rows of the last page included */
        }
        FL_TRY(fl_load(m, Kj, io.K, row, 0, rows, d));
        FL_TRY(fl_load(m, Vj, io.V, row, 0, rows, d));
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
            for (int64_t c = 0; c < d; c++) Oi->x[r * d + c] *= a;
        }
        fl_op_matmul(Oi, Sij, Vj, br, d, rows, 0, 1.0, 1); /* O += P V, dense */
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

fl_status fl_schedule_decode(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io)
{
    fl_decode_geom g;
    fl_mask mk;
    fl_decode_geometry(p, b, &g);
    FL_TRY(fl_mask_init(&mk, g.Nq, g.Nk, p->causal, p->window_left, p->window_right));
    const int64_t d = g.d, Br = g.Br, Nq = g.Nq, S = g.S;
    const int cmp = fl_computes(m);
    int L_t, Op_t = -1, mp_t = -1, lp_t = -1, bt_t = -1;
    FL_TRY(fl_tensor_add(m, "L", Nq, 1, 4, &L_t));
    if (S > 1) { /* the partials of every split, fp32: row s * Nq + query */
        FL_TRY(fl_tensor_add(m, "O_split", S * Nq, d, 4, &Op_t));
        FL_TRY(fl_tensor_add(m, "m_split", S * Nq, 1, 4, &mp_t));
        FL_TRY(fl_tensor_add(m, "l_split", S * Nq, 1, 4, &lp_t));
    }
    int64_t *table = NULL;
    if (g.paged) {
        if ((bt_t = fl_tensor_find(m, "BT")) < 0)
            return fl_fail(FL_EINVAL, "decode: a paged run needs the block table tensor BT");
        if (!(table = malloc((size_t)g.pages * sizeof *table)))
            return fl_fail(FL_ENOMEM, "decode: out of memory for the block table");
        fl_status s = fl_decode_block_table(p, &g, table);
        if (s) { free(table); return s; }
    }

    fl_buf *B[8] = {0}, *Os = NULL, *ms = NULL, *ls = NULL;
    fl_status s;
    if ((s = fl_sram_alloc(m, "Q_i", Br, d, &B[0])) || (s = fl_sram_alloc(m, "O_i", Br, d, &B[1])) ||
        (s = fl_sram_alloc(m, "K_j", g.Bc, d, &B[2])) || (s = fl_sram_alloc(m, "V_j", g.Bc, d, &B[3])) ||
        (s = fl_sram_alloc(m, "S_ij", Br, g.Bc, &B[4])) || (s = fl_sram_alloc(m, "m_i", Br, 1, &B[5])) ||
        (s = fl_sram_alloc(m, "l_i", Br, 1, &B[6])) ||
        (g.paged && (s = fl_sram_alloc(m, "bt", 1, 1, &B[7]))) ||
        (S > 1 && ((s = fl_sram_alloc(m, "O_s", Br, d, &Os)) || (s = fl_sram_alloc(m, "m_s", Br, 1, &ms)) ||
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
                for (int64_t r = 0; r < br; r++) fl_osm_finish(li->x[r], Oi->x + r * d, d, Oi->x + r * d);
            if ((s = fl_store(m, Oi, Op_t, sp * Nq + r0, 0, br, d)) ||
                (s = fl_store(m, mi, mp_t, sp * Nq + r0, 0, br, 1)) ||
                (s = fl_store(m, li, lp_t, sp * Nq + r0, 0, br, 1)))
                goto done;
        }
        if (S > 1 || !active) { /* merge the partials (none: the rows keep no key, O = 0) */
            fl_op_fill(Oi, br, d, 0.0);
            fl_op_fill(li, br, 1, 0.0);
            fl_op_fill(mi, br, 1, -INFINITY);
        }
        for (int64_t sp = 0; S > 1 && sp < S; sp++) {
            int64_t s0, s1;
            fl_decode_split_tiles(&g, t0, t1, sp, &s0, &s1);
            if (s0 >= s1) continue;
            if ((s = fl_load(m, Os, Op_t, sp * Nq + r0, 0, br, d)) ||
                (s = fl_load(m, ms, mp_t, sp * Nq + r0, 0, br, 1)) ||
                (s = fl_load(m, ls, lp_t, sp * Nq + r0, 0, br, 1)))
                goto done;
            if (!cmp) continue;
            for (int64_t r = 0; r < br; r++) {
                const double msr = ms->x[r], mold = mi->x[r];
                if (msr == -INFINITY) continue; /* this split kept no key of row r */
                const double mnew = fmax(mold, msr);
                const double a = exp(mold - mnew), w = exp(msr - mnew) * ls->x[r];
                for (int64_t c = 0; c < d; c++)
                    Oi->x[r * d + c] = a * Oi->x[r * d + c] + w * Os->x[r * d + c];
                li->x[r] = a * li->x[r] + w;
                mi->x[r] = mnew;
            }
        }
        if (cmp) finish(Oi, mi, li, br, d);
        if ((s = fl_store(m, Oi, io.O, r0, 0, br, d)) || (s = fl_store(m, mi, L_t, r0, 0, br, 1)))
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
