/* cmd_sweep.c: `flashlab sweep`: a grid of configurations on the count-only machine.
 *
 * Output: the CSV of `flashlab count --format csv` (emit.h: same header, same columns), one row
 * per configuration in the order of sweep.h, preceded by '#' provenance lines.  A configuration
 * that cannot run becomes a '# skipped: ...' line in its place (CSV), or a line on stderr
 * (table/json); a summary of skips goes to stderr.  --output writes through the output module
 * (output.h): complete or not at all.  A write that fails (to the file or to stdout) stops the
 * sweep at the next configuration.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analysis.h"
#include "args.h"
#include <flashlab/output.h>
#include "cli.h"
#include "emit.h"
#include "listparse.h"
#include <flashlab/presets.h>
#include "problem_opts.h"
#include "shard.h"
#include <flashlab/sweep.h>
#include <flashlab/version.h>

static const char *usage =
    "usage: flashlab sweep [options]\n"
    "Runs every configuration of a grid on the count-only machine and prints one CSV row each\n"
    "(the columns of `flashlab count --format csv`).  LIST is 512,1024,4096 or a range\n"
    "A:B:xK (geometric) or A:B:+K (arithmetic), or a mix: 64,128:1024:x2.\n\n"
    "  --algo LIST     schedules: standard, flash1, flash2, flash2-gqa, a comma list,\n"
    "                  or all (standard, flash1, flash2; + flash2-gqa when --kv-heads < --heads) [all]\n"
    "  --N LIST        sequence lengths                                            [1024]\n"
    "  --d LIST        head dimensions                                             [64]\n"
    "  --M LIST        SRAM capacities in elements (overrides --sram)              [from --sram]\n"
    "  --Br LIST       query block rows (default: each schedule's rule)\n"
    "  --Bc LIST       key/value block rows (default: each schedule's rule)\n"
    "  --M-upto-Nd     keep only M <= N*d for each (N, d) (the paper's regime)\n"
    "  --sram, --dtype, --seed, --pass, --Nk, --causal, --window, --batch, --heads, --kv-heads,\n"
    "  --max-events    as in `flashlab count` (one value each, applied to every configuration;\n"
    "                  varlen --cu-seqlens-* is for count); --M wins over --sram\n"
    "  --max-total-events E  refuse a sweep whose configurations make more than E tile events\n"
    "                  in all, estimated before the first runs (0: no limit)       [3e9]\n"
    "  --format F      csv, table or json                                          [csv]\n"
    "  --output FILE   write to FILE (atomically: a temp file renamed when complete)\n"
    "  --progress      show a progress bar on stderr (default: only on a terminal)\n"
    "  --shard I/N     run only the I-th of N round-robin slices of the grid (configuration k in\n"
    "                  shard k mod N + 1; CSV); `flashlab merge` joins the shards' CSVs into\n"
    "                  this command's CSV without --shard (docs/analysis.md §1)\n"
    "  fixed for every configuration (as for count): --Nk, --causal, --window, --batch, --heads,\n"
    "                  --kv-heads, --pass; decode: --splits, --page-size, --pool-pages, --page-seed;\n"
    "                  blocksparse: --density, --mask-seed\n"
    FL_JOBS_USAGE
    "  --help          this text\n\n"
    "Order: schedule, then N, d, M, Br, Bc (the last varies fastest), each in the order given.\n"
    "Configurations that cannot run (M below the smallest tile, an override that does not fit,\n"
    "too many events) are skipped with their reason: a '# skipped: ...' line in the CSV at the\n"
    "place of the row (stderr for table/json), and a count of skips on stderr.\n";

typedef struct {
    fl_emitter e;
    FILE *out;
    fl_format fmt;
    int begun; /* the emitter's opening ("[" of JSON, a table's header) written, at the first row */
    int csv;
    int progress;
    double t0, last;
    int64_t skipped;
    fl_table *collect; /* also keep the rows in memory (may be NULL) */
    int failed;
    const char *what;   /* the output for messages: "stdout", or "sweep" inside report and plot */
    const char *output; /* --output's path, or NULL */
} sink_ctx;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static void on_row(const fl_result *r, void *vctx)
{
    sink_ctx *c = vctx;
    if (!c->begun) fl_emit_begin(&c->e, c->out, c->fmt, 0);
    c->begun = 1;
    fl_emit_row(&c->e, r);
    if (c->collect && !c->failed && fl_table_add(c->collect, r)) c->failed = 1;
}

static void on_skip(const fl_problem *p, const char *reason, void *vctx)
{
    sink_ctx *c = vctx;
    c->skipped++;
    FILE *f = c->csv ? c->out : stderr;
    fprintf(f, "%sskipped: %s,%" PRId64 ",%" PRId64 ",%" PRId64 ",Br=%" PRId64 ",Bc=%" PRId64 ": %s\n",
            c->csv ? "# " : "flashlab: sweep: ", fl_algo_name(p->algo), p->N, p->d, p->M, p->Br, p->Bc,
            fl_cli_render(reason));
}

