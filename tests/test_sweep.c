/* test_sweep.c: the sweep engine (sim/sweep.h) and `flashlab sweep`: deterministic order, counts
 * identical to single runs, skipped configurations reported with their reason (never dropped),
 * the count CSV header, atomic --output, and bad input. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_runner.h"
#include "sweep.h"

typedef struct {
    fl_problem seen[64];
    int skip[64];
    char reason[64][256];
    int n;
} log_ctx;

static void on_row(const fl_result *r, void *c)
{
    log_ctx *l = c;
    l->seen[l->n] = r->p;
    l->skip[l->n++] = 0;
}

static void on_skip(const fl_problem *p, const char *why, void *c)
{
    log_ctx *l = c;
    l->seen[l->n] = *p;
    snprintf(l->reason[l->n], sizeof l->reason[0], "%s", why);
    l->skip[l->n++] = 1;
}

Test(sweep, order_is_schedule_then_N_d_M_Br_Bc_as_given)
{
    const int64_t N[] = {96, 64}, d[] = {16}, M[] = {4096, 1024}, Bc[] = {8, 5};
    fl_sweep_spec s = fl_sweep_spec_init();
    s.algos[0] = FL_ALGO_FLASH2, s.algos[1] = FL_ALGO_FLASH1, s.nalgos = 2;
    s.N = N, s.nN = 2, s.d = d, s.nd = 1, s.M = M, s.nM = 2, s.Bc = Bc, s.nBc = 2;
    log_ctx l = {.n = 0};
    fl_sweep_sink sink = {on_row, on_skip, NULL, &l};
    fl_sweep_stats st;
    cr_assert_eq(fl_sweep_run(&s, &sink, &st), FL_OK, "%s", fl_last_error());
    cr_assert_eq(st.configs, 16);
    cr_assert_eq(l.n, 16);
    int k = 0;
    for (int a = 0; a < 2; a++)
        for (int i = 0; i < 2; i++)
            for (int m = 0; m < 2; m++)
                for (int b = 0; b < 2; b++, k++) {
                    cr_assert_eq(l.seen[k].algo, s.algos[a], "row %d", k);
                    cr_assert_eq(l.seen[k].N, N[i], "row %d", k);
                    cr_assert_eq(l.seen[k].M, M[m], "row %d", k);
                    cr_assert_eq(l.seen[k].Bc, Bc[b], "row %d", k);
                }
}

Test(sweep, rows_equal_single_runs_and_their_closed_forms)
{
    const int64_t N[] = {100, 257}, d[] = {8, 24}, M[] = {700, 5000};
    fl_sweep_spec s = fl_sweep_spec_init();
    s.N = N, s.nN = 2, s.d = d, s.nd = 2, s.M = M, s.nM = 2;
    fl_table t = {0};
    cr_assert_eq(fl_sweep_collect(&s, &t, NULL), FL_OK, "%s", fl_last_error());
    cr_assert_eq((int64_t)t.n + t.skipped, 24);
    for (size_t i = 0; i < t.n; i++) {
        const fl_point *p = &t.p[i];
        fl_problem q = fl_problem_default();
        q.algo = p->algo, q.N = p->N, q.d = p->d, q.M = p->M;
        fl_result r;
        cr_assert_eq(fl_run(&q, FL_COUNT, NULL, NULL, &r), FL_OK);
        cr_assert_eq(p->total, r.total);
        cr_assert_eq(p->reads, r.reads);
        cr_assert_eq(p->events, r.events);
        cr_assert_eq(p->total, p->closed_total, "%s N=%lld d=%lld M=%lld", fl_algo_name(p->algo),
                     (long long)p->N, (long long)p->d, (long long)p->M);
    }
    fl_table_free(&t);
}

Test(sweep, configurations_that_cannot_run_are_skipped_with_their_reason)
{
    /* flash1 at d = 16 needs 4*16 + 1 + 6 = 71 elements (Br = Bc = 1); Bc = 500 does not fit in 2000 */
    const int64_t N[] = {128}, d[] = {16}, M[] = {50, 2000}, Bc[] = {4, 500};
    fl_sweep_spec s = fl_sweep_spec_init();
    s.algos[0] = FL_ALGO_FLASH1, s.nalgos = 1;
    s.N = N, s.nN = 1, s.d = d, s.nd = 1, s.M = M, s.nM = 2, s.Bc = Bc, s.nBc = 2;
    log_ctx l = {.n = 0};
    fl_sweep_sink sink = {on_row, on_skip, NULL, &l};
    fl_sweep_stats st;
    cr_assert_eq(fl_sweep_run(&s, &sink, &st), FL_OK);
    cr_assert_eq(st.configs, 4);
    cr_assert_eq(st.rows, 1);
    cr_assert_eq(st.skipped, 3);
    cr_assert(l.skip[0] && strstr(l.reason[0], "--M") && strstr(l.reason[0], "too small"), "%s", l.reason[0]);
    cr_assert(l.skip[1] && strstr(l.reason[1], "--M"), "%s", l.reason[1]);
    cr_assert(!l.skip[2]);
    cr_assert(l.skip[3] && strstr(l.reason[3], "--Br/--Bc"), "%s", l.reason[3]);
}

