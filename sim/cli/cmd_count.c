/* cmd_count.c: `flashlab count` (count-only machine) and `flashlab run` (compute mode, checked
 * against the reference).  Both run each requested schedule through fl_run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "emit.h"
#include "run.h"

static const char *usage =
    "usage: flashlab %s [options]\n"
    "%s"
    "  --algo LIST   standard, flash1, flash2, a comma list, or all   [all]\n"
    "                (all = those three; also decode, blocksparse, memeff, softmax-safe,\n"
    "                softmax-online: docs/model.md §6)\n"
    "  --N N         sequence length (queries = keys)                 [1024]\n"
    "  --d D         head dimension                                   [64]\n"
    "  --M M         SRAM capacity in elements                        [98304 = A100 192 KiB, fp16]\n"
    "  --Br B        query block rows (default: the schedule's rule, docs/model.md §3)\n"
    "  --Bc B        key/value block rows (default: the schedule's rule)\n"
    "  --seed S      seed of the random inputs (run)                  [1]\n"
    "  --format F    table, csv or json                               [table]\n"
    "  --explain     show how the blocks were chosen (the paper's sizes, their footprint)\n"
    "  --max-events E  refuse runs with more tile events than E (0: no limit) [1e10]\n"
    "  --Nk N        keys (decode: the cache length; softmax: the row length)  [N]\n"
    "  --causal C    none, top-left or bottom-right (decode)                 [none]\n"
    "  --window L,R  FA2 window, -1 = unbounded (decode)                     [-1,-1]\n"
    "  decode:       --splits S (split-KV)  --page-size P (paged cache, 0 = contiguous)\n"
    "                --pool-pages K  --page-seed S (0 = identity table)  --block-table 3,0,2\n"
    "                --pad X (compute: value of the last page's rows beyond Nk; nan poisons)\n"
    "  blocksparse:  --density s in (0, 1]  --mask-seed S\n"
    "  memeff:       --Br/--Bc are Rabe-Staats' query and key chunk sizes\n"
    "  --help        this text\n";

#define FL_CLI_MAX_TABLE 4096

typedef struct {
    int algos[FL_NALGO], nalgos;
    int64_t table[FL_CLI_MAX_TABLE]; /* --block-table */
    fl_problem p;
    fl_format fmt;
    int explain;
} opts;

static fl_status parse_algos(const char *s, opts *o)
{
    char buf[256];
    o->nalgos = 0;
    if (strcmp(s, "all") == 0) {
        for (int a = 0; a < FL_NALGO_CORE; a++) o->algos[o->nalgos++] = a;
        return FL_OK;
    }
    snprintf(buf, sizeof buf, "%s", s);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        fl_algo a;
        FL_TRY(fl_algo_parse(tok, &a));
        for (int k = 0; k < o->nalgos; k++)
            if (o->algos[k] == (int)a) return fl_fail(FL_EINVAL, "--algo: '%s' is listed twice", tok);
        o->algos[o->nalgos++] = a;
    }
    if (!o->nalgos) return fl_fail(FL_EINVAL, "--algo: needs at least one schedule");
    return FL_OK;
}

/* A double (nan and inf allowed): strtod, the whole string. */
static fl_status parse_double(const char *opt, const char *v, double *out)
{
    char *end;
    *out = strtod(v, &end);
    if (!*v || *end) return fl_fail(FL_EINVAL, "%s: '%s' is not a number", opt, v);
    return FL_OK;
}

/* A comma list of integers into out[0:max]; *n receives their number. */
static fl_status parse_list(const char *opt, const char *v, int64_t *out, int64_t max, int64_t *n)
{
    char buf[65536];
    if (strlen(v) >= sizeof buf) return fl_fail(FL_EINVAL, "%s: list too long", opt);
    snprintf(buf, sizeof buf, "%s", v);
    *n = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (*n == max) return fl_fail(FL_EINVAL, "%s: more than %lld entries", opt, (long long)max);
        FL_TRY(fl_parse_i64(opt, tok, -(INT64_MAX / 4), INT64_MAX / 4, &out[(*n)++]));
    }
    if (!*n) return fl_fail(FL_EINVAL, "%s: needs at least one entry", opt);
    return FL_OK;
}

