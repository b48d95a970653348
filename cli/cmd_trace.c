/* cmd_trace.c: `flashlab trace`: the tile events of small runs, as CSV or JSON lines (trace.h).
 * Each requested schedule runs through fl_run with fl_trace_event as its trace callback.  The
 * whole trace is written to a temporary file first, so an error leaves nothing half-written:
 * with --out it goes through the output module (output.h), otherwise it is copied to stdout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include <flashlab/output.h>
#include "cli.h"
#include "listparse.h"
#include "problem_opts.h"
#include <flashlab/run.h>
#include <flashlab/trace.h>

static const char *usage =
    "usage: flashlab trace [options]\n"
    "Writes every tile event of a run (load, store, alloc, free: tensor, buffer, tile, SRAM use,\n"
    "counters so far) as CSV or JSON lines.  Columns: docs/labs/lab2.md.  Meant for small runs:\n"
    "the defaults give flash1 and flash2 8 x 8 tiles.\n"
    "  --algo LIST   a schedule, a comma list, classic (standard,flash1,flash2) or all [classic]\n"
    "  --N N         sequence length                                  [64]\n"
    "  --d D         head dimension                                   [8]\n"
    "  --M M         SRAM capacity in elements                        [384]\n"
    "  --Br B, --Bc B  block sizes (default: the schedule's rule)\n"
    "  --Nk N        key length                                       [N]\n"
    "  --causal C    none, top-left or bottom-right (masked-out tiles are skipped) [none]\n"
    "  --window L,R  FA2 local window (-1 = unbounded side)           [-1,-1]\n"
    "  --batch, --heads, --kv-heads, --cu-seqlens-q/-k, --sram, --dtype, and the decode and\n"
    "                blocksparse options: as in flashlab count --help\n"
    "  --pass P      fwd, bwd or fwd+bwd (bwd: only the backward's events; the forward that\n"
    "                produces its inputs runs untraced and uncounted)  [fwd]\n"
    "  --compute     run on real values (checked against the reference), not count-only\n"
    "  --seed S      seed of the random inputs (--compute)            [1]\n"
    "  --format F    csv or jsonl                                     [csv]\n"
    "  --out FILE    write to FILE (atomically) instead of stdout\n"
    "  --max-events E  refuse runs with more tile events than E       [100000]\n"
    "%s"
    "  --help        this text\n";

typedef struct {
    int algos[FL_ALGO_MAX];
    int nalgos, compute;
    fl_popts po;
    fl_trace_format fmt;
    const char *out;
} opts;

/* A schedule list as fl_list_parse_algos reads it, plus "classic" (standard,flash1,flash2) and
 * "all" (every schedule). */
static fl_status parse_algos(const char *s, opts *o)
{
    if (strcmp(s, "all") == 0) {
        for (o->nalgos = 0; o->nalgos < fl_schedule_count(); o->nalgos++) o->algos[o->nalgos] = o->nalgos;
        return FL_OK;
    }
    return fl_list_parse_algos(strcmp(s, "classic") == 0 ? "standard,flash1,flash2" : s, o->algos, &o->nalgos);
}

/* Returns -1 after printing help, else a status. */
static int parse(int argc, char **argv, opts *o)
{
    fl_args a;
    const char *name, *iv, *v;
    fl_status s;
    int k;
    memset(o, 0, sizeof *o);
    fl_popts_init(&o->po); /* small defaults: flash1 and flash2 get 8 x 8 tiles */
    o->po.p.N = 64;
    o->po.p.d = 8;
    o->po.M_given = 384;
    o->po.p.max_events = 100000;
    o->fmt = FL_TRACE_CSV;
    FL_TRY(parse_algos("classic", o));
    fl_args_init(&a, argc, argv);
    while ((k = fl_args_next_option(&a, &name, &iv)) == 1) {
        if (strcmp(name, "--compute") == 0) {
            FL_TRY(fl_args_flag(name, iv));
            o->compute = 1;
            continue;
        }
        if (fl_popts_flag(&o->po, name, iv, &s)) {
            FL_TRY(s);
            continue;
        }
        FL_TRY(fl_args_value(&a, name, iv, &v));
        if (strcmp(name, "--algo") == 0) FL_TRY(parse_algos(v, o));
        else if (strcmp(name, "--format") == 0) FL_TRY(fl_trace_format_parse(v, &o->fmt));
        else if (strcmp(name, "--out") == 0) {
            if (!*v) return fl_fail(FL_EINVAL, "--out: needs a file name");
            o->out = v;
        } else if (strcmp(name, "--max-macs") == 0) FL_TRY(fl_parse_limit(name, v, 0, INT64_MAX, &o->po.p.max_macs));
        else if (fl_popts_take(&o->po, name, v, &s)) FL_TRY(s);
        else return fl_fail(FL_EINVAL, "%s: unknown option for trace (see flashlab trace --help)", name);
    }
    if (k == FL_ARGS_HELP) {
        printf(usage, fl_macs_usage);
        return -1;
    }
    if (k < 0) return FL_EINVAL;
    o->po.p.algo = (fl_algo)o->algos[0];
    FL_TRY(fl_popts_finish(&o->po));
    for (int i = 0; i < o->nalgos && o->compute; i++) { /* the work limit of a compute run */
        fl_problem p = o->po.p;
        p.algo = (fl_algo)o->algos[i];
        FL_TRY(fl_compute_check(&p));
    }
    return FL_OK;
}

/* Runs every schedule into f. */
static fl_status trace_all(const opts *o, FILE *f)
{
    fl_trace_writer w;
    fl_result r;
    fl_trace_init(&w, f, o->fmt);
    for (int i = 0; i < o->nalgos; i++) {
        fl_problem p = o->po.p;
        p.algo = (fl_algo)o->algos[i];
        fl_trace_begin_run(&w, fl_algo_name(p.algo), p.M);
        const fl_status s = fl_run(&p, o->compute ? FL_COMPUTE : FL_COUNT, fl_trace_event, &w, &r);
        if (s == FL_ESTOPPED) return fl_trace_finish(&w); /* the writer stopped it: a failed write */
        FL_TRY(s);
    }
    return fl_trace_finish(&w);
}

static fl_status copy_to_stdout(FILE *f)
{
    char buf[1 << 14];
    size_t n;
    rewind(f);
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) FL_TRY(fl_output_stdout_write(buf, n));
    if (ferror(f)) return fl_fail(FL_EIO, "trace: reading back the trace failed");
    return FL_OK;
}

int fl_cmd_trace(int argc, char **argv)
{
    static opts o; /* large (the cu_seqlens arrays): not on the stack */
    int s = parse(argc, argv, &o);
    if (s < 0) return 0;
    if (s) return fl_cli_error(s);
    if (!o.out) {
        FILE *f = tmpfile();
        if (!f) return fl_cli_error(fl_fail(FL_EIO, "trace: cannot create a temporary file"));
        s = trace_all(&o, f);
        if (!s) s = copy_to_stdout(f);
        fclose(f);
        return s ? fl_cli_error(s) : 0;
    }
    fl_output *out;
    if ((s = fl_output_open(o.out, "--out", &out))) return fl_cli_error(s);
    s = trace_all(&o, fl_output_file(out));
    if (s) fl_output_abort(out);
    else s = fl_output_commit(out);
    return s ? fl_cli_error(s) : 0;
}
