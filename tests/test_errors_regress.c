/* test_errors_regress.c: one test per finding of the fuzzers (fuzz/RESULTS.md) and of the
 * robustness review, each failing on the code before its fix.  CLI runs go through the built
 * binary (test_errors_util.h); library calls are made directly. */
#include "test_errors_util.h"

#include <stdint.h>

#include "problem.h"
#include "status.h"

/* fuzz_cli finding 1: `flashlab example` with no name printed its usage on stdout as well. */
Test(errors_regress, regress_example_without_name)
{
    EXPECT_BAD("example: needs a name (try: flashlab example list)", "example");
}
