/* laws.c: the IO laws fitted (GSL, fit.h) to sweeps of the count-only machine and printed as
 * `flashlab bound` and `flashlab report` show them (see laws.h; docs/analysis.md explains every
 * number and why each fit's regime is the one chosen). */
#include <flashlab/laws.h>

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <flashlab/schedule.h>

fl_sweep_spec fl_analysis_dsweep(void)
{
    static const int64_t N[] = {65536}, M[] = {524288}, d[] = {16, 32, 64, 128, 256};
    fl_sweep_spec s = fl_sweep_spec_init();
    s.N = N, s.nN = 1;
    s.M = M, s.nM = 1;
    s.d = d, s.nd = 5;
    return s;
}

/* Distinct values of a coordinate among t's points of schedule a, ascending. */
static int distinct(const fl_table *t, fl_algo a, int which, int64_t *v, int cap)
{
    int n = 0;
    for (size_t i = 0; i < t->n; i++) {
        if (t->p[i].algo != a) continue;
        int64_t x = which == 0 ? t->p[i].N : which == 1 ? t->p[i].d : t->p[i].M;
        int k = 0;
        while (k < n && v[k] != x) k++;
        if (k == n && n < cap) v[n++] = x;
    }
    for (int i = 1; i < n; i++) /* insertion sort */
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            int64_t s = v[j];
            v[j] = v[j - 1];
            v[j - 1] = s;
        }
    return n;
}

static void print_fit_row(FILE *out, const char *label, const fl_fit *f, const char *note)
{
    fprintf(out, "  %-28s %3zu  %+8.4f ± %.4f   R² %.4f%s\n", label, f->n, f->slope, f->se_slope, f->r2,
            note ? note : "");
}

/* Whether schedule a materializes the score matrices (standard attention, Algorithm 0): its law
 * is Theta(Nd + N²), not the flash schedules' c N²d²/M. */
static int materializes(fl_algo a) { return (fl_schedule_get(a)->flags & FL_SCHED_MATERIALIZES) != 0; }

