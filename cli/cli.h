/* cli.h: the flashlab subcommands.  Each takes the arguments after its name and returns the
 * process exit status: 0 success, 2 bad input (one line on stderr), 1 internal failure. */
#ifndef FL_CLI_H
#define FL_CLI_H

#include <stdio.h>

#include <flashlab/status.h>

int fl_cmd_count(int argc, char **argv); /* flashlab count */
int fl_cmd_run(int argc, char **argv);   /* flashlab run   */
int fl_cmd_example(int argc, char **argv);
int fl_cmd_sweep(int argc, char **argv);  /* flashlab sweep  (cmd_sweep.c)  */
int fl_cmd_bound(int argc, char **argv);  /* flashlab bound  (cmd_bound.c)  */
int fl_cmd_plot(int argc, char **argv);   /* flashlab plot   (cmd_plot.c)   */
int fl_cmd_report(int argc, char **argv); /* flashlab report (cmd_report.c) */
int fl_cmd_optimize(int argc, char **argv); /* flashlab optimize (cmd_optimize.c) */
int fl_cmd_trace(int argc, char **argv);   /* flashlab trace (cmd_trace.c) */
int fl_cmd_l2(int argc, char **argv);      /* flashlab l2 (cmd_l2.c) */
int fl_cmd_l2_launch(int argc, char **argv); /* flashlab l2 --launch (cmd_l2_launch.c) */
int fl_cmd_schedules(int argc, char **argv); /* flashlab schedules (cmd_schedules.c) */
int fl_cmd_cp(int argc, char **argv);      /* flashlab cp (cmd_cp.c) */
int fl_cmd_merge(int argc, char **argv);   /* flashlab merge (cmd_merge.c) */
int fl_cmd_gpus(int argc, char **argv);      /* flashlab gpus (cmd_gpus.c) */

/* The options of a listing command (`flashlab gpus`, `schedules`): --format table|csv (*csv 1
 * for csv, 0 for table) and --help (usage printed on stdout).  Returns -1 when the command is to
 * list, else the exit status: 0 after --help, 2 after one line naming the bad option or value. */
int fl_cli_list_opts(int argc, char **argv, const char *command, const char *usage, int *csv);

/* Prints "flashlab: <last error>" on stderr, in the CLI's words, and returns fl_exit_code(s). */
int fl_cli_error(int s);

/* A raw library message (status.h: quantities as {name}) in the CLI's words: each quantity as its
 * flag ({kv_heads}: --kv-heads).  In a per-thread buffer, valid until the next call. */
const char *fl_cli_render(const char *raw);

/* fl_cli_render of this thread's last error. */
const char *fl_cli_message(void);

/* Writes the provenance line "# command: flashlab COMMAND ARGS..." of a CSV: the arguments
 * separated by spaces, each control character shown as '?', so no argument can end the comment
 * and start a line of data.  --jobs is left out: it says how the run went, not what it computed,
 * and the CSV is the same for every value. */
void fl_cli_command_comment(FILE *out, const char *command, int argc, char **argv);

/* The same, leaving out the options of drop (NULL-terminated): "--name=" an option with a value
 * (--name V or --name=V), "--name" a flag. */
void fl_cli_command_comment_except(FILE *out, const char *command, int argc, char **argv, const char *const *drop);

/* --jobs N (1 <= N <= FL_POOL_MAX_JOBS): the configurations run at once from now on
 * (fl_pool_set_default_jobs; the CLI starts at every core, fl_pool_cores).  FL_EINVAL naming
 * opt otherwise. */
fl_status fl_cli_jobs(const char *opt, const char *value);

/* The help lines of --jobs, for a command's usage text. */
#define FL_JOBS_USAGE                                                                    \
    "  --jobs N        configurations run at once, on N threads; the output is the same\n" \
    "                  for every N (default: every core this process may use)\n"

/* Opens the input file `path` named by `option` ("-": stdin).  A path that is not a regular file
 * (a FIFO, a device, a directory) or cannot be opened is FL_EINVAL naming the option and the path;
 * nothing is read.  fl_cli_close_input closes what it opened (never stdin). */
fl_status fl_cli_open_input(const char *path, const char *option, FILE **in);
void fl_cli_close_input(FILE *in);

#endif
