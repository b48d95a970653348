/* test_errors_cli.c: the catalogue of bad inputs to the flashlab CLI (docs/errors.md, sections
 * "Numbers", "Names and lists", "Sizes", "Command line"), each run through the built binary:
 * exit status 2, nothing on stdout, exactly the one line the catalogue gives on stderr.
 * Fuzzer findings and their fixes are tested in test_errors_regress.c. */
#include "test_errors_util.h"

#include <flashlab/schedule.h>

/* ---- Numbers: --N, --d, --M, --Br, --Bc (integers in [1, 2^61 - 1]) -------------------- */

Test(errors_cli, size_zero)
{
    EXPECT_BAD("--N: 0 is out of range (must be between 1 and 2305843009213693951)", "count", "--N", "0");
    EXPECT_BAD("--d: 0 is out of range (must be between 1 and 2305843009213693951)", "run", "--d", "0");
    EXPECT_BAD("--M: 0 is out of range (must be between 1 and 2305843009213693951)", "count", "--M", "0");
    EXPECT_BAD("--Br: 0 is out of range (must be between 1 and 2305843009213693951)", "count", "--Br", "0");
    EXPECT_BAD("--Bc: 0 is out of range (must be between 1 and 2305843009213693951)", "count", "--Bc=0");
}

Test(errors_cli, size_negative)
{
    EXPECT_BAD("--N: -5 is out of range (must be between 1 and 2305843009213693951)", "count", "--N", "-5");
    EXPECT_BAD("--d: -0 is out of range (must be between 1 and 2305843009213693951)", "count", "--d=-0");
    EXPECT_BAD("--Bc: -1 is out of range (must be between 1 and 2305843009213693951)", "run", "--Bc", "-1");
}

Test(errors_cli, size_not_a_number)
{
    EXPECT_BAD("--N: 'abc' is not an integer", "count", "--N", "abc");
    EXPECT_BAD("--N: ' 64' is not an integer", "count", "--N", " 64");
    EXPECT_BAD("--d: '0x40' is not an integer (whole numbers only, no 'x')", "count", "--d", "0x40");
    EXPECT_BAD("--M: '64 ' is not an integer (whole numbers only, no ' ')", "count", "--M", "64 ");
    EXPECT_BAD("--N: needs an integer value", "count", "--N=");
    EXPECT_BAD("--N: needs a value", "count", "--N");
}

Test(errors_cli, size_fractional_or_exponent)
{
    EXPECT_BAD("--N: '1.5' is not an integer (whole numbers only, no '.')", "count", "--N", "1.5");
    EXPECT_BAD("--N: '1e3' is not an integer (whole numbers only, no 'e')", "count", "--N", "1e3");
    EXPECT_BAD("--M: 'inf' is not an integer", "count", "--M", "inf");
    EXPECT_BAD("--M: 'nan' is not an integer", "count", "--M", "nan");
}

Test(errors_cli, size_huge)
{
    EXPECT_BAD("--N: 99999999999999999999 is out of range (must be between 1 and 2305843009213693951)",
               "count", "--N", "99999999999999999999");
    EXPECT_BAD("--M: 2305843009213693952 is out of range (must be between 1 and 2305843009213693951)",
               "count", "--M", "2305843009213693952");
}

Test(errors_cli, seed_and_max_events)
{
    EXPECT_BAD("--seed: '-1' is not a non-negative integer", "run", "--seed", "-1");
    EXPECT_BAD("--seed: '+1' is not a non-negative integer", "run", "--seed", "+1");
    EXPECT_BAD("--seed: 18446744073709551616 does not fit in 64 bits", "run", "--seed", "18446744073709551616");
    EXPECT_BAD("--max-events: -1 is out of range (must be between 0 and 9223372036854775807)",
               "count", "--max-events", "-1");
    EXPECT_BAD("--max-events: standard at N = 65536, d = 64, M = 4096 makes 34042315 tile events (under a "
               "second here), more than the limit 1000; raise --max-events or M",
               "count", "--algo", "standard", "--N", "65536", "--d", "64", "--M", "4096", "--max-events", "1000");
}

/* ---- Names and lists ------------------------------------------------------------------------ */

Test(errors_cli, unknown_names)
{
    char want[1200]; /* the choices are the registry's, whatever it holds */
    snprintf(want, sizeof want, "--algo: unknown schedule 'Flash_X' (choose %s)", fl_algo_choices());
    EXPECT_BAD(want, "count", "--algo", "Flash_X");
    snprintf(want, sizeof want, "--algo: unknown schedule 'Flash1' (choose %s)", fl_algo_choices());
    EXPECT_BAD(want, "count", "--algo", "Flash1");
    EXPECT_BAD("--format: unknown format 'xml' (choose table, csv or json)", "count", "--format", "xml");
    /* the commands that print a table or a CSV (and nothing else) */
    EXPECT_BAD("--format: unknown format 'xml' (choose table or csv)", "bound", "--problem", "--format", "xml");
    EXPECT_BAD("--format: unknown format 'json' (choose table or csv)", "optimize", "--format", "json");
    EXPECT_BAD("--format: unknown format 'CSV' (choose table or csv)", "l2", "--format", "CSV");
    EXPECT_BAD("--format: unknown format '' (choose table or csv)", "l2", "--launch", "fwd-q", "--format=");
    EXPECT_BAD("--frobnicate: unknown option for count (see flashlab count --help)", "count", "--frobnicate", "3");
    EXPECT_BAD("--n: unknown option for run (see flashlab run --help)", "run", "--n", "3");
    EXPECT_BAD("'N': expected an option such as --N 1024 (see --help)", "count", "N", "3");
    EXPECT_BAD("'--': expected an option such as --N 1024 (see --help)", "count", "--");
    EXPECT_BAD("'frob': unknown command (see flashlab --help)", "frob");
    EXPECT_BAD("example: unknown example 'nope' (see flashlab example list)", "example", "nope");
    EXPECT_BAD("example: takes one name, got 'extra' too", "example", "list", "extra");
}

