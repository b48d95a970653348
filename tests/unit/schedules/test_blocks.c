/* test_blocks.c: the block-size rules of docs/model.md §3 and the footprints (F0-F2). */
#include <criterion/criterion.h>
#include <string.h>

#include "schedule.h"

static fl_problem prob(fl_algo a, int64_t N, int64_t d, int64_t M)
{
    fl_problem p = fl_problem_default();
    p.algo = a;
    p.N = N;
    p.d = d;
    p.M = M;
    return p;
}

Test(blocks, flash1_keeps_the_paper_sizes_when_they_fit)
{
    fl_problem p = prob(FL_ALGO_FLASH1, 4096, 64, 65536);
    fl_blocks b;
    cr_assert_eq(fl_blocks_choose(&p, &b), FL_OK);
    cr_assert_eq(b.paper_Bc, 256);
    cr_assert_eq(b.paper_Br, 64);
    cr_assert_eq(b.paper_footprint, 2 * 256 * 64 + 2 * 64 * 64 + 64 * 256 + 6 * 64);
    cr_assert_eq(b.Bc, 256);
    cr_assert_eq(b.Br, 64);
}

Test(blocks, flash1_shrinks_when_the_paper_sizes_overflow_M)
{
    /* M = 8192, d = 128: paper Bc = Br = 16 need 2*16*128*2 + 256 + 96 = 8544 > 8192 */
    fl_problem p = prob(FL_ALGO_FLASH1, 4096, 128, 8192);
    fl_blocks b;
    cr_assert_eq(fl_blocks_choose(&p, &b), FL_OK);
    cr_assert_eq(b.paper_Bc, 16);
    cr_assert_eq(b.paper_footprint, 8544);
    cr_assert_gt(b.paper_footprint, p.M);
    cr_assert_eq(b.Br, b.Bc < 128 ? b.Bc : 128, "shape Br = min(Bc, d) kept");
    cr_assert_leq(fl_footprint(FL_ALGO_FLASH1, 128, b.Br, b.Bc, 128), p.M);
    cr_assert_gt(fl_footprint(FL_ALGO_FLASH1, 128, b.Bc + 1 < 128 ? b.Bc + 1 : 128, b.Bc + 1, 128), p.M,
                 "largest that fits");
    cr_assert_eq(b.Bc, 15);
}

Test(blocks, flash2_square_blocks_are_the_largest_that_fit)
{
    fl_problem p = prob(FL_ALGO_FLASH2, 100000, 64, 98304);
    fl_blocks b;
    cr_assert_eq(fl_blocks_choose(&p, &b), FL_OK);
    cr_assert_eq(b.Br, b.Bc);
    cr_assert_leq(fl_footprint(FL_ALGO_FLASH2, 64, b.Br, b.Bc, 64), p.M);
    cr_assert_gt(fl_footprint(FL_ALGO_FLASH2, 64, b.Br + 1, b.Bc + 1, 64), p.M);
}

Test(blocks, blocks_never_exceed_N)
{
    for (int a = 0; a < fl_schedule_count(); a++) {
        fl_problem p = prob((fl_algo)a, 7, 16, 1 << 20);
        fl_blocks b;
        cr_assert_eq(fl_blocks_choose(&p, &b), FL_OK);
        cr_assert_leq(b.Br, 7);
        cr_assert_leq(b.Bc, 7);
    }
}

Test(blocks, standard_uses_panels_above_3d2_and_cubes_below)
{
    fl_blocks b;
    fl_problem p = prob(FL_ALGO_STANDARD, 4096, 64, 3 * 64 * 64 + 500);
    cr_assert_eq(fl_blocks_choose(&p, &b), FL_OK);
    cr_assert_eq(b.Bd, 64);
    cr_assert_geq(b.Br, 64);
    p.M = 2 * 64 * 64; /* cube side 52 beats the panel's 46 */
    cr_assert_eq(fl_blocks_choose(&p, &b), FL_OK);
    cr_assert_lt(b.Bd, 64);
    cr_assert_eq(b.Br, b.Bd);
}

/* M one below what schedule a needs at Br = Bc = 1 is a capacity error naming M; M = need fits. */
static void expect_smallest_tile(fl_algo a, int64_t need)
{
    fl_blocks b;
    fl_problem p = prob(a, 100, 64, need - 1);
    cr_assert_eq(fl_blocks_choose(&p, &b), FL_ECAPACITY, "%s", fl_algo_name(a));
    cr_assert(strstr(fl_last_error_raw(), "{M}"), "%s", fl_last_error_raw());
    p.M = need;
    cr_assert_eq(fl_blocks_choose(&p, &b), FL_OK, "%s: %s", fl_algo_name(a), fl_last_error());
}

Test(blocks, M_below_the_smallest_tile_is_a_capacity_error_naming_M)
{
    expect_smallest_tile(FL_ALGO_STANDARD, 3);          /* F0 at Br = Bc = 1 */
    expect_smallest_tile(FL_ALGO_FLASH1, 4 * 64 + 7);   /* F1 */
    expect_smallest_tile(FL_ALGO_FLASH2, 4 * 64 + 3);   /* F2 */
}

Test(blocks, overrides_that_do_not_fit_name_Br_Bc_and_the_footprint)
{
    fl_problem p = prob(FL_ALGO_FLASH2, 1000, 64, 20000);
    p.Br = 128;
    p.Bc = 128;
    fl_blocks b;
    cr_assert_eq(fl_blocks_choose(&p, &b), FL_EINVAL);
    cr_assert(strstr(fl_last_error_raw(), "{Br}/{Bc}"), "%s", fl_last_error_raw());
    cr_assert(strstr(fl_last_error(), "49408"), "%s", fl_last_error()); /* 2*128*64*2 + 128^2 + 256 */
    p.Br = 32;
    p.Bc = 48;
    cr_assert_eq(fl_blocks_choose(&p, &b), FL_OK);
    cr_assert(b.overridden && b.Br == 32 && b.Bc == 48);
}

Test(blocks, problem_check_names_the_option)
{
    fl_problem p = prob(FL_ALGO_FLASH1, 0, 64, 1000);
    fl_blocks b;
    cr_assert_eq(fl_blocks_choose(&p, &b), FL_EINVAL);
    cr_assert(strstr(fl_last_error_raw(), "{N}"));
    p = prob(FL_ALGO_FLASH1, 10, -3, 1000);
    cr_assert_eq(fl_blocks_choose(&p, &b), FL_EINVAL);
    cr_assert(strstr(fl_last_error_raw(), "{d}"));
    fl_algo a;
    cr_assert_eq(fl_algo_parse("Flash_X", &a), FL_EINVAL);
    cr_assert(strstr(fl_last_error_raw(), "{algo}"));
}
