/* cli_runner.h: run the built `flashlab` CLI (FLASHLAB_CLI) from a test and capture its
 * stdout, stderr and exit status.  Header-only, for tests. */
#ifndef FL_TESTS_CLI_RUNNER_H
#define FL_TESTS_CLI_RUNNER_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
    int status;     /* exit status (128 + signal if killed) */
    char out[65536];
    char err[8192];
} cli_result;

static inline void cli_slurp(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    ssize_t k;
    while ((k = read(fd, buf + n, cap - 1 - n)) > 0) {
        n += (size_t)k;
        if (n == cap - 1) { /* full: drain the rest */
            char sink[4096];
            while (read(fd, sink, sizeof sink) > 0) {}
            break;
        }
    }
    buf[n] = 0;
}

/* Runs FLASHLAB_CLI with argv (NULL-terminated, without the program name); stdin is /dev/null.
 * Returns a heap result the caller frees. */
static inline cli_result *cli_run(const char *const *args)
{
    int po[2], pe[2];
    cli_result *r = calloc(1, sizeof *r);
    if (!r || pipe(po) || pipe(pe)) abort();
    pid_t pid = fork();
    if (pid == 0) {
        const char *argv[64] = {FLASHLAB_CLI};
        int n = 1;
        for (; args[n - 1] && n < 63; n++) argv[n] = args[n - 1];
        argv[n] = NULL;
        dup2(po[1], 1);
        dup2(pe[1], 2);
        close(po[0]);
        close(pe[0]);
        freopen("/dev/null", "r", stdin);
        execv(FLASHLAB_CLI, (char *const *)argv);
        _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    /* stderr is small; read stdout fully first, then stderr (the CLI writes little to both) */
    cli_slurp(po[0], r->out, sizeof r->out);
    cli_slurp(pe[0], r->err, sizeof r->err);
    close(po[0]);
    close(pe[0]);
    int st;
    waitpid(pid, &st, 0);
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return r;
}

/* Number of '\n'-terminated lines in s. */
static inline int cli_lines(const char *s)
{
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

#endif
