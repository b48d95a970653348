/* time_limit.h: a test's time limit.  tests/CMakeLists.txt includes this header in every test.
 *
 * FL_T(s): s seconds scaled by FL_TIME_SCALE (3 in the sanitizer build, which runs about three
 * times slower, 1 otherwise).  The limits catch hangs and the old, unbounded code paths that the
 * regression tests name, not slowness: a correct program on a busy machine must pass.
 *
 * fl_time_limit(seconds), called first in a test's body, ends the test's process with SIGALRM
 * after seconds x fl_time_scale() (rounded up to whole seconds), having written one line to
 * stderr that names the test's limit; Criterion then reports the test as crashed, and the run
 * fails.  fl_time_scale() is the factor a loaded machine sets in FLASHLAB_TIME_SCALE (a number
 * in (0, 1000]; anything else ends the test with one line naming the variable), else the load
 * average of the last minute per online CPU, at least 1 (tests/support/time_scale.py, the same
 * for the Python tests).
 *
 * Why not Criterion's own `.timeout`: Criterion 2.4.1 (Debian's libcriterion3) keeps each
 * timeout as a 48-byte request (the calloc in bxfi_push_timeout, BoxFort's timeout-posix.c, at
 * libcriterion.so.3+0x1a332) that its watchdog thread frees, and LeakSanitizer has reported that
 * request as leaked: in tests over 60 s (fuzz/RESULTS.md) and, in a CI run, in
 * test_errors_regress after 2.5 s.  The race is inside Criterion.  Criterion runs each test in
 * its own forked process, so an alarm in that process limits exactly one test, and with no test
 * asking Criterion for a timeout that request is never made. */
#ifndef FL_TESTS_TIME_LIMIT_H
#define FL_TESTS_TIME_LIMIT_H

#ifndef FL_TIME_SCALE
#define FL_TIME_SCALE 1
#endif
#define FL_T(s) ((s) * FL_TIME_SCALE)

/* Contract: seconds > 0 and at most UINT_MAX.  Arms one alarm for this process (a later call
 * replaces it); when it rings, writes "test time limit of N s exceeded" to stderr and ends the
 * process by SIGALRM.  Children the test forks do not inherit the alarm.  (time_limit.c; this
 * header is included first in every test, so it includes no system header that would fix the
 * test's feature macros before the test sets them.) */
void fl_time_limit(double seconds);

#define FL_TIME_SCALE_MAX 1000

/* The factor every time limit is multiplied by: FLASHLAB_TIME_SCALE, else the load per CPU, at
 * least 1 (see above). */
double fl_time_scale(void);

#endif
