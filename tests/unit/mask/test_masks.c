/* test_masks.c: the keep rule (include/flashlab/masks.h, docs/model.md K1-K4) against the seeds' keep
 * matrices, and the O(1) tile classification and block ranges against a brute-force scan of
 * every entry, over a grid of shapes, corners, windows and tile sizes (non-multiples included). */
#include <criterion/criterion.h>

#include "masks.h"

static void expect_matrix(int64_t Nq, int64_t Nk, fl_causal c, const int *want)
{
    fl_mask mk;
    cr_assert_eq(fl_mask_init(&mk, Nq, Nk, c, -1, -1), FL_OK);
    for (int64_t i = 0; i < Nq; i++)
        for (int64_t j = 0; j < Nk; j++)
            cr_expect_eq(fl_mask_keep(&mk, i, j), want[i * Nk + j], "%s (%lld,%lld) at (%lld,%lld)",
                         fl_causal_name(c), (long long)Nq, (long long)Nk, (long long)i, (long long)j);
}

Test(masks, seed_causal_corners)
{
    /* deep dive: (2, 5) top-left [[1,0,0,0,0],[1,1,0,0,0]], bottom-right [[1,1,1,1,0],[1,1,1,1,1]];
     * (5, 2) bottom-right [[0,0],[0,0],[0,0],[1,0],[1,1]] */
    const int tl25[] = {1, 0, 0, 0, 0, 1, 1, 0, 0, 0};
    const int br25[] = {1, 1, 1, 1, 0, 1, 1, 1, 1, 1};
    const int br52[] = {0, 0, 0, 0, 0, 0, 1, 0, 1, 1};
    expect_matrix(2, 5, FL_CAUSAL_TOP_LEFT, tl25);
    expect_matrix(2, 5, FL_CAUSAL_BOTTOM_RIGHT, br25);
    expect_matrix(5, 2, FL_CAUSAL_BOTTOM_RIGHT, br52);
}

Test(masks, window_rule_fa2)
{
    /* query i sees keys [i + Nk - Nq - L, i + Nk - Nq + R] */
    fl_mask mk;
    cr_assert_eq(fl_mask_init(&mk, 5, 9, FL_CAUSAL_NONE, 2, 1), FL_OK);
    for (int64_t i = 0; i < 5; i++)
        for (int64_t j = 0; j < 9; j++)
            cr_expect_eq(fl_mask_keep(&mk, i, j), j >= i + 4 - 2 && j <= i + 4 + 1);
    cr_expect_eq(fl_mask_init(&mk, 5, 9, FL_CAUSAL_NONE, -2, 1), FL_EINVAL);
    cr_expect_eq(fl_mask_init(&mk, 0, 9, FL_CAUSAL_NONE, -1, -1), FL_EINVAL);
    cr_expect_eq(fl_mask_init(&mk, 5, 9, (fl_causal)7, -1, -1), FL_EINVAL);
}

Test(masks, tiles_and_block_ranges_match_brute_force)
{
    const int64_t lens[] = {1, 2, 3, 5, 7, 16, 17};
    const int64_t wins[] = {-1, 0, 1, 3, 8};
    const int64_t bs[] = {1, 2, 3, 5, 8};
    long checked = 0;
    for (size_t a = 0; a < 7; a++)
        for (size_t bq = 0; bq < 7; bq++)
            for (int c = 0; c < 3; c++)
                for (size_t wl = 0; wl < 5; wl++)
                    for (size_t wr = 0; wr < 5; wr++) {
                        const int64_t Nq = lens[a], Nk = lens[bq];
                        fl_mask mk;
                        cr_assert_eq(fl_mask_init(&mk, Nq, Nk, (fl_causal)c, wins[wl], wins[wr]), FL_OK);
                        for (size_t x = 0; x < 5; x++)
                            for (size_t y = 0; y < 5; y++) {
                                const int64_t Br = bs[x], Bc = bs[y];
                                for (int64_t r0 = 0; r0 < Nq; r0 += Br) {
                                    const int64_t nr = fl_min64(Br, Nq - r0);
                                    int64_t j0, j1, first = -1, last = -1;
                                    fl_mask_block_range(&mk, r0, nr, Bc, &j0, &j1);
                                    for (int64_t c0 = 0, j = 0; c0 < Nk; c0 += Bc, j++) {
                                        const int64_t nc = fl_min64(Bc, Nk - c0);
                                        int kept = 0;
                                        for (int64_t i = r0; i < r0 + nr; i++)
                                            for (int64_t k = c0; k < c0 + nc; k++) kept += fl_mask_keep(&mk, i, k);
                                        fl_tile_kind want = kept == 0 ? FL_TILE_EMPTY
                                                          : kept == nr * nc ? FL_TILE_FULL : FL_TILE_PARTIAL;
                                        cr_assert_eq(fl_mask_tile(&mk, r0, nr, c0, nc), want);
                                        if (kept) {
                                            if (first < 0) first = j;
                                            last = j;
                                        } else if (first >= 0) {
                                            /* non-empty tiles of a row block are contiguous */
                                            for (int64_t c2 = c0 + nc; c2 < Nk; c2++)
                                                for (int64_t i = r0; i < r0 + nr; i++)
                                                    cr_assert(!fl_mask_keep(&mk, i, c2));
                                        }
                                        checked++;
                                    }
                                    if (first < 0) cr_assert_geq(j0, j1);
                                    else cr_assert(j0 == first && j1 == last + 1);
                                }
                                for (int64_t c0 = 0; c0 < Nk; c0 += Bc) {
                                    const int64_t nc = fl_min64(Bc, Nk - c0);
                                    int64_t i0, i1, first = -1, last = -1;
                                    fl_mask_row_block_range(&mk, c0, nc, Br, &i0, &i1);
                                    for (int64_t r0 = 0, i = 0; r0 < Nq; r0 += Br, i++)
                                        if (fl_mask_tile(&mk, r0, fl_min64(Br, Nq - r0), c0, nc) != FL_TILE_EMPTY) {
                                            if (first < 0) first = i;
                                            last = i;
                                        }
                                    if (first < 0) cr_assert_geq(i0, i1);
                                    else cr_assert(i0 == first && i1 == last + 1);
                                }
                            }
                        /* row ranges agree with keep */
                        for (int64_t i = 0; i < Nq; i++) {
                            int64_t lo, hi;
                            fl_mask_row_range(&mk, i, &lo, &hi);
                            for (int64_t j = 0; j < Nk; j++)
                                cr_assert_eq(fl_mask_keep(&mk, i, j), j >= lo && j <= hi);
                        }
                    }
    cr_log_info("tiles checked: %ld", checked);
}
