/* test_optimize.c: the tiling search never loses to the fixed schedules, reports simulated
 * counts, and beats flash2's square blocks where the model says it should. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "optimize.h"

static fl_problem prob(int64_t N, int64_t d, int64_t M)
{
    fl_problem p = fl_problem_default();
    p.N = N;
    p.d = d;
    p.M = M;
    return p;
}

static void check_never_loses(const fl_problem *p)
{
    fl_opt o;
    fl_status s = fl_optimize(p, 4, &o);
    cr_assert_eq(s, FL_OK, "N=%ld d=%ld M=%ld: %s", (long)p->N, (long)p->d, (long)p->M, fl_last_error());
    cr_assert(o.have_flash1 || o.have_flash2);
    if (o.have_flash1) cr_assert_leq(o.best.total, o.flash1.total);
    if (o.have_flash2) cr_assert_leq(o.best.total, o.flash2.total);
    /* the best is a simulated count, equal to its closed form, within M */
    cr_assert_eq(o.best.total, o.best.closed.total);
    cr_assert_leq(o.best.sram_peak, p->M);
    cr_assert_geq(o.simulated, 1);
}

Test(optimize, never_loses_to_flash1_or_flash2_over_a_grid)
{
    const int64_t Ns[] = {100, 1000, 4096}, ds[] = {16, 64, 128}, Ms[] = {1024, 4096, 20000, 98304, 400000};
    int ran = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 5; k++) {
                fl_problem p = prob(Ns[i], ds[j], Ms[k]);
                if (4 * ds[j] + 7 > Ms[k]) continue; /* no flash schedule fits */
                check_never_loses(&p);
                ran++;
            }
    cr_assert_geq(ran, 40);
}

Test(optimize, never_loses_with_masks_heads_and_backward)
{
    fl_problem p = prob(1000, 64, 40000);
    p.causal = FL_CAUSAL_BOTTOM_RIGHT;
    check_never_loses(&p);
    p = prob(512, 64, 40000);
    p.heads = 8;
    p.kv_heads = 2;
    check_never_loses(&p);
    p = prob(700, 32, 30000);
    p.pass = FL_PASS_FWD_BWD;
    check_never_loses(&p);
}

Test(optimize, tall_query_blocks_beat_square_blocks_when_M_is_large)
{
    /* flash2 moves Nd + 2Nd*Tr + Nd + N: only Br matters, so a tall Br with a short Bc beats
     * the square default once the square side passes d (docs/model.md §4.5). */
    fl_problem p = prob(8192, 64, 400000);
    fl_opt o;
    cr_assert_eq(fl_optimize(&p, 4, &o), FL_OK, "%s", fl_last_error());
    cr_assert_lt(o.best.total, o.flash2.total);
    cr_assert_lt(o.best.total, o.flash1.total);
    cr_assert_gt(o.best.b.Br, o.best.b.Bc);
    printf("optimize N=8192 d=64 M=400000: best %s Br=%ld Bc=%ld %ld, flash1 %ld, flash2 %ld\n",
           fl_algo_name(o.best.p.algo), (long)o.best.b.Br, (long)o.best.b.Bc, (long)o.best.total,
           (long)o.flash1.total, (long)o.flash2.total);
}

Test(optimize, nothing_fits_is_a_capacity_error)
{
    fl_problem p = prob(100, 64, 200);
    fl_opt o;
    cr_assert_eq(fl_optimize(&p, 4, &o), FL_ECAPACITY);
    cr_assert(strstr(fl_last_error(), "--M"), "%s", fl_last_error());
    p.M = 100000;
    cr_assert_eq(fl_optimize(&p, 0, &o), FL_EINVAL);
}

#include "cli_runner.h"

Test(optimize_cli, frontier_csv_rows_never_above_flash1_or_flash2)
{
    const char *a[] = {"optimize", "--N", "1000", "--d", "32", "--M", "2048:65536:x4", "--format", "csv", NULL};
    cli_result *r = cli_run(a);
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert(strstr(r->out, "\nN,d,M,best_algo,Br,Bc,best_total,flash1_total,flash2_total,lower_bound,constant\n"),
              "%s", r->out);
    int rows = 0;
    for (char *line = strtok(r->out, "\n"); line; line = strtok(NULL, "\n")) {
        long long N, d, M, Br, Bc, best, f1, f2;
        char algo[32];
        if (sscanf(line, "%lld,%lld,%lld,%31[^,],%lld,%lld,%lld,%lld,%lld", &N, &d, &M, algo, &Br, &Bc, &best,
                   &f1, &f2) != 9)
            continue;
        rows++;
        cr_assert_leq(best, f1, "M=%lld", M);
        cr_assert_leq(best, f2, "M=%lld", M);
    }
    cr_assert_eq(rows, 3);
    free(r);
}

Test(optimize_cli, block_options_are_refused)
{
    const char *a[] = {"optimize", "--Br", "64", NULL};
    cli_result *r = cli_run(a);
    cr_assert_eq(r->status, 2);
    cr_assert(strstr(r->err, "--Br: optimize searches"), "%s", r->err);
    free(r);
}
