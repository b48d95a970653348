/* test_listparse.c: the value lists and ranges of `flashlab sweep` (cli/listparse.h):
 * what they expand to, and every malformed form refused with a message naming the option. */
#include <criterion/criterion.h>
#include <string.h>

#include "listparse.h"
#include "quantity.h"    /* cli/, linked from flashlab_cli_lib */

static void expect(const char *s, const int64_t *want, int n)
{
    fl_list l;
    fl_status st = fl_list_parse("--N", s, 1, INT64_MAX, &l);
    cr_assert_eq(st, FL_OK, "'%s': %s", s, fl_last_error());
    cr_assert_eq(l.n, n, "'%s' gave %d values, want %d", s, l.n, n);
    for (int i = 0; i < n; i++) cr_assert_eq(l.v[i], want[i], "'%s' value %d", s, i);
    fl_list_free(&l);
}

static void refuse(const char *s, const char *words)
{
    fl_list l = {(int64_t *)1, 7};
    fl_status st = fl_list_parse("--N", s, 1, INT64_MAX / 4, &l);
    cr_assert_eq(st, FL_EINVAL, "'%s' was accepted", s);
    cr_assert(strstr(fl_last_error(), "--N:"), "'%s': message '%s' does not name --N", s, fl_last_error());
    cr_assert(strstr(fl_last_error(), words), "'%s': message '%s' lacks '%s'", s, fl_last_error(), words);
    cr_assert(l.v == NULL && l.n == 0, "'%s': list not emptied on error", s);
}

Test(listparse, single_values_and_comma_lists)
{
    expect("512", (int64_t[]){512}, 1);
    expect("512,1024,4096", (int64_t[]){512, 1024, 4096}, 3);
    expect("4096,512", (int64_t[]){4096, 512}, 2); /* the order written is kept */
}

Test(listparse, geometric_ranges_include_the_end_when_reached)
{
    expect("64:65536:x2", (int64_t[]){64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536}, 11);
    expect("3:100:x3", (int64_t[]){3, 9, 27, 81}, 4); /* 243 > 100: stops before */
    expect("8:8:x2", (int64_t[]){8}, 1);
    expect("7:63:x4", (int64_t[]){7, 28}, 2);
}

Test(listparse, arithmetic_ranges_and_mixtures)
{
    expect("16:64:+16", (int64_t[]){16, 32, 48, 64}, 4);
    expect("5:17:+5", (int64_t[]){5, 10, 15}, 3);
    expect("1,128:1024:x2,3000", (int64_t[]){1, 128, 256, 512, 1024, 3000}, 6);
}

Test(listparse, ranges_near_int64_max_stop_without_overflow)
{
    fl_list l;
    cr_assert_eq(fl_list_parse("--M", "1:9223372036854775807:x2", 1, INT64_MAX, &l), FL_OK, "%s", fl_last_error());
    cr_assert_eq(l.n, 63); /* 2^0 .. 2^62; 2^63 would overflow */
    cr_assert_eq(l.v[62], INT64_C(1) << 62);
    fl_list_free(&l);
}

Test(listparse, empty_lists_and_items_are_refused)
{
    refuse("", "needs a value");
    refuse(",", "empty item");
    refuse("1,", "empty item");
    refuse(",1", "empty item");
    refuse("1,,2", "empty item");
}

Test(listparse, unbounded_reversed_and_stuck_ranges_are_refused)
{
    refuse("64:", "start, an end and a step");
    refuse("64::x2", "start, an end and a step");
    refuse(":64:x2", "start, an end and a step");
    refuse("64:x2", "start, an end and a step");
    refuse("64:128:", "start, an end and a step");
    refuse("1:2:x2:4", "three parts");
    refuse("100:10:x2", "reversed");
    refuse("10:100:x1", "never advances");
    refuse("10:100:x0", "never advances");
    refuse("10:100:+0", "never advances");
    refuse("10:100:x", "never advances");
    refuse("10:100:y2", "xK (geometric) or +K");
    refuse("10:100:2", "xK (geometric) or +K");
}

Test(listparse, bad_numbers_bounds_duplicates_and_size)
{
    refuse("abc", "not an integer");
    refuse("1.5", "not an integer");
    refuse("1e3", "not an integer");
    refuse("0", "out of range");
    refuse("-4", "out of range");
    refuse("0:8:x2", "out of range");
    refuse("4,4", "listed twice");
    refuse("4,2:8:x2", "listed twice");
    refuse("1:100000:+1", "more than");
    refuse("99999999999999999999999", "out of range");
}

Test(listparse, schedule_lists)
{
    int a[FL_ALGO_MAX], n;
    cr_assert_eq(fl_list_parse_algos("all", a, &n), FL_OK);
    cr_assert_eq(n, 3);
    cr_assert_eq(fl_list_parse_algos("flash2,standard", a, &n), FL_OK);
    cr_assert(n == 2 && a[0] == FL_ALGO_FLASH2 && a[1] == FL_ALGO_STANDARD);
    const char *bad[] = {"", "Flash_X", "flash1,flash1", "flash1,", ",flash1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(fl_list_parse_algos(bad[i], a, &n), FL_EINVAL, "'%s' accepted", bad[i]);
        cr_assert(strstr(fl_last_error(), "--algo") || fl_test_names("--algo"), "%s", fl_last_error());
    }
}
