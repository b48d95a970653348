/* test_bwd_masks.c: the backward passes skip what a causal mask or window drops (docs/model.md
 * (C0bm), §12.1): standard-skip's backward moves the hand count of a small causal problem, a
 * causal backward of every schedule of optimize's family moves less than its dense one --
 * standard's, the framework baseline the GPU kernels are validated against, exactly as much --
 * and the sums over a mask's rows (fl_mask_row_sums, used by (C0bm.3)) equal a scan of every
 * entry.  Gradients against the reference: the conformance suite and test_masks_sched. */
#include <criterion/criterion.h>
#include <math.h>

#include "run.h"
#include "schedule.h"

/* fl_mask_row_sums against a scan: every Nq, Nk <= 17, corner and window side in -1..5, C in
 * 1..5. */
Test(bwd_masks, row_sums_equal_a_scan)
{
    int checked = 0;
    for (int64_t nq = 1; nq <= 17; nq++)
        for (int64_t nk = 1; nk <= 17; nk++)
            for (int c = 0; c < 3; c++)
                for (int64_t L = -1; L <= 5; L++)
                    for (int64_t R = -1; R <= 5; R += 2) {
                        fl_mask mk;
                        cr_assert_eq(fl_mask_init(&mk, nq, nk, (fl_causal)c, L, R), FL_OK);
                        for (int64_t C = 1; C <= 5; C++) {
                            int64_t rows = 0, kept = 0, chunks = 0, r, k, ch;
                            for (int64_t i = 0; i < nq; i++) {
                                int64_t len = 0;
                                for (int64_t j = 0; j < nk; j++) len += fl_mask_keep(&mk, i, j);
                                if (len) rows++, kept += len, chunks += (len + C - 1) / C;
                            }
                            cr_assert_eq(fl_mask_row_sums(&mk, C, &r, &k, &ch), 1);
                            cr_assert(r == rows && k == kept && ch == chunks,
                                      "Nq %ld Nk %ld corner %d window %ld,%ld C %ld: %ld %ld %ld, scan %ld %ld %ld",
                                      (long)nq, (long)nk, c, (long)L, (long)R, (long)C, (long)r, (long)k, (long)ch,
                                      (long)rows, (long)kept, (long)chunks);
                            checked++;
                        }
                    }
    cr_assert_eq(checked, 17 * 17 * 3 * 7 * 4 * 5);
    fl_mask mk;
    int64_t r, k, ch;
    cr_assert_eq(fl_mask_init(&mk, 4, 4, FL_CAUSAL_NONE, -1, -1), FL_OK);
    cr_assert_eq(fl_mask_row_sums(&mk, 0, &r, &k, &ch), 0); /* no chunks of 0 columns */
}

/* standard-skip's backward, causal top-left, N = 4, d = 2, Br = Bc = 2, Bd = d (one chunk), rows of
 * P fitting: the tiles (0,0), (1,0), (1,1) are kept, (0,1) dropped.
 *   1 dV = P^T dO: key block 0 meets both row blocks (P 8 + dO 8), key block 1 one (4 + 4):
 *     24 reads, 8 writes, 8 events;
 *   2 dP = dO V^T: row block 0 one tile (dO 4 + V 4, 4 written), row block 1 two (4 + 8, 8):
 *     20 reads, 12 writes, 8 events;
 *   3 dS: the kept entries 1 + 2 + 3 + 4 = 10, P and dP read, dS written: 20, 10, 12 events;
 *   4 dQ = dS K: row block 0 one tile (dS 4 + K 4), row block 1 two (8 + 8): 24, 8, 8;
 *   5 dK = dS^T Q: as 1: 24, 8, 8.
 * Total 112 reads, 46 writes, 44 events; dense (C0b), and standard's mask-oblivious backward under
 * the mask: 152 reads, 56 writes. */
