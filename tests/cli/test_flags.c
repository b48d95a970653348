/* test_flags.c: a flag (an option without a value) takes no "=value": `--M-upto-Nd=false` once
 * switched the flag on.  Every flag of every command, given any value (true, false, no, 0, or
 * nothing after '='), is refused with exit status 2 and one line naming it; without a value it
 * is accepted. */
#include "test_errors_util.h"

typedef struct {
    const char *cmd[12]; /* the command and the arguments that make it cheap */
    const char *flag;
} flag_case;

static const flag_case cases[] = {
    {{"count"}, "--explain"},
    {{"count"}, "--help"},
    {{"run", "--N", "64"}, "--explain"},
    {{"run"}, "--help"},
    {{"sweep", "--N", "64", "--d", "8", "--M", "500,1000"}, "--M-upto-Nd"},
    {{"sweep", "--N", "64", "--d", "8", "--M", "1000"}, "--progress"},
    {{"sweep"}, "--help"},
    {{"bound", "--N", "512,1024,2048", "--d", "64", "--M", "4096:65536:x2"}, "--all-N"},
    {{"bound"}, "--help"},
    {{"bound"}, "--problem"},
    {{"bound", "--problem"}, "--help"},
    {{"report"}, "--no-figures"},
    {{"report"}, "--help"},
    {{"plot"}, "--help"},
    {{"optimize"}, "--help"},
    {{"l2", "--algo", "flash2", "--N", "256", "--d", "64", "--Br", "64", "--Bc", "64"}, "--no-flush"},
    {{"l2"}, "--help"},
    {{"l2", "--launch", "fwd-q"}, "--help"},
    {{"trace"}, "--compute"},
    {{"trace"}, "--help"},
    {{"gpus"}, "--help"},
    {{"schedules"}, "--help"},
};

/* Runs `flashlab CMD... ARG` (ARG last). */
static cli_result run_with(const flag_case *c, const char *arg)
{
    const char *argv[16] = {"flashlab"};
    int n = 1;
    for (int i = 0; i < 12 && c->cmd[i]; i++) argv[n++] = c->cmd[i];
    argv[n++] = arg;
    argv[n] = NULL;
    return cli_run_in(NULL, NULL, argv);
}

Test(flags, a_flag_with_a_value_is_refused)
{
    fl_time_limit(FL_T(120));
    static const char *const values[] = {"false", "no", "0", "yes", ""};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (size_t k = 0; k < sizeof values / sizeof values[0]; k++) {
            char arg[64], want[160];
            snprintf(arg, sizeof arg, "%s=%s", cases[i].flag, values[k]);
            snprintf(want, sizeof want, "%s: is a flag and takes no value (got '=%s')", cases[i].flag, values[k]);
            cli_result r = run_with(&cases[i], arg);
            expect_bad_r(&r, NULL, want, arg);
            cli_free(&r);
        }
}

/* The same flags without a value work (so the refusals above are about the value); report
 * --no-figures runs the whole default sweep, so it is left to test_report.c. */
Test(flags, a_flag_without_a_value_is_accepted)
{
    fl_time_limit(FL_T(120));
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (!strcmp(cases[i].cmd[0], "report") && strcmp(cases[i].flag, "--help")) continue;
        cli_result r = run_with(&cases[i], cases[i].flag);
        cr_expect_eq(r.status, 0, "%s %s: status %d: %s", cases[i].cmd[0], cases[i].flag, r.status, r.err);
        cr_expect_str_not_empty(r.out, "%s %s: no output", cases[i].cmd[0], cases[i].flag);
        cli_free(&r);
    }
}

/* The global flags and example's. */
Test(flags, global_and_example_flags)
{
    EXPECT_BAD("--help: is a flag and takes no value (got '=1')", "--help=1");
    EXPECT_BAD("--version: is a flag and takes no value (got '=no')", "--version=no");
    EXPECT_BAD("--help: is a flag and takes no value (got '=x')", "example", "--help=x");
}
