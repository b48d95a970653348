/* test_bounds.c: the lower bounds of docs/bounds.md.  What a problem needs (rows, keys, scores)
 * equals a scan of every entry; the floors equal hand counts; the segment programs' maxima equal
 * the closed forms of docs/bounds.md §2.6 where it has them and are never below a value the
 * unreduced programs (RP-f), (RP-b) take; the product bound keeps the constants §2.6 states; and
 * the plausible wrong bounds (the N^2 d^2 / M line below M = d^2, K and V counted per query head,
 * every key counted under a mask, a segment too many, the products counted twice) are each caught
 * by a schedule that goes under them, while the bound holds. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "blocksparse_mask.h"
#include "bounds.h"
#include "rng.h"
#include "run.h"
#include "grid.h"

static fl_problem prob(int64_t N, int64_t d, int64_t M)
{
    fl_problem p = fl_problem_default();
    p.N = N, p.d = d, p.M = M;
    return p;
}

static fl_lower_bound lb_of(const fl_problem *p)
{
    fl_lower_bound lb;
    cr_assert_eq(fl_lower_bound_of(p, NULL, &lb), FL_OK, "%s", fl_last_error());
    return lb;
}

/* The least count of the schedules a problem runs (at their rules), executed; and whether every
 * one of them is at least `bound`. */
static int64_t least_count(const fl_problem *p, const fl_algo *algos, int n)
{
    int64_t least = -1;
    for (int i = 0; i < n; i++) {
        fl_problem q = *p;
        fl_result r;
        q.algo = algos[i];
        if (fl_run(&q, FL_COUNT, NULL, NULL, &r) != FL_OK) continue;
        if (least < 0 || r.total < least) least = r.total;
    }
    cr_assert_geq(least, 0, "no schedule runs");
    return least;
}

/* The attention schedules of every mask, head layout and pass (the registry's, not a typed list). */
static int attention(fl_algo *out)
{
    return sched_list(FL_ACCEPT_NK | FL_ACCEPT_MASK | FL_ACCEPT_HEADS | FL_ACCEPT_VARLEN | FL_ACCEPT_BWD, 0, out);
}

Test(bounds, need_of_a_mask_equals_a_scan_of_every_entry)
{
    int checked = 0;
    for (int64_t nq = 1; nq <= 17; nq++)
        for (int64_t nk = 1; nk <= 17; nk++)
            for (int c = 0; c < 3; c++)
                for (int64_t L = -1; L <= 5; L++)
                    for (int64_t R = -1; R <= 5; R++) {
                        fl_mask mk;
                        fl_need n;
                        cr_assert_eq(fl_mask_init(&mk, nq, nk, (fl_causal)c, L, R), FL_OK);
                        fl_need_of_mask(&mk, &n);
                        int64_t r1 = 0, r2 = 0, k1 = 0, k2 = 0;
                        double s2 = 0;
                        char seen1[17] = {0}, seen2[17] = {0};
                        for (int64_t i = 0; i < nq; i++) {
                            int64_t kept = 0;
                            for (int64_t j = 0; j < nk; j++) kept += fl_mask_keep(&mk, i, j);
                            for (int64_t j = 0; j < nk; j++)
                                if (fl_mask_keep(&mk, i, j)) seen1[j] |= kept >= 1, seen2[j] |= kept >= 2;
                            r1 += kept >= 1, r2 += kept >= 2;
                            if (kept >= 2) s2 += (double)kept;
                        }
                        for (int64_t j = 0; j < nk; j++) k1 += seen1[j], k2 += seen2[j];
                        cr_assert(n.r1 == r1 && n.r2 == r2 && n.k1 == k1 && n.k2 == k2 && n.s2 == s2,
                                  "Nq %ld Nk %ld corner %d window %ld,%ld: %ld %ld %ld %ld %g, scan %ld %ld %ld %ld %g",
                                  (long)nq, (long)nk, c, (long)L, (long)R, (long)n.r1, (long)n.r2, (long)n.k1,
                                  (long)n.k2, n.s2, (long)r1, (long)r2, (long)k1, (long)k2, s2);
                        checked++;
                    }
    cr_assert_eq(checked, 17 * 17 * 3 * 7 * 7);
}