Test(errors_cli, algo_list_repeat)
{
    EXPECT_BAD("--algo: 'flash1' is listed twice", "count", "--algo", "flash1,flash2,flash1");
}

/* ---- Sizes: SRAM, overrides, overflow, compute limits --------------------------------------- */

Test(errors_cli, M_below_smallest_tile)
{
    EXPECT_BAD("--M: standard needs at least 3 elements of SRAM for its smallest tiles (Br = Bc = 1, d = 1); "
               "M = 2 is too small", "count", "--algo", "standard", "--d", "1", "--M", "2");
    EXPECT_BAD("--M: flash1 needs at least 263 elements of SRAM for its smallest tiles (Br = Bc = 1, d = 64); "
               "M = 262 is too small", "count", "--algo", "flash1", "--M", "262");
    EXPECT_BAD("--M: flash2 needs at least 259 elements of SRAM for its smallest tiles (Br = Bc = 1, d = 64); "
               "M = 258 is too small", "run", "--algo", "flash2", "--M", "258", "--N", "8");
    /* the boundary: exactly the smallest footprint runs */
    EXPECT_OK("count", "--algo", "flash2", "--M", "259", "--N", "8");
}

Test(errors_cli, override_does_not_fit)
{
    EXPECT_BAD("--Br/--Bc: flash2 blocks Br = 4096, Bc = 210 need 1419520 elements of SRAM "
               "(docs/model.md eq. F2), more than M = 98304", "count", "--algo", "flash2", "--Br", "4096");
    EXPECT_BAD("--Br/--Bc: flash1 blocks Br = 64, Bc = 100000 need 19208576 elements of SRAM "
               "(docs/model.md eq. F1), more than M = 98304", "count", "--algo", "flash1", "--Bc", "100000");
    EXPECT_BAD("--Br/--Bc: standard blocks Br = 99999, Bc = 8 need 899999 elements of SRAM "
               "(docs/model.md eq. F0), more than M = 98304", "count", "--algo", "standard", "--Br", "99999", "--N", "8");
    /* the product of two overrides overflows: still the one line, never a wrap-around */
    EXPECT_BAD_NAMES("--Br/--Bc", "count", "--algo", "flash2", "--Br", "2305843009213693951", "--Bc",
                     "2305843009213693951", "--M", "2305843009213693951");
}

Test(errors_cli, counts_overflow_64_bits)
{
    EXPECT_BAD("--N/--d: counts for N = 3037000500, d = 3037000500 would overflow 64-bit arithmetic",
               "count", "--algo", "flash2", "--N", "3037000500", "--d", "3037000500", "--M", "2305843009213693951");
    EXPECT_BAD("--N/--d: counts for N = 2305843009213693951, d = 1 would overflow 64-bit arithmetic",
               "count", "--algo", "flash2", "--N", "2305843009213693951", "--d", "1", "--M", "100");
    EXPECT_BAD("--N/--d: counts for N = 4294967296, d = 64 would overflow 64-bit arithmetic",
               "count", "--algo", "standard", "--N", "4294967296");
}

Test(errors_cli, compute_run_too_large)
{
    EXPECT_BAD("--N/--d: a compute run of standard at N = 100000, d = 64 (100000 query rows over all heads) would hold more than 134217728 "
               "values in HBM; use count (no arithmetic) for sizes this large", "run", "--N", "100000", "--max-macs", "0");
    EXPECT_BAD("--N/--d: a compute run of flash2 at N = 4194304, d = 64 (4194304 query rows over all heads) would hold more than 134217728 "
               "values in HBM; use count (no arithmetic) for sizes this large",
               "run", "--algo", "flash2", "--N", "4194304", "--max-macs", "0");
    /* many short sequences: the values' limit alone refuses, the arithmetic being small */
    EXPECT_BAD("--N/--d: a compute run of flash2 at N = 1, d = 1 (33554432 query rows over all heads) would hold more than "
               "134217728 values in HBM; use count (no arithmetic) for sizes this large",
               "run", "--algo", "flash2", "--N", "1", "--d", "1", "--batch", "33554432");
}

/* ---- The command line itself ---------------------------------------------------------------- */

