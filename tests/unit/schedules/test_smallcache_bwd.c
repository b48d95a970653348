/* test_smallcache_bwd.c: the small-cache backward (docs/model.md §12.1).  Its dense counts equal
 * (Cscb) written out independently; over M = 4d .. d^2/2 at N = 4096 its slope in M is -1/2
 * within one standard error (GSL's fit, as `flashlab bound` fits) with a steady constant, and it
 * moves less than flash2's backward there; and every branch-and-bound count floor of optimize's
 * family (lemma O4) stays under the closed form it bounds.  The conformance suite
 * (tests/conformance/test_registry.c) checks its closed form against the machine and its
 * gradients against the reference on masks, heads and varlen. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "rng.h"
#include "run.h"
#include "schedule.h"
#include "smallcache_test.h"
#include "time_limit.h"

/* (Cscb) for one dense head, written out: every row block meets all Tc key blocks, every key
 * block all Tr row blocks.  Reads: D (2Nd), Q twice and dO once per tile (3 Nd Tc), dQ after the
 * first key block (Nd (Tc - 1)), K twice and V once per tile (3 Nd Tr), dK and dV after the first
 * row block (2 Nd (Tr - 1)), L and D per row (2N); writes: D (N), dQ per tile (Nd Tc), dK and dV
 * per tile (2 Nd Tr).  Events: D's blocks of min(Br, Bc) rows (2Td + 1 each), per row block
 * Td (10 Tc - 1) + 2, per key block 2 Td (Tr - 1). */
Test(smallcache_bwd, dense_count_is_the_textbook_form)
{
    const int64_t Ns[] = {1, 9, 100, 257}, ds[] = {1, 7, 64}, Ms[] = {6, 50, 777, 20000};
    int n = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++) {
                fl_problem p = sc_prob(Ns[i], ds[j], Ms[k], FL_PASS_BWD);
                fl_result r;
                cr_assert_eq(fl_run(&p, FL_COUNT, NULL, NULL, &r), FL_OK, "%s", fl_last_error());
                const fl_blocks *b = &r.b_bwd;
                const int64_t N = p.N, d = p.d, Tr = (N + b->Br - 1) / b->Br, Tc = (N + b->Bc - 1) / b->Bc;
                const int64_t Td = (d + b->Bd - 1) / b->Bd, rb = b->Br < b->Bc ? b->Br : b->Bc;
                cr_assert_eq(r.reads, N * d * (4 * Tc + 5 * Tr - 1) + 2 * N, "N %ld d %ld M %ld", (long)N, (long)d, (long)p.M);
                cr_assert_eq(r.writes, N * d * (Tc + 2 * Tr) + N);
                cr_assert_eq(r.events, (N + rb - 1) / rb * (2 * Td + 1) + Tr * (Td * (10 * Tc - 1) + 2) + Tc * 2 * Td * (Tr - 1));
                cr_assert_eq(r.sram_peak, 2 * b->Br * b->Bc + (b->Br + b->Bc) * b->Bd + 2 * b->Br);
                n++;
            }
    cr_assert_eq(n, 48);
}

/* flash2's backward, where it fits, moves more than smallcache's count t of p. */
static void flash2_moves_more(const fl_problem *p, int64_t t)
{
    fl_problem q = *p;
    q.algo = FL_ALGO_FLASH2;
    fl_result f;
    if (fl_run(&q, FL_COUNT, NULL, NULL, &f) == FL_OK)
        cr_assert_lt(t, f.total, "d %ld M %ld: flash2 %ld", (long)p->d, (long)p->M, (long)f.total);
}

/* docs/model.md §12.1: over M = 4d .. d^2/2 (x2) at N = 4096, Theta(N^2 d / sqrt M): the slope
 * of ln count on ln M is -1/2 within one standard error, the constant count sqrt(M) / (N^2 d)
 * stays in [21.0, 21.5], and flash2's backward (where it fits) moves more. */
Test(smallcache_bwd, slope_is_minus_one_half_below_d_squared)
{
    fl_time_limit(FL_T(300));
    expect_sqrt_m_regime(FL_PASS_BWD, 21.0, 21.5, flash2_moves_more, "smallcache backward");
}

/* Lemma O4 (docs/model.md §7): for every schedule optimize searches by branch and bound, and each
 * such pass, count_floor(Br, cmax) is at most the closed form at (Br, Bc) for every Bc <= cmax that
 * fits -- on random small problems with masks, windows, unequal lengths and query heads. */
Test(smallcache_bwd, count_floors_stay_under_the_closed_forms)
{
    fl_time_limit(FL_T(300));
    uint64_t st = 5;
    int checked = 0;
    for (int k = 0; k < 400; k++) {
        fl_problem p = fl_problem_default();
        const uint64_t r = fl_rng_next(&st);
        p.N = 1 + (int64_t)(r % 40), p.Nk = (r >> 8) % 2 ? 0 : 1 + (int64_t)((r >> 12) % 40);
        p.d = 1 + (int64_t)((r >> 20) % 20), p.causal = (fl_causal)((r >> 26) % 3);
        if ((r >> 30) % 4 == 0) p.window_left = (int64_t)((r >> 32) % 6) - 1, p.window_right = (int64_t)((r >> 36) % 4) - 1;
        if ((r >> 40) % 3 == 0) p.heads = 2, p.kv_heads = 1;
        p.M = 6 + (int64_t)(fl_rng_next(&st) % 3000);
        const int64_t nk = p.Nk ? p.Nk : p.N;
        fl_mask mk;
        cr_assert_eq(fl_mask_init(&mk, p.N, nk, p.causal, p.window_left, p.window_right), FL_OK);
        for (int a = 0; a < fl_schedule_count(); a++) {
            const fl_schedule *s = fl_schedule_get((fl_algo)a);
            for (int bwd = 0; bwd < 2; bwd++) {
                if (s->search[bwd] != FL_SEARCH_BOUND) continue;
                fl_problem q = p;
                q.algo = (fl_algo)a, q.pass = bwd ? FL_PASS_BWD : FL_PASS_FWD;
                const int64_t Br = 1 + (int64_t)(fl_rng_next(&st) % (uint64_t)p.N);
                const int64_t cmax = 1 + (int64_t)(fl_rng_next(&st) % (uint64_t)nk);
                const double floor = s->count_floor(bwd, &q, &mk, Br, cmax) * (double)q.heads;
                for (int64_t Bc = 1; Bc <= cmax; Bc++) {
                    q.Br = Br, q.Bc = Bc;
                    fl_blocks b;
                    fl_counts c;
                    if (fl_blocks_choose_pass(&q, bwd, &b) != FL_OK) continue; /* does not fit */
                    cr_assert_eq(fl_closed_form_pass(&q, bwd, &b, &c), FL_OK, "%s", fl_last_error());
                    cr_assert_leq(floor, (double)c.total + 1e-6, "%s %s N %ld Nk %ld d %ld M %ld Br %ld Bc %ld cmax %ld: "
                                  "floor %.0f above the count %ld", s->name, bwd ? "bwd" : "fwd", (long)q.N, (long)q.Nk,
                                  (long)q.d, (long)q.M, (long)Br, (long)Bc, (long)cmax, floor, (long)c.total);
                    checked++;
                }
            }
        }
    }
    cr_assert_geq(checked, 3000);
}
