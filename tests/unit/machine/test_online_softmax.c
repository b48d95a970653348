/* test_online_softmax.c: the online-softmax step (include/flashlab/ops.h, docs/model.md eq. (OS)) and the
 * seeds' two-tile examples. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attention_ref.h"
#include "examples.h"
#include "ops.h"

static const double hb_s[] = {2, 1, 4, 3}, hb_v[] = {1, 0, 0, 1, 2, 0, 0, 2};
static const double dd_s[] = {1, 2, 3, 0}, dd_v[] = {10, 0, 0, 10, 5, 5, 9, 1};

static void assert_close(const double *a, const double *b, int n, double rtol)
{
    for (int i = 0; i < n; i++)
        cr_assert(fabs(a[i] - b[i]) <= rtol * fmax(1.0, fabs(b[i])), "[%d] %.17g vs %.17g", i, a[i], b[i]);
}

Test(online_softmax, two_tile_rows_match_full_softmax_and_the_seeds)
{
    double o[2], full[2];
    cr_assert_eq(fl_osm_tiled(hb_s, 4, hb_v, 2, 2, o), FL_OK);
    fl_ref_softmax_row(hb_s, 4, hb_v, 2, full);
    assert_close(o, full, 2, 1e-14);
    cr_assert(fabs(o[0] - 1.37497284) < 5e-9 && fabs(o[1] - 0.50582424) < 5e-9, "%.9f %.9f", o[0], o[1]);
    cr_assert_eq(fl_osm_tiled(dd_s, 4, dd_v, 2, 2, o), FL_OK);
    fl_ref_softmax_row(dd_s, 4, dd_v, 2, full);
    assert_close(o, full, 2, 1e-14);
    cr_assert(fabs(o[0] - 4.379542) < 5e-7 && fabs(o[1] - 5.620458) < 5e-7, "%.7f %.7f", o[0], o[1]);
}

Test(online_softmax, invariant_to_tile_size_and_to_a_shift_of_every_score)
{
    const double *rows[] = {hb_s, dd_s}, *vals[] = {hb_v, dd_v};
    const int tiles[] = {1, 2, 3, 4, 10};
    const double shifts[] = {-1000.0, 0.0, 1000.0};
    for (int r = 0; r < 2; r++) {
        double full[2], o[2], s[4];
        fl_ref_softmax_row(rows[r], 4, vals[r], 2, full);
        for (int t = 0; t < 5; t++)
            for (int k = 0; k < 3; k++) {
                for (int j = 0; j < 4; j++) s[j] = rows[r][j] + shifts[k];
                cr_assert_eq(fl_osm_tiled(s, 4, vals[r], 2, tiles[t], o), FL_OK);
                assert_close(o, full, 2, 1e-12);
            }
    }
}

Test(online_softmax, all_masked_row_returns_zeros_and_masked_tiles_are_skipped)
{
    const double ninf = -INFINITY;
    double s[4] = {ninf, ninf, ninf, ninf}, o[2] = {7, 7};
    cr_assert_eq(fl_osm_tiled(s, 4, dd_v, 2, 2, o), FL_OK);
    cr_assert(o[0] == 0.0 && o[1] == 0.0 && !signbit(o[0]));
    /* only the third key is legal: the output is exactly its value row */
    double s2[4] = {ninf, ninf, 0.0, ninf};
    cr_assert_eq(fl_osm_tiled(s2, 4, dd_v, 2, 2, o), FL_OK);
    cr_assert(o[0] == 5.0 && o[1] == 5.0, "%g %g", o[0], o[1]);
    /* a fully masked first tile leaves the state empty (m = -inf) and rescale 1 */
    double m = ninf, l = 0.0, u[2] = {0, 0};
    cr_assert(fl_osm_step(&m, &l, u, 2, s, 2, dd_v, 2, NULL) == 1.0);
    cr_assert(m == ninf && l == 0.0);
}

Test(online_softmax, rescale_factor_is_exp_of_old_minus_new_max)
{
    double m = -INFINITY, l = 0.0, u[2] = {0, 0};
    cr_assert(fl_osm_step(&m, &l, u, 2, dd_s, 2, dd_v, 2, NULL) == 0.0); /* empty state */
    const double a = fl_osm_step(&m, &l, u, 2, dd_s + 2, 2, dd_v + 4, 2, NULL);
    cr_assert(fabs(a - exp(-1.0)) < 1e-15, "%.17g", a);
    cr_assert(m == 3.0);
}

Test(online_softmax, rejects_bad_tile_size)
{
    double o[2];
    cr_assert_eq(fl_osm_tiled(dd_s, 4, dd_v, 2, 0, o), FL_EINVAL);
}

Test(examples, two_tile_prints_both_walkthroughs_and_passes)
{
    const fl_example *e = fl_example_find("two-tile");
    cr_assert_not_null(e);
    char buf[8192] = {0};
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    cr_assert_eq(e->run(f), 1);
    fclose(f);
    cr_assert(strstr(buf, "[1.37497284, 0.50582424]"), "%s", buf);
    cr_assert(strstr(buf, "[4.379542, 5.620458]"), "%s", buf);
    cr_assert(strstr(buf, "rescale e^(m_old - m) = 0.367879"), "%s", buf); /* deep dive: e^(2-3) */
    cr_assert(strstr(buf, "m = 3.000000, l = 1.553002"), "%s", buf);
    cr_assert(strstr(buf, "two-tile: PASS"), "%s", buf);
}

/* The binding's entry points check the arrays' lengths they are given instead of reading past
 * them: 3 scores with 1 value row, a short numerator, a value array of the wrong size. */
Test(online_softmax, checked_steps_refuse_arrays_that_do_not_match)
{
    double m = -INFINITY, l = 0.0, u[2] = {0, 0}, a = -1.0;
    const double s[3] = {0.1, 0.2, 0.3}, v[6] = {1, 2, 3, 4, 5, 6};
    cr_assert_eq(fl_osm_step_checked(&m, &l, u, 2, 2, s, 3, v, 1, 2, NULL, 0, &a), FL_EINVAL);
    cr_assert(strstr(fl_last_error(), "values: 1 rows"), "%s", fl_last_error());
    cr_assert_eq(fl_osm_step_checked(&m, &l, u, 1, 2, s, 3, v, 3, 2, NULL, 0, &a), FL_EINVAL);
    cr_assert(strstr(fl_last_error(), "u: "), "%s", fl_last_error());
    cr_assert_eq(m, -INFINITY, "a refused step changes nothing");
    cr_assert_eq(fl_osm_step_checked(&m, &l, u, 2, 2, s, 3, v, 3, 2, NULL, 0, &a), FL_OK);
    double m2 = -INFINITY, l2 = 0.0, u2[2] = {0, 0};
    const double a2 = fl_osm_step(&m2, &l2, u2, 2, s, 3, v, 2, NULL);
    cr_assert(m == m2 && l == l2 && u[0] == u2[0] && u[1] == u2[1] && a == a2, "checked = unchecked");
    double out[2];
    cr_assert_eq(fl_osm_tiled_checked(s, 3, v, 5, 2, 2, out, 2), FL_EINVAL);
    cr_assert_eq(fl_osm_tiled_checked(s, 3, v, 6, 2, 2, out, 1), FL_EINVAL);
    cr_assert_eq(fl_osm_tiled_checked(s, 3, v, 6, 2, 2, out, 2), FL_OK);
}
