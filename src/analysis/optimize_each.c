/* optimize_each.c: fl_optimize over a list of problems on all cores (see optimize.h, pool.h). */
#include <flashlab/optimize.h>

#include <flashlab/pool.h>

typedef struct {
    int k;
    fl_pool_status st;
} each_slot;

typedef struct {
    const fl_problem *p;
    fl_opt *out;
    int top;
    int64_t max_work;
} each_ctx;

static void each_work(void *vslot, void *vctx)
{
    each_slot *s = vslot;
    const each_ctx *c = vctx;
    fl_pool_keep(&s->st, fl_optimize(&c->p[s->k], c->top, c->max_work, &c->out[s->k]));
}

static fl_status each_done(int64_t i, void *vslot, void *vctx)
{
    return fl_pool_raise(&((const each_slot *)vslot)->st);
}

fl_status fl_optimize_each(const fl_problem *p, int n, int top, int64_t max_work, int jobs, fl_opt *out)
{
    each_ctx c = {p, out, top, max_work};
    fl_pool *pool;
    jobs = fl_pool_jobs_or_default(jobs);
    FL_TRY(fl_pool_open(jobs < n ? jobs : (n > 0 ? n : 1), sizeof(each_slot), 4 * jobs, each_work, each_done, NULL, &c,
                        &pool));
    fl_status e = FL_OK;
    for (int k = 0; k < n && !e; k++) {
        each_slot s = {.k = k};
        e = fl_pool_submit(pool, &s);
    }
    const fl_status f = fl_pool_close(pool);
    return e ? e : f;
}
