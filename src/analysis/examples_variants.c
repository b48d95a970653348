/* examples_variants.c: the worked examples of the score variants, a sink row and a softcapped
 * row (docs/model.md §14, rules SK and SC; registered in examples.c).  Each walks the handbook's
 * row s = [2, 1, 4, 3] (values [1,0], [0,1], [2,0], [0,2]) by hand through the online softmax in
 * two tiles, then checks the hand result against the reference and against flash2 run on the
 * machine with the same row (d = 1, Q = [1], K = s, so the scores are s exactly), and the hand
 * result against the numbers docs/model.md prints. */
#include <flashlab/examples.h>

#include <math.h>
#include <string.h>

#include "attention_ref.h"
#include <flashlab/ops.h>
#include <flashlab/run.h>

enum { NK = 4, DV = 2, TILE = 2 };
static const double row_s[NK] = {2, 1, 4, 3}, row_v[NK * DV] = {1, 0, 0, 1, 2, 0, 0, 2};

/* Walks scores s (already capped) through the online softmax from the state (m, l) = (m0, l0),
 * u = 0, printing each tile; o receives u / l, *mf and *lf the final m and l. */
static void walk(FILE *out, const double *s, double m0, double l0, double *o, double *mf, double *lf)
{
    double m = m0, l = l0, u[DV] = {0, 0};
    for (int j0 = 0, k = 1; j0 < NK; j0 += TILE, k++) {
        const double mold = m, a = fl_osm_step(&m, &l, u, DV, s + j0, TILE, row_v + j0 * DV, DV, NULL);
        fprintf(out, "  tile %d: m = %.8f, l = %.8f, u = [%.8f, %.8f], rescale e^(m_old - m) = ", k, m, l, u[0], u[1]);
        if (mold == -INFINITY) fprintf(out, "- (first tile)\n");
        else fprintf(out, "%.8f\n", a);
    }
    fl_osm_finish(l, u, DV, o);
    *mf = m, *lf = l;
}

/* The row on the reference and on flash2 (Br = 1, Bc = 2: the two tiles), with variant v and
 * the problem fields it sets in p; checks hand, reference and machine, prints the sink's reads. */
static int check(FILE *out, const char *name, fl_problem p, const fl_ref_variant *v, const double *hand,
                 const double *expect)
{
    const double Q[1] = {1.0};
    double ref[DV], O[DV] = {0, 0};
    int ok = fl_ref_attention_v(1, NK, 1, DV, Q, row_s, row_v, 1.0, NULL, NULL, v, ref, NULL) == FL_OK;
    p.algo = fl_algo_with_role(FL_SCHED_DEFAULT), p.N = 1, p.Nk = NK, p.d = 1, p.d_v = DV, p.M = 1000;
    p.Br = 1, p.Bc = TILE;
    const double sink[1] = {v->sink};
    fl_values vals = {Q, row_s, row_v, NULL, O, NULL, NULL, NULL, NULL, p.sinks ? sink : NULL, NULL};
    fl_result r;
    ok &= fl_run_values(&p, &vals, &r) == FL_OK && r.total == r.closed.total;
    int64_t sink_reads = 0;
    for (int t = 0; t < r.ntensors; t++)
        if (!strcmp(r.t[t].name, "sink")) sink_reads = r.t[t].reads;
    for (int c = 0; c < DV; c++) {
        ok &= fabs(hand[c] - ref[c]) <= 1e-12 * fmax(1.0, fabs(ref[c]));
        ok &= fabs(O[c] - ref[c]) <= 1e-12 * fmax(1.0, fabs(ref[c]));
        ok &= fabs(hand[c] - expect[c]) <= 0.5e-8;
    }
    fprintf(out, "  by hand O = [%.8f, %.8f]; reference [%.8f, %.8f]; %s on the machine [%.8f, %.8f]\n", hand[0],
            hand[1], ref[0], ref[1], fl_algo_name(p.algo), O[0], O[1]);
    fprintf(out, "  docs/model.md says [%.8f, %.8f]; the machine moved %lld elements", expect[0], expect[1],
            (long long)r.total);
    if (p.sinks) fprintf(out, " (%lld of them the sink, rule R3b)", (long long)sink_reads);
    fprintf(out, ", its closed form %lld\n%s: %s\n", (long long)r.closed.total, name, ok ? "PASS" : "FAIL");
    return ok;
}

int fl_ex_sink_row(FILE *out)
{
    /* e^3 joins the denominator: O = (e^2 [1,0] + e^1 [0,1] + e^4 [2,0] + e^3 [0,2]) / (e^2 + e^1 + e^4 + e^3 + e^3) */
    const double sink = 3.0, expect[DV] = {1.11164358, 0.40895082}, plain[DV] = {1.37497284, 0.50582424};
    double o[DV];
    fprintf(out, "A sink row (rule SK): scores [2, 1, 4, 3], values [1,0], [0,1], [2,0], [0,2], sink logit %g,\n"
                 "tiles of %d.  The sink is a key whose value is 0: the state starts at (m, l) = (sink, 1), u = 0.\n",
            sink, TILE);
    double m, l;
    walk(out, row_s, sink, 1.0, o, &m, &l);
    fprintf(out, "  the sink's share of the row, e^(sink - m) / l = %.8f; without the sink the row gives\n"
                 "  [%.8f, %.8f] (two-tile), each entry 1 / (1 - share) = %.8f times this one\n",
            exp(sink - m) / l, plain[0], plain[1], plain[0] / o[0]);
    fl_problem p = fl_problem_default();
    p.sinks = 1;
    fl_ref_variant v = {0};
    v.has_sink = 1, v.sink = sink;
    return check(out, "sink-row", p, &v, o, expect);
}

int fl_ex_softcap_row(FILE *out)
{
    const double c = 2.0, expect[DV] = {0.91261208, 0.73373220};
    double s[NK], o[DV];
    fprintf(out, "A softcapped row (rule SC): scores [2, 1, 4, 3] capped at c = %g, s <- c tanh(s / c), values [1,0],\n"
                 "[0,1], [2,0], [0,2], tiles of %d.\n  capped scores [",
            c, TILE);
    for (int j = 0; j < NK; j++) fprintf(out, "%s%.8f", j ? ", " : "", s[j] = c * tanh(row_s[j] / c));
    fprintf(out, "]: every score now below c, so the row's weights flatten\n");
    double m, l;
    walk(out, s, -INFINITY, 0.0, o, &m, &l);
    fl_problem p = fl_problem_default();
    p.softcap = c;
    fl_ref_variant v = {0};
    v.softcap = c;
    return check(out, "softcap-row", p, &v, o, expect);
}