Test(bounds, floors_equal_hand_counts)
{
    fl_problem p = prob(1000, 64, 98304);
    cr_assert_eq(lb_of(&p).floor, 4 * 1000 * 64); /* read Q, K, V, write O */
    p.pass = FL_PASS_BWD;                          /* read dO; write dQ, dK, dV */
    cr_assert_eq(lb_of(&p).floor_reads, 1000 * 64);
    cr_assert_eq(lb_of(&p).floor_writes, 3 * 1000 * 64);
    p.pass = FL_PASS_FWD_BWD; /* read Q, K, V, dO; write O, dQ, dK, dV */
    cr_assert_eq(lb_of(&p).floor, 8 * 1000 * 64);

    /* causal top-left, N = 5, d = 3: row 0 keeps one key (it needs no Q row); every key is kept by
     * a row with two or more: Q 4 rows, K 5, V 5, O 5 */
    p = prob(5, 3, 1000);
    p.causal = FL_CAUSAL_TOP_LEFT;
    cr_assert_eq(lb_of(&p).floor_reads, 3 * (4 + 5 + 5));
    cr_assert_eq(lb_of(&p).floor_writes, 3 * 5);
    /* (Nq, Nk) = (5, 2) bottom-right: rows 3, 4 keep 1 and 2 keys; keys 0, 1 */
    p.N = 5, p.Nk = 2, p.causal = FL_CAUSAL_BOTTOM_RIGHT;
    cr_assert_eq(lb_of(&p).floor_reads, 3 * (1 + 2 + 2));
    cr_assert_eq(lb_of(&p).floor_writes, 3 * 2);
    cr_assert_eq(lb_of(&p).products, 2.0 * 3.0 * 2.0); /* row 4's two scores, 2d products each (W-f) */
    p.pass = FL_PASS_FWD_BWD;                            /* and 4d each backward (W-b) */
    cr_assert_eq(lb_of(&p).products_fwd, 12.0);
    cr_assert_eq(lb_of(&p).products_bwd, 24.0);
    cr_assert_eq(lb_of(&p).products, 36.0);

    /* GQA: K and V once per K/V head: 6 query heads over 2, Nq = 777, Nk = 500, d = 48 */
    p = prob(777, 48, 2000000);
    p.Nk = 500, p.heads = 6, p.kv_heads = 2;
    cr_assert_eq(lb_of(&p).floor, 48 * (6 * 777 * 2 + 2 * 500 * 2));

    /* varlen: the sum of the sequences as problems of their own */
    static const int64_t cq[] = {0, 30, 30, 100}, ck[] = {0, 10, 10, 55};
    p = prob(100, 16, 5000);
    p.Nk = 55, p.batch = 3, p.cu_seqlens_q = cq, p.cu_seqlens_k = ck, p.causal = FL_CAUSAL_BOTTOM_RIGHT;
    p.cu_seqlens_q_len = p.cu_seqlens_k_len = 4;
    const fl_lower_bound all = lb_of(&p);
    fl_problem a = prob(30, 16, 5000), b = prob(70, 16, 5000);
    a.Nk = 10, b.Nk = 45;
    a.causal = b.causal = FL_CAUSAL_BOTTOM_RIGHT;
    cr_assert_eq(all.floor, lb_of(&a).floor + lb_of(&b).floor);
    cr_assert_eq(all.products, lb_of(&a).products + lb_of(&b).products);
}

