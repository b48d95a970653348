/* test_errors_catalogue.c: docs/errors.md is the catalogue of bad inputs, and this test makes it
 * true.  Every table row of the form
 *
 *   | `[VAR=value ...] flashlab ARGS` | rule | `message` |
 *
 * is run through the built CLI (arguments split on single spaces; "" is an empty argument) in a
 * scratch directory, and must exit with status 2, print nothing on stdout, and print exactly
 * "flashlab: message" as its one stderr line.  A row whose command reads
 * `SETUP; [VAR=value ...] flashlab ARGS` first runs SETUP with /bin/sh in a fresh directory of its
 * own (mknod, mkfifo, ln -s, mkdir), then the command in that directory; a SETUP that fails
 * (mknod when not root) skips the row.  In a message, {schedules} stands for the registry's
 * choices as fl_algo_choices() lists them, so a schedule added to the registry changes no row.
 * A catalogue that lists fewer than 100 rows fails too, so the parser cannot silently stop
 * matching. */
#include "test_errors_util.h"

#include <flashlab/schedule.h>

#define MAX_ROW_ARGS 64

/* The text between the backticks that open at *p (advanced past the closing one), or NULL. */
static char *code_span(char **p)
{
    char *a = strchr(*p, '`');
    if (!a) return NULL;
    char *b = strchr(a + 1, '`');
    if (!b) return NULL;
    *b = 0;
    *p = b + 1;
    return a + 1;
}

/* Runs one catalogue row; returns 1 when it was a row. */
static int check_row(char *line, int lineno)
{
    if (strncmp(line, "| `", 3) != 0) return 0;
    char *p = line, *cmd = code_span(&p), *msg = NULL, *m;
    while ((m = code_span(&p))) msg = m; /* the last code span is the message */
    cr_assert(cmd && msg, "docs/errors.md:%d: a row needs `command` and `message`", lineno);
    char dir[64] = "/tmp";
    char *fl = NULL;
    for (char *q = strstr(cmd, "; "); q; q = strstr(q + 1, "; ")) fl = q; /* the last "; " */
    if (fl) { /* SETUP; [VAR=value] flashlab ARGS: the setup in a directory of the row's own */
        *fl = 0;
        snprintf(dir, sizeof dir, "/tmp/fl_catXXXXXX");
        cr_assert(mkdtemp(dir), "mkdtemp");
        char sh[4096];
        snprintf(sh, sizeof sh, "cd '%s' && { %s; } >/dev/null 2>&1", dir, cmd);
        if (system(sh) != 0) return 1; /* e.g. mknod without root: the row cannot be set up */
        cmd = fl + 2;
    }

    static char *env[MAX_ROW_ARGS];
    const char *argv[MAX_ROW_ARGS];
    int ne = 0, na = 0;
    for (char *t = strtok(cmd, " "); t; t = strtok(NULL, " ")) {
        cr_assert(na < MAX_ROW_ARGS - 1 && ne < MAX_ROW_ARGS - 1);
        if (na == 0 && strchr(t, '=') && strcmp(t, "flashlab") != 0) env[ne++] = t;
        else argv[na++] = strcmp(t, "\"\"") == 0 ? "" : t;
    }
    env[ne] = NULL;
    argv[na] = NULL;
    cr_assert(na >= 1 && strcmp(argv[0], "flashlab") == 0, "docs/errors.md:%d: not a flashlab command", lineno);

    char where[64], expanded[4096];
    const char *ph = strstr(msg, "{schedules}");
    if (ph) {
        snprintf(expanded, sizeof expanded, "%.*s%s%s", (int)(ph - msg), msg, fl_algo_choices(), ph + 11);
        msg = expanded;
    }
    snprintf(where, sizeof where, "docs/errors.md:%d", lineno);
    cli_result r = cli_run_in(dir, env, argv);
    expect_bad_r(&r, NULL, msg, where);
    cli_free(&r);
    return 1;
}

Test(errors_catalogue, every_row_of_docs_errors_md)
{
    fl_time_limit(FL_T(120.0));
    FILE *f = fopen(FLASHLAB_SOURCE_DIR "/docs/errors.md", "r");
    cr_assert(f, "cannot open docs/errors.md");
    char line[4096];
    int lineno = 0, rows = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\n")] = 0;
        rows += check_row(line, lineno);
    }
    fclose(f);
    cr_expect_geq(rows, 100, "only %d catalogue rows found in docs/errors.md", rows);
}
