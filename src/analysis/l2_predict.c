/* l2_predict.c: the kernels' accesses in GPU order through the L2 (l2_predict.h). */
#include <flashlab/l2_predict.h>

#include <string.h>

#include <flashlab/l2.h>

typedef struct {
    fl_l2 *c;
    fl_l2_kpred *k;
    fl_gpu_access last; /* the previous access, for the repeat shortcut */
    int have_last;
    int64_t last_sectors;
} walk_ctx;

/* The sectors of one access, row by row (one range when the rows are contiguous): rule L1. */
static int64_t access_sectors(const fl_gpu_sched *s, const fl_gpu_access *a, fl_l2 *c, int go)
{
    const fl_gpu_tensor *t = &s->t[a->tensor];
    const uint64_t eb = (uint64_t)t->elem_bytes, sb = (uint64_t)fl_l2_sector_bytes(c);
    const int one = a->nr == 1 || a->nc == t->cols;
    const int64_t rows = one ? 1 : a->nr, len = (one ? a->nr * a->nc : a->nc) * (int64_t)eb;
    int64_t n = 0;
    for (int64_t r = 0; r < rows; r++) {
        const uint64_t at = t->base + ((uint64_t)(a->r0 + r) * (uint64_t)t->cols + (uint64_t)a->c0) * eb;
        n += (int64_t)((at + (uint64_t)len - 1) / sb - at / sb + 1);
        if (go) fl_l2_access(c, at, len, a->write);
    }
    return n;
}

static void visit(const fl_gpu_sched *s, const fl_gpu_access *a, void *vctx)
{
    walk_ctx *w = vctx;
    const int64_t elems = a->nr * a->nc;
    if (a->write) w->k->writes[a->tensor] += elems;
    else w->k->reads[a->tensor] += elems;
    /* The same read again, with nothing between: under LRU every sector hits and the order of the
     * cache is unchanged (the sectors are touched in the same order), so only count it. */
    if (!a->write && w->have_last && !w->last.write && memcmp(a, &w->last, sizeof *a) == 0 &&
        w->last_sectors <= fl_l2_capacity_sectors(w->c)) {
        w->k->sm_read_B += w->last_sectors * fl_l2_sector_bytes(w->c);
        return;
    }
    const fl_l2_stats before = fl_l2_get_stats(w->c);
    const int64_t n = access_sectors(s, a, w->c, 1);
    const fl_l2_stats after = fl_l2_get_stats(w->c);
    const int64_t sb = fl_l2_sector_bytes(w->c);
    if (a->write) w->k->sm_write_B += n * sb;
    else w->k->sm_read_B += n * sb;
    w->k->dram_read_B += (after.read_misses - before.read_misses) * sb;
    w->k->writeback_B += (after.writebacks - before.writebacks) * sb;
    w->last = *a;
    w->have_last = 1;
    w->last_sectors = n;
}

static void add(fl_l2_kpred *to, const fl_l2_kpred *k)
{
    to->sm_read_B += k->sm_read_B, to->sm_write_B += k->sm_write_B;
    to->dram_read_B += k->dram_read_B, to->writeback_B += k->writeback_B;
    for (int t = 0; t < FL_GT_COUNT; t++) to->reads[t] += k->reads[t], to->writes[t] += k->writes[t];
}

fl_status fl_l2_predict(const fl_gpu_sched *s, int64_t l2_bytes, int64_t sector, int flush, fl_l2_pred *out)
{
    memset(out, 0, sizeof *out);
    fl_l2 *c;
    FL_TRY(fl_l2_alloc(l2_bytes, sector, &c));
    out->nkernels = s->nkernels;
    for (int k = 0; k < s->nkernels; k++) {
        if (flush) fl_l2_flush(c);
        walk_ctx w = {c, &out->k[k], {0}, 0, 0};
        fl_gpu_walk(s, k, visit, &w);
        add(&out->total, &out->k[k]);
    }
    fl_l2_free(c);
    return FL_OK;
}
