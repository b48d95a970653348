/* cmd_count.c: `flashlab count` (count-only machine) and `flashlab run` (compute mode, checked
 * against the reference).  Both run each requested schedule through fl_run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "emit.h"
#include "presets.h"
#include "run.h"

static const char *usage =
    "usage: flashlab %s [options]\n"
    "%s"
    "  --algo LIST   standard, flash1, flash2, flash2-gqa, a comma list, or all [all;\n"
    "                flash2-gqa is in all when --kv-heads < --heads]; also, named only:\n"
    "                decode, blocksparse, memeff, softmax-safe, softmax-online (docs/model.md §6)\n"
    "  --N N         query sequence length (packed tokens with --cu-seqlens-q) [1024]\n"
    "  --d D         head dimension                                   [64]\n"
    "  --M M         SRAM capacity in elements (overrides --sram)     [98304 = A100 192 KiB, fp16]\n"
    "  --sram GPU    M from a preset: a100, h100, h200, b200          [a100]\n"
    "  --dtype T     fp16, bf16 or fp32: bytes per element; M from --sram [fp16]\n"
    "  --Br B        query block rows (default: the schedule's rule, docs/model.md §3)\n"
    "  --Bc B        key/value block rows (default: the schedule's rule)\n"
    "  --seed S      seed of the random inputs (run)                  [1]\n"
    "  --pass P      fwd, bwd (backward alone: its inputs are in HBM) or fwd+bwd [fwd]\n"
    "  --Nk N        key length (packed keys with --cu-seqlens-k)     [N]\n"
    "  --causal C    none, top-left (SDPA is_causal) or bottom-right (FlashAttention >= 2.1) [none]\n"
    "  --window L,R  FA2 local window: query i sees keys [i+Nk-Nq-L, i+Nk-Nq+R]; -1 = unbounded [-1,-1]\n"
    "  --batch B     sequences                                        [1]\n"
    "  --heads H     query heads                                      [1]\n"
    "  --kv-heads H  key/value heads, dividing --heads (1 = MQA)      [heads]\n"
    "  --cu-seqlens-q LIST  varlen: batch+1 offsets 0,...,N of the packed queries\n"
    "  --cu-seqlens-k LIST  varlen: the same for the keys (default: --cu-seqlens-q)\n"
    "  --format F    table, csv or json                               [table]\n"
    "  --explain     show how the blocks were chosen (the paper's sizes, their footprint)\n"
    "  --max-events E  refuse runs with more tile events than E (0: no limit) [1e10]\n"
    "  decode:       --splits S (split-KV)  --page-size P (paged cache; default contiguous)\n"
    "                --pool-pages K  --page-seed S (0 = identity table)  --block-table 5,2,7\n"
    "                --pad X (run: the last page's rows beyond Nk; nan poisons them)\n"
    "  blocksparse:  --density s in (0, 1]  --mask-seed S\n"
    "  memeff:       --Br/--Bc are Rabe-Staats' query and key chunk sizes\n"
    "  softmax-*:    softmax of each row of an N x Nk matrix\n"
    "  --help        this text\n";

#define FL_CLI_MAX_BATCH 4096

typedef struct {
    int algos[FL_NALGO], nalgos, all;
    fl_problem p;
    fl_format fmt;
    int explain;
    int set_N, set_batch;
    int64_t cuq[FL_CLI_MAX_BATCH + 1], cuk[FL_CLI_MAX_BATCH + 1], ncuq, ncuk;
    int64_t table[FL_CLI_MAX_BATCH]; /* --block-table */
} opts;

/* A double (nan and inf allowed): strtod over the whole string. */
static fl_status parse_double(const char *opt, const char *v, double *out)
{
    char *end;
    *out = strtod(v, &end);
    if (!*v || *end) return fl_fail(FL_EINVAL, "%s: '%s' is not a number", opt, v);
    return FL_OK;
}

/* A comma list of distinct schedule names, or "all".  Every item is checked as written: an
 * empty item (",flash1", "flash1,") is an error, and no length is cut off. */
static fl_status parse_pass(const char *v, fl_pass *out)
{
    if (strcmp(v, "fwd") == 0) *out = FL_PASS_FWD;
    else if (strcmp(v, "bwd") == 0) *out = FL_PASS_BWD;
    else if (strcmp(v, "fwd+bwd") == 0) *out = FL_PASS_FWD_BWD;
    else return fl_fail(FL_EINVAL, "--pass: unknown pass '%s' (choose fwd, bwd or fwd+bwd)", v);
    return FL_OK;
}

