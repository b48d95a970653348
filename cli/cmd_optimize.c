/* cmd_optimize.c: `flashlab optimize`: the fewest HBM accesses a tiled schedule attains under
 * capacity M (sim/optimize.h), for one M or over a list of M (the attainable-traffic frontier). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <flashlab/args.h>
#include "cli.h"
#include "listparse.h"
#include <flashlab/optimize.h>
#include <flashlab/output.h>
#include "problem_opts.h"

static const char *usage =
    "usage: flashlab optimize [options]\n"
    "Searches loop order (flash1: K/V outer, flash2: queries outer), query-head grouping\n"
    "(flash2-gqa) and block sizes (Br, Bc) for the fewest HBM accesses under capacity M; every\n"
    "reported count is the machine's, from executing the schedule (docs/model.md §optimize).\n"
    "With a list of M (512:262144:x2) it prints the attainable-traffic frontier.\n\n"
    "  --M LIST      SRAM capacities in elements: one value, a list or a range   [from --sram]\n"
    "  --top K       how many of the best-ranked candidates are executed        [8]\n"
    "  --format F    table or csv                                             [table]\n"
    "  --output FILE write to FILE (atomically)\n"
    "%s"
    "  --help        this text\n"
    "(--Br, --Bc and --algo are what is searched: they are not options here.)\n";

/* The lower-bound shape summed over the (sequence, query head) problems: for each, reading Q, K,
 * V and writing O (2*Nq*d + 2*Nk*d) and Proposition 3's Nq*Nk*d^2/M with constant 1
 * (docs/model.md §7).  *prop3 receives the sum of the Nq*Nk*d^2/M terms alone. */
static double lower_bound(const fl_problem *p, double *prop3)
{
    const double d = (double)p->d, M = (double)p->M;
    double lb = 0.0, sum3 = 0.0;
    for (int64_t b = 0; b < p->batch; b++) {
        double nq = (double)p->N, nk = (double)(p->Nk ? p->Nk : p->N);
        if (p->cu_seqlens_q) {
            const int64_t *ck = p->cu_seqlens_k ? p->cu_seqlens_k : p->cu_seqlens_q;
            nq = (double)(p->cu_seqlens_q[b + 1] - p->cu_seqlens_q[b]);
            nk = (double)(ck[b + 1] - ck[b]);
        }
        const double io = 2.0 * nq * d + 2.0 * nk * d, law = nq * nk * d * d / M;
        lb += (double)p->heads * (io > law ? io : law);
        sum3 += (double)p->heads * law;
    }
    *prop3 = sum3;
    return lb;
}

static void row(FILE *out, int csv, const fl_problem *p, const fl_opt *o)
{
    double n2d2m;
    const double lb = lower_bound(p, &n2d2m);
    const int64_t f1 = o->have_flash1 ? o->flash1.total : -1, f2 = o->have_flash2 ? o->flash2.total : -1;
    if (csv) {
        fprintf(out, "%" PRId64 ",%" PRId64 ",%" PRId64 ",%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
                     ",%" PRId64 ",%.0f,%.4f\n",
                p->N, p->d, p->M, fl_algo_name(o->best.p.algo), o->best.b.Br, o->best.b.Bc, o->best.total,
                f1, f2, lb, (double)o->best.total / n2d2m);
        return;
    }
    fprintf(out, "%9" PRId64 "  %-10s %6" PRId64 " %6" PRId64 " %15" PRId64 " %15" PRId64 " %15" PRId64
                 " %15.0f %9.3f\n",
            p->M, fl_algo_name(o->best.p.algo), o->best.b.Br, o->best.b.Bc, o->best.total, f1, f2,
            lb, (double)o->best.total / n2d2m);
}

int fl_cmd_optimize(int argc, char **argv)
{
    static fl_popts po; /* large (the cu_seqlens arrays): not on the stack */
    fl_list Ms = {0};
    int64_t top = 8;
    int csv = 0, status = 0;
    const char *output = NULL, *name, *iv, *v;
    fl_status e = FL_OK;
    fl_args a;
    int k;
    fl_popts_init(&po);
    fl_args_init(&a, argc, argv);
    while (!e && (k = fl_args_next(&a, &name, &iv)) == 1) {
        if (strcmp(name, "--help") == 0) {
            if ((e = fl_args_flag(name, iv))) break;
            printf(usage, fl_popts_usage);
            return 0;
        }
        if ((e = fl_args_value(&a, name, iv, &v))) break;
        if (strcmp(name, "--M") == 0) fl_list_free(&Ms), e = fl_list_parse(name, v, 1, INT64_MAX / 4, &Ms);
        else if (strcmp(name, "--top") == 0) e = fl_parse_i64(name, v, 1, 1000000, &top);
        else if (strcmp(name, "--output") == 0) output = v;
        else if (strcmp(name, "--format") == 0) {
            if (strcmp(v, "csv") == 0) csv = 1;
            else if (strcmp(v, "table") == 0) csv = 0;
            else e = fl_fail(FL_EINVAL, "--format: unknown format '%s' (choose table or csv)", v);
        } else if (strcmp(name, "--Br") == 0 || strcmp(name, "--Bc") == 0 || strcmp(name, "--algo") == 0)
            e = fl_fail(FL_EINVAL, "%s: optimize searches the schedule and its blocks; it takes no %s", name, name);
        else if (!fl_popts_take(&po, name, v, &e))
            e = fl_fail(FL_EINVAL, "%s: unknown option for optimize (see flashlab optimize --help)", name);
    }
    if (!e && k < 0) e = FL_EINVAL;
    if (!e) e = fl_popts_finish(&po);
    if (e) goto fail;
    const int nM = Ms.n ? Ms.n : 1;
    fl_opt *res = calloc((size_t)nM, sizeof *res);
    if (!res) {
        e = fl_fail(FL_ENOMEM, "optimize: out of memory");
        goto fail;
    }
    fl_output *o = NULL;
    FILE *out = stdout;
    if (output && !(e = fl_output_open(output, "--output", &o))) out = fl_output_file(o); /* before the work */
    for (int i = 0; i < nM && !e; i++) { /* search every M before writing anything */
        fl_problem p = po.p;
        if (Ms.n) p.M = Ms.v[i];
        e = fl_optimize(&p, (int)top, &res[i]);
    }
    if (!e) {
        if (csv) {
            fprintf(out, "# flashlab %s optimize: counts in elements from schedules executed on the count-only "
                         "machine (a model, not a measurement)\n", FLASHLAB_VERSION);
            fl_cli_command_comment(out, "optimize", argc, argv);
            fputs("N,d,M,best_algo,Br,Bc,best_total,flash1_total,flash2_total,lower_bound,constant\n", out);
        } else {
            fprintf(out, "optimize at N = %" PRId64 ", d = %" PRId64 " (elements; flash1/flash2 at their default "
                         "blocks; constant = best / sum of Nq Nk d^2 / M over sequences and heads)\n", po.p.N, po.p.d);
            fprintf(out, "%9s  %-10s %6s %6s %15s %15s %15s %15s %9s\n", "M", "best", "Br", "Bc", "best total",
                    "flash1", "flash2", "lower bound", "constant");
        }
        for (int i = 0; i < nM; i++) {
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
