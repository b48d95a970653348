/* test_sweep.c: the sweep engine (include/flashlab/sweep.h) and `flashlab sweep`: deterministic order, counts
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
    fl_sweep_sink sink = {on_row, on_skip, NULL, &l, NULL};
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
    fl_sweep_sink sink = {on_row, on_skip, NULL, &l, NULL};
    fl_sweep_stats st;
    cr_assert_eq(fl_sweep_run(&s, &sink, &st), FL_OK);
    cr_assert_eq(st.configs, 4);
    cr_assert_eq(st.rows, 1);
    cr_assert_eq(st.skipped, 3);
    cr_assert(l.skip[0] && strstr(l.reason[0], "{M}") && strstr(l.reason[0], "too small"), "%s", l.reason[0]);
    cr_assert(l.skip[1] && strstr(l.reason[1], "{M}"), "%s", l.reason[1]);
    cr_assert(!l.skip[2]);
    cr_assert(l.skip[3] && strstr(l.reason[3], "{Br}/{Bc}"), "%s", l.reason[3]);
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
    cr_assert(strstr(fl_last_error_raw(), "{N}"), "%s", fl_last_error_raw());
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
    /* table and JSON open with their first row: nothing on stdout (a lone "[" once) */
    const char *formats[] = {"json", "table"};
    for (int i = 0; i < 2; i++) {
        const char *b[] = {"sweep", "--M", "1", "--format", formats[i], NULL};
        r = cli_run(b);
        cr_expect_eq(r->status, 2);
        cr_expect_str_eq(r->out, "", "%s: stdout has: %s", formats[i], r->out);
        cr_expect(strstr(r->err, "flashlab: sweep: none of the 3 configurations can run"), "%s", r->err);
        free(r);
    }
    /* with rows, JSON is a whole array */
    const char *c[] = {"sweep", "--N", "64", "--d", "8", "--M", "1,1000", "--format", "json", NULL};
    r = cli_run(c);
    cr_expect_eq(r->status, 0, "%s", r->err);
    cr_expect(r->out[0] == '[' && strstr(r->out, "\n]\n"), "%s", r->out);
    free(r);
}

#include "presets.h"

Test(presets, numbers_and_overrides)
{
    int64_t M;
    int eb;
    cr_assert_eq(fl_presets_resolve(NULL, NULL, 0, &M, &eb), FL_OK);
    cr_assert(M == 98304 && eb == 2, "default: the A100 in fp16 (%lld, %d)", (long long)M, eb);
    cr_assert_eq(fl_presets_resolve("h100", "fp32", 0, &M, &eb), FL_OK);
    cr_assert(M == 65536 && eb == 4);
    cr_assert_eq(fl_presets_resolve("b200", "bf16", 0, &M, &eb), FL_OK);
    cr_assert(M == 131072 && eb == 2);
    cr_assert_eq(fl_presets_resolve("h200", "fp16", 4321, &M, &eb), FL_OK);
    cr_assert(M == 4321 && eb == 2, "--M wins over a preset");
    cr_assert_eq(fl_presets_resolve("v100", NULL, 0, &M, &eb), FL_EINVAL);
    cr_assert(strstr(fl_last_error_raw(), "{sram}"), "%s", fl_last_error_raw());
    cr_assert_eq(fl_presets_resolve("a100", "fp8", 0, &M, &eb), FL_OK);
    cr_assert(M == 196608 && eb == 1, "fp8 (e4m3): one byte, twice the elements of fp16 (%lld)", (long long)M);
    cr_assert_eq(fl_presets_resolve(NULL, "fp4", 0, &M, &eb), FL_EINVAL);
    cr_assert(strstr(fl_last_error_raw(), "{dtype}"), "%s", fl_last_error_raw());
    int n;
    const fl_sram_preset *p = fl_sram_presets(&n);
    cr_assert_eq(n, 6);
    int checked = 0;
    for (int i = 0; i < n; i++) {
        cr_assert(p[i].source && strlen(p[i].source) > 20, "%s has no source", p[i].name);
        cr_assert(p[i].gpu_source && strlen(p[i].gpu_source) > 20, "%s has no GPU source", p[i].name);
        cr_assert(p[i].device && p[i].sms > 0 && p[i].l2_mib > 0 && (p[i].l2_parts == 1 || p[i].l2_parts == 2), "%s", p[i].name);
        checked += p[i].checked;
    }
    const fl_sram_preset *h;
    cr_assert_eq(fl_gpu_preset_find("h200", &h), FL_OK);
    cr_assert(h->sms == 132 && h->l2_mib == 60 && h->l2_parts == 2 && h->checked, "the measured H200");
    cr_assert_eq(checked, 1, "only the H200 is checked against hardware");
    cr_assert_eq(fl_gpu_preset_find("gh200", &h), FL_EINVAL);
    cr_assert(strstr(fl_last_error_raw(), "{gpu}") && strstr(fl_last_error_raw(), "rtx4090 or b200"), "%s",
              fl_last_error_raw());
}

