/* cmd_optimize.c: `flashlab optimize`: the fewest HBM accesses a schedule of the family attains
 * under capacity M (optimize.h, docs/model.md §7), for one M or over a list of M (the attainable
 * frontier), beside the lower bound (bounds.h, docs/bounds.md). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "listparse.h"
#include <flashlab/optimize.h>
#include <flashlab/output.h>
#include <flashlab/version.h>
#include "problem_opts.h"
#include "shard.h"

static const char *usage =
    "usage: flashlab optimize [options]\n"
    "The least HBM traffic (elements) of exact attention under capacity M over a family of\n"
    "schedules: standard, flash1, flash2, flash2-gqa (when --kv-heads < --heads) and smallcache,\n"
    "every block pair (Br, Bc) that fits, the forward's and the backward's chosen\n"
    "separately, d chunked where the schedule does.  The minimum is exact (docs/model.md §7); the\n"
    "best candidates are executed on the count-only machine, and each row prints the `count`\n"
    "command(s) that replay it.  The lower bound is docs/bounds.md's.\n"
    "With a list of M (512:262144:x2) it prints the attainable frontier.\n\n"
    "  --M LIST        SRAM capacities in elements: one value, a list or a range   [from --sram]\n"
    "  --top K         how many of the best candidates are executed (each checked\n"
    "                  against its closed form)                                   [1]\n"
    "  --max-work W    refuse more than W steps in all (block terms of closed forms\n"
    "                  searched, tile events of the runs; about 1e8 a second)      [3e9]\n"
    "  --format F      table or csv                                             [table]\n"
    "  --output FILE   write to FILE (atomically)\n"
    "  --shard I/N     search only the I-th of N round-robin slices of the M list (CSV);\n"
    "                  `flashlab merge` joins the shards into the CSV without --shard\n"
    "%s"
    FL_JOBS_USAGE
    "  --help          this text\n"
    "(--Br, --Bc and --algo are what is searched: they are not options here.)\n";

/* The options of `count` that give the problem p and the blocks of one pass. */
static void replay(FILE *out, const fl_problem *p, fl_algo a, const char *pass, int64_t Br, int64_t Bc)
{
    fprintf(out, "flashlab count --algo %s --N %" PRId64, fl_algo_name(a), p->N);
    if (p->Nk && p->Nk != p->N) fprintf(out, " --Nk %" PRId64, p->Nk);
    fprintf(out, " --d %" PRId64 " --M %" PRId64, p->d, p->M);
    if (p->causal != FL_CAUSAL_NONE) fprintf(out, " --causal %s", fl_causal_name(p->causal));
    if (p->window_left != -1 || p->window_right != -1)
        fprintf(out, " --window %" PRId64 ",%" PRId64, p->window_left, p->window_right);
    if (p->batch != 1) fprintf(out, " --batch %" PRId64, p->batch);
    if (p->heads != 1) fprintf(out, " --heads %" PRId64, p->heads);
    if (p->kv_heads && p->kv_heads != p->heads) fprintf(out, " --kv-heads %" PRId64, p->kv_heads);
    for (int k = 0; k < 2; k++) {
        const int64_t *cu = k ? p->cu_seqlens_k : p->cu_seqlens_q;
        if (!cu) continue;
        fprintf(out, " --cu-seqlens-%s ", k ? "k" : "q");
        for (int64_t i = 0; i <= p->batch; i++) fprintf(out, "%s%" PRId64, i ? "," : "", cu[i]);
    }
    if (p->max_events != fl_problem_default().max_events) fprintf(out, " --max-events %" PRId64, p->max_events);
    /* the variants (docs/model.md §14); a fixed-order dQ is the backward's alone */
    if (fl_problem_dv(p) != p->d) fprintf(out, " --d-v %" PRId64, fl_problem_dv(p));
    if (p->sinks) fputs(" --sinks", out);
    if (p->softcap > 0.0) fprintf(out, " --softcap %.15g", p->softcap);
    if (p->alibi) fputs(" --alibi", out);
    if (p->dropout > 0.0) fprintf(out, " --dropout %.15g", p->dropout);
    if (p->elem_bytes == 1) fputs(" --dtype fp8", out);
    if (p->scale_block) fprintf(out, " --scale-block %" PRId64, p->scale_block);
    if (p->deterministic && strcmp(pass, "fwd")) fputs(" --deterministic", out);
    fprintf(out, " --pass %s --Br %" PRId64 " --Bc %" PRId64, pass, Br, Bc);
}

static const char *pass_name(fl_pass s) { return s == FL_PASS_FWD ? "fwd" : s == FL_PASS_BWD ? "bwd" : "fwd+bwd"; }

