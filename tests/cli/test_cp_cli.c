/* test_cp_cli.c: `flashlab cp`: the ring attention paper's Table 2 reproduced by --overlap-table,
 * the CSV's rows are the library's counts, bad input is one line and exit 2, --output is all or
 * nothing. */
#include "test_errors_util.h"

#include <inttypes.h>

#include "cp.h"

/* The row of host `name` in the overlap table: c (model) and paper c (x1e3). */
static int table_row(const char *out, const char *name, long long *c, double *paper)
{
    char key[64];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *l = strstr(out, key);
    double tf, gbs, closed;
    char pc[16];
    return l && sscanf(l + 1, "%*s %lf %lf %lld %lf %15s", &tf, &gbs, c, &closed, pc) == 5 &&
           sscanf(pc, "%lf", paper) == 1;
}

Test(cp_cli, overlap_table_reproduces_liu_et_al_table_2)
{
    const char *const argv[] = {"flashlab", "cp", "--overlap-table", NULL};
    cli_result r = cli_run_in(NULL, NULL, argv);
    cr_assert_eq(r.status, 0, "%s", r.err);
    long long c;
    double paper;
    cr_assert(table_row(r.out, "a100-nvlink", &c, &paper), "%s", r.out);
    cr_assert_eq(c, 1040, "A100 NVLink: F / B = 312e12 / 300e9 = 1040 rows; got %lld", c);
    cr_assert_eq(paper, 1.0, "the paper's 1.0K");
    cr_assert(table_row(r.out, "a100-ib", &c, &paper), "%s", r.out);
    cr_assert_eq(c, 24960, "A100 InfiniBand: 312e12 / 12.5e9 = 24960 rows; got %lld", c);
    cr_assert_eq(paper, 24.5, "the paper's 24.5K");
    cr_assert(table_row(r.out, "tpu-v4", &c, &paper), "%s", r.out);
    cr_assert_eq(c, 1027, "TPU v4: 275e12 / 268e9 = 1026.1, so 1027 rows; got %lld", c);
    cli_free(&r);
}

Test(cp_cli, csv_rows_are_the_library_counts)
{
    const char *const argv[] = {"flashlab", "cp", "--N", "96", "--d", "16", "--devices", "4", "--cp", "striped",
                                "--causal", "top-left", "--heads", "4", "--kv-heads", "2", "--pass", "fwd+bwd",
                                "--format", "csv", NULL};
    cli_result r = cli_run_in(NULL, NULL, argv);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "# command: flashlab cp --N 96"), "%s", r.out);
    fl_cp_spec s;
    memset(&s, 0, sizeof s);
    s.kind = FL_CP_STRIPED, s.P = 4, s.p = fl_problem_default();
    s.p.N = 96, s.p.d = 16, s.p.causal = FL_CAUSAL_TOP_LEFT, s.p.heads = 4, s.p.kv_heads = 2, s.p.pass = FL_PASS_FWD_BWD;
    fl_cp_result res;
    cr_assert_eq(fl_cp_run(&s, &res), FL_OK);
    int rows = 0;
    for (const char *l = strstr(r.out, "\nfwd,"); l; l = strchr(l + 1, '\n')) {
        char pass[8];
        long long v[13];
        if (sscanf(l + 1, "%3[a-z],%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld", pass, &v[0], &v[1],
                   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10], &v[11], &v[12]) != 14)
            break;
        const fl_cp_pass *x = &res.dev[strcmp(pass, "bwd") == 0][v[0]];
        cr_assert_eq(v[1], x->kernels);
        cr_assert_eq(v[2] + v[3], x->kernel_reads + x->kernel_writes);
        cr_assert_eq(v[4] + v[5], x->merge_reads + x->merge_writes);
        cr_assert_eq(v[7], x->link_sent);
        cr_assert_eq(v[11], x->pairs);
        rows++;
    }
    cr_assert_eq(rows, 8, "a row per device and pass:\n%s", r.out);
    fl_cp_free(&res);
    cli_free(&r);
}

Test(cp_cli, bad_input_is_one_line)
{
    EXPECT_BAD_NAMES("--devices", "cp", "--devices", "0");
    EXPECT_BAD_NAMES("--devices", "cp", "--devices", "4097");
    EXPECT_BAD_NAMES("--cp", "cp", "--cp", "zigzag");
    EXPECT_BAD_NAMES("--host", "cp", "--host", "a100");
    EXPECT_BAD_NAMES("--tflops", "cp", "--tflops", "-3");
    EXPECT_BAD_NAMES("--link-gbs", "cp", "--link-gbs", "nan");
    EXPECT_BAD_NAMES("--overlap-table", "cp", "--overlap-table", "--cp", "ulysses");
    EXPECT_BAD_NAMES("N", "cp", "--N", "1000", "--devices", "3");
    EXPECT_BAD_NAMES("heads", "cp", "--cp", "ulysses", "--devices", "8", "--heads", "4");
    EXPECT_BAD_NAMES("must save the logsumexp", "cp", "--algo", "standard");
    EXPECT_BAD_NAMES("window", "cp", "--window", "4,0");
    EXPECT_BAD_NAMES("--format", "cp", "--format", "json");
}

Test(cp_cli, output_is_all_or_nothing)
{
    char dir[] = "/tmp/fl_cp_cliXXXXXX", path[64];
    cr_assert(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/cp.csv", dir);
    const char *const bad[] = {"flashlab", "cp", "--devices", "3", "--output", path, NULL};
    cli_result r = cli_run_in(NULL, NULL, bad);
    cr_assert_eq(r.status, 2);
    cr_assert_eq(access(path, F_OK), -1, "nothing written on a refusal");
    cli_free(&r);
    const char *const good[] = {"flashlab", "cp", "--format", "csv", "--output", path, NULL};
    r = cli_run_in(NULL, NULL, good);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_empty(r.out);
    cr_assert_eq(access(path, F_OK), 0);
    unlink(path);
    rmdir(dir);
    cli_free(&r);
}
