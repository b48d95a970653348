/* test_errors_regress.c: one test per finding of the fuzzers (fuzz/RESULTS.md) and of the
 * hostile reviews of the CLI, each failing on the code before its fix.  CLI runs go through the built
 * binary (test_errors_util.h); library calls are made directly. */
#include "test_errors_util.h"

#include <math.h>
#include <stdint.h>

#include "attention_ref.h"
#include "ops.h"
#include "problem.h"
#include <flashlab/decode.h>
#include "rng.h"
#include "run.h"
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
    p.M = FL_SIZE_MAX;
    p.algo = FL_ALGO_STANDARD; /* cube side t: 3(t+1)^2 <= M was computed in int64 */
    cr_expect_eq(fl_blocks_choose(&p, &b), FL_OK, "%s", fl_last_error());
    cr_expect(b.footprint >= 3 && b.footprint <= p.M);
    p.algo = FL_ALGO_FLASH1; /* the paper's M + 4d - 1 overflowed */
    p.d = FL_SIZE_MAX;
    cr_expect_eq(fl_blocks_choose(&p, &b), FL_ECAPACITY);
    cr_expect(strstr(fl_last_error_raw(), "{M}: flash1 needs more than 9223372036854775807") != NULL, "%s",
              fl_last_error());
    /* beyond FL_SIZE_MAX the problem itself is refused (fuzz_problem finding below) */
    p.M = INT64_MAX;
    cr_expect_eq(fl_blocks_choose(&p, &b), FL_EINVAL);
    cr_expect_str_eq(fl_last_error_raw(), "{M}: 9223372036854775807 is more than the largest size 2305843009213693951");
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

/* fuzz_softmax finding: a NaN score was skipped like a masked one (the row maximum ignored it),
 * so a row [NaN] gave 0 instead of NaN, and [1, NaN] tiled by 1 gave V_0 (the NaN tile was taken
 * for an empty one) while the two-pass reference gave NaN.  The rule: NaN propagates. */
Test(errors_regress, regress_nan_score_propagates)
{
    const double V[4] = {1.5, -2.25, 0.75, 3.125};
    double out[2];
    const double one_nan[1] = {NAN};
    cr_expect_eq(fl_osm_tiled(one_nan, 1, V, 2, 1, out), FL_OK);
    cr_expect(isnan(out[0]) && isnan(out[1]), "[NaN] -> %g %g", out[0], out[1]);
    cr_expect(isnan(fl_ref_softmax_row(one_nan, 1, V, 2, out)), "reference logsumexp of [NaN]");
    cr_expect(isnan(out[0]) && isnan(out[1]), "reference [NaN] -> %g %g", out[0], out[1]);
    const double late_nan[2] = {1.0, NAN};
    for (int tile = 1; tile <= 3; tile++) {
        cr_expect_eq(fl_osm_tiled(late_nan, 2, V, 2, tile, out), FL_OK);
        cr_expect(isnan(out[0]) && isnan(out[1]), "[1, NaN], tile %d -> %g %g", tile, out[0], out[1]);
    }
    const double nan_then_masked[2] = {NAN, -INFINITY};
    cr_expect_eq(fl_osm_tiled(nan_then_masked, 2, V, 2, 1, out), FL_OK);
    cr_expect(isnan(out[0]), "[NaN, -inf] -> %g", out[0]);
    /* +inf is not a masked score either: exp(inf - inf) is NaN, in both */
    const double pinf[2] = {INFINITY, 0.5};
    cr_expect_eq(fl_osm_tiled(pinf, 2, V, 2, 1, out), FL_OK);
    cr_expect(isnan(out[0]), "[+inf, 0.5] -> %g", out[0]);
    cr_expect(isnan(fl_ref_softmax_row(pinf, 2, V, 2, out)) && isnan(out[0]), "reference [+inf, 0.5]");
    /* what stays as it was: -inf is masked, an all-masked row gives zeros */
    const double masked[2] = {-INFINITY, -INFINITY};
    cr_expect_eq(fl_osm_tiled(masked, 2, V, 2, 1, out), FL_OK);
    cr_expect(out[0] == 0.0 && out[1] == 0.0);
    const double u[2] = {1.0, 2.0};
    fl_osm_finish(NAN, u, 2, out);
    cr_expect(isnan(out[0]) && isnan(out[1]), "finish with NaN l");
}

/* Found by test_errors_api: the block rules' binary search computed hi - lo + 1, which
 * overflowed for hi = INT64_MAX (N from the library API), so flash2 at M = INT64_MAX reported
 * "M is too small" (and UBSan: signed overflow) instead of the overflow of its counts.  Sizes
 * that large are now refused first; the search is checked at the largest accepted size. */
