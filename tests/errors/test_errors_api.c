/* test_errors_api.c: the catalogue of bad inputs to the library API (docs/errors.md, section
 * "Library API"): each call returns the error code the catalogue gives, fl_last_error() holds
 * exactly its one line, and nothing is half done (no result, no leak: see the sanitizer build). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attention_ref.h"
#include "machine.h"
#include "ops.h"
#include "run.h"

/* The flag spelling of a quantity, as the CLI renders it (cli/main.c): the expected messages
 * below are written as a user of the CLI reads them. */
static void as_flag(const char *name, char *buf, size_t cap, void *ctx)
{
    size_t n = (size_t)snprintf(buf, cap, "--%s", name);
    for (size_t i = 2; i < n && i < cap; i++)
        if (buf[i] == '_') buf[i] = '-';
}

/* This thread's last message with its quantities spelled as flags. */
static const char *as_cli(void)
{
    static char buf[1100];
    return fl_error_render(fl_last_error_raw(), buf, sizeof buf, as_flag, NULL);
}

/* Runs p in count mode and expects status `code` with message `msg` exactly (quantities spelled
 * as the CLI's flags). */
static void expect_run_error(fl_problem p, fl_mode mode, fl_status code, const char *msg)
{
    fl_result r;
    fl_status s = fl_run(&p, mode, NULL, NULL, &r);
    cr_expect_eq(s, code, "status %d (%s), want %d", s, fl_last_error(), code);
    cr_expect_str_eq(as_cli(), msg);
}

Test(errors_api, problem_fields)
{
    fl_problem p = fl_problem_default();
    p.N = 0;
    expect_run_error(p, FL_COUNT, FL_EINVAL, "--N: sequence length must be an integer >= 1");
    p = fl_problem_default();
    p.d = -3;
    expect_run_error(p, FL_COUNT, FL_EINVAL, "--d: head dimension must be an integer >= 1");
    p = fl_problem_default();
    p.M = 0;
    expect_run_error(p, FL_COMPUTE, FL_EINVAL, "--M: SRAM capacity must be an integer >= 1 element");
    p = fl_problem_default();
    p.Br = -1;
    expect_run_error(p, FL_COUNT, FL_EINVAL, "--Br: block size must be an integer >= 1");
    p = fl_problem_default();
    p.Bc = INT64_MIN;
    expect_run_error(p, FL_COUNT, FL_EINVAL, "--Bc: block size must be an integer >= 1");
    p = fl_problem_default();
    p.elem_bytes = 3;
    expect_run_error(p, FL_COUNT, FL_EINVAL, "--dtype: element size must be 1 (fp8), 2, 4 or 8 bytes");
    p = fl_problem_default();
    p.max_events = -1;
    expect_run_error(p, FL_COUNT, FL_EINVAL, "--max-events: must be >= 0 (0 = no limit)");
    p = fl_problem_default();
    p.algo = (fl_algo)fl_schedule_count();
    expect_run_error(p, FL_COUNT, FL_EINVAL, "--algo: unknown schedule");
    p.algo = (fl_algo)-1;
    expect_run_error(p, FL_COUNT, FL_EINVAL, "--algo: unknown schedule");
}

Test(errors_api, algo_names)
{
    fl_algo a;
    char want[1200];
    snprintf(want, sizeof want, "--algo: unknown schedule 'Flash_X' (choose %s)", fl_algo_choices());
    cr_expect_eq(fl_algo_parse("Flash_X", &a), FL_EINVAL);
    cr_expect_str_eq(as_cli(), want);
    cr_expect_eq(fl_algo_parse(NULL, &a), FL_EINVAL);
    cr_expect_eq(fl_algo_parse("", &a), FL_EINVAL);
    cr_expect_null(fl_algo_name((fl_algo)fl_schedule_count()));
    cr_expect_null(fl_algo_name((fl_algo)-1));
}

Test(errors_api, capacity_and_overflow)
{
    fl_problem p = fl_problem_default();
    p.algo = FL_ALGO_FLASH1;
    p.M = 262;
    expect_run_error(p, FL_COUNT, FL_ECAPACITY,
                     "--M: flash1 needs at least 263 elements of SRAM for its smallest tiles "
                     "(Br = Bc = 1, d = 64); M = 262 is too small");
    p = fl_problem_default();
    p.N = FL_SIZE_MAX;
    p.d = 1;
    p.M = FL_SIZE_MAX;
    expect_run_error(p, FL_COUNT, FL_EOVERFLOW,
                     "--N/--d: counts for N = 2305843009213693951, d = 1 would overflow 64-bit arithmetic");
    p.M = FL_SIZE_MAX + 1;
    expect_run_error(p, FL_COUNT, FL_EINVAL, "--M: 2305843009213693952 is more than the largest size 2305843009213693951");
    p = fl_problem_default();
    p.algo = FL_ALGO_FLASH2;
    p.N = 1 << 22;
    p.max_macs = 0; /* the size rule, with the work limit lifted (it refuses first otherwise) */
    expect_run_error(p, FL_COMPUTE, FL_EINVAL,
                     "--N/--d: a compute run of flash2 at N = 4194304, d = 64 (4194304 query rows over all heads) would hold more than "
                     "134217728 values in HBM; use count (no arithmetic) for sizes this large");
}

/* Variants not implemented by this build are refused, never ignored.  (These tests change as
 * the variants land: each value then moves to the catalogue of its own rules.) */
Test(errors_api, variants_refused_until_implemented)
{
    fl_problem p = fl_problem_default();
    p.kv_heads = 5;
    fl_result r;
    cr_expect_eq(fl_run(&p, FL_COUNT, NULL, NULL, &r), FL_EINVAL);
    cr_expect(fl_last_error_raw()[0] == '{', "names the quantity first: %s", fl_last_error_raw());
}

