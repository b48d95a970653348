/* cmd_plot.c: `flashlab plot`: figures (a)-(d), (g) and (h) of docs/analysis.md with gnuplot.
 *
 * The sweeps behind the figures run here (count-only machine), their CSVs go to DIR/data/ with
 * provenance lines, and figures/fig_*.gp turn them into PNG, PDF and SVG in DIR/.  Everything is
 * made in a staging directory (output.h: fl_outdir) and moved in only when every file is
 * complete, so a failure (gnuplot missing, a script error, a full disk, an interruption) leaves
 * DIR as it was. */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis.h"
#include "args.h"
#include "cli.h"
#include <flashlab/headdim.h>
#include <flashlab/cp.h>
#include <flashlab/regimes.h>
#include <flashlab/schedule.h>
#include <flashlab/version.h>

#ifndef FLASHLAB_FIGURES_DIR
#define FLASHLAB_FIGURES_DIR "figures"
#endif

static const char *gnuplot_prog(void)
{
    const char *g = getenv("FLASHLAB_GNUPLOT");
    return g && *g ? g : "gnuplot";
}

/* Runs gnuplot (FLASHLAB_GNUPLOT names the program; no shell) with the arguments args[0..n),
 * its stdout and stderr kept in a temporary file, so gnuplot's own lines never reach ours.  Its
 * environment: TZ=UTC0, so the date pdfcairo writes has one fixed form (fix_pdf_date).  Returns
 * 0 when it exited with status 0; otherwise nonzero, with the first line it printed (or how it
 * ended) in why. */
static int run_gnuplot(const char *const *args, int n, char *why, size_t cap)
{
    const char *argv[8] = {gnuplot_prog()};
    for (int i = 0; i < n && i < 6; i++) argv[i + 1] = args[i];
    argv[n < 6 ? n + 1 : 7] = NULL;
    FILE *log = tmpfile();
    snprintf(why, cap, "cannot start it");
    if (!log) return -1;
    fflush(NULL);
    const pid_t pid = fork();
    if (pid < 0) {
        fclose(log);
        return -1;
    }
    if (pid == 0) {
        dup2(fileno(log), 1);
        dup2(fileno(log), 2);
        /* a file-size limit ends gnuplot, which is then reported; flashlab's cleanup handlers
         * do nothing in this child (output.h) and the exec resets them */
        signal(SIGXFSZ, SIG_DFL);
        setenv("TZ", "UTC0", 1);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) {
            fclose(log);
            return -1;
        }
    const int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    if (!ok) {
        char line[256] = "";
        rewind(log);
        if (!fgets(line, sizeof line, log)) line[0] = 0;
        line[strcspn(line, "\r\n")] = 0;
        if (WIFSIGNALED(st))
            snprintf(why, cap, "killed by signal %d%s", WTERMSIG(st),
                     WTERMSIG(st) == SIGXFSZ ? ", the file-size limit" : "");
        else if (WEXITSTATUS(st) == 127 && !line[0])
            snprintf(why, cap, "not found");
        else if (line[0])
            snprintf(why, cap, "it said: %s", line);
        else
            snprintf(why, cap, "exit status %d", WEXITSTATUS(st));
    }
    fclose(log);
    return !ok;
}

fl_status fl_gnuplot_check(void)
{
    const char *args[] = {"-e", "set terminal pngcairo; set terminal pdfcairo; set terminal svg"};
    char why[320];
    if (run_gnuplot(args, 2, why, sizeof why) != 0)
        return fl_fail(FL_EINVAL,
                       "figures: gnuplot with the pngcairo, pdfcairo and svg terminals was not found "
                       "(%s); install it (apt-get install gnuplot-nox)", fl_shown(gnuplot_prog()));
    return FL_OK;
}

/* A path we put inside gnuplot's single-quoted strings. */
static fl_status safe_path(const char *what, const char *p)
{
    if (strpbrk(p, "'\"\\$`\n"))
        return fl_fail(FL_EINVAL, "%s: path '%s' contains quotes, '$', '`' or '\\\\'; choose another", what,
                       fl_shown(p));
    return FL_OK;
}

static const char *fmts[] = {"png", "pdf", "svg"};

