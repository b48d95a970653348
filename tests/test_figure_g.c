/* test_figure_g.c: figure (g) and the per-regime summary.  `flashlab plot` writes figure (g) in
 * the three formats with its data; in the data every schedule and the optimum lie on or above
 * the lower bound, the optimum on or below every schedule, smallcache is the optimum below d^2
 * and flash2 from d^2 on, and the optimum falls like M^-1/2 below d^2 and like M^-1 above
 * (docs/analysis.md §5, §6).
 * `flashlab report` prints the summary per regime and prices the fp32 accumulators at 4 bytes;
 * `flashlab bound` fits the slope in d on the grid it is given. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_runner.h"

static int have_gnuplot(void)
{
    return system("gnuplot -e \"set terminal pngcairo; set terminal pdfcairo; set terminal svg\" >/dev/null 2>&1") == 0;
}

static int starts_with(const char *path, const char *magic)
{
    char buf[16] = {0};
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t n = fread(buf, 1, strlen(magic), f);
    fclose(f);
    return n == strlen(magic) && memcmp(buf, magic, n) == 0;
}

typedef struct {
    long long N, d, M, s[4], opt, Br, Bc, lb;
    char algo[32];
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

/* Least squares slope of ln(opt) against ln(M) over the rows of d with lo <= M <= hi. */
static double slope(const row *r, int n, long long d, long long lo, long long hi)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (r[i].d != d || r[i].M < lo || r[i].M > hi) continue;
        const double x = log((double)r[i].M), y = log((double)r[i].opt);
        sx += x, sy += y, sxx += x * x, sxy += x * y, k++;
    }
    cr_assert_geq(k, 3);
    return (k * sxy - sx * sy) / (k * sxx - sx * sx);
}

Test(figure_g, plot_writes_it_and_its_data_obey_the_bound, .timeout = 600)
{
    if (!have_gnuplot()) cr_skip_test("gnuplot (pngcairo, pdfcairo, svg) is not installed: apt-get install gnuplot-nox");
    char dir[] = "/tmp/flashlab-figg-XXXXXX", path[256], cmd[300];
    cr_assert(mkdtemp(dir));
    const char *a[] = {"plot", "--out", dir, NULL};
    cli_result *r = cli_run(a);
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert(strstr(r->out, "(a)-(d) and (g)"), "%s", r->out);
    free(r);
    snprintf(path, sizeof path, "%s/fig_g_bounds_vs_M.png", dir);
    cr_assert(starts_with(path, "\x89PNG"), "%s", path);
    snprintf(path, sizeof path, "%s/fig_g_bounds_vs_M.pdf", dir);
    cr_assert(starts_with(path, "%PDF"), "%s", path);
    snprintf(path, sizeof path, "%s/fig_g_bounds_vs_M.svg", dir);
    cr_assert(starts_with(path, "<?xml") || starts_with(path, "<svg"), "%s", path);

    snprintf(path, sizeof path, "%s/data/fig_g_bounds_vs_M.csv", dir);
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
        for (int k = 0; k < 4; k++) w->s[k] = field(&p);
        w->opt = field(&p);
        snprintf(w->algo, sizeof w->algo, "%s", token(&p));
        w->Br = field(&p), w->Bc = field(&p), w->lb = field(&p);
    }
    fclose(f);
    cr_assert_eq(n, 26, "13 values of M at each of d = 64 and 128");
    for (int i = 0; i < n; i++) {
        const row *w = &rows[i];
        cr_assert_geq(w->opt, w->lb, "d %lld M %lld", w->d, w->M);
        for (int k = 0; k < 4; k++)
            if (w->s[k] >= 0) {
                cr_assert_geq(w->s[k], w->lb, "d %lld M %lld schedule %d", w->d, w->M, k);
                cr_assert_leq(w->opt, w->s[k], "d %lld M %lld schedule %d", w->d, w->M, k);
            }
        if (w->M < w->d * w->d) cr_assert_str_eq(w->algo, "smallcache", "d %lld M %lld", w->d, w->M);
        if (w->M >= w->d * w->d) cr_assert_str_eq(w->algo, "flash2", "d %lld M %lld", w->d, w->M);
    }
    for (long long d = 64; d <= 128; d *= 2) {
        const double below = slope(rows, n, d, 4 * d, d * d / 4), above = slope(rows, n, d, d * d, 4096 * d / 8);
        cr_assert(below > -0.62 && below < -0.45, "d %lld: slope below d^2 %.3f", d, below);
        cr_assert(above > -1.1 && above < -0.9, "d %lld: slope above d^2 %.3f", d, above);
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

Test(figure_g, report_prints_the_optimum_per_regime, .timeout = 600)
{
    const char *a[] = {"report", "--no-figures", NULL};
    cli_result *r = cli_run(a);
    cr_assert_eq(r->status, 0, "%s", r->err);
    const char *want[] = {"Optimum and lower bound on both sides of M = d^2", "M <  d^2 (small cache): optimal smallcache",
                          "M >= d^2 (large cache): optimal flash2", "fp32 accumulators of rule R8",
                          "Lower bounds (docs/bounds.md", "is a shape, not a bound"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_assert(strstr(r->out, want[i]), "report lacks '%s':\n%s", want[i], r->out);
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
