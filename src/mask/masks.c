/* masks.c: the keep rule and tile classification (see masks.h; docs/model.md rules K1-K4). */
#include <flashlab/masks.h>

#include <string.h>

static const char *const causal_names[] = {"none", "top-left", "bottom-right"};

const char *fl_causal_name(fl_causal c)
{
    return (c >= FL_CAUSAL_NONE && c <= FL_CAUSAL_BOTTOM_RIGHT) ? causal_names[c] : NULL;
}

fl_status fl_causal_parse(const char *s, fl_causal *out)
{
    for (int c = FL_CAUSAL_NONE; c <= FL_CAUSAL_BOTTOM_RIGHT; c++)
        if (s && strcmp(s, causal_names[c]) == 0) {
            *out = (fl_causal)c;
            return FL_OK;
        }
    return fl_fail(FL_EINVAL, "{causal}: unknown corner '%s' (choose none, top-left or bottom-right)",
                   s ? s : "");
}

/* Tightens the upper offset bound to v. */
static void upper(fl_mask *mk, int64_t v)
{
    if (!mk->has_b || v < mk->b) mk->b = v;
    mk->has_b = 1;
}

fl_status fl_mask_init(fl_mask *mk, int64_t Nq, int64_t Nk, fl_causal causal, int64_t left,
                       int64_t right)
{
    if (Nq < 1) return fl_fail(FL_EINVAL, "{N}: query length must be >= 1 (got %lld)", (long long)Nq);
    if (Nk < 1) return fl_fail(FL_EINVAL, "{Nk}: key length must be >= 1 (got %lld)", (long long)Nk);
    if (!fl_causal_name(causal)) return fl_fail(FL_EINVAL, "{causal}: unknown corner");
    if (left < -1 || right < -1)
        return fl_fail(FL_EINVAL, "{window}: each side must be >= 0, or -1 for unbounded (got %lld,%lld)",
                       (long long)left, (long long)right);
    if (Nq > FL_MASK_SIZE_MAX || Nk > FL_MASK_SIZE_MAX) /* so that Nq + Nk and every offset fit */
        return fl_fail(FL_EINVAL, "{N}/{Nk}: %lld x %lld is more than the largest size %lld", (long long)Nq,
                       (long long)Nk, (long long)FL_MASK_SIZE_MAX);
    /* offsets are bounded by the matrix anyway; clamp so that i + a never overflows */
    const int64_t lim = Nq + Nk;
    memset(mk, 0, sizeof *mk);
    mk->Nq = Nq;
    mk->Nk = Nk;
    mk->causal = causal;
    mk->left = left;
    mk->right = right;
    const int64_t off = Nk - Nq; /* bottom-right alignment: the last query sees the last key */
    if (causal == FL_CAUSAL_TOP_LEFT) upper(mk, 0);            /* j <= i */
    if (causal == FL_CAUSAL_BOTTOM_RIGHT) upper(mk, off);      /* j <= i + Nk - Nq */
    if (right >= 0) upper(mk, off + fl_min64(right, lim));     /* j <= i + Nk - Nq + R */
    if (left >= 0) {                                           /* j >= i + Nk - Nq - L */
        mk->has_a = 1;
        mk->a = off - fl_min64(left, lim);
    }
    return FL_OK;
}

int fl_mask_is_dense(const fl_mask *mk) { return !mk->has_a && !mk->has_b; }

void fl_mask_row_range(const fl_mask *mk, int64_t i, int64_t *lo, int64_t *hi)
{
    *lo = mk->has_a ? fl_max64(0, i + mk->a) : 0;
    *hi = mk->has_b ? fl_min64(mk->Nk - 1, i + mk->b) : mk->Nk - 1;
}

/* sum over x = 1..n of ceil(x / C): C q (q + 1) / 2 + r (q + 1) with n = q C + r */
static int64_t sum_ceil(int64_t n, int64_t C)
{
    const int64_t q = n / C, r = n % C;
    return C * (q * (q + 1) / 2) + r * (q + 1);
}