static void row(FILE *out, int csv, const fl_problem *p, const fl_opt *o)
{
    const fl_opt_choice *b = &o->best;
    const double ratio = o->lb.bound > 0 ? (double)b->total / (double)o->lb.bound : 0.0;
    if (csv) {
        fprintf(out, "%" PRId64 ",%" PRId64 ",%" PRId64 ",%s,%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
                     ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",",
                p->N, p->d, p->M, pass_name(p->pass), fl_algo_name(b->algo), b->Br, b->Bc, b->Bd, b->Br_bwd, b->Bc_bwd,
                b->Bd_bwd, b->fwd_total, b->bwd_total, b->total);
        for (int i = 0; i < o->ncompared; i++)
            fprintf(out, "%" PRId64 ",", o->compared[i].have ? o->compared[i].r.total : -1);
        fprintf(out, "%" PRId64 ",%.4f\n", o->lb.bound, ratio);
        return;
    }
    char fb[64] = "-", bb[64] = "-";
    if (b->Br) snprintf(fb, sizeof fb, "%" PRId64 " x %" PRId64 " (Bd %" PRId64 ")", b->Br, b->Bc, b->Bd);
    if (b->Br_bwd) snprintf(bb, sizeof bb, "%" PRId64 " x %" PRId64 " (Bd %" PRId64 ")", b->Br_bwd, b->Bc_bwd, b->Bd_bwd);
    fprintf(out, "%9" PRId64 "  %-10s %-20s %-20s %15" PRId64, p->M, fl_algo_name(b->algo), fb, bb, b->total);
    for (int i = 0; i < o->ncompared; i++) {
        char s[32] = "-";
        if (o->compared[i].have) snprintf(s, sizeof s, "%" PRId64, o->compared[i].r.total);
        fprintf(out, " %15s", s);
    }
    fprintf(out, " %15" PRId64 " %8.2f\n", o->lb.bound, ratio);
    fprintf(out, "           replay (%" PRId64 "): ", b->total);
    if (b->Br) replay(out, p, b->algo, "fwd", b->Br, b->Bc);
    if (b->Br && b->Br_bwd) fputs("  plus  ", out);
    if (b->Br_bwd) replay(out, p, b->algo, "bwd", b->Br_bwd, b->Bc_bwd);
    fputc('\n', out);
}

