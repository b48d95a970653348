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

/* fuzz_cli finding 2: empty items of --algo were skipped by strtok (",flash1" ran flash1), and a
 * list longer than 255 characters was cut off silently. */
Test(errors_regress, regress_algo_empty_item)
{
    EXPECT_BAD("--algo: 'standard,' has an empty item (a comma list such as flash1,flash2)",
               "count", "--algo=standard,");
    EXPECT_BAD("--algo: ',flash1' has an empty item (a comma list such as flash1,flash2)", "count", "--algo", ",flash1");
    EXPECT_BAD("--algo: 'flash1,,flash2' has an empty item (a comma list such as flash1,flash2)",
               "count", "--algo", "flash1,,flash2");
    EXPECT_BAD("--algo: '' has an empty item (a comma list such as flash1,flash2)", "count", "--algo=");
    char list[400];
    memset(list, ',', 250);
    strcpy(list + 250, "flash1XYZ"); /* cut at 255 this used to read ",,,...,flash1" */
    EXPECT_BAD_NAMES("--algo", "count", "--algo", list);
    memset(list, 'x', 300);
    list[300] = 0;
    EXPECT_BAD_NAMES("--algo: unknown schedule 'xxxx", "count", "--algo", list);
}

/* fuzz_cli finding 3: a flag given a value ("--help=x", "--explain=yes") was accepted. */
Test(errors_regress, regress_flag_with_value)
{
    EXPECT_BAD("--explain: is a flag and takes no value (got '=yes')", "count", "--explain=yes");
    EXPECT_BAD("--help: is a flag and takes no value (got '=1')", "run", "--help=1");
}
