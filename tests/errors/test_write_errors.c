/* test_write_errors.c: a write that fails is reported, never swallowed.  Every command's stdout
 * is checked once at exit (cli/main.c): a full device, a closed stdout and a file-size limit each
 * give exit status 1 and exactly one line "flashlab: stdout: write failed (<reason>)"; a file
 * being written (--output, --out) is left as it was, with no temporary beside it. */
#include "test_errors_util.h"

#include <dirent.h>
#include <sys/stat.h>
#include "disk.h"

/* The one stderr line and status 1 of a failed write. */
static void expect_write_failure(const cli_result *r, const char *want, const char *what)
{
    char line[512];
    snprintf(line, sizeof line, "flashlab: %s\n", want);
    cr_expect_eq(r->status, 1, "%s: exit status %d, want 1 (stderr: %s)", what, r->status, r->err);
    cr_expect_str_eq(r->err, line, "%s: stderr", what);
}

static cli_result run_setup(const char *cwd, const cli_setup *su, const char *const *argv)
{
    return cli_run_ex(cwd, NULL, argv, su);
}

/* Every command that prints to stdout, and the global --help and --version. */
static const char *const printing[][16] = {
    {"flashlab", "count", NULL},
    {"flashlab", "run", "--N", "64", NULL},
    {"flashlab", "sweep", "--N", "64", "--d", "8", "--M", "1000", NULL},
    {"flashlab", "sweep", "--N", "64", "--d", "8", "--M", "1000", "--format", "json", NULL},
    {"flashlab", "bound", "--N", "512,1024,2048", "--d", "64", "--M", "4096:65536:x2", NULL},
    {"flashlab", "report", "--help", NULL},
    {"flashlab", "optimize", "--N", "256", "--d", "16", NULL},
    {"flashlab", "l2", "--algo", "flash2", "--N", "256", "--d", "64", "--Br", "64", "--Bc", "64", NULL},
    {"flashlab", "trace", NULL},
    {"flashlab", "example", "list", NULL},
    {"flashlab", "example", "two-tile", NULL},
    {"flashlab", "--help", NULL},
    {"flashlab", "--version", NULL},
    {"flashlab", "count", "--help", NULL},
};

Test(write_errors, full_stdout_is_an_error_for_every_command)
{
    const cli_setup full = {"/dev/full", 0, 0};
    for (size_t i = 0; i < sizeof printing / sizeof printing[0]; i++) {
        cli_result r = run_setup(NULL, &full, printing[i]);
        expect_write_failure(&r, "stdout: write failed (No space left on device)", printing[i][1]);
        cli_free(&r);
    }
}

Test(write_errors, closed_stdout_is_an_error_for_every_command)
{
    const cli_setup closed = {NULL, 1, 0};
    for (size_t i = 0; i < sizeof printing / sizeof printing[0]; i++) {
        cli_result r = run_setup(NULL, &closed, printing[i]);
        expect_write_failure(&r, "stdout: write failed (Bad file descriptor)", printing[i][1]);
        cli_free(&r);
    }
}

/* Writing nothing to a closed stdout is no error: sweep --output prints nothing there. */
Test(write_errors, closed_stdout_unused_is_fine)
{
    char dir[] = "/tmp/fl_wrXXXXXX";
    cr_assert(mkdtemp(dir));
    const char *const argv[] = {"flashlab", "sweep", "--N", "64", "--d", "8", "--M", "1000", "--output", "x.csv", NULL};
    const cli_setup closed = {NULL, 1, 0};
    cli_result r = run_setup(dir, &closed, argv);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cli_free(&r);
}

/* A file a command had open while stdout was closed took stdout's place: the report's own text
 * went into data/report_sweep.csv.  stdout is now held by a placeholder, and report, whose text
 * is its product, refuses at once. */
Test(write_errors, report_with_closed_stdout_writes_nothing)
{
    char dir[] = "/tmp/fl_wrXXXXXX", rep[64];
    cr_assert(mkdtemp(dir));
    snprintf(rep, sizeof rep, "%s/rep", dir);
    const char *const argv[] = {"flashlab", "report", "--out", rep, NULL};
    const cli_setup closed = {NULL, 1, 0};
    cli_result r = run_setup(dir, &closed, argv);
    expect_write_failure(&r, "stdout: not open for writing; nothing done", "report >&-");
    struct stat st;
    cr_expect(stat(rep, &st) != 0, "report created %s", rep);
    cli_free(&r);
}

