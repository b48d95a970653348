/* cmd_plot.c: `flashlab plot`: figures (a)-(d) of docs/analysis.md with gnuplot.
 *
 * The sweeps behind the figures run here (count-only machine), their CSVs go to DIR/data/ with
 * provenance lines, and figures/fig_*.gp turn them into PNG, PDF and SVG in DIR/.  Everything is
 * made in a temporary directory inside DIR and moved in only when every file is complete, so a
 * failure (gnuplot missing, a script error) leaves no partial figures. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis.h"
#include <flashlab/args.h>
#include "cli.h"
#include "regimes.h"

#ifndef FLASHLAB_FIGURES_DIR
#define FLASHLAB_FIGURES_DIR "figures"
#endif

static const char *gnuplot_prog(void)
{
    const char *g = getenv("FLASHLAB_GNUPLOT");
    return g && *g ? g : "gnuplot";
}

fl_status fl_gnuplot_check(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "%s -e \"set terminal pngcairo; set terminal pdfcairo; set terminal svg\" >/dev/null 2>&1",
             gnuplot_prog());
    int rc = system(cmd);
    if (rc != 0)
        return fl_fail(FL_EINVAL,
                       "figures: gnuplot with the pngcairo, pdfcairo and svg terminals was not found "
                       "(%s); install it (apt-get install gnuplot-nox)", gnuplot_prog());
    return FL_OK;
}

/* A path we put inside gnuplot's single-quoted strings and a shell's double quotes. */
static fl_status safe_path(const char *what, const char *p)
{
    if (strpbrk(p, "'\"\\$`\n"))
        return fl_fail(FL_EINVAL, "%s: path '%s' contains quotes, '$', '`' or '\\\\'; choose another", what, p);
    return FL_OK;
}

static const char *fmts[] = {"png", "pdf", "svg"};

typedef struct {
    const char *name;   /* file stem: fig_a_traffic_vs_M */
    const char *script; /* figures/<script> */
    const char *data;   /* data/<data> */
} figure;

static const figure figs[] = {
    {"fig_a_traffic_vs_M", "fig_a_traffic_vs_M.gp", "fig_a_traffic_vs_M.csv"},
    {"fig_b_traffic_vs_N", "fig_b_traffic_vs_N.gp", "fig_b_traffic_vs_N.csv"},
    {"fig_c_traffic_vs_Bc", "fig_c_traffic_vs_Bc.gp", "fig_c_traffic_vs_Bc.csv"},
    {"fig_d_ratio_vs_M", "fig_d_ratio_vs_M.gp", "fig_d_ratio_vs_M.csv"},
    {"fig_g_bounds_vs_M", "fig_g_bounds_vs_M.gp", "fig_g_bounds_vs_M.csv"}, /* regimes.c */
};

/* Runs one sweep into tmp/data/file (and t when not NULL). */
static fl_status sweep_file(const char *tmp, const char *file, const fl_sweep_spec *s, const char *command,
                            fl_table *t)
{
    char path[8400];
    snprintf(path, sizeof path, "%s/data/%s", tmp, file);
    FILE *f = fopen(path, "w");
    if (!f) return fl_fail(FL_EIO, "figures: cannot write %s (%s)", path, strerror(errno));
    fl_status e = fl_sweep_write_csv(s, f, command, t, NULL);
    if (fclose(f) && !e) e = fl_fail(FL_EIO, "figures: write to %s failed", path);
    return e;
}

/* Figure (d)'s data: standard / flash traffic at equal (N, d, M). */
static fl_status ratio_file(const char *tmp, const fl_table *t)
{
    char path[8400];
    snprintf(path, sizeof path, "%s/data/%s", tmp, figs[3].data);
    FILE *f = fopen(path, "w");
    if (!f) return fl_fail(FL_EIO, "figures: cannot write %s (%s)", path, strerror(errno));
    fprintf(f, "# flashlab %s: ratios of HBM traffic (elements) of the count-only machine, from the sweep "
               "in data/%s\n", FLASHLAB_VERSION, figs[0].data);
    fputs("N,d,M,standard,flash1,flash2,std_over_flash1,std_over_flash2\n", f);
    for (size_t i = 0; i < t->n; i++) {
        const fl_point *s = &t->p[i];
        if (s->algo != FL_ALGO_STANDARD) continue;
        const fl_point *f1 = fl_table_find(t, FL_ALGO_FLASH1, s->N, s->d, s->M);
        const fl_point *f2 = fl_table_find(t, FL_ALGO_FLASH2, s->N, s->d, s->M);
        if (!f1 || !f2) continue;
        fprintf(f, "%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%.6g,%.6g\n", s->N,
                s->d, s->M, s->total, f1->total, f2->total, (double)s->total / f1->total,
                (double)s->total / f2->total);
    }
    return fclose(f) ? fl_fail(FL_EIO, "figures: write to %s failed", path) : FL_OK;
}

