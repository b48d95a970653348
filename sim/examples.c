/* examples.c: worked examples from shared/seeds (see examples.h). */
#include "examples.h"

#include <math.h>
#include <string.h>

#include "../reference/attention_ref.h"
#include "ops.h"

/* Prints one row's online softmax tile by tile (docs/model.md eq. (OS)): m, l, the numerator u
 * and the rescale factor after each tile; checks the result against the full softmax and the
 * expected values given by the seed to the printed precision.  Returns 1 on agreement. */
static int walk_two_tiles(FILE *out, const char *title, const double *s, const double *V,
                          int n, int tile, const double *expect, int digits)
{
    enum { DV = 2 };
    double m = -INFINITY, l = 0.0, u[DV] = {0, 0}, o[DV], full[DV];
    fprintf(out, "%s\n  scores [", title);
    for (int j = 0; j < n; j++) fprintf(out, "%s%g", j ? ", " : "", s[j]);
    fprintf(out, "], values [");
    for (int j = 0; j < n; j++) fprintf(out, "%s[%g, %g]", j ? ", " : "", V[j * DV], V[j * DV + 1]);
    fprintf(out, "], tiles of %d\n", tile);
    for (int j0 = 0, k = 1; j0 < n; j0 += tile, k++) {
        const int nt = n - j0 < tile ? n - j0 : tile;
        const double mold = m;
        const double a = fl_osm_step(&m, &l, u, DV, s + j0, nt, V + j0 * DV, DV, NULL);
        fprintf(out, "  tile %d: m = %.6f, l = %.6f, u = [%.6f, %.6f], rescale e^(m_old - m) = ",
                k, m, l, u[0], u[1]);
        if (mold == -INFINITY) fprintf(out, "- (first tile)\n");
        else fprintf(out, "%.6f\n", a);
    }
    fl_osm_finish(l, u, DV, o);
    fl_ref_softmax_row(s, n, V, DV, full);
    const double tol = 0.5 * pow(10.0, -digits);
    int ok = 1;
    for (int c = 0; c < DV; c++)
        ok &= fabs(o[c] - full[c]) <= 1e-12 * fmax(1.0, fabs(full[c])) && fabs(o[c] - expect[c]) <= tol;
    fprintf(out, "  result O = u / l = [%.*f, %.*f]; full softmax = [%.*f, %.*f]; seed says [%.*f, %.*f]: %s\n\n",
            digits, o[0], digits, o[1], digits, full[0], digits, full[1], digits, expect[0], digits,
            expect[1], ok ? "PASS" : "FAIL");
    return ok;
}

static int ex_two_tile(FILE *out)
{
    /* handbook notes: one row s = [2, 1, 4, 3] with value rows [1,0], [0,1], [2,0], [0,2] */
    const double s1[] = {2, 1, 4, 3}, v1[] = {1, 0, 0, 1, 2, 0, 0, 2};
    const double e1[] = {1.37497284, 0.50582424};
    /* deep dive: scores [1, 2, 3, 0] with values [[10,0],[0,10],[5,5],[9,1]] */
    const double s2[] = {1, 2, 3, 0}, v2[] = {10, 0, 0, 10, 5, 5, 9, 1};
    const double e2[] = {4.379542, 5.620458};
    int ok = walk_two_tiles(out, "Handbook: two tiles, a larger maximum in the second", s1, v1, 4, 2, e1, 8);
    ok &= walk_two_tiles(out, "Deep dive: two tiles by hand (the 1/sqrt(d) scale omitted)", s2, v2, 4, 2, e2, 6);
    fprintf(out, "two-tile: %s\n", ok ? "PASS" : "FAIL");
    return ok;
}

static const fl_example examples[] = {
    {"two-tile", "online softmax over two tiles, step by step (handbook and deep dive rows)", ex_two_tile},
    {"backward", "gradients with a bottom-right keep mask, (Nq, Nk) = (2,5), (5,2), (4,4), vs the reference", fl_ex_backward},
    {"causal-corners", "top-left vs bottom-right keep matrices for unequal lengths; tile classes", fl_ex_causal_corners},
    {"mask-polarity", "a padding mask (True = exclude) reused as a keep mask picks 1000, not 10", fl_ex_mask_polarity},
    {"gqa-map", "query heads onto K/V heads: 6 over 2 is 0,0,0,1,1,1; MQA; the traffic GQA saves", fl_ex_gqa_map},
};

const fl_example *fl_examples(int *n)
{
    *n = (int)(sizeof examples / sizeof examples[0]);
    return examples;
}

const fl_example *fl_example_find(const char *name)
{
    int n;
    const fl_example *e = fl_examples(&n);
    for (int i = 0; i < n; i++)
        if (strcmp(e[i].name, name) == 0) return &e[i];
    return NULL;
}
