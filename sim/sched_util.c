/* sched_util.c: small helpers the schedules share (see schedules.h). */
#include <math.h>
#include <string.h>

#include "schedules.h"

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

int fl_tensor_find(fl_machine *m, const char *name)
{
    for (int t = 0; t < fl_tensor_count(m); t++)
        if (strcmp(fl_tensor_get(m, t)->name, name) == 0) return t;
    return -1;
}

int64_t fl_seg_max_group(const fl_qkvo *io)
{
    int64_t g = 1;
    for (int64_t s = 0; s < io->nseg; s++) g = fl_max64(g, io->seg[s].group);
    return g;
}

int64_t fl_seg_max_nk(const fl_qkvo *io)
{
    int64_t n = 1;
    for (int64_t s = 0; s < io->nseg; s++) n = fl_max64(n, io->seg[s].Nk);
    return n;
}
