/* test_reference_alone.c: the oracle on its own.  Built with reference/ and include/ on the
 * include path and linked with the reference and base objects only (tests/CMakeLists.txt):
 * nothing of src/ can reach it.  Checks the keep rule against the seeds' matrices, one
 * attention row computed by hand, the fully masked row, and the backward against finite
 * differences of the forward. */
#include <criterion/criterion.h>
#include <math.h>

#include <flashlab/rng.h>

#include "attention_bwd.h"
#include "attention_ref.h"
#include "ref_mask.h"

/* the keep matrix of a mask, row-major into out (Nq x Nk) */
static void keep_matrix(const fl_ref_mask *mk, int *out)
{
    for (int64_t i = 0; i < mk->Nq; i++)
        for (int64_t j = 0; j < mk->Nk; j++) out[i * mk->Nk + j] = fl_ref_keep(i, j, mk);
}

Test(reference_alone, causal_corners_are_the_seeds_matrices)
{
    int got[10];
    /* docs/model.md K1, `flashlab example causal-corners` */
    const int tl[10] = {1, 0, 0, 0, 0, 1, 1, 0, 0, 0}, br[10] = {1, 1, 1, 1, 0, 1, 1, 1, 1, 1};
    const int br52[10] = {0, 0, 0, 0, 0, 0, 1, 0, 1, 1};
    fl_ref_mask a = {2, 5, 1, -1, -1}, b = {2, 5, 2, -1, -1}, c = {5, 2, 2, -1, -1};
    keep_matrix(&a, got);
    cr_assert_arr_eq(got, tl, sizeof tl, "(2, 5) top-left");
    keep_matrix(&b, got);
    cr_assert_arr_eq(got, br, sizeof br, "(2, 5) bottom-right");
    keep_matrix(&c, got);
    cr_assert_arr_eq(got, br52, sizeof br52, "(5, 2) bottom-right");
    /* a window (1, 0) on a square matrix: the diagonal and the key before it */
    fl_ref_mask w = {4, 4, 0, 1, 0};
    for (int64_t i = 0; i < 4; i++)
        for (int64_t j = 0; j < 4; j++) cr_assert_eq(fl_ref_keep(i, j, &w), j == i || j == i - 1);
    cr_assert(fl_ref_mask_dense(&(fl_ref_mask){3, 3, 0, -1, -1}));
    cr_assert(!fl_ref_mask_dense(&w));
}

Test(reference_alone, one_row_by_hand)
{
    /* q = [1, 0], keys [1, 0] and [2, 0], scale 1: scores 1 and 2; values [1], [3] */
    const double Q[2] = {1, 0}, K[4] = {1, 0, 2, 0}, V[2] = {1, 3};
    double O, L;
    cr_assert_eq(fl_ref_attention(1, 2, 2, 1, Q, K, V, 1.0, NULL, NULL, &O, &L), FL_OK);
    const double e1 = exp(1.0), e2 = exp(2.0);
    cr_expect(fabs(O - (e1 * 1 + e2 * 3) / (e1 + e2)) < 1e-15, "O = %.17g", O);
    cr_expect(fabs(L - log(e1 + e2)) < 1e-15, "L = %.17g", L);
    /* a fully masked row: zeros and L = -inf, never NaN.  Two queries over one key, bottom-right:
     * query 0 keeps j <= 0 + 1 - 2 = -1, nothing; query 1 keeps key 0 */
    const fl_ref_mask br = {2, 1, 2, -1, -1};
    const double Q2[4] = {1, 0, 0, 1};
    double O2[2], L2[2];
    cr_assert_eq(fl_ref_attention(2, 1, 2, 1, Q2, K, V, 1.0, fl_ref_keep, &br, O2, L2), FL_OK);
    cr_expect(O2[0] == 0.0 && L2[0] == -INFINITY, "O = %g, L = %g", O2[0], L2[0]);
    cr_expect(O2[1] == V[0] && L2[1] == 0.0, "O = %g, L = %g", O2[1], L2[1]);
}