Test(bounds, block_sparse_need_equals_a_scan_of_its_block_mask)
{
    for (int k = 0; k < 12; k++) {
        fl_problem p = prob(37 + 11 * k, 8, 400 + 97 * k);
        fl_block_sparsity p_bm = fl_block_sparsity_default();
        p.block_mask = &p_bm;
        p.algo = FL_ALGO_BLOCKSPARSE;
        p_bm.density = 0.15 + 0.07 * k;
        p_bm.mask_seed = (uint64_t)(3 + k);
        fl_blocks b;
        cr_assert_eq(fl_blocks_choose(&p, &b), FL_OK);
        const fl_bsmask mk = fl_bsmask_make(p.N, p.N, b.Br, b.Bc, p_bm.density, p_bm.mask_seed);
        int64_t r1 = 0, r2 = 0, k1 = 0, k2 = 0, O = 0;
        double s2 = 0;
        for (int64_t j = 0; j < p.N; j++) {
            int in1 = 0, in2 = 0;
            for (int64_t i = 0; i < p.N; i++) {
                int64_t kept = 0;
                for (int64_t t = 0; t < p.N; t++) kept += fl_bsmask_keep(i, t, &mk);
                if (fl_bsmask_keep(i, j, &mk)) in1 |= kept >= 1, in2 |= kept >= 2;
                if (j == 0) r1 += kept >= 1, r2 += kept >= 2, s2 += kept >= 2 ? (double)kept : 0.0;
            }
            k1 += in1, k2 += in2;
        }
        O = r1;
        fl_lower_bound lb;
        cr_assert_eq(fl_lower_bound_of(&p, NULL, &lb), FL_EINVAL); /* its mask needs its blocks */
        cr_assert_eq(fl_lower_bound_of(&p, &b, &lb), FL_OK);
        cr_assert_eq(lb.floor_reads, 8 * (r2 + k2 + k1), "density %g", p_bm.density);
        cr_assert_eq(lb.floor_writes, 8 * O);
        cr_assert_eq(lb.products, 2.0 * 8.0 * s2);
    }
}

/* The maximum of the unreduced program at a point: (RP-f) of docs/bounds.md §2.4 over
 * x = (alpha, beta, nu, p, o), (RP-b) over x = (alpha, beta, nu, delta, p, eV, eQ, eK); M = 1,
 * d^2 = kappa; -1 when x is not feasible (inputs above 1 + r, everything above 2 + r). */
static double rp_value(fl_products kind, const double *x, double kappa, double r)
{
    const int n = kind == FL_PRODUCTS_FWD ? 5 : 8, nin = kind == FL_PRODUCTS_FWD ? 3 : 4;
    double in = 0.0, all = 0.0;
    for (int i = 0; i < n; i++) {
        if (x[i] < 0.0) return -1.0;
        all += x[i], in += i < nin ? x[i] : 0.0;
    }
    if (in > 1.0 + r || all > 2.0 + r) return -1.0;
    if (kind == FL_PRODUCTS_FWD) {
        const double g = x[0] * x[1] / kappa + x[3];
        return sqrt(x[0] * x[1] * g) + sqrt(g * x[2] * x[4]);
    }
    const double al = x[0], be = x[1], nu = x[2], de = x[3], p = x[4];
    const double m = fmin(al, de) * fmin(be, nu) / kappa + p;
    return sqrt(de * nu * (de * nu / kappa + p)) + sqrt((al * be / kappa + p) * de * x[5]) + sqrt(m * be * x[6]) +
           sqrt(m * al * x[7]);
}

/* A uniform draw in [0, 1). */
static double unit(uint64_t *st) { return (double)(fl_rng_next(st) >> 11) / 9007199254740992.0; }

/* The largest value of the unreduced program found by a random search: from 8 random feasible
 * points, 4000 perturbations each (kept when better), their size shrinking: a value it takes. */
static double rp_search(fl_products kind, double kappa, double r, uint64_t *st)
{
    const int n = kind == FL_PRODUCTS_FWD ? 5 : 8;
    double fb = 0.0;
    for (int start = 0; start < 8; start++) {
        double x[8], y[8], f = -1.0, step = 0.5;
        while (f < 0.0) {
            for (int i = 0; i < n; i++) x[i] = unit(st) * (2.0 + r) / n;
            f = rp_value(kind, x, kappa, r);
        }
        for (int it = 0; it < 4000; it++) {
            for (int i = 0; i < n; i++) { /* a perturbation, roughly normal (sum of three uniforms) */
                const double g = unit(st) + unit(st) + unit(st) - 1.5;
                y[i] = fmax(0.0, x[i] + step * g);
            }
            const double v = rp_value(kind, y, kappa, r);
            if (v > f) memcpy(x, y, sizeof x), f = v;
            else step = fmax(step * 0.998, 1e-4);
        }
        fb = fmax(fb, f);
    }
    return fb;
}

/* docs/bounds.md §2.5-2.6: the certified maximum phi is never below a value the unreduced
 * programs take (so the reductions RF-f, RF-b lose nothing they should keep), and within 2 % of
 * the largest the search finds (they are not loose either).  The check has teeth: the program
 * of a head dimension twice too large (kappa four times too large), a plausible slip, goes under
 * a value taken wherever complete pairs count (kappa <= 1). */
