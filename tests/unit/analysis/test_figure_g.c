/* test_figure_g.c: figure (g) and the per-regime summary.  The gnuplot script draws figure (g)'s
 * data in the three formats; in the data every schedule and the optimum lie on or above
 * the lower bound, the optimum on or below every schedule; forward, smallcache is the optimum
 * below d^2 and flash2 from d^2 on, and the optimum falls like M^-1/2 below d^2 and like M^-1
 * above (docs/analysis.md §5, §6); the optimum is within 4 times the bound forward and 8 times
 * backward at every M (docs/bounds.md §3).
 * the report prints the summary per regime (its other lines are test_report's); `flashlab bound`
 * fits the slope in d on the grid it is given. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_runner.h"
#include "disk.h"
#include "regimes.h" /* the figure's grid and summary, as `plot` and `report` run them */

typedef struct {
    long long N, d, M, s[4], opt, Br, Bc, lb;
    char algo[32], pass[8];
} row;

/* The next comma-separated token of *p (the row is consumed in place). */
static char *token(char **p)
{
    char *t = *p, *c = t ? strchr(t, ',') : NULL;
    cr_assert(t, "short row");
    if (c) *c = 0, *p = c + 1;
    else *p = NULL;
    return t;
}

/* Reads "-" as -1. */
static long long field(char **p)
{
    const char *t = token(p);
    return strcmp(t, "-") == 0 ? -1 : atoll(t);
}

/* Least squares slope of ln(opt) against ln(M) over the rows of the pass and d with lo <= M <= hi. */
static double slope(const row *r, int n, const char *pass, long long d, long long lo, long long hi)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(r[i].pass, pass) || r[i].d != d || r[i].M < lo || r[i].M > hi) continue;
        const double x = log((double)r[i].M), y = log((double)r[i].opt);
        sx += x, sy += y, sxx += x * x, sxy += x * y, k++;
    }
    cr_assert_geq(k, 3);
    return (k * sxy - sx * sy) / (k * sxx - sx * sx);
}

/* Figure (g)'s grid, computed in this process (src/analysis/regimes.c, the code `plot` and `report` run),
 * written as its CSV and read back; the summary the report prints; the gnuplot script on it. */
