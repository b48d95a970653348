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

/* The sectors of one access in sectors of sb bytes, row by row (one range when the rows are
 * contiguous): rule L1.  With a cache c, each range is also accessed in it. */
static int64_t access_sectors(const fl_gpu_sched *s, const fl_gpu_access *a, int64_t sector, fl_l2 *c)
{
    const fl_gpu_tensor *t = &s->t[a->tensor];
    const uint64_t eb = (uint64_t)t->elem_bytes, sb = (uint64_t)sector;
    const int one = a->nr == 1 || a->nc == t->cols;
    const int64_t rows = one ? 1 : a->nr, len = (one ? a->nr * a->nc : a->nc) * (int64_t)eb;
    int64_t n = 0;
    for (int64_t r = 0; r < rows; r++) {
        const uint64_t at = t->base + ((uint64_t)(a->r0 + r) * (uint64_t)t->cols + (uint64_t)a->c0) * eb;
        n += (int64_t)((at + (uint64_t)len - 1) / sb - at / sb + 1);
        if (c) fl_l2_access(c, at, len, a->write);
    }
    return n;
}

/* The same read again, with nothing between: under LRU every sector hits and the order of the
 * cache is unchanged (the sectors are touched in the same order), so it is only counted. */
static int is_repeat(const fl_gpu_access *a, const fl_gpu_access *last, int have_last, int64_t last_sectors,
                     int64_t capacity_sectors)
{
    return !a->write && have_last && !last->write && memcmp(a, last, sizeof *a) == 0 &&
           last_sectors <= capacity_sectors;
}

static void visit(const fl_gpu_sched *s, const fl_gpu_access *a, void *vctx)
{
    walk_ctx *w = vctx;
    const int64_t elems = a->nr * a->nc;
    if (a->write) w->k->writes[a->tensor] += elems;
    else w->k->reads[a->tensor] += elems;
    if (is_repeat(a, &w->last, w->have_last, w->last_sectors, fl_l2_capacity_sectors(w->c))) {
        w->k->sm_read_B += w->last_sectors * fl_l2_sector_bytes(w->c);
        return;
    }
    const fl_l2_stats before = fl_l2_get_stats(w->c);
    const int64_t n = access_sectors(s, a, fl_l2_sector_bytes(w->c), w->c);
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

typedef struct {
    int64_t sector, capacity_sectors, budget, lookups;
    fl_gpu_access last;
    int have_last;
    int64_t last_sectors;
} work_ctx;

/* visit's lookups without a cache: what fl_l2_predict will look up, access by access. */
static void count_visit(const fl_gpu_sched *s, const fl_gpu_access *a, void *vctx)
{
    work_ctx *w = vctx;
    if (w->lookups > w->budget) return; /* over: the rest of the walk is only stepped through */
    if (is_repeat(a, &w->last, w->have_last, w->last_sectors, w->capacity_sectors)) return;
    const int64_t n = access_sectors(s, a, w->sector, NULL);
    w->lookups += n;
    w->last = *a;
    w->have_last = 1;
    w->last_sectors = n;
}

int fl_l2_work(const fl_gpu_sched *s, int64_t l2_bytes, int64_t sector, int64_t limit, int64_t *steps,
               int64_t *lookups)
{
    const int64_t cap = limit > 0 ? limit : INT64_MAX;
    int64_t st = 0, t;
    *lookups = 0;
    /* the walk's steps, one pass over the CTAs: per wave, its longest CTA (with the skew) times
     * the CTAs in it */
    for (int k = 0; k < s->nkernels; k++) {
        const fl_gpu_kernel *g = &s->k[k];
        const int64_t wave = g->per_sm * s->sms;
        for (int64_t w0 = 0; w0 < g->ctas; w0 += wave) {
            const int64_t w1 = w0 + wave < g->ctas ? w0 + wave : g->ctas;
            int64_t n = 0;
            for (int64_t c = w0; c < w1; c++) {
                const int64_t span = g->skew * (c - w0) + fl_gpu_cta_len(s, k, c);
                if (span > n) n = span;
            }
            if (!fl_mul_ok(n, w1 - w0, &t) || !fl_add_ok(st, t, &st)) st = INT64_MAX;
        }
    }
    *steps = st;
    if (st > cap) return 1;
    /* the lookups, along the walk itself (at most cap - st of them are counted) */
    work_ctx w = {sector, sector > 0 ? l2_bytes / sector : 0, cap - st, 0, {0}, 0, 0};
    for (int k = 0; k < s->nkernels && w.lookups <= w.budget; k++) {
        w.have_last = 0;
        fl_gpu_walk(s, k, count_visit, &w);
    }
    *lookups = w.lookups;
    return w.lookups > w.budget;
}