Test(presets, sweep_and_count_take_sram_and_dtype)
{
    const char *a[] = {"sweep", "--algo", "flash2", "--sram", "h100", "--dtype", "fp32", NULL};
    cli_result *r = cli_run(a);
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert(strstr(r->out, "\nflash2,1024,64,65536,"), "%s", r->out);
    free(r);
    const char *b[] = {"count", "--algo", "flash2", "--sram", "a100", "--M", "5000", "--format", "csv", NULL};
    r = cli_run(b);
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert(strstr(r->out, "\nflash2,1024,64,5000,"), "%s", r->out);
    free(r);
}

Test(sweep_csv, what_sweep_writes_reads_back_as_the_same_table)
{
    char path[] = "/tmp/flashlab-csv-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    const char *a[] = {"sweep", "--N", "100,257", "--d", "8,24", "--M", "30,700,5000", "--output", path, NULL};
    cli_result *r = cli_run(a);
    cr_assert_eq(r->status, 0, "%s", r->err);
    free(r);
    const int64_t N[] = {100, 257}, d[] = {8, 24}, M[] = {30, 700, 5000};
    fl_sweep_spec s = fl_sweep_spec_init();
    s.N = N, s.nN = 2, s.d = d, s.nd = 2, s.M = M, s.nM = 3;
    fl_table want = {0}, got = {0};
    cr_assert_eq(fl_sweep_collect(&s, &want, NULL), FL_OK);
    FILE *f = fopen(path, "r");
    cr_assert_eq(fl_table_read_csv(f, path, &got), FL_OK, "%s", fl_last_error());
    fclose(f);
    unlink(path);
    cr_assert_eq(got.n, want.n);
    cr_assert(want.skipped > 0, "the grid should include configurations that cannot run");
    for (size_t i = 0; i < got.n; i++) {
        const fl_point *g = &got.p[i], *w = &want.p[i];
        cr_assert(g->algo == w->algo && g->N == w->N && g->d == w->d && g->M == w->M && g->Br == w->Br &&
                  g->Bc == w->Bc && g->Bd == w->Bd && g->reads == w->reads && g->writes == w->writes &&
                  g->total == w->total && g->events == w->events && g->bytes == w->bytes, "row %zu", i);
    }
    fl_table_free(&want);
    fl_table_free(&got);
}

static fl_status read_text(const char *text)
{
    FILE *f = tmpfile();
    fputs(text, f);
    rewind(f);
    fl_table t = {0};
    fl_status s = fl_table_read_csv(f, "x.csv", &t);
    fclose(f);
    fl_table_free(&t);
    return s;
}

