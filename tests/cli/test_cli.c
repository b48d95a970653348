/* test_cli.c: the flashlab command line: outputs, the CSV contract, and bad input (one line on
 * stderr naming the option, exit status 2, nothing on stdout). */
#include <criterion/criterion.h>
#include <math.h>

#include "cli_runner.h"

/* The value in column `col` of the CSV row whose first field is `algo` (NAN if absent). */
static double csv_field(const char *csv, const char *algo, const char *col)
{
    char buf[65536];
    snprintf(buf, sizeof buf, "%s", csv);
    char *save, *header = strtok_r(buf, "\n", &save), *row;
    while ((row = strtok_r(NULL, "\n", &save)))
        if (strncmp(row, algo, strlen(algo)) == 0 && row[strlen(algo)] == ',') break;
    if (!row) return NAN;
    char *hs, *rs, *h = strtok_r(header, ",", &hs), *v = strtok_r(row, ",", &rs);
    for (; h && v; h = strtok_r(NULL, ",", &hs), v = strtok_r(NULL, ",", &rs))
        if (strcmp(h, col) == 0) return strtod(v, NULL);
    return NAN;
}

Test(cli, count_csv_flash1_agrees_with_the_formula)
{
    const char *a[] = {"count", "--algo", "flash1", "--N", "4096", "--d", "64", "--M", "65536",
                       "--format", "csv", NULL};
    cli_result *r = cli_run(a);
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert(strncmp(r->out, "algo,N,d,M,Br,Bc,hbm_reads,hbm_writes,hbm_total,sram_peak,closed_form_total",
                      strlen("algo,N,d,M,Br,Bc,hbm_reads,hbm_writes,hbm_total,sram_peak,closed_form_total")) == 0,
              "%s", r->out);
    /* Tc = 4096/256 = 16: reads 2Nd + Tc(2Nd + 2N) = 9043968, writes 4595712, total 13639680 */
    cr_assert(strstr(r->out, "\nflash1,4096,64,65536,64,256,9043968,4595712,13639680,57728,13639680,"),
              "%s", r->out);
    cr_assert_eq(cli_lines(r->out), 2);
    free(r);
}

Test(cli, count_all_schedules_csv_has_one_row_each)
{
    const char *a[] = {"count", "--N", "1024", "--format", "csv", NULL};
    cli_result *r = cli_run(a);
    cr_assert_eq(r->status, 0);
    cr_assert_eq(cli_lines(r->out), 4, "%s", r->out);
    cr_assert(strstr(r->out, "\nstandard,") && strstr(r->out, "\nflash1,") && strstr(r->out, "\nflash2,"));
    free(r);
}

Test(cli, run_csv_reports_errors_against_the_reference)
{
    const char *a[] = {"run", "--N", "100", "--d", "16", "--M", "3000", "--format", "csv", NULL};
    cli_result *r = cli_run(a);
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert(strstr(r->out, ",max_abs_err,rel_err"), "%s", r->out);
    /* the flash1 row's max_abs_err and rel_err, found by the header's column names */
    double abs_err = csv_field(r->out, "flash1", "max_abs_err");
    double rel_err = csv_field(r->out, "flash1", "rel_err");
    cr_assert(rel_err <= 1e-12 && abs_err <= 1e-12, "%g %g", abs_err, rel_err);
    free(r);
}

Test(cli, json_is_an_array_with_per_tensor_counts)
{
    const char *a[] = {"count", "--algo", "flash2", "--N", "300", "--format", "json", NULL};
    cli_result *r = cli_run(a);
    cr_assert_eq(r->status, 0);
    cr_assert_eq(r->out[0], '[');
    cr_assert(strstr(r->out, "\"tensors\": {\"Q\": {\"reads\": 19200, \"writes\": 0"), "%s", r->out);
    cr_assert(strstr(r->out, "\"L\": {\"reads\": 0, \"writes\": 300, \"bytes_per_element\": 4}"), "%s", r->out);
    free(r);
}

