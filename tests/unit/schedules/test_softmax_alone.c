/* test_softmax_alone.c: softmax alone (Milakov & Gimelshein), safe (3 passes) and online
 * (2 passes): counts equal eq. (CX) over a grid (non-multiples included), values match the
 * reference, and the paper's accounting holds on the machine: 4 accesses per element (safe)
 * against 3 (online). */
#include "grid.h"

static fl_problem softmax_problem(fl_algo a, int64_t N, int64_t Nk, int64_t M)
{
    fl_problem p = fl_problem_default();
    p.algo = a;
    p.N = N;
    p.Nk = Nk;
    p.M = M;
    return p;
}

Test(softmax_alone, closed_form_and_values_over_a_grid)
{
    const int64_t Ns[] = {1, 3, 17, 64}, Nks[] = {1, 5, 33, 100, 257}, Ms[] = {3, 10, 50, 1000};
    for (int a = 0; a < 2; a++)
        for (size_t i = 0; i < 4; i++)
            for (size_t j = 0; j < 5; j++)
                for (size_t k = 0; k < 4; k++) {
                    fl_problem p = softmax_problem(a ? FL_ALGO_SOFTMAX_ONLINE : FL_ALGO_SOFTMAX_SAFE,
                                                   Ns[i], Nks[j], Ms[k]);
                    check_exact(&p, 1, NULL);
                }
}

Test(softmax_alone, four_accesses_safe_three_online)
{
    const int64_t N = 37, Nk = 1000;
    fl_result s, o;
    fl_problem p = softmax_problem(FL_ALGO_SOFTMAX_SAFE, N, Nk, 300);
    check_exact(&p, 0, &s);
    p.algo = FL_ALGO_SOFTMAX_ONLINE;
    check_exact(&p, 0, &o);
    cr_expect_eq(s.total, 4 * N * Nk, "safe: %lld accesses for %lld elements", (long long)s.total, (long long)(N * Nk));
    cr_expect_eq(o.total, 3 * N * Nk, "online: %lld accesses for %lld elements", (long long)o.total, (long long)(N * Nk));
    cr_expect_eq(s.writes, o.writes);
}

Test(softmax_alone, tile_size_does_not_change_values_or_accesses)
{
    fl_result a, b;
    fl_problem p = softmax_problem(FL_ALGO_SOFTMAX_ONLINE, 9, 131, 1000);
    p.Br = 2;
    p.Bc = 7;
    check_exact(&p, 1, &a);
    p.Br = 9;
    p.Bc = 100;
    check_exact(&p, 1, &b);
    cr_expect_eq(a.total, b.total);
    cr_expect_neq(a.events, b.events);
}

Test(softmax_alone, bad_input_is_refused_with_the_rule)
{
    fl_result r;
    fl_problem p = softmax_problem(FL_ALGO_SOFTMAX_SAFE, 4, 4, 2);
    cr_expect_eq(fl_run(&p, FL_COUNT, NULL, NULL, &r), FL_ECAPACITY);
    cr_expect(strstr(fl_last_error_raw(), "{M}") != NULL, "%s", fl_last_error_raw());
    p = softmax_problem(FL_ALGO_SOFTMAX_SAFE, 4, 4, 100);
    p.causal = FL_CAUSAL_TOP_LEFT;
    cr_expect_eq(fl_run(&p, FL_COUNT, NULL, NULL, &r), FL_EINVAL);
    cr_expect(strstr(fl_last_error_raw(), "{causal}") != NULL, "%s", fl_last_error_raw());
    p = softmax_problem(FL_ALGO_SOFTMAX_SAFE, 4, 4, 100);
    p.Br = 4;
    p.Bc = 40;
    cr_expect_eq(fl_run(&p, FL_COUNT, NULL, NULL, &r), FL_EINVAL);
    cr_expect(strstr(fl_last_error_raw(), "{Br}/{Bc}") != NULL, "%s", fl_last_error_raw());
}