static fl_status parse_window(const char *v, opts *o)
{
    int64_t w[2], n;
    FL_TRY(fl_parse_i64_list("--window", v, -1, INT64_MAX / 4, w, 2, &n));
    if (n != 2) return fl_fail(FL_EINVAL, "--window: needs two values L,R (each >= 0, or -1 for unbounded)");
    o->p.window_left = w[0];
    o->p.window_right = w[1];
    return FL_OK;
}

/* Varlen: the number of entries sets --batch (or must be --batch + 1), the last entry sets
 * --N / --Nk (or must equal them): docs/model.md rule V1. */
static fl_status finish_varlen(opts *o)
{
    if (o->ncuk && !o->ncuq) return fl_fail(FL_EINVAL, "--cu-seqlens-k: needs --cu-seqlens-q too");
    if (!o->ncuq) return FL_OK;
    if (o->ncuk && o->ncuk != o->ncuq)
        return fl_fail(FL_EINVAL, "--cu-seqlens-k: needs as many entries as --cu-seqlens-q (batch + 1 = %lld), got %lld",
                       (long long)o->ncuq, (long long)o->ncuk);
    if (o->set_batch && o->ncuq != o->p.batch + 1)
        return fl_fail(FL_EINVAL, "--cu-seqlens-q: needs batch + 1 = %lld entries, got %lld",
                       (long long)(o->p.batch + 1), (long long)o->ncuq);
    if (o->ncuq < 2) return fl_fail(FL_EINVAL, "--cu-seqlens-q: needs batch + 1 >= 2 entries");
    o->p.batch = o->ncuq - 1;
    if (!o->set_N) o->p.N = o->cuq[o->ncuq - 1];
    if (o->ncuk && !o->p.Nk) o->p.Nk = o->cuk[o->ncuk - 1];
    o->p.cu_seqlens_q = o->cuq;
    o->p.cu_seqlens_k = o->ncuk ? o->cuk : NULL;
    return FL_OK;
}

static fl_status parse_algos(const char *s, opts *o)
{
    o->nalgos = 0;
    o->all = 0;
    if (strcmp(s, "all") == 0) { /* flash2-gqa joins when there are groups (finish_algos) */
        for (int a = 0; a < FL_NALGO; a++)
            if (a <= FL_ALGO_FLASH2) o->algos[o->nalgos++] = a; /* not gqa, not problem_ext's */
        o->all = 1;
        return FL_OK;
    }
    for (const char *item = s;; item++) {
        const size_t len = strcspn(item, ",");
        char tok[32];
        fl_algo a;
        if (len == 0)
            return fl_fail(FL_EINVAL, "--algo: '%s' has an empty item (a comma list such as flash1,flash2)", s);
        if (len >= sizeof tok)
            return fl_fail(FL_EINVAL, "--algo: unknown schedule '%.*s' (choose %s)", (int)len, item,
                           fl_algo_choices());
        memcpy(tok, item, len);
        tok[len] = 0;
        FL_TRY(fl_algo_parse(tok, &a));
        for (int k = 0; k < o->nalgos; k++)
            if (o->algos[k] == (int)a) return fl_fail(FL_EINVAL, "--algo: '%s' is listed twice", tok);
        o->algos[o->nalgos++] = a;
        item += len;
        if (!*item) break;
    }
    return FL_OK;
}