static void on_progress(int64_t done, int64_t total, void *vctx)
{
    sink_ctx *c = vctx;
    const double t = now();
    if (done < total && t - c->last < 0.1) return;
    c->last = t;
    const int width = 40, fill = (int)(width * done / (total ? total : 1));
    fprintf(stderr, "\r[%.*s%*s] %" PRId64 "/%" PRId64 " configurations, %.1f s", fill,
            "########################################", width - fill, "", done, total, t - c->t0);
    if (done == total) fputc('\n', stderr);
    fflush(stderr);
}

/* Stops the sweep once a write to its output has failed (a full disk, a closed stdout). */
static fl_status on_check(void *vctx)
{
    sink_ctx *c = vctx;
    if (!ferror(c->out)) return FL_OK;
    errno = 0;
    const int e = fflush(c->out) != 0 && errno ? errno : EIO; /* the write fails again: its reason */
    if (c->output)
        return fl_fail(FL_EIO, "--output: writing %s failed (%s); nothing written", fl_shown(c->output), strerror(e));
    return fl_fail(FL_EIO, "%s: write failed (%s); sweep stopped", c->what, strerror(e));
}

/* Writes the first '#' provenance line of a sweep CSV. */
static void provenance_head(FILE *out)
{
    fprintf(out, "# flashlab %s: count-only machine; counts in elements from executed schedules "
                 "(a model, not a hardware measurement)\n", FLASHLAB_VERSION);
}

static const char skipped_note[] = "# configurations that cannot run appear as '# skipped:' lines in sweep order\n";

fl_status fl_sweep_write_csv(const fl_sweep_spec *s, FILE *out, const char *command,
                             fl_table *collect, fl_sweep_stats *st)
{
    sink_ctx c = {.out = out, .fmt = FL_FMT_CSV, .begun = 1, .csv = 1, .collect = collect, .what = "sweep"};
    provenance_head(out);
    fprintf(out, "# command: %s\n", command);
    fputs(skipped_note, out);
    fl_emit_begin(&c.e, out, FL_FMT_CSV, 0);
    fl_sweep_sink sink = {on_row, on_skip, NULL, &c, on_check};
    FL_TRY(fl_sweep_run(s, &sink, st));
    if (c.failed) return fl_fail(FL_ENOMEM, "out of memory collecting the sweep");
    return FL_OK;
}

