/* test_closed_form.c: the forward closed forms of docs/model.md §4 (standard, flash1, flash2) equal the counts the machine makes
 * when it executes each schedule, over a grid of configurations (non-multiples included). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "run.h"
#include "schedule.h"

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Runs one configuration in count mode; returns 0 if it cannot run (M below the smallest tile,
 * an override that does not fit, or too many events for a unit test), 1 after checking it. */
static int check_one(fl_algo a, int64_t N, int64_t d, int64_t M, int64_t Br, int64_t Bc)
{
    fl_problem p = fl_problem_default();
    p.algo = a;
    p.N = N;
    p.d = d;
    p.M = M;
    p.Br = Br;
    p.Bc = Bc;
    p.max_events = 20000000;
    fl_result r;
    fl_status s = fl_run(&p, FL_COUNT, NULL, NULL, &r);
    if (s == FL_ECAPACITY || s == FL_EINVAL) return 0;
    cr_assert_eq(s, FL_OK, "%s", fl_last_error());
    const char *name = fl_algo_name(a);
    cr_assert_eq(r.reads, r.closed.reads, "%s N=%ld d=%ld M=%ld Br=%ld Bc=%ld: reads %ld vs formula %ld",
                 name, (long)N, (long)d, (long)M, (long)r.b.Br, (long)r.b.Bc, (long)r.reads, (long)r.closed.reads);
    cr_assert_eq(r.writes, r.closed.writes, "%s N=%ld d=%ld M=%ld: writes %ld vs %ld", name, (long)N,
                 (long)d, (long)M, (long)r.writes, (long)r.closed.writes);
    cr_assert_eq(r.total, r.closed.total);
    cr_assert_eq(r.events, r.closed.events, "%s N=%ld d=%ld M=%ld: events %ld vs %ld", name, (long)N,
                 (long)d, (long)M, (long)r.events, (long)r.closed.events);
    cr_assert_eq(r.sram_peak, r.closed.sram_peak, "%s: peak %ld vs %ld", name, (long)r.sram_peak,
                 (long)r.closed.sram_peak);
    cr_assert_leq(r.sram_peak, M, "%s: SRAM peak above M", name);
    /* docs/model.md's formulas, written out independently of the schedules' closed forms */
    const int64_t Nd = N * d, Tr = cdiv(N, r.b.Br), Tc = cdiv(N, r.b.Bc);
    if (a == FL_ALGO_FLASH1) {
        cr_assert_eq(r.reads, 2 * Nd + Tc * (2 * Nd + 2 * N));
        cr_assert_eq(r.writes, (Nd + 2 * N) + Tc * (Nd + 2 * N));
    } else if (a == FL_ALGO_FLASH2 || a == FL_ALGO_FLASH2_GQA) { /* one head: G = 1 */
        cr_assert_eq(r.reads, Nd + 2 * Nd * Tr);
        cr_assert_eq(r.writes, Nd + N);
    } else if (a == FL_ALGO_STANDARD) {
        /* standard writes S and P (N^2 each) and O (Nd) exactly once */
        cr_assert_eq(r.writes, 2 * N * N + Nd);
    }
    return 1;
}

Test(closed_form, equals_simulation_over_default_blocks_grid)
{
    const int64_t Ns[] = {1, 7, 64, 100, 1000, 1023, 4096, 5000};
    const int64_t ds[] = {1, 16, 64, 100, 128};
    const int64_t Ms[] = {300, 2048, 8191, 65536, 300000};
    int ran = 0, tried = 0;
    fl_algo all[FL_ALGO_MAX]; /* "all" (one head), from the registry */
    const int nall = fl_algos_all(NULL, all);
    for (int a = 0; a < nall; a++)
        for (size_t i = 0; i < sizeof Ns / sizeof *Ns; i++)
            for (size_t j = 0; j < sizeof ds / sizeof *ds; j++)
                for (size_t k = 0; k < sizeof Ms / sizeof *Ms; k++, tried++)
                    ran += check_one(all[a], Ns[i], ds[j], Ms[k], 0, 0);
    printf("closed_form default grid: %d of %d configurations ran and matched\n", ran, tried);
    cr_assert_geq(ran, 400, "only %d configurations ran", ran);
}

Test(closed_form, equals_simulation_with_block_overrides_that_do_not_divide_N)
{
    const int64_t Ns[] = {13, 100, 1000, 4099};
    const int64_t blocks[][2] = {{1, 1}, {3, 5}, {7, 2}, {16, 16}, {33, 64}, {64, 17}, {100, 100}};
    int ran = 0;
    fl_algo all[FL_ALGO_MAX]; /* "all" (one head), from the registry */
    const int nall = fl_algos_all(NULL, all);
    for (int a = 0; a < nall; a++)
        for (size_t i = 0; i < sizeof Ns / sizeof *Ns; i++)
            for (size_t b = 0; b < sizeof blocks / sizeof *blocks; b++)
                ran += check_one(all[a], Ns[i], 48, 100000, blocks[b][0], blocks[b][1]);
    printf("closed_form override grid: %d configurations ran and matched\n", ran);
    cr_assert_geq(ran, 70);
}

Test(closed_form, issue_example_flash1_N4096_d64_M65536)
{
    fl_problem p = fl_problem_default();
    p.algo = FL_ALGO_FLASH1;
    p.N = 4096;
    p.d = 64;
    p.M = 65536;
    fl_result r;
    cr_assert_eq(fl_run(&p, FL_COUNT, NULL, NULL, &r), FL_OK);
    /* the paper's sizes fit here (footprint 57728 <= 65536): Bc = 256, Br = 64, Tc = 16 */
    cr_assert_eq(r.b.Bc, 256);
    cr_assert_eq(r.b.Br, 64);
    cr_assert_eq(r.reads, 9043968);  /* 2*262144 + 16*(524288 + 8192) */
    cr_assert_eq(r.writes, 4595712); /* (262144 + 8192) + 16*(262144 + 8192) */
}

Test(closed_form, overflow_is_refused_before_running)
{
    fl_problem p = fl_problem_default();
    p.N = INT64_C(1) << 40;
    p.d = INT64_C(1) << 20;
    p.M = INT64_C(1) << 40;
    for (int a = 0; a < fl_schedule_count(); a++) {
        p.algo = (fl_algo)a;
        fl_result r;
        fl_status s = fl_run(&p, FL_COUNT, NULL, NULL, &r);
        cr_assert_eq(s, FL_EOVERFLOW, "%s: %d %s", fl_algo_name(p.algo), s, fl_last_error());
        cr_assert(strstr(fl_last_error(), "overflow"));
    }
}

Test(closed_form, too_many_events_is_refused_with_the_option_named)
{
    fl_problem p = fl_problem_default();
    p.algo = FL_ALGO_FLASH1;
    p.N = 1 << 20;
    p.d = 64;
    p.M = 4096;
    fl_result r;
    cr_assert_eq(fl_run(&p, FL_COUNT, NULL, NULL, &r), FL_EINVAL);
    cr_assert(strstr(fl_last_error_raw(), "{max_events}"), "%s", fl_last_error_raw());
}
