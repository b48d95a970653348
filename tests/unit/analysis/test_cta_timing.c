/* test_cta_timing.c: the measured CTA timing (cta_timing.h) and the launch model's timed walk
 * (rule S2, launch_model.h): the reader's rules, each broken once; a timing that runs in lock step
 * is rule S1 exactly; a case by hand where the timing decides what is re-read; the launch's input
 * rules; `flashlab l2 --launch --cta-timing`. */
#define _GNU_SOURCE /* fmemopen */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_runner.h"
#include "cta_timing.h"
#include "launch_model.h"

static fl_status read_bytes(const char *text, size_t len, fl_cta_time **t, int64_t *n)
{
    FILE *f = fmemopen((void *)text, len, "r");
    cr_assert(f);
    const fl_status e = fl_cta_timing_read(f, "t.csv", "--cta-timing", t, n);
    fclose(f);
    return e;
}

static fl_status read_text(const char *text, fl_cta_time **t, int64_t *n) { return read_bytes(text, strlen(text), t, n); }

Test(cta_timing, reads_rows_by_item)
{
    fl_cta_time *t;
    int64_t n;
    cr_assert_eq(read_text("# provenance\nitem,sm,start_ns,end_ns\n2,5,30,40\n0,1,0,10\n\n1,0,5,5\n", &t, &n), FL_OK, "%s",
                 fl_last_error());
    cr_assert_eq(n, 3);
    const int64_t want[3][3] = {{1, 0, 10}, {0, 5, 5}, {5, 30, 40}};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(t[i].sm, want[i][0]);
        cr_assert_eq(t[i].start, want[i][1]);
        cr_assert_eq(t[i].end, want[i][2]);
    }
    free(t);
}

Test(cta_timing, refuses_every_broken_rule)
{
    static const struct {
        const char *text, *says;
        size_t len; /* 0: strlen */
    } bad[] = {
        {"item,sm,start,end\n0,0,0,1\n", "header", 0},
        {"item,sm,start_ns,end_ns\n", "no rows", 0},
        {"", "no rows", 0},
        {"item,sm,start_ns,end_ns\n0,0,5,4\n", "before start_ns", 0},
        {"item,sm,start_ns,end_ns\n0,-1,0,1\n", "four integers", 0},
        {"item,sm,start_ns,end_ns\n0,0,0\n", "four integers", 0},
        {"item,sm,start_ns,end_ns\n0,0,0,1,7\n", "four integers", 0},
        {"item,sm,start_ns,end_ns\n0,0,0,1x\n", "four integers", 0},
        {"item,sm,start_ns,end_ns\n0, 0,0,1\n", "four integers", 0},
        {"item,sm,start_ns,end_ns\n0,0,0,99999999999999999999\n", "four integers", 0},
        {"item,sm,start_ns,end_ns\n0,0,0,1\n0,1,0,1\n", "twice", 0},
        {"item,sm,start_ns,end_ns\n0,0,0,1\n2,1,0,1\n", "out of range", 0},
        {"item,sm,start_ns,end_ns\n0,0,\0,1\n", "NUL", 32},
        {"item,sm,start_ns,end_ns\n0,0,0,100\n1,0,100,20", "no newline at its end", 0}, /* cut mid-row */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        fl_cta_time *t = (fl_cta_time *)1;
        int64_t n = 7;
        cr_assert_eq(read_bytes(bad[i].text, bad[i].len ? bad[i].len : strlen(bad[i].text), &t, &n), FL_EINVAL,
                     "case %zu", i);
        cr_assert_null(t, "case %zu", i);
        cr_assert_eq(n, 0);
        cr_assert(strstr(fl_last_error_raw(), bad[i].says) && strstr(fl_last_error_raw(), "--cta-timing t.csv"),
                  "case %zu: %s", i, fl_last_error());
    }
    char longline[400];
    memset(longline, '1', sizeof longline);
    memcpy(longline, "item,sm,start_ns,end_ns\n", 24);
    longline[sizeof longline - 1] = 0;
    fl_cta_time *t;
    int64_t n;
    cr_assert_eq(read_text(longline, &t, &n), FL_EINVAL);
    cr_assert(strstr(fl_last_error(), "longer than 255"), "%s", fl_last_error());
}

static fl_launch_pred predict(const fl_launch *L, int64_t l2_bytes)
{
    fl_launch_pred p;
    cr_assert_eq(fl_launch_predict(L, l2_bytes, 32, &p), FL_OK, "%s", fl_last_error());
    return p;
}

/* Items of equal length started a wave at a time, on the SMs rule S1 gives their slots: the
 * accesses of a wave fall at the same times, ties go to the earlier item (the lower slot), and
 * the next wave starts after the last: rule S1's walk, access for access.  Running the items
 * head fastest instead adds DRAM reads in this small L2, so the equality is not one any order
 * would give. */
