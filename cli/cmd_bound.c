/* cmd_bound.c: `flashlab bound`: the IO laws fitted (GSL) to a sweep of the count-only machine.
 * What each fit means and why its regime is the one chosen: docs/analysis.md. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis.h"
#include "args.h"
#include "cli.h"
#include "listparse.h"
#include "problem_opts.h"
#include <flashlab/bounds.h>
#include <flashlab/output.h>
#include <flashlab/schedule.h>
#include <flashlab/version.h>

static const char *problem_usage =
    "usage: flashlab bound --problem [--algo A] [problem options] [--format F] [--output FILE]\n"
    "The lower bound of docs/bounds.md of the one problem the options describe -- any problem\n"
    "flashlab accepts: attention with masks, windows, heads, varlen and every pass, decode over a\n"
    "(paged) cache, block-sparse (its mask cut along the schedule's blocks, --Br/--Bc or its rule),\n"
    "softmax alone: the compulsory floor (LB0), the products the outputs need (W_f forward, W_b\n"
    "backward), the product bound (LB1) with its segment R, and their maximum.\n\n"
    "  --algo A      the schedule whose problem it is (decode, blocksparse, softmax-*: their own\n"
    "                problems; any other: attention)                   [flash2]\n"
    "  --format F    table or csv                                       [table]\n"
    "  --output FILE write to FILE (atomically)\n"
    "%s"
    "  --help        this text\n";

/* `bound --problem`: the bound of one problem. */
static int bound_problem(int argc, char **argv)
{
    static fl_popts po; /* large (the cu_seqlens arrays): not on the stack */
    int csv = 0;
    const char *output = NULL, *name, *iv, *v;
    fl_status e = FL_OK;
    fl_args a;
    int k;
    fl_popts_init(&po);
    fl_args_init(&a, argc, argv);
    while (!e && (k = fl_args_next_option(&a, &name, &iv)) == 1) {
        if (fl_args_is_flag(name, iv, "--problem", &e)) continue;
        if ((e = fl_args_value(&a, name, iv, &v))) break;
        if (strcmp(name, "--algo") == 0) e = fl_algo_parse(v, &po.p.algo);
        else if (strcmp(name, "--output") == 0) output = v;
        else if (strcmp(name, "--format") == 0) e = fl_parse_table_or_csv(v, &csv);
        else if (!fl_popts_take(&po, name, v, &e))
            e = fl_fail(FL_EINVAL, "%s: unknown option for bound --problem (see flashlab bound --problem --help)", name);
    }
    if (k == FL_ARGS_HELP) {
        printf(problem_usage, fl_popts_usage);
        return 0;
    }
    if (!e && k < 0) e = FL_EINVAL;
    if (!e) e = fl_popts_finish(&po);
    fl_blocks b = {0};
    const fl_problem *p = &po.p;
    /* a block mask is cut along the schedule's blocks; no other problem depends on blocks */
    if (!e && (fl_schedule_get(p->algo)->accepts & FL_ACCEPT_BLOCK_MASK)) e = fl_blocks_choose(p, &b);
    fl_lower_bound lb;
    if (!e) e = fl_lower_bound_of(p, b.Br ? &b : NULL, &lb);
    fl_output *o = NULL;
    FILE *out = stdout;
    if (!e && output && !(e = fl_output_open(output, "--output", &o))) out = fl_output_file(o);
    if (e) return fl_cli_error(e);
    const char *pass = p->pass == FL_PASS_FWD ? "fwd" : p->pass == FL_PASS_BWD ? "bwd" : "fwd+bwd";
    const int64_t Nk = p->Nk ? p->Nk : p->N;
    if (csv) {
        fprintf(out, "# flashlab %s bound --problem: the lower bound of docs/bounds.md (elements): floor LB0, "
                     "product LB1 (segments of R moves), bound = max\n", FLASHLAB_VERSION);
        fl_cli_command_comment(out, "bound", argc, argv);
        fputs("algo,N,Nk,d,M,pass,causal,window_left,window_right,batch,heads,kv_heads,floor_reads,floor_writes,floor,"
              "products_fwd,products_bwd,segment,product,bound,small_cache\n", out);
        fprintf(out, "%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%s,%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
                     ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%.0f,%.0f,%" PRId64 ",%" PRId64 ",%" PRId64 ",%d\n",
                fl_algo_name(p->algo), p->N, Nk, p->d, p->M, pass, fl_causal_name(p->causal), p->window_left,
                p->window_right, p->batch, p->heads, p->kv_heads ? p->kv_heads : p->heads, lb.floor_reads,
                lb.floor_writes, lb.floor, lb.products_fwd, lb.products_bwd, lb.segment, lb.product, lb.bound,
                lb.small_cache);
    } else {
        fprintf(out, "flashlab bound --problem: the lower bound of docs/bounds.md, in elements\n");
        fprintf(out, "  problem   of %s: N = %" PRId64 ", Nk = %" PRId64 ", d = %" PRId64 ", M = %" PRId64
                     ", pass %s, causal %s, window %" PRId64 ",%" PRId64 ", batch %" PRId64 " x %" PRId64
                     " query heads over %" PRId64 "\n",
                fl_algo_name(p->algo), p->N, Nk, p->d, p->M, pass, fl_causal_name(p->causal), p->window_left,
                p->window_right, p->batch, p->heads, p->kv_heads ? p->kv_heads : p->heads);
        if (b.Br) fprintf(out, "  blocks    Br = %" PRId64 ", Bc = %" PRId64 " (the block mask is cut along them)\n", b.Br, b.Bc);
        fprintf(out, "  floor     (LB0) %" PRId64 " = reads %" PRId64 " + writes %" PRId64 "\n", lb.floor,
                lb.floor_reads, lb.floor_writes);
        fprintf(out, "  products  forward W_f = %.0f, backward W_b = %.0f\n", lb.products_fwd, lb.products_bwd);
        if (lb.product)
            fprintf(out, "  product   (LB1) %" PRId64 " with segments of R = %" PRId64 " moves (%s)\n", lb.product,
                    lb.segment, lb.small_cache ? "M < d^2: the small-cache regime, Theta(N^2 d / sqrt M)"
                                               : "M >= d^2: Theta(N^2 d^2 / M)");
        else
            fprintf(out, "  product   (LB1) 0: %s\n", lb.products > 0.0 ? "the products fit in a segment or two"
                                                                        : "no products to charge");
        fprintf(out, "  bound     %" PRId64 "  (%s)\n", lb.bound, lb.bound == lb.floor ? "the floor" : "the products");
    }
    if (output) e = fl_output_commit(o);
    return e ? fl_cli_error(e) : 0;
}