/* How each format's complete file ends (fl_output_check_written): the PNG's IEND chunk (its
 * length 0, type, CRC), the PDF's end-of-file marker, the SVG's closing tag.  gnuplot exits 0
 * when the disk fills under it, leaving a file empty or cut short; these catch it. */
static const struct {
    const char *bytes;
    size_t len;
} tails[] = {{"\0\0\0\0IEND\xae\x42\x60\x82", 12}, {"%%EOF", 5}, {"</svg>", 6}};

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
    {"fig_h_traffic_vs_d", "fig_h_traffic_vs_d.gp", "fig_h_traffic_vs_d.csv"}, /* headdim.c */
    {"fig_i_context_parallel", "fig_i_context_parallel.gp", "fig_i_context_parallel.csv"}, /* cp_figure.c */
};

enum { NFIGS = (int)(sizeof figs / sizeof figs[0]), NFILES = NFIGS * 4 };

int fl_figures_names(const char **names, int cap)
{
    static char buf[NFILES][64];
    int n = 0;
    for (int i = 0; i < NFIGS; i++) {
        for (int k = 0; k < 3; k++)
            if (n < cap && n < NFILES) snprintf(buf[n], sizeof buf[n], "%s.%s", figs[i].name, fmts[k]), names[n] = buf[n], n++;
        if (n < cap && n < NFILES) snprintf(buf[n], sizeof buf[n], "data/%s", figs[i].data), names[n] = buf[n], n++;
    }
    return n;
}

/* Runs one sweep into dir/data/file (and t when not NULL). */
static fl_status sweep_file(const char *dir, const char *file, const fl_sweep_spec *s, const char *command,
                            fl_table *t)
{
    char path[8400];
    snprintf(path, sizeof path, "%s/data/%s", dir, file);
    FILE *f = fopen(path, "w");
    if (!f) return fl_fail(FL_EIO, "figures: cannot write %s (%s)", fl_shown(path), strerror(errno));
    fl_status e = fl_sweep_write_csv(s, f, command, t, NULL);
    const fl_status c = fl_output_close_staged(f, "figures", path);
    return e ? e : c;
}

/* Figure (d)'s data: the traffic of the schedule of "all" that materializes S and P (standard
 * attention) over each other schedule of "all", at equal (N, d, M). */
