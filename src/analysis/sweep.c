/* sweep.c: grids of count-only runs (see sweep.h). */
#include "analysis/csv_line.h"
#include <flashlab/sweep.h>

#include <errno.h>
#include <stdio.h>

#include <flashlab/pool.h>
#include <flashlab/schedule.h>
#include <stdlib.h>
#include <string.h>

static const int64_t zero = 0;

fl_sweep_spec fl_sweep_spec_init(void)
{
    fl_sweep_spec s;
    memset(&s, 0, sizeof s);
    fl_algo all[FL_ALGO_MAX];
    s.nalgos = fl_algos_all(NULL, all); /* the registry's "all" of one head */
    for (int k = 0; k < s.nalgos; k++) s.algos[k] = (int)all[k];
    s.elem_bytes = fl_problem_default().elem_bytes;
    s.max_events = fl_problem_default().max_events;
    s.max_total_events = FL_SWEEP_MAX_TOTAL_EVENTS;
    return s;
}

fl_sweep_spec fl_sweep_spec_report(void)
{
    static const int64_t N[] = {512, 1024, 2048, 4096, 8192, 16384, 32768, 65536};
    static const int64_t d[] = {64, 128};
    static const int64_t M[12] = {4096,   8192,   16384,  32768,   65536,   131072, /* 4096 .. 8388608 = */
                                  262144, 524288, 1048576, 2097152, 4194304, 8388608}; /* 65536*128 (x2) */
    fl_sweep_spec s = fl_sweep_spec_init();
    s.N = N;
    s.nN = 8;
    s.d = d;
    s.nd = 2;
    s.M = M;
    s.nM = 12;
    s.M_upto_Nd = 1;
    return s;
}

/* Whether M belongs to the grid at (N, d). */
static int in_grid(const fl_sweep_spec *s, int64_t N, int64_t d, int64_t M)
{
    int64_t Nd;
    if (!s->M_upto_Nd) return 1;
    return !fl_mul_ok(N, d, &Nd) || M <= Nd;
}

fl_status fl_sweep_size(const fl_sweep_spec *s, int64_t *configs)
{
    if (s->nalgos < 1) return fl_fail(FL_EINVAL, "{algo}: the sweep needs at least one schedule");
    if (s->nN < 1) return fl_fail(FL_EINVAL, "{N}: the sweep needs at least one value");
    if (s->nd < 1) return fl_fail(FL_EINVAL, "{d}: the sweep needs at least one value");
    if (s->nM < 1) return fl_fail(FL_EINVAL, "{M}: the sweep needs at least one value");
    const int nBr = s->Br ? s->nBr : 1, nBc = s->Bc ? s->nBc : 1;
    if (nBr < 1 || nBc < 1) return fl_fail(FL_EINVAL, "{Br}/{Bc}: the sweep needs at least one value");
    if (s->nshards > 1 && (s->shard < 0 || s->shard >= s->nshards))
        return fl_fail(FL_EINVAL, "{shard}: shard %lld of %lld does not exist", (long long)s->shard + 1, (long long)s->nshards);
    int64_t n = 0, grid = s->nalgos;
    const int64_t dims[] = {s->nN, s->nd, s->nM, nBr, nBc};
    for (int i = 0; i < 5; i++)
        if (!fl_mul_ok(grid, dims[i], &grid) || grid > FL_SWEEP_MAX_CONFIGS) /* before any loop */
            return fl_fail(FL_EINVAL,
                           "{algo}/{N}/{d}/{M}/{Br}/{Bc}: the grid of %d x %d x %d x %d x %d x %d values "
                           "has more than %lld configurations; split the sweep",
                           s->nalgos, s->nN, s->nd, s->nM, nBr, nBc, (long long)FL_SWEEP_MAX_CONFIGS);
    for (int i = 0; i < s->nN; i++)
        for (int j = 0; j < s->nd; j++)
            for (int k = 0; k < s->nM; k++) n += in_grid(s, s->N[i], s->d[j], s->M[k]);
    *configs = n * s->nalgos * nBr * nBc;
    return FL_OK;
}

int64_t fl_sweep_shard_size(const fl_sweep_spec *s, int64_t configs)
{
    if (s->nshards <= 1) return configs;
    return configs / s->nshards + (s->shard < configs % s->nshards);
}

/* A lower bound of p's tile events, as fl_run bounds them before walking a closed form: every
 * row block of every (sequence, stacked query-head group) stores its output (a schedule that
 * takes no heads runs one segment: batch = heads = 1).  Saturates at INT64_MAX. */
