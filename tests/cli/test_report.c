/* test_report.c: `flashlab report` and `flashlab plot`: the report runs, prints the table beside
 * the paper's values, the fits and the examples, and writes every figure (PNG, PDF, SVG) into the
 * directory it names; without gnuplot it says so in one line, exits 2 and writes nothing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_runner.h"
#include "disk.h"

Test(report, prints_the_table_fits_examples_and_writes_every_figure)
{
    fl_time_limit(FL_T(550));
    if (!have_gnuplot()) cr_skip_test("gnuplot (pngcairo, pdfcairo, svg) is not installed: apt-get install gnuplot-nox");
    char dir[] = "/tmp/flashlab-report-XXXXXX", out[128], path[256], cmd[256];
    cr_assert(mkdtemp(dir));
    snprintf(out, sizeof out, "%s/rep", dir);
    const char *a[] = {"report", "--out", out, NULL};
    cli_result *r = cli_run(a);
    cr_assert_eq(r->status, 0, "%s", r->err);
    const char *want[] = {"standard", "flash1", "flash2", "40.3 GB", "4.4 GB", "forward + backward",
                          "-1 within 1 SE: yes", "c N²d²/M", "Omega(Nd)", "PASS", out,
                          "fp32 accumulators of rule R8", "Optimum and lower bound on both sides of M = d^2",
                          "Traffic against head dimension (figure (h)"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_assert(strstr(r->out, want[i]), "report lacks '%s':\n%s", want[i], r->out);
    cr_assert(!strstr(r->out, "FAIL"), "%s", r->out);
    const char *figs[] = {"fig_a_traffic_vs_M", "fig_b_traffic_vs_N", "fig_c_traffic_vs_Bc", "fig_d_ratio_vs_M",
                          "fig_g_bounds_vs_M", "fig_h_traffic_vs_d", "fig_i_context_parallel"};
    for (int i = 0; i < 6; i++) {
        snprintf(path, sizeof path, "%s/%s.png", out, figs[i]);
        cr_assert(file_starts_with(path, "\x89PNG"), "%s", path);
        snprintf(path, sizeof path, "%s/%s.pdf", out, figs[i]);
        cr_assert(file_starts_with(path, "%PDF"), "%s", path);
        snprintf(path, sizeof path, "%s/%s.svg", out, figs[i]);
        cr_assert(file_starts_with(path, "<?xml") || file_starts_with(path, "<svg"), "%s", path);
    }
    snprintf(path, sizeof path, "%s/data/report_sweep.csv", out);
    cr_assert(file_starts_with(path, "# flashlab"), "%s", path);
    snprintf(cmd, sizeof cmd, "ls -A %s | grep -q flashlab-tmp", out);
    cr_assert_neq(system(cmd), 0, "temporary directory left in %s", out);
    free(r);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    system(cmd);
}

Test(report, without_gnuplot_one_line_exit_2_and_no_files)
{
    char dir[] = "/tmp/flashlab-nognu-XXXXXX", out[128];
    cr_assert(mkdtemp(dir));
    snprintf(out, sizeof out, "%s/rep", dir);
    setenv("FLASHLAB_GNUPLOT", "/nonexistent/gnuplot", 1);
    const char *a[] = {"report", "--out", out, NULL};
    cli_result *r = cli_run(a);
    cr_assert_eq(r->status, 2);
    cr_assert_eq(cli_lines(r->err), 1, "%s", r->err);
    cr_assert(strstr(r->err, "gnuplot"), "%s", r->err);
    cr_assert_eq(r->out[0], 0, "a half report was printed:\n%s", r->out);
    struct stat st;
    cr_assert(stat(out, &st) != 0, "the output directory was created");
    free(r);
    const char *p[] = {"plot", "--out", out, NULL};
    r = cli_run(p);
    cr_assert_eq(r->status, 2);
    cr_assert(stat(out, &st) != 0, "plot created the output directory");
    free(r);
    rmdir(dir);
}

Test(report, no_figures_prints_the_report_and_writes_nothing)
{
    const char *a[] = {"report", "--no-figures", "--sram", "h100", NULL};
    cli_result *r = cli_run(a);
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert(strstr(r->out, "M = 131072 elements (h100"), "%s", r->out);
    cr_assert(!strstr(r->out, "Figures (a)"), "%s", r->out);
    free(r);
}

Test(report, bad_options_are_refused)
{
    const char *a[] = {"report", "--sram", "v100", NULL};
    cli_result *r = cli_run(a);
    cr_assert_eq(r->status, 2);
    cr_assert(strstr(r->err, "--sram") && cli_lines(r->err) == 1, "%s", r->err);
    free(r);
    const char *b[] = {"plot", "--out", "/tmp/it's", NULL};
    r = cli_run(b);
    cr_assert_eq(r->status, 2, "%s", r->err);
    free(r);
}

/* A report that fails after its work (here gnuplot fails on the first figure) prints nothing of
 * its text: the text is printed only when every figure is in place.  And nothing is moved in. */
Test(report, a_failure_after_the_work_prints_nothing)
{
    fl_time_limit(FL_T(600));
    char dir[] = "/tmp/flashlab-repfail-XXXXXX", out[128], fake[128];
    cr_assert(mkdtemp(dir));
    snprintf(out, sizeof out, "%s/rep", dir);
    snprintf(fake, sizeof fake, "%s/gp", dir);
    FILE *f = fopen(fake, "w");
    cr_assert(f);
    fputs("#!/bin/sh\ncase \"$*\" in *'set terminal pngcairo; set terminal pdfcairo'*) exit 0;; esac\nexit 3\n", f);
    fclose(f);
    chmod(fake, 0755);
    setenv("FLASHLAB_GNUPLOT", fake, 1);
    const char *a[] = {"report", "--out", out, NULL};
    cli_result *r = cli_run(a);
    cr_expect_eq(r->status, 1, "%s", r->err);
    cr_expect_eq(r->out[0], 0, "a failed report printed:\n%.300s", r->out);
    cr_expect_eq(cli_lines(r->err), 1, "%s", r->err);
    cr_expect(strstr(r->err, "flashlab: figures: gnuplot failed on ") == r->err, "%s", r->err);
    struct stat st;
    cr_expect(stat(out, &st) != 0, "the output directory was created");
    free(r);
}
