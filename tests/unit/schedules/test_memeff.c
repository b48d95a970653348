/* test_memeff.c: Rabe-Staats memory-efficient attention on the machine: counts equal eq. (CM)
 * over a grid of N, d, M and chunk sizes (non-multiples included), values match the reference,
 * and beside flash2 at the same blocks it moves exactly the chunk summaries more:
 * N Tc (d + 3) reads and N Tc (d + 2) writes (stored, then read back to combine). */
#include "grid.h"

static fl_problem memeff_problem(int64_t N, int64_t d, int64_t M, int64_t Br, int64_t Bc)
{
    fl_problem p = fl_problem_default();
    p.algo = FL_ALGO_MEMEFF;
    p.N = N;
    p.d = d;
    p.M = M;
    p.Br = Br;
    p.Bc = Bc;
    return p;
}

Test(memeff, closed_form_and_values_over_a_grid)
{
    const int64_t Ns[] = {1, 7, 64, 100, 129}, ds[] = {1, 3, 16}, Ms[] = {200, 1000, 5000};
    const int64_t chunks[][2] = {{0, 0}, {1, 1}, {4, 7}, {16, 5}};
    for (size_t i = 0; i < 5; i++)
        for (size_t j = 0; j < 3; j++)
            for (size_t k = 0; k < 3; k++)
                for (size_t c = 0; c < 4; c++) {
                    fl_problem p = memeff_problem(Ns[i], ds[j], Ms[k], chunks[c][0], chunks[c][1]);
                    fl_blocks b;
                    if (fl_blocks_choose(&p, &b) != FL_OK) continue; /* chunks that do not fit M */
                    check_exact(&p, 1, NULL);
                }
}

Test(memeff, moves_the_chunk_summaries_more_than_flash2)
{
    const int64_t N = 1000, d = 64, M = 98304;
    fl_result me, f2;
    fl_problem p = memeff_problem(N, d, M, 0, 0);
    check_exact(&p, 0, &me);
    p.algo = FL_ALGO_FLASH2; /* at memeff's blocks (flash2's own rule picks larger ones) */
    p.Br = me.b.Br;
    p.Bc = me.b.Bc;
    cr_assert_eq(fl_run(&p, FL_COUNT, NULL, NULL, &f2), FL_OK, "%s", fl_last_error());
    cr_assert_eq(me.b.Br, f2.b.Br);
    cr_assert_eq(me.b.Bc, f2.b.Bc);
    const int64_t Tc = (N + me.b.Bc - 1) / me.b.Bc;
    cr_expect_eq(me.reads - f2.reads, N * Tc * (d + 3), "reads: %lld more", (long long)(me.reads - f2.reads));
    /* flash2 also writes L (N); memeff writes only O */
    cr_expect_eq(me.writes - (f2.writes - N), N * Tc * (d + 2));
}

/* The CLI table puts Rabe-Staats and softmax alone beside flash2 (one row each). */
Test(memeff, cli_table_beside_flash2)
{
    char cmd[512], line[1024];
    snprintf(cmd, sizeof cmd, "%s count --algo flash2,memeff,softmax-safe,softmax-online --N 4096 "
                              "--format csv", FLASHLAB_CLI);
    FILE *f = popen(cmd, "r");
    cr_assert_not_null(f);
    int rows = 0, seen = 0;
    char me[64];
    fl_problem p = memeff_problem(4096, 64, 98304, 0, 0);
    fl_result r;
    cr_assert_eq(fl_run(&p, FL_COUNT, NULL, NULL, &r), FL_OK);
    snprintf(me, sizeof me, ",%lld,", (long long)r.total);
    while (fgets(line, sizeof line, f)) {
        rows++;
        /* 4 accesses per element safe, 3 online: 4 N^2 = 67108864 and 3 N^2 = 50331648 */
        if (!strncmp(line, "softmax-safe,4096,", 18)) seen += strstr(line, ",67108864,") != NULL;
        if (!strncmp(line, "softmax-online,4096,", 20)) seen += strstr(line, ",50331648,") != NULL;
        if (!strncmp(line, "memeff,4096,", 12)) seen += strstr(line, me) != NULL;
    }
    cr_expect_eq(pclose(f), 0);
    cr_expect_eq(rows, 5, "header + 4 rows, got %d lines", rows);
    cr_expect_eq(seen, 3, "the memeff and softmax rows carry their totals");
}