static int64_t events_lower_bound(const fl_problem *p, const fl_blocks *b)
{
    int64_t lb = 0, t;
    const int64_t segs = p->heads / fl_problem_group(p);
    if (!p->cu_seqlens_q)
        return fl_mul_ok(p->batch, segs, &t) && fl_mul_ok(t, fl_cdiv(p->N, b->Br), &t) ? t : INT64_MAX;
    for (int64_t k = 0; k < p->batch; k++)
        if (!fl_mul_ok(segs, fl_cdiv(p->cu_seqlens_q[k + 1] - p->cu_seqlens_q[k], b->Br), &t) || !fl_add_ok(lb, t, &lb))
            return INT64_MAX;
    return lb;
}

/* The tile events fl_run executes for p, or 0 when it refuses p. */
static int64_t config_events(const fl_problem *p)
{
    const int bwd = (p->pass & FL_PASS_BWD) != 0;
    fl_blocks b, bb;
    fl_counts cf, cb;
    int64_t ev = 0;
    if (fl_problem_check(p) || fl_blocks_choose(p, &b) || (bwd && fl_blocks_choose_pass(p, 1, &bb))) return 0;
    if (p->max_events > 0 && events_lower_bound(p, &b) > p->max_events) return 0;
    if (fl_closed_form_pass(p, 0, &b, &cf)) return 0;
    ev = cf.events;
    if (bwd && (fl_closed_form_pass(p, 1, &bb, &cb) || !fl_add_ok(ev, cb.events, &ev))) return 0;
    return p->max_events > 0 && ev > p->max_events ? 0 : ev;
}

/* Calls fn on the problem of every configuration of the grid that the spec's shard owns, in sweep
 * order, until it returns nonzero. */
static void for_each_config(const fl_sweep_spec *s, int (*fn)(const fl_problem *p, void *ctx), void *ctx)
{
    const int64_t *Br = s->Br ? s->Br : &zero, *Bc = s->Bc ? s->Bc : &zero;
    const int nBr = s->Br ? s->nBr : 1, nBc = s->Bc ? s->nBc : 1;
    fl_problem p = s->base ? *s->base : fl_problem_default();
    int64_t idx = -1; /* the configuration's number in the grid */
    const int64_t every = s->nshards > 1 ? s->nshards : 1, mine = s->nshards > 1 ? s->shard : 0;
    p.elem_bytes = s->elem_bytes;
    p.max_events = s->max_events;
    for (int a = 0; a < s->nalgos; a++)
        for (int i = 0; i < s->nN; i++)
            for (int j = 0; j < s->nd; j++)
                for (int k = 0; k < s->nM; k++) {
                    if (!in_grid(s, s->N[i], s->d[j], s->M[k])) continue;
                    for (int u = 0; u < nBr; u++)
                        for (int v = 0; v < nBc; v++) {
                            if (++idx % every != mine) continue;
                            p.algo = (fl_algo)s->algos[a];
                            p.N = s->N[i];
                            p.d = s->d[j];
                            p.M = s->M[k];
                            p.Br = Br[u];
                            p.Bc = Bc[v];
                            if (fn(&p, ctx)) return;
                        }
                }
}

static int add_events(const fl_problem *p, void *ctx)
{
    int64_t *sum = ctx;
    if (!fl_add_ok(*sum, config_events(p), sum)) *sum = INT64_MAX;
    return *sum == INT64_MAX;
}

fl_status fl_sweep_estimate(const fl_sweep_spec *s, int64_t *configs, int64_t *events)
{
    FL_TRY(fl_sweep_size(s, configs));
    *configs = fl_sweep_shard_size(s, *configs);
    *events = 0;
    for_each_config(s, add_events, events);
    return FL_OK;
}

/* Errors that mean "this configuration cannot run" rather than "the sweep is broken". */
static int skippable(fl_status st)
{
    return st == FL_ECAPACITY || st == FL_EINVAL || st == FL_EOVERFLOW;
}

/* One configuration in the pool (pool.h): its problem in, its result or error out. */
typedef struct {
    fl_problem p;
    fl_result r;
    fl_pool_status st;
} config_slot;

typedef struct {
    const fl_sweep_sink *sink;
    fl_sweep_stats st;
    fl_pool *pool;
    fl_status e;
} run_ctx;

/* Any thread: runs one configuration. */
static void run_work(void *vslot, void *vctx)
{
    config_slot *c = vslot;
    fl_pool_keep(&c->st, fl_run(&c->p, FL_COUNT, NULL, NULL, &c->r));
}

/* The sweep's thread, in sweep order: the row or the skip to the sink, or the error that stops
 * the sweep. */
