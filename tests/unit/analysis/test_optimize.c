/* test_optimize.c: the search is exact over its family (equal to an exhaustive search of every
 * schedule and block pair, each executed on the machine, on small problems), never above any
 * schedule it contains, never below the lower bound, and every row it prints replays through
 * `flashlab count` with the printed options. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_runner.h"
#include "optimize.h"
#include "rng.h"
#include "schedule.h"
#include "blocksparse_mask.h"
#include "decode.h"

static fl_problem prob(int64_t N, int64_t d, int64_t M)
{
    fl_problem p = fl_problem_default();
    p.N = N;
    p.d = d;
    p.M = M;
    return p;
}

/* The family of p (docs/model.md §7), from the registry: every schedule with a search for each
 * pass p runs, one stacking a group only when p's query heads form groups.  Returns its size. */
static int family(const fl_problem *p, fl_algo *out)
{
    int n = 0;
    for (int a = 0; a < fl_schedule_count(); a++) {
        const fl_schedule *s = fl_schedule_get((fl_algo)a);
        if (((p->pass & FL_PASS_FWD) && !s->search[0]) || ((p->pass & FL_PASS_BWD) && !s->search[1])) continue;
        if ((s->flags & FL_SCHED_STACKS_GROUP) && fl_problem_group_ratio(p) <= 1) continue;
        out[n++] = (fl_algo)a;
    }
    return n;
}

/* The count of schedule a with blocks (Br, Bc) (0: its rule) on p's pass, executed; -1 when it
 * does not run (does not fit, not its pass). */
static int64_t run(const fl_problem *p, fl_algo a, fl_pass pass, int64_t Br, int64_t Bc)
{
    fl_problem q = *p;
    fl_result r;
    q.algo = a, q.pass = pass, q.Br = Br, q.Bc = Bc;
    if (fl_run(&q, FL_COUNT, NULL, NULL, &r) != FL_OK) return -1;
    cr_assert_eq(r.total, r.closed.total);
    return r.total;
}

static void check_never_loses(const fl_problem *p)
{
    fl_opt o;
    fl_status s = fl_optimize(p, 4, FL_OPT_MAX_WORK, &o);
    cr_assert_eq(s, FL_OK, "N=%ld d=%ld M=%ld: %s", (long)p->N, (long)p->d, (long)p->M, fl_last_error());
    fl_algo all[FL_ALGO_MAX];
    const int nall = family(p, all);
    cr_assert_geq(nall, 1);
    for (int i = 0; i < nall; i++) {
        const int64_t t = run(p, all[i], p->pass, 0, 0);
        if (t >= 0) cr_assert_leq(o.best.total, t, "%s at its rule: %ld < best %ld", fl_algo_name(all[i]), (long)t,
                                  (long)o.best.total);
    }
    cr_assert_geq(o.best.total, o.lb.bound);
    cr_assert_leq(o.best.sram_peak, p->M);
    cr_assert_geq(o.simulated, 1);
}

Test(optimize, never_loses_to_a_schedule_at_its_rule_over_a_grid)
{
    const int64_t Ns[] = {100, 1000, 4096}, ds[] = {16, 64, 128}, Ms[] = {1024, 4096, 20000, 98304, 400000};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 5; k++) {
                fl_problem p = prob(Ns[i], ds[j], Ms[k]);
                check_never_loses(&p);
            }
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
    p.pass = FL_PASS_BWD;
    p.window_left = 40, p.window_right = 3;
    check_never_loses(&p);
}

/* Each pass gets its own blocks: the forward+backward optimum is never above any pair of
 * forward and backward blocks of the same schedule (sampled), and at N = 777, d = 48, M = 20000
 * the two passes' best blocks differ. */