Test(bounds, segment_programs_are_never_below_the_unreduced_ones)
{
    fl_time_limit(FL_T(300));
    const double kappas[] = {1e-3, 0.25, 1.0, 4.0, 100.0}, rs[] = {0.5, 1.0, 2.0, 4.0};
    uint64_t st = 7;
    for (int kind = 0; kind < 2; kind++)
        for (int i = 0; i < 5; i++)
            for (int j = 0; j < 4; j++) {
                const double phi = fl_segment_program((fl_products)kind, kappas[i], rs[j]);
                const double found = rp_search((fl_products)kind, kappas[i], rs[j], &st);
                cr_assert_geq(phi, found, "%s kappa %g r %g: phi %.6f below a value taken, %.6f",
                              kind ? "bwd" : "fwd", kappas[i], rs[j], phi, found);
                cr_assert_leq(phi, 1.02 * found, "%s kappa %g r %g: phi %.6f, the search finds %.6f",
                              kind ? "bwd" : "fwd", kappas[i], rs[j], phi, found);
                if (kappas[i] <= 1.0) /* the planted slip */
                    cr_assert_lt(fl_segment_program((fl_products)kind, 4.0 * kappas[i], rs[j]), found);
            }
}

/* The root in (0, 1) of u^3 - 1.5 u^2 - 2u + 1 (docs/bounds.md eq. (LIM-f)), by bisection. */
static double cubic_root(void)
{
    double lo = 0.0, hi = 1.0;
    for (int k = 0; k < 200; k++) {
        const double u = (lo + hi) / 2.0;
        if (u * u * u - 1.5 * u * u - 2.0 * u + 1.0 > 0.0) lo = u;
        else hi = u;
    }
    return lo;
}

/* docs/bounds.md §2.6: the limits of the programs far from M = d^2, in closed form, against the
 * certified maxima (which may stand above them by the branch and bound's 5e-3, never below). */
Test(bounds, segment_programs_meet_their_limits)
{
    const double big = 1e8, small = 1e-8;
    for (double r = 1.0; r <= 4.0; r *= 2.0) { /* kappa -> infinity: (2 + r)^(3/2) / (3 sqrt 3), 2 (2 + r)^(3/2) / (3 sqrt 6) */
        const double T = pow(2.0 + r, 1.5), f = T / (3.0 * sqrt(3.0)), b = 2.0 * T / (3.0 * sqrt(6.0));
        const double pf = fl_segment_program(FL_PRODUCTS_FWD, big, r), pb = fl_segment_program(FL_PRODUCTS_BWD, big, r);
        cr_assert(pf >= f && pf <= 1.006 * f, "fwd r %g: %.6f, limit %.6f", r, pf, f);
        cr_assert(pb >= b && pb <= 1.006 * b, "bwd r %g: %.6f, limit %.6f", r, pb, b);
    }
    /* kappa -> 0, r = 1: phi sqrt(kappa) -> t^2 + t u with u the cubic's root, t = 1 - u^2 / 2
     * (forward), and -> (1 + r)^2 / 4 = 1 (backward: dP's complete pairs alone) */
    const double u = cubic_root(), t = 1.0 - u * u / 2.0, f = t * t + t * u;
    cr_assert(fabs(f - 1.2145) < 1e-4, "the forward's limit %.6f", f);
    const double pf = fl_segment_program(FL_PRODUCTS_FWD, small, 1.0) * sqrt(small);
    const double pb = fl_segment_program(FL_PRODUCTS_BWD, small, 1.0) * sqrt(small);
    cr_assert(pf >= f && pf <= 1.006 * f, "fwd: %.6f, limit %.6f", pf, f);
    cr_assert(pb >= 1.0 && pb <= 1.006, "bwd: %.6f, limit 1", pb);
    /* the constants of the bound these give: 2r / phi and 4r / phi */
    cr_assert(fabs(2.0 / f - 1.6468) < 1e-3 && fabs(2.0 * 4.0 * 3.0 * sqrt(3.0) / pow(6.0, 1.5) - 2.0 * sqrt(2.0)) < 1e-12);
    /* no claim without a capacity */
    cr_assert(isinf(fl_segment_program(FL_PRODUCTS_FWD, 0.0, 1.0)) && isinf(fl_segment_program(FL_PRODUCTS_BWD, 1.0, 0.0)));
}

