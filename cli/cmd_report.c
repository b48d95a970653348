/* cmd_report.c: `flashlab report`, the main job.
 *
 * With no arguments: the GPT-2-medium shape (batch 64, 16 heads, N = 1024, d = 64) on A100-like
 * SRAM (192 KiB per SM in fp16: M = 98304 elements): elements and GB moved per schedule, forward
 * and backward, the standard/flash ratio beside the FlashAttention paper's Figure 2 (left) values; the fitted laws
 * over the default sweep (cmd_bound.c); PASS/FAIL of every worked example (examples.h); then the
 * figures (cmd_plot.c) and the sweep's CSV written into a directory it names.  Every count is
 * executed on the count-only machine (fl_run); the closed forms are only compared.
 *
 * All or nothing: the output directory is checked and staged before any work (output.h), the
 * text is kept in memory, and only when every file has been moved into place is the text
 * printed; a failure prints its one line and nothing else. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "args.h"
#include "cli.h"
#include <flashlab/headdim.h>
#include <flashlab/regimes.h>
#include <flashlab/examples.h>
#include <flashlab/presets.h>
#include <flashlab/schedule.h>

/* The paper's Figure 2 (left): GPT-2 medium, seq. 1024, head dim. 64, 16 heads, batch 64, A100;
 * HBM reads + writes in GB, forward + backward. */
#define PAPER_STANDARD_GB 40.3
#define PAPER_FLASH_GB 4.4

/* The default sweep (fl_sweep_spec_report) as a command, for the CSV's provenance line. */
#define SWEEP_COMMAND "flashlab sweep --N 512:65536:x2 --d 64,128 --M 4096:8388608:x2 --M-upto-Nd"

static const char *usage =
    "usage: flashlab report [options]\n"
    "The main job.  Prints the HBM traffic of standard, flash1 and flash2 for the GPT-2-medium\n"
    "shape on A100 SRAM beside the FlashAttention paper's Figure 2, the fitted IO laws (slopes,\n"
    "constants, bounds) over the default sweep, PASS/FAIL of the worked examples, and writes the\n"
    "figures (PNG, PDF, SVG) and data into a directory.  Needs gnuplot for the figures.\n\n"
    "  --out DIR      where the figures and data go               [flashlab-report]\n"
    "  --sram GPU     a100, h100, h200 or b200 (docs/analysis.md)  [a100]\n"
    "  --dtype T      fp16, bf16 or fp32                           [fp16]\n"
    "  --M M          SRAM capacity in elements (overrides --sram)\n"
    "  --N N, --d D   shape of the table                           [1024, 64]\n"
    "  --batch B, --heads H                                        [64, 16]\n"
    "  --no-figures   print the report only; write nothing\n"
    "  --max-events E the report's runs: at most E tile events in all (0: no limit) [3e9]\n"
    FL_JOBS_USAGE
    "  --help         this text\n";

typedef struct {
    int64_t N, d, batch, heads, M, max_events;
    int elem_bytes;
    const char *sram, *dtype, *dir;
    int figures;
    FILE *out; /* the report's text, printed when everything succeeded */
} opts;

/* The GPT-2-medium table: each schedule run forward + backward over batch x heads on the
 * count-only machine (the machine sums the heads; nothing is multiplied here). */