/* Parses the shared options; returns -1 after printing help, else a status. */
static int parse(int argc, char **argv, opts *o, const char *cmd, const char *blurb)
{
    const int64_t big = INT64_MAX / 4;
    fl_args a;
    const char *name, *iv, *v, *sram = NULL, *dtype = NULL;
    int64_t M_given = 0;
    int k;
    memset(o, 0, sizeof *o);
    o->p = fl_problem_default();
    o->fmt = FL_FMT_TABLE;
    FL_TRY(parse_algos("all", o));
    fl_args_init(&a, argc, argv);
    while ((k = fl_args_next(&a, &name, &iv)) == 1) {
        if ((strcmp(name, "--help") == 0 || strcmp(name, "--explain") == 0) && iv)
            return fl_fail(FL_EINVAL, "%s: is a flag and takes no value (got '=%s')", name, iv);
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
        else if (strcmp(name, "--N") == 0) {
            FL_TRY(fl_parse_i64(name, v, 1, big, &o->p.N));
            o->set_N = 1;
        }
        else if (strcmp(name, "--Nk") == 0) FL_TRY(fl_parse_i64(name, v, 1, big, &o->p.Nk));
        else if (strcmp(name, "--pass") == 0) FL_TRY(parse_pass(v, &o->p.pass));
        else if (strcmp(name, "--causal") == 0) FL_TRY(fl_causal_parse(v, &o->p.causal));
        else if (strcmp(name, "--window") == 0) FL_TRY(parse_window(v, o));
        else if (strcmp(name, "--batch") == 0) {
            FL_TRY(fl_parse_i64(name, v, 1, big, &o->p.batch));
            o->set_batch = 1;
        }
        else if (strcmp(name, "--heads") == 0) FL_TRY(fl_parse_i64(name, v, 1, big, &o->p.heads));
        else if (strcmp(name, "--kv-heads") == 0) FL_TRY(fl_parse_i64(name, v, 1, big, &o->p.kv_heads));
        else if (strcmp(name, "--cu-seqlens-q") == 0)
            FL_TRY(fl_parse_i64_list(name, v, 0, big, o->cuq, FL_CLI_MAX_BATCH + 1, &o->ncuq));
        else if (strcmp(name, "--cu-seqlens-k") == 0)
            FL_TRY(fl_parse_i64_list(name, v, 0, big, o->cuk, FL_CLI_MAX_BATCH + 1, &o->ncuk));
        else if (strcmp(name, "--d") == 0) FL_TRY(fl_parse_i64(name, v, 1, big, &o->p.d));
        else if (strcmp(name, "--M") == 0) FL_TRY(fl_parse_i64(name, v, 1, big, &M_given));
        else if (strcmp(name, "--sram") == 0) sram = v;
        else if (strcmp(name, "--dtype") == 0) dtype = v;
        else if (strcmp(name, "--Br") == 0) FL_TRY(fl_parse_i64(name, v, 1, big, &o->p.Br));
        else if (strcmp(name, "--Bc") == 0) FL_TRY(fl_parse_i64(name, v, 1, big, &o->p.Bc));
        else if (strcmp(name, "--seed") == 0) FL_TRY(fl_parse_u64(name, v, &o->p.seed));
        else if (strcmp(name, "--max-events") == 0) FL_TRY(fl_parse_i64(name, v, 0, INT64_MAX, &o->p.max_events));
        else if (strcmp(name, "--format") == 0) FL_TRY(fl_format_parse(v, &o->fmt));
        /* decode, blocksparse (sim/problem_ext.h) */
        else if (strcmp(name, "--splits") == 0) FL_TRY(fl_parse_i64(name, v, 1, big, &o->p.splits));
        else if (strcmp(name, "--page-size") == 0) FL_TRY(fl_parse_i64(name, v, 1, big, &o->p.page_size));
        else if (strcmp(name, "--pool-pages") == 0) FL_TRY(fl_parse_i64(name, v, 1, big, &o->p.pool_pages));
        else if (strcmp(name, "--page-seed") == 0) FL_TRY(fl_parse_u64(name, v, &o->p.page_seed));
        else if (strcmp(name, "--block-table") == 0) {
            FL_TRY(fl_parse_i64_list(name, v, -big, big, o->table, FL_CLI_MAX_BATCH, &o->p.block_table_len));
            o->p.block_table = o->table;
        }
        else if (strcmp(name, "--pad") == 0) FL_TRY(parse_double(name, v, &o->p.pad_value));
        else if (strcmp(name, "--density") == 0) FL_TRY(parse_double(name, v, &o->p.density));
        else if (strcmp(name, "--mask-seed") == 0) FL_TRY(fl_parse_u64(name, v, &o->p.mask_seed));
        else return fl_fail(FL_EINVAL, "%s: unknown option for %s (see flashlab %s --help)", name, cmd, cmd);
    }
    if (k < 0) return FL_EINVAL;
    FL_TRY(finish_varlen(o));
    if (o->all && o->p.kv_heads && o->p.kv_heads < o->p.heads) o->algos[o->nalgos++] = FL_ALGO_FLASH2_GQA;
    FL_TRY(fl_presets_resolve(sram, dtype, M_given, &o->p.M, &o->p.elem_bytes)); /* presets.h */
    o->p.algo = (fl_algo)o->algos[0]; /* each schedule's own rules are checked by fl_run */
    return fl_problem_check(&o->p);
}

/* Runs every requested schedule first, so that an error prints nothing but its one line. */
static int count_or_run(int argc, char **argv, fl_mode mode, const char *cmd, const char *blurb)
{
    static opts o; /* large (the cu_seqlens arrays): not on the stack */
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