/* Parses the shared options; returns -1 after printing help, else a status. */
static int parse(int argc, char **argv, opts *o, const char *cmd, const char *blurb)
{
    const int64_t big = INT64_MAX / 4;
    fl_args a;
    const char *name, *iv, *v;
    int k;
    memset(o, 0, sizeof *o);
    o->p = fl_problem_default();
    o->fmt = FL_FMT_TABLE;
    FL_TRY(parse_algos("all", o));
    fl_args_init(&a, argc, argv);
    while ((k = fl_args_next(&a, &name, &iv)) == 1) {
        if (strcmp(name, "--help") == 0) {
            printf(usage, cmd, blurb);
            return -1;
        }
        if (strcmp(name, "--explain") == 0) {
            o->explain = 1;
            continue;
        }
        FL_TRY(fl_args_value(&a, name, iv, &v));
        if (strcmp(name, "--algo") == 0) FL_TRY(parse_algos(v, o));
        else if (strcmp(name, "--N") == 0) FL_TRY(fl_parse_i64(name, v, 1, big, &o->p.N));
        else if (strcmp(name, "--d") == 0) FL_TRY(fl_parse_i64(name, v, 1, big, &o->p.d));
        else if (strcmp(name, "--M") == 0) FL_TRY(fl_parse_i64(name, v, 1, big, &o->p.M));
        else if (strcmp(name, "--Br") == 0) FL_TRY(fl_parse_i64(name, v, 1, big, &o->p.Br));
        else if (strcmp(name, "--Bc") == 0) FL_TRY(fl_parse_i64(name, v, 1, big, &o->p.Bc));
        else if (strcmp(name, "--seed") == 0) FL_TRY(fl_parse_u64(name, v, &o->p.seed));
        else if (strcmp(name, "--max-events") == 0) FL_TRY(fl_parse_i64(name, v, 0, INT64_MAX, &o->p.max_events));
        else if (strcmp(name, "--format") == 0) FL_TRY(fl_format_parse(v, &o->fmt));
        else if (strcmp(name, "--Nk") == 0) FL_TRY(fl_parse_i64(name, v, 1, big, &o->p.Nk));
        else if (strcmp(name, "--causal") == 0) FL_TRY(fl_causal_parse(v, &o->p.causal));
        else if (strcmp(name, "--window") == 0) {
            int64_t w[2], n;
            FL_TRY(parse_list(name, v, w, 2, &n));
            if (n != 2 || w[0] < -1 || w[1] < -1)
                return fl_fail(FL_EINVAL, "--window: needs L,R, each >= 0 or -1 (unbounded)");
            o->p.window_left = w[0];
            o->p.window_right = w[1];
        }
        /* decode, blocksparse (sim/problem_ext.h) */
        else if (strcmp(name, "--splits") == 0) FL_TRY(fl_parse_i64(name, v, 1, big, &o->p.splits));
        else if (strcmp(name, "--page-size") == 0) FL_TRY(fl_parse_i64(name, v, 1, big, &o->p.page_size));
        else if (strcmp(name, "--pool-pages") == 0) FL_TRY(fl_parse_i64(name, v, 1, big, &o->p.pool_pages));
        else if (strcmp(name, "--page-seed") == 0) FL_TRY(fl_parse_u64(name, v, &o->p.page_seed));
        else if (strcmp(name, "--block-table") == 0) {
            FL_TRY(parse_list(name, v, o->table, FL_CLI_MAX_TABLE, &o->p.block_table_len));
            o->p.block_table = o->table;
        }
        else if (strcmp(name, "--pad") == 0) FL_TRY(parse_double(name, v, &o->p.pad_value));
        else if (strcmp(name, "--density") == 0) FL_TRY(parse_double(name, v, &o->p.density));
        else if (strcmp(name, "--mask-seed") == 0) FL_TRY(fl_parse_u64(name, v, &o->p.mask_seed));
        else return fl_fail(FL_EINVAL, "%s: unknown option for %s (see flashlab %s --help)", name, cmd, cmd);
    }
    return k < 0 ? FL_EINVAL : FL_OK;
}

/* Runs every requested schedule first, so that an error prints nothing but its one line. */
static int count_or_run(int argc, char **argv, fl_mode mode, const char *cmd, const char *blurb)
{
    opts o;
    fl_result res[FL_NALGO];
    int s = parse(argc, argv, &o, cmd, blurb);
    if (s < 0) return 0;
    if (s) return fl_cli_error(s);
    for (int i = 0; i < o.nalgos; i++) {
        fl_problem p = o.p;
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