Test(optimize, forward_and_backward_blocks_are_chosen_separately)
{
    fl_problem p = prob(777, 48, 20000);
    p.pass = FL_PASS_FWD_BWD;
    fl_opt o;
    cr_assert_eq(fl_optimize(&p, 4, FL_OPT_MAX_WORK, &o), FL_OK, "%s", fl_last_error());
    cr_assert(o.best.Br != o.best.Br_bwd || o.best.Bc != o.best.Bc_bwd);
    cr_assert_eq(o.best.total, o.best.fwd_total + o.best.bwd_total);
    uint64_t st = 5;
    int tried = 0;
    for (int k = 0; k < 300; k++) {
        const int64_t Br = 1 + (int64_t)(fl_rng_next(&st) % 200), Bc = 1 + (int64_t)(fl_rng_next(&st) % 40);
        const int64_t Br2 = 1 + (int64_t)(fl_rng_next(&st) % 40), Bc2 = 1 + (int64_t)(fl_rng_next(&st) % 60);
        const int64_t f = run(&p, FL_ALGO_FLASH2, FL_PASS_FWD, Br, Bc), b = run(&p, FL_ALGO_FLASH2, FL_PASS_BWD, Br2, Bc2);
        if (f < 0 || b < 0) continue;
        tried++;
        cr_assert_leq(o.best.total, f + b, "flash2 fwd %ld x %ld + bwd %ld x %ld", (long)Br, (long)Bc, (long)Br2, (long)Bc2);
    }
    cr_assert_geq(tried, 50);
}

/* The schedules the old search missed: a tall flash2 block under a causal mask, standard and
 * smallcache below M = d^2, and the GQA group schedule with a large M. */
Test(optimize, finds_what_a_grid_of_powers_of_two_missed)
{
    fl_problem p = prob(300, 48, 20000);
    p.causal = FL_CAUSAL_BOTTOM_RIGHT;
    fl_opt o;
    cr_assert_eq(fl_optimize(&p, 4, FL_OPT_MAX_WORK, &o), FL_OK);
    cr_assert_leq(o.best.total, run(&p, FL_ALGO_FLASH2, FL_PASS_FWD, 150, 1));
    p = prob(4096, 512, 2100);
    cr_assert_eq(fl_optimize(&p, 1, FL_OPT_MAX_WORK, &o), FL_OK);
    cr_assert_lt(o.best.total, run(&p, FL_ALGO_STANDARD, FL_PASS_FWD, 0, 0));
    cr_assert_str_eq(fl_algo_name(o.best.algo), "smallcache");
    p = prob(777, 48, 2000000);
    p.Nk = 500, p.heads = 6, p.kv_heads = 2;
    cr_assert_eq(fl_optimize(&p, 4, FL_OPT_MAX_WORK, &o), FL_OK);
    cr_assert_eq(o.best.algo, FL_ALGO_FLASH2_GQA);
    cr_assert_geq(o.best.total, o.lb.bound);
    cr_assert_lt((double)o.best.total, 1.02 * (double)o.lb.floor); /* read once, written once, nearly */
}

/* ---- exhaustive search on small problems ---- */

/* The least count over every schedule of the family and every block pair per pass, each
 * executed on the machine. */
static int64_t brute(const fl_problem *p)
{
    int64_t nq, nk, best = -1;
    fl_problem_lengths(p, &nq, &nk);
    fl_algo all[FL_ALGO_MAX];
    const int nall = family(p, all);
    for (int i = 0; i < nall; i++) {
        int64_t pass_best[2] = {-1, -1};
        for (int bwd = 0; bwd < 2; bwd++) {
            if (!(p->pass & (bwd ? FL_PASS_BWD : FL_PASS_FWD))) continue;
            for (int64_t Br = 1; Br <= nq; Br++)
                for (int64_t Bc = 1; Bc <= nk; Bc++) {
                    const int64_t t = run(p, all[i], bwd ? FL_PASS_BWD : FL_PASS_FWD, Br, Bc);
                    if (t >= 0 && (pass_best[bwd] < 0 || t < pass_best[bwd])) pass_best[bwd] = t;
                }
        }
        const int64_t f = (p->pass & FL_PASS_FWD) ? pass_best[0] : 0, b = (p->pass & FL_PASS_BWD) ? pass_best[1] : 0;
        if (f < 0 || b < 0) continue;
        if (best < 0 || f + b < best) best = f + b;
    }
    return best;
}

/* The former search, for the comparison's power: the family's schedules with one free block
 * (flash1, flash2 and flash2-gqa) with one pair (Br, Bc) for every pass, Br on 1, 2, 4, ..., Nq
 * with the largest Bc that fits, or Bc on 1, 2, 4, ..., Nk with the largest Br. */