/* docs/bounds.md §2.6, the table of constants: C(kappa) = max over the R grid of (2 or 4) r / phi
 * (per N^2 d^2 / M, so divided by sqrt(kappa), where kappa = d^2 / M <= 1), as printed to two
 * decimals; and the bound of a dense head at N = 2^20 (where the - R is negligible) meets the
 * same constant through fl_lower_bound_of. */
Test(bounds, segment_programs_give_the_tables_constants)
{
    const double kappas[] = {1e-6, 1.0 / 64, 0.25, 1.0, 4.0, 64.0, 1e6};
    const double table[][2] = {{1.64, 3.98}, {1.64, 3.73}, {1.64, 3.12}, {1.48, 2.53},
                               {2.13, 3.61}, {2.77, 3.96}, {2.81, 3.98}};
    for (int i = 0; i < 7; i++)
        for (int kind = 0; kind < 2; kind++) {
            double c = 0.0;
            for (int j = 0; j < FL_SEGMENT_NR; j++) {
                const double r = fl_segment_r(j);
                c = fmax(c, (kind ? 4.0 : 2.0) * r / fl_segment_program((fl_products)kind, kappas[i], r) /
                                (kappas[i] < 1.0 ? sqrt(kappas[i]) : 1.0));
            }
            cr_assert(fabs(c - table[i][kind]) <= 0.005 + 1e-9, "%s kappa %g: C %.4f, the table %.2f",
                      kind ? "bwd" : "fwd", kappas[i], c, table[i][kind]);
            if (kappas[i] < 1e-3 || kappas[i] > 1e3) continue;
            const int64_t N = 1 << 20, d = 64, M = (int64_t)llround(64.0 * 64.0 / kappas[i]);
            fl_problem p = prob(N, d, M);
            p.pass = kind ? FL_PASS_BWD : FL_PASS_FWD;
            const fl_lower_bound lb = lb_of(&p);
            const double Nd = (double)N, dd = (double)d, Md = (double)M;
            const double shape = kappas[i] <= 1.0 ? Nd * Nd * dd * dd / Md : Nd * Nd * dd / sqrt(Md);
            const double got = (double)(lb.product + lb.segment) / shape;
            cr_assert(fabs(got - c) <= 1e-3 * c, "%s kappa %g: bound / shape %.4f, C %.4f", kind ? "bwd" : "fwd",
                      kappas[i], got, c);
        }
}

/* docs/bounds.md §2.6, per dense head: forward >= 1.46 N^2 d^2 / M - 4M for M >= d^2 and
 * >= 1.46 N^2 d / sqrt(M) - 4M below; backward >= 2.5 of the same; and nearer the limits
 * (M >= 64 d^2, M <= d^2 / 64) forward >= 1.62 and >= 2.74, backward >= 3.7 and >= 3.93. */
Test(bounds, product_bound_keeps_its_stated_constants)
{
    fl_time_limit(FL_T(300));
    uint64_t st = 11;
    int n = 0;
    for (int k = 0; k < 1500; k++) {
        const int64_t N = 2 + (int64_t)(fl_rng_next(&st) % 100000), d = 1 + (int64_t)(fl_rng_next(&st) % 600);
        const int64_t M = 1 + (int64_t)(fl_rng_next(&st) % (uint64_t)(4 * d * d + 2 * N * d));
        const double Md = (double)M, dd = (double)d, S = (double)N * (double)N * dd;
        const int large = Md >= dd * dd, far = large ? Md >= 64.0 * dd * dd : 64.0 * Md <= dd * dd;
        const double shape = large ? S * dd / Md : S / sqrt(Md);
        for (int kind = 0; kind < 2; kind++) {
            int64_t R;
            const int64_t lb = fl_product_bound((fl_products)kind, (kind ? 4.0 : 2.0) * S, d, M, &R);
            const double c = kind ? (far ? (large ? 3.7 : 3.93) : 2.5) : (far ? (large ? 1.62 : 2.74) : 1.46);
            const double want = c * shape - 4.0 * Md;
            cr_assert_geq((double)lb, floor(want) - 1.0, "%s N %ld d %ld M %ld: %ld < %.0f", kind ? "bwd" : "fwd",
                          (long)N, (long)d, (long)M, (long)lb, want);
            n += want > 0;
        }
    }
    cr_assert_geq(n, 1000); /* most cases are not vacuous */
    int64_t R;
    cr_assert_eq(fl_product_bound(FL_PRODUCTS_FWD, 0.0, 8, 100, &R), 0);
    cr_assert_eq(R, 0);
}

