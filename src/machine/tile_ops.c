/* tile_ops.c: the checked tile ops of ops.h (fl_tile_*): a schedule written outside the library
 * calls the machine through these, so every buffer, tile and alias is checked before any value
 * is touched; the arithmetic is fl_op_* and the online-softmax rules of docs/model.md eq. (OS). */
#include <flashlab/ops.h>

#include <math.h>

/* The buffer is m's and live, else FL_EINVAL naming the op and the argument. */
static fl_status owned(const fl_machine *m, const char *op, const char *arg, const fl_buf *b)
{
    if (fl_buf_owned(m, b)) return FL_OK;
    return fl_fail(FL_EINVAL, "%s: %s is not a live SRAM buffer of this machine (freed, or another "
                              "machine's)", op, arg);
}

/* An nr x nc tile fits buffer b (which must be owned), else FL_EBOUNDS naming both. */
static fl_status fits(const fl_machine *m, const char *op, const char *arg, const fl_buf *b,
                      int64_t nr, int64_t nc)
{
    FL_TRY(owned(m, op, arg, b));
    if (nr >= 1 && nc >= 1 && nr <= b->rows && nc <= b->cols) return FL_OK;
    return fl_fail(FL_EBOUNDS, "%s: a %lldx%lld tile does not fit %s %s (%lldx%lld)", op,
                   (long long)nr, (long long)nc, arg, b->name, (long long)b->rows, (long long)b->cols);
}

/* Two operands that must be different buffers, else FL_EINVAL naming the rule. */
static fl_status apart(const char *op, const fl_buf *a, const char *an, const fl_buf *b, const char *bn)
{
    if (a != b) return FL_OK;
    return fl_fail(FL_EINVAL, "%s: %s and %s are the same buffer (%s); the op would read values it "
                              "has overwritten", op, an, bn, a->name);
}

static double *row(const fl_buf *b, int64_t r) { return b->x + r * b->cols; }

fl_status fl_tile_load(fl_machine *m, fl_buf *b, int64_t brow, int t, int64_t r0, int64_t c0,
                       int64_t nr, int64_t nc)
{
    FL_TRY(owned(m, "load", "the buffer", b));
    if (brow < 0 || brow > b->rows)
        return fl_fail(FL_EBOUNDS, "load: buffer row %lld is outside %s (%lld rows)", (long long)brow,
                       b->name, (long long)b->rows);
    fl_buf view = *b; /* rows [brow, rows) of b: fl_load checks the tile against them */
    view.rows = b->rows - brow;
    if (view.x) view.x = row(b, brow);
    return fl_load(m, &view, t, r0, c0, nr, nc);
}

fl_status fl_tile_store(fl_machine *m, const fl_buf *b, int64_t brow, int t, int64_t r0, int64_t c0,
                        int64_t nr, int64_t nc)
{
    FL_TRY(owned(m, "store", "the buffer", b));
    if (brow < 0 || brow > b->rows)
        return fl_fail(FL_EBOUNDS, "store: buffer row %lld is outside %s (%lld rows)", (long long)brow,
                       b->name, (long long)b->rows);
    fl_buf view = *b;
    view.rows = b->rows - brow;
    if (view.x) view.x = row(b, brow);
    return fl_store(m, &view, t, r0, c0, nr, nc);
}

fl_status fl_tile_fill(fl_machine *m, fl_buf *b, int64_t nr, int64_t nc, double v)
{
    FL_TRY(fits(m, "fill", "the buffer", b, nr, nc));
    fl_op_fill(b, nr, nc, v);
    return FL_OK;
}

fl_status fl_tile_copy(fl_machine *m, fl_buf *dst, const fl_buf *src, int64_t nr, int64_t nc)
{
    FL_TRY(fits(m, "copy", "dst", dst, nr, nc));
    FL_TRY(fits(m, "copy", "src", src, nr, nc));
    if (!fl_computes(m) || dst == src) return FL_OK;
    for (int64_t r = 0; r < nr; r++)
        for (int64_t c = 0; c < nc; c++) row(dst, r)[c] = row(src, r)[c];
    return FL_OK;
}

