/* util.c: small helpers the schedules share (see schedules.h). */
#include <math.h>
#include <string.h>

#include "schedules.h"
#include "problem/segments.h"

fl_buf fl_buf_rows(const fl_buf *b, int64_t r0)
{
    fl_buf v = *b;
    v.rows = b->rows - r0;
    v.x = b->x ? b->x + r0 * b->cols : NULL;
    return v;
}

void fl_tile_mask(fl_buf *b, const fl_mask *mk, int64_t r0, int64_t rows_per_head, int64_t nr,
                  int64_t c0, int64_t nc)
{
    if (!b->x) return;
    for (int64_t r = 0; r < nr; r++)
        for (int64_t c = 0; c < nc; c++)
            if (!fl_mask_keep(mk, r0 + r % rows_per_head, c0 + c)) b->x[r * b->cols + c] = -INFINITY;
}

int64_t fl_seg_max_group(const fl_qkvo *io) { return io->segs->G; }

int64_t fl_seg_max_nk(const fl_qkvo *io) { return io->segs->max_nk; }

fl_status fl_sram_realloc(fl_machine *m, const char *name, int64_t rows, int64_t cols, fl_buf **b)
{
    if (*b && (*b)->live && (*b)->rows == rows && (*b)->cols == cols) return FL_OK;
    fl_sram_free(m, *b);
    *b = NULL;
    return fl_sram_alloc(m, name, rows, cols, b);
}

void fl_matmul_tn(fl_buf *C, const fl_buf *A, const fl_buf *B, int64_t mm, int64_t n, int64_t k, double alpha)
{
    if (!C->x) return;
    for (int64_t t = 0; t < k; t++)
        for (int64_t i = 0; i < mm; i++) {
            const double a = alpha * A->x[t * A->cols + i];
            if (a == 0.0) continue;
            for (int64_t j = 0; j < n; j++) C->x[i * C->cols + j] += a * B->x[t * B->cols + j];
        }
}
