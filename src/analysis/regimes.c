/* regimes.c: figure (g)'s grid and the per-regime summary (see regimes.h). */
#include <flashlab/regimes.h>

#include <errno.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <flashlab/output.h>
#include <flashlab/pool.h>
#include <flashlab/schedule.h>
#include <flashlab/version.h>

#define REGIME_N 4096

static const int64_t dims[] = {64, 128};
static const fl_pass passes[] = {FL_PASS_FWD, FL_PASS_BWD};

int fl_regime_scheds(fl_algo *out)
{
    int n = 0;
    for (int a = 0; a < fl_schedule_count(); a++) {
        const fl_schedule *s = fl_schedule_get((fl_algo)a);
        if (!(s->search[0] || s->search[1]) || (s->flags & FL_SCHED_STACKS_GROUP)) continue;
        int same = 0; /* the forward loop and block rule of one drawn already: on a dense head the
                         same counts (standard-skip differs from standard under masks only) */
        for (int k = 0; k < n; k++) {
            const fl_schedule *t = fl_schedule_get(out[k]);
            same |= t->fwd == s->fwd && t->blocks == s->blocks;
        }
        if (!same) out[n++] = (fl_algo)a;
    }
    return n;
}

static const char *pass_name(fl_pass p) { return p == FL_PASS_FWD ? "fwd" : "bwd"; }

/* The pass's blocks of the optimum. */
static int64_t opt_br(const fl_regime_point *p) { return p->pass == FL_PASS_FWD ? p->opt.best.Br : p->opt.best.Br_bwd; }
static int64_t opt_bc(const fl_regime_point *p) { return p->pass == FL_PASS_FWD ? p->opt.best.Bc : p->opt.best.Bc_bwd; }

/* The grid, computed once per process (under the lock, so two threads asking at once compute it
 * once). */
static fl_regime_point *store;
static size_t nstore;
static pthread_mutex_t store_lock = PTHREAD_MUTEX_INITIALIZER;

fl_status fl_regime_point_at(fl_regime_point *pt)
{
    fl_problem p = fl_problem_default();
    p.N = pt->N, p.d = pt->d, p.M = pt->M, p.pass = pt->pass;
    FL_TRY(fl_optimize(&p, 1, FL_OPT_MAX_WORK, &pt->opt)); /* runs the compared schedules too */
    fl_algo sched[FL_ALGO_MAX];
    const int ns = fl_regime_scheds(sched);
    for (int k = 0; k < ns; k++) {
        fl_result r;
        int i = 0;
        pt->count[k] = -1;
        p.algo = sched[k];
        if (!fl_schedule_get(p.algo)->search[pt->pass == FL_PASS_BWD]) continue; /* not in the pass's family */
        while (i < pt->opt.ncompared && pt->opt.compared[i].algo != p.algo) i++;
        if (i < pt->opt.ncompared) { /* executed by fl_optimize */
            if (pt->opt.compared[i].have) pt->count[k] = pt->opt.compared[i].r.total;
            continue;
        }
        const fl_status s = fl_run(&p, FL_COUNT, NULL, NULL, &r);
        if (s == FL_ECAPACITY) continue; /* its smallest tiles do not fit: no point */
        if (s) return s;
        if (r.total != r.closed.total)
            return fl_fail(FL_EBOUNDS, "regimes: %s at d = %" PRId64 ", M = %" PRId64 " counted %" PRId64
                                       ", its closed form says %" PRId64,
                           fl_algo_name(p.algo), pt->d, pt->M, r.total, r.closed.total);
        pt->count[k] = r.total;
    }
    return FL_OK;
}

/* The points run as tasks of a pool (pool.h): each one's error, taken in grid order. */
typedef struct {
    fl_regime_point *pt;
    fl_pool_status st;
} point_slot;

static void point_work(void *vslot, void *ctx)
{
    point_slot *s = vslot;
    fl_pool_keep(&s->st, fl_regime_point_at(s->pt));
}

static fl_status point_done(int64_t i, void *vslot, void *ctx) { return fl_pool_raise(&((const point_slot *)vslot)->st); }

/* Computes the points v[0..n) with fl_regime_point_at on a pool (pool.h's default jobs); the first
 * error in grid order. */
static fl_status run_points(fl_regime_point *v, size_t n)
{
    fl_pool *pool;
    fl_status s = fl_pool_open(fl_pool_jobs_or_default(0), sizeof(point_slot), (int)n, point_work, point_done, NULL,
                               NULL, &pool);
    for (size_t j = 0; j < n && !s; j++) {
        point_slot x = {.pt = &v[j]};
        s = fl_pool_submit(pool, &x);
    }
    const fl_status c = s ? FL_OK : fl_pool_close(pool);
    if (s) fl_pool_close(pool);
    return s ? s : c;
}

