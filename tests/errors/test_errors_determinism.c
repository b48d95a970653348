/* test_errors_determinism.c: the same command gives byte-identical output on every run
 * (docs/errors.md, "Determinism"): CSV and JSON of count and run, run twice each, in different
 * working directories and environments (locale, time zone), must compare equal byte for byte. */
#include "test_errors_util.h"

/* Runs argv twice (second time in /tmp with another locale and time zone) and expects status 0
 * and identical, non-empty stdout. */
static void expect_deterministic(const char *const argv[])
{
    static char *env2[] = {"LC_ALL=de_DE.UTF-8", "LANG=de_DE.UTF-8", "TZ=Asia/Kolkata", NULL};
    cli_result a = cli_run_in(NULL, NULL, argv);
    cli_result b = cli_run_in("/tmp", env2, argv);
    cr_expect_eq(a.status, 0, "%s %s: status %d: %s", argv[1], argv[2], a.status, a.err);
    cr_expect_eq(b.status, 0, "second run: status %d: %s", b.status, b.err);
    cr_expect_str_not_empty(a.out);
    cr_expect_str_eq(a.out, b.out, "two runs of the same command differ");
    cli_free(&a);
    cli_free(&b);
}

Test(determinism, count_csv)
{
    const char *const argv[] = {"flashlab", "count", "--algo", "all", "--N", "1000", "--d", "64",
                                "--M", "12345", "--format", "csv", NULL};
    expect_deterministic(argv);
}

Test(determinism, count_json_explain)
{
    const char *const argv[] = {"flashlab", "count", "--N", "777", "--d", "16", "--M", "4099",
                                "--format", "json", "--explain", NULL};
    expect_deterministic(argv);
}

/* Compute runs: random inputs come from --seed alone, so the errors printed are identical too. */
Test(determinism, run_csv)
{
    const char *const argv[] = {"flashlab", "run", "--N", "97", "--d", "16", "--M", "600",
                                "--seed", "20261129", "--format", "csv", NULL};
    expect_deterministic(argv);
}

/* And a different seed really changes the inputs (so the test above can fail). */
Test(determinism, seed_matters)
{
    const char *const a1[] = {"flashlab", "run", "--algo", "flash1", "--N", "97", "--d", "16",
                              "--M", "600", "--seed", "1", "--format", "json", NULL};
    const char *const a2[] = {"flashlab", "run", "--algo", "flash1", "--N", "97", "--d", "16",
                              "--M", "600", "--seed", "2", "--format", "json", NULL};
    cli_result r1 = cli_run_in(NULL, NULL, a1), r2 = cli_run_in(NULL, NULL, a2);
    cr_expect_eq(r1.status, 0);
    cr_expect_eq(r2.status, 0);
    cr_expect_str_neq(r1.out, r2.out, "seeds 1 and 2 gave the same errors");
    cli_free(&r1);
    cli_free(&r2);
}