static fl_status ratio_file(const char *dir, const fl_table *t)
{
    char path[8400];
    fl_algo all[FL_ALGO_MAX], flash[FL_ALGO_MAX], std = -1;
    int nflash = 0;
    const int nall = fl_algos_all(NULL, all);
    for (int i = 0; i < nall; i++) {
        if (std < 0 && (fl_schedule_get(all[i])->flags & FL_SCHED_MATERIALIZES)) std = all[i];
        else flash[nflash++] = all[i];
    }
    snprintf(path, sizeof path, "%s/data/%s", dir, figs[3].data);
    FILE *f = fopen(path, "w");
    if (!f) return fl_fail(FL_EIO, "figures: cannot write %s (%s)", fl_shown(path), strerror(errno));
    fprintf(f, "# flashlab %s: ratios of HBM traffic (elements) of the count-only machine, from the sweep "
               "in data/%s\n", FLASHLAB_VERSION, figs[0].data);
    fprintf(f, "N,d,M,%s", fl_algo_name(std));
    for (int k = 0; k < nflash; k++) fprintf(f, ",%s", fl_algo_name(flash[k]));
    for (int k = 0; k < nflash; k++) fprintf(f, ",std_over_%s", fl_algo_name(flash[k]));
    fputc('\n', f);
    for (size_t i = 0; i < t->n; i++) {
        const fl_point *s = &t->p[i], *fp[FL_ALGO_MAX];
        int k = 0;
        if (s->algo != std) continue;
        while (k < nflash && (fp[k] = fl_table_find(t, flash[k], s->N, s->d, s->M))) k++;
        if (k < nflash) continue;
        fprintf(f, "%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64, s->N, s->d, s->M, s->total);
        for (k = 0; k < nflash; k++) fprintf(f, ",%" PRId64, fp[k]->total);
        for (k = 0; k < nflash; k++) fprintf(f, ",%.6g", (double)s->total / fp[k]->total);
        fputc('\n', f);
    }
    return fl_output_close_staged(f, "figures", path);
}

/* Figure (i)'s data: context parallelism against P and N (cp.h). */
static fl_status cp_file(const char *dir)
{
    char path[8400];
    snprintf(path, sizeof path, "%s/data/%s", dir, figs[6].data);
    FILE *f = fopen(path, "w");
    if (!f) return fl_fail(FL_EIO, "figures: cannot write %s (%s)", fl_shown(path), strerror(errno));
    const fl_status e = fl_cp_figure_csv(f);
    const fl_status c = fl_output_close_staged(f, "figures", path);
    return e ? e : c;
}

/* pdfcairo stamps each PDF with the time it was made ("/CreationDate (D:20261201113121Z)"), so
 * two runs would differ: the date is overwritten in place with a fixed one of the same length
 * (19700101000000Z; every byte offset of the file stays valid). */
static fl_status fix_pdf_date(const char *path)
{
    static const char key[] = "/CreationDate (D:", fixed[] = "19700101000000Z)";
    FILE *f = fopen(path, "r+b");
    if (!f) return fl_fail(FL_EIO, "figures: cannot reopen %s (%s)", fl_shown(path), strerror(errno));
    char *buf = malloc(1 << 24);
    size_t n = buf ? fread(buf, 1, (1 << 24) - 1, f) : 0;
    fl_status e = buf ? FL_OK : fl_fail(FL_ENOMEM, "figures: out of memory");
    if (!e && n) {
        buf[n] = 0;
        for (char *p = buf; (p = memmem(p, n - (size_t)(p - buf), key, sizeof key - 1)); p++) {
            char *date = p + sizeof key - 1;
            if ((size_t)(date - buf) + sizeof fixed - 1 > n || strspn(date, "0123456789") != 14 ||
                date[14] != 'Z' || date[15] != ')')
                continue; /* not the form cairo writes under TZ=UTC0: left alone */
            fseek(f, (long)(date - buf), SEEK_SET);
            fwrite(fixed, 1, sizeof fixed - 1, f);
        }
    }
    free(buf);
    const fl_status c = fl_output_close_staged(f, "figures", path);
    return e ? e : c;
}

static fl_status gnuplot(const char *scripts, const char *dir, const figure *fg, const char *fmt,
                         const char *vars)
{
    char setup[16800], script[4200], why[320];
    snprintf(setup, sizeof setup, "set loadpath '%s'; data='%s/data/%s'; fmt='%s'; out='%s/%s.%s'; %s", scripts,
             dir, fg->data, fmt, dir, fg->name, fmt, vars);
    snprintf(script, sizeof script, "%s/%s", scripts, fg->script);
    const char *args[] = {"-e", setup, script};
    if (run_gnuplot(args, 3, why, sizeof why) != 0)
        return fl_fail(FL_EIO, "figures: gnuplot failed on %s (%s: %s); no figures written", fl_shown(script),
                       fmt, why);
    /* exit status 0 is not enough: the file must be there whole (a full disk) */
    char out[8400], name[128];
    const int k = strcmp(fmt, "png") == 0 ? 0 : strcmp(fmt, "pdf") == 0 ? 1 : 2;
    snprintf(out, sizeof out, "%s/%s.%s", dir, fg->name, fmt);
    snprintf(name, sizeof name, "%s.%s from gnuplot", fg->name, fmt);
    FL_TRY(fl_output_check_written("--out", out, name, tails[k].bytes, tails[k].len));
    return k == 1 ? fix_pdf_date(out) : FL_OK;
}

/* The gnuplot scripts of an installed flashlab, found from the running executable: figures/
 * beside it (the wheel and the student-only layout: flashlab/flashlab beside flashlab/figures/),
 * else ../share/flashlab/figures (cmake --install: bin/flashlab, share/flashlab/figures/).  The
 * directory holding style.gp is written into buf; NULL when there is none (a CLI in its build
 * folder, or a system without /proc/self/exe). */
static const char *installed_figures(char *buf, size_t cap)
{
    char exe[4096];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0 || (size_t)n >= sizeof exe - 1) return NULL;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash) return NULL;
    *slash = '\0';
    static const char *const rel[] = {"figures", "../share/flashlab/figures"};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        char style[4200];
        const int a = snprintf(buf, cap, "%s/%s", exe, rel[i]);
        const int b = snprintf(style, sizeof style, "%s/style.gp", buf);
        char real[PATH_MAX];
        if (a > 0 && (size_t)a < cap && b > 0 && (size_t)b < sizeof style && access(style, R_OK) == 0)
            return realpath(buf, real) && strlen(real) < cap ? strcpy(buf, real) : buf;
    }
    return NULL;
}

