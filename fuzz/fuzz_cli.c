/* fuzz_cli.c: the whole `flashlab` command line (dispatch, the argument walker, the strict
 * value parsers, --algo lists, count's option set, example names) on arbitrary arguments.
 *
 * Input: arguments separated by newlines; "flashlab" is prepended.  `run` is driven as `count`
 * (the same parser; compute runs are fuzzed with small sizes in fuzz_problem.c), and
 * "--max-events 100000" is appended so an accepted command stays fast.
 *
 * Oracles (docs/errors.md):
 *  - exit status is 0 or 2, or 1 only from `example` (a failed check);
 *  - on status 2: stdout is empty and stderr is exactly one line "flashlab: ..." (except for a
 *    bare `flashlab`, which prints its usage);
 *  - an independent validator of count's grammar (below): whatever it rejects must give 2.
 */
#define _POSIX_C_SOURCE 200809L /* fmemopen */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fuzz_util.h"

int flashlab_main(int argc, char **argv);

static char out_buf[1 << 22], err_buf[1 << 12];

/* count's grammar, validated independently of cli/: 1 = every option well formed,
 * 0 = some option is malformed (so the CLI must exit 2), 2 = --help reached first,
 * 3 = well formed as far as modelled (some values not modelled here). */
static int count_grammar_ok(int argc, char **argv)
{
    static const char *algos[] = {"standard", "flash1", "flash2", "flash2-gqa", "decode", "blocksparse",
                                  "memeff", "softmax-safe", "softmax-online"};
    /* options whose values this validator does not model (fuzz_list and fuzz_variants check
     * their parsers and rules): any value is "maybe" */
    static const char *unmodelled[] = {"--Nk", "--pass", "--causal", "--window", "--batch", "--heads",
                                       "--kv-heads", "--cu-seqlens-q", "--cu-seqlens-k", "--sram",
                                       "--dtype", "--page-size", "--pool-pages", "--page-seed",
                                       "--block-table", "--splits", "--pad", "--density", "--mask-seed"};
    int maybe = 0;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i], *eq, *v;
        char name[64];
        if (strncmp(arg, "--", 2) != 0 || !arg[2]) return 0;
        eq = strchr(arg, '=');
        size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
        if (n >= sizeof name) return 0;
        memcpy(name, arg, n);
        name[n] = 0;
        if (!strcmp(name, "--help")) return eq ? 0 : 2;
        if (!strcmp(name, "--explain")) {
            if (eq) return 0; /* a flag takes no value */
            continue;
        }
        if (eq) v = eq + 1;
        else if (i + 1 < argc) v = argv[++i];
        else return 0;
        const __int128 big = INT64_MAX / 4;
        int known = 0;
        for (size_t u = 0; u < sizeof unmodelled / sizeof *unmodelled; u++) known |= !strcmp(name, unmodelled[u]);
        if (known) {
            maybe = 1;
            continue;
        }
        if (!strcmp(name, "--N") || !strcmp(name, "--d") || !strcmp(name, "--M") ||
            !strcmp(name, "--Br") || !strcmp(name, "--Bc")) {
            if (!fz_int_ok(v, 1, big, NULL)) return 0;
        } else if (!strcmp(name, "--max-events")) {
            if (!fz_int_ok(v, 0, INT64_MAX, NULL)) return 0;
        } else if (!strcmp(name, "--seed")) {
            if (!*v || strspn(v, "0123456789") != strlen(v) || !fz_int_ok(v, 0, UINT64_MAX, NULL))
                return 0;
        } else if (!strcmp(name, "--format")) {
            if (strcmp(v, "table") && strcmp(v, "csv") && strcmp(v, "json")) return 0;
        } else if (!strcmp(name, "--algo")) {
            if (strcmp(v, "all")) {
                int seen[9] = {0};
                const char *p = v;
                for (;;) { /* every item a known name, no empty item, no repeat */
                    size_t len = strcspn(p, ",");
                    int k = -1;
                    for (int a = 0; a < 9; a++)
                        if (strlen(algos[a]) == len && !strncmp(p, algos[a], len)) k = a;
                    if (k < 0 || seen[k]++) return 0;
                    if (!p[len]) break;
                    p += len + 1;
                }
            }
        } else {
            return 0;
        }
    }
    return maybe ? 3 : 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char buf[FZ_MAX_INPUT + 1];
    char *argv[FZ_MAX_ARGS + 4];
    if (size > FZ_MAX_INPUT) return 0;
    int n = size ? fz_split(data, size, buf, argv + 1) : 0;
    argv[0] = "flashlab";
    int argc = n + 1;
    int is_count = n >= 1 && (!strcmp(argv[1], "count") || !strcmp(argv[1], "run"));
    const int is_trace = n >= 1 && !strcmp(argv[1], "trace");
    /* sweep, bound, plot and report run long sweeps or write files: their parsers are fuzzed
     * through fuzz_list, their errors listed in docs/errors.md */
    if (n >= 1 && (!strcmp(argv[1], "sweep") || !strcmp(argv[1], "bound") || !strcmp(argv[1], "plot") ||
                   !strcmp(argv[1], "report")))
        return 0;
    for (int i = 1; i < argc; i++) /* trace --out writes files */
        if (!strncmp(argv[i], "--out", 5)) return 0;
    if (is_count || is_trace) {
        if (is_count) argv[1] = "count";
        argv[argc++] = "--max-events";
        argv[argc++] = is_count ? "100000" : "20000";
    }
    argv[argc] = NULL;

    FILE *old_out = stdout, *old_err = stderr;
    out_buf[0] = err_buf[0] = 0;
    stdout = fmemopen(out_buf, sizeof out_buf - 1, "w");
    stderr = fmemopen(err_buf, sizeof err_buf - 1, "w");
    int rc = flashlab_main(argc, argv);
    fclose(stdout);
    fclose(stderr);
    stdout = old_out;
    stderr = old_err;

    const int is_example = n >= 1 && !strcmp(argv[1], "example");
    FZ_CHECK(rc == 0 || rc == 2 || (rc == 1 && is_example), "exit status %d", rc);
    if (rc == 2 && argc > 1) {
        FZ_CHECK(out_buf[0] == 0, "status 2 but stdout has: %.200s", out_buf);
        FZ_CHECK(!strncmp(err_buf, "flashlab: ", 10), "stderr: %.200s", err_buf);
        const char *nl = strchr(err_buf, '\n');
        FZ_CHECK(nl && nl[1] == 0, "stderr is not exactly one line: %.300s", err_buf);
    }
    if (is_count) {
        int g = count_grammar_ok(argc - 2, argv + 2);
        FZ_CHECK(g != 0 || rc == 2, "malformed count options accepted (status %d)", rc);
        FZ_CHECK(g != 2 || rc == 0, "--help gave status %d", rc);
    }
    return 0;
}
