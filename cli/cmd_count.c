/* cmd_count.c: `flashlab count` (count-only machine) and `flashlab run` (compute mode, checked
 * against the reference).  Both run each requested schedule through fl_run.  The options that
 * describe the problem are parsed by problem_opts.c, shared with the other subcommands. */
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "emit.h"
#include "listparse.h"
#include "problem_opts.h"
#include <flashlab/run.h>

static const char *usage =
    "usage: flashlab %s [options]\n"
    "%s"
    "  --algo LIST   standard, flash1, flash2, flash2-gqa, a comma list, or all [all;\n"
    "                flash2-gqa is in all when --kv-heads < --heads]; also, named only:\n"
    "                decode, blocksparse, memeff, softmax-safe, softmax-online (docs/model.md §8)\n"
    "%s"
    "%s"
    "  --format F    table, csv or json                               [table]\n"
    "  --explain     show how the blocks were chosen (the paper's sizes, their footprint)\n"
    "  --help        this text\n";

typedef struct {
    int algos[FL_ALGO_MAX], nalgos, all;
    fl_popts po;
    fl_format fmt;
    int explain;
} opts;

/* Parses the options; returns -1 after printing help, else a status. */
static int parse(int argc, char **argv, opts *o, fl_mode mode, const char *cmd, const char *blurb)
{
    fl_args a;
    const char *name, *iv, *v;
    fl_status s;
    int k;
    memset(o, 0, sizeof *o);
    fl_popts_init(&o->po);
    o->fmt = FL_FMT_TABLE;
    o->all = 1;
    FL_TRY(fl_list_parse_algos("all", o->algos, &o->nalgos));
    fl_args_init(&a, argc, argv);
    while ((k = fl_args_next_option(&a, &name, &iv)) == 1) {
        if (strcmp(name, "--explain") == 0) {
            FL_TRY(fl_args_flag(name, iv));
            o->explain = 1;
            continue;
        }
        if (fl_popts_flag(&o->po, name, iv, &s)) {
            FL_TRY(s);
            continue;
        }
        FL_TRY(fl_args_value(&a, name, iv, &v));
        if (mode == FL_COMPUTE && strcmp(name, "--max-macs") == 0)
            FL_TRY(fl_parse_limit(name, v, 0, INT64_MAX, &o->po.p.max_macs));
        else if (strcmp(name, "--algo") == 0) {
            FL_TRY(fl_list_parse_algos(v, o->algos, &o->nalgos));
            o->all = strcmp(v, "all") == 0;
        } else if (strcmp(name, "--format") == 0) FL_TRY(fl_format_parse(v, &o->fmt));
        else if (fl_popts_take(&o->po, name, v, &s)) FL_TRY(s);
        else return fl_fail(FL_EINVAL, "%s: unknown option for %s (see flashlab %s --help)", name, cmd, cmd);
    }
    if (k == FL_ARGS_HELP) {
        printf(usage, cmd, blurb, fl_popts_usage, mode == FL_COMPUTE ? fl_macs_usage : "");
        return -1;
    }
    if (k < 0) return FL_EINVAL;
    const fl_problem *p = &o->po.p;
    if (o->all) { /* "all" of this problem: with its query-head groups */
        fl_algo all[FL_ALGO_MAX];
        o->nalgos = fl_algos_all(p, all);
        for (int i = 0; i < o->nalgos; i++) o->algos[i] = (int)all[i];
    }
    o->po.p.algo = (fl_algo)o->algos[0]; /* each schedule's own rules are checked by fl_run */
    return fl_popts_finish(&o->po);
}

/* Runs every requested schedule first, so that an error prints nothing but its one line. */
static int count_or_run(int argc, char **argv, fl_mode mode, const char *cmd, const char *blurb)
{
    static opts o; /* large (the cu_seqlens arrays): not on the stack */
    fl_result res[FL_ALGO_MAX];
    int s = parse(argc, argv, &o, mode, cmd, blurb);
    if (s < 0) return 0;
    if (s) return fl_cli_error(s);
    /* every limit before any work: each run's, then the command's in all (the limit bounds the
     * command, not one schedule of --algo all) */
    int64_t events = 0, macs = 0, t;
    for (int i = 0; i < o.nalgos; i++) {
        fl_problem p = o.po.p;
        p.algo = (fl_algo)o.algos[i];
        if (mode == FL_COMPUTE && (s = fl_compute_check(&p))) return fl_cli_error(s);
        if ((s = fl_run_events(&p, &t))) return fl_cli_error(s);
        events = fl_add_ok(events, t, &events) ? events : INT64_MAX;
        if (mode == FL_COMPUTE) macs = fl_add_ok(macs, fl_compute_macs(&p), &macs) ? macs : INT64_MAX;
    }
    const fl_problem *q = &o.po.p;
    if (q->max_events > 0 && events > q->max_events)
        return fl_cli_error(fl_fail(FL_EINVAL, "--max-events: the %d schedules at N = %lld, d = %lld, M = %lld make %lld "
                                               "tile events in all (%s), more than the limit %lld; raise "
                                               "--max-events, or count fewer schedules",
                                    o.nalgos, (long long)q->N, (long long)q->d, (long long)q->M, (long long)events,
                                    fl_seconds_of(events, FL_EVENTS_PER_SECOND), (long long)q->max_events));
    if (mode == FL_COMPUTE && q->max_macs > 0 && macs > q->max_macs)
        return fl_cli_error(fl_fail(FL_EINVAL, "--max-macs: compute runs of the %d schedules at N = %lld, d = %lld make "
                                               "up to %lld multiply-adds in all (schedule and reference), more than "
                                               "the limit %lld; raise --max-macs, or run fewer schedules",
                                    o.nalgos, (long long)q->N, (long long)q->d, (long long)macs,
                                    (long long)q->max_macs));
    for (int i = 0; i < o.nalgos; i++) {
        fl_problem p = o.po.p;
        p.algo = (fl_algo)o.algos[i];
        if ((s = fl_run(&p, mode, NULL, NULL, &res[i]))) return fl_cli_error(s);
    }
    if (o.explain)
        for (int i = 0; i < o.nalgos; i++) fl_emit_explain(o.fmt == FL_FMT_TABLE ? stdout : stderr, &res[i]);
    fl_emitter e;
    fl_emit_begin(&e, stdout, o.fmt, mode == FL_COMPUTE);
    for (int i = 0; i < o.nalgos; i++) fl_emit_row(&e, &res[i]);
    fl_emit_end(&e);
    return 0;
}

int fl_cmd_count(int argc, char **argv)
{
    return count_or_run(argc, argv, FL_COUNT, "count",
                        "Counts the HBM reads and writes (elements) each schedule makes on the\n"
                        "count-only machine, beside the closed form of docs/model.md.\n");
}

int fl_cmd_run(int argc, char **argv)
{
    return count_or_run(argc, argv, FL_COMPUTE, "run",
                        "Runs each schedule with real values (double) on random inputs and checks\n"
                        "its output against the exact reference (max_abs_err, rel_err).\n");
}
