/* test_api_contract.c: what the C entry points of the notebooks' binding should do with
 * arguments outside their documented range, as fuzz/fuzz_api.c found (fuzz/RESULTS.md, findings
 * A1-A6): refuse them with a status, or, for the functions without one, answer without undefined
 * behaviour.  Each test says what it expects. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <flashlab/heads.h>
#include <flashlab/machine.h>
#include <flashlab/masks.h>
#include <flashlab/run.h>
#include <flashlab/blocksparse_mask.h>
#include <flashlab/decode.h>

/* A1: fl_load adds nr*nc to int64 counters unchecked; four loads of a 2^31 x 2^31 tile overflow
 * them (UBSan: machine.c, signed overflow).  Expected: FL_EOVERFLOW once a counter would not
 * fit, the counters unchanged. */
Test(api_contract, machine_counters_do_not_overflow)
{
    fl_machine *m = fl_machine_alloc(INT64_C(1) << 62, FL_COUNT, "t");
    int t;
    fl_buf *b;
    cr_assert_eq(fl_tensor_add(m, "T", INT64_C(1) << 31, INT64_C(1) << 31, 2, &t), FL_OK);
    cr_assert_eq(fl_sram_alloc(m, "b", INT64_C(1) << 31, INT64_C(1) << 31, &b), FL_OK);
    fl_status s = FL_OK;
    for (int i = 0; i < 4 && !s; i++) s = fl_load(m, b, t, 0, 0, INT64_C(1) << 31, INT64_C(1) << 31);
    cr_expect_eq(s, FL_EOVERFLOW);
    cr_expect_geq(fl_machine_reads(m), 0);
    fl_machine_free(m);
}

/* A2: fl_mask_keep and fl_mask_tile compute j - i, r0 + nr - 1, c0 + nc - 1 unchecked; the
 * binding passes the user's i, j, r0, nr, c0, nc through.  Expected: a query or tile outside the
 * matrix keeps nothing (0, FL_TILE_EMPTY), without overflow. */
Test(api_contract, mask_queries_outside_the_matrix)
{
    fl_mask mk;
    cr_assert_eq(fl_mask_init(&mk, 4, 4, FL_CAUSAL_TOP_LEFT, -1, -1), FL_OK);
    cr_expect_eq(fl_mask_keep(&mk, INT64_MIN, 1), 0);
    cr_expect_eq(fl_mask_tile(&mk, INT64_MAX, 2, 0, 1), FL_TILE_EMPTY);
}

/* A3: fl_mask_init adds Nq + Nk unchecked (UBSan at INT64_MAX).  Expected: lengths above
 * FL_SIZE_MAX refused as fl_problem_check refuses them. */
Test(api_contract, mask_init_refuses_lengths_above_the_size_limit)
{
    fl_mask mk;
    cr_expect_eq(fl_mask_init(&mk, INT64_MAX, INT64_MAX, FL_CAUSAL_NONE, 5, 5), FL_EINVAL);
}

/* A4: fl_cu_seqlens_check reads cu[0] when n = 0 (batch = -1 passes n == batch + 1), and computes
 * batch + 1 unchecked (INT64_MAX).  Expected: FL_EINVAL for batch < 1 or n < 2, without reading. */
Test(api_contract, cu_seqlens_check_with_no_entries)
{
    int64_t *none = calloc(1, 1); /* less than one entry: a read of cu[0] is an ASan report */
    cr_expect_eq(fl_cu_seqlens_check("--cu-seqlens-q", none, 0, -1, 0), FL_EINVAL);
    int64_t one = 0;
    cr_expect_eq(fl_cu_seqlens_check("--cu-seqlens-q", &one, 1, INT64_MAX, 0), FL_EINVAL);
    free(none);
}

/* A4 (heads): fl_kv_head divides by Hq / Hkv, so Hkv = 0 or Hkv > Hq divides by zero (SIGFPE).
 * heads.h makes a passing fl_heads_check the caller's duty; the binding checks first.  Expected,
 * if the function is to take any argument: -1 for a pair fl_heads_check refuses. */