/* Computes the grid into a new array (the points on all cores, pool.h's default jobs). */
static fl_status compute(fl_regime_point **out, size_t *n)
{
    size_t cap = 0, k = 0;
    for (int ip = 0; ip < 2; ip++)
        for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
            for (int64_t M = dims[i]; M <= REGIME_N * dims[i]; M *= 2) cap++;
    fl_regime_point *v = calloc(cap, sizeof *v);
    if (!v) return fl_fail(FL_ENOMEM, "figure (g): out of memory");
    for (int ip = 0; ip < 2; ip++)
        for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
            for (int64_t M = dims[i]; M <= REGIME_N * dims[i]; M *= 2, k++)
                v[k].N = REGIME_N, v[k].d = dims[i], v[k].M = M, v[k].pass = passes[ip];
    const fl_status s = run_points(v, cap);
    if (s) {
        free(v);
        return s;
    }
    *out = v, *n = cap;
    return FL_OK;
}

fl_status fl_regimes_keep(fl_regime_point *v, size_t n, fl_regime_point **store, size_t *nstore)
{
    const fl_status s = run_points(v, n);
    if (s) {
        free(v);
        return s;
    }
    *store = v, *nstore = n;
    return FL_OK;
}

fl_status fl_regimes_collect(const fl_regime_point **pts, size_t *n)
{
    fl_status s = FL_OK;
    pthread_mutex_lock(&store_lock);
    if (!store) {
        fl_regime_point *v = NULL;
        size_t k = 0;
        if (!(s = compute(&v, &k))) store = v, nstore = k;
    }
    if (!s) *pts = store, *n = nstore;
    pthread_mutex_unlock(&store_lock);
    return s;
}

static void cell(FILE *f, int64_t v)
{
    if (v < 0) fputs(",-", f);
    else fprintf(f, ",%" PRId64, v);
}

fl_status fl_regimes_write_csv(FILE *f, const fl_regime_point *pts, size_t n)
{
    fprintf(f, "# flashlab %s: figure (g), HBM traffic (elements) of the count-only machine against M on both sides "
               "of M = d^2\n# forward and backward (pass bwd: the backward alone), one dense head, N = %d; each schedule "
               "at its default rule (flashlab count),\n# the optimum of flashlab optimize (docs/model.md §7), the lower "
               "bound of docs/bounds.md (floor: LB0, product: LB1);\n# '-': the schedule's smallest tiles do not fit\n",
            FLASHLAB_VERSION, REGIME_N);
    return fl_regimes_write_rows(f, pts, n, "figure (g)");
}

fl_status fl_regimes_write_rows(FILE *f, const fl_regime_point *pts, size_t n, const char *what)
{
    fl_algo sched[FL_ALGO_MAX];
    const int ns = fl_regime_scheds(sched);
    fputs("N,d,M,pass", f);
    for (int k = 0; k < ns; k++) fprintf(f, ",%s", fl_algo_name(sched[k]));
    fputs(",optimum,optimum_algo,opt_Br,opt_Bc,lower_bound,floor,product\n", f);
    for (size_t i = 0; i < n; i++) {
        const fl_regime_point *p = &pts[i];
        fprintf(f, "%" PRId64 ",%" PRId64 ",%" PRId64 ",%s", p->N, p->d, p->M, pass_name(p->pass));
        for (int k = 0; k < ns; k++) cell(f, p->count[k]);
        fprintf(f, ",%" PRId64 ",%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 "\n", p->opt.best.total,
                fl_algo_name(p->opt.best.algo), opt_br(p), opt_bc(p), p->opt.lb.bound, p->opt.lb.floor, p->opt.lb.product);
    }
    return ferror(f) ? fl_fail(FL_EIO, "%s: writing its data failed", what) : FL_OK;
}

static double ratio(int64_t a, int64_t b) { return b > 0 ? (double)a / (double)b : 0.0; }

/* M / d^2 as a short text: 1/64, 1/4, 1, 16 when exact, else three digits (0.96, 10.7). */
static void fraction(char *buf, size_t n, int64_t M, int64_t d)
{
    if (M >= d * d && M % (d * d) == 0) snprintf(buf, n, "%" PRId64, M / (d * d));
    else if (M < d * d && (d * d) % M == 0) snprintf(buf, n, "1/%" PRId64, d * d / M);
    else snprintf(buf, n, "%.3g", (double)M / ((double)d * (double)d));
}