int fl_cmd_optimize(int argc, char **argv)
{
    static fl_popts po; /* large (the cu_seqlens arrays): not on the stack */
    fl_list Ms = {0};
    int64_t top = 1, max_work = FL_OPT_MAX_WORK;
    int csv = 0, status = 0;
    fl_shard shard = {0, 0};
    const char *output = NULL, *name, *iv, *v;
    fl_status e = FL_OK;
    fl_args a;
    int k;
    fl_popts_init(&po);
    fl_args_init(&a, argc, argv);
    while (!e && (k = fl_args_next_option(&a, &name, &iv)) == 1) {
        if (fl_popts_flag(&po, name, iv, &e)) continue;
        if ((e = fl_args_value(&a, name, iv, &v))) break;
        if (strcmp(name, "--M") == 0) fl_list_free(&Ms), e = fl_list_parse(name, v, 1, INT64_MAX / 4, &Ms);
        else if (strcmp(name, "--top") == 0) e = fl_parse_i64(name, v, 1, 1000000, &top);
        else if (strcmp(name, "--max-work") == 0) e = fl_parse_limit(name, v, 1, INT64_MAX / 4, &max_work);
        else if (strcmp(name, "--output") == 0) output = v;
        else if (strcmp(name, "--jobs") == 0) e = fl_cli_jobs(name, v);
        else if (strcmp(name, "--shard") == 0) e = fl_shard_parse(name, v, &shard);
        else if (strcmp(name, "--format") == 0) e = fl_parse_table_or_csv(v, &csv);
        else if (strcmp(name, "--Br") == 0 || strcmp(name, "--Bc") == 0 || strcmp(name, "--algo") == 0)
            e = fl_fail(FL_EINVAL, "%s: optimize searches the schedule and its blocks; it takes no %s", name, name);
        else if (!fl_popts_take(&po, name, v, &e))
            e = fl_fail(FL_EINVAL, "%s: unknown option for optimize (see flashlab optimize --help)", name);
    }
    if (k == FL_ARGS_HELP) {
        printf(usage, fl_popts_usage);
        return 0;
    }
    if (!e && k < 0) e = FL_EINVAL;
    if (!e) e = fl_optimize_check(&po.p); /* before the problem check names --algo flash2 */
    if (!e) e = fl_popts_finish(&po);
    if (!e && shard.n && !csv) e = fl_fail(FL_EINVAL, "--shard: shards are CSV (flashlab merge joins them); add --format csv");
    const int nM = Ms.n ? Ms.n : 1;
    if (!e && shard.n > nM)
        e = fl_fail(FL_EINVAL, "--shard: the M list has %d value%s; use at most %d shards", nM, nM > 1 ? "s" : "", nM);
    if (e) goto fail;
    fl_opt *res = calloc((size_t)nM, sizeof *res);
    if (!res) {
        e = fl_fail(FL_ENOMEM, "optimize: out of memory");
        goto fail;
    }
    fl_output *o = NULL;
    FILE *out = stdout;
    if (output && !(e = fl_output_open(output, "--output", &o))) out = fl_output_file(o); /* before the work */
    /* one estimate for the whole list before any work (the searches' estimates and the compared
     * schedules' tile events of every M of this shard); each M then runs under --max-work itself */
    int64_t est = 0, t;
    int nown = 0;
    for (int i = 0; i < nM && !e; i++) {
        if (!fl_shard_owns(&shard, i)) continue;
        fl_problem p = po.p;
        if (Ms.n) p.M = Ms.v[i];
        nown++;
        if (!(e = fl_optimize_estimate(&p, &t)) && !fl_add_ok(est, t, &est)) est = INT64_MAX;
    }
    if (!e && nown > 1 && est > max_work)
        e = fl_fail(FL_EINVAL, "--max-work: optimize over %d values of M takes at least %lld steps (the searches' "
                               "estimates and the compared schedules' tile events; %s), more than the limit %lld; "
                               "raise --max-work, or give fewer values of M",
                    nown, (long long)est, fl_seconds_of(est, FL_OPT_STEPS_PER_SECOND), (long long)max_work);
    fl_problem *ps = calloc((size_t)nM, sizeof *ps);
    fl_opt *got = calloc((size_t)nM, sizeof *got);
    int n = 0;
    if (!e && (!ps || !got)) e = fl_fail(FL_ENOMEM, "optimize: out of memory");
    for (int i = 0; i < nM && !e; i++) /* the M of this shard, in order */
        if (fl_shard_owns(&shard, i)) ps[n] = po.p, ps[n++].M = Ms.n ? Ms.v[i] : po.p.M;
    if (!e) e = fl_optimize_each(ps, n, (int)top, max_work, 0, got); /* every M before writing anything */
    for (int i = 0, k = 0; i < nM && !e; i++)
        if (fl_shard_owns(&shard, i)) res[i] = got[k++];
    free(ps);
    free(got);
    if (!e) {
        if (csv) {
            fprintf(out, "# flashlab %s optimize: counts in elements from schedules executed on the count-only "
                         "machine (a model, not a measurement); lower_bound: docs/bounds.md\n", FLASHLAB_VERSION);
            const fl_opt *hdr = &res[shard.n ? shard.i - 1 : 0]; /* the first result of this shard */
            fl_shard_comments(out, "optimize", argc, argv, &shard, nM);
            fputs("N,d,M,pass,best_algo,Br,Bc,Bd,Br_bwd,Bc_bwd,Bd_bwd,best_fwd,best_bwd,best_total,", out);
            for (int i = 0; i < hdr->ncompared; i++) fprintf(out, "%s_total,", fl_algo_name(hdr->compared[i].algo));
            fputs("lower_bound,best_over_bound\n", out);
        } else {
            fprintf(out, "optimize at N = %" PRId64 ", d = %" PRId64 ", pass %s: the least HBM traffic (elements) of the\n"
                         "family (docs/model.md §7); ",
                    po.p.N, po.p.d, pass_name(po.p.pass));
            for (int i = 0; i < res[0].ncompared; i++)
                fprintf(out, "%s%s", i ? ", " : "", fl_algo_name(res[0].compared[i].algo));
            fprintf(out, " at their default blocks; lower bound of docs/bounds.md\n");
            fprintf(out, "%9s  %-10s %-20s %-20s %15s", "M", "best", "forward Br x Bc", "backward Br x Bc", "best total");
            for (int i = 0; i < res[0].ncompared; i++) fprintf(out, " %15s", fl_algo_name(res[0].compared[i].algo));
            fprintf(out, " %15s %8s\n", "lower bound", "/bound");
        }
        for (int i = 0; i < nM; i++) {
            if (!fl_shard_owns(&shard, i)) continue;
            fl_problem p = po.p;
            if (Ms.n) p.M = Ms.v[i];
            row(out, csv, &p, &res[i]);
        }
        if (output) e = fl_output_commit(o);
    } else {
        fl_output_abort(o);
    }
    free(res);
    if (e) goto fail;
    goto done;
fail:
    status = fl_cli_error(e);
done:
    fl_list_free(&Ms);
    return status;
}