Test(cli, explain_shows_the_paper_sizes_and_their_footprint)
{
    const char *a[] = {"count", "--algo", "flash1", "--N", "4096", "--d", "128", "--M", "8192", "--explain", NULL};
    cli_result *r = cli_run(a);
    cr_assert_eq(r->status, 0);
    cr_assert(strstr(r->out, "Bc = ceil(M/4d) = 16, Br = min(Bc, d) = 16"), "%s", r->out);
    cr_assert(strstr(r->out, "= 8544 elements (docs/model.md eq. F1): MORE than M"), "%s", r->out);
    cr_assert(strstr(r->out, "chosen: Br = 15, Bc = 15"), "%s", r->out);
    free(r);
}

Test(cli, version_and_help)
{
    const char *v[] = {"--version", NULL};
    cli_result *r = cli_run(v);
    cr_assert_eq(r->status, 0);
    cr_assert(strncmp(r->out, "flashlab ", 9) == 0);
    free(r);
    const char *cmds[] = {"count", "run", "example"};
    for (int i = 0; i < 3; i++) {
        const char *h[] = {cmds[i], "--help", NULL};
        r = cli_run(h);
        cr_assert_eq(r->status, 0, "%s --help", cmds[i]);
        cr_assert(strstr(r->out, "usage: flashlab"), "%s", r->out);
        free(r);
    }
}

Test(cli, example_two_tile_and_list)
{
    const char *a[] = {"example", "two-tile", NULL};
    cli_result *r = cli_run(a);
    cr_assert_eq(r->status, 0);
    cr_assert(strstr(r->out, "[1.37497284, 0.50582424]") && strstr(r->out, "[4.379542, 5.620458]"));
    free(r);
    const char *l[] = {"example", "list", NULL};
    r = cli_run(l);
    cr_assert_eq(r->status, 0);
    cr_assert(strstr(r->out, "two-tile"));
    free(r);
}

/* Bad input: each gets exactly one line on stderr naming the option, exit 2, empty stdout. */
typedef struct {
    const char *args[12];
    const char *needle;
} bad_case;

static bad_case bad_cases[] = {
    {{"count", "--N", "0"}, "--N"},
    {{"count", "--N", "-5"}, "--N"},
    {{"count", "--N", "abc"}, "--N"},
    {{"count", "--N", "12.5"}, "--N"},
    {{"count", "--N", "99999999999999999999999"}, "--N"},
    {{"count", "--d", "0"}, "--d"},
    {{"count", "--d", ""}, "--d"},
    {{"count", "--N"}, "--N: needs a value"},
    {{"count", "--algo", "Flash_X"}, "--algo"},
    {{"count", "--algo", "flash1,flash1"}, "--algo"},
    {{"count", "--algo", "flash1", "--M", "100", "--d", "64"}, "--M"},
    {{"count", "--algo", "flash2", "--Br", "4096", "--Bc", "4096"}, "--Br/--Bc"},
    {{"count", "--N", "4294967296", "--d", "4294967296", "--M", "4294967296"}, "overflow"},
    {{"count", "--format", "xml"}, "--format"},
    {{"count", "--bogus", "1"}, "--bogus"},
    {{"count", "stray"}, "stray"},
    {{"run", "--algo", "standard", "--N", "100000"}, "use count"},
    {{"count", "--algo", "flash1", "--N", "1048576", "--M", "4096"}, "--max-events"},
    {{"example", "nope"}, "nope"},
    {{"nosuchcommand"}, "nosuchcommand"},
};

Test(cli, bad_input_is_one_line_and_exit_2)
{
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        const bad_case *c = &bad_cases[i];
        cli_result *r = cli_run(c->args);
        cr_assert_eq(r->status, 2, "case %zu (%s): status %d, stderr: %s", i, c->needle, r->status, r->err);
        cr_assert_eq(cli_lines(r->err), 1, "case %zu: stderr must be one line: %s", i, r->err);
        cr_assert(strstr(r->err, c->needle), "case %zu: stderr '%s' lacks '%s'", i, r->err, c->needle);
        cr_assert_eq(r->out[0], 0, "case %zu: stdout must be empty, got: %s", i, r->out);
        free(r);
    }
}
