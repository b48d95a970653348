/* main.c: the flashlab command line: dispatch to a subcommand. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include <flashlab/output.h>
#include <flashlab/pool.h>
#include <flashlab/version.h>
#include "cli.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
} commands[] = {
    {"count", fl_cmd_count, "count HBM reads/writes of the schedules (count-only machine)"},
    {"run", fl_cmd_run, "run the schedules on real values and check them against the reference"},
    {"example", fl_cmd_example, "reproduce the seeds' worked examples (list, two-tile, ...)"},
    {"sweep", fl_cmd_sweep, "count a grid of configurations (lists and ranges), one CSV row each"},
    {"bound", fl_cmd_bound, "fit the IO laws (slopes in M, N, d; c in c*N^2d^2/M) with GSL"},
    {"plot", fl_cmd_plot, "regenerate the figures (PNG, PDF, SVG) with gnuplot"},
    {"report", fl_cmd_report, "the main job: GPT-2-medium table, fits, examples, figures"},
    {"optimize", fl_cmd_optimize, "search loop order, GQA grouping and blocks for the fewest HBM accesses"},
    {"trace", fl_cmd_trace, "write the tile events of a small run as CSV or JSON lines"},
    {"l2", fl_cmd_l2, "predict DRAM bytes of a kernel schedule through an L2 (three levels)"},
    {"schedules", fl_cmd_schedules, "list the registered schedules: all, optimize's family, roles"},
    {"merge", fl_cmd_merge, "join the CSVs of a sharded sweep or optimize (--shard I/N) into the run's CSV"},
    {"cp", fl_cmd_cp, "context parallelism: HBM and link traffic of P devices (ring, striped, ulysses)"},
    {"gpus", fl_cmd_gpus, "list the GPU presets: SRAM per SM, SMs, L2, which were measured"},
};

/* The CLI's spelling of a quantity the library names: its flag, "--" and the name with '-' for
 * '_' (kv_heads: --kv-heads; cu_seqlens_q: --cu-seqlens-q). */
static void flag_of(const char *name, char *buf, size_t cap, void *ctx)
{
    size_t n = (size_t)snprintf(buf, cap, "--%s", name);
    for (size_t i = 2; i < n && i < cap; i++)
        if (buf[i] == '_') buf[i] = '-';
}

const char *fl_cli_render(const char *raw)
{
    static _Thread_local char msg[1100];
    return fl_error_render(raw, msg, sizeof msg, flag_of, NULL);
}

const char *fl_cli_message(void) { return fl_cli_render(fl_last_error_raw()); }

fl_status fl_cli_jobs(const char *opt, const char *value)
{
    int64_t n;
    FL_TRY(fl_parse_i64(opt, value, 1, FL_POOL_MAX_JOBS, &n));
    fl_pool_set_default_jobs((int)n);
    return FL_OK;
}

int fl_cli_error(int s)
{
    fprintf(stderr, "flashlab: %s\n", fl_cli_message());
    fflush(stdout);
    return fl_exit_code((fl_status)s);
}

/* Whether argv[i] is one of the options of drop ("--name=": takes a value; "--name": a flag);
 * *skip receives how many arguments it takes (1 or 2). */
static int dropped(const char *const *drop, int argc, char **argv, int i, int *skip)
{
    for (int k = 0; drop && drop[k]; k++) {
        const size_t n = strlen(drop[k]);
        const int valued = drop[k][n - 1] == '=';
        if (valued && !strncmp(argv[i], drop[k], n)) return *skip = 1; /* --name=value */
        if (valued && !strncmp(argv[i], drop[k], n - 1) && !argv[i][n - 1]) return *skip = i + 1 < argc ? 2 : 1;
        if (!valued && !strcmp(argv[i], drop[k])) return *skip = 1;
    }
    return 0;
}

void fl_cli_command_comment_except(FILE *out, const char *command, int argc, char **argv, const char *const *drop)
{
    fprintf(out, "# command: flashlab %s", command);
    for (int i = 0, skip; i < argc; i++) {
        if (dropped(drop, argc, argv, i, &skip)) {
            i += skip - 1;
            continue;
        }
        fputc(' ', out);
        for (const char *c = argv[i]; *c; c++) /* a newline here would start a forged data line */
            fputc((unsigned char)*c < 0x20 || *c == 0x7f ? '?' : *c, out);
    }
    fputc('\n', out);
}

void fl_cli_command_comment(FILE *out, const char *command, int argc, char **argv)
{
    static const char *const how[] = {"--jobs=", NULL}; /* how it ran, not what it computed */
    fl_cli_command_comment_except(out, command, argc, argv, how);
}

static void usage(FILE *out)
{
    fprintf(out, "usage: flashlab COMMAND [options]   (flashlab COMMAND --help for its options)\n\n"
                 "An educational simulator and IO-complexity analyzer for exact tiled attention.\n\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n  --version  print the version\n  --help     this text\n");
}

static int dispatch(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strncmp(argv[1], "--version=", 10) || !strncmp(argv[1], "--help=", 7))
        return fl_cli_error(fl_args_flag(argv[1][2] == 'v' ? "--version" : "--help", strchr(argv[1], '=') + 1));
    if (strcmp(argv[1], "--version") == 0) {
        printf("flashlab %s\n", FLASHLAB_VERSION);
        return 0;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0) return commands[i].fn(argc - 2, argv + 2);
    return fl_cli_error(fl_fail(FL_EINVAL, "'%s': unknown command (see flashlab --help)", fl_shown(argv[1])));
}

int main(int argc, char **argv)
{
    fl_status s = FL_OK;
    fl_output_std_streams(); /* before anything is opened: no file may become stdout */
#ifndef FL_CLI_IN_PROCESS /* the fuzz harnesses call main in their own process: its signals are theirs */
    /* a file-size limit (ulimit -f) makes write fail with EFBIG, which is reported, instead of
     * killing flashlab with its temporaries in place */
    signal(SIGXFSZ, SIG_IGN);
    if ((s = fl_output_catch_signals())) return fl_cli_error(s); /* an interruption removes the temporaries */
    fl_pool_set_default_jobs(fl_pool_cores()); /* --jobs of a command may lower it */
#endif
    int rc = dispatch(argc, argv);
    /* every command's stdout, checked once: a full disk, a closed or broken stdout, a file-size
     * limit */
    if ((s = fl_output_stdout_status()) && rc == 0) rc = fl_cli_error(s);
    return rc;
}