static fl_status gnuplot(const char *scripts, const char *tmp, const figure *fg, const char *fmt,
                         const char *vars)
{
    char cmd[40000];
    snprintf(cmd, sizeof cmd,
             "%s -e \"set loadpath '%s'; data='%s/data/%s'; fmt='%s'; out='%s/%s.%s'; %s\" '%s/%s'",
             gnuplot_prog(), scripts, tmp, fg->data, fmt, tmp, fg->name, fmt, vars, scripts, fg->script);
    if (system(cmd) != 0)
        return fl_fail(FL_EIO, "figures: gnuplot failed on %s/%s (%s); no figures written", scripts,
                       fg->script, fmt);
    return FL_OK;
}

/* Moves every regular file of src into dst (both exist); counts them. */
static fl_status move_files(const char *src, const char *dst, int *n)
{
    DIR *dir = opendir(src);
    if (!dir) return fl_fail(FL_EIO, "figures: cannot read %s", src);
    struct dirent *de;
    fl_status e = FL_OK;
    char a[8400], b[8400];
    while (!e && (de = readdir(dir))) {
        snprintf(a, sizeof a, "%s/%s", src, de->d_name);
        struct stat st;
        if (stat(a, &st) || !S_ISREG(st.st_mode)) continue;
        snprintf(b, sizeof b, "%s/%s", dst, de->d_name);
        if (rename(a, b)) e = fl_fail(FL_EIO, "figures: cannot move %s to %s (%s)", a, b, strerror(errno));
        else (*n)++;
    }
    closedir(dir);
    return e;
}

/* Removes tmp/data/ *, tmp/ *, tmp (what is left after a failure). */
static void remove_tmp(const char *tmp)
{
    char sub[4200], p[8400];
    const char *dirs[2] = {sub, tmp};
    snprintf(sub, sizeof sub, "%s/data", tmp);
    for (int k = 0; k < 2; k++) {
        DIR *dir = opendir(dirs[k]);
        struct dirent *de;
        if (!dir) continue;
        while ((de = readdir(dir))) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
            snprintf(p, sizeof p, "%s/%s", dirs[k], de->d_name);
            if (k == 1 && !strcmp(de->d_name, "data")) continue;
            unlink(p);
        }
        closedir(dir);
        rmdir(dirs[k]);
    }
}

static fl_status make_dir(const char *p)
{
    if (mkdir(p, 0755) && errno != EEXIST)
        return fl_fail(FL_EINVAL, "--out: cannot create directory %s (%s)", p, strerror(errno));
    struct stat st;
    if (stat(p, &st) || !S_ISDIR(st.st_mode)) return fl_fail(FL_EINVAL, "--out: %s is not a directory", p);
    return FL_OK;
}

fl_status fl_outdir_check(const char *dir)
{
    char probe[4200];
    FL_TRY(safe_path("--out", dir));
    if (mkdir(dir, 0755) && errno != EEXIST)
        return fl_fail(FL_EIO, "--out: cannot create directory %s (%s)", dir, strerror(errno));
    struct stat st;
    if (stat(dir, &st) || !S_ISDIR(st.st_mode)) return fl_fail(FL_EIO, "--out: %s is not a directory", dir);
    snprintf(probe, sizeof probe, "%s/.flashlab-tmp-XXXXXX", dir);
    if (!mkdtemp(probe)) return fl_fail(FL_EIO, "--out: cannot write in %s (%s)", dir, strerror(errno));
    rmdir(probe);
    return FL_OK;
}

