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
    "  --help        this text\n";

int fl_cmd_bound(int argc, char **argv)
{
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
    while (!e && (k = fl_args_next(&a, &name, &iv)) == 1) {
        if (strcmp(name, "--help") == 0) {
            if ((e = fl_args_flag(name, iv))) break;
            fputs(usage, stdout);
            goto done;
        }
        if (strcmp(name, "--all-N") == 0) {
            if ((e = fl_args_flag(name, iv))) break;
            brief = 0;
            continue;
        }
        if ((e = fl_args_value(&a, name, iv, &v))) break;
        if (strcmp(name, "--N") == 0) fl_list_free(&N), e = fl_list_parse(name, v, 1, big, &N);
        else if (strcmp(name, "--input") == 0) input = v;
        else if (strcmp(name, "--d") == 0) fl_list_free(&d), e = fl_list_parse(name, v, 1, big, &d);
        else if (strcmp(name, "--M") == 0) fl_list_free(&M), e = fl_list_parse(name, v, 1, big, &M);
        else if (strcmp(name, "--max-total-events") == 0)
            e = fl_parse_limit(name, v, 0, INT64_MAX, &s.max_total_events), ds.max_total_events = s.max_total_events;
        else e = fl_fail(FL_EINVAL, "%s: unknown option for bound (see flashlab bound --help)", name);
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