fl_status fl_figures_prepare(const char *scripts, const char **resolved)
{
    /* the scripts' source, named in every refusal: --scripts, else $FLASHLAB_FIGURES_DIR, else
     * an installed flashlab's own (installed_figures), else the built-in figures/ of the source
     * tree */
    static char installed[4096];
    const char *from = "--scripts";
    if (scripts && !*scripts) return fl_fail(FL_EINVAL, "--scripts: needs a directory name");
    if (!scripts && (scripts = getenv("FLASHLAB_FIGURES_DIR")) && *scripts) from = "FLASHLAB_FIGURES_DIR";
    if (!scripts || !*scripts) scripts = installed_figures(installed, sizeof installed), from = "figures";
    if (!scripts) scripts = FLASHLAB_FIGURES_DIR;
    FL_TRY(fl_gnuplot_check());
    FL_TRY(safe_path(from, scripts));
    char path[4200];
    snprintf(path, sizeof path, "%s/style.gp", scripts);
    if (access(path, R_OK))
        return fl_fail(FL_EINVAL, "%s: the gnuplot scripts are not in %s (set --scripts or FLASHLAB_FIGURES_DIR "
                                  "to the figures/ directory of the source tree)", from, fl_shown(scripts));
    *resolved = scripts;
    return FL_OK;
}

fl_status fl_outdir_open_checked(const char *dir, const char **names, int n, fl_outdir **out)
{
    FL_TRY(safe_path("--out", dir));
    return fl_outdir_open(dir, "--out", names, n, out);
}

fl_status fl_figures_write(const char *dir, const char *scripts, FILE *log)
{
    static const int64_t Na[] = {1024, 4096, 16384}, d64[] = {64}, Mb[] = {98304}, Nc[] = {1024};
    static int64_t Ma[10], Nb[8], Bc[28];
    for (int i = 0; i < 10; i++) Ma[i] = INT64_C(2048) << i; /* 2048 .. 1048576 = 16384*64 */
    for (int i = 0; i < 8; i++) Nb[i] = INT64_C(512) << i;   /* 512 .. 65536 */
    for (int i = 0; i < 28; i++) Bc[i] = 16 * (i + 1);       /* 16 .. 448 */
    char path[8400], vars[8400], cmdc[512];
    fl_table ta = {0}, tb = {0};
    fl_fit_const c;
    fl_status e;

    fl_sweep_spec sa = fl_sweep_spec_init();
    sa.N = Na, sa.nN = 3, sa.d = d64, sa.nd = 1, sa.M = Ma, sa.nM = 10, sa.M_upto_Nd = 1;
    fl_sweep_spec sb = fl_sweep_spec_init();
    sb.N = Nb, sb.nN = 8, sb.d = d64, sb.nd = 1, sb.M = Mb, sb.nM = 1;
    fl_sweep_spec sc = fl_sweep_spec_init();
    fl_algo flash[FL_ALGO_MAX]; /* figure (c): the tiled schedules of "all" against Bc */
    const int nall = fl_algos_all(NULL, flash);
    sc.nalgos = 0;
    for (int i = 0; i < nall; i++)
        if (!(fl_schedule_get(flash[i])->flags & FL_SCHED_MATERIALIZES)) sc.algos[sc.nalgos++] = flash[i];
    int len = snprintf(cmdc, sizeof cmdc, "flashlab sweep --algo ");
    for (int i = 0; i < sc.nalgos && len < (int)sizeof cmdc; i++)
        len += snprintf(cmdc + len, sizeof cmdc - (size_t)len, "%s%s", i ? "," : "", fl_algo_name(sc.algos[i]));
    if (len < (int)sizeof cmdc) snprintf(cmdc + len, sizeof cmdc - (size_t)len, " --N 1024 --d 64 --M 98304 --Bc 16:448:+16");
    sc.N = Nc, sc.nN = 1, sc.d = d64, sc.nd = 1, sc.M = Mb, sc.nM = 1, sc.Bc = Bc, sc.nBc = 28;
    if (log) fprintf(log, "figures: sweeping (count-only machine) ...\n");
    if ((e = sweep_file(dir, figs[0].data, &sa, "flashlab sweep --N 1024,4096,16384 --d 64 --M 2048:1048576:x2 --M-upto-Nd", &ta)) ||
        (e = sweep_file(dir, figs[1].data, &sb, "flashlab sweep --N 512:65536:x2 --d 64 --M 98304", &tb)) ||
        (e = sweep_file(dir, figs[2].data, &sc, cmdc, NULL)) ||
        (e = ratio_file(dir, &ta)))
        goto out;
    snprintf(path, sizeof path, "%s/data/%s", dir, figs[4].data);
    if ((e = fl_regimes_write_path(path))) goto out;
    snprintf(path, sizeof path, "%s/data/%s", dir, figs[5].data);
    if ((e = fl_headdim_write_path(path))) goto out;
    if ((e = cp_file(dir))) goto out;

    for (int i = 0; i < NFIGS; i++) {
        const fl_select s = {fl_algo_with_role(FL_SCHED_PAPER_LAW), 0, 64, i == 1 ? 98304 : 0, FL_REGIME_PAPER};
        if (i < 2 && (e = fl_law_constant(i == 1 ? &tb : &ta, &s, FL_SHAPE_N2D2_M, &c))) goto out;
        if (i < 2) snprintf(vars, sizeof vars, "c1=%.6g; M=98304; d=64", c.c);
        else snprintf(vars, sizeof vars, "M=98304; d=64; c1=0");
        if (i == 4) fl_regimes_gnuplot_vars(scripts, vars, sizeof vars);
        if (i == 5) fl_headdim_gnuplot_vars(vars, sizeof vars);
        for (int k = 0; k < 3; k++) {
            if (log) fprintf(log, "figures: %s.%s\n", figs[i].name, fmts[k]);
            if ((e = gnuplot(scripts, dir, &figs[i], fmts[k], vars))) goto out;
        }
    }
out:
    fl_table_free(&ta);
    fl_table_free(&tb);
    return e;
}