static const char *usage =
    "usage: flashlab bound [options]\n"
    "Fits the IO laws to a sweep of the count-only machine with GSL least squares (± one\n"
    "standard error): log-log slopes of traffic in M, N and d; c in traffic ~= c N²d²/M for\n"
    "flash1/flash2 over d <= M <= Nd; standard's Theta(Nd + N²) regime; the lower bounds.\n\n"
    "  --N LIST      sequence lengths          [512:65536:x2]\n"
    "  --d LIST      head dimensions           [64,128]\n"
    "  --M LIST      SRAM sizes (elements); only M <= N*d is used  [4096:8388608:x2]\n"
    "  --input FILE  fit the rows of a CSV written by `flashlab sweep` ('-': stdin) instead\n"
    "                of running the default sweep (forward rows; the d fit uses its own d values)\n"
    "  --all-N       print the M-slope for every N (default: the largest N only)\n"
    "(with --N, --d or --M the slope in d is fitted on that grid, at its (N, M) with the most d)\n"
    "  --max-total-events E  refuse a sweep of more than E tile events in all (0: no limit) [3e9]\n"
    "  --problem     print the lower bound of one problem instead (any problem flashlab accepts;\n"
    "                see flashlab bound --problem --help)\n"
    FL_JOBS_USAGE
    "  --help        this text\n";