static fl_status table(const opts *o, const fl_sram_preset *pre)
{
    fl_result r[FL_ALGO_MAX];
    fl_algo all[FL_ALGO_MAX];
    const int nall = fl_algos_all(NULL, all);
    int std = 0; /* the schedule that materializes S and P: the others are compared with it */
    FILE *out = o->out;
    fprintf(out, "GPT-2-medium attention: batch %" PRId64 ", %" PRId64 " heads, N = %" PRId64 ", d = %" PRId64
           "; SRAM M = %" PRId64 " elements",
           o->batch, o->heads, o->N, o->d, o->M);
    if (pre) fprintf(out, " (%s: %" PRId64 " KiB per SM, %d-byte elements)", pre->name, pre->sram_bytes / 1024, o->elem_bytes);
    fprintf(out, "\n\n  %-9s %5s %5s %16s %16s %16s %10s  %s\n", "schedule", "Br", "Bc", "forward", "backward",
           "fwd+bwd", "fwd+bwd", "paper, Fig. 2");
    fprintf(out, "  %-9s %5s %5s %16s %16s %16s %10s  %s\n", "", "", "", "(elements)", "(elements)", "(elements)", "(GB)",
           "(fwd+bwd, A100)");
    for (int a = 0; a < nall; a++) {
        fl_problem p = fl_problem_default();
        p.algo = all[a];
        if (fl_schedule_get(p.algo)->flags & FL_SCHED_MATERIALIZES) std = a;
        p.N = o->N, p.d = o->d, p.M = o->M, p.elem_bytes = o->elem_bytes;
        p.batch = o->batch, p.heads = o->heads, p.pass = FL_PASS_FWD_BWD, p.max_events = o->max_events;
        FL_TRY(fl_run(&p, FL_COUNT, NULL, NULL, &r[a]));
        if (r[a].total != r[a].closed.total)
            return fl_fail(FL_EINVAL, "report: %s counted %" PRId64 " but its closed form says %" PRId64,
                           fl_algo_name(p.algo), r[a].total, r[a].closed.total);
        fprintf(out, "  %-9s %5" PRId64 " %5" PRId64 " %16" PRId64 " %16" PRId64 " %16" PRId64 " %7.2f GB  %s\n",
               fl_algo_name(p.algo), r[a].b.Br, r[a].b.Bc, r[a].fwd_total, r[a].bwd_total, r[a].total,
               r[a].bytes / 1e9, fl_schedule_get(p.algo)->paper_fig2 ? fl_schedule_get(p.algo)->paper_fig2 : "-");
    }
    fprintf(out, "\n  Counted over all %" PRId64 " heads, forward + backward (standard: Algorithm 0 + 3 from the saved\n"
           "  P; flash1: Algorithm 1 + 4; flash2: FA2 Algorithms 1 + 2); GB = 10^9 bytes, Q, K, V, O, S, P\n"
           "  and their gradients at %d bytes; statistics and the fp32 accumulators of rule R8 (flash1's\n"
           "  running O, every backward's dQ) at 4.  Br, Bc are the forward's blocks.\n",
           o->batch * o->heads, o->elem_bytes);
    for (int a = 0, k = 0; a < nall; a++) {
        if (a == std) continue;
        fprintf(out, k++ ? "; %s / %s: %.2f (%.2f)" : "  %s / %s: %.2f forward + backward (%.2f forward only)",
                fl_algo_name(all[std]), fl_algo_name(all[a]), (double)r[std].total / r[a].total,
                (double)r[std].fwd_total / r[a].fwd_total);
    }
    fprintf(out, ".\n"
           "  The paper measured 40.3 / 4.4 = %.2f on an A100, whose kernels also fuse the softmax into the\n"
           "  matmuls and differ in blocks; the model counts each algorithm's loads and stores as written.\n",
           PAPER_STANDARD_GB / PAPER_FLASH_GB);
    return FL_OK;
}

/* The report's work, counted before any of it: the table's runs (each schedule forward +
 * backward over batch x heads) and its two sweeps, in tile events, against --max-events. */
static fl_status report_cost(const opts *o)
{
    fl_algo all[FL_ALGO_MAX];
    const int nall = fl_algos_all(NULL, all);
    int64_t total = 0, ev, configs;
    for (int a = 0; a < nall; a++) {
        fl_problem p = fl_problem_default();
        p.algo = all[a];
        p.N = o->N, p.d = o->d, p.M = o->M, p.elem_bytes = o->elem_bytes;
        p.batch = o->batch, p.heads = o->heads, p.pass = FL_PASS_FWD_BWD, p.max_events = o->max_events;
        FL_TRY(fl_run_events(&p, &ev));
        if (!fl_add_ok(total, ev, &total)) total = INT64_MAX;
    }
    const fl_sweep_spec sweeps[2] = {fl_sweep_spec_report(), fl_analysis_dsweep()};
    for (int i = 0; i < 2; i++) {
        FL_TRY(fl_sweep_estimate(&sweeps[i], &configs, &ev));
        if (!fl_add_ok(total, ev, &total)) total = INT64_MAX;
    }
    if (o->max_events > 0 && total > o->max_events)
        return fl_fail(FL_EINVAL, "--max-events: the report's table (batch %lld x %lld heads at N = %lld, d = %lld) "
                                  "and its sweeps make %lld tile events in all (%s), more than the limit %lld; "
                                  "raise --max-events, or use a smaller --N, --batch or --heads",
                       (long long)o->batch, (long long)o->heads, (long long)o->N, (long long)o->d, (long long)total,
                       fl_seconds_of(total, FL_EVENTS_PER_SECOND), (long long)o->max_events);
    return FL_OK;
}