static fl_status run_done(int64_t i, void *vslot, void *vctx)
{
    run_ctx *c = vctx;
    config_slot *x = vslot;
    const fl_sweep_sink *sink = c->sink;
    if (x->st.e == FL_OK) {
        c->st.rows++;
        c->st.events += x->r.events;
        if (sink && sink->row) sink->row(&x->r, sink->ctx);
    } else if (skippable(x->st.e)) {
        c->st.skipped++;
        if (sink && sink->skip) sink->skip(&x->p, x->st.why, sink->ctx); /* raw: the writer renders it */
    } else {
        return fl_pool_raise(&x->st);
    }
    return sink && sink->check ? sink->check(sink->ctx) : FL_OK;
}

static void run_progress(int64_t finished, void *vctx)
{
    run_ctx *c = vctx;
    c->sink->progress(finished, c->st.configs, c->sink->ctx);
}

static int run_submit(const fl_problem *p, void *vctx)
{
    run_ctx *c = vctx;
    config_slot x;
    x.p = *p;
    return (c->e = fl_pool_submit(c->pool, &x)) != FL_OK;
}

fl_status fl_sweep_check(const fl_sweep_spec *s, int64_t *configs)
{
    if (s->max_total_events <= 0) {
        FL_TRY(fl_sweep_size(s, configs));
        *configs = fl_sweep_shard_size(s, *configs);
        return FL_OK;
    }
    int64_t events;
    FL_TRY(fl_sweep_estimate(s, configs, &events));
    if (events <= s->max_total_events) return FL_OK;
    char n[48];
    if (events == INT64_MAX) snprintf(n, sizeof n, "more than %lld", (long long)INT64_MAX);
    else snprintf(n, sizeof n, "%lld", (long long)events);
    return fl_fail(FL_EINVAL,
                   "{max_total_events}: the %lld configurations of the sweep make %s tile events in all (%s), "
                   "more than the limit %lld; raise {max_total_events} or split the sweep",
                   (long long)*configs, n, fl_seconds_of(events, FL_EVENTS_PER_SECOND), (long long)s->max_total_events);
}

fl_status fl_sweep_run(const fl_sweep_spec *s, const fl_sweep_sink *sink, fl_sweep_stats *stats)
{
    run_ctx c = {sink, {0, 0, 0, 0}, NULL, FL_OK};
    if (stats) *stats = c.st;
    FL_TRY(fl_sweep_check(s, &c.st.configs));
    const int jobs = fl_pool_jobs_or_default(s->jobs);
    FL_TRY(fl_pool_open(jobs, sizeof(config_slot), FL_SWEEP_WINDOW(jobs), run_work, run_done,
                        sink && sink->progress ? run_progress : NULL, &c, &c.pool));
    for_each_config(s, run_submit, &c);
    const fl_status e = fl_pool_close(c.pool);
    if (stats) *stats = c.st;
    return c.e ? c.e : e;
}

typedef struct {
    fl_table *t;
    int failed;
} collect_ctx;

fl_status fl_table_add(fl_table *t, const fl_result *r)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 256;
        fl_point *q = realloc(t->p, cap * sizeof *q);
        if (!q) return fl_fail(FL_ENOMEM, "out of memory collecting the sweep");
        t->p = q;
        t->cap = cap;
    }
    fl_point *pt = &t->p[t->n++];
    pt->algo = r->p.algo;
    pt->N = r->p.N;
    pt->d = r->p.d;
    pt->M = r->p.M;
    pt->Br = r->b.Br;
    pt->Bc = r->b.Bc;
    pt->Bd = r->b.Bd;
    pt->reads = r->reads;
    pt->writes = r->writes;
    pt->total = r->total;
    pt->bytes = r->bytes;
    pt->events = r->events;
    pt->closed_total = r->closed.total;
    return FL_OK;
}

static void collect_row(const fl_result *r, void *vctx)
{
    collect_ctx *c = vctx;
    if (!c->failed && fl_table_add(c->t, r)) c->failed = 1;
}

static void collect_skip(const fl_problem *p, const char *reason, void *vctx)
{
    ((collect_ctx *)vctx)->t->skipped++;
}

fl_status fl_sweep_collect(const fl_sweep_spec *s, fl_table *t, fl_sweep_stats *stats)
{
    collect_ctx c = {t, 0};
    fl_sweep_sink sink = {collect_row, collect_skip, NULL, &c, NULL};
    FL_TRY(fl_sweep_run(s, &sink, stats));
    if (c.failed) return fl_fail(FL_ENOMEM, "out of memory collecting the sweep");
    return FL_OK;
}

