/* test_tile_ops.c: the checked tile ops (include/flashlab/ops.h, fl_tile_*): what each computes,
 * that a chain of them is the online softmax of eq. (OS) (equal to fl_osm_tiled), that count mode
 * checks and computes nothing, and that every bad buffer, tile and alias is refused with a message
 * naming it and changes nothing. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "machine.h"
#include "ops.h"

static const double NEG = -INFINITY;

/* A compute machine of capacity 1000 with a 4x3 tensor T; buffers a (4x3), b (4x3), v (4x1). */
typedef struct {
    fl_machine *m;
    int T;
    fl_buf *a, *b, *v;
} rig;

static rig make(fl_mode mode)
{
    rig g = {fl_machine_alloc(1000, mode, "tiles"), 0, NULL, NULL, NULL};
    cr_assert_not_null(g.m);
    cr_assert_eq(fl_tensor_add(g.m, "T", 4, 3, 2, &g.T), FL_OK);
    cr_assert_eq(fl_sram_alloc(g.m, "a", 4, 3, &g.a), FL_OK);
    cr_assert_eq(fl_sram_alloc(g.m, "b", 4, 3, &g.b), FL_OK);
    cr_assert_eq(fl_sram_alloc(g.m, "v", 4, 1, &g.v), FL_OK);
    return g;
}

static void set(fl_buf *b, const double *vals, int64_t nr, int64_t nc)
{
    for (int64_t r = 0; r < nr; r++)
        for (int64_t c = 0; c < nc; c++) b->x[r * b->cols + c] = vals[r * nc + c];
}

static void refused(fl_status got, fl_status want, const char *needle)
{
    cr_assert_eq(got, want, "status %d, want %d (%s)", got, want, fl_last_error());
    cr_assert(strstr(fl_last_error(), needle), "'%s' not in: %s", needle, fl_last_error());
}

Test(tile_ops, reductions_exp_and_row_scaling_compute_what_ops_h_says)
{
    rig g = make(FL_COMPUTE);
    const double s[] = {1, 3, 2, NEG, 0.5, NEG, NEG, NEG, NEG, 4, 4, 4};
    set(g.a, s, 4, 3);
    cr_assert_eq(fl_tile_row_max(g.m, g.v, g.a, 4, 3, 0), FL_OK);
    cr_assert(g.v->x[0] == 3 && g.v->x[1] == 0.5 && g.v->x[2] == NEG && g.v->x[3] == 4);
    cr_assert_eq(fl_tile_exp_diff(g.m, g.b, g.a, g.v, 4, 3), FL_OK);
    cr_assert(fabs(g.b->x[0] - exp(-2)) < 1e-15 && g.b->x[1] == 1.0 && g.b->x[3] == 0.0);
    cr_assert(g.b->x[6] == 0.0 && g.b->x[7] == 0.0 && g.b->x[9] == 1.0); /* -inf - -inf is 0, not NaN */
    cr_assert_eq(fl_tile_row_sum(g.m, g.v, g.b, 4, 3, 0), FL_OK);
    cr_assert(fabs(g.v->x[0] - (exp(-2) + 1 + exp(-1))) < 1e-15 && g.v->x[2] == 0.0 && g.v->x[3] == 3.0);
    cr_assert_eq(fl_tile_row_sum(g.m, g.v, g.b, 4, 3, 1), FL_OK); /* accumulate: twice the sum */
    cr_assert(g.v->x[3] == 6.0);
    cr_assert_eq(fl_tile_div_rows(g.m, g.b, g.v, 4, 3), FL_OK);
    cr_assert(fabs(g.b->x[10] - 1.0 / 6) < 1e-15 && g.b->x[6] == 0.0); /* l = 0: zeros (M0) */
    cr_assert_eq(fl_tile_scale_rows(g.m, g.b, g.v, 4, 3), FL_OK);
    cr_assert(fabs(g.b->x[10] - 1.0) < 1e-15);
    fl_machine_free(g.m);
}

