/* test_blocksparse.c: block-sparse FlashAttention: counts equal eq. (CS) over a grid (N not a
 * multiple of the blocks included, densities from 0.05 to 1), values match the reference with
 * the block keep rule (rows whose blocks are all skipped output zero), density 1 is flash2
 * exactly, the output is written in full, and the traffic grows linearly in s (Prop. 4). */
#include "grid.h"

#include "blocksparse_mask.h"
#include "examples.h"

#include <stdlib.h>

/* A block-sparse problem; its mask is the last one made (a test uses one problem at a time). */
static fl_problem bs_problem(int64_t N, int64_t d, int64_t M, double s, uint64_t seed)
{
    static fl_block_sparsity bm;
    fl_problem p = fl_problem_default();
    bm = fl_block_sparsity_default();
    bm.density = s;
    bm.mask_seed = seed;
    p.block_mask = &bm;
    p.algo = FL_ALGO_BLOCKSPARSE;
    p.N = N;
    p.d = d;
    p.M = M;
    return p;
}

Test(blocksparse, closed_form_and_values_over_a_grid)
{
    const int64_t Ns[] = {1, 7, 64, 100, 257}, ds[] = {3, 16}, Ms[] = {300, 2000, 20000};
    const double ss[] = {0.05, 0.3, 0.5, 1.0};
    for (size_t i = 0; i < 5; i++)
        for (size_t j = 0; j < 2; j++)
            for (size_t k = 0; k < 3; k++)
                for (size_t q = 0; q < 4; q++) {
                    fl_problem p = bs_problem(Ns[i], ds[j], Ms[k], ss[q], 1 + i + 7 * q);
                    check_exact(&p, 1, NULL);
                }
}

Test(blocksparse, density_one_is_flash2)
{
    fl_result bs, f2;
    fl_problem p = bs_problem(1000, 64, 30000, 1.0, 3);
    check_exact(&p, 0, &bs);
    p.algo = FL_ALGO_FLASH2;
    p.block_mask = NULL; /* flash2's problem: no block mask */
    cr_assert_eq(fl_run(&p, FL_COUNT, NULL, NULL, &f2), FL_OK, "%s", fl_last_error());
    cr_expect_eq(bs.reads, f2.reads);
    cr_expect_eq(bs.writes, f2.writes);
    cr_expect_eq(bs.events, f2.events);
}

Test(blocksparse, output_written_in_full_even_for_empty_block_rows)
{
    /* s small enough that some block rows keep nothing: O and L are still written in full */
    fl_problem p = bs_problem(200, 8, 600, 0.05, 11);
    fl_result r;
    fl_blocks b;
    cr_assert_eq(fl_blocks_choose(&p, &b), FL_OK);
    const fl_bsmask mk = fl_bsmask_make(200, 200, b.Br, b.Bc, 0.05, 11);
    int empty_rows = 0;
    for (int64_t i = 0; i < mk.Tr; i++) {
        int any = 0;
        for (int64_t j = 0; j < mk.Tc; j++) any |= fl_bsmask_block(&mk, i, j);
        empty_rows += !any;
    }
    cr_assert_gt(empty_rows, 0, "pick a sparser mask: every block row keeps a block");
    check_exact(&p, 1, &r);
    for (int t = 0; t < r.ntensors; t++)
        if (strcmp(r.t[t].name, "O") == 0) cr_expect_eq(r.t[t].writes, 200 * 8);
}

Test(blocksparse, traffic_grows_linearly_in_density)
{
    /* Prop. 4: Theta(N d + N^2 d^2 s / M).  Above the fixed part (Q read, O and L written),
     * the K/V traffic is 2 d x (rows of kept blocks): its fraction of the dense case is the
     * kept fraction of key rows, which tracks s (each block kept with probability s). */
    const int64_t N = 16384, d = 64, M = 98304;
    fl_result dense;
    fl_problem p = bs_problem(N, d, M, 1.0, 5);
    fl_block_sparsity p_bm = *p.block_mask;
    p.block_mask = &p_bm;
    check_exact(&p, 0, &dense);
    const int64_t fixed = N * d + N * d + N;
    const double ss[] = {0.125, 0.25, 0.5, 0.75};
    for (size_t k = 0; k < 4; k++) {
        fl_result r;
        p_bm.density = ss[k];
        check_exact(&p, 0, &r);
        const double frac = (double)(r.total - fixed) / (double)(dense.total - fixed);
        cr_expect(fabs(frac - ss[k]) < 0.03, "s = %g: K/V traffic is %g of dense", ss[k], frac);
    }
}

Test(blocksparse, bad_density_is_refused)
{
    fl_result r;
    const double bad[] = {0.0, -0.5, 1.5, NAN};
    for (size_t k = 0; k < 4; k++) {
        fl_problem p = bs_problem(64, 8, 2000, bad[k], 1);
        cr_expect_eq(fl_run(&p, FL_COUNT, NULL, NULL, &r), FL_EINVAL);
        cr_expect(strstr(fl_last_error_raw(), "{density}") != NULL, "%s", fl_last_error_raw());
    }
    fl_problem p = bs_problem(64, 8, 2000, 1.0, 1);
    fl_block_sparsity p_bm = *p.block_mask;
    p.block_mask = &p_bm;
    p.algo = FL_ALGO_FLASH2;
    p_bm.density = 0.5;
    cr_expect_eq(fl_run(&p, FL_COUNT, NULL, NULL, &r), FL_EINVAL);
    cr_expect(strstr(fl_last_error(), "blocksparse") != NULL, "%s", fl_last_error());
}

Test(blocksparse, example_blocksparse_density_passes)
{
    FILE *devnull = fopen("/dev/null", "w");
    const fl_example *e = fl_example_find("sparse-density");
    cr_assert_not_null(e);
    cr_expect_eq(e->run(devnull), 1, "flashlab example sparse-density fails");
    fclose(devnull);
}

/* `flashlab sweep` carries the fixed fields (here the density) into every configuration: its
 * rows equal fl_run's counts for the same problems. */
Test(blocksparse, sweep_carries_the_density)
{
    char cmd[512], line[1024];
    snprintf(cmd, sizeof cmd, "%s sweep --algo blocksparse --N 1000,3000 --density 0.25 --mask-seed 4",
             FLASHLAB_CLI);
    FILE *f = popen(cmd, "r");
    cr_assert_not_null(f);
    int rows = 0, matched = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || strncmp(line, "blocksparse,", 12)) continue;
        rows++;
        long long N = atoll(line + 12);
        fl_problem p = bs_problem(N, 64, 98304, 0.25, 4);
        fl_result r;
        cr_assert_eq(fl_run(&p, FL_COUNT, NULL, NULL, &r), FL_OK);
        char want[64];
        snprintf(want, sizeof want, ",%lld,", (long long)r.total);
        matched += strstr(line, want) != NULL;
    }
    cr_expect_eq(pclose(f), 0);
    cr_expect_eq(rows, 2);
    cr_expect_eq(matched, 2, "sweep rows differ from fl_run at density 0.25");
}
