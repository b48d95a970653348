/* test_jobs.c: --jobs changes how a command runs, never what it prints: sweep (csv, table, json,
 * skipped lines, a work limit refused), optimize over a list of M, bound's fits and the report's
 * text are byte for byte the same with --jobs 1 and --jobs 3. */
#include "test_errors_util.h"

/* Runs args with --jobs 1 and --jobs 3 (appended) and compares stdout, stderr and status. */
static void same(const char *const *args)
{
    const char *argv[48] = {"flashlab"};
    int n = 1;
    while (args[n - 1]) argv[n] = args[n - 1], n++;
    argv[n] = "--jobs", argv[n + 2] = NULL;
    argv[n + 1] = "1";
    cli_result one = cli_run_in(NULL, NULL, argv);
    argv[n + 1] = "3";
    cli_result three = cli_run_in(NULL, NULL, argv);
    cr_assert_eq(one.status, three.status, "%s: status %d vs %d", args[0], one.status, three.status);
    cr_assert_str_eq(one.out, three.out, "%s: stdout differs between --jobs 1 and --jobs 3", args[0]);
    cr_assert_str_eq(one.err, three.err, "%s: stderr differs", args[0]);
    cr_assert(one.out[0] || one.err[0], "%s: printed nothing", args[0]);
    cli_free(&one);
    cli_free(&three);
}

Test(jobs, sweep_is_the_same_for_any_jobs)
{
    fl_time_limit(FL_T(600));
    const char *const csv[] = {"sweep", "--N", "64:4096:x2", "--d", "16,64", "--M", "60,256:65536:x4", "--pass", "fwd+bwd",
                               "--causal", "top-left", "--heads", "4", "--kv-heads", "2", NULL};
    same(csv);
    const char *const table[] = {"sweep", "--N", "64:1024:x2", "--d", "16", "--M", "60,4096", "--format", "table", NULL};
    same(table);
    const char *const json[] = {"sweep", "--N", "64:1024:x2", "--d", "16", "--M", "60,4096", "--format", "json", NULL};
    same(json);
    const char *const refused[] = {"sweep", "--N", "64:4096:x2", "--max-total-events", "1000", NULL};
    same(refused);
}

Test(jobs, optimize_and_bound_are_the_same_for_any_jobs)
{
    fl_time_limit(FL_T(600));
    const char *const table[] = {"optimize", "--N", "1024", "--d", "64", "--M", "64:262144:x2", NULL};
    same(table);
    const char *const csv[] = {"optimize", "--N", "512", "--d", "32", "--M", "256:65536:x2", "--pass", "fwd+bwd",
                               "--format", "csv", NULL};
    same(csv);
    const char *const bound[] = {"bound", "--N", "512:8192:x2", "--d", "32,64", "--M", "1024:524288:x2", NULL};
    same(bound);
}

Test(jobs, report_is_the_same_for_any_jobs)
{
    fl_time_limit(FL_T(1200));
    const char *const report[] = {"report", "--no-figures", NULL};
    same(report);
}

Test(jobs, bad_jobs_are_refused)
{
    EXPECT_BAD_NAMES("--jobs", "sweep", "--jobs", "0");
    EXPECT_BAD_NAMES("--jobs", "optimize", "--jobs", "-1");
    EXPECT_BAD_NAMES("--jobs", "bound", "--jobs", "1025");
    EXPECT_BAD_NAMES("--jobs", "report", "--jobs", "two");
    EXPECT_BAD_NAMES("--jobs", "plot", "--jobs", "");
}