fl_status fl_bound_print(FILE *out, const fl_table *t, const fl_table *dt, int brief)
{
    char label[96], note[96];
    fl_fit f;
    fl_fit_const c;
    int64_t ds[16], Ns[64], Ms[64];
    fl_algo order[FL_ALGO_MAX], std = -1;
    const int nord = fl_algos_all(NULL, order);
    const fl_algo law = fl_algo_with_role(FL_SCHED_PAPER_LAW);
    for (int ai = nord - 1; ai >= 0; ai--)
        if (materializes(order[ai])) std = order[ai];

    fprintf(out, "Slope of HBM traffic (elements) in M at fixed N, d; regime d <= M <= Nd "
                 "(the paper's Theorem 2):\n");
    fprintf(out, "  %-28s %3s  %8s   %6s\n", "schedule, d, N", "pts", "slope", "± SE");
    for (int ai = 0; ai < nord; ai++) {
        const fl_algo a = order[ai];
        int nd = distinct(t, a, 1, ds, 16), nN = distinct(t, a, 0, Ns, 64);
        for (int j = 0; j < nd; j++)
            for (int i = brief ? nN - 1 : 0; i < nN; i++) {
                fl_select s = {a, Ns[i], ds[j], 0, FL_REGIME_PAPER};
                if (fl_law_fit(t, &s, FL_AXIS_M, &f)) continue; /* fewer than 3 points */
                snprintf(label, sizeof label, "%-8s d = %-4" PRId64 " N = %" PRId64, fl_algo_name(a), ds[j], Ns[i]);
                note[0] = 0;
                if (a == law)
                    snprintf(note, sizeof note, "   -1 within 1 SE: %s",
                             fabs(f.slope + 1.0) <= f.se_slope ? "yes" : "NO");
                print_fit_row(out, label, &f, note);
            }
    }

    fprintf(out, "\nConstant c in traffic ~= c N²d²/M over every swept (N, d, M) with d <= M <= Nd\n"
                 "(least squares on traffic / (N²d²/M); R² of ln traffic against ln(c N²d²/M)):\n");
    for (int ai = 0; ai < nord; ai++) {
        const fl_algo a = order[ai];
        if (materializes(a)) continue;
        int nd = distinct(t, a, 1, ds, 16);
        fl_select s = {a, 0, 0, 0, FL_REGIME_PAPER};
        if (!fl_law_constant(t, &s, FL_SHAPE_N2D2_M, &c))
            fprintf(out, "  %-8s all d     c = %7.3f ± %.3f   R² %.4f   (%zu points)\n", fl_algo_name(a), c.c,
                    c.se, c.r2, c.n);
        for (int j = 0; j < nd; j++) {
            s.d = ds[j];
            if (!fl_law_constant(t, &s, FL_SHAPE_N2D2_M, &c))
                fprintf(out, "  %-8s d = %-4" PRId64 "  c = %7.3f ± %.3f   R² %.4f   (%zu points)\n",
                        fl_algo_name(a), ds[j], c.c, c.se, c.r2, c.n);
        }
    }

    fprintf(out, "\nTwo-term law traffic ~= a Nd + c N²d²/M (the Omega(Nd) floor plus the passes), as the line\n"
                 "traffic/(Nd) = a + c Nd/M over the same points (gsl_fit_wlinear, relative residuals):\n");
    for (int ai = 0; ai < nord; ai++) {
        const fl_algo a = order[ai];
        if (materializes(a)) continue;
        int nd = distinct(t, a, 1, ds, 16);
        for (int j = 0; j < nd; j++) {
            fl_select s = {a, 0, ds[j], 0, FL_REGIME_PAPER};
            if (fl_law_two_term(t, &s, &f)) continue;
            fprintf(out, "  %-8s d = %-4" PRId64 "  a = %6.3f ± %.3f   c = %7.3f ± %.3f   R² %.4f   (%zu points)\n",
                    fl_algo_name(a), ds[j], f.intercept, f.se_intercept, f.slope, f.se_slope, f.r2, f.n);
        }
    }

    int nM = distinct(t, law, 2, Ms, 64);
    int64_t Mfix = 0;
    for (int k = 0; k < nM; k++)
        if (Ms[k] == 65536) Mfix = 65536;
    if (!Mfix && nM) Mfix = Ms[nM / 2];
    fprintf(out, "\nSlope in N at fixed d and M = %" PRId64 " (points with N*d >= M; flash: expect 2):\n", Mfix);
    for (int ai = 0; ai < nord; ai++) {
        const fl_algo a = order[ai];
        int nd = distinct(t, a, 1, ds, 16);
        for (int j = 0; j < nd; j++) {
            fl_select s = {a, 0, ds[j], Mfix, FL_REGIME_PAPER};
            if (fl_law_fit(t, &s, FL_AXIS_N, &f)) continue;
            snprintf(label, sizeof label, "%-8s d = %" PRId64, fl_algo_name(a), ds[j]);
            print_fit_row(out, label, &f, NULL);
        }
    }

    /* slope in d: over the d sweep, or else over the (N, M) of t with the most values of d */
    const fl_table *td = dt && dt->n ? dt : t;
    int64_t bestN = 0, bestM = 0;
    int bestn = 0;
    for (size_t i = 0; i < td->n && td->n <= 20000; i++) { /* quadratic: bounded */
        const fl_point *p = &td->p[i];
        if (p->algo != law && !(dt && dt->n)) continue;
        int64_t dv[64];
        int n = 0;
        for (size_t j = 0; j < td->n; j++) {
            const fl_point *q = &td->p[j];
            if (q->algo != p->algo || q->N != p->N || q->M != p->M) continue;
            int k = 0;
            while (k < n && dv[k] != q->d) k++;
            if (k == n && n < 64) dv[n++] = q->d;
        }
        if (n > bestn || (n == bestn && (p->N > bestN || (p->N == bestN && p->M > bestM))))
            bestn = n, bestN = p->N, bestM = p->M;
    }
    if (bestn >= 3) {
        fprintf(out, "\nSlope in d at N = %" PRId64 ", M = %" PRId64 " (d <= M <= Nd; flash1: expect 2 while Tc >> 1):\n",
                bestN, bestM);
        for (int ai = 0; ai < nord; ai++) {
            fl_select s = {order[ai], bestN, 0, bestM, FL_REGIME_PAPER};
            if (fl_law_fit(td, &s, FL_AXIS_D, &f)) continue;
            print_fit_row(out, fl_algo_name(order[ai]), &f, NULL);
        }
    } else {
        fprintf(out, "\nSlope in d: needs at least 3 values of d at one (N, M) (and at most 20000 rows).\n");
    }

    fprintf(out, "\nStandard attention (Algorithm 0), c in traffic ~= c (Nd + N²):\n");
    {
        fl_select in = {std, 0, 0, 0, FL_REGIME_STD_IN};
        fl_select outr = {std, 0, 0, 0, FL_REGIME_STD_OUT};
        if (!fl_law_constant(t, &in, FL_SHAPE_ND_N2, &c))
            fprintf(out, "  tiles hold all of d (M >= 3d²) and a row of S fits (N <= M):  c = %.3f ± %.3f   "
                         "R² %.4f  (%zu points): Theta(Nd + N²); M moves only the constant\n", c.c, c.se, c.r2, c.n);
        if (!fl_law_constant(t, &outr, FL_SHAPE_ND_N2, &c))
            fprintf(out, "  limited SRAM (d chunked, or N > M):                           c = %.3f ± %.3f   "
                         "R² %.4f  (%zu points): above Theta(Nd + N²)\n", c.c, c.se, c.r2, c.n);
        fl_select one = {std, 0, 64, 65536, FL_REGIME_STD_IN};
        if (!fl_law_fit(t, &one, FL_AXIS_N, &f))
            print_fit_row(out, "slope in N, d = 64, M = 65536", &f, "  (N <= M; -> 2 as N >> d)");
    }

    fprintf(out,
            "\nLower bounds (docs/bounds.md: proven, each with its constant and its assumptions):\n"
            "  Omega(Nd), the floor: every input element an output depends on is read once and every output\n"
            "  written once -- 4Nd for one dense head, K and V once per K/V head, only the keys a mask keeps.\n"
            "  The products, under classical products (each needed entry the sum of its products): the\n"
            "  forward charges S = QK^T and P V (2d per score), the backward dP, dV, dQ, dK (4d); per dense\n"
            "  head, forward >= 1.46 N²d²/M - 4M for M >= d² and >= 1.46 N²d/sqrt(M) - 4M below (tending to\n"
            "  1.64 and 2.83 far from M = d²), backward >= 2.5 N²d²/M - 4M and >= 2.5 N²d/sqrt(M) - 4M\n"
            "  (tending to 4 and 4).  The N²d²/M line (constant 1) fitted above is a shape, not a bound:\n"
            "  below M = d² schedules go under it.  flash1 is Theta(N²d²/M) over [d, Nd] (Bc ~ M/4d blocks,\n"
            "  Tc ~ 4Nd/M passes of ~3Nd elements: the constant ~12 where M >= 8d², 14 below), the optimal\n"
            "  shape only for M >= d²; below d² smallcache attains N²d/sqrt(M), ~6 N²d/sqrt(M) forward and\n"
            "  ~21 backward (docs/model.md §4.6, §12.1).  `flashlab optimize` prints the optimum of every\n"
            "  schedule and block pair and its ratio to the bound; `flashlab bound --problem` the bound of\n"
            "  any one problem.  Standard attention is Theta(Nd + N²) while its tiles hold all of d\n"
            "  (M >= 3d²) and a row of S fits in SRAM (N <= M); with less SRAM it re-reads P once per\n"
            "  d-chunk and K, V once per row block, and the softmax takes 3 reads per element: above\n"
            "  Theta(Nd + N²).\n");
    return FL_OK;
}
