/* sweep.c: grids of count-only runs (see sweep.h). */
#include <flashlab/sweep.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const int64_t zero = 0;

fl_sweep_spec fl_sweep_spec_init(void)
{
    fl_sweep_spec s;
    memset(&s, 0, sizeof s);
    for (int a = 0; a <= FL_ALGO_FLASH2; a++) s.algos[s.nalgos++] = a; /* the forward three */
    s.elem_bytes = fl_problem_default().elem_bytes;
    s.max_events = fl_problem_default().max_events;
    return s;
}

fl_sweep_spec fl_sweep_spec_report(void)
{
    static const int64_t N[] = {512, 1024, 2048, 4096, 8192, 16384, 32768, 65536};
    static const int64_t d[] = {64, 128};
    static int64_t M[12];
    for (int i = 0; i < 12; i++) M[i] = INT64_C(4096) << i; /* 4096 .. 8388608 = 65536*128 */
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
    if (s->nalgos < 1) return fl_fail(FL_EINVAL, "--algo: the sweep needs at least one schedule");
    if (s->nN < 1) return fl_fail(FL_EINVAL, "--N: the sweep needs at least one value");
    if (s->nd < 1) return fl_fail(FL_EINVAL, "--d: the sweep needs at least one value");
    if (s->nM < 1) return fl_fail(FL_EINVAL, "--M: the sweep needs at least one value");
    const int nBr = s->Br ? s->nBr : 1, nBc = s->Bc ? s->nBc : 1;
    if (nBr < 1 || nBc < 1) return fl_fail(FL_EINVAL, "--Br/--Bc: the sweep needs at least one value");
    int64_t n = 0, grid = s->nalgos;
    const int64_t dims[] = {s->nN, s->nd, s->nM, nBr, nBc};
    for (int i = 0; i < 5; i++)
        if (!fl_mul_ok(grid, dims[i], &grid) || grid > FL_SWEEP_MAX_CONFIGS) /* before any loop */
            return fl_fail(FL_EINVAL,
                           "--algo/--N/--d/--M/--Br/--Bc: the grid of %d x %d x %d x %d x %d x %d values "
                           "has more than %lld configurations; split the sweep",
                           s->nalgos, s->nN, s->nd, s->nM, nBr, nBc, (long long)FL_SWEEP_MAX_CONFIGS);
    for (int i = 0; i < s->nN; i++)
        for (int j = 0; j < s->nd; j++)
            for (int k = 0; k < s->nM; k++) n += in_grid(s, s->N[i], s->d[j], s->M[k]);
    *configs = n * s->nalgos * nBr * nBc;
    return FL_OK;
}

/* Errors that mean "this configuration cannot run" rather than "the sweep is broken". */
static int skippable(fl_status st)
{
    return st == FL_ECAPACITY || st == FL_EINVAL || st == FL_EOVERFLOW;
}

fl_status fl_sweep_run(const fl_sweep_spec *s, const fl_sweep_sink *sink, fl_sweep_stats *stats)
{
    fl_sweep_stats st = {0, 0, 0, 0};
    FL_TRY(fl_sweep_size(s, &st.configs));
    const int64_t *Br = s->Br ? s->Br : &zero, *Bc = s->Bc ? s->Bc : &zero;
    const int nBr = s->Br ? s->nBr : 1, nBc = s->Bc ? s->nBc : 1;
    fl_problem p = s->base ? *s->base : fl_problem_default();
    p.elem_bytes = s->elem_bytes;
    p.max_events = s->max_events;
    fl_result r;
    int64_t done = 0;
    for (int a = 0; a < s->nalgos; a++)
        for (int i = 0; i < s->nN; i++)
            for (int j = 0; j < s->nd; j++)
                for (int k = 0; k < s->nM; k++) {
                    if (!in_grid(s, s->N[i], s->d[j], s->M[k])) continue;
                    for (int u = 0; u < nBr; u++)
                        for (int v = 0; v < nBc; v++) {
                            p.algo = (fl_algo)s->algos[a];
                            p.N = s->N[i];
                            p.d = s->d[j];
                            p.M = s->M[k];
                            p.Br = Br[u];
                            p.Bc = Bc[v];
                            fl_status e = fl_run(&p, FL_COUNT, NULL, NULL, &r);
                            if (e == FL_OK) {
                                st.rows++;
                                st.events += r.events;
                                if (sink && sink->row) sink->row(&r, sink->ctx);
                            } else if (skippable(e)) {
                                st.skipped++;
                                if (sink && sink->skip) sink->skip(&p, fl_last_error(), sink->ctx);
                            } else {
                                if (stats) *stats = st;
                                return e;
                            }
                            done++;
                            if (sink && sink->progress) sink->progress(done, st.configs, sink->ctx);
                        }
                }
    if (stats) *stats = st;
    return FL_OK;
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
    fl_sweep_sink sink = {collect_row, collect_skip, NULL, &c};
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
    int have_header = 0, pass_col = -1;
    while (fgets(line, sizeof line, in)) {
        ln++;
        size_t len = strlen(line);
        if (len == sizeof line - 1 && line[len - 1] != '\n')
            return fl_fail(FL_EINVAL, "%s:%ld: line longer than %zu characters", name, ln, sizeof line - 2);
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
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
        if (fl_algo_parse(f[0], &a)) return fl_fail(FL_EINVAL, "%s:%ld: unknown schedule '%s'", name, ln, f[0]);
        if (pass_col >= 0 && pass_col < n && strcmp(f[pass_col], "fwd") != 0)
            return fl_fail(FL_EINVAL, "%s:%ld: pass '%s': the fitted laws are about the forward pass (fwd rows only)",
                           name, ln, f[pass_col]);
        int64_t v[14];
        for (int i = 1; i < 14; i++)
            if (!to_i64(f[i], &v[i]))
                return fl_fail(FL_EINVAL, "%s:%ld: column %d ('%s') is not a non-negative integer", name, ln, i + 1, f[i]);
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
    if (ferror(in)) return fl_fail(FL_EIO, "%s: read error", name);
    if (!have_header) return fl_fail(FL_EINVAL, "%s: no CSV header (is it the output of flashlab sweep?)", name);
    return FL_OK;
}
