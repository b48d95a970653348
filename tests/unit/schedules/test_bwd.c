/* test_bwd.c: the backward passes (docs/model.md §backward): counts equal (C0b), (C1b), (C2b)
 * and their sums with the forward over a grid of sizes (non-multiples of the blocks included),
 * SRAM sizes and block overrides; gradients match the reference; bwd alone + fwd = fwd+bwd. */
#include "grid.h"

/* "all" (one head), from the registry: the schedules whose backward this file checks. */
static fl_algo algos[FL_ALGO_MAX];
static size_t nalgos;

static void init_algos(void) { nalgos = (size_t)fl_algos_all(NULL, algos); }

TestSuite(bwd, .init = init_algos);

Test(bwd, closed_forms_equal_simulation_grid)
{
    const int64_t Ns[] = {1, 7, 64, 100, 257};
    const int64_t ds[] = {1, 8, 24};
    const int64_t Ms[] = {600, 2000, 9000};
    const fl_pass passes[] = {FL_PASS_BWD, FL_PASS_FWD_BWD};
    int n = 0;
    for (size_t a = 0; a < nalgos; a++)
        for (size_t i = 0; i < 5; i++)
            for (size_t j = 0; j < 3; j++)
                for (size_t k = 0; k < 3; k++)
                    for (size_t q = 0; q < 2; q++) {
                        fl_problem p = fl_problem_default();
                        p.algo = algos[a], p.N = Ns[i], p.d = ds[j], p.M = Ms[k], p.pass = passes[q];
                        fl_blocks b;
                        if (fl_blocks_choose_pass(&p, 1, &b) != FL_OK) continue; /* M too small for d */
                        char what[96];
                        snprintf(what, sizeof what, "N=%lld d=%lld M=%lld pass=%d", (long long)p.N,
                                 (long long)p.d, (long long)p.M, p.pass);
                        expect_exact(&p, what, NULL);
                        n++;
                    }
    cr_log_info("bwd closed forms: %d configurations", n);
    cr_assert_gt(n, 150);
}

Test(bwd, gradients_match_reference)
{
    double worst = 0.0;
    int n = 0;
    const int64_t Ns[] = {1, 5, 33, 70};
    for (size_t a = 0; a < nalgos; a++)
        for (size_t i = 0; i < 4; i++)
            for (int bo = 0; bo < 2; bo++) {
                fl_problem p = fl_problem_default();
                p.algo = algos[a], p.N = Ns[i], p.d = 12, p.M = 1500, p.pass = FL_PASS_FWD_BWD;
                p.seed = 11 + i;
                if (bo) p.Br = 5, p.Bc = 7; /* non-square, non-dividing override */
                char what[64];
                snprintf(what, sizeof what, "N=%lld Br/Bc override=%d", (long long)p.N, bo);
                expect_values(&p, what, &worst);
                expect_exact(&p, what, NULL);
                n++;
            }
    cr_log_info("gradients: %d runs, worst rel err %.3e", n, worst);
}

Test(bwd, pass_accounting)
{
    for (size_t a = 0; a < nalgos; a++) {
        fl_problem p = fl_problem_default();
        p.algo = algos[a], p.N = 300, p.d = 32, p.M = 20000;
        fl_result f, b, fb;
        cr_assert_eq(fl_run(&p, FL_COUNT, NULL, NULL, &f), FL_OK);
        p.pass = FL_PASS_BWD;
        cr_assert_eq(fl_run(&p, FL_COUNT, NULL, NULL, &b), FL_OK);
        p.pass = FL_PASS_FWD_BWD;
        cr_assert_eq(fl_run(&p, FL_COUNT, NULL, NULL, &fb), FL_OK);
        cr_assert_eq(f.total + b.total, fb.total, "%s: fwd + bwd alone != fwd+bwd", fl_algo_name(p.algo));
        cr_assert_eq(fb.fwd_total, f.total);
        cr_assert_eq(fb.bwd_total, b.total);
        cr_assert_eq(f.events + b.events, fb.events);
        /* bwd alone reads the forward's outputs but never writes O */
        for (int t = 0; t < b.ntensors; t++)
            if (!strcmp(b.t[t].name, "O") || !strcmp(b.t[t].name, "Q") || !strcmp(b.t[t].name, "K"))
                cr_assert_eq(b.t[t].writes, 0, "%s: bwd writes %s", fl_algo_name(p.algo), b.t[t].name);
    }
}