/* The line the figures drew, N^2 d^2 / M with constant 1, is not a lower bound below M = d^2:
 * standard goes under it (docs/bounds.md §4); the bound holds. */
Test(bounds, the_n2d2_over_M_line_is_caught_below_d_squared)
{
    fl_problem p = prob(4096, 256, 256);
    fl_algo att[FL_ALGO_MAX];
    const int64_t least = least_count(&p, att, attention(att));
    const double line = 4096.0 * 4096.0 * 256.0 * 256.0 / 256.0;
    cr_assert_lt((double)least, line);
    cr_assert_geq(least, lb_of(&p).bound);
    cr_assert(lb_of(&p).small_cache);
}

/* optimize's former bound counted K and V once per query head and every key: the group schedule
 * goes under it; the floor (K, V once per K/V head) holds. */
Test(bounds, k_and_v_per_query_head_is_caught)
{
    fl_problem p = prob(777, 48, 2000000);
    p.Nk = 500, p.heads = 6, p.kv_heads = 2;
    fl_algo att[FL_ALGO_MAX];
    const int64_t least = least_count(&p, att, attention(att));
    const double wrong = 6.0 * fmax(2.0 * 777 * 48 + 2.0 * 500 * 48, 777.0 * 500 * 48 * 48 / 2000000.0);
    cr_assert_lt((double)least, wrong);
    cr_assert_geq(least, lb_of(&p).bound);
}

/* Counting every key (and every row) under a mask: with Nq = 1000 queries bottom-right over 10
 * keys, 990 rows keep nothing; flash2 goes under 2 (Nq + Nk) d, the floor holds. */
Test(bounds, a_mask_oblivious_floor_is_caught)
{
    fl_problem p = prob(1000, 32, 50000);
    p.Nk = 10, p.causal = FL_CAUSAL_BOTTOM_RIGHT;
    fl_algo att[FL_ALGO_MAX];
    const int64_t least = least_count(&p, att, attention(att));
    cr_assert_lt(least, 2 * (1000 + 10) * 32);
    cr_assert_geq(least, lb_of(&p).bound);
}

/* Dropping the "- 1" of R (ceil(W / f_R) - 1) (the last segment may be incomplete): two tokens
 * at d = 1 under a large M move a few elements, far fewer than one segment of M. */
Test(bounds, a_segment_too_many_is_caught)
{
    fl_problem p = prob(2, 1, 1000);
    fl_algo att[FL_ALGO_MAX];
    const int64_t least = least_count(&p, att, attention(att));
    int64_t R;
    fl_product_bound(FL_PRODUCTS_FWD, 4.0, 1, 1000, &R);
    cr_assert_eq(R, 0); /* W = 4 products fit in one segment: no product bound */
    cr_assert_lt(least, 1000); /* R * ceil(W / f_R) with R = M would claim 1000 */
    cr_assert_geq(least, lb_of(&p).bound);
    cr_assert_eq(lb_of(&p).bound, 4 * 2); /* the floor: Q, K, V, O of two rows of one element */
}

Test(bounds, softmax_and_decode_problems)
{
    fl_problem p = prob(7, 4, 100);
    p.algo = FL_ALGO_SOFTMAX_ONLINE;
    p.Nk = 30;
    cr_assert_eq(lb_of(&p).floor, 2 * 7 * 30);
    p.Nk = 1; /* a row of one entry is 1 whatever X holds: written, not read */
    cr_assert_eq(lb_of(&p).floor, 7);
    p = prob(3, 16, 4000);
    p.algo = FL_ALGO_DECODE;
    p.Nk = 1000, p.causal = FL_CAUSAL_BOTTOM_RIGHT;
    cr_assert_eq(lb_of(&p).floor, 16 * (3 + 1000 + 1000 + 3));
}