fl_status fl_figures_write(const char *dir, const char *scripts, FILE *log, int *nfiles)
{
    static const int64_t Na[] = {1024, 4096, 16384}, d64[] = {64}, Mb[] = {98304}, Nc[] = {1024};
    static int64_t Ma[10], Nb[8], Bc[28];
    for (int i = 0; i < 10; i++) Ma[i] = INT64_C(2048) << i; /* 2048 .. 1048576 = 16384*64 */
    for (int i = 0; i < 8; i++) Nb[i] = INT64_C(512) << i;   /* 512 .. 65536 */
    for (int i = 0; i < 28; i++) Bc[i] = 16 * (i + 1);       /* 16 .. 448 */
    char tmp[4096], path[8400], vars[8400];
    fl_table ta = {0}, tb = {0};
    fl_fit_const c;
    fl_status e;
    *nfiles = 0;

    if (!scripts) scripts = getenv("FLASHLAB_FIGURES_DIR");
    if (!scripts || !*scripts) scripts = FLASHLAB_FIGURES_DIR;
    FL_TRY(fl_gnuplot_check());
    FL_TRY(safe_path("figures directory", scripts));
    snprintf(path, sizeof path, "%s/style.gp", scripts);
    if (access(path, R_OK))
        return fl_fail(FL_EINVAL, "figures: the gnuplot scripts are not in %s (set FLASHLAB_FIGURES_DIR to "
                                  "the figures/ directory of the source tree)", scripts);
    FL_TRY(fl_outdir_check(dir));
    snprintf(tmp, sizeof tmp, "%s/.flashlab-tmp-XXXXXX", dir);
    if (!mkdtemp(tmp)) return fl_fail(FL_EIO, "figures: cannot create a temporary directory in %s (%s)", dir, strerror(errno));
    snprintf(path, sizeof path, "%s/data", tmp);
    if ((e = make_dir(path))) goto out;

    fl_sweep_spec sa = fl_sweep_spec_init();
    sa.N = Na, sa.nN = 3, sa.d = d64, sa.nd = 1, sa.M = Ma, sa.nM = 10, sa.M_upto_Nd = 1;
    fl_sweep_spec sb = fl_sweep_spec_init();
    sb.N = Nb, sb.nN = 8, sb.d = d64, sb.nd = 1, sb.M = Mb, sb.nM = 1;
    fl_sweep_spec sc = fl_sweep_spec_init();
    sc.algos[0] = FL_ALGO_FLASH1, sc.algos[1] = FL_ALGO_FLASH2, sc.nalgos = 2;
    sc.N = Nc, sc.nN = 1, sc.d = d64, sc.nd = 1, sc.M = Mb, sc.nM = 1, sc.Bc = Bc, sc.nBc = 28;
    if (log) fprintf(log, "figures: sweeping (count-only machine) ...\n");
    if ((e = sweep_file(tmp, figs[0].data, &sa, "flashlab sweep --N 1024,4096,16384 --d 64 --M 2048:1048576:x2 --M-upto-Nd", &ta)) ||
        (e = sweep_file(tmp, figs[1].data, &sb, "flashlab sweep --N 512:65536:x2 --d 64 --M 98304", &tb)) ||
        (e = sweep_file(tmp, figs[2].data, &sc, "flashlab sweep --algo flash1,flash2 --N 1024 --d 64 --M 98304 --Bc 16:448:+16", NULL)) ||
        (e = ratio_file(tmp, &ta)))
        goto out;
    snprintf(path, sizeof path, "%s/data/%s", tmp, figs[4].data);
    if ((e = fl_regimes_write_path(path))) goto out;

    for (int i = 0; i < 5; i++) {
        const fl_select s = {FL_ALGO_FLASH1, 0, 64, i == 1 ? 98304 : 0, FL_REGIME_PAPER};
        if (i < 2 && (e = fl_law_constant(i == 1 ? &tb : &ta, &s, FL_SHAPE_N2D2_M, &c))) goto out;
        if (i < 2) snprintf(vars, sizeof vars, "c1=%.6g; M=98304; d=64", c.c);
        else snprintf(vars, sizeof vars, "M=98304; d=64; c1=0");
        if (i == 4) fl_regimes_gnuplot_vars(scripts, vars, sizeof vars);
        for (int k = 0; k < 3; k++) {
            if (log) fprintf(log, "figures: %s.%s\n", figs[i].name, fmts[k]);
            if ((e = gnuplot(scripts, tmp, &figs[i], fmts[k], vars))) goto out;
        }
    }
    snprintf(path, sizeof path, "%s/data", dir);
    char tmpdata[4200];
    snprintf(tmpdata, sizeof tmpdata, "%s/data", tmp);
    if ((e = make_dir(path)) || (e = move_files(tmp, dir, nfiles)) || (e = move_files(tmpdata, path, nfiles)))
        goto out;
out:
    remove_tmp(tmp);
    fl_table_free(&ta);
    fl_table_free(&tb);
    return e;
}

static const char *usage =
    "usage: flashlab plot [--out DIR] [--scripts DIR]\n"
    "Runs the sweeps behind figures (a)-(d) and (g) (docs/analysis.md) on the count-only machine and\n"
    "draws them with gnuplot as PNG, PDF and SVG into DIR (data CSVs in DIR/data/).\n\n"
    "  --out DIR      output directory (created if missing)        [flashlab-figures]\n"
    "  --scripts DIR  the gnuplot scripts (figures/ of the source)  [$FLASHLAB_FIGURES_DIR or built-in]\n"
    "  --help         this text\n";

int fl_cmd_plot(int argc, char **argv)
{
    const char *dir = "flashlab-figures", *scripts = NULL, *name, *iv, *v;
    fl_status e = FL_OK;
    fl_args a;
    int k, n = 0;
    fl_args_init(&a, argc, argv);
    while (!e && (k = fl_args_next(&a, &name, &iv)) == 1) {
        if (strcmp(name, "--help") == 0) {
            fputs(usage, stdout);
            return 0;
        }
        if ((e = fl_args_value(&a, name, iv, &v))) break;
        if (strcmp(name, "--out") == 0) dir = v;
        else if (strcmp(name, "--scripts") == 0) scripts = v;
        else e = fl_fail(FL_EINVAL, "%s: unknown option for plot (see flashlab plot --help)", name);
    }
    if (!e && k < 0) e = FL_EINVAL;
    if (!e) e = fl_figures_write(dir, scripts, stderr, &n);
    if (e) return fl_cli_error(e);
    printf("figures written to %s (%d files: PNG, PDF, SVG of figures (a)-(d) and (g), and their data in data/)\n", dir, n);
    return 0;
}
