/* test_decode.c: decode with a KV cache (flash-decoding on the machine): counts equal eq. (CD)
 * and values match the reference (bottom-right and other masks via include/flashlab/masks.h) over a
 * grid of query and cache lengths, contiguous and paged caches, page sizes and splits; the
 * paged layout gives the contiguous values bit for bit; KV reads dominate a one-token decode;
 * the padding of the last page must be finite (and is checked); bad tables are refused. */
#include "quantity.h"
#include "grid.h"

#include <stdlib.h>
#include <sys/wait.h>

#include "examples.h"
#include <flashlab/decode.h>

static fl_problem decode_problem(int64_t Nq, int64_t Nk, int64_t d, int64_t M)
{
    fl_problem p = fl_problem_default();
    p.algo = FL_ALGO_DECODE;
    p.N = Nq;
    p.Nk = Nk;
    p.d = d;
    p.M = M;
    p.causal = FL_CAUSAL_BOTTOM_RIGHT;
    return p;
}

Test(decode, closed_form_and_values_over_a_grid)
{
    const int64_t Nqs[] = {1, 3, 8, 37}, Nks[] = {1, 5, 64, 129, 700}, ds[] = {4, 16};
    const int64_t Ps[] = {0, 4, 16, 48}, Ss[] = {1, 2, 3, 7};
    const fl_causal cs[] = {FL_CAUSAL_BOTTOM_RIGHT, FL_CAUSAL_NONE, FL_CAUSAL_TOP_LEFT};
    for (size_t a = 0; a < 4; a++)
        for (size_t b = 0; b < 5; b++)
            for (size_t c = 0; c < 2; c++)
                for (size_t e = 0; e < 4; e++)
                    for (size_t f = 0; f < 4; f++)
                        for (size_t g = 0; g < 3; g++) {
                            fl_problem p = decode_problem(Nqs[a], Nks[b], ds[c], c ? 1500 : 400);
                            fl_kv_cache p_kv = fl_kv_cache_default();
                            p.kv_cache = &p_kv;
                            p_kv.page_size = Ps[e];
                            p_kv.page_seed = Ps[e] ? (uint64_t)(e * 3 + b) : 0; /* identity (0), shuffled */
                            p_kv.splits = Ss[f];
                            p.causal = cs[g];
                            check_exact(&p, 1, NULL);
                        }
}

Test(decode, windows_and_more_queries_than_keys)
{
    const int64_t win[][2] = {{0, 0}, {3, -1}, {-1, 2}, {10, 4}};
    for (size_t w = 0; w < 4; w++)
        for (int64_t Nq = 1; Nq <= 40; Nq += 13)
            for (int64_t S = 1; S <= 4; S += 3) {
                fl_problem p = decode_problem(Nq, 30, 8, 600);
                fl_kv_cache p_kv = fl_kv_cache_default();
                p.kv_cache = &p_kv;
                p.window_left = win[w][0];
                p.window_right = win[w][1];
                p_kv.splits = S;
                p_kv.page_size = (Nq % 2) ? 8 : 0;
                check_exact(&p, 1, NULL);
            }
}

/* Paged and contiguous caches hold the same logical keys (the inputs are drawn the same way);
 * with the same key tiles and one split they must give the same output to the last bit, so
 * the errors against the shared reference are identical. */