Test(reference_alone, backward_matches_finite_differences)
{
    enum { Nq = 3, Nk = 4, d = 3 };
    double Q[Nq * d], K[Nk * d], V[Nk * d], dO[Nq * d], dQ[Nq * d], dK[Nk * d], dV[Nk * d], O[Nq * d], L[Nq];
    uint64_t st = 7;
    fl_rng_fill(&st, Q, Nq * d, -1, 1), fl_rng_fill(&st, K, Nk * d, -1, 1);
    fl_rng_fill(&st, V, Nk * d, -1, 1), fl_rng_fill(&st, dO, Nq * d, -1, 1);
    const fl_ref_mask mk = {Nq, Nk, 2, -1, -1};
    const double scale = 0.5;
    cr_assert_eq(fl_ref_attention_bwd(Nq, Nk, d, d, Q, K, V, dO, scale, fl_ref_keep, &mk, dQ, dK, dV, O, L,
                                      NULL, NULL), FL_OK);
    /* f = sum dO o O; df/dx by central differences for every entry of Q, K and V */
    double *xs[3] = {Q, K, V}, *gs[3] = {dQ, dK, dV};
    const int ns[3] = {Nq * d, Nk * d, Nk * d};
    for (int t = 0; t < 3; t++)
        for (int k = 0; k < ns[t]; k++) {
            const double h = 1e-6, x0 = xs[t][k];
            double f[2];
            for (int s = 0; s < 2; s++) {
                xs[t][k] = x0 + (s ? h : -h);
                double Oh[Nq * d];
                cr_assert_eq(fl_ref_attention(Nq, Nk, d, d, Q, K, V, scale, fl_ref_keep, &mk, Oh, NULL), FL_OK);
                f[s] = 0;
                for (int i = 0; i < Nq * d; i++) f[s] += dO[i] * Oh[i];
            }
            xs[t][k] = x0;
            const double fd = (f[1] - f[0]) / (2 * h);
            cr_expect(fabs(fd - gs[t][k]) < 1e-8, "tensor %d entry %d: finite difference %.12g, gradient %.12g", t, k,
                      fd, gs[t][k]);
        }
}

/* The variants (docs/model.md §14): one row by hand with a sink, with a cap and with ALiBi. */
Test(reference_alone, variant_rows_by_hand)
{
    /* q = [1, 0], keys [1, 0] and [2, 0], scale 1: scores 1 and 2; values [1], [3] */
    const double Q[2] = {1, 0}, K[4] = {1, 0, 2, 0}, V[2] = {1, 3};
    double O, L;
    /* a sink logit 0.5 joins the softmax with value 0: O = (e V_1 + e^2 V_2) / (e + e^2 + e^0.5) */
    const fl_ref_variant sink = {0.0, 0.0, 1, 0.5, 0.0, 0, 0, 0};
    cr_assert_eq(fl_ref_attention_v(1, 2, 2, 1, Q, K, V, 1.0, NULL, NULL, &sink, &O, &L), FL_OK);
    const double e1 = exp(1.0), e2 = exp(2.0), es = exp(0.5);
    cr_expect(fabs(O - (e1 * 1 + e2 * 3) / (e1 + e2 + es)) < 1e-15, "sink: O = %.17g", O);
    cr_expect(fabs(L - log(e1 + e2 + es)) < 1e-15, "sink: L = %.17g", L);
    /* a cap of 1.5: scores 1.5 tanh(1/1.5), 1.5 tanh(2/1.5) */
    const fl_ref_variant cap = {1.5, 0.0, 0, 0.0, 0.0, 0, 0, 0};
    cr_assert_eq(fl_ref_attention_v(1, 2, 2, 1, Q, K, V, 1.0, NULL, NULL, &cap, &O, &L), FL_OK);
    const double c1 = exp(1.5 * tanh(1 / 1.5)), c2 = exp(1.5 * tanh(2 / 1.5));
    cr_expect(fabs(O - (c1 * 1 + c2 * 3) / (c1 + c2)) < 1e-15, "softcap: O = %.17g", O);
    /* ALiBi slope 0.25 on a 1 x 2 matrix: query 0 sits at key 1 (i + Nk - Nq = 1): biases -0.25, 0 */
    const fl_ref_variant al = {0.0, 0.25, 0, 0.0, 0.0, 0, 0, 0};
    cr_assert_eq(fl_ref_attention_v(1, 2, 2, 1, Q, K, V, 1.0, NULL, NULL, &al, &O, &L), FL_OK);
    const double a1 = exp(0.75), a2 = exp(2.0);
    cr_expect(fabs(O - (a1 * 1 + a2 * 3) / (a1 + a2)) < 1e-15, "alibi: O = %.17g", O);
    /* a fully masked row with a sink: O = 0, L = the sink */
    const fl_ref_mask br = {2, 1, 2, -1, -1};
    const double Q2[4] = {1, 0, 0, 1};
    double O2[2], L2[2];
    cr_assert_eq(fl_ref_attention_v(2, 1, 2, 1, Q2, K, V, 1.0, fl_ref_keep, &br, &sink, O2, L2), FL_OK);
    cr_expect(O2[0] == 0.0 && L2[0] == 0.5, "O = %g, L = %g", O2[0], L2[0]);
}