fl_status fl_tile_matmul(fl_machine *m, fl_buf *C, const fl_buf *A, const fl_buf *B, int64_t mm,
                         int64_t n, int64_t k, int transB, double alpha, int accumulate)
{
    FL_TRY(fits(m, "matmul", "C", C, mm, n));
    FL_TRY(fits(m, "matmul", "A", A, mm, k));
    FL_TRY(transB ? fits(m, "matmul", "B (transposed)", B, n, k) : fits(m, "matmul", "B", B, k, n));
    FL_TRY(apart("matmul", C, "C", A, "A"));
    FL_TRY(apart("matmul", C, "C", B, "B"));
    if (!isfinite(alpha)) return fl_fail(FL_EINVAL, "matmul: alpha = %g must be finite", alpha);
    if (fl_computes(m)) fl_op_matmul(C, A, B, mm, n, k, transB, alpha, accumulate);
    return FL_OK;
}

/* a > b for the maximum, with a NaN winning (it must propagate, docs/errors.md) */
static double max_nan(double a, double b) { return (isnan(a) || a > b) ? a : b; }

static fl_status reduce(fl_machine *m, const char *op, fl_buf *dst, const fl_buf *src, int64_t nr,
                        int64_t nc, int accumulate, int is_max)
{
    FL_TRY(fits(m, op, "dst", dst, nr, 1));
    FL_TRY(fits(m, op, "src", src, nr, nc));
    if (!fl_computes(m)) return FL_OK;
    for (int64_t r = 0; r < nr; r++) {
        double acc = is_max ? -INFINITY : 0.0;
        for (int64_t c = 0; c < nc; c++) acc = is_max ? max_nan(row(src, r)[c], acc) : acc + row(src, r)[c];
        double *d = row(dst, r); /* written after the row is read: dst may be src */
        *d = !accumulate ? acc : is_max ? max_nan(acc, *d) : *d + acc;
    }
    return FL_OK;
}

fl_status fl_tile_row_max(fl_machine *m, fl_buf *dst, const fl_buf *src, int64_t nr, int64_t nc,
                          int accumulate)
{
    return reduce(m, "row_max", dst, src, nr, nc, accumulate, 1);
}

fl_status fl_tile_row_sum(fl_machine *m, fl_buf *dst, const fl_buf *src, int64_t nr, int64_t nc,
                          int accumulate)
{
    return reduce(m, "row_sum", dst, src, nr, nc, accumulate, 0);
}

fl_status fl_tile_exp_diff(fl_machine *m, fl_buf *dst, const fl_buf *x, const fl_buf *mx,
                           int64_t nr, int64_t nc)
{
    FL_TRY(fits(m, "exp_diff", "dst", dst, nr, nc));
    FL_TRY(fits(m, "exp_diff", "x", x, nr, nc));
    FL_TRY(fits(m, "exp_diff", "the row vector m", mx, nr, 1));
    FL_TRY(apart("exp_diff", dst, "dst", mx, "the row vector m"));
    if (!fl_computes(m)) return FL_OK;
    for (int64_t r = 0; r < nr; r++) {
        const double mr = row(mx, r)[0];
        for (int64_t c = 0; c < nc; c++) {
            const double v = row(x, r)[c]; /* eq. (OS): a masked score contributes 0, not exp(nan) */
            row(dst, r)[c] = v == -INFINITY ? 0.0 : exp(v - mr);
        }
    }
    return FL_OK;
}

static fl_status per_row(fl_machine *m, const char *op, fl_buf *dst, const fl_buf *f, int64_t nr,
                         int64_t nc, int divide)
{
    FL_TRY(fits(m, op, "dst", dst, nr, nc));
    FL_TRY(fits(m, op, "the row vector", f, nr, 1));
    FL_TRY(apart(op, dst, "dst", f, "the row vector"));
    if (!fl_computes(m)) return FL_OK;
    for (int64_t r = 0; r < nr; r++) {
        const double v = row(f, r)[0];
        for (int64_t c = 0; c < nc; c++) {
            double *d = &row(dst, r)[c];
            *d = !divide ? *d * v : v == 0.0 ? 0.0 : *d / v; /* rule M0: no legal key, zeros */
        }
    }
    return FL_OK;
}