static void examples(FILE *out)
{
    int n, pass = 0;
    const fl_example *ex = fl_examples(&n);
    FILE *null = fopen("/dev/null", "w");
    fprintf(out, "\nWorked examples (flashlab example NAME shows each step):\n");
    for (int i = 0; i < n; i++) {
        int ok = ex[i].run(null ? null : stderr);
        pass += ok;
        fprintf(out, "  %s  %-18s %s\n", ok ? "PASS" : "FAIL", ex[i].name, ex[i].summary);
    }
    fprintf(out, "  %d of %d pass\n", pass, n);
    if (null) fclose(null);
}

int fl_cmd_report(int argc, char **argv)
{
    const int64_t big = INT64_MAX / 4;
    opts o = {1024, 64, 64, 16, 0, 0, 2, NULL, NULL, "flashlab-report", 1, NULL};
    int64_t Mgiven = 0;
    fl_table t = {0}, dt = {0};
    fl_sweep_stats st;
    FILE *csv = NULL;
    const fl_sram_preset *pre = NULL;
    const char *scripts = NULL, *names[FL_FIGURE_FILES + 1];
    fl_outdir *od = NULL;
    fl_status e = FL_OK;
    fl_args a;
    const char *name, *iv, *v;
    char *text = NULL, path[8400];
    size_t text_len = 0;
    int k, nfiles = 0, status = 0;
    o.max_events = fl_problem_default().max_events;
    fl_args_init(&a, argc, argv);
    while (!e && (k = fl_args_next_option(&a, &name, &iv)) == 1) {
        if (fl_args_is_flag(name, iv, "--no-figures", &e)) {
            o.figures = 0;
            continue;
        }
        if ((e = fl_args_value(&a, name, iv, &v))) break;
        if (strcmp(name, "--out") == 0) o.dir = v;
        else if (strcmp(name, "--jobs") == 0) e = fl_cli_jobs(name, v);
        else if (strcmp(name, "--sram") == 0) e = fl_sram_preset_find(v, &pre), o.sram = v; /* checked here too */
        else if (strcmp(name, "--dtype") == 0) e = fl_dtype_parse(v, &o.elem_bytes), o.dtype = v;
        else if (strcmp(name, "--M") == 0) e = fl_parse_i64(name, v, 1, big, &Mgiven);
        else if (strcmp(name, "--N") == 0) e = fl_parse_i64(name, v, 1, 1 << 20, &o.N);
        else if (strcmp(name, "--d") == 0) e = fl_parse_i64(name, v, 1, 1 << 12, &o.d);
        else if (strcmp(name, "--batch") == 0) e = fl_parse_i64(name, v, 1, 1 << 20, &o.batch);
        else if (strcmp(name, "--heads") == 0) e = fl_parse_i64(name, v, 1, 1 << 12, &o.heads);
        else if (strcmp(name, "--max-events") == 0) e = fl_parse_limit(name, v, 0, INT64_MAX, &o.max_events);
        else e = fl_fail(FL_EINVAL, "%s: unknown option for report (see flashlab report --help)", name);
    }
    if (k == FL_ARGS_HELP) {
        fputs(usage, stdout);
        return 0;
    }
    if (!e && k < 0) e = FL_EINVAL;
    if (!e) e = fl_presets_resolve(o.sram, o.dtype, Mgiven, &o.M, &o.elem_bytes);
    if (!e && !Mgiven) e = fl_sram_preset_find(o.sram ? o.sram : "a100", &pre);
    /* before any work: stdout (the report's text is its product), gnuplot, the scripts, and a
     * directory that can take every file */
    const int fl1 = fcntl(1, F_GETFL);
    if (!e && (fl1 == -1 || (fl1 & O_ACCMODE) == O_RDONLY))
        e = fl_fail(FL_EIO, "stdout: not open for writing; nothing done");
    const int nnames = fl_figures_names(names, FL_FIGURE_FILES);
    names[nnames] = "data/report_sweep.csv";
    if (!e) e = report_cost(&o);
    if (!e && o.figures) e = fl_figures_prepare(NULL, &scripts);
    if (!e && o.figures) e = fl_outdir_open_checked(o.dir, names, nnames + 1, &od);
    if (!e && !(o.out = open_memstream(&text, &text_len))) e = fl_fail(FL_ENOMEM, "report: out of memory");
    if (e) goto fail;

    fprintf(o.out, "flashlab report: HBM traffic of exact attention on the two-level machine\n"
                   "(counts in elements, from the schedules executed on the count-only machine; docs/analysis.md)\n\n");
    if ((e = table(&o, pre))) goto fail;

    /* one run of the default sweep: kept in memory for the fits and as CSV for DIR/data/ */
    fl_sweep_spec s = fl_sweep_spec_report(), ds = fl_analysis_dsweep();
    if (od) {
        snprintf(path, sizeof path, "%s/data/report_sweep.csv", fl_outdir_path(od));
        if (!(csv = fopen(path, "w"))) {
            e = fl_fail(FL_EIO, "report: cannot write %s (%s)", fl_shown(path), strerror(errno));
            goto fail;
        }
        e = fl_sweep_write_csv(&s, csv, SWEEP_COMMAND, &t, &st);
        const fl_status c = fl_output_close_staged(csv, "--out", path);
        csv = NULL;
        if (e || (e = c)) goto fail;
    } else if ((e = fl_sweep_collect(&s, &t, &st))) {
        goto fail;
    }
    if ((e = fl_sweep_collect(&ds, &dt, NULL))) goto fail;
    fprintf(o.out, "\nFitted laws (GSL least squares, ± one standard error) over the default sweep: all three\n"
                   "schedules, N = 512..65536, d = 64 and 128, M = 4096..N*d (x2): %" PRId64 " configurations,\n"
                   "%" PRId64 " skipped, %.3g tile events.  `flashlab bound --all-N` prints every N.\n\n",
            st.configs, st.skipped, (double)st.events);
    if ((e = fl_bound_print(o.out, &t, &dt, 1))) goto fail;
    {
        const fl_regime_point *pts; /* computed once: figure (g) reuses it */
        size_t npts;
        if ((e = fl_regimes_collect(&pts, &npts))) goto fail;
        fl_regimes_print(o.out, pts, npts);
        if ((e = fl_headdim_collect(&pts, &npts))) goto fail; /* computed once: figure (h) reuses it */
        fl_headdim_print(o.out, pts, npts);
    }
    examples(o.out);

    if (od) {
        if ((e = fl_figures_write(fl_outdir_path(od), scripts, NULL))) goto fail;
        nfiles = nnames;
        e = fl_outdir_commit(od); /* every file, or none */
        od = NULL;
        if (e) goto fail;
        fprintf(o.out, "\nFigures (a)-(d), (g), (h) and (i) as PNG, PDF and SVG, and their data, written to %s (%d files, "
                       "and data/report_sweep.csv)\n", o.dir, nfiles);
    }
    if (fflush(o.out) != 0 || ferror(o.out)) {
        e = fl_fail(FL_ENOMEM, "report: out of memory for the text");
        goto fail;
    }
    if ((e = fl_output_stdout_write(text, text_len))) goto fail;
    goto done;
fail:
    status = fl_cli_error(e);
done:
    fl_outdir_abort(od);
    if (o.out) fclose(o.out);
    free(text);
    fl_table_free(&t);
    fl_table_free(&dt);
    return status;
}