int fl_cmd_sweep(int argc, char **argv)
{
    const int64_t big = INT64_MAX / 4;
    static fl_popts po; /* large (the cu_seqlens arrays): not on the stack */
    fl_list N = {0}, d = {0}, M = {0}, Br = {0}, Bc = {0};
    fl_sweep_spec s = fl_sweep_spec_init();
    fl_format fmt = FL_FMT_CSV;
    const char *output = NULL;
    int64_t max_total = FL_SWEEP_MAX_TOTAL_EVENTS;
    int progress = isatty(2), algo_all = 1;
    fl_shard shard = {0, 0};
    int status = 0;
    fl_status e = FL_OK;
    fl_args a;
    const char *name, *iv, *v;
    int k;
    fl_popts_init(&po);
    fl_args_init(&a, argc, argv);
    while (!e && (k = fl_args_next_option(&a, &name, &iv)) == 1) {
        if (fl_args_is_flag(name, iv, "--progress", &e)) {
            progress = 1;
            continue;
        }
        if (fl_args_is_flag(name, iv, "--M-upto-Nd", &e)) {
            s.M_upto_Nd = 1;
            continue;
        }
        if (fl_popts_flag(&po, name, iv, &e)) continue;
        if ((e = fl_args_value(&a, name, iv, &v))) break;
        if (strcmp(name, "--algo") == 0) e = fl_list_parse_algos(v, s.algos, &s.nalgos), algo_all = !strcmp(v, "all");
        else if (strcmp(name, "--N") == 0) fl_list_free(&N), e = fl_list_parse(name, v, 1, big, &N);
        else if (strcmp(name, "--d") == 0) fl_list_free(&d), e = fl_list_parse(name, v, 1, big, &d);
        else if (strcmp(name, "--M") == 0) fl_list_free(&M), e = fl_list_parse(name, v, 1, big, &M);
        else if (strcmp(name, "--Br") == 0) fl_list_free(&Br), e = fl_list_parse(name, v, 1, big, &Br);
        else if (strcmp(name, "--Bc") == 0) fl_list_free(&Bc), e = fl_list_parse(name, v, 1, big, &Bc);
        else if (strcmp(name, "--format") == 0) e = fl_format_parse(v, &fmt);
        else if (strcmp(name, "--output") == 0) output = v;
        else if (strcmp(name, "--jobs") == 0) e = fl_cli_jobs(name, v);
        else if (strcmp(name, "--max-total-events") == 0) e = fl_parse_limit(name, v, 0, INT64_MAX, &max_total);
        else if (strcmp(name, "--shard") == 0) e = fl_shard_parse(name, v, &shard);
        else if (!strncmp(name, "--cu-seqlens", 12) || !strcmp(name, "--block-table"))
            e = fl_fail(FL_EINVAL, "%s: a sweep varies N; use count for a fixed packed batch or table", name);
        else if (!fl_popts_take(&po, name, v, &e)) /* the problem's other fields */
            e = fl_fail(FL_EINVAL, "%s: unknown option for sweep (see flashlab sweep --help)", name);
    }
    if (k == FL_ARGS_HELP) {
        fputs(usage, stdout);
        goto done;
    }
    if (!e && k < 0) e = FL_EINVAL;
    int64_t configs = 0;
    /* --sram/--dtype (M unless --M lists it) and the variant rules, checked once for the first
     * schedule; a rule another schedule of the list breaks makes its rows skipped lines */
    if (!e && s.nalgos) po.p.algo = (fl_algo)s.algos[0];
    if (!e) e = fl_popts_finish(&po);
    if (e) goto fail;
    s.base = &po.p;
    s.elem_bytes = po.p.elem_bytes;
    s.max_events = po.p.max_events;
    s.max_total_events = max_total;
    if (algo_all) { /* "all" of this problem, as count */
        fl_algo all[FL_ALGO_MAX];
        s.nalgos = fl_algos_all(&po.p, all);
        for (int i = 0; i < s.nalgos; i++) s.algos[i] = (int)all[i];
    }
    s.N = N.n ? N.v : &po.p.N, s.nN = N.n ? N.n : 1;
    s.d = d.n ? d.v : &po.p.d, s.nd = d.n ? d.n : 1;
    s.M = M.n ? M.v : &po.p.M, s.nM = M.n ? M.n : 1;
    if (Br.n) s.Br = Br.v, s.nBr = Br.n;
    if (Bc.n) s.Bc = Bc.v, s.nBc = Bc.n;
    if (shard.n && fmt != FL_FMT_CSV) {
        e = fl_fail(FL_EINVAL, "--shard: shards are CSV (flashlab merge joins them); leave out --format table or json");
        goto fail;
    }
    s.shard = shard.i - 1, s.nshards = shard.n;
    if ((e = fl_sweep_size(&s, &configs))) goto fail;
    const int64_t grid = configs;
    if (configs == 0) {
        e = fl_fail(FL_EINVAL, "--M-upto-Nd: no M value is <= N*d for any (N, d): the grid is empty");
        goto fail;
    }
    fl_output *o = NULL;
    FILE *out = stdout;
    if (output) {
        if ((e = fl_output_open(output, "--output", &o))) goto fail;
        out = fl_output_file(o);
    }
    if ((e = fl_sweep_check(&s, &configs))) { /* the work limit, before anything is written */
        fl_output_abort(o);
        goto fail;
    }
    s.max_total_events = 0; /* checked: not estimated again */
    sink_ctx c = {.out = out, .fmt = fmt, .csv = fmt == FL_FMT_CSV, .progress = progress, .t0 = now(),
                  .what = "stdout", .output = output};
    c.last = c.t0;
    if (c.csv) {
        provenance_head(out);
        fl_shard_comments(out, "sweep", argc, argv, &shard, grid);
        fputs(skipped_note, out);
        fl_emit_begin(&c.e, out, fmt, 0); /* the header, whatever follows */
        c.begun = 1;
    }
    fl_sweep_sink sink = {on_row, on_skip, progress ? on_progress : NULL, &c, on_check};
    fl_sweep_stats st;
    e = fl_sweep_run(&s, &sink, &st);
    if (!e && st.rows == 0 && !shard.n) /* a shard without rows is fine: merge checks the whole run */
        e = fl_fail(FL_EINVAL, "sweep: none of the %" PRId64 " configurations can run (see the skipped lines)",
                    st.configs);
    if (e) {
        fl_output_abort(o);
        goto fail;
    }
    if (c.begun) fl_emit_end(&c.e);
    if (output && (e = fl_output_commit(o))) goto fail;
    if (st.skipped)
        fprintf(stderr, "flashlab: sweep: %" PRId64 " of %" PRId64 " configurations skipped%s\n",
                st.skipped, st.configs, c.csv ? " (reasons in the '# skipped:' lines)" : "");
    goto done;
fail:
    status = fl_cli_error(e);
done:
    fl_list_free(&N);
    fl_list_free(&d);
    fl_list_free(&M);
    fl_list_free(&Br);
    fl_list_free(&Bc);
    return status;
}
