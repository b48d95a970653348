/* test_exactness.c: in compute mode every schedule matches the exact reference to a relative
 * error of 1e-12 (double precision), at default blocks and at small M that forces many tiles,
 * chunked d and multi-pass softmax. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "run.h"

#define REL_TOL 1e-12

static void check(fl_algo a, int64_t N, int64_t d, int64_t M, uint64_t seed)
{
    fl_problem p = fl_problem_default();
    p.algo = a;
    p.N = N;
    p.d = d;
    p.M = M;
    p.seed = seed;
    fl_result r;
    fl_status s = fl_run(&p, FL_COMPUTE, NULL, NULL, &r);
    cr_assert_eq(s, FL_OK, "%s N=%ld d=%ld M=%ld: %s", fl_algo_name(a), (long)N, (long)d, (long)M,
                 fl_last_error());
    cr_assert(r.computed);
    cr_assert(r.rel_err <= REL_TOL, "%s N=%ld d=%ld M=%ld (Br=%ld Bc=%ld Bd=%ld): rel_err %.3e",
              fl_algo_name(a), (long)N, (long)d, (long)M, (long)r.b.Br, (long)r.b.Bc, (long)r.b.Bd,
              r.rel_err);
    if (a == FL_ALGO_FLASH2)
        cr_assert(r.lse_rel_err <= REL_TOL, "flash2 logsumexp rel_err %.3e", r.lse_rel_err);
}

/* The grid: N in {1, 7, 64, 1000}, d in {1, 16, 64, 128}, every schedule. */
Test(exactness, every_schedule_matches_reference_at_default_blocks)
{
    fl_time_limit(FL_T(300));
    const int64_t Ns[] = {1, 7, 64, 1000}, ds[] = {1, 16, 64, 128};
    double worst = 0;
    for (int a = 0; a < fl_schedule_count(); a++)
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) check((fl_algo)a, Ns[i], ds[j], 98304, 7 + i * 4 + j);
    (void)worst;
}

/* Small SRAM: many partial tiles; standard with chunked d (Td > 1) and rows that do not fit. */
Test(exactness, every_schedule_matches_reference_under_small_M)
{
    fl_time_limit(FL_T(300));
    const int64_t Ns[] = {7, 64, 1000}, ds[] = {1, 16, 64, 128};
    for (int a = 0; a < fl_schedule_count(); a++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++) {
                const int64_t d = ds[j];
                /* just above each schedule's smallest tile, and a middle size */
                check((fl_algo)a, Ns[i], d, 4 * d + 7 + 3 * d, 100 + i);
                check((fl_algo)a, Ns[i], d, 2000 + 37 * d, 200 + j);
            }
}

Test(exactness, standard_multi_pass_softmax_and_chunked_inner_dimension)
{
    fl_problem p = fl_problem_default();
    p.algo = FL_ALGO_STANDARD;
    p.N = 333;
    p.d = 100;
    p.M = 300; /* N > M: three-pass softmax; cubes of side 10: Bd = 10 < d */
    fl_result r;
    cr_assert_eq(fl_run(&p, FL_COMPUTE, NULL, NULL, &r), FL_OK, "%s", fl_last_error());
    cr_assert_eq(r.b.Bd, 10);
    cr_assert(r.rel_err <= REL_TOL, "%.3e", r.rel_err);
}

Test(exactness, a_seed_fixes_the_inputs_and_counts_do_not_depend_on_them)
{
    fl_problem p = fl_problem_default();
    p.algo = FL_ALGO_FLASH1;
    p.N = 50;
    p.d = 8;
    p.M = 200; /* many tiles: rounding differs from the reference, so errors are not zero */
    fl_result r1, r2, r3;
    p.seed = 1;
    cr_assert_eq(fl_run(&p, FL_COMPUTE, NULL, NULL, &r1), FL_OK);
    cr_assert_eq(fl_run(&p, FL_COMPUTE, NULL, NULL, &r2), FL_OK);
    p.seed = 2;
    cr_assert_eq(fl_run(&p, FL_COMPUTE, NULL, NULL, &r3), FL_OK);
    cr_assert(r1.max_abs_err > 0.0);
    cr_assert(r1.max_abs_err == r2.max_abs_err, "same seed, same inputs, same rounding");
    cr_assert(r1.max_abs_err != r3.max_abs_err, "another seed, other inputs");
    cr_assert_eq(r1.total, r3.total);
}

Test(exactness, compute_mode_refuses_sizes_it_cannot_hold)
{
    fl_problem p = fl_problem_default();
    p.algo = FL_ALGO_STANDARD;
    p.N = 65536; /* S and P alone: 2^33 values */
    fl_result r;
    cr_assert_eq(fl_run(&p, FL_COMPUTE, NULL, NULL, &r), FL_EINVAL);
    cr_assert(strstr(fl_last_error(), "use count"), "%s", fl_last_error());
}