static int64_t grid_search(const fl_problem *p)
{
    int64_t nq, nk, best = -1;
    fl_problem_lengths(p, &nq, &nk);
    fl_algo algos[FL_ALGO_MAX], fam[FL_ALGO_MAX];
    int n = 0;
    for (int i = 0, nf = family(p, fam); i < nf; i++) {
        const fl_search s = fl_schedule_get(fam[i])->search[0];
        if (s == FL_SEARCH_ROWS_FREE || s == FL_SEARCH_COLS_FREE) algos[n++] = fam[i];
    }
    for (int i = 0; i < n; i++)
        for (int rows = 0; rows < 2; rows++)
            for (int64_t x = 1;; x = x > (rows ? nq : nk) / 2 ? (rows ? nq : nk) : 2 * x) {
                for (int64_t y = rows ? nk : nq; y >= 1; y--) { /* the largest that fits */
                    const int64_t t = run(p, algos[i], p->pass, rows ? x : y, rows ? y : x);
                    if (t < 0) continue;
                    if (best < 0 || t < best) best = t;
                    break;
                }
                if (x >= (rows ? nq : nk)) break;
            }
    return best;
}

Test(optimize, equals_the_exhaustive_minimum_on_small_problems)
{
    fl_time_limit(FL_T(600));
    static int64_t cu[8];
    uint64_t st = 2024;
    int compared = 0, grid_missed = 0;
    for (int k = 0; k < 300; k++) {
        fl_problem p = fl_problem_default();
        const uint64_t r = fl_rng_next(&st);
        p.N = 1 + (int64_t)(r % 13);
        p.Nk = (r >> 8) % 3 ? 1 + (int64_t)((r >> 12) % 13) : 0;
        p.d = 1 + (int64_t)((r >> 20) % 6);
        const int64_t nk = p.Nk ? p.Nk : p.N;
        p.causal = (fl_causal)((r >> 24) % 3);
        if ((r >> 28) % 4 == 0) p.window_left = (int64_t)((r >> 30) % 4), p.window_right = (int64_t)((r >> 33) % 3) - 1;
        p.pass = (fl_pass)(1 + (r >> 36) % 3);
        if ((r >> 40) % 3 == 0) p.heads = 4, p.kv_heads = (r >> 42) % 2 ? 2 : 1;
        if ((r >> 44) % 4 == 0) { /* two sequences */
            const int64_t a = (int64_t)((r >> 46) % (uint64_t)(p.N + 1)), b = (int64_t)((r >> 50) % (uint64_t)(nk + 1));
            if ((a == 0) == (b == 0) && (a == p.N) == (b == nk)) {
                p.batch = 2;
                cu[0] = 0, cu[1] = a, cu[2] = p.N, cu[3] = 0, cu[4] = b, cu[5] = nk;
                p.cu_seqlens_q = cu, p.cu_seqlens_k = cu + 3;
                p.cu_seqlens_q_len = p.cu_seqlens_k_len = 3;
            }
        }
        /* M from a few elements to above the largest footprint at full blocks */
        const int64_t top = 4 * (p.N + nk) * p.d + 2 * p.N * nk + 8 * p.N + 16;
        p.M = 3 + (int64_t)(fl_rng_next(&st) % (uint64_t)top);
        fl_opt o;
        const fl_status s = fl_optimize(&p, 2, FL_OPT_MAX_WORK, &o);
        const int64_t b = brute(&p);
        if (b < 0) {
            cr_assert_eq(s, FL_ECAPACITY, "problem %d: nothing runs, yet optimize says %d", k, s);
            continue;
        }
        cr_assert_eq(s, FL_OK, "problem %d: %s", k, fl_last_error());
        cr_assert_eq(o.best.total, b, "problem %d (N %ld Nk %ld d %ld M %ld causal %d window %ld,%ld pass %d heads %ld/%ld "
                     "batch %ld): optimize %ld (%s), exhaustive %ld", k, (long)p.N, (long)p.Nk, (long)p.d, (long)p.M,
                     p.causal, (long)p.window_left, (long)p.window_right, p.pass, (long)p.heads, (long)p.kv_heads,
                     (long)p.batch, (long)o.best.total, fl_algo_name(o.best.algo), (long)b);
        compared++;
        const int64_t g = grid_search(&p);
        grid_missed += g < 0 || g > b;
    }
    /* the comparison catches a search that is not exact: the former grid misses the minimum often */
    printf("optimize: the former power-of-two grid misses the exhaustive minimum on %d of %d\n", grid_missed, compared);
    cr_assert_geq(grid_missed, 50);
    printf("optimize: equal to the exhaustive minimum on %d of 300 small problems (the others: nothing fits, on both "
           "sides)\n", compared);
    cr_assert_geq(compared, 250);
}

