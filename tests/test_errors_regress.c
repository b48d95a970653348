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

/* The library API side of the overflow findings: fl_cdiv and the block rules on sizes that the
 * CLI cannot give (it stops at 2^61 - 1) but a program calling libflashlab can.  Under the
 * sanitizer build (UBSan) the old code failed here with a signed overflow. */
Test(errors_regress, regress_cdiv_no_overflow)
{
    cr_expect_eq(fl_cdiv(INT64_MAX, INT64_MAX), 1);
    cr_expect_eq(fl_cdiv(INT64_MAX, 2), (INT64_MAX / 2) + 1);
    cr_expect_eq(fl_cdiv(INT64_MAX - 1, INT64_MAX), 1);
    cr_expect_eq(fl_cdiv(0, 7), 0);
    cr_expect_eq(fl_cdiv(14, 7), 2);
    cr_expect_eq(fl_cdiv(15, 7), 3);
}

Test(errors_regress, regress_block_rules_at_int64_max)
{
    fl_problem p = fl_problem_default();
    fl_blocks b;
    p.N = 1;
    p.d = 1;
    p.M = INT64_MAX;
    p.algo = FL_ALGO_STANDARD; /* cube side t: 3(t+1)^2 <= M was computed in int64 */
    cr_expect_eq(fl_blocks_choose(&p, &b), FL_OK, "%s", fl_last_error());
    cr_expect(b.footprint >= 3 && b.footprint <= p.M);
    p.algo = FL_ALGO_FLASH1; /* the paper's 4d overflowed */
    p.d = INT64_MAX / 2;
    cr_expect_eq(fl_blocks_choose(&p, &b), FL_ECAPACITY);
    cr_expect(strstr(fl_last_error(), "--M: flash1 needs more than 9223372036854775807") != NULL, "%s",
              fl_last_error());
}

/* fuzz_cli finding 4: flash1's paper block ceil(M/4d) computed M + 4d - 1, which overflowed
 * (UBSan) for d near 2^61; and the footprint that overflowed was printed as "-1 elements". */
Test(errors_regress, regress_paper_block_overflow)
{
    EXPECT_BAD("--M: flash1 needs more than 9223372036854775807 elements of SRAM for its smallest tiles "
               "(Br = Bc = 1, d = 2305843009213693951); M = 2305843009213693951 is too small",
               "count", "--algo", "flash1", "--N", "409651", "--d", "2305843009213693951",
               "--M", "2305843009213693951");
    EXPECT_BAD("--Br/--Bc: flash2 blocks Br = 2305843009213693951, Bc = 2305843009213693951 need more than "
               "9223372036854775807 elements of SRAM (docs/model.md eq. F2), more than M = 2305843009213693951",
               "count", "--algo", "flash2", "--Br", "2305843009213693951", "--Bc", "2305843009213693951",
               "--M", "2305843009213693951");
}

/* Found by hand while reading the fuzzers' coverage: the element counts fit, the bytes
 * (elements x 2) did not, and hbm_bytes wrapped (signed overflow, UBSan). */
Test(errors_regress, regress_bytes_overflow)
{
    EXPECT_BAD("--N/--d: the bytes flash2 moves at N = 1048576, d = 274877906944 would overflow 64-bit arithmetic",
               "count", "--algo", "flash2", "--N", "1048576", "--d", "274877906944", "--M",
               "2305843009213693951", "--Br", "131072", "--Bc", "131072", "--format", "csv");
}