Test(cta_timing, lock_step_timing_is_rule_s1)
{
    fl_launch L = fl_launch_default(FL_LF_FWD_Q, 2, 3, 512, 64, 64, 64);
    L.sms = 4, L.ctas_per_sm = 2;
    const int64_t items = 2 * 3 * 8, slots = 8;
    fl_cta_time t[48];
    for (int64_t i = 0; i < items; i++) t[i] = (fl_cta_time){i % slots % L.sms, i / slots * 1000, i / slots * 1000 + 1000};
    const fl_launch_pred s1 = predict(&L, 96 << 10);
    L.timing = t, L.timing_n = items;
    const fl_launch_pred s2 = predict(&L, 96 << 10);
    cr_assert_eq(s2.items, s1.items);
    cr_assert_eq(s2.sm_read_B, s1.sm_read_B);
    cr_assert_eq(s2.dram_read_B, s1.dram_read_B);
    cr_assert_eq(s2.fabric_B, s1.fabric_B);
    cr_assert_eq(s2.writeback_B, s1.writeback_B);
    cr_assert_eq(memcmp(s2.reads, s1.reads, sizeof s1.reads), 0);
    for (int64_t i = 0; i < items; i++) /* head fastest: a head's 128 KiB of K and V read in several waves */
        t[i].start = (i % 8 * 6 + i / 8) / slots * 1000, t[i].end = t[i].start + 1000;
    const fl_launch_pred other = predict(&L, 96 << 10);
    cr_assert_eq(other.sm_read_B, s1.sm_read_B);
    cr_assert_gt(other.dram_read_B, s1.dram_read_B, "the order must matter in this case for the test to mean anything");
}

/* By hand: one head, N = 128, d = 64, 64x64 tiles (8 KiB; L_i 256 B), one L2 pool of 16 KiB (two
 * tiles), both work items on SM 0.  Item i reads Q_i, K_0, V_0, K_1, V_1 and writes O_i, L_i.
 * Run together, item 1 reads each K_j, V_j just after item 0 (interleaved, ties to item 0): hits;
 * DRAM reads Q_0, Q_1, K_0, V_0, K_1, V_1 = 48 KiB.  One after the other, item 1 finds none of
 * them (16 KiB hold the last two things item 0 touched: O_0 and V_1, then Q_1 and K_0 push V_1
 * out): 5 + 5 tiles = 80 KiB. */
Test(cta_timing, timing_decides_what_is_reread_by_hand)
{
    fl_launch L = fl_launch_default(FL_LF_FWD_Q, 1, 1, 128, 64, 64, 64);
    L.l2_parts = 1, L.sms = 1;
    fl_cta_time t[2] = {{0, 0, 100}, {0, 0, 100}};
    L.timing = t, L.timing_n = 2;
    cr_assert_eq(predict(&L, 16 << 10).dram_read_B, 6 * 8192);
    t[1] = (fl_cta_time){0, 100, 200};
    cr_assert_eq(predict(&L, 16 << 10).dram_read_B, 10 * 8192);
    t[1] = (fl_cta_time){0, 0, 100}; /* the same SM twice at once is allowed: 2 CTAs per SM */
    fl_launch_pred p = predict(&L, 16 << 10);
    cr_assert_eq(p.sm_read_B, 2 * 5 * 8192);
}

Test(cta_timing, launch_input_rules)
{
    fl_launch L = fl_launch_default(FL_LF_FWD_Q, 1, 1, 128, 64, 64, 64);
    fl_cta_time t[3] = {{0, 0, 1}, {0, 0, 1}, {0, 0, 1}};
    fl_launch_pred p;
    L.timing = t, L.timing_n = 3;
    cr_assert_eq(fl_launch_predict(&L, 1 << 20, 32, &p), FL_EINVAL);
    cr_assert(strstr(fl_last_error_raw(), "{cta_timing}: 3 rows for a launch of 2 work items"), "%s", fl_last_error_raw());
    L.timing_n = 2, t[1].sm = 132;
    cr_assert_eq(fl_launch_predict(&L, 1 << 20, 32, &p), FL_EINVAL);
    cr_assert(strstr(fl_last_error(), "item 1"), "%s", fl_last_error());
    t[1].sm = 0, t[0].end = -1;
    cr_assert_eq(fl_launch_predict(&L, 1 << 20, 32, &p), FL_EINVAL);
    cr_assert(strstr(fl_last_error(), "item 0"), "%s", fl_last_error());
}

static char *write_tmp(const char *text)
{
    static char path[64];
    strcpy(path, "/tmp/fl_cta_timing_XXXXXX");
    const int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

Test(cta_timing, cli_walks_the_timing_and_refuses_a_bad_one)
{
    char *good = strdup(write_tmp("item,sm,start_ns,end_ns\n0,0,0,100\n1,0,100,200\n"));
    const char *ok[] = {"l2", "--launch", "fwd-q", "--N", "128", "--d", "64", "--Br", "64", "--Bc", "64", "--l2-mb", "1",
                        "--l2-partitions", "1", "--sms", "1", "--format", "csv", "--cta-timing", good, NULL};
    cli_result *r = cli_run(ok);
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert(strstr(r->out, "rule S2"), "%s", r->out);
    free(r);
    char *bad = strdup(write_tmp("item,sm,start_ns,end_ns\n0,0,0,100\n0,0,100,200\n"));
    const char *no[] = {"l2", "--launch", "fwd-q", "--N", "128", "--d", "64", "--Br", "64", "--Bc", "64",
                        "--cta-timing", bad, NULL};
    r = cli_run(no);
    cr_assert_eq(r->status, 2);
    cr_assert(strstr(r->err, "--cta-timing") && strstr(r->err, "twice") && !strchr(strchr(r->err, '\n') + 1, '\n'),
              "%s", r->err);
    free(r);
    const char *dir[] = {"l2", "--launch", "fwd-q", "--N", "128", "--d", "64", "--Br", "64", "--Bc", "64",
                         "--cta-timing", "/tmp", NULL};
    r = cli_run(dir);
    cr_assert_eq(r->status, 2);
    cr_assert(strstr(r->err, "--cta-timing") && strstr(r->err, "directory"), "%s", r->err);
    free(r);
    unlink(good), unlink(bad);
    free(good), free(bad);
}