Test(bwd, standard_saves_P_flash_recomputes)
{
    /* standard's backward moves Theta(N^2) (it reads P, writes dP and dS); flash backward
     * touches no N x N tensor at all */
    fl_problem p = fl_problem_default();
    p.N = 1024, p.d = 64, p.pass = FL_PASS_BWD;
    fl_result r;
    p.algo = FL_ALGO_STANDARD;
    cr_assert_eq(fl_run(&p, FL_COUNT, NULL, NULL, &r), FL_OK);
    int64_t nn = 0;
    for (int t = 0; t < r.ntensors; t++)
        if (!strcmp(r.t[t].name, "P") || !strcmp(r.t[t].name, "dP") || !strcmp(r.t[t].name, "dS"))
            nn += r.t[t].reads + r.t[t].writes;
    cr_assert_geq(nn, 5 * p.N * p.N);
    p.algo = FL_ALGO_FLASH2;
    cr_assert_eq(fl_run(&p, FL_COUNT, NULL, NULL, &r), FL_OK);
    for (int t = 0; t < r.ntensors; t++) {
        cr_assert(strcmp(r.t[t].name, "P") && strcmp(r.t[t].name, "S"));
        if (!strcmp(r.t[t].name, "O")) cr_assert_eq(r.t[t].reads, p.N * p.d, "flash2: O read once (D)");
    }
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

Test(bwd, dense_closed_forms_written_out)
{
    /* docs/model.md (C2b), (C1b), (C0b) for one dense head, Nq = Nk = N, written out here
     * independently of the schedules' closed forms (src/schedules/flash_bwd.c, standard_bwd.c) */
    const int64_t Ns[] = {1, 9, 100, 333, 1024};
    const int64_t ds[] = {8, 64};
    const int64_t Ms[] = {3000, 20000, 98304};
    int n = 0;
    for (size_t i = 0; i < 5; i++)
        for (size_t j = 0; j < 2; j++)
            for (size_t k = 0; k < 3; k++)
                for (size_t a = 0; a < nalgos; a++) {
                    fl_problem p = fl_problem_default();
                    p.algo = algos[a], p.N = Ns[i], p.d = ds[j], p.M = Ms[k], p.pass = FL_PASS_BWD;
                    fl_result r;
                    if (fl_run(&p, FL_COUNT, NULL, NULL, &r) != FL_OK) continue;
                    const int64_t N = p.N, d = p.d, Nd = N * d;
                    const int64_t Tr = cdiv(N, r.b_bwd.Br), Tc = cdiv(N, r.b_bwd.Bc), Td = cdiv(d, r.b_bwd.Bd);
                    int64_t reads, writes;
                    if (p.algo == FL_ALGO_FLASH2) {
                        reads = 4 * Nd + Tc * N * (3 * d + 2);
                        writes = N + 3 * Nd + Tc * Nd;
                        cr_assert_eq(r.events, 4 * Tr + Tc * (4 + 6 * Tr));
                    } else if (p.algo == FL_ALGO_FLASH1) {
                        reads = 2 * Nd + Tc * N * (4 * d + 2);
                        writes = 5 * Nd + Tc * Nd;
                        cr_assert_eq(r.events, Tr + 2 * Tc + Tc * (4 + 7 * Tr));
                    } else {
                        reads = (N * N * Td + Nd * Tc)                 /* 1: dV = P^T dO */
                                + ((Td == 1 ? Nd : Nd * Tc) + Nd * Tr) /* 2: dP = dO V^T */
                                + (2 * N <= p.M ? 2 : 4) * N * N        /* 3: dS */
                                + (N * N * Td + Nd * Tr)                 /* 4: dQ = dS K */
                                + (N * N * Td + Nd * Tc);                /* 5: dK = dS^T Q */
                        writes = 2 * N * N + 3 * Nd;
                    }
                    cr_assert_eq(r.reads, reads, "%s N=%lld d=%lld M=%lld", fl_algo_name(p.algo), (long long)N,
                                 (long long)d, (long long)p.M);
                    cr_assert_eq(r.writes, writes, "%s N=%lld d=%lld M=%lld", fl_algo_name(p.algo), (long long)N,
                                 (long long)d, (long long)p.M);
                    n++;
                }
    cr_assert_gt(n, 80);
}

static int count_events(const fl_event *ev, void *ctx)
{
    if (ev->kind == FL_EV_LOAD || ev->kind == FL_EV_STORE) ++*(int64_t *)ctx;
    return 0;
}

Test(bwd, bwd_alone_traces_only_the_backward)
{
    fl_algo all[FL_ALGO_MAX]; /* every schedule with heads and a backward */
    const size_t nall = (size_t)sched_list(FL_ACCEPT_HEADS | FL_ACCEPT_BWD, 0, all);
    for (size_t a = 0; a < nall; a++) {
        fl_problem p = fl_problem_default();
        p.algo = all[a], p.N = 200, p.d = 16, p.M = 5000, p.heads = 4, p.kv_heads = 2, p.pass = FL_PASS_BWD;
        int64_t n = 0;
        fl_result r, f;
        cr_assert_eq(fl_run(&p, FL_COUNT, count_events, &n, &r), FL_OK, "%s", fl_last_error());
        cr_assert_eq(n, r.events, "%s: traced %lld events, counted %lld", fl_algo_name(p.algo), (long long)n,
                     (long long)r.events);
        p.pass = FL_PASS_FWD;
        cr_assert_eq(fl_run(&p, FL_COUNT, NULL, NULL, &f), FL_OK);
        p.pass = FL_PASS_FWD_BWD;
        n = 0;
        cr_assert_eq(fl_run(&p, FL_COUNT, count_events, &n, &r), FL_OK);
        cr_assert_eq(n, r.events);
    }
}