Test(errors_regress, regress_block_search_at_int64_max)
{
    fl_problem p = fl_problem_default();
    fl_blocks b;
    p.algo = FL_ALGO_FLASH2;
    p.N = FL_SIZE_MAX;
    p.d = 1;
    p.M = FL_SIZE_MAX;
    cr_expect_eq(fl_blocks_choose(&p, &b), FL_OK, "%s", fl_last_error());
    cr_expect(b.Br >= 1 && b.footprint <= p.M);
    p.algo = FL_ALGO_FLASH1;
    cr_expect_eq(fl_blocks_choose(&p, &b), FL_OK, "%s", fl_last_error());
    p.algo = FL_ALGO_STANDARD;
    cr_expect_eq(fl_blocks_choose(&p, &b), FL_OK, "%s", fl_last_error());
}

/* fuzz_problem finding: sizes beyond 2^61 - 1 from the library API (the CLI stops there) made
 * the mask's Nq + Nk overflow (UBSan, the masks module, src/mask/masks.c) and reached block rules and closed
 * forms never written for them; fl_problem_check now refuses every size field above
 * FL_SIZE_MAX, naming it. */
Test(errors_regress, regress_sizes_above_FL_SIZE_MAX_refused)
{
    fl_problem p = fl_problem_default();
    fl_result r;
    p.N = INT64_C(5836665117077491974);
    cr_expect_eq(fl_run(&p, FL_COUNT, NULL, NULL, &r), FL_EINVAL);
    cr_expect_str_eq(fl_last_error_raw(), "{N}: 5836665117077491974 is more than the largest size 2305843009213693951");
    p = fl_problem_default();
    p.heads = p.kv_heads = INT64_MAX;
    cr_expect_eq(fl_run(&p, FL_COUNT, NULL, NULL, &r), FL_EINVAL);
    cr_expect_str_eq(fl_last_error_raw(), "{heads}: 9223372036854775807 is more than the largest size 2305843009213693951");
    p = fl_problem_default();
    p.window_right = FL_SIZE_MAX + 1;
    cr_expect_eq(fl_run(&p, FL_COUNT, NULL, NULL, &r), FL_EINVAL);
    p.window_right = FL_SIZE_MAX; /* the largest is fine */
    p.N = 64;
    cr_expect_eq(fl_run(&p, FL_COUNT, NULL, NULL, &r), FL_OK, "%s", fl_last_error());
}

/* Found by review: an output path that cannot be written (FL_EIO) exited with status 1, not the
 * catalogue's 2.  (`flashlab report` also printed its whole table before failing: see below.) */
Test(errors_regress, regress_unwritable_output_is_status_2)
{
    EXPECT_BAD("--output: cannot create /proc/self/x.csv (No such file or directory)",
               "sweep", "--N", "64", "--output", "/proc/self/x.csv");
    static char *fake_gnuplot[] = {"FLASHLAB_GNUPLOT=true", NULL}; /* passes the gnuplot check */
    const char *const plot[] = {"flashlab", "plot", "--out", "/proc/no-such-dir", NULL};
    cli_result r = cli_run_in(NULL, fake_gnuplot, plot);
    expect_bad_r(&r, NULL, "--out: cannot create directory /proc/no-such-dir (No such file or directory)", "plot");
    cli_free(&r);
}

/* Found by review: `flashlab report --out DIR` with DIR unwritable printed the whole report on
 * stdout (a minute of sweeps) and only then failed: the directory is now checked first. */
Test(errors_regress, regress_report_checks_out_dir_first)
{
    static char *fake_gnuplot[] = {"FLASHLAB_GNUPLOT=true", NULL};
    const char *const report[] = {"flashlab", "report", "--out", "/proc/self", NULL};
    cli_result r = cli_run_in(NULL, fake_gnuplot, report);
    expect_bad_r(&r, NULL, "--out: cannot write in /proc/self (No such file or directory)", "report");
    cli_free(&r);
}

/* Found by review: a sweep grid of 4096 x 4096 x ... values was accepted and would run for days
 * (10^8 and more configurations); grids beyond FL_SWEEP_MAX_CONFIGS are refused at once. */
Test(errors_regress, regress_sweep_grid_too_large)
{
    EXPECT_BAD("--algo/--N/--d/--M/--Br/--Bc: the grid of 3 x 4096 x 4096 x 1 x 1 x 1 values has more than "
               "1000000 configurations; split the sweep",
               "sweep", "--algo", "standard,flash1,flash2", "--N", "1:4096:+1", "--d", "1:4096:+1");
}