/* ---- replay through the CLI ---- */

/* Runs one `flashlab count ...` command line (as printed) with --format csv; its hbm_total. */
static int64_t count_cli(const char *line)
{
    char buf[1024], *argv[64];
    int n = 0;
    snprintf(buf, sizeof buf, "%s --format csv", line);
    for (char *t = strtok(buf, " "); t && n < 62; t = strtok(NULL, " ")) argv[n++] = t;
    cr_assert_str_eq(argv[0], "flashlab");
    argv[n] = NULL;
    cli_result *r = cli_run((const char *const *)argv + 1);
    cr_assert_eq(r->status, 0, "%s: %s", line, r->err);
    int64_t total = -1;
    char *row = strncmp(r->out, "algo,", 5) == 0 ? r->out : strstr(r->out, "\nalgo,");
    cr_assert(row, "%s", r->out);
    row = strchr(row + 1, '\n');
    long long v[7];
    char algo[32];
    cr_assert_eq(sscanf(row + 1, "%31[^,],%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld", algo, &v[0], &v[1], &v[2], &v[3],
                        &v[4], &v[5], &v[6], (long long *)&total),
                 9, "%s", row + 1);
    free(r);
    return total;
}

/* Every row of optimize's table, replayed by its printed count command(s). */
static int replay_all(const char *const *args)
{
    cli_result *r = cli_run(args);
    cr_assert_eq(r->status, 0, "%s", r->err);
    int rows = 0;
    char *save = NULL;
    for (char *line = strtok_r(r->out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        long long want;
        char *rp = strstr(line, "replay (");
        if (!rp) continue;
        cr_assert_eq(sscanf(rp, "replay (%lld): ", &want), 1, "%s", line);
        rp = strstr(rp, "): ") + 3;
        int64_t got = 0;
        char *plus = strstr(rp, "  plus  ");
        if (plus) {
            *plus = 0;
            got = count_cli(rp) + count_cli(plus + 8);
        } else {
            got = count_cli(rp);
        }
        cr_assert_eq(got, want, "replay of %s gave %ld, optimize printed %lld", rp, (long)got, want);
        rows++;
    }
    free(r);
    return rows;
}

Test(optimize_cli, every_printed_row_replays_through_count)
{
    fl_time_limit(FL_T(300));
    const char *a1[] = {"optimize", "--N", "300", "--d", "48", "--M", "600:40000:x4", "--causal", "bottom-right", NULL};
    const char *a2[] = {"optimize", "--N", "257", "--d", "64", "--causal", "bottom-right", "--pass", "fwd+bwd", "--M",
                        "2000,9000", NULL};
    const char *a3[] = {"optimize", "--N", "777", "--Nk", "500", "--d", "48", "--M", "2000000", "--heads", "6",
                        "--kv-heads", "2", NULL};
    const char *a4[] = {"optimize", "--N", "200", "--d", "40", "--M", "3000", "--pass", "bwd", "--window", "30,2", NULL};
    const char *a5[] = {"optimize", "--cu-seqlens-q", "0,50,130", "--cu-seqlens-k", "0,70,90", "--d", "24", "--M",
                        "1500", "--causal", "top-left", "--heads", "2", NULL};
    const char *a6[] = {"optimize", "--N", "2048", "--d", "256", "--M", "1024,30000", NULL};
    cr_assert_eq(replay_all(a1), 4);
    cr_assert_eq(replay_all(a2), 2);
    cr_assert_eq(replay_all(a3), 1);
    cr_assert_eq(replay_all(a4), 1);
    cr_assert_eq(replay_all(a5), 1);
    cr_assert_eq(replay_all(a6), 2);
    /* the variants: a replay without them counts another problem (d_v moves V and O; the sinks,
     * the seed and fp8's scale factors are read; a fixed-order dQ moves its partials) */
    const char *a7[] = {"optimize", "--N", "300", "--d", "40", "--d-v", "24", "--sinks", "--softcap", "30", "--alibi",
                        "--dropout", "0.1", "--deterministic", "--pass", "fwd+bwd", "--M", "3000", "--heads", "2", NULL};
    const char *a8[] = {"optimize", "--N", "300", "--d", "24", "--d-v", "40", "--dtype", "fp8", "--scale-block", "16",
                        "--M", "900,5000", NULL};
    cr_assert_eq(replay_all(a7), 1);
    cr_assert_eq(replay_all(a8), 2);
}

/* The replay catches rows that print the wrong blocks: at N = 257, d = 64, causal, fwd+bwd,
 * M = 2000, the backward with the forward's blocks does not run at all (its footprint is larger)
 * or gives another total; with the backward's printed blocks it gives the row's. */
Test(optimize_cli, a_backward_replayed_with_the_forward_blocks_does_not_match)
{
    fl_problem p = fl_problem_default();
    p.N = 257, p.d = 64, p.M = 2000, p.causal = FL_CAUSAL_BOTTOM_RIGHT, p.pass = FL_PASS_FWD_BWD;
    fl_opt o;
    cr_assert_eq(fl_optimize(&p, 1, FL_OPT_MAX_WORK, &o), FL_OK, "%s", fl_last_error());
    const int64_t wrong = run(&p, o.best.algo, FL_PASS_BWD, o.best.Br, o.best.Bc);
    cr_assert(wrong < 0 || o.best.fwd_total + wrong != o.best.total, "forward blocks %ld x %ld, backward %ld x %ld",
                  (long)o.best.Br, (long)o.best.Bc, (long)o.best.Br_bwd, (long)o.best.Bc_bwd);
    cr_assert_eq(run(&p, o.best.algo, FL_PASS_BWD, o.best.Br_bwd, o.best.Bc_bwd), o.best.bwd_total);
}

Test(optimize_cli, frontier_csv_rows_never_above_flash1_or_flash2)
{
    const char *a[] = {"optimize", "--N", "1000", "--d", "32", "--M", "2048:65536:x4", "--format", "csv", NULL};
    cli_result *r = cli_run(a);
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert(strstr(r->out, "\nN,d,M,pass,best_algo,Br,Bc,Bd,Br_bwd,Bc_bwd,Bd_bwd,best_fwd,best_bwd,best_total,"
                             "flash1_total,flash2_total,lower_bound,best_over_bound\n"),
              "%s", r->out);
    int rows = 0;
    for (char *line = strtok(r->out, "\n"); line; line = strtok(NULL, "\n")) {
        long long N, d, M, v[9], best, f1, f2, lb;
        char pass[16], algo[32];
        if (sscanf(line, "%lld,%lld,%lld,%15[^,],%31[^,],%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld", &N,
                   &d, &M, pass, algo, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &best, &f1, &f2, &lb) != 17)
            continue;
        rows++;
        cr_assert_leq(best, f1, "M=%lld", M);
        cr_assert_leq(best, f2, "M=%lld", M);
        cr_assert_geq(best, lb, "M=%lld", M);
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

Test(optimize, limits_and_foreign_problems_are_refused)
{
    fl_problem p = prob(100, 64, 2);
    fl_kv_cache p_kv = fl_kv_cache_default();
    fl_block_sparsity p_bm = fl_block_sparsity_default();
    fl_opt o;
    cr_assert_eq(fl_optimize(&p, 4, FL_OPT_MAX_WORK, &o), FL_ECAPACITY);
    cr_assert(strstr(fl_last_error_raw(), "{M}"), "%s", fl_last_error_raw());
    p.M = 100000;
    cr_assert_eq(fl_optimize(&p, 0, FL_OPT_MAX_WORK, &o), FL_EINVAL);
    cr_assert_eq(fl_optimize(&p, 4, 0, &o), FL_EINVAL);
    p = prob(INT64_C(1) << 30, 64, 1 << 20); /* the enumeration alone is far above the limit */
    cr_assert_eq(fl_optimize(&p, 4, FL_OPT_MAX_WORK, &o), FL_EINVAL);
    cr_assert(strstr(fl_last_error_raw(), "{max_work}"), "%s", fl_last_error_raw());
    p = prob(64, 16, 4000);
    p.kv_cache = &p_kv;
    p_kv.splits = 2;
    cr_assert_eq(fl_optimize(&p, 4, FL_OPT_MAX_WORK, &o), FL_EINVAL);
    cr_assert(strstr(fl_last_error_raw(), "{splits}"), "%s", fl_last_error_raw());
    p = prob(64, 16, 4000);
    p.block_mask = &p_bm;
    p_bm.density = 0.5;
    cr_assert_eq(fl_optimize(&p, 4, FL_OPT_MAX_WORK, &o), FL_EINVAL);
    cr_assert(strstr(fl_last_error_raw(), "{density}"), "%s", fl_last_error_raw());
}
