/* cmd_merge.c: `flashlab merge`: the CSVs of the shards of one run (`sweep --shard I/N`,
 * `optimize --shard I/N`) joined into the run's CSV, byte for byte (merge.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include <flashlab/merge.h>
#include <flashlab/output.h>
#include "cli.h"

static const char *usage =
    "usage: flashlab merge [--output FILE] SHARD.csv...\n"
    "Joins the CSVs of the shards of one run (flashlab sweep --shard I/N, flashlab optimize\n"
    "--shard I/N) into the CSV the run writes without --shard: byte for byte the same as the\n"
    "command on their '# command:' line writes to stdout.  Refuses files that are not shards,\n"
    "shards of different commands, runs or versions, a missing or repeated shard, and a shard cut\n"
    "short; then nothing is written.\n\n"
    "  --output FILE   write to FILE (atomically; default stdout, also only when complete)\n"
    "  --help          this text\n";

int fl_cmd_merge(int argc, char **argv)
{
    const char *output = NULL;
    const char **names = calloc((size_t)argc + 1, sizeof *names);
    FILE **in = calloc((size_t)argc + 1, sizeof *in);
    int n = 0, opened = 0;
    fl_status e = names && in ? FL_OK : fl_fail(FL_ENOMEM, "merge: out of memory");
    for (int k = 0; k < argc && !e; k++) {
        const char *a = argv[k];
        if (!strcmp(a, "--help") || !strncmp(a, "--help=", 7)) {
            if ((e = fl_args_flag("--help", a[6] ? a + 7 : NULL))) break;
            fputs(usage, stdout);
            free(names), free(in);
            return 0;
        }
        if (!strcmp(a, "--output")) {
            if (k + 1 == argc) e = fl_fail(FL_EINVAL, "--output: needs a value");
            else output = argv[++k];
        } else if (!strncmp(a, "--output=", 9)) output = a + 9;
        else if (!strncmp(a, "--", 2) && a[2]) e = fl_fail(FL_EINVAL, "%s: unknown option for merge (see flashlab merge --help)", fl_shown(a));
        else if (n >= FL_MERGE_MAX_SHARDS) e = fl_fail(FL_EINVAL, "merge: at most %d shards", FL_MERGE_MAX_SHARDS);
        else names[n++] = a;
    }
    if (!e && !n) e = fl_fail(FL_EINVAL, "merge: needs the CSV files of the shards (see flashlab merge --help)");
    for (; opened < n && !e; opened++) e = fl_cli_open_input(names[opened], "merge", &in[opened]);
    fl_output *o = NULL;
    FILE *out = NULL;
    if (!e && output && !(e = fl_output_open(output, "--output", &o))) out = fl_output_file(o);
    if (!e && !output && !(out = tmpfile())) e = fl_fail(FL_EIO, "merge: cannot make a temporary file for stdout");
    if (!e) e = fl_merge_shards(in, names, n, out);
    if (output) {
        if (!e) e = fl_output_commit(o);
        else fl_output_abort(o);
    } else if (out) { /* stdout: only a complete merge is written */
        char buf[65536];
        size_t got;
        if (!e && fflush(out)) e = fl_fail(FL_EIO, "merge: writing its temporary file failed");
        if (!e) rewind(out);
        while (!e && (got = fread(buf, 1, sizeof buf, out)) > 0) e = fl_output_stdout_write(buf, got);
        fclose(out);
    }
    for (int k = 0; k < opened; k++)
        if (in[k]) fl_cli_close_input(in[k]);
    free(names), free(in);
    return e ? fl_cli_error(e) : 0;
}
