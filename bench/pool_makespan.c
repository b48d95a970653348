/* pool_makespan.c: what --jobs J can buy, from each task's own CPU time.
 *
 *   cc -O2 -Iinclude -Iinclude/flashlab bench/pool_makespan.c build/src/libflashlab.a -lgsl -lgslcblas -lm -lpthread \
 *      -o /tmp/pool_makespan && /tmp/pool_makespan [JOBS]
 *
 * (bench/parallel_bench.sh builds and runs it.)  Runs, one at a time on this thread, every task
 * the pool runs for the two workloads of parallel_bench.sh -- the 1,000 configurations of its
 * sweep; the report's default sweep, d sweep, figure (g)'s grid and the sweeps of figures
 * (a)-(c) -- and times each with this
 * thread's CPU clock (CLOCK_THREAD_CPUTIME_ID: the time the task ran, not the time it waited
 * for a core, so a shared machine inflates it only through caches).  Then it replays the pool
 * of include/flashlab/pool.h on those times with JOBS workers (default 2): tasks start in order
 * as workers free up, at most `window` tasks past the oldest one not yet taken, each phase
 * (a sweep, the grid) after the previous one.  Printed: the tasks' CPU sum, the replayed
 * makespan and their ratio, the speedup an idle JOBS-core machine can give these phases; the
 * report's other work (table, fits, examples, figures) is serial and is added by
 * parallel_bench.sh from its measured CPU time.  A model of the schedule, not a measurement of
 * wall time. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <flashlab/optimize.h>
#include <flashlab/regimes.h>
#include <flashlab/run.h>
#include <flashlab/sweep.h>

static double thread_cpu(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

typedef struct {
    double *t;
    int n, cap;
} times;

static void push(times *x, double v)
{
    if (x->n == x->cap) {
        x->cap = x->cap ? 2 * x->cap : 1024;
        x->t = realloc(x->t, (size_t)x->cap * sizeof *x->t);
        if (!x->t) exit(1);
    }
    x->t[x->n++] = v;
}

/* A sweep's tasks, as fl_sweep_run's workers run them: fl_run of each configuration that runs
 * (those skipped cost next to nothing); their CPU times into x, their sum returned. */
static double sweep_phase(fl_sweep_spec s, times *x)
{
    /* the configurations that run, in sweep order, each timed again on this thread */
    fl_table t = {0};
    s.jobs = 1;
    if (fl_sweep_collect(&s, &t, NULL)) exit(1);
    double sum = 0;
    for (size_t i = 0; i < t.n; i++) {
        fl_problem p = s.base ? *s.base : fl_problem_default();
        p.algo = t.p[i].algo, p.N = t.p[i].N, p.d = t.p[i].d, p.M = t.p[i].M;
        p.Br = t.p[i].Br, p.Bc = t.p[i].Bc; /* the blocks the run chose: the same run */
        p.elem_bytes = s.elem_bytes, p.max_events = s.max_events;
        fl_result r;
        const double a = thread_cpu();
        if (fl_run(&p, FL_COUNT, NULL, NULL, &r)) exit(1);
        const double d = thread_cpu() - a;
        push(x, d), sum += d;
    }
    fl_table_free(&t);
    return sum;
}

/* Replays the pool on times t[0..n): JOBS workers, tasks started in order on the first free
 * worker; task i is queued once task i - window has been taken, and tasks are taken in order,
 * each when it and every earlier one have ended. */
static double makespan(const double *t, int n, int jobs, int window)
{
    double *free_at = calloc((size_t)jobs, sizeof *free_at), *taken_at = calloc((size_t)n + 1, sizeof *taken_at), last = 0;
    for (int i = 0; i < n; i++) {
        int w = 0;
        for (int k = 1; k < jobs; k++)
            if (free_at[k] < free_at[w]) w = k;
        double start = free_at[w];
        if (i >= window && taken_at[i - window] > start) start = taken_at[i - window];
        const double end = start + t[i];
        free_at[w] = end;
        taken_at[i] = i && taken_at[i - 1] > end ? taken_at[i - 1] : end; /* in order */
        if (taken_at[i] > last) last = taken_at[i];
    }
    free(free_at), free(taken_at);
    return last;
}

/* One point of figure (g)'s grid as regimes.c computes it: optimize, then each drawn schedule
 * that optimize did not already run.  Its CPU time. */
static double grid_point(int64_t d, int64_t M)
{
    fl_problem p = fl_problem_default();
    fl_opt o;
    fl_algo sched[FL_ALGO_MAX];
    const double t0 = thread_cpu();
    p.N = 4096, p.d = d, p.M = M;
    fl_optimize(&p, 1, FL_OPT_MAX_WORK, &o);
    const int ns = fl_regime_scheds(sched);
    for (int k = 0; k < ns; k++) {
        int i = 0;
        fl_result r;
        while (i < o.ncompared && o.compared[i].algo != sched[k]) i++;
        if (i < o.ncompared) continue;
        p.algo = sched[k];
        fl_run(&p, FL_COUNT, NULL, NULL, &r);
    }
    return thread_cpu() - t0;
}