Test(figure_g, its_data_obey_the_bound_and_the_script_draws_them)
{
    fl_time_limit(FL_T(600));
    const fl_regime_point *pts;
    size_t npts;
    cr_assert_eq(fl_regimes_collect(&pts, &npts), FL_OK, "%s", fl_last_error());
    char dir[] = "/tmp/flashlab-figg-XXXXXX", path[256], cmd[1024];
    cr_assert(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/fig_g_bounds_vs_M.csv", dir);
    cr_assert_eq(fl_regimes_write_path(path), FL_OK, "%s", fl_last_error());

    FILE *f = fopen(path, "r");
    cr_assert(f, "%s", path);
    static row rows[64];
    int n = 0;
    char line[512];
    while (fgets(line, sizeof line, f) && n < 64) {
        if (line[0] == '#' || line[0] == 'N') continue;
        char *p = line;
        row *w = &rows[n++];
        w->N = field(&p), w->d = field(&p), w->M = field(&p);
        snprintf(w->pass, sizeof w->pass, "%s", token(&p));
        for (int k = 0; k < 4; k++) w->s[k] = field(&p);
        w->opt = field(&p);
        snprintf(w->algo, sizeof w->algo, "%s", token(&p));
        w->Br = field(&p), w->Bc = field(&p), w->lb = field(&p);
    }
    fclose(f);
    cr_assert_eq(n, 52, "13 values of M at each of d = 64 and 128, forward and backward");
    for (int i = 0; i < n; i++) {
        const row *w = &rows[i];
        const int fwd = strcmp(w->pass, "fwd") == 0;
        cr_assert(fwd || strcmp(w->pass, "bwd") == 0, "pass %s", w->pass);
        cr_assert_geq(w->opt, w->lb, "%s d %lld M %lld", w->pass, w->d, w->M);
        cr_assert_leq(w->opt, (fwd ? 4 : 8) * w->lb, "%s d %lld M %lld: optimum %lld, bound %lld", w->pass, w->d, w->M,
                      w->opt, w->lb);
        for (int k = 0; k < 4; k++)
            if (w->s[k] >= 0) {
                cr_assert_geq(w->s[k], w->lb, "%s d %lld M %lld schedule %d", w->pass, w->d, w->M, k);
                cr_assert_leq(w->opt, w->s[k], "%s d %lld M %lld schedule %d", w->pass, w->d, w->M, k);
            }
        if (fwd && w->M < w->d * w->d) cr_assert_str_eq(w->algo, "smallcache", "d %lld M %lld", w->d, w->M);
        if (fwd && w->M >= w->d * w->d) cr_assert_str_eq(w->algo, "flash2", "d %lld M %lld", w->d, w->M);
        if (!fwd && w->M > w->d * w->d) cr_assert_str_eq(w->algo, "flash2", "bwd d %lld M %lld", w->d, w->M);
    }
    for (long long d = 64; d <= 128; d *= 2)
        for (int b = 0; b < 2; b++) {
            const char *ps = b ? "bwd" : "fwd";
            const double below = slope(rows, n, ps, d, 4 * d, d * d / 4), above = slope(rows, n, ps, d, d * d, 4096 * d / 8);
            /* backward: standard's S, P, dP, dS terms (N^2, flat in M) temper its slope below d^2 */
            cr_assert(below > -0.62 && below < (b ? -0.4 : -0.45), "%s d %lld: slope below d^2 %.3f", ps, d, below);
            cr_assert(above > -1.1 && above < -0.85, "%s d %lld: slope above d^2 %.3f", ps, d, above);
        }

    /* the report's summary of the same grid */
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    fl_regimes_print(m, pts, npts);
    fclose(m);
    const char *want[] = {"Optimum and lower bound on both sides of M = d^2, forward",
                          "Optimum and lower bound on both sides of M = d^2, backward",
                          "forward, M <  d^2 (small cache): optimal smallcache;",
                          "forward, M >= d^2 (large cache): optimal flash2;", "backward, M <  d^2 (small cache): optimal "};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) cr_assert(strstr(buf, want[i]), "lacks '%s':\n%s", want[i], buf);
    free(buf);

    /* the script draws the data in the three formats, with and without the GPU records */
    if (!have_gnuplot()) cr_skip_test("gnuplot (pngcairo, pdfcairo, svg) is not installed: apt-get install gnuplot-nox");
    const char *fmts[] = {"png", "pdf", "svg"}, *magic[] = {"\x89PNG", "%PDF", "<?xml"};
    for (int k = 0; k < 3; k++)
        for (int g = 0; g < 2; g++) {
            snprintf(cmd, sizeof cmd,
                     "cd %s/figures && gnuplot -e \"data='%s'; gpu='%s'; fmt='%s'; out='%s/g%d.%s'\" fig_g_bounds_vs_M.gp",
                     FLASHLAB_SOURCE_DIR, path, g ? "data/gpu_validate.csv" : "", fmts[k], dir, g, fmts[k]);
            cr_assert_eq(system(cmd), 0, "%s", cmd);
            char out[300];
            snprintf(out, sizeof out, "%s/g%d.%s", dir, g, fmts[k]);
            cr_assert(file_starts_with(out, magic[k]) || (k == 2 && file_starts_with(out, "<svg")), "%s", out);
        }
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

Test(figure_g, plot_help_lists_it)
{
    const char *a[] = {"plot", "--help", NULL};
    cli_result *r = cli_run(a);
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert(strstr(r->out, "figures (a)-(d), (g), (h) and (i)"), "%s", r->out);
    free(r);
}

Test(figure_g, bound_fits_d_on_the_grid_it_is_given)
{
    const char *a[] = {"bound", "--N", "4096", "--d", "32,64,128", "--M", "65536", NULL};
    cli_result *r = cli_run(a);
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert(strstr(r->out, "Slope in d at N = 4096, M = 65536"), "%s", r->out);
    free(r);
}
