/* time_limit.c: fl_time_limit (time_limit.h), linked into every test. */
#include "time_limit.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The line the alarm writes, formatted before the alarm is armed: the handler only writes it. */
static char limit_line[128];
static size_t limit_line_len;

static void limit_expired(int sig)
{
    ssize_t ignored = write(STDERR_FILENO, limit_line, limit_line_len);
    (void)ignored;
    signal(sig, SIG_DFL);
    raise(sig);
}

void fl_time_limit(double seconds)
{
    unsigned s = (unsigned)seconds;
    if ((double)s < seconds)
        s++; /* rounded up: a fraction of a second must not become alarm(0), which arms nothing */
    int n = snprintf(limit_line, sizeof limit_line,
                     "test time limit of %u s exceeded (tests/support/time_limit.h)\n", s);
    limit_line_len = n > 0 && (size_t)n < sizeof limit_line ? (size_t)n : 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = limit_expired;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    alarm(s);
}