/* The backward with every variant (d_qk != d_v, a sink, a cap, ALiBi; dropout is a fixed mask, so
 * its gradient is checked the same way) against finite differences of the forward, the sink's
 * gradient included. */
Test(reference_alone, variant_backward_matches_finite_differences)
{
    enum { Nq = 3, Nk = 5, d = 3, dv = 2 };
    double Q[Nq * d], K[Nk * d], V[Nk * dv], dO[Nq * dv], dQ[Nq * d], dK[Nk * d], dV[Nk * dv], O[Nq * dv], L[Nq];
    uint64_t st = 11;
    fl_rng_fill(&st, Q, Nq * d, -1, 1), fl_rng_fill(&st, K, Nk * d, -1, 1);
    fl_rng_fill(&st, V, Nk * dv, -1, 1), fl_rng_fill(&st, dO, Nq * dv, -1, 1);
    const fl_ref_mask mk = {Nq, Nk, 2, -1, -1};
    const double scale = 0.7;
    for (int drop = 0; drop < 2; drop++) {
        fl_ref_variant v = {0.9, 0.3, 1, 0.2, drop ? 0.4 : 0.0, 5, 1, 2};
        double dsink;
        cr_assert_eq(fl_ref_attention_bwd_v(Nq, Nk, d, dv, Q, K, V, dO, scale, fl_ref_keep, &mk, &v, dQ, dK, dV, O, L,
                                            NULL, NULL, &dsink), FL_OK);
        double *xs[4] = {Q, K, V, &v.sink}, *gs[4] = {dQ, dK, dV, &dsink};
        const int ns[4] = {Nq * d, Nk * d, Nk * dv, 1};
        for (int t = 0; t < 4; t++)
            for (int k = 0; k < ns[t]; k++) {
                const double h = 1e-6, x0 = xs[t][k];
                double f[2];
                for (int s = 0; s < 2; s++) {
                    xs[t][k] = x0 + (s ? h : -h);
                    double Oh[Nq * dv];
                    cr_assert_eq(fl_ref_attention_v(Nq, Nk, d, dv, Q, K, V, scale, fl_ref_keep, &mk, &v, Oh, NULL), FL_OK);
                    f[s] = 0;
                    for (int i = 0; i < Nq * dv; i++) f[s] += dO[i] * Oh[i];
                }
                xs[t][k] = x0;
                const double fd = (f[1] - f[0]) / (2 * h);
                cr_expect(fabs(fd - gs[t][k]) < 1e-8, "dropout %d, tensor %d entry %d: finite difference %.12g, gradient %.12g",
                          drop, t, k, fd, gs[t][k]);
            }
    }
}

/* Dropout's mask comes from Philox4x32-10: the known answers of Random123 (Salmon et al.'s
 * kat_vectors), and a drop rate near p. */
Test(reference_alone, philox_and_the_drop_rate)
{
    uint32_t w[4];
    fl_philox4x32(0, 0, 0, 0, 0, w);
    cr_expect(w[0] == 0x6627e8d5u && w[1] == 0xe169c58du && w[2] == 0xbc57ac4cu && w[3] == 0x9b00dbd8u,
              "zeros: %08x %08x %08x %08x", w[0], w[1], w[2], w[3]);
    fl_philox4x32(UINT64_MAX, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, w);
    cr_expect(w[0] == 0x408f276du && w[1] == 0x41c83b0eu && w[2] == 0xa20bc7c6u && w[3] == 0x6d5451fdu,
              "ones: %08x %08x %08x %08x", w[0], w[1], w[2], w[3]);
    fl_philox4x32(UINT64_C(0x299f31d0a4093822), 0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, w);
    cr_expect(w[0] == 0xd16cfe09u && w[1] == 0x94fdccebu && w[2] == 0x5001e420u && w[3] == 0x24126ea1u,
              "pi: %08x %08x %08x %08x", w[0], w[1], w[2], w[3]);
    int dropped = 0;
    for (int i = 0; i < 200; i++)
        for (int j = 0; j < 200; j++) dropped += !fl_dropout_keep(42, 1, 3, i, j, 0.3);
    cr_expect(fabs(dropped / 40000.0 - 0.3) < 0.01, "dropped %d of 40000", dropped); /* 4.4 sd */
    cr_expect(fl_dropout_keep(42, 1, 3, 5, 7, 0.0), "p = 0 keeps everything");
}