fl_status fl_tile_scale_rows(fl_machine *m, fl_buf *dst, const fl_buf *f, int64_t nr, int64_t nc)
{
    return per_row(m, "scale_rows", dst, f, nr, nc, 0);
}

fl_status fl_tile_div_rows(fl_machine *m, fl_buf *dst, const fl_buf *l, int64_t nr, int64_t nc)
{
    return per_row(m, "div_rows", dst, l, nr, nc, 1);
}

fl_status fl_tile_lse(fl_machine *m, fl_buf *dst, const fl_buf *mx, const fl_buf *l, int64_t nr)
{
    FL_TRY(fits(m, "lse", "dst", dst, nr, 1));
    FL_TRY(fits(m, "lse", "the row vector m", mx, nr, 1));
    FL_TRY(fits(m, "lse", "the row vector l", l, nr, 1));
    if (!fl_computes(m)) return FL_OK;
    for (int64_t r = 0; r < nr; r++) {
        const double lr = row(l, r)[0], mr = row(mx, r)[0];
        row(dst, r)[0] = lr > 0.0 ? mr + log(lr) : -INFINITY; /* flash2 line 13; rule M0 */
    }
    return FL_OK;
}

#define FL_MAX_RESCALE 8

fl_status fl_tile_max_rescale(fl_machine *m, fl_buf *mx, const fl_buf *s, int64_t nr, int64_t nc,
                              fl_buf *const *rescale, int nrescale)
{
    FL_TRY(fits(m, "max_rescale", "the row vector m", mx, nr, 1));
    FL_TRY(fits(m, "max_rescale", "the scores", s, nr, nc));
    FL_TRY(apart("max_rescale", mx, "the row vector m", s, "the scores"));
    if (nrescale < 0 || nrescale > FL_MAX_RESCALE || (nrescale && !rescale))
        return fl_fail(FL_EINVAL, "max_rescale: %d buffers to rescale; 0 to %d are allowed", nrescale,
                       FL_MAX_RESCALE);
    for (int k = 0; k < nrescale; k++) {
        FL_TRY(fits(m, "max_rescale", "a buffer to rescale", rescale[k], nr, 1));
        FL_TRY(apart("max_rescale", rescale[k], "a buffer to rescale", mx, "the row vector m"));
        FL_TRY(apart("max_rescale", rescale[k], "a buffer to rescale", s, "the scores"));
        for (int j = 0; j < k; j++)
            if (rescale[j] == rescale[k])
                return fl_fail(FL_EINVAL, "max_rescale: %s is named twice among the buffers to "
                                          "rescale (it would be rescaled twice)", rescale[k]->name);
    }
    if (!fl_computes(m)) return FL_OK;
    for (int64_t r = 0; r < nr; r++) {
        const double old = row(mx, r)[0];
        double mnew = old;
        for (int64_t c = 0; c < nc; c++) mnew = max_nan(row(s, r)[c], mnew);
        /* eq. (OS): a = e^(m - m'), 0 from an empty state, 1 when nothing legal came (skipped) */
        const double a = mnew == -INFINITY ? 1.0 : old == -INFINITY ? 0.0 : exp(old - mnew);
        for (int k = 0; k < nrescale; k++)
            for (int64_t c = 0; c < rescale[k]->cols; c++) row(rescale[k], r)[c] *= a;
        row(mx, r)[0] = mnew;
    }
    return FL_OK;
}

fl_status fl_tile_keep(fl_machine *m, fl_buf *b, int64_t nr, int64_t nc, const unsigned char *keep,
                       int64_t keep_len)
{
    FL_TRY(fits(m, "mask", "the scores", b, nr, nc));
    if (!keep || keep_len != nr * nc)
        return fl_fail(FL_EINVAL, "mask: %lld keep flags for a %lldx%lld tile (one per element)",
                       (long long)keep_len, (long long)nr, (long long)nc);
    if (!fl_computes(m)) return FL_OK;
    for (int64_t r = 0; r < nr; r++)
        for (int64_t c = 0; c < nc; c++)
            if (!keep[r * nc + c]) row(b, r)[c] = -INFINITY; /* rule K4: masked on chip */
    return FL_OK;
}