/* fuzz_list finding: a value holding a newline was quoted into the message, which then spanned
 * two lines; control characters are now shown as '?'. */
Test(errors_regress, regress_message_is_one_line)
{
    EXPECT_BAD("--N: '12?3' is not an integer (whole numbers only, no '?')", "count", "--N", "12\n3");
    EXPECT_BAD_NAMES("--algo: unknown schedule 'flash1?' (choose", "count", "--algo", "flash1\r");
    EXPECT_BAD_NAMES("--N", "sweep", "--N", "64,\n128");
}

/* Found by review: the closed form of a multi-head problem was computed segment by segment and
 * tile by tile (batch x heads x N/Bc steps), so `--batch 512 --heads 512` at N = 10^6 took
 * minutes before --max-events could refuse it (4096 x 4096: hours, 2 GB).  Each segment shape is
 * now counted once; the timeout makes this test fail on the old code. */
Test(errors_regress, regress_many_heads_refused_fast)
{
    fl_time_limit(FL_T(20.0));
    EXPECT_BAD("--max-events: flash2 at N = 1000000, d = 64, M = 98304 makes 11892837318656 tile events "
               "(about 28 h here), more than the limit 3000000000; raise --max-events or M",
               "count", "--algo", "flash2", "--N", "1000000", "--d", "64", "--heads", "512", "--batch", "512");
}

/* Same finding, 4096 x 4096 (batch, head) problems: refused in milliseconds too (the segment
 * list it once built took 2 GB; segments are now computed on demand). */
Test(errors_regress, regress_segment_list_capped)
{
    fl_time_limit(FL_T(20.0));
    EXPECT_BAD_NAMES("--max-events: flash2 at N = 1000000, d = 64, M = 98304 makes",
                     "count", "--algo", "flash2", "--N", "1000000", "--d", "64", "--heads", "4096", "--batch", "4096");
}

/* Found by review: a random block table (--page-seed) shuffled an array as large as the pool, so
 * --pool-pages 2000000000000 failed with "out of memory" (exit status 1) and 10^8 pages took
 * 800 MB.  The shuffle is now sparse; it must give exactly the tables the dense one gave. */
Test(errors_regress, regress_sparse_block_table_shuffle)
{
    fl_problem p = fl_problem_default();
    fl_kv_cache p_kv = fl_kv_cache_default();
    p.kv_cache = &p_kv;
    fl_decode_geom g = {0};
    int64_t table[64], perm[200];
    for (uint64_t seed = 1; seed <= 300; seed++)
        for (int64_t pages = 1; pages <= 40; pages += 13) {
            p_kv.page_seed = seed;
            g.pages = pages;
            g.pool = pages + (int64_t)(seed % 150);
            cr_assert_eq(fl_decode_block_table(&p, &g, table), FL_OK);
            uint64_t st = seed; /* the dense Fisher-Yates the rule was written with */
            for (int64_t k = 0; k < g.pool; k++) perm[k] = k;
            for (int64_t k = 0; k < pages; k++) {
                const int64_t r = k + (int64_t)(fl_rng_next(&st) % (uint64_t)(g.pool - k));
                const int64_t t = perm[k];
                perm[k] = perm[r];
                perm[r] = t;
                cr_assert_eq(table[k], perm[k], "seed %llu, pool %lld, entry %lld",
                             (unsigned long long)seed, (long long)g.pool, (long long)k);
            }
        }
    EXPECT_OK("count", "--algo", "decode", "--N", "1", "--Nk", "100", "--page-size", "16",
              "--pool-pages", "2000000000000", "--page-seed", "5");
}

/* fuzz_cli finding: `count --algo flash2 --heads 6 --kv-heads 2 --N 230584007582 --max-events
 * 100000` timed out: the closed form of a multi-segment problem walks every row block
 * (N / Br = 10^9 steps) before --max-events can refuse it.  A cheap lower bound of the events
 * (every row block stores its output; a backward touches every key block) now refuses first. */