Test(decode, paged_layout_gives_the_contiguous_values)
{
    const int64_t Nks[] = {37, 128, 300};
    for (size_t k = 0; k < 3; k++)
        for (int64_t S = 1; S <= 3; S++) {
            fl_problem p = decode_problem(4, Nks[k], 16, 4000);
            fl_kv_cache p_kv = fl_kv_cache_default();
            p.kv_cache = &p_kv;
            p_kv.splits = S;
            p_kv.page_size = 32;
            fl_result id, sh, ct;
            cr_assert_eq(fl_run(&p, FL_COMPUTE, NULL, NULL, &id), FL_OK, "%s", fl_last_error());
            p_kv.page_seed = 99;
            p_kv.pool_pages = 40;
            cr_assert_eq(fl_run(&p, FL_COMPUTE, NULL, NULL, &sh), FL_OK, "%s", fl_last_error());
            cr_expect_eq(sh.max_abs_err, id.max_abs_err, "shuffled pages changed the values");
            cr_expect_eq(sh.rel_err, id.rel_err);
            if (S > 1) continue; /* splits of whole pages vs of tiles: different merge order */
            p_kv.page_size = 0;
            p_kv.page_seed = 0;
            p_kv.pool_pages = 0;
            p.Bc = id.b.Bc; /* the same key tiles */
            cr_assert_eq(fl_run(&p, FL_COMPUTE, NULL, NULL, &ct), FL_OK, "%s", fl_last_error());
            cr_expect_eq(ct.max_abs_err, id.max_abs_err, "paged %g vs contiguous %g",
                         id.max_abs_err, ct.max_abs_err);
            cr_expect_eq(ct.lse_rel_err, id.lse_rel_err);
        }
}

Test(decode, kv_reads_dominate_one_token_decode)
{
    const int64_t Nk = 32768, d = 128;
    for (int64_t S = 1; S <= 16; S *= 4) {
        fl_problem p = decode_problem(1, Nk, d, 98304);
        fl_kv_cache p_kv = fl_kv_cache_default();
        p.kv_cache = &p_kv;
        p_kv.splits = S;
        p_kv.page_size = 256;
        fl_result r;
        check_exact(&p, 0, &r);
        int64_t kv = 0;
        for (int t = 0; t < r.ntensors; t++)
            if (!strcmp(r.t[t].name, "K") || !strcmp(r.t[t].name, "V")) kv += r.t[t].reads;
        cr_expect_eq(kv, 2 * Nk * d, "K/V read once each");
        cr_expect_gt((double)kv / (double)r.total, 0.99, "S = %lld: K/V are %g of the traffic",
                     (long long)S, (double)kv / (double)r.total);
    }
}

Test(decode, padding_of_the_last_page_must_be_finite)
{
    /* Nk = 50, pages of 16: the last page holds keys 48, 49 and 14 padding rows; tiles of 8
     * load rows 48..55, so padding rows 2..7 of that page are loaded (and masked) */
    fl_problem p = decode_problem(2, 50, 8, 2000);
    fl_kv_cache p_kv = fl_kv_cache_default();
    p.kv_cache = &p_kv;
    p_kv.page_size = 16;
    p.Bc = 8;
    p_kv.page_seed = 7;
    fl_result r;
    cr_expect_eq(fl_run(&p, FL_COMPUTE, NULL, NULL, &r), FL_OK, "%s", fl_last_error());
    cr_expect(r.rel_err <= FL_TEST_REL_TOL); /* unused pages hold NaN: never read */
    p_kv.pad_value = NAN;
    cr_expect_eq(fl_run(&p, FL_COMPUTE, NULL, NULL, &r), FL_EINVAL);
    cr_expect(strstr(fl_last_error(), "row 2 of physical page") != NULL, "%s", fl_last_error());
    cr_expect(strstr(fl_last_error(), "logical page 3") != NULL, "%s", fl_last_error());
    /* Nk = 48: the tiles end at the sequence, no padding row is loaded: NaN there is harmless */
    p.Nk = 48;
    cr_expect_eq(fl_run(&p, FL_COMPUTE, NULL, NULL, &r), FL_OK, "%s", fl_last_error());
    cr_expect(r.rel_err <= FL_TEST_REL_TOL);
}

static void refused(fl_problem p, const char *option)
{
    fl_result r;
    cr_expect_eq(fl_run(&p, FL_COUNT, NULL, NULL, &r), FL_EINVAL, "%s accepted", option);
    cr_expect(fl_test_names(option), "%s: %s", option, fl_last_error());
}

