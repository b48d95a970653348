/* fuzz_optimize_l2.c: `flashlab optimize` and `flashlab l2` on arbitrary arguments, through the
 * whole command line (cli/main.c), as fuzz_cli drives count and trace.
 *
 * Input: arguments separated by newlines; "flashlab" is prepended, and the first argument must be
 * optimize or l2 (others are fuzz_cli's).  An input naming an output file (--output, --out) is
 * skipped: the output module is fuzzed through its own tests.  Limits appended so one input
 * stays fast (the last value of an option wins): l2 gets --max-work 200000 --max-memory 256, so
 * every accepted l2 also shows that its work limit holds (libFuzzer's -timeout catches a run
 * that does not stop); optimize gets --max-events 20000.
 *
 * Oracles (docs/errors.md): exit status 0 or 2 (1 would be a gpu_order bug or an internal
 * failure); on 2, nothing on stdout and exactly one line "flashlab: ..." on stderr; on 0, l2
 * prints its "total" line and optimize its header.
 */
#define _POSIX_C_SOURCE 200809L /* fmemopen */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fuzz_util.h"

int flashlab_main(int argc, char **argv);

static char out_buf[1 << 22], err_buf[1 << 12];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char buf[FZ_MAX_INPUT + 1];
    char *argv[FZ_MAX_ARGS + 8];
    if (size > FZ_MAX_INPUT || size == 0) return 0;
    int n = fz_split(data, size, buf, argv + 1);
    argv[0] = "flashlab";
    const int is_l2 = !strcmp(argv[1], "l2"), is_opt = !strcmp(argv[1], "optimize");
    if (!is_l2 && !is_opt) return 0;
    for (int i = 2; i <= n; i++)
        if (!strncmp(argv[i], "--out", 5)) return 0;
    int argc = n + 1;
    if (is_l2) {
        argv[argc++] = "--max-work";
        argv[argc++] = "200000";
        argv[argc++] = "--max-memory";
        argv[argc++] = "256";
    } else {
        argv[argc++] = "--max-events";
        argv[argc++] = "20000";
    }
    argv[argc] = NULL;

    FILE *old_out = stdout, *old_err = stderr;
    out_buf[0] = err_buf[0] = 0;
    stdout = fmemopen(out_buf, sizeof out_buf - 1, "w");
    stderr = fmemopen(err_buf, sizeof err_buf - 1, "w");
    const int rc = flashlab_main(argc, argv);
    fclose(stdout);
    fclose(stderr);
    stdout = old_out;
    stderr = old_err;

    FZ_CHECK(rc == 0 || rc == 2, "exit status %d: %.300s", rc, err_buf);
    if (rc == 2) {
        FZ_CHECK(out_buf[0] == 0, "status 2 but stdout has: %.200s", out_buf);
        FZ_CHECK(!strncmp(err_buf, "flashlab: ", 10), "stderr: %.200s", err_buf);
        const char *nl = strchr(err_buf, '\n');
        FZ_CHECK(nl && nl[1] == 0, "stderr is not exactly one line: %.300s", err_buf);
    } else if (!strstr(argv[2] ? argv[2] : "", "--help") && !strstr(out_buf, "usage:")) {
        FZ_CHECK(is_l2 ? strstr(out_buf, "total") != NULL : strstr(out_buf, "optimize at N") || strstr(out_buf, "N,d,M,"),
                 "status 0 without the result: %.300s", out_buf);
    }
    return 0;
}