Test(sweep_csv, malformed_input_is_refused_naming_the_line)
{
    const char *hdr = "algo,N,d,M,Br,Bc,hbm_reads,hbm_writes,hbm_total,sram_peak,closed_form_total,hbm_bytes,tile_events,Bd,pass\n";
    char buf[1024];
    cr_assert_eq(read_text("# only comments\n"), FL_EINVAL);
    cr_assert(strstr(fl_last_error(), "no CSV header"), "%s", fl_last_error());
    cr_assert_eq(read_text("a,b,c\n"), FL_EINVAL);
    cr_assert(strstr(fl_last_error(), "x.csv:1"), "%s", fl_last_error());
    snprintf(buf, sizeof buf, "%sflash1,64,16,4096,16,16,1,2,3\n", hdr);
    cr_assert_eq(read_text(buf), FL_EINVAL);
    cr_assert(strstr(fl_last_error(), "x.csv:2") && strstr(fl_last_error(), "14 columns"), "%s", fl_last_error());
    snprintf(buf, sizeof buf, "%sflash9,64,16,4096,16,16,1,2,3,4,3,6,7,16,fwd\n", hdr);
    cr_assert_eq(read_text(buf), FL_EINVAL);
    snprintf(buf, sizeof buf, "%sflash1,64,16,4096,16,16,1,2,3x,4,3,6,7,16,fwd\n", hdr);
    cr_assert_eq(read_text(buf), FL_EINVAL);
    cr_assert(strstr(fl_last_error(), "column 9"), "%s", fl_last_error());
    snprintf(buf, sizeof buf, "%sflash1,64,16,4096,16,16,1,2,3,4,3,6,7,16,bwd\n", hdr);
    cr_assert_eq(read_text(buf), FL_EINVAL);
    cr_assert(strstr(fl_last_error(), "forward"), "%s", fl_last_error());
    snprintf(buf, sizeof buf, "%s# skipped: ...\n\nflash1,64,16,4096,16,16,1,2,3,4,3,6,7,16,fwd\n", hdr);
    cr_assert_eq(read_text(buf), FL_OK, "%s", fl_last_error());
    /* a file cut in the middle of its last row: its columns all parse (16 for 1638), so only
     * the missing newline tells */
    snprintf(buf, sizeof buf, "%sflash1,64,16,4096,16,16,1,2,3,4,3,6,7,16", hdr);
    cr_assert_eq(read_text(buf), FL_EINVAL);
    cr_assert(strstr(fl_last_error(), "x.csv:2: the last line has no newline at its end"), "%s", fl_last_error());
}

Test(sweep_csv, bound_fits_a_sweep_file)
{
    char path[] = "/tmp/flashlab-bound-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    const char *a[] = {"sweep", "--algo", "flash1", "--N", "16384", "--d", "16:128:x2", "--M", "4096:2097152:x2",
                       "--M-upto-Nd", "--output", path, NULL};
    cli_result *r = cli_run(a);
    cr_assert_eq(r->status, 0, "%s", r->err);
    free(r);
    const char *b[] = {"bound", "--input", path, NULL};
    r = cli_run(b);
    unlink(path);
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert(strstr(r->out, "flash1   d = 64   N = 16384") && strstr(r->out, "Slope in d at N = 16384"), "%s", r->out);
    free(r);
    const char *c[] = {"bound", "--input", "/nonexistent.csv", NULL};
    r = cli_run(c);
    cr_assert_eq(r->status, 2);
    cr_assert(strstr(r->err, "--input"), "%s", r->err);
    free(r);
}

Test(sweep_cli, variant_options_apply_to_every_configuration_as_in_count)
{
    const char *a[] = {"sweep", "--algo", "flash1,flash2", "--N", "300,512", "--pass", "fwd+bwd", "--causal",
                       "bottom-right", "--heads", "4", "--M", "20000", NULL};
    cli_result *r = cli_run(a);
    cr_assert_eq(r->status, 0, "%s", r->err);
    int rows = 0;
    for (const char *l = strstr(r->out, "\nalgo,"); l && (l = strchr(l + 1, '\n')) && l[1];) {
        char algo[16];
        long long N;
        cr_assert_eq(sscanf(l + 1, "%15[^,],%lld,", algo, &N), 2, "%s", l + 1);
        char Ns[32];
        snprintf(Ns, sizeof Ns, "%lld", N);
        const char *c[] = {"count", "--algo", algo, "--N", Ns, "--pass", "fwd+bwd", "--causal", "bottom-right",
                           "--heads", "4", "--M", "20000", "--format", "csv", NULL};
        cli_result *q = cli_run(c);
        cr_assert_eq(q->status, 0, "%s", q->err);
        const char *row = strchr(q->out, '\n') + 1;
        cr_assert(strncmp(l + 1, row, strcspn(row, "\n") + 1) == 0, "sweep row\n%.*s\ndiffers from count\n%s",
                  (int)strcspn(l + 1, "\n"), l + 1, row);
        free(q);
        rows++;
    }
    cr_assert_eq(rows, 4, "%s", r->out);
    free(r);
}
