/* time_limit.c: fl_time_limit and fl_time_scale (time_limit.h), linked into every test. */
#include "time_limit.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* getloadavg is a BSD function that glibc declares only for _DEFAULT_SOURCE; the tests compile
 * with _POSIX_C_SOURCE, so it is declared here (glibc's signature). */
extern int getloadavg(double loadavg[], int nelem);

double fl_time_scale(void)
{
    const char *s = getenv("FLASHLAB_TIME_SCALE");
    if (s && *s) {
        char *end;
        const double v = strtod(s, &end);
        if (*end || !isfinite(v) || v <= 0 || v > FL_TIME_SCALE_MAX) {
            fprintf(stderr, "FLASHLAB_TIME_SCALE='%s': must be a number in (0, %g] (tests/support/time_limit.h)\n", s,
                    (double)FL_TIME_SCALE_MAX);
            exit(2);
        }
        return v;
    }
    double load[1];
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (getloadavg(load, 1) != 1) return 1.0;
    const double per_cpu = load[0] / (double)(cpus > 0 ? cpus : 1);
    return per_cpu > 1.0 ? per_cpu : 1.0;
}

/* The line the alarm writes, formatted before the alarm is armed: the handler only writes it. */
static char limit_line[192];
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
    const double scale = fl_time_scale(), scaled = seconds * scale;
    unsigned s = scaled >= 4e9 ? 4000000000u : (unsigned)scaled;
    if ((double)s < scaled)
        s++; /* rounded up: a fraction of a second must not become alarm(0), which arms nothing */
    int n = scale == 1.0
                ? snprintf(limit_line, sizeof limit_line,
                           "test time limit of %u s exceeded (tests/support/time_limit.h)\n", s)
                : snprintf(limit_line, sizeof limit_line,
                           "test time limit of %u s exceeded (%g s x time scale %.3g; tests/support/time_limit.h)\n",
                           s, seconds, scale);
    limit_line_len = n > 0 && (size_t)n < sizeof limit_line ? (size_t)n : 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = limit_expired;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    alarm(s);
}
