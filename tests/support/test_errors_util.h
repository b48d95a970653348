/* test_errors_util.h: running the flashlab CLI from a test (fork + exec, stdout and stderr
 * captured) and the assertions the error catalogue (docs/errors.md) makes about a bad input:
 * exit status 2, nothing on stdout, exactly one line "flashlab: <option>: <rule>" on stderr.
 * Header-only (static helpers) for the tests/errors/test_errors_*.c files. */
#ifndef FL_TEST_ERRORS_UTIL_H
#define FL_TEST_ERRORS_UTIL_H

#define _DEFAULT_SOURCE /* putenv, mkstemp */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define CLI_CAP (1 << 20)

typedef struct {
    int status;       /* exit status; 128 + signal when killed by one */
    char *out, *err;  /* captured stdout and stderr (NUL-terminated, truncated at CLI_CAP) */
} cli_result;

/* Reads fd to EOF into a fresh buffer. */
static inline char *slurp_fd(int fd)
{
    char *buf = malloc(CLI_CAP + 1);
    size_t n = 0;
    ssize_t k;
    while (n < CLI_CAP && (k = read(fd, buf + n, CLI_CAP - n)) > 0) n += (size_t)k;
    buf[n] = 0;
    close(fd);
    return buf;
}

/* How cli_run_ex sets up the child: stdout a given file instead of the captured one (e.g.
 * "/dev/full"), or closed; a file-size limit (RLIMIT_FSIZE, bytes; 0: none). */
typedef struct {
    const char *stdout_path;
    int close_stdout;
    long fsize_limit;
} cli_setup;

/* Runs FLASHLAB_CLI with the NULL-terminated arguments argv (argv[0] is ignored) in directory
 * cwd (NULL: the current one), environment env (NULL-terminated "K=V" entries added; NULL for
 * none), set up as su says (NULL: as usual).  stdout and stderr are captured through temporary
 * files (no pipe deadlock). */
static inline cli_result cli_run_ex(const char *cwd, char *const env[], const char *const argv[],
                                    const cli_setup *su)
{
    cli_result r = {0};
    char out_name[] = "/tmp/flerr_outXXXXXX", err_name[] = "/tmp/flerr_errXXXXXX";
    int fo = mkstemp(out_name), fe = mkstemp(err_name);
    cr_assert(fo >= 0 && fe >= 0, "mkstemp");
    pid_t pid = fork();
    cr_assert(pid >= 0, "fork");
    if (pid == 0) {
        dup2(fo, 1);
        dup2(fe, 2);
        close(fo);
        close(fe);
        if (su && su->stdout_path) {
            int f = open(su->stdout_path, O_WRONLY);
            if (f < 0 || dup2(f, 1) < 0) _exit(125);
            close(f);
        }
        if (su && su->close_stdout) close(1);
        if (su && su->fsize_limit > 0) {
            struct rlimit rl = {(rlim_t)su->fsize_limit, (rlim_t)su->fsize_limit};
            signal(SIGXFSZ, SIG_IGN);
            if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(124);
        }
        if (cwd && chdir(cwd) != 0) _exit(126);
        for (int i = 0; env && env[i]; i++) putenv(env[i]);
        execv(FLASHLAB_CLI, (char *const *)argv);
        _exit(127);
    }
    int ws;
    waitpid(pid, &ws, 0);
    r.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
    lseek(fo, 0, SEEK_SET);
    lseek(fe, 0, SEEK_SET);
    r.out = slurp_fd(fo);
    r.err = slurp_fd(fe);
    unlink(out_name);
    unlink(err_name);
    return r;
}

static inline cli_result cli_run_in(const char *cwd, char *const env[], const char *const argv[])
{
    return cli_run_ex(cwd, env, argv, NULL);
}

static inline void cli_free(cli_result *r)
{
    free(r->out);
    free(r->err);
}

/* Asserts the catalogue's contract for a bad input: status 2, empty stdout, one stderr line
 * "flashlab: " + expect (the exact message) when expect is not NULL, else one line that
 * contains `names` (the option it must name). */
static inline void expect_bad_r(const cli_result *r, const char *names, const char *expect,
                         const char *what)
{
    cr_expect_eq(r->status, 2, "%s: exit status %d, want 2 (stderr: %s)", what, r->status, r->err);
    cr_expect_str_empty(r->out, "%s: stdout should be empty, got: %.300s", what, r->out);
    const char *nl = strchr(r->err, '\n');
    cr_expect(nl && nl[1] == 0, "%s: stderr should be exactly one line, got: %s", what, r->err);
    cr_expect(strncmp(r->err, "flashlab: ", 10) == 0, "%s: stderr should start 'flashlab: ': %s",
              what, r->err);
    if (expect) {
        char want[4200];
        snprintf(want, sizeof want, "flashlab: %s\n", expect);
        cr_expect_str_eq(r->err, want, "%s: message", what);
    }
    if (names) cr_expect(strstr(r->err, names) != NULL, "%s: message should name %s: %s", what, names, r->err);
}

/* Runs `flashlab ARGS...` and checks it is rejected with the exact message `expect`. */
#define EXPECT_BAD(expect, ...)                                                   \
    do {                                                                          \
        const char *const argv_[] = {"flashlab", __VA_ARGS__, NULL};              \
        cli_result r_ = cli_run_in(NULL, NULL, argv_);                            \
        expect_bad_r(&r_, NULL, expect, #__VA_ARGS__);                            \
        cli_free(&r_);                                                            \
    } while (0)

/* Same, but only that the message names `opt` (for messages that quote computed numbers). */
#define EXPECT_BAD_NAMES(opt, ...)                                                \
    do {                                                                          \
        const char *const argv_[] = {"flashlab", __VA_ARGS__, NULL};              \
        cli_result r_ = cli_run_in(NULL, NULL, argv_);                            \
        expect_bad_r(&r_, opt, NULL, #__VA_ARGS__);                               \
        cli_free(&r_);                                                            \
    } while (0)

/* Runs `flashlab ARGS...` and checks it succeeds (status 0, something on stdout). */
#define EXPECT_OK(...)                                                            \
    do {                                                                          \
        const char *const argv_[] = {"flashlab", __VA_ARGS__, NULL};              \
        cli_result r_ = cli_run_in(NULL, NULL, argv_);                            \
        cr_expect_eq(r_.status, 0, "%s: status %d, stderr: %s", #__VA_ARGS__,     \
                     r_.status, r_.err);                                          \
        cr_expect_str_not_empty(r_.out, "%s: no output", #__VA_ARGS__);           \
        cli_free(&r_);                                                            \
    } while (0)

#endif
