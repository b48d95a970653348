/* test_l2_parts.c: the partitioned L2 of include/flashlab/l2_parts.h: one partition is l2.h's LRU
 * unchanged; two follow the rules by hand (near lookup, fabric to the home, a copy kept, updates
 * at home drop the copy); and swept twice the way bench/l2_probe.cu sweeps the H200, they find what it measured:
 * data every SM reads finds half the L2, data each SM reads alone about two thirds. */
#include <criterion/criterion.h>
#include <string.h>

#include "l2.h"
#include "l2_parts.h"

static fl_l2p *parts(int64_t cap, int n)
{
    fl_l2p *c;
    cr_assert_eq(fl_l2p_alloc(cap, 32, n, &c), FL_OK, "%s", fl_last_error());
    return c;
}

/* P = 1: the same DRAM reads and writebacks as one fl_l2 on any sequence of reads, writes and
 * reductions (a reduction: read, then write) */
Test(l2_parts, one_partition_is_the_lru)
{
    fl_l2p *p = parts(64 << 10, 1);
    fl_l2 *c;
    cr_assert_eq(fl_l2_alloc(64 << 10, 32, &c), FL_OK);
    uint64_t x = 12345;
    for (int i = 0; i < 20000; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        const uint64_t at = (x >> 20) % (256 << 10);
        const int64_t len = 1 + (int64_t)((x >> 50) % 4096);
        const int kind = (int)((x >> 40) % 3);
        fl_l2p_access(p, 0, at, len, kind);
        if (kind != FL_L2P_WRITE) fl_l2_access(c, at, len, 0);
        if (kind != FL_L2P_READ) fl_l2_access(c, at, len, 1);
    }
    cr_assert_eq(fl_l2p_get_stats(p).dram_reads, fl_l2_get_stats(c).read_misses);
    cr_assert_eq(fl_l2p_get_stats(p).writebacks, fl_l2_get_stats(c).writebacks);
    const fl_l2p_stats s = fl_l2p_get_stats(p); /* one partition: every miss is a read's or a reduction's */
    cr_assert(s.read_misses + s.reduce_misses == s.dram_reads && s.fabric_read_misses == 0 && s.reduce_misses > 0 &&
              s.read_misses > 0);
    cr_assert_eq(fl_l2p_get_stats(p).fabric, 0);
    fl_l2p_free(p);
    fl_l2_free(c);
}

/* P = 2 by hand: page 0 is homed in partition 0 (parity of page 0), page 1 in partition 1; a
 * page is 128 sectors */
Test(l2_parts, two_partitions_by_hand)
{
    fl_l2p *p = parts(64 << 10, 2);
    int64_t h[2];
    fl_l2p_homed(p, 0, 8192, h);
    cr_assert(h[0] == 128 && h[1] == 128);
    fl_l2p_homed(p, 3 * 4096 + 64, 64, h); /* page 3: parity 0 */
    cr_assert(h[0] == 2 && h[1] == 0);
    fl_l2p_access(p, 0, 0, 4096, FL_L2P_READ); /* side 0, its own page: DRAM */
    fl_l2p_stats s = fl_l2p_get_stats(p);
    cr_assert(s.dram_reads == 128 && s.fabric == 0);
    cr_assert(s.read_misses == 128 && s.fabric_read_misses == 0 && s.reduce_misses == 0);
    cr_assert_eq(fl_l2p_access(p, 1, 0, 4096, FL_L2P_READ), 3u); /* side 1: over the fabric, a home hit */
    s = fl_l2p_get_stats(p);
    cr_assert(s.dram_reads == 128 && s.fabric == 128);
    cr_assert(s.read_misses == 256 && s.fabric_read_misses == 0); /* a near miss, not a home one */
    cr_assert_eq(fl_l2p_access(p, 1, 0, 4096, FL_L2P_READ), 2u); /* side 1 again: its copy */
    s = fl_l2p_get_stats(p);
    cr_assert(s.dram_reads == 128 && s.fabric == 128);
    fl_l2p_access(p, 0, 4096, 4096, FL_L2P_READ); /* side 0, page homed in 1: fabric and DRAM */
    s = fl_l2p_get_stats(p);
    cr_assert(s.dram_reads == 256 && s.fabric == 256);
    cr_assert(s.read_misses == 384 && s.fabric_read_misses == 128);
    fl_l2p_access(p, 0, 4096, 4096, FL_L2P_WRITE); /* a write from side 0 goes home, over the fabric */
    fl_l2p_access(p, 1, 0, 4096, FL_L2P_REDUCE);   /* a reduction from side 1 at home 0, resident */
    s = fl_l2p_get_stats(p);
    cr_assert(s.dram_reads == 256 && s.fabric == 512, "%ld %ld", (long)s.dram_reads, (long)s.fabric);
    cr_assert_eq(s.reduce_misses, 0);
    fl_l2p_access(p, 0, 8 << 20, 4096, FL_L2P_REDUCE); /* page 2048 (parity 1): far, not resident */
    s = fl_l2p_get_stats(p);
    cr_assert(s.dram_reads == 384 && s.fabric == 640);
    cr_assert_eq(s.reduce_misses, 128);
    /* the reduction of page 0 at home dropped side 1's copy: side 1 reads over the fabric again */
    cr_assert_eq(fl_l2p_access(p, 1, 0, 4096, FL_L2P_READ), 3u);
    s = fl_l2p_get_stats(p);
    cr_assert(s.dram_reads == 384 && s.fabric == 768, "%ld %ld", (long)s.dram_reads, (long)s.fabric);
    cr_assert(s.read_misses == 512 && s.fabric_read_misses == 128 && s.reduce_misses == 128);
    /* DRAM = the near misses homed near (the first read's 128) + the home misses of far ones + reductions' */
    cr_assert_eq(s.dram_reads, 128 + s.fabric_read_misses + s.reduce_misses);
    fl_l2p_free(p);
}