void fl_regimes_print_header(FILE *out, int ns, const fl_algo *sched, int *width)
{
    fprintf(out, "  %4s %8s %6s  %-22s %12s %6s ", "d", "M", "M/d^2", "optimum (Br x Bc)", "lower bound", "/bound");
    for (int k = 0; k < ns; k++) {
        const int len = (int)strlen(fl_algo_name(sched[k]));
        width[k] = len > 7 ? len : 7;
        fprintf(out, " %*s", width[k], fl_algo_name(sched[k]));
    }
    fputc('\n', out);
}

void fl_regimes_print_row(FILE *out, const fl_regime_point *p, int ns, const int *width)
{
    char fr[24], op[40], cs[16];
    fraction(fr, sizeof fr, p->M, p->d);
    snprintf(op, sizeof op, "%s %" PRId64 " x %" PRId64, fl_algo_name(p->opt.best.algo), opt_br(p), opt_bc(p));
    fprintf(out, "  %4" PRId64 " %8" PRId64 " %6s  %-22s %12" PRId64 " %6.2f ", p->d, p->M, fr, op, p->opt.lb.bound,
            ratio(p->opt.best.total, p->opt.lb.bound));
    for (int k = 0; k < ns; k++) {
        if (p->count[k] < 0) snprintf(cs, sizeof cs, "-");
        else snprintf(cs, sizeof cs, "%.1f", ratio(p->count[k], p->opt.lb.bound));
        fprintf(out, " %*s", width[k], cs);
    }
    fputc('\n', out);
}

void fl_regimes_print(FILE *out, const fl_regime_point *pts, size_t n)
{
    fl_algo sched[FL_ALGO_MAX];
    int width[FL_ALGO_MAX];
    const int ns = fl_regime_scheds(sched);
    for (int ip = 0; ip < 2; ip++) {
        const fl_pass pass = passes[ip];
        fprintf(out, "\nOptimum and lower bound on both sides of M = d^2, %s (figure (g); one head, N = %d; optimum of\n"
                     "flashlab optimize, bound of docs/bounds.md; each schedule at its default rule, over the bound):\n",
                pass == FL_PASS_FWD ? "forward" : "backward", REGIME_N);
        fl_regimes_print_header(out, ns, sched, width);
        for (size_t i = 0; i < n; i++) {
            const fl_regime_point *p = &pts[i];
            if (p->pass != pass) continue;
            int64_t q = p->M / p->d; /* print M = d 4^k */
            while (q > 1 && q % 4 == 0) q /= 4;
            if (q != 1 && !(p->M == p->N * p->d)) continue;
            fl_regimes_print_row(out, p, ns, width);
        }
        for (int large = 0; large < 2; large++) {
            char names[128] = "";
            double lo = 0, hi = 0;
            int any = 0;
            for (size_t i = 0; i < n; i++) {
                const fl_regime_point *p = &pts[i];
                if (p->pass != pass || (p->M >= p->d * p->d) != large) continue;
                const double r = ratio(p->opt.best.total, p->opt.lb.bound);
                const char *a = fl_algo_name(p->opt.best.algo);
                if (!strstr(names, a)) snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", *names ? ", " : "", a);
                lo = any ? (r < lo ? r : lo) : r, hi = any ? (r > hi ? r : hi) : r, any = 1;
            }
            if (any)
                fprintf(out, "  %s, %s: optimal %s; the optimum is %.2f to %.2f times the lower bound\n",
                        pass == FL_PASS_FWD ? "forward" : "backward",
                        large ? "M >= d^2 (large cache)" : "M <  d^2 (small cache)", names, lo, hi);
        }
    }
}

fl_status fl_regimes_write_path(const char *path)
{
    const fl_regime_point *pts;
    size_t n;
    FL_TRY(fl_regimes_collect(&pts, &n));
    FILE *f = fopen(path, "w");
    if (!f) return fl_fail(FL_EIO, "figures: cannot write %s (%s)", fl_shown(path), strerror(errno));
    const fl_status e = fl_regimes_write_csv(f, pts, n);
    const fl_status c = fl_output_close_staged(f, "figures", path);
    return e ? e : c;
}

void fl_regimes_gnuplot_vars(const char *scripts, char *vars, size_t n)
{
    char gpu[4200];
    snprintf(gpu, sizeof gpu, "%s/data/gpu_validate.csv", scripts);
    FILE *f = fopen(gpu, "r");
    if (f) fclose(f);
    snprintf(vars, n, "gpu='%s'", f ? gpu : "");
}