static const char *usage =
    "usage: flashlab plot [--out DIR] [--scripts DIR]\n"
    "Runs the sweeps behind figures (a)-(d), (g), (h) and (i) (docs/analysis.md) on the count-only machine and\n"
    "draws them with gnuplot as PNG, PDF and SVG into DIR (data CSVs in DIR/data/).\n\n"
    "  --out DIR      output directory (created if missing)        [flashlab-figures]\n"
    "  --scripts DIR  the gnuplot scripts (figures/ of the source)  [$FLASHLAB_FIGURES_DIR or built-in]\n"
    FL_JOBS_USAGE
    "  --help         this text\n";

int fl_cmd_plot(int argc, char **argv)
{
    const char *dir = "flashlab-figures", *scripts = NULL, *name, *iv, *v, *names[FL_FIGURE_FILES];
    fl_status e = FL_OK;
    fl_args a;
    fl_outdir *od = NULL;
    int k;
    fl_args_init(&a, argc, argv);
    while (!e && (k = fl_args_next_option(&a, &name, &iv)) == 1) {
        if ((e = fl_args_value(&a, name, iv, &v))) break;
        if (strcmp(name, "--out") == 0) dir = v;
        else if (strcmp(name, "--jobs") == 0) e = fl_cli_jobs(name, v);
        else if (strcmp(name, "--scripts") == 0) scripts = v;
        else e = fl_fail(FL_EINVAL, "%s: unknown option for plot (see flashlab plot --help)", name);
    }
    if (k == FL_ARGS_HELP) {
        fputs(usage, stdout);
        return 0;
    }
    if (!e && k < 0) e = FL_EINVAL;
    const int n = fl_figures_names(names, FL_FIGURE_FILES);
    if (!e) e = fl_figures_prepare(scripts, &scripts);
    if (!e) e = fl_outdir_open_checked(dir, names, n, &od); /* before any work */
    if (!e) e = fl_figures_write(fl_outdir_path(od), scripts, stderr);
    if (!e) e = fl_outdir_commit(od); /* every file, or none */
    else fl_outdir_abort(od);
    if (e) return fl_cli_error(e);
    printf("figures written to %s (%d files: PNG, PDF, SVG of figures (a)-(d), (g), (h) and (i), and their data in data/)\n", dir, n);
    return 0;
}