Test(errors_regress, regress_walking_closed_form_refused_fast)
{
    fl_time_limit(FL_T(20.0));
    EXPECT_BAD("--max-events: flash2 at N = 230584007582, d = 16, M = 98304 makes at least 4906042716 tile "
               "events (about 41 s here), more than the limit 100000; raise --max-events or M",
               "count", "--algo", "flash2", "--heads", "6", "--kv-heads", "2", "--N", "230584007582", "--d", "16",
               "--max-events", "100000");
    EXPECT_BAD_NAMES("--max-events: flash2 at N = 1, d = 64, M = 98304 makes at least", "count", "--algo", "flash2",
                     "--pass", "bwd", "--N", "1", "--Nk", "2305843009213693951", "--window", "0,0", "--causal",
                     "bottom-right", "--heads", "2", "--kv-heads", "1", "--max-events", "100000");
}

/* fuzz_cli finding: `count --algo decode --N 1071671015 --d 202 --max-events 100000` timed out
 * under the sanitizers (0.9 s natively, linear in N): decode's closed form walks every query
 * block.  Decode stores every row block's output, so ceil(N / Br) bounds its events. */
Test(errors_regress, regress_decode_many_queries_refused_fast)
{
    fl_time_limit(FL_T(20.0));
    EXPECT_BAD_NAMES("--max-events: decode at N = 2305843009213693951, d = 1, M = 98304 makes at least",
                     "count", "--algo", "decode", "--N", "2305843009213693951", "--d", "1", "--max-events", "100000");
    /* at d = 202 its cache of N keys does not even fit 64-bit counts: refused before that */
    EXPECT_BAD("--Nk/--d: a contiguous cache of 2305843009213693951 keys of d = 202 elements does not fit 64-bit counts",
               "count", "--algo", "decode", "--N", "2305843009213693951", "--d", "202", "--max-events", "100000");
}

/* fuzz_decode finding: a --Br for decode so large that not even Bc = 1 fits left Bc = 0, and the
 * paged rule computed P % 0: SIGFPE (exit 136) in the CLI, "division by zero" under UBSan. */
Test(errors_regress, regress_decode_no_key_block_fits)
{
    EXPECT_BAD("--Br: decode's query block Br = 40 needs 5369 elements of SRAM even with Bc = 1 "
               "(docs/model.md eq. FD), more than M = 3000",
               "count", "--algo", "decode", "--N", "40", "--Nk", "100", "--page-size", "16", "--Br", "40", "--M", "3000");
    EXPECT_BAD("--Br: decode's query block Br = 40 needs 5368 elements of SRAM even with Bc = 1 "
               "(docs/model.md eq. FD), more than M = 3000",
               "count", "--algo", "decode", "--N", "40", "--Nk", "100", "--Br", "40", "--M", "3000");
}

/* ---- fuzz_api findings in the library's closed forms and decode (fuzz/RESULTS.md B1-B4); the
 * timeouts make them fail on the code before the fixes. ------------------------------------ */

/* B1: blocksparse's closed form evaluates all Tr x Tc mask blocks (up to 2^32) before
 * --max-events is checked: 55 s to refuse this run of 1000 events at most. */
Test(errors_regress, regress_blocksparse_refused_before_its_mask_walk)
{
    fl_time_limit(FL_T(5.0));
    EXPECT_BAD_NAMES("--max-events", "count", "--algo", "blocksparse", "--N", "2000000", "--d", "16", "--M", "4000",
                     "--max-events", "1000");
}

/* B2: decode (and the other schedules the run module ran apart then) summed hbm_bytes without an
 * overflow check: this printed hbm_bytes = -5944681274676338432 (UBSan: signed overflow). */
Test(errors_regress, regress_decode_bytes_overflow_refused)
{
    EXPECT_BAD_NAMES("--N", "count", "--algo", "decode", "--N", "64", "--M", "2305843009213693951", "--Br", "2", "--Nk",
                     "1526130712772607");
}

/* B3: decode's events lower bound counts row blocks, not splits: with 2 x 10^9 splits its closed
 * form walks them all (2 minutes) before refusing. */
Test(errors_regress, regress_decode_splits_refused_fast)
{
    fl_time_limit(FL_T(5.0));
    EXPECT_BAD_NAMES("--max-events", "count", "--algo", "decode", "--N", "1", "--Nk", "2000000000", "--splits",
                     "2000000000", "--Bc", "1", "--max-events", "1000");
}

/* B4: flash1's closed form walks every key block (Nk / Bc = 3 x 10^8 here) though a 0,0 window
 * keeps 32 of them: 12.7 s for a run of 384 tile events. */
Test(errors_regress, regress_narrow_window_counted_fast)
{
    fl_time_limit(FL_T(5.0));
    EXPECT_OK("count", "--algo", "flash1", "--N", "32", "--d", "1", "--M", "27", "--Nk", "2000000000", "--window", "0,0",
              "--max-events", "1000");
}