int fl_mask_row_sums(const fl_mask *mk, int64_t C, int64_t *rows, int64_t *kept, int64_t *chunks)
{
    /* the pieces on which lo and hi are linear: lo(i) = i + a from -a + 1 on, hi(i) = Nk - 1
     * from Nk - b on (rule K1) */
    int64_t cut[4], n = 0;
    const int64_t Nq = mk->Nq;
    *rows = *kept = *chunks = 0;
    if (C < 1 || Nq > (INT64_C(1) << 31) || mk->Nk > (INT64_C(1) << 31)) return 0;
    cut[n++] = 0;
    if (mk->has_a && -mk->a + 1 > 0 && -mk->a + 1 < Nq) cut[n++] = -mk->a + 1;
    if (mk->has_b && mk->Nk - mk->b > 0 && mk->Nk - mk->b < Nq) cut[n++] = mk->Nk - mk->b;
    if (n == 3 && cut[1] > cut[2]) {
        const int64_t x = cut[1];
        cut[1] = cut[2], cut[2] = x;
    }
    cut[n] = Nq;
    for (int64_t k = 0; k < n; k++) {
        int64_t u = cut[k], v = cut[k + 1] - 1, lo, hi;
        if (u > v) continue;
        fl_mask_row_range(mk, u, &lo, &hi);
        const int64_t lu = hi - lo + 1;
        fl_mask_row_range(mk, v, &lo, &hi);
        const int64_t lv = hi - lo + 1;
        if (lu < 1 && lv < 1) continue; /* len is linear on the piece: no row keeps a key */
        if (lu < 1) u += 1 - lu;        /* rising: the rows from len = 1 on */
        if (lv < 1) v -= 1 - lv;        /* falling: the rows up to len = 1 */
        const int64_t a = lu < 1 ? 1 : lu, b = lv < 1 ? 1 : lv, cnt = v - u + 1;
        *rows += cnt;
        *kept += cnt * (a + b) / 2; /* an arithmetic series (cnt (a + b) is even) */
        if (a == b) *chunks += cnt * ((a + C - 1) / C);
        else *chunks += a < b ? sum_ceil(b, C) - sum_ceil(a - 1, C) : sum_ceil(a, C) - sum_ceil(b - 1, C);
    }
    return 1;
}

int fl_mask_keep(const fl_mask *mk, int64_t i, int64_t j)
{
    if (i < 0 || i >= mk->Nq || j < 0 || j >= mk->Nk) return 0; /* outside the matrix: nothing kept */
    const int64_t dj = j - i;
    return (!mk->has_a || dj >= mk->a) && (!mk->has_b || dj <= mk->b);
}

int fl_mask_keep_fn(int64_t i, int64_t j, const void *ctx)
{
    return fl_mask_keep((const fl_mask *)ctx, i, j);
}

/* [start, start + n) clipped to [0, len): *s, *n_out (0 when the intersection is empty), without
 * overflow for any start and n >= 1. */
static void clip(int64_t start, int64_t n, int64_t len, int64_t *s, int64_t *n_out)
{
    *n_out = 0;
    if (n < 1 || start >= len) return;
    if (start < 0) {
        if (n <= -(start + 1)) return; /* ends before 0 (written so that -start cannot overflow) */
        n += start, start = 0;
    }
    *s = start;
    *n_out = n > len - start ? len - start : n;
}

fl_tile_kind fl_mask_tile(const fl_mask *mk, int64_t r0, int64_t nr, int64_t c0, int64_t nc)
{
    /* a tile reaching outside the matrix is classified by its part inside (none: empty) */
    clip(r0, nr, mk->Nq, &r0, &nr);
    clip(c0, nc, mk->Nk, &c0, &nc);
    if (nr < 1 || nc < 1) return FL_TILE_EMPTY;
    const int64_t dmin = c0 - (r0 + nr - 1), dmax = (c0 + nc - 1) - r0; /* offsets in the tile */
    if ((mk->has_a && mk->has_b && mk->a > mk->b) || (mk->has_a && dmax < mk->a) ||
        (mk->has_b && dmin > mk->b))
        return FL_TILE_EMPTY;
    if ((!mk->has_a || dmin >= mk->a) && (!mk->has_b || dmax <= mk->b)) return FL_TILE_FULL;
    return FL_TILE_PARTIAL;
}

/* Blocks of size B covering [lo, hi] within [0, n): [*k0, *k1), empty when lo > hi. */
static void blocks(int64_t lo, int64_t hi, int64_t n, int64_t B, int64_t *k0, int64_t *k1)
{
    lo = fl_max64(lo, 0);
    hi = fl_min64(hi, n - 1);
    if (lo > hi) {
        *k0 = *k1 = 0;
        return;
    }
    *k0 = lo / B;
    *k1 = hi / B + 1;
}

void fl_mask_block_range(const fl_mask *mk, int64_t r0, int64_t nr, int64_t Bc, int64_t *j0,
                         int64_t *j1)
{
    if (mk->has_a && mk->has_b && mk->a > mk->b) {
        *j0 = *j1 = 0;
        return;
    }
    /* keys kept by some row of the block: [r0 + a, r1 + b] */
    const int64_t lo = mk->has_a ? r0 + mk->a : 0;
    const int64_t hi = mk->has_b ? r0 + nr - 1 + mk->b : mk->Nk - 1;
    blocks(lo, hi, mk->Nk, Bc, j0, j1);
}

void fl_mask_row_block_range(const fl_mask *mk, int64_t c0, int64_t nc, int64_t Br, int64_t *i0,
                             int64_t *i1)
{
    if (mk->has_a && mk->has_b && mk->a > mk->b) {
        *i0 = *i1 = 0;
        return;
    }
    /* rows keeping some key of the block: [c0 - b, c1 - a] */
    const int64_t lo = mk->has_b ? c0 - mk->b : 0;
    const int64_t hi = mk->has_a ? c0 + nc - 1 - mk->a : mk->Nq - 1;
    blocks(lo, hi, mk->Nq, Br, i0, i1);
}