Test(decode, bad_caches_are_refused_with_the_rule)
{
    const int64_t outside[] = {0, 1, 9}, dup[] = {0, 1, 1}, shorter[] = {0, 1};
    fl_problem p = decode_problem(1, 40, 8, 2000);
    fl_kv_cache p_kv = fl_kv_cache_default();
    p.kv_cache = &p_kv;
    p_kv.page_size = 16;
    p_kv.pool_pages = 8;
    p_kv.block_table = outside;
    p_kv.block_table_len = 3;
    refused(p, "--block-table"); /* 9 is outside a pool of 8 pages */
    p_kv.block_table = dup;
    refused(p, "--block-table");
    p_kv.block_table = shorter;
    p_kv.block_table_len = 2;
    refused(p, "--block-table");
    p = decode_problem(1, 40, 8, 2000);
    p_kv = fl_kv_cache_default(), p.kv_cache = &p_kv;
    p_kv.page_size = -1;
    refused(p, "--page-size");
    p_kv.page_size = (INT64_C(1) << 32) + 1; /* a divisor search over P stays cheap */
    refused(p, "--page-size");
    p_kv.page_size = 16;
    p_kv.pool_pages = 2;
    refused(p, "--pool-pages");
    p_kv.pool_pages = 0;
    p_kv.splits = 0;
    refused(p, "--splits");
    p_kv.splits = 1;
    p.Bc = 5;
    refused(p, "--Bc"); /* 5 does not divide 16 */
    p = decode_problem(1, 40, 8, 2000);
    p_kv = fl_kv_cache_default(), p.kv_cache = &p_kv;
    p_kv.pad_value = 1.0;
    refused(p, "--pad");
    p = decode_problem(1, 40, 8, 2000);
    p_kv = fl_kv_cache_default(), p.kv_cache = &p_kv;
    p.algo = FL_ALGO_FLASH2;
    p.causal = FL_CAUSAL_NONE;
    p.Nk = 0;
    p_kv.splits = 2;
    refused(p, "--splits");
}

Test(decode, cli_count_and_run)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s run --algo decode --N 2 --Nk 300 --d 16 --page-size 64 "
                              "--page-seed 3 --splits 3 --causal bottom-right > /dev/null", FLASHLAB_CLI);
    cr_expect_eq(system(cmd), 0, "%s", cmd);
    snprintf(cmd, sizeof cmd, "%s count --algo decode,flash2 --N 4 --Nk 4 --format csv > /dev/null",
             FLASHLAB_CLI);
    cr_expect_eq(system(cmd), 0, "%s", cmd);
    snprintf(cmd, sizeof cmd, "%s count --algo decode --N 1 --Nk 40 --page-size 16 "
                              "--block-table 0,1,7 --pool-pages 4 2> /dev/null", FLASHLAB_CLI);
    const int st = system(cmd);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 2, "%s: status %d", cmd, st);
}

Test(decode, example_nan_padding_passes)
{
    FILE *devnull = fopen("/dev/null", "w");
    const fl_example *e = fl_example_find("nan-padding");
    cr_assert_not_null(e);
    cr_expect_eq(e->run(devnull), 1, "flashlab example nan-padding fails");
    fclose(devnull);
}

Test(decode, example_decode_traffic_passes)
{
    FILE *devnull = fopen("/dev/null", "w");
    const fl_example *e = fl_example_find("decode-traffic");
    cr_assert_not_null(e);
    cr_expect_eq(e->run(devnull), 1, "flashlab example decode-traffic fails");
    fclose(devnull);
}

/* One decode step (all queries in one block, every tile kept): the headline of eq. (CD),
 * written out here independently of src/schedules/decode.c:
 *   reads  = S' Nq d + 2 d Nk' + pages + [S' > 1] S' Nq (d + 2)
 *   writes = [S' > 1] S' Nq (d + 2) + Nq (d + 1)
 * with Nk' = Nk (contiguous) or ceil(Nk / Bc) Bc (paged: whole tiles). */