/* Two sweeps over X bytes, as bench/l2_probe.cu runs them: shared, sides 0 and 1 read every page
 * in turn; private, side 0 reads the first half and side 1 the second, a page each in turn.
 * Returns the DRAM reads per byte. */
static double sweep(int64_t cap, int64_t X, int shared)
{
    fl_l2p *p = parts(cap, 2);
    const int64_t pages = X / 4096;
    for (int pass = 0; pass < 2; pass++)
        for (int64_t k = 0; k < (shared ? pages : pages / 2); k++)
            for (int side = 0; side < 2; side++) {
                const int64_t page = shared ? k : side * (pages / 2) + k;
                fl_l2p_access(p, side, (uint64_t)page * 4096, 4096, FL_L2P_READ);
            }
    const double r = (double)fl_l2p_get_stats(p).dram_reads * 32 / (double)X;
    fl_l2p_free(p);
    return r;
}

Test(l2_parts, sweeps_find_what_the_h200_measured)
{
    const int64_t C = 4 << 20; /* a 4 MiB L2: two partitions of 2 MiB */
    cr_assert_float_eq(sweep(C, C * 7 / 16, 1), 1.0, 1e-12);  /* shared, under half: kept */
    cr_assert_float_eq(sweep(C, C * 9 / 16, 1), 2.0, 1e-12);  /* shared, over half: read twice */
    cr_assert_float_eq(sweep(C, C * 9 / 16, 0), 1.0, 1e-12);  /* private, over half, under two thirds: kept */
    cr_assert_float_eq(sweep(C, C * 10 / 16, 0), 1.0, 1e-12);
    cr_assert_gt(sweep(C, C * 12 / 16, 0), 1.5);               /* private, over two thirds: not kept */
    /* one LRU of the whole L2 would keep all of these */
    fl_l2 *c;
    cr_assert_eq(fl_l2_alloc(C, 32, &c), FL_OK);
    for (int pass = 0; pass < 2; pass++) fl_l2_access(c, 0, C * 12 / 16, 0);
    cr_assert_eq(fl_l2_get_stats(c).read_misses * 32, C * 12 / 16);
    fl_l2_free(c);
}

/* bench/l2_probe.cu --reduce, as sweep() does its reads: reduce, each side adds to its half of X,
 * a page a step, twice; mixed, X cut in halves R and C, each side at each step adds to its page
 * of R and reads its page of C, twice.  Returns the DRAM reads per byte; *red the reductions'
 * misses per byte of what was reduced. */
static double sweep_reduce(int64_t cap, int64_t X, int mixed, double *red)
{
    fl_l2p *p = parts(cap, 2);
    const int64_t pages = X / 4096, R = mixed ? pages / 2 : pages, per = R / 2;
    for (int pass = 0; pass < 2; pass++)
        for (int64_t k = 0; k < per; k++)
            for (int side = 0; side < 2; side++) {
                const int64_t page = side * per + k;
                fl_l2p_access(p, side, (uint64_t)page * 4096, 4096, FL_L2P_REDUCE);
                if (mixed) fl_l2p_access(p, side, (uint64_t)(R + page) * 4096, 4096, FL_L2P_READ);
            }
    const fl_l2p_stats s = fl_l2p_get_stats(p);
    *red = (double)s.reduce_misses * 32 / (double)(R * 4096);
    const double r = (double)s.dram_reads * 32 / (double)X;
    fl_l2p_free(p);
    return r;
}

/* docs/l2_model.md §6: reduced data is held once, at home, so it finds the whole L2; mixed with as
 * much private read data (held 1.5 times), it is kept while 5/8 of X fits a partition */
Test(l2_parts, reductions_find_the_whole_l2)
{
    const int64_t C = 4 << 20;
    double red;
    cr_assert_float_eq(sweep_reduce(C, C * 15 / 16, 0, &red), 1.0, 1e-12);
    cr_assert_float_eq(red, 1.0, 1e-12);
    cr_assert_float_eq(sweep_reduce(C, C * 17 / 16, 0, &red), 2.0, 1e-12); /* past the whole L2: twice */
    cr_assert_float_eq(red, 2.0, 1e-12);
    cr_assert_float_eq(sweep_reduce(C, C * 12 / 16, 1, &red), 1.0, 1e-12); /* mixed, 5/8 x 12/16 < 1/2 */
    cr_assert_float_eq(red, 1.0, 1e-12);
    cr_assert_gt(sweep_reduce(C, C * 14 / 16, 1, &red), 1.5);               /* 5/8 x 14/16 > 1/2 */
    cr_assert_gt(red, 1.5);
}

Test(l2_parts, input_rules_name_the_option)
{
    fl_l2p *p;
    cr_assert_eq(fl_l2p_alloc(1 << 20, 32, 3, &p), FL_EINVAL);
    cr_assert(p == NULL);
    cr_assert(strstr(fl_last_error_raw(), "{l2_partitions}"), "%s", fl_last_error_raw());
    cr_assert_eq(fl_l2p_alloc(1 << 20, 24, 2, &p), FL_EINVAL);
    cr_assert(strstr(fl_last_error_raw(), "{sector}"), "%s", fl_last_error_raw());
    int64_t b1, b2;
    cr_assert_eq(fl_l2p_memory(1 << 20, 32, 1, &b1), FL_OK);
    cr_assert_eq(fl_l2p_memory(1 << 20, 32, 2, &b2), FL_OK);
    cr_assert(b2 >= b1 && b2 <= b1 + (b1 / 8));
}
