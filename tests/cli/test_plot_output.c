/* test_plot_output.c: `flashlab plot` writes its directory of figures as one output: a figure
 * path that cannot be replaced is refused before any work and nothing moves; gnuplot's own lines
 * never reach flashlab's stderr (a failure quotes its first line in flashlab's one line); and
 * two runs give the same bytes, PDFs included (their creation date is fixed). */
#include "test_errors_util.h"

#include <dirent.h>
#include <sys/stat.h>
#include "disk.h"

static void fresh_dir(char dir[64])
{
    snprintf(dir, 64, "/tmp/fl_ptXXXXXX");
    cr_assert(mkdtemp(dir) != NULL, "mkdtemp");
}

/* Writes an executable shell script. */
static void script(const char *path, const char *body)
{
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fprintf(f, "#!/bin/sh\n%s", body);
    fclose(f);
    chmod(path, 0755);
}

Test(plot_output, a_figure_path_that_is_a_directory_moves_nothing)
{
    fl_time_limit(FL_T(200));
    if (!have_gnuplot()) cr_skip_test("no gnuplot");
    char dir[64], sub[128], names[4096];
    fresh_dir(dir);
    snprintf(sub, sizeof sub, "%s/fig_b_traffic_vs_N.png", dir);
    cr_assert_eq(mkdir(sub, 0755), 0);
    const char *const argv[] = {"flashlab", "plot", "--out", dir, NULL};
    cli_result r = cli_run_in(NULL, NULL, argv);
    char want[256];
    snprintf(want, sizeof want, "--out: '%s/fig_b_traffic_vs_N.png' is a directory; flashlab writes regular files only",
             dir);
    expect_bad_r(&r, NULL, want, "plot --out with a directory in a figure's place");
    dir_entries(dir, names, sizeof names);
    cr_expect_str_eq(names, "fig_b_traffic_vs_N.png ", "moved in: %s", names);
    cli_free(&r);
}

Test(plot_output, gnuplot_lines_stay_off_stderr)
{
    fl_time_limit(FL_T(250));
    if (!have_gnuplot()) cr_skip_test("no gnuplot");
    char dir[64], fake[128], out[128], env_gp[192];
    fresh_dir(dir);
    snprintf(fake, sizeof fake, "%s/noisy", dir);
    script(fake, "echo 'gnuplot-noise: a warning' >&2\nexec gnuplot \"$@\"\n");
    snprintf(env_gp, sizeof env_gp, "FLASHLAB_GNUPLOT=%s", fake);
    char *env[] = {env_gp, NULL};
    snprintf(out, sizeof out, "%s/figs", dir);
    const char *const argv[] = {"flashlab", "plot", "--out", out, NULL};
    cli_result r = cli_run_in(NULL, env, argv);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(!strstr(r.err, "gnuplot-noise"), "gnuplot's line reached stderr: %s", r.err);
    cli_free(&r);

    /* a gnuplot that fails: its first line, in flashlab's one line */
    script(fake, "case \"$*\" in *'set terminal pngcairo; set terminal pdfcairo'*) exit 0;; esac\n"
                 "echo 'line 3: undefined variable: c1' >&2\necho 'more' >&2\nexit 1\n");
    snprintf(out, sizeof out, "%s/figs2", dir);
    const char *const argv2[] = {"flashlab", "plot", "--out", out, NULL};
    r = cli_run_in(NULL, env, argv2);
    cr_expect_eq(r.status, 1, "%s", r.err);
    const char *last = r.err + strlen(r.err);
    if (last > r.err) last--;
    while (last > r.err && last[-1] != '\n') last--;
    char want[512];
    snprintf(want, sizeof want,
             "flashlab: figures: gnuplot failed on %s/figures/fig_a_traffic_vs_M.gp (png: it said: line 3: undefined "
             "variable: c1); no figures written\n", FLASHLAB_SOURCE_DIR);
    cr_expect_str_eq(last, want);
    cr_expect(!strstr(r.err, "more"), "gnuplot's other lines reached stderr: %s", r.err);
    struct stat st;
    cr_expect(stat(out, &st) != 0, "figs2 was created");
    cli_free(&r);
}

Test(plot_output, two_runs_give_the_same_bytes)
{
    fl_time_limit(FL_T(250));
    if (!have_gnuplot()) cr_skip_test("no gnuplot");
    char dir[64], a[128], b[128], cmd[512], names[4096];
    fresh_dir(dir);
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    const char *const ra[] = {"flashlab", "plot", "--out", a, NULL}, *const rb[] = {"flashlab", "plot", "--out", b, NULL};
    cli_result r = cli_run_in(NULL, NULL, ra);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cli_free(&r);
    sleep(1); /* a date with seconds in it would differ now */
    r = cli_run_in(NULL, NULL, rb);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cli_free(&r);
    dir_entries(a, names, sizeof names);
    cr_expect(strstr(names, "fig_a_traffic_vs_M.pdf"), "%s", names);
    snprintf(cmd, sizeof cmd, "diff -r '%s' '%s' >/dev/null", a, b);
    cr_expect_eq(system(cmd), 0, "two plots differ");
    snprintf(cmd, sizeof cmd, "grep -a -q 'CreationDate (D:19700101000000Z)' '%s/fig_a_traffic_vs_M.pdf'", a);
    cr_expect_eq(system(cmd), 0, "the PDF's creation date is not the fixed one");
}

/* FLASHLAB_GNUPLOT names a program, run without a shell: shell syntax in it runs nothing. */
Test(plot_output, gnuplot_runs_without_a_shell)
{
    char dir[64], env_gp[160], mark[128];
    fresh_dir(dir);
    snprintf(mark, sizeof mark, "%s/ran", dir);
    snprintf(env_gp, sizeof env_gp, "FLASHLAB_GNUPLOT=touch %s; true", mark); /* through a shell: a mark, and a pass */
    char *env[] = {env_gp, NULL};
    const char *const argv[] = {"flashlab", "plot", "--out", dir, NULL};
    cli_result r = cli_run_in(NULL, env, argv);
    char want[512];
    snprintf(want, sizeof want,
             "figures: gnuplot with the pngcairo, pdfcairo and svg terminals was not found (touch %s; true); install "
             "it (apt-get install gnuplot-nox)", mark);
    expect_bad_r(&r, NULL, want, "FLASHLAB_GNUPLOT with shell syntax");
    struct stat st;
    cr_expect(stat(mark, &st) != 0, "a shell ran the command in FLASHLAB_GNUPLOT");
    cli_free(&r);
}