Test(bwd_masks, standard_skip_backward_skips_the_dropped_tiles_by_hand)
{
    fl_problem p = fl_problem_default();
    cr_assert_eq(fl_algo_parse("standard-skip", &p.algo), FL_OK);
    p.N = 4, p.d = 2, p.M = 1000, p.Br = 2, p.Bc = 2, p.pass = FL_PASS_BWD;
    p.causal = FL_CAUSAL_TOP_LEFT;
    fl_result r;
    cr_assert_eq(fl_run(&p, FL_COMPUTE, NULL, NULL, &r), FL_OK, "%s", fl_last_error());
    cr_assert_eq(r.b_bwd.Bd, 2);
    cr_assert_eq(r.reads, 112);
    cr_assert_eq(r.writes, 46);
    cr_assert_eq(r.events, 44);
    cr_assert(r.dq_rel_err < 1e-12 && r.dk_rel_err < 1e-12 && r.dv_rel_err < 1e-12, "%g %g %g", r.dq_rel_err,
              r.dk_rel_err, r.dv_rel_err);
    p.causal = FL_CAUSAL_NONE;
    cr_assert_eq(fl_run(&p, FL_COUNT, NULL, NULL, &r), FL_OK, "%s", fl_last_error());
    cr_assert_eq(r.reads, 152);
    cr_assert_eq(r.writes, 56);
    p.algo = FL_ALGO_STANDARD, p.causal = FL_CAUSAL_TOP_LEFT;
    cr_assert_eq(fl_run(&p, FL_COUNT, NULL, NULL, &r), FL_OK, "%s", fl_last_error());
    cr_assert_eq(r.reads, 152);
    cr_assert_eq(r.writes, 56);
}

/* Every backward of the family moves less under a causal mask than dense, at its default blocks
 * and at blocks that divide nothing (N = 1000, d = 64, M from the small cache to the large), and
 * a window's backward less still: what the mask drops is skipped, tile by tile.  standard (in
 * "all", materializing: the framework pipeline) moves the same under every mask. */
Test(bwd_masks, every_backward_moves_less_under_a_mask)
{
    const int64_t Ms[] = {1024, 16384, 98304};
    int checked = 0;
    for (int a = 0; a < fl_schedule_count(); a++) {
        const fl_schedule *s = fl_schedule_get((fl_algo)a);
        if (!s->search[1] || (s->flags & FL_SCHED_STACKS_GROUP)) continue;
        for (int i = 0; i < 3; i++)
            for (int over = 0; over < 2; over++) {
                fl_problem p = fl_problem_default();
                p.algo = (fl_algo)a, p.N = 1000, p.d = 64, p.M = Ms[i], p.pass = FL_PASS_BWD;
                if (over) p.Br = 7, p.Bc = 9;
                fl_result dense, causal, window;
                if (fl_run(&p, FL_COUNT, NULL, NULL, &dense) != FL_OK) continue; /* does not fit */
                p.causal = FL_CAUSAL_BOTTOM_RIGHT;
                cr_assert_eq(fl_run(&p, FL_COUNT, NULL, NULL, &causal), FL_OK, "%s", fl_last_error());
                p.window_left = 100, p.window_right = 0;
                cr_assert_eq(fl_run(&p, FL_COUNT, NULL, NULL, &window), FL_OK, "%s", fl_last_error());
                if ((s->flags & FL_SCHED_IN_ALL) && (s->flags & FL_SCHED_MATERIALIZES)) {
                    cr_assert(causal.total == dense.total && window.total == dense.total, "%s M %ld", s->name,
                              (long)p.M);
                    continue;
                }
                cr_assert_lt(causal.total, dense.total, "%s M %ld: causal %ld, dense %ld", s->name, (long)p.M,
                             (long)causal.total, (long)dense.total);
                cr_assert_lt(window.total, causal.total, "%s M %ld: window %ld, causal %ld", s->name, (long)p.M,
                             (long)window.total, (long)causal.total);
                checked++;
            }
    }
    cr_assert_geq(checked, 18);
}