int fl_cmd_bound(int argc, char **argv)
{
    for (int i = 0; i < argc; i++) /* argv holds the options alone (main.c) */
        if (strcmp(argv[i], "--problem") == 0 || strncmp(argv[i], "--problem=", 10) == 0) return bound_problem(argc, argv);
    const int64_t big = INT64_MAX / 4;
    fl_list N = {0}, d = {0}, M = {0};
    fl_sweep_spec s = fl_sweep_spec_report(), ds = fl_analysis_dsweep();
    fl_table t = {0}, dt = {0};
    fl_sweep_stats st;
    int brief = 1, status = 0;
    const char *input = NULL;
    fl_status e = FL_OK;
    fl_args a;
    const char *name, *iv, *v;
    int k;
    fl_args_init(&a, argc, argv);
    while (!e && (k = fl_args_next_option(&a, &name, &iv)) == 1) {
        if (fl_args_is_flag(name, iv, "--all-N", &e)) {
            brief = 0;
            continue;
        }
        if ((e = fl_args_value(&a, name, iv, &v))) break;
        if (strcmp(name, "--N") == 0) fl_list_free(&N), e = fl_list_parse(name, v, 1, big, &N);
        else if (strcmp(name, "--jobs") == 0) e = fl_cli_jobs(name, v);
        else if (strcmp(name, "--input") == 0) input = v;
        else if (strcmp(name, "--d") == 0) fl_list_free(&d), e = fl_list_parse(name, v, 1, big, &d);
        else if (strcmp(name, "--M") == 0) fl_list_free(&M), e = fl_list_parse(name, v, 1, big, &M);
        else if (strcmp(name, "--max-total-events") == 0)
            e = fl_parse_limit(name, v, 0, INT64_MAX, &s.max_total_events), ds.max_total_events = s.max_total_events;
        else e = fl_fail(FL_EINVAL, "%s: unknown option for bound (see flashlab bound --help)", name);
    }
    if (k == FL_ARGS_HELP) {
        fputs(usage, stdout);
        goto done;
    }
    if (!e && k < 0) e = FL_EINVAL;
    if (e) goto fail;
    if (N.n) s.N = N.v, s.nN = N.n;
    if (d.n) s.d = d.v, s.nd = d.n;
    if (M.n) s.M = M.v, s.nM = M.n;
    if (input) {
        if (N.n || d.n || M.n) {
            e = fl_fail(FL_EINVAL, "--input: the grid comes from the file; --N, --d, --M do not apply");
            goto fail;
        }
        FILE *in;
        if ((e = fl_cli_open_input(input, "--input", &in))) goto fail;
        e = fl_table_read_csv(in, input, &t);
        fl_cli_close_input(in);
        if (e) goto fail;
        if (!t.n) {
            e = fl_fail(FL_EINVAL, "--input: %s has no rows", fl_shown(input));
            goto fail;
        }
        printf("flashlab bound: GSL least-squares fits to counts of the count-only machine (± one standard error)\n"
               "input: %s, %zu rows\n\n", fl_shown(input), t.n);
    } else {
        /* the d sweep (N = 65536, M = 524288) is the default's; a grid given by --N/--d/--M is
         * fitted in d on its own (N, M) with the most values of d */
        const int own = N.n || d.n || M.n;
        if ((e = fl_sweep_collect(&s, &t, &st)) || (!own && (e = fl_sweep_collect(&ds, &dt, NULL)))) goto fail;
        if (!t.n) { /* nothing to fit: a refusal, not empty tables */
            e = fl_fail(FL_EINVAL, "bound: none of the %" PRId64 " configurations of --N, --d, --M can run "
                                   "(count one of them for its reason)", st.configs);
            goto fail;
        }
        printf("flashlab bound: GSL least-squares fits to counts of the count-only machine (± one standard error)\n"
               "sweep: %" PRId64 " configurations (%" PRId64 " skipped), %" PRId64 " tile events; "
               "d sweep: %zu configurations\n\n", st.configs, st.skipped, st.events, dt.n);
    }
    if ((e = fl_bound_print(stdout, &t, &dt, brief))) goto fail;
    goto done;
fail:
    status = fl_cli_error(e);
done:
    fl_table_free(&t);
    fl_table_free(&dt);
    fl_list_free(&N);
    fl_list_free(&d);
    fl_list_free(&M);
    return status;
}