Test(decode, one_step_headline_formula)
{
    const int64_t Nks[] = {1, 100, 1000, 4097}, Ss[] = {1, 2, 5, 64}, Ps[] = {0, 16, 256};
    for (size_t a = 0; a < 4; a++)
        for (size_t b = 0; b < 4; b++)
            for (size_t c = 0; c < 3; c++)
                for (int64_t Nq = 1; Nq <= 4; Nq += 3) {
                    fl_problem p = decode_problem(Nq, Nks[a], 32, 20000);
                    fl_kv_cache p_kv = fl_kv_cache_default();
                    p.kv_cache = &p_kv;
                    p_kv.splits = Ss[b];
                    p_kv.page_size = Ps[c];
                    fl_result r;
                    check_exact(&p, 0, &r);
                    const int64_t d = 32, Nk = Nks[a], Bc = r.b.Bc, P = Ps[c];
                    const int64_t U = P ? P : Bc, units = (Nk + U - 1) / U;
                    const int64_t per = (units + (Ss[b] < units ? Ss[b] : units) - 1) / (Ss[b] < units ? Ss[b] : units);
                    const int64_t S = (units + per - 1) / per;
                    const int64_t Nkp = P ? (Nk + Bc - 1) / Bc * Bc : Nk, pages = P ? (Nk + P - 1) / P : 0;
                    const int64_t part = S > 1 ? S * Nq * (d + 2) : 0;
                    cr_assert_eq(r.b.Br, Nq);
                    cr_expect_eq(r.reads, S * Nq * d + 2 * d * Nkp + pages + part,
                                 "Nq %lld Nk %lld S %lld P %lld: reads %lld", (long long)Nq, (long long)Nk,
                                 (long long)Ss[b], (long long)P, (long long)r.reads);
                    cr_expect_eq(r.writes, part + Nq * (d + 1));
                }
}

/* The same comparison value by value: paged (identity or shuffled table) and contiguous with
 * the same key tiles and one split give the same doubles, bit for bit. */
Test(decode, paged_equals_contiguous_bit_for_bit)
{
    const int64_t Nq = 5, d = 16, Nks[] = {37, 128, 300};
    double *a = malloc(Nq * d * sizeof *a), *c = malloc(Nq * d * sizeof *c);
    cr_assert(a && c);
    for (size_t k = 0; k < 3; k++)
        for (uint64_t seed = 0; seed < 3; seed++) {
            fl_problem p = decode_problem(Nq, Nks[k], d, 4000);
            fl_kv_cache p_kv = fl_kv_cache_default();
            p.kv_cache = &p_kv;
            p_kv.page_size = 32;
            p_kv.page_seed = seed; /* 0: identity table */
            p_kv.pool_pages = 30;
            fl_result r;
            cr_assert_eq(fl_run_values(&p, &(fl_values){.O = a}, &r), FL_OK, "%s", fl_last_error());
            cr_expect(r.rel_err <= FL_TEST_REL_TOL);
            const int64_t Bc = r.b.Bc;
            p_kv.page_size = p_kv.page_seed = p_kv.pool_pages = 0;
            p.Bc = Bc;
            cr_assert_eq(fl_run_values(&p, &(fl_values){.O = c}, &r), FL_OK, "%s", fl_last_error());
            cr_expect_eq(memcmp(a, c, Nq * d * sizeof *a), 0, "Nk %lld, page seed %llu: paged != contiguous",
                         (long long)Nks[k], (unsigned long long)seed);
        }
    for (int64_t S = 2; S <= 5; S += 3) { /* splits: any two placements of the pages agree */
        fl_problem p = decode_problem(Nq, 300, d, 4000);
        fl_kv_cache p_kv = fl_kv_cache_default();
        p.kv_cache = &p_kv;
        p_kv.page_size = 32;
        p_kv.pool_pages = 30;
        p_kv.splits = S;
        fl_result r;
        cr_assert_eq(fl_run_values(&p, &(fl_values){.O = a}, &r), FL_OK, "%s", fl_last_error());
        p_kv.page_seed = 17;
        cr_assert_eq(fl_run_values(&p, &(fl_values){.O = c}, &r), FL_OK, "%s", fl_last_error());
        cr_expect_eq(memcmp(a, c, Nq * d * sizeof *a), 0, "S = %lld: shuffled pages changed values", (long long)S);
    }
    free(a);
    free(c);
}
