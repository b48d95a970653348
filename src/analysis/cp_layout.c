/* cp_layout.c: tokens, heads and the step problems of context parallelism (see cp_layout.h). */
#include "analysis/cp_layout.h"

#include <flashlab/masks.h>

int64_t fl_cp_pos(const fl_cp_spec *s, int64_t n, int64_t r, int64_t i)
{
    return s->kind == FL_CP_STRIPED ? r + s->P * i : r * n + i;
}

/* floor(a / b), b > 0 */
static int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

void fl_cp_step_of(const fl_cp_spec *s, int64_t n, int64_t r, int64_t src, fl_cp_step *st)
{
    st->empty = 0, st->rows = n, st->q_off = 0, st->k_off = 0;
    st->causal = FL_CAUSAL_NONE, st->window_right = -1;
    if (s->p.causal == FL_CAUSAL_NONE) return;
    /* both layouts place local token i at base + stride i (cp_pos): the band's offset is the
     * distance of the two bases in strides (rule CP-L) */
    const int64_t stride = fl_cp_pos(s, n, r, 1) - fl_cp_pos(s, n, r, 0);
    const int64_t delta = floor_div(fl_cp_pos(s, n, r, 0) - fl_cp_pos(s, n, src, 0), stride);
    if (delta >= n - 1) return; /* every pair */
    if (delta <= -n) {
        st->empty = 1, st->rows = 0;
        return;
    }
    st->causal = FL_CAUSAL_TOP_LEFT;
    if (delta > 0) { /* j <= i + delta: the window (-1, delta) of a square problem */
        st->causal = FL_CAUSAL_NONE, st->window_right = delta;
        return;
    }
    st->rows = n + delta, st->q_off = -delta; /* queries [k, n) against keys [0, n - k) */
}

void fl_cp_heads(const fl_cp_spec *s, int64_t r, int64_t *q0, int64_t *hq, int64_t *k0, int64_t *hk)
{
    const int64_t H = s->p.heads, Hkv = s->p.kv_heads ? s->p.kv_heads : H, g = H / Hkv;
    *hq = H / s->P;
    *q0 = r * *hq;
    *k0 = *q0 / g;
    *hk = (*q0 + *hq - 1) / g - *k0 + 1;
}

fl_problem fl_cp_kernel_problem(const fl_cp_spec *s, int64_t rows, fl_causal causal, int64_t window_right,
                                int64_t heads, int64_t kv_heads, int bwd)
{
    fl_problem q = s->p;
    q.N = rows, q.Nk = 0;
    q.causal = causal, q.window_left = -1, q.window_right = window_right;
    q.heads = heads, q.kv_heads = kv_heads == heads ? 0 : kv_heads;
    q.pass = bwd ? FL_PASS_BWD : FL_PASS_FWD;
    return q;
}

fl_status fl_cp_pairs(int64_t rows, fl_causal causal, int64_t window_right, int64_t *pairs)
{
    fl_mask mk;
    int64_t sum = 0, lo, hi;
    FL_TRY(fl_mask_init(&mk, rows, rows, causal, -1, window_right));
    for (int64_t i = 0; i < rows; i++) {
        fl_mask_row_range(&mk, i, &lo, &hi);
        if (hi >= lo && !fl_add_ok(sum, hi - lo + 1, &sum))
            return fl_fail(FL_EOVERFLOW, "{N}: the kept pairs of a %lld-row step do not fit in 64 bits", (long long)rows);
    }
    *pairs = sum;
    return FL_OK;
}