Test(api_contract, kv_head_of_an_invalid_pair)
{
    cr_expect_eq(fl_kv_head(3, 2, 4), -1);
    cr_expect_eq(fl_kv_head(3, 2, 0), -1);
}

/* A5: decode's K cache of Nk (or pool x page-size) rows of d that does not fit 64 bits is
 * refused by the machine, "decode: tensor K must have a positive size that fits 64 bits", naming
 * no option.  Expected: FL_EINVAL naming --Nk or --pool-pages from the problem check. */
Test(api_contract, decode_cache_too_large_names_the_option)
{
    fl_problem p = fl_problem_default();
    p.algo = FL_ALGO_DECODE;
    p.N = 16, p.d = 16, p.Nk = FL_SIZE_MAX - 1, p.window_left = p.window_right = 0;
    p.M = INT64_C(1) << 58, p.max_events = 2000;
    fl_result r;
    cr_expect_eq(fl_run(&p, FL_COUNT, NULL, NULL, &r), FL_EINVAL);
    cr_expect(fl_last_error_raw()[0] == '{', "names the quantity first: %s", fl_last_error_raw());
}

/* A6: decode allocated its block table (8 bytes a page) whatever its size: with a window the
 * events stay few while the pages are 4.5 x 10^15, and the allocation of 36 PB failed ("out of
 * memory"; under ASan an abort).  A count-only run needs no table (the counts do not depend on
 * where the pages lie): it now runs, holds nothing, and counts its closed form.  A compute run of
 * such a cache is refused by its size (FL_COMPUTE_MAX_VALUES) before any table exists. */
Test(api_contract, decode_block_table_too_large_is_not_held)
{
    fl_problem p = fl_problem_default();
    fl_kv_cache p_kv = fl_kv_cache_default();
    p.kv_cache = &p_kv;
    p.algo = FL_ALGO_DECODE;
    p.N = 16, p.d = 4, p.M = 45, p.Br = 3, p.Nk = INT64_C(289641049570148352);
    p.window_left = 4, p.window_right = 45, p_kv.page_size = 64, p.max_events = 512;
    fl_result r;
    cr_assert_eq(fl_run(&p, FL_COUNT, NULL, NULL, &r), FL_OK, "%s", fl_last_error());
    cr_expect_eq(r.total, r.closed.total);
    cr_expect_eq(r.events, r.closed.events);
    p.max_macs = 0;
    cr_expect_eq(fl_run(&p, FL_COMPUTE, NULL, NULL, &r), FL_EINVAL);
    cr_expect(strstr(fl_last_error(), "compute run"), "%s", fl_last_error());
}

/* The library refuses a compute run over its multiply-add limit (the binding has no CLI to
 * check it), naming max_macs, before any work; 0 lifts it. */
Test(api_contract, compute_runs_have_a_work_limit)
{
    fl_problem p = fl_problem_default();
    p.N = 131072, p.d = 64;
    fl_result r;
    cr_assert_eq(fl_run(&p, FL_COMPUTE, NULL, NULL, &r), FL_EINVAL);
    cr_expect(strstr(fl_last_error_raw(), "{max_macs}: a compute run of flash2 at N = 131072"), "%s", fl_last_error_raw());
    cr_expect_eq(fl_compute_macs(&p), INT64_C(4) * 131072 * 131072 * 64);
    p.N = 64, p.max_macs = 4 * 64 * 64 * 64 - 1;
    cr_expect_eq(fl_run(&p, FL_COMPUTE, NULL, NULL, &r), FL_EINVAL, "one below the estimate is refused");
    p.max_macs = 4 * 64 * 64 * 64;
    cr_expect_eq(fl_run(&p, FL_COMPUTE, NULL, NULL, &r), FL_OK, "%s", fl_last_error());
}