void fl_table_free(fl_table *t)
{
    if (!t) return;
    free(t->p);
    memset(t, 0, sizeof *t);
}

const fl_point *fl_table_find(const fl_table *t, fl_algo a, int64_t N, int64_t d, int64_t M)
{
    for (size_t i = 0; i < t->n; i++) {
        const fl_point *p = &t->p[i];
        if (p->algo == a && p->N == N && p->d == d && p->M == M) return p;
    }
    return NULL;
}

/* Splits line (modified) at commas into at most cap fields; returns the count. */
static int split(char *line, char **f, int cap)
{
    int n = 0;
    for (char *p = line;;) {
        if (n == cap) return n + 1; /* too many: the caller only needs to know "more" */
        f[n++] = p;
        char *c = strchr(p, ',');
        if (!c) break;
        *c = 0;
        p = c + 1;
    }
    return n;
}

static int to_i64(const char *s, int64_t *v)
{
    char *end;
    if (!*s || *s == '-' || *s == '+') return 0;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || *end) return 0;
    *v = x;
    return 1;
}

fl_status fl_table_read_csv(FILE *in, const char *name, fl_table *t)
{
    static const char *const head = "algo,N,d,M,Br,Bc,hbm_reads,hbm_writes,hbm_total";
    char line[4096];
    char *f[40];
    long ln = 0;
    int64_t bytes = 0;
    int have_header = 0, pass_col = -1, got;
    fl_status err = FL_OK;
    char shown[FL_SHOWN_MAX + 4];
    snprintf(shown, sizeof shown, "%s", fl_shown(name));
    name = shown;
    while ((got = fl_csv_read_line(in, name, ln + 1, line, sizeof line, &bytes, FL_CSV_MAX_BYTES, "a sweep CSV flashlab reads",
                                    " (is it the output of flashlab sweep?)", &err)) == 1) {
        if (++ln > FL_CSV_MAX_LINES)
            return fl_fail(FL_EINVAL, "%s: more than %lld lines; not a sweep CSV flashlab reads", name,
                           (long long)FL_CSV_MAX_LINES);
        size_t len = strlen(line);
        while (len && line[len - 1] == '\r') line[--len] = 0;
        if (!len || line[0] == '#') continue;
        if (!have_header) {
            if (strncmp(line, head, strlen(head)) != 0)
                return fl_fail(FL_EINVAL, "%s:%ld: expected the header of `flashlab sweep` (%s,...)", name, ln, head);
            int n = split(line, f, 40);
            for (int i = 0; i < n && i < 40; i++)
                if (strcmp(f[i], "pass") == 0) pass_col = i;
            have_header = 1;
            continue;
        }
        int n = split(line, f, 40);
        if (n < 14) return fl_fail(FL_EINVAL, "%s:%ld: a row needs at least 14 columns (algo .. Bd), got %d", name, ln, n);
        fl_algo a;
        if (fl_algo_parse(f[0], &a)) return fl_fail(FL_EINVAL, "%s:%ld: unknown schedule '%s'", name, ln, fl_shown(f[0]));
        if (pass_col >= 0 && pass_col < n && strcmp(f[pass_col], "fwd") != 0)
            return fl_fail(FL_EINVAL, "%s:%ld: pass '%s': the fitted laws are about the forward pass (fwd rows only)",
                           name, ln, fl_shown(f[pass_col]));
        int64_t v[14];
        for (int i = 1; i < 14; i++)
            if (!to_i64(f[i], &v[i]))
                return fl_fail(FL_EINVAL, "%s:%ld: column %d ('%s') is not a non-negative integer", name, ln, i + 1,
                               fl_shown(f[i]));
        fl_result r;
        memset(&r, 0, sizeof r);
        r.p = fl_problem_default();
        r.p.algo = a;
        r.p.N = v[1], r.p.d = v[2], r.p.M = v[3];
        r.b.Br = v[4], r.b.Bc = v[5], r.b.Bd = v[13];
        r.reads = v[6], r.writes = v[7], r.total = v[8];
        r.sram_peak = v[9], r.closed.total = v[10], r.bytes = v[11], r.events = v[12];
        if (r.p.N < 1 || r.p.d < 1 || r.p.M < 1 || r.total < 1)
            return fl_fail(FL_EINVAL, "%s:%ld: N, d, M and hbm_total must be >= 1", name, ln);
        FL_TRY(fl_table_add(t, &r));
    }
    if (got < 0) return err;
    if (!have_header) return fl_fail(FL_EINVAL, "%s: no CSV header (is it the output of flashlab sweep?)", name);
    return FL_OK;
}