Test(sweep, M_upto_Nd_keeps_the_papers_regime_only)
{
    const int64_t N[] = {64, 256}, d[] = {16}, M[] = {512, 1024, 2048, 4096};
    fl_sweep_spec s = fl_sweep_spec_init();
    s.N = N, s.nN = 2, s.d = d, s.nd = 1, s.M = M, s.nM = 4, s.M_upto_Nd = 1;
    int64_t n;
    cr_assert_eq(fl_sweep_size(&s, &n), FL_OK);
    cr_assert_eq(n, 3 * (2 + 4)); /* N*d = 1024: 512, 1024; N*d = 4096: all four */
}

Test(sweep, empty_lists_are_refused)
{
    fl_sweep_spec s = fl_sweep_spec_init();
    int64_t n;
    cr_assert_eq(fl_sweep_size(&s, &n), FL_EINVAL);
    cr_assert(strstr(fl_last_error(), "--N"), "%s", fl_last_error());
}

Test(sweep_cli, csv_has_the_count_header_and_skipped_lines_in_place)
{
    const char *a[] = {"sweep", "--algo", "flash1", "--N", "128", "--d", "16", "--M", "50,2000", NULL};
    cli_result *r = cli_run(a);
    cr_assert_eq(r->status, 0, "%s", r->err);
    const char *h = strstr(r->out, "\nalgo,N,d,M,Br,Bc,hbm_reads,hbm_writes,hbm_total,sram_peak,closed_form_total,");
    cr_assert(h, "%s", r->out);
    char hdr[1024];
    size_t hl = strcspn(h + 1, "\n");
    cr_assert(hl < sizeof hdr);
    memcpy(hdr, h + 1, hl);
    hdr[hl] = 0;
    const char *sk = strstr(r->out, "\n# skipped: flash1,128,16,50,");
    const char *row = strstr(r->out, "\nflash1,128,16,2000,");
    cr_assert(sk && row && h < sk && sk < row, "skip line not in sweep order:\n%s", r->out);
    cr_assert(r->out[0] == '#', "provenance lines first:\n%s", r->out);
    cr_assert(strstr(r->err, "1 of 2 configurations skipped"), "%s", r->err);
    free(r);

    const char *c[] = {"count", "--algo", "flash1", "--N", "128", "--d", "16", "--M", "2000", "--format", "csv", NULL};
    cli_result *q = cli_run(c);
    cr_assert_eq(q->status, 0);
    cr_assert(strncmp(q->out, hdr, hl) == 0 && q->out[hl] == '\n', "count's header differs from sweep's '%s':\n%s", hdr, q->out);
    free(q);
}

Test(sweep_cli, output_is_written_whole_and_bad_input_writes_nothing)
{
    char dir[] = "/tmp/flashlab-sweep-XXXXXX", path[128], cmd[256];
    cr_assert(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/out.csv", dir);
    const char *a[] = {"sweep", "--N", "64:256:x2", "--d", "16", "--M", "1024", "--output", path, NULL};
    cli_result *r = cli_run(a);
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_eq(r->out[0], 0, "stdout should be empty with --output");
    FILE *f = fopen(path, "r");
    cr_assert(f);
    char line[512];
    int rows = 0;
    while (fgets(line, sizeof line, f)) rows += line[0] != '#';
    fclose(f);
    cr_assert_eq(rows, 1 + 3 * 3); /* header + 3 schedules x 3 N */
    free(r);

    snprintf(path, sizeof path, "%s/bad.csv", dir);
    const char *b[] = {"sweep", "--N", "256:64:x2", "--output", path, NULL};
    r = cli_run(b);
    cr_assert_eq(r->status, 2);
    cr_assert_eq(cli_lines(r->err), 1, "%s", r->err);
    cr_assert(strstr(r->err, "--N") && strstr(r->err, "reversed"), "%s", r->err);
    struct stat st;
    cr_assert(stat(path, &st) != 0, "a file was written despite the error");
    free(r);
    snprintf(cmd, sizeof cmd, "n=$(ls -A %s | wc -l); rm -rf %s; test $n -eq 1", dir, dir);
    cr_assert_eq(system(cmd), 0, "temporary files were left behind");
}

Test(sweep_cli, nothing_runnable_is_an_error)
{
    const char *a[] = {"sweep", "--algo", "flash2", "--N", "64", "--d", "64", "--M", "10,20", NULL};
    cli_result *r = cli_run(a);
    cr_assert_eq(r->status, 2);
    cr_assert(strstr(r->err, "none of the 2 configurations can run"), "%s", r->err);
    free(r);
}
