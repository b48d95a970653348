/* test_time_limit.c: fl_time_limit (support/time_limit.h), the limit every long test sets, must
 * end a test that runs past it, say so in one line, and fail the Criterion run; and must leave a
 * test within its limit alone. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli_runner.h"

typedef struct {
    int status; /* WIFEXITED: the exit status; killed: 128 + the signal */
    char err[8192];
    double seconds;
} child_result;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Removes the sanitizer runtime's own notes ("==PID==..." lines) from captured stderr: a child
 * forked from Criterion's threaded runner and ended by exit() may get LeakSanitizer's "Running
 * thread N was not suspended" note, which is not the library's output. A real leak report still
 * fails the test through the exit status the sanitizer sets. */
static void drop_sanitizer_notes(char *err)
{
    char *w = err;
    for (const char *line = err; *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) + 1 : strlen(line);
        const char *p = line;
        int note = 0;
        if (p[0] == '=' && p[1] == '=') {
            p += 2;
            while (*p >= '0' && *p <= '9') p++;
            note = p > line + 2 && p[0] == '=' && p[1] == '=';
        }
        if (!note) {
            memmove(w, line, n);
            w += n;
        }
        line += n;
    }
    *w = '\0';
}

/* Runs body(arg) in a forked child with stderr captured; the child exits 0 when body returns. */
static child_result run_child(void (*body)(double), double arg)
{
    child_result r;
    memset(&r, 0, sizeof r);
    int pe[2];
    if (pipe(pe)) abort();
    double t0 = now();
    pid_t pid = fork();
    if (pid < 0) abort();
    if (pid == 0) {
        dup2(pe[1], 2);
        close(pe[0]);
        if (!getenv("FL_KEEP_SCALE")) setenv("FLASHLAB_TIME_SCALE", "1", 1); /* the limits below, unscaled */
        body(arg);
        _exit(0);
    }
    close(pe[1]);
    cli_slurp(pe[0], r.err, sizeof r.err);
    close(pe[0]);
    drop_sanitizer_notes(r.err);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    r.seconds = now() - t0;
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return r;
}

static void sleep_for(double s)
{
    struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&t, &t) < 0 && errno == EINTR) {}
}

/* a test that would sleep 30 s under a 1 s limit */
static void past_the_limit(double limit)
{
    fl_time_limit(limit);
    sleep_for(30.0);
}

/* a limit of 1 s replaced by one of 4 s, then 2 s of work */
static void replaced_limit(double unused)
{
    (void)unused;
    fl_time_limit(1.0);
    fl_time_limit(4.0);
    sleep_for(2.0);
}

Test(time_limit, a_test_past_its_limit_ends_by_the_alarm_with_one_line)
{
    child_result r = run_child(past_the_limit, 1.0);
    cr_expect_eq(r.status, 128 + SIGALRM, "status %d, stderr: %s", r.status, r.err);
    cr_expect_str_eq(r.err, "test time limit of 1 s exceeded (tests/support/time_limit.h)\n");
    cr_expect(r.seconds >= 0.9 && r.seconds < 20.0, "ended after %.2f s", r.seconds);
}

/* a fraction of a second rounds up to 1 s: truncated to 0, alarm(0) would arm nothing */
Test(time_limit, a_fraction_of_a_second_still_arms_the_alarm)
{
    child_result r = run_child(past_the_limit, 0.2);
    cr_expect_eq(r.status, 128 + SIGALRM, "status %d, stderr: %s", r.status, r.err);
    cr_expect_str_eq(r.err, "test time limit of 1 s exceeded (tests/support/time_limit.h)\n");
}

Test(time_limit, a_later_limit_replaces_the_first_and_a_test_within_it_is_untouched)
{
    child_result r = run_child(replaced_limit, 0.0);
    cr_expect_eq(r.status, 0, "status %d, stderr: %s", r.status, r.err);
    cr_expect_str_empty(r.err);
}