int main(int argc, char **argv)
{
    const int jobs = argc > 1 ? atoi(argv[1]) : 2;
    static const int64_t sN[] = {4096, 8192, 16384, 32768, 65536}, sd[] = {16, 32, 64, 128};
    static int64_t sM[25];
    for (int i = 0; i < 25; i++) sM[i] = 4096 * (i + 1);
    fl_sweep_spec s = fl_sweep_spec_init();
    fl_algo a;
    s.nalgos = 0;
    fl_algo_parse("flash1", &a), s.algos[s.nalgos++] = a; /* bench/parallel_bench.sh's sweep */
    fl_algo_parse("flash2", &a), s.algos[s.nalgos++] = a;
    s.N = sN, s.nN = 5, s.d = sd, s.nd = 4, s.M = sM, s.nM = 25;
    times sw = {0}, rs = {0}, ds = {0}, rg = {0};
    const double sum_sw = sweep_phase(s, &sw);
    const double sum_rs = sweep_phase(fl_sweep_spec_report(), &rs);
    static const int64_t dN[] = {65536}, dM[] = {524288}, dd[] = {16, 32, 64, 128, 256};
    fl_sweep_spec d = fl_sweep_spec_init(); /* the d sweep of bound and report */
    d.N = dN, d.nN = 1, d.M = dM, d.nM = 1, d.d = dd, d.nd = 5;
    const double sum_ds = sweep_phase(d, &ds);
    /* the sweeps of figures (a)-(c) (cli/cmd_plot.c's fl_figures_write), each its own phase */
    static const int64_t fa_N[] = {1024, 4096, 16384}, f64[] = {64}, fb_M[] = {98304}, fc_N[] = {1024};
    static int64_t fa_M[10], fb_N[8], fc_Bc[28];
    for (int i = 0; i < 10; i++) fa_M[i] = INT64_C(2048) << i;
    for (int i = 0; i < 8; i++) fb_N[i] = INT64_C(512) << i;
    for (int i = 0; i < 28; i++) fc_Bc[i] = 16 * (i + 1);
    fl_sweep_spec fa = fl_sweep_spec_init(), fb = fl_sweep_spec_init(), fc = fl_sweep_spec_init();
    fa.N = fa_N, fa.nN = 3, fa.d = f64, fa.nd = 1, fa.M = fa_M, fa.nM = 10, fa.M_upto_Nd = 1;
    fb.N = fb_N, fb.nN = 8, fb.d = f64, fb.nd = 1, fb.M = fb_M, fb.nM = 1;
    fc.nalgos = 0;
    fl_algo_parse("flash1", &a), fc.algos[fc.nalgos++] = a;
    fl_algo_parse("flash2", &a), fc.algos[fc.nalgos++] = a;
    fc.N = fc_N, fc.nN = 1, fc.d = f64, fc.nd = 1, fc.M = fb_M, fc.nM = 1, fc.Bc = fc_Bc, fc.nBc = 28;
    times fta = {0}, ftb = {0}, ftc = {0};
    const double sum_f = sweep_phase(fa, &fta) + sweep_phase(fb, &ftb) + sweep_phase(fc, &ftc);
    /* figure (g)'s grid, point by point as regimes.c's pool runs it (N = 4096, d = 64 and 128,
     * M = d .. Nd, x2) */
    double sum_rg = 0;
    static const int64_t gd[] = {64, 128};
    for (int i = 0; i < 2; i++)
        for (int64_t M = gd[i]; M <= 4096 * gd[i]; M *= 2) {
            const double dt = grid_point(gd[i], M);
            push(&rg, dt), sum_rg += dt;
        }
    const double m_sw = makespan(sw.t, sw.n, jobs, FL_SWEEP_WINDOW(jobs));
    const double m_rep = makespan(rs.t, rs.n, jobs, FL_SWEEP_WINDOW(jobs)) + makespan(ds.t, ds.n, jobs, FL_SWEEP_WINDOW(jobs)) +
                         makespan(rg.t, rg.n, jobs, rg.n) + makespan(fta.t, fta.n, jobs, FL_SWEEP_WINDOW(jobs)) +
                         makespan(ftb.t, ftb.n, jobs, FL_SWEEP_WINDOW(jobs)) + makespan(ftc.t, ftc.n, jobs, FL_SWEEP_WINDOW(jobs));
    const double sum_rep = sum_rs + sum_ds + sum_rg + sum_f;
    printf("sweep: %d tasks, CPU %.2f s; replayed on %d workers: %.2f s; speedup %.2fx\n", sw.n, sum_sw, jobs, m_sw,
           sum_sw / m_sw);
    printf("report's parallel phases (its sweep, the d sweep, figure (g)'s grid, the sweeps of figures (a)-(c)): "
           "%d tasks, CPU %.2f s; replayed on %d workers: %.2f s; speedup %.2fx\n",
           rs.n + ds.n + rg.n + fta.n + ftb.n + ftc.n, sum_rep, jobs, m_rep, sum_rep / m_rep);
    printf("report_parallel_cpu %.3f report_parallel_makespan %.3f\n", sum_rep, m_rep);
    return 0;
}