Test(tile_ops, matmul_copy_fill_and_lse)
{
    rig g = make(FL_COMPUTE);
    const double A[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    set(g.a, A, 4, 3);
    fl_buf *c;
    cr_assert_eq(fl_sram_alloc(g.m, "c", 4, 4, &c), FL_OK);
    cr_assert_eq(fl_tile_matmul(g.m, c, g.a, g.a, 2, 2, 3, 1, 0.5, 0), FL_OK); /* 0.5 A A^T */
    cr_assert(c->x[0] == 7.0 && c->x[1] == 16.0 && c->x[4] == 16.0 && c->x[5] == 38.5);
    cr_assert_eq(fl_tile_matmul(g.m, c, g.a, g.a, 2, 2, 3, 1, 0.5, 1), FL_OK); /* accumulate */
    cr_assert(c->x[0] == 14.0);
    cr_assert_eq(fl_tile_copy(g.m, g.b, g.a, 2, 2), FL_OK);
    cr_assert(g.b->x[0] == 1 && g.b->x[4] == 5 && g.b->x[2] == 0); /* only the 2x2 tile */
    cr_assert_eq(fl_tile_fill(g.m, g.b, 1, 3, -2.5), FL_OK);
    cr_assert(g.b->x[0] == -2.5 && g.b->x[2] == -2.5 && g.b->x[3] == 4);
    fl_buf *l;
    cr_assert_eq(fl_sram_alloc(g.m, "l", 2, 1, &l), FL_OK);
    l->x[0] = exp(1.5), l->x[1] = 0.0;
    g.v->x[0] = 2.0, g.v->x[1] = 7.0;
    cr_assert_eq(fl_tile_lse(g.m, g.v, g.v, l, 2), FL_OK); /* in place on m */
    cr_assert(fabs(g.v->x[0] - 3.5) < 1e-15 && g.v->x[1] == NEG);
    fl_machine_free(g.m);
}

Test(tile_ops, max_rescale_rescales_what_was_accumulated_under_the_old_maximum)
{
    rig g = make(FL_COMPUTE);
    fl_buf *l;
    cr_assert_eq(fl_sram_alloc(g.m, "l", 4, 1, &l), FL_OK);
    double mx[] = {1, NEG, 5, NEG}, ls[] = {2, 0, 3, 0}, acc[] = {1, 1, 1, 0, 0, 0, 2, 2, 2, 0, 0, 0};
    const double s[] = {3, 0, 1, 2, NEG, 1, 4, 4, NEG, NEG, NEG, NEG};
    set(g.v, mx, 4, 1);
    set(l, ls, 4, 1);
    set(g.b, acc, 4, 3);
    set(g.a, s, 4, 3);
    fl_buf *resc[] = {l, g.b};
    cr_assert_eq(fl_tile_max_rescale(g.m, g.v, g.a, 4, 3, resc, 2), FL_OK);
    cr_assert(g.v->x[0] == 3 && g.v->x[1] == 2 && g.v->x[2] == 5 && g.v->x[3] == NEG);
    cr_assert(fabs(l->x[0] - 2 * exp(-2)) < 1e-15 && fabs(g.b->x[2] - exp(-2)) < 1e-15); /* a = e^(1-3) */
    cr_assert(l->x[2] == 3 && g.b->x[8] == 2);                                     /* max unchanged: a = 1 */
    cr_assert(l->x[1] == 0 && l->x[3] == 0); /* from empty: a = 0; all masked: a = 1, m stays -inf */
    fl_machine_free(g.m);
}

/* The online softmax of one row written with the tile ops equals fl_osm_tiled (eq. (OS)), for
 * huge scores, a masked first tile and a fully masked row. */
static void online_row(const double *s, int n, const double *V, int dv, int tile, double *out)
{
    fl_machine *m = fl_machine_alloc(1000, FL_COMPUTE, "online");
    int S, Vt, O;
    fl_buf *sb, *vb, *ob, *mb, *lb;
    cr_assert_eq(fl_tensor_add(m, "S", 1, n, 2, &S), FL_OK);
    cr_assert_eq(fl_tensor_add(m, "V", n, dv, 2, &Vt), FL_OK);
    cr_assert_eq(fl_tensor_add(m, "O", 1, dv, 2, &O), FL_OK);
    memcpy(fl_tensor_get(m, S)->data, s, sizeof(double) * (size_t)n);
    memcpy(fl_tensor_get(m, Vt)->data, V, sizeof(double) * (size_t)(n * dv));
    cr_assert_eq(fl_sram_alloc(m, "s", 1, tile, &sb), FL_OK);
    cr_assert_eq(fl_sram_alloc(m, "v", tile, dv, &vb), FL_OK);
    cr_assert_eq(fl_sram_alloc(m, "o", 1, dv, &ob), FL_OK);
    cr_assert_eq(fl_sram_alloc(m, "m", 1, 1, &mb), FL_OK);
    cr_assert_eq(fl_sram_alloc(m, "l", 1, 1, &lb), FL_OK);
    cr_assert_eq(fl_tile_fill(m, mb, 1, 1, NEG), FL_OK);
    fl_buf *resc[] = {lb, ob};
    for (int c0 = 0; c0 < n; c0 += tile) {
        const int t = n - c0 < tile ? n - c0 : tile;
        cr_assert_eq(fl_tile_load(m, sb, 0, S, 0, c0, 1, t), FL_OK);
        cr_assert_eq(fl_tile_load(m, vb, 0, Vt, c0, 0, t, dv), FL_OK);
        cr_assert_eq(fl_tile_max_rescale(m, mb, sb, 1, t, resc, 2), FL_OK);
        cr_assert_eq(fl_tile_exp_diff(m, sb, sb, mb, 1, t), FL_OK);
        cr_assert_eq(fl_tile_row_sum(m, lb, sb, 1, t, 1), FL_OK);
        cr_assert_eq(fl_tile_matmul(m, ob, sb, vb, 1, dv, t, 0, 1.0, 1), FL_OK);
    }
    cr_assert_eq(fl_tile_div_rows(m, ob, lb, 1, dv), FL_OK);
    cr_assert_eq(fl_tile_store(m, ob, 0, O, 0, 0, 1, dv), FL_OK);
    memcpy(out, fl_tensor_get(m, O)->data, sizeof(double) * (size_t)dv);
    cr_assert_eq(fl_machine_reads(m), n + n * dv); /* each score and value row read once */
    fl_machine_free(m);
}

Test(tile_ops, a_chain_of_tile_ops_is_the_online_softmax)
{
    const double V[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    const double rows[][5] = {{1, 2, 3, 0, -1}, {1000, 1001, 999, 1002, 998}, {NEG, NEG, 0.5, 2, NEG},
                              {NEG, NEG, NEG, NEG, NEG}};
    for (int r = 0; r < 4; r++)
        for (int tile = 1; tile <= 5; tile++) {
            double got[2], want[2];
            online_row(rows[r], 5, V, 2, tile, got);
            cr_assert_eq(fl_osm_tiled(rows[r], 5, V, 2, tile, want), FL_OK);
            for (int c = 0; c < 2; c++)
                cr_assert(fabs(got[c] - want[c]) <= 1e-12 * fmax(1, fabs(want[c])), "row %d tile %d: %.17g vs %.17g",
                          r, tile, got[c], want[c]);
        }
}

Test(tile_ops, load_and_store_at_a_buffer_row_and_masking)
{
    rig g = make(FL_COMPUTE);
    double *T = fl_tensor_get(g.m, g.T)->data;
    for (int i = 0; i < 12; i++) T[i] = i;
    cr_assert_eq(fl_tile_load(g.m, g.a, 2, g.T, 1, 0, 2, 3), FL_OK); /* rows 1-2 of T into rows 2-3 */
    cr_assert(g.a->x[6] == 3 && g.a->x[11] == 8 && g.a->x[0] == 0);
    cr_assert_eq(fl_machine_reads(g.m), 6);
    refused(fl_tile_load(g.m, g.a, 3, g.T, 0, 0, 2, 3), FL_EBOUNDS, "out of bounds");
    refused(fl_tile_store(g.m, g.a, 5, g.T, 0, 0, 1, 3), FL_EBOUNDS, "buffer row 5");
    cr_assert_eq(fl_tile_store(g.m, g.a, 3, g.T, 0, 0, 1, 3), FL_OK);
    cr_assert(T[0] == 6 && T[2] == 8 && fl_machine_writes(g.m) == 3);
    const unsigned char keep[] = {1, 0, 1, 0, 0, 1};
    cr_assert_eq(fl_tile_keep(g.m, g.a, 2, 3, keep, 6), FL_OK);
    cr_assert(g.a->x[0] == 0 && g.a->x[1] == NEG && g.a->x[3] == NEG && g.a->x[5] == 0);
    refused(fl_tile_keep(g.m, g.a, 2, 3, keep, 5), FL_EINVAL, "5 keep flags for a 2x3 tile");
    fl_machine_free(g.m);
}

Test(tile_ops, count_mode_checks_shapes_and_computes_nothing)
{
    rig g = make(FL_COUNT);
    cr_assert_null(g.a->x);
    cr_assert_eq(fl_tile_matmul(g.m, g.b, g.a, g.a, 4, 3, 3, 0, 1.0, 0), FL_OK);
    fl_buf *resc[] = {g.b};
    cr_assert_eq(fl_tile_max_rescale(g.m, g.v, g.a, 4, 3, resc, 1), FL_OK);
    cr_assert_eq(fl_tile_lse(g.m, g.v, g.v, g.v, 4), FL_OK);
    refused(fl_tile_row_max(g.m, g.v, g.a, 5, 3, 0), FL_EBOUNDS, "5x1 tile does not fit dst v (4x1)");
    cr_assert_eq(fl_tile_load(g.m, g.a, 0, g.T, 0, 0, 4, 3), FL_OK);
    cr_assert_eq(fl_machine_reads(g.m), 12);
    fl_machine_free(g.m);
}

/* Planted faults: each bad call is refused, named, and leaves the values as they were. */
Test(tile_ops, bad_buffers_tiles_and_aliases_are_refused_and_change_nothing)
{
    rig g = make(FL_COMPUTE);
    rig other = make(FL_COMPUTE);
    for (int i = 0; i < 12; i++) g.a->x[i] = g.b->x[i] = i + 1;
    g.v->x[0] = 1;
    fl_buf *resc_self[] = {g.v}, *resc_twice[] = {g.b, g.b}, *resc_s[] = {g.a};
    refused(fl_tile_fill(g.m, other.a, 1, 1, 0), FL_EINVAL, "not a live SRAM buffer of this machine");
    refused(fl_tile_copy(g.m, g.a, NULL, 1, 1), FL_EINVAL, "src is not a live SRAM buffer");
    refused(fl_tile_fill(g.m, g.a, 0, 3, 0), FL_EBOUNDS, "0x3 tile does not fit");
    refused(fl_tile_fill(g.m, g.a, 4, 4, 0), FL_EBOUNDS, "4x4 tile does not fit the buffer a (4x3)");
    refused(fl_tile_matmul(g.m, g.a, g.a, g.b, 2, 2, 2, 1, 1.0, 0), FL_EINVAL, "C and A are the same buffer");
    refused(fl_tile_matmul(g.m, g.a, g.b, g.b, 2, 2, 4, 1, 1.0, 0), FL_EBOUNDS, "does not fit A b");
    refused(fl_tile_matmul(g.m, g.a, g.b, g.v, 2, 2, 1, 1, NAN, 0), FL_EINVAL, "must be finite");
    refused(fl_tile_exp_diff(g.m, g.v, g.v, g.v, 1, 1), FL_EINVAL, "dst and the row vector m");
    refused(fl_tile_scale_rows(g.m, g.v, g.v, 1, 1), FL_EINVAL, "dst and the row vector");
    refused(fl_tile_div_rows(g.m, g.a, g.a, 1, 1), FL_EINVAL, "same buffer");
    refused(fl_tile_max_rescale(g.m, g.v, g.a, 4, 3, resc_self, 1), FL_EINVAL, "a buffer to rescale and the row vector m");
    refused(fl_tile_max_rescale(g.m, g.v, g.a, 4, 3, resc_twice, 2), FL_EINVAL, "named twice");
    refused(fl_tile_max_rescale(g.m, g.v, g.a, 4, 3, resc_s, 1), FL_EINVAL, "the scores are the same buffer");
    refused(fl_tile_max_rescale(g.m, g.v, g.a, 4, 3, resc_s, 9), FL_EINVAL, "9 buffers to rescale");
    refused(fl_tile_lse(g.m, g.v, g.v, g.v, 5), FL_EBOUNDS, "lse: a 5x1 tile does not fit dst");
    fl_buf *freed = g.b;
    fl_sram_free(g.m, g.b);
    refused(fl_tile_row_sum(g.m, g.v, freed, 1, 1, 0), FL_EINVAL, "src is not a live SRAM buffer");
    for (int i = 0; i < 12; i++) cr_assert_eq(g.a->x[i], i + 1, "a[%d] changed", i);
    cr_assert_eq(g.v->x[0], 1);
    fl_machine_free(g.m);
    fl_machine_free(other.m);
}