Test(errors_cli, no_command_prints_usage)
{
    const char *const argv[] = {"flashlab", NULL};
    cli_result r = cli_run_in(NULL, NULL, argv);
    cr_expect_eq(r.status, 2);
    cr_expect_str_empty(r.out);
    cr_expect(strstr(r.err, "usage: flashlab COMMAND") != NULL, "usage on stderr: %s", r.err);
    cli_free(&r);
}

/* An error anywhere in the command line prints nothing of the results: all schedules run
 * before the first row is written. */
Test(errors_cli, no_partial_output)
{
    EXPECT_BAD_NAMES("--M", "count", "--algo", "flash2,standard,flash1", "--M", "260", "--d", "64", "--N", "16");
    EXPECT_BAD_NAMES("--format", "count", "--format", "csv", "--N", "16", "--format", "yaml");
}

/* ---- Long values: a message quotes at most 200 characters of one, then "...", so the rule
 * after it is never cut off (fl_last_error holds 1023 characters). ------------------------- */

/* A string of n copies of c, in a static buffer of its own (k = 0..3). */
static const char *repeat(int k, char c, int n)
{
    static char buf[4][4096];
    memset(buf[k], c, (size_t)n);
    buf[k][n] = 0;
    return buf[k];
}

/* The message must end with `tail` and quote `shown` (the 200 characters and "...") . */
static void expect_long(const char *const argv[], const char *head, const char *tail)
{
    cli_result r = cli_run_in(NULL, NULL, argv);
    char want[8800];
    snprintf(want, sizeof want, "flashlab: %s%s\n", head, tail);
    cr_expect_eq(r.status, 2, "status %d", r.status);
    cr_expect_str_eq(r.err, want);
    cr_expect_str_empty(r.out);
    cli_free(&r);
}

Test(errors_cli, long_values_are_shown_cut)
{
    char head[4400];
    const char *nines = repeat(0, '9', 3000), *xs = repeat(1, 'x', 3000);
    snprintf(head, sizeof head, "--N: %s...", repeat(2, '9', 200));
    expect_long((const char *const[]){"flashlab", "count", "--N", nines, NULL}, head,
                " is out of range (must be between 1 and 2305843009213693951)");
    snprintf(head, sizeof head, "--seed: '%s...'", repeat(2, 'x', 200));
    expect_long((const char *const[]){"flashlab", "run", "--seed", xs, NULL}, head, " is not a non-negative integer");
    char opt[4200];
    snprintf(opt, sizeof opt, "--%s", xs);
    snprintf(head, sizeof head, "--%s...", repeat(2, 'x', 58));
    expect_long((const char *const[]){"flashlab", "count", opt, "1", NULL}, head,
                ": unknown option for count (see flashlab count --help)");
    snprintf(head, sizeof head, "'%s...'", repeat(2, 'x', 200));
    expect_long((const char *const[]){"flashlab", xs, NULL}, head, ": unknown command (see flashlab --help)");
    snprintf(head, sizeof head, "example: unknown example '%s...'", repeat(2, 'x', 200));
    expect_long((const char *const[]){"flashlab", "example", xs, NULL}, head, " (see flashlab example list)");
    char path[4200];
    snprintf(path, sizeof path, "/nonexistent/%s", xs);
    snprintf(head, sizeof head, "--output: cannot create /nonexistent/%s...", repeat(2, 'x', 187));
    expect_long((const char *const[]){"flashlab", "sweep", "--output", path, NULL}, head, " (No such file or directory)");
    snprintf(head, sizeof head, "--window: '%s...'", repeat(2, '1', 200));
    expect_long((const char *const[]){"flashlab", "count", "--window", repeat(3, '1', 3000), NULL}, head,
                " is not a comma-separated list of integers");
}

/* A schedule name is quoted whole by the schedule list's parser (cli/listparse.c) and by
 * fl_algo_parse (src/problem/problem.c), and fl_fail (src/base/status.c) cuts every message at
 * 1023 characters: the rule is lost.  Enabled when those quote through fl_shown, or fl_fail keeps
 * the end of a message it must shorten. */
Test(errors_cli, long_schedule_name_is_shown_cut)
{
    char head[4400];
    char tail[1200];
    snprintf(head, sizeof head, "--algo: unknown schedule '%s...'", repeat(2, 'x', 200));
    snprintf(tail, sizeof tail, " (choose %s)", fl_algo_choices());
    expect_long((const char *const[]){"flashlab", "count", "--algo", repeat(0, 'x', 3000), NULL}, head, tail);
}

/* A pool of 2^61 - 1 pages: the K cache of pool x page-size rows does not fit 64 bits, and the
 * machine (src/machine/machine.c, adding tensor K) says "decode: tensor K must have a positive size
 * that fits 64 bits", naming no option.  Enabled when decode's problem check
 * (src/problem/problem.c) refuses such a pool naming --pool-pages. */
Test(errors_cli, huge_pool_names_pool_pages)
{
    EXPECT_BAD_NAMES("--pool-pages", "count", "--algo", "decode", "--N", "4", "--Nk", "100", "--page-size", "16",
                     "--pool-pages", "2305843009213693951");
}