/* The planted test: runs past its limit only when the test below asks for it. */
Test(time_limit_planted, sleeps_past_its_limit)
{
    if (!getenv("FL_TIME_LIMIT_PLANT"))
        return;
    fl_time_limit(1.0);
    sleep_for(30.0);
}

/* This executable run again on the planted test alone, as ctest runs it: the run must fail. */
static void run_the_planted_test(double unused)
{
    (void)unused;
    setenv("FL_TIME_LIMIT_PLANT", "1", 1);
    unsetenv("BXFI_MAP"); /* set in Criterion's workers: without this the run would be one */
    execl("/proc/self/exe", "test_time_limit", "--filter", "time_limit_planted/*", "--jobs", "1",
          (char *)NULL);
    _exit(127);
}

Test(time_limit, criterion_fails_a_run_whose_test_passes_its_limit)
{
    child_result r = run_child(run_the_planted_test, 0.0);
    cr_expect(r.status != 0 && r.status != 127, "status %d, stderr: %s", r.status, r.err);
    cr_expect(strstr(r.err, "test time limit of 1 s exceeded") != NULL, "stderr: %s", r.err);
    cr_expect(strstr(r.err, "Crashing: 1") != NULL, "stderr: %s", r.err);
    cr_expect(r.seconds < 20.0, "the run took %.2f s", r.seconds);
}

/* A loaded machine's factor: FLASHLAB_TIME_SCALE=3 makes a limit of 1 s one of 3 s, and the line
 * says so; a test of 2 s then passes (the planted fault: at scale 1 the same test is ended). */
static void scaled_limit(double scale)
{
    char v[32];
    snprintf(v, sizeof v, "%g", scale);
    setenv("FLASHLAB_TIME_SCALE", v, 1);
    fl_time_limit(1.0);
    sleep_for(scale > 2 ? 30.0 : 2.0);
}

static void scaled_within(double scale)
{
    char v[32];
    snprintf(v, sizeof v, "%g", scale);
    setenv("FLASHLAB_TIME_SCALE", v, 1);
    fl_time_limit(1.0);
    sleep_for(1.5);
}

Test(time_limit, the_time_scale_multiplies_every_limit)
{
    child_result r = run_child(scaled_limit, 3.0);
    cr_expect_eq(r.status, 128 + SIGALRM, "status %d, stderr: %s", r.status, r.err);
    cr_expect_str_eq(r.err, "test time limit of 3 s exceeded (1 s x time scale 3; tests/support/time_limit.h)\n");
    cr_expect(r.seconds >= 2.9, "ended after %.2f s, before the scaled limit", r.seconds);
    r = run_child(scaled_within, 3.0);
    cr_expect_eq(r.status, 0, "a test of 1.5 s under 1 s x 3: status %d, stderr: %s", r.status, r.err);
    r = run_child(scaled_within, 1.0); /* planted: the same test unscaled must be ended */
    cr_expect_eq(r.status, 128 + SIGALRM, "a test of 1.5 s under 1 s x 1: status %d", r.status);
}

static void bad_scale(double unused)
{
    (void)unused;
    setenv("FLASHLAB_TIME_SCALE", "fast", 1);
    fl_time_limit(1.0);
}

static void unset_scale(double unused)
{
    (void)unused;
    unsetenv("FLASHLAB_TIME_SCALE");
    _exit(fl_time_scale() >= 1.0 ? 0 : 3);
}

Test(time_limit, a_bad_time_scale_is_an_error_and_none_follows_the_load)
{
    child_result r = run_child(bad_scale, 0.0);
    cr_expect_eq(r.status, 2, "status %d", r.status);
    cr_expect_str_eq(r.err, "FLASHLAB_TIME_SCALE='fast': must be a number in (0, 1000] (tests/support/time_limit.h)\n");
    r = run_child(unset_scale, 0.0);
    cr_expect_eq(r.status, 0, "the load's factor is below 1: status %d", r.status);
}
