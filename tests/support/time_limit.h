/* time_limit.h: FL_T(s), a test's time limit of s seconds scaled by FL_TIME_SCALE (3 in the
 * sanitizer build, which runs about three times slower, 1 otherwise; tests/CMakeLists.txt sets it
 * and includes this header in every test).  The limits catch hangs, not slowness. */
#ifndef FL_TESTS_TIME_LIMIT_H
#define FL_TESTS_TIME_LIMIT_H

#ifndef FL_TIME_SCALE
#define FL_TIME_SCALE 1
#endif
#define FL_T(s) ((s) * FL_TIME_SCALE)

#endif