Test(errors_api, machine)
{
    cr_expect_null(fl_machine_alloc(0, FL_COUNT, "x"));
    cr_expect_str_eq(fl_last_error_raw(), "{M}: SRAM capacity must be a positive number of elements (got 0)");
    cr_expect_null(fl_machine_alloc(-5, FL_COMPUTE, "x"));
    fl_machine_free(NULL); /* a no-op */

    fl_machine *m = fl_machine_alloc(100, FL_COMPUTE, "sched");
    fl_buf *a, *b;
    int Q;
    cr_assert_eq(fl_tensor_add(m, "Q", 10, 4, 2, &Q), FL_OK);
    cr_expect_eq(fl_tensor_add(m, "Z", 0, 4, 2, &Q), FL_EINVAL);
    cr_expect_str_eq(as_cli(), "sched: tensor Z must have a positive size that fits 64 bits");
    cr_expect_eq(fl_tensor_add(m, "Z", INT64_MAX, 2, 2, &Q), FL_EINVAL);
    cr_assert_eq(fl_sram_alloc(m, "A", 8, 10, &a), FL_OK);
    cr_expect_eq(fl_sram_alloc(m, "B", 3, 7, &b), FL_ECAPACITY);
    cr_expect_str_eq(as_cli(), "sched: SRAM capacity M = 100 elements exceeded allocating B (3x7=21) "
                                      "with 80 live [A 8x10=80]");
    cr_expect_null(b);
    cr_expect_eq(fl_sram_alloc(m, "B", INT64_MAX, INT64_MAX, &b), FL_EINVAL);
    cr_expect_eq(fl_sram_alloc(m, "B", -1, 2, &b), FL_EINVAL);
    /* tiles outside the tensor or the buffer: FL_EBOUNDS, nothing counted */
    cr_expect_eq(fl_load(m, a, 0, 8, 0, 3, 4), FL_EBOUNDS);
    cr_expect_eq(fl_load(m, a, 0, 0, 0, 9, 4), FL_EBOUNDS);
    cr_expect_eq(fl_load(m, a, 0, INT64_MAX, 0, 1, 1), FL_EBOUNDS);
    cr_expect_eq(fl_load(m, a, 0, -1, 0, 1, 1), FL_EBOUNDS);
    cr_expect_eq(fl_load(m, a, 0, 0, 0, 0, 1), FL_EBOUNDS);
    cr_expect_eq(fl_store(m, a, 3, 0, 0, 1, 1), FL_EBOUNDS);
    cr_expect_eq(fl_machine_reads(m) + fl_machine_writes(m) + fl_machine_events(m), 0);
    fl_sram_free(m, a);
    cr_expect_eq(fl_load(m, a, 0, 0, 0, 1, 1), FL_EBOUNDS); /* a buffer no longer live */
    cr_expect_str_eq(as_cli(), "sched: load of Q through a buffer that is not live");
    fl_sram_free(m, NULL);
    fl_machine_free(m);
}

Test(errors_api, softmax_and_reference)
{
    const double s[2] = {0.5, 1.5}, V[4] = {1, 2, 3, 4};
    double out[2], O[4];
    cr_expect_eq(fl_osm_tiled(s, 2, V, 2, 0, out), FL_EINVAL);
    cr_expect_str_eq(as_cli(), "tile: size must be >= 1 (got 0)");
    cr_expect_eq(fl_osm_tiled(s, 0, V, 2, 1, out), FL_EINVAL);
    cr_expect_str_eq(as_cli(), "row: needs at least one score and one value column");
    cr_expect_eq(fl_ref_attention(0, 2, 2, 2, V, V, V, 1.0, NULL, NULL, O, NULL), FL_EINVAL);
    cr_expect_str_eq(as_cli(), "reference: sizes must be >= 1");
}

/* The NaN / infinity rule of docs/errors.md on the library's data paths. */
Test(errors_api, nan_and_inf_inputs)
{
    const double V[4] = {1.5, -2.25, 0.75, 3.125};
    double out[2], O[4], L[2];
    /* Q with a NaN: that row's output and logsumexp are NaN, the other row is untouched */
    const double Q[4] = {NAN, 0.5, 0.25, -0.5}, K[4] = {0.5, 1.0, -1.0, 0.25};
    cr_assert_eq(fl_ref_attention(2, 2, 2, 2, Q, K, V, 1.0, NULL, NULL, O, L), FL_OK);
    cr_expect(isnan(O[0]) && isnan(O[1]) && isnan(L[0]));
    cr_expect(isfinite(O[2]) && isfinite(O[3]) && isfinite(L[1]));
    /* a NaN value with a nonzero weight propagates into the output */
    const double s[2] = {0.0, 0.0}, Vn[4] = {NAN, 1.0, 2.0, 3.0};
    cr_expect_eq(fl_osm_tiled(s, 2, Vn, 2, 1, out), FL_OK);
    cr_expect(isnan(out[0]) && out[1] == 2.0, "%g %g", out[0], out[1]);
    /* -inf is a masked score: it and its value contribute nothing */
    const double sm[2] = {-INFINITY, 0.0}, Vm[4] = {NAN, NAN, 2.0, 3.0};
    cr_expect_eq(fl_osm_tiled(sm, 2, Vm, 2, 2, out), FL_OK);
    cr_expect(out[0] == 2.0 && out[1] == 3.0, "%g %g", out[0], out[1]);
    /* finite scores as large as a double goes: the shift by the maximum keeps them exact */
    const double big[2] = {1e308, -1e308};
    cr_expect_eq(fl_osm_tiled(big, 2, V, 2, 1, out), FL_OK);
    cr_expect(out[0] == 1.5 && out[1] == -2.25, "%g %g", out[0], out[1]);
}