/* A file-size limit (ulimit -f) cuts the CSV: the write fails (EFBIG), the old file stays. */
Test(write_errors, file_size_limit_keeps_the_old_output)
{
    char dir[] = "/tmp/fl_wrXXXXXX", path[64], names[512];
    cr_assert(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/big.csv", dir);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs("old\n", f);
    fclose(f);
    const char *const argv[] = {"flashlab", "sweep", "--N", "64:4096:x2", "--d", "8:64:x2", "--M", "1000,2000", "--output",
                                "big.csv", NULL};
    const cli_setup limit = {NULL, 0, 4096};
    cli_result r = run_setup(dir, &limit, argv);
    cr_expect_eq(r.status, 1, "status %d: %s", r.status, r.err);
    cr_expect_str_eq(r.err, "flashlab: --output: writing big.csv failed (File too large); nothing written\n");
    f = fopen(path, "r");
    char buf[16] = "";
    cr_assert(f && fgets(buf, sizeof buf, f));
    fclose(f);
    cr_expect_str_eq(buf, "old\n", "big.csv was changed");
    dir_entries(dir, names, sizeof names);
    cr_expect_str_eq(names, "big.csv ", "left in the directory: %s", names);
    cli_free(&r);
}

/* The same limit on stdout itself (redirected to a file). */
Test(write_errors, file_size_limit_on_stdout)
{
    char dir[] = "/tmp/fl_wrXXXXXX", path[64];
    cr_assert(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/out.csv", dir);
    close(open(path, O_WRONLY | O_CREAT, 0644));
    const char *const argv[] = {"flashlab", "sweep", "--N", "64:4096:x2", "--d", "8:64:x2", "--M", "1000,2000", NULL};
    const cli_setup limit = {path, 0, 4096};
    cli_result r = run_setup(dir, &limit, argv);
    expect_write_failure(&r, "stdout: write failed (File too large); sweep stopped", "sweep >out.csv");
    cli_free(&r);
}

/* The limit on the figures: gnuplot ends (SIGXFSZ) or a CSV write fails; either way nothing
 * appears in the output directory and no staging directory is left. */
Test(write_errors, file_size_limit_on_figures)
{
    fl_time_limit(FL_T(250));
    if (system("gnuplot -e 'set terminal pngcairo' >/dev/null 2>&1") != 0) cr_skip_test("no gnuplot");
    char dir[] = "/tmp/fl_wrXXXXXX", names[512];
    cr_assert(mkdtemp(dir));
    const char *const argv[] = {"flashlab", "plot", "--out", "figs", NULL};
    const cli_setup limit = {NULL, 0, 16384};
    cli_result r = run_setup(dir, &limit, argv);
    cr_expect_eq(r.status, 1, "status %d: %s", r.status, r.err);
    const char *last = strrchr(r.err, '\n'), *prev = last;
    while (prev > r.err && prev[-1] != '\n') prev--;
    cr_expect(strstr(prev, "flashlab: figures: ") == prev &&
                  (strstr(prev, "File too large") || strstr(prev, "file-size limit")),
              "last line: %s", prev);
    dir_entries(dir, names, sizeof names);
    cr_expect_str_eq(names, "", "left in the directory: %s", names);
    cli_free(&r);
}

/* The report's text is printed at its end: a full stdout is found there and reported (the
 * report's whole sweep runs first: this test takes as long as `report --no-figures`). */
Test(write_errors, report_to_a_full_stdout)
{
    fl_time_limit(FL_T(600));
    const char *const argv[] = {"flashlab", "report", "--no-figures", NULL};
    const cli_setup full = {"/dev/full", 0, 0};
    cli_result r = run_setup(NULL, &full, argv);
    expect_write_failure(&r, "stdout: write failed (No space left on device)", "report --no-figures >/dev/full");
    cli_free(&r);
}
