/* test_l2.c: the sector LRU cache of include/flashlab/l2.h: capacity, LRU order, sector rounding, writes
 * (allocate, no DRAM read; dirty evictions written back) and its input rules. */
#include <criterion/criterion.h>
#include <string.h>

#include "l2.h"

static fl_l2 *cache(int64_t cap, int64_t sector)
{
    fl_l2 *c;
    cr_assert_eq(fl_l2_alloc(cap, sector, &c), FL_OK, "%s", fl_last_error());
    return c;
}

Test(l2, capacity_holds_exactly_its_sectors)
{
    fl_l2 *c = cache(4 * 32, 32);
    for (int i = 0; i < 4; i++) fl_l2_access(c, (uint64_t)i * 32, 32, 0);
    cr_assert_eq(fl_l2_get_stats(c).read_misses, 4);
    cr_assert_eq(fl_l2_resident(c), 4);
    for (int i = 0; i < 4; i++) fl_l2_access(c, (uint64_t)i * 32, 32, 0); /* all still there */
    cr_assert_eq(fl_l2_get_stats(c).read_hits, 4);
    fl_l2_access(c, 4 * 32, 32, 0); /* a fifth evicts one */
    cr_assert_eq(fl_l2_resident(c), 4);
    cr_assert_eq(fl_l2_get_stats(c).evictions, 1);
    fl_l2_free(c);
}

Test(l2, evicts_the_least_recently_used)
{
    fl_l2 *c = cache(4 * 32, 32);
    for (int i = 0; i < 4; i++) fl_l2_access(c, (uint64_t)i * 32, 32, 0); /* A B C D */
    fl_l2_access(c, 0, 32, 0);                                             /* A again: B is now LRU */
    fl_l2_access(c, 4 * 32, 32, 0);                                        /* E */
    cr_assert(fl_l2_contains(c, 0));
    cr_assert(!fl_l2_contains(c, 32));
    cr_assert(fl_l2_contains(c, 64) && fl_l2_contains(c, 96) && fl_l2_contains(c, 128));
    /* a cyclic sweep one larger than the cache misses every time under LRU */
    fl_l2_flush(c);
    const int64_t m0 = fl_l2_get_stats(c).read_misses;
    for (int r = 0; r < 3; r++)
        for (int i = 0; i < 5; i++) fl_l2_access(c, (uint64_t)i * 32, 32, 0);
    cr_assert_eq(fl_l2_get_stats(c).read_misses - m0, 15);
    fl_l2_free(c);
}

Test(l2, ranges_round_out_to_whole_sectors)
{
    fl_l2 *c = cache(1 << 20, 32);
    fl_l2_access(c, 30, 4, 0); /* bytes 30..33: sectors 0 and 1 */
    cr_assert_eq(fl_l2_get_stats(c).read_sectors, 2);
    fl_l2_access(c, 64, 32, 0); /* exactly sector 2 */
    cr_assert_eq(fl_l2_get_stats(c).read_sectors, 3);
    fl_l2_access(c, 100, 1, 0); /* one byte of sector 3 */
    cr_assert_eq(fl_l2_get_stats(c).read_sectors, 4);
    fl_l2_access(c, 0, 0, 0); /* nothing */
    cr_assert_eq(fl_l2_get_stats(c).read_sectors, 4);
    cr_assert_eq(fl_l2_get_stats(c).read_misses, 4);
    fl_l2_access(c, 33, 60, 0); /* 33..92: sectors 1 and 2, both resident */
    cr_assert_eq(fl_l2_get_stats(c).read_hits, 2);
    fl_l2_free(c);
}

Test(l2, writes_allocate_without_reading_and_write_back_when_evicted)
{
    fl_l2 *c = cache(2 * 32, 32);
    fl_l2_access(c, 0, 64, 1); /* two sectors written */
    fl_l2_stats s = fl_l2_get_stats(c);
    cr_assert_eq(s.write_sectors, 2);
    cr_assert_eq(s.read_misses, 0);
    fl_l2_access(c, 0, 32, 0); /* reading what was written hits */
    cr_assert_eq(fl_l2_get_stats(c).read_hits, 1);
    fl_l2_access(c, 128, 64, 0); /* two new sectors evict both dirty ones */
    s = fl_l2_get_stats(c);
    cr_assert_eq(s.evictions, 2);
    cr_assert_eq(s.writebacks, 2);
    fl_l2_access(c, 256, 64, 0); /* clean evictions are not written back */
    cr_assert_eq(fl_l2_get_stats(c).writebacks, 2);
    fl_l2_free(c);
}

Test(l2, flush_empties_and_keeps_the_statistics)
{
    fl_l2 *c = cache(1024, 32);
    fl_l2_access(c, 0, 1024, 0);
    fl_l2_flush(c);
    cr_assert_eq(fl_l2_resident(c), 0);
    fl_l2_access(c, 0, 1024, 0);
    cr_assert_eq(fl_l2_get_stats(c).read_misses, 64);
    fl_l2_free(c);
}

Test(l2, refuses_bad_parameters)
{
    fl_l2 *c = (fl_l2 *)1;
    cr_assert_eq(fl_l2_alloc(1024, 24, &c), FL_EINVAL); /* not a power of two */
    cr_assert_null(c);
    cr_assert_eq(fl_l2_alloc(16, 32, &c), FL_EINVAL); /* less than one sector */
    cr_assert_eq(fl_l2_alloc(1024, 0, &c), FL_EINVAL);
    cr_assert(strstr(fl_last_error_raw(), "{sector}") != NULL);
}

/* A dropped sector is gone without a writeback, its slot is reused, and the rest keep their order */
Test(l2, drop_takes_one_sector_out)
{
    fl_l2 *c = cache(4 * 32, 32);
    for (int i = 0; i < 4; i++) fl_l2_access(c, (uint64_t)i * 32, 32, i == 1); /* A B(dirty) C D */
    fl_l2_drop(c, 32 + 5);
    fl_l2_drop(c, 1000 * 32); /* not resident: nothing */
    cr_assert_eq(fl_l2_resident(c), 3);
    cr_assert(!fl_l2_contains(c, 32));
    fl_l2_access(c, 4 * 32, 32, 0); /* E takes B's slot: nothing evicted */
    cr_assert_eq(fl_l2_get_stats(c).evictions, 0);
    cr_assert_eq(fl_l2_get_stats(c).writebacks, 0);
    fl_l2_access(c, 5 * 32, 32, 0); /* F evicts the least recently used, A */
    cr_assert(!fl_l2_contains(c, 0));
    cr_assert(fl_l2_contains(c, 64) && fl_l2_contains(c, 96) && fl_l2_contains(c, 128) && fl_l2_contains(c, 160));
    cr_assert_eq(fl_l2_resident(c), 4);
    fl_l2_free(c);
}
