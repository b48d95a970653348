/* test_varlen.c: packed variable-length batches (docs/model.md V1): invalid cu_seqlens refused
 * naming the rule, counts equal the closed form and values the per-sequence reference over a
 * grid, and no attention crosses a sequence boundary: a packed run moves exactly what the
 * independent runs of its sequences move, and its outputs are the per-sequence outputs. */
#include "grid.h"
#include "heads.h"

Test(varlen, invalid_arrays_name_the_rule)
{
    const int64_t ok[] = {0, 3, 3, 10};
    const int64_t start[] = {1, 3, 10}, dec[] = {0, 5, 3, 10}, end[] = {0, 3, 9};
    cr_assert_eq(fl_cu_seqlens_check("--cu-seqlens-q", ok, 4, 3, 10), FL_OK);
    cr_assert_eq(fl_cu_seqlens_check("--cu-seqlens-q", ok, 4, 2, 10), FL_EINVAL);
    cr_assert(strstr(fl_last_error(), "batch + 1"));
    cr_assert_eq(fl_cu_seqlens_check("--cu-seqlens-q", start, 3, 2, 10), FL_EINVAL);
    cr_assert(strstr(fl_last_error(), "start at 0"));
    cr_assert_eq(fl_cu_seqlens_check("--cu-seqlens-k", dec, 4, 3, 10), FL_EINVAL);
    cr_assert(strstr(fl_last_error(), "nondecreasing") && strstr(fl_last_error(), "--cu-seqlens-k"));
    cr_assert_eq(fl_cu_seqlens_check("--cu-seqlens-q", end, 3, 2, 10), FL_EINVAL);
    cr_assert(strstr(fl_last_error(), "packed token count"));
    /* through the problem: N must be the last entry; a sequence empty on one side only */
    fl_problem p = fl_problem_default();
    const int64_t q[] = {0, 4, 9}, k[] = {0, 0, 6};
    p.batch = 2, p.N = 8, p.cu_seqlens_q = q, p.cu_seqlens_q_len = 3;
    cr_assert_eq(fl_problem_check(&p), FL_EINVAL);
    p.N = 9, p.Nk = 6, p.cu_seqlens_k = k;
    cr_assert_eq(fl_problem_check(&p), FL_EINVAL); /* an array without its number of entries */
    cr_assert(strstr(fl_last_error(), "number of entries"), "%s", fl_last_error());
    p.cu_seqlens_k_len = 3;
    cr_assert_eq(fl_problem_check(&p), FL_EINVAL);
    cr_assert(strstr(fl_last_error(), "empty on both sides"));
    /* the arrays' lengths are checked, never trusted: batch 2 with 2 entries (one too few) */
    const int64_t short_q[] = {0, 9};
    p.cu_seqlens_k = NULL, p.cu_seqlens_k_len = 0, p.Nk = 0;
    p.cu_seqlens_q = short_q, p.cu_seqlens_q_len = 2;
    cr_assert_eq(fl_problem_check(&p), FL_EINVAL);
    cr_assert(strstr(fl_last_error(), "needs batch + 1 = 3 entries, got 2"), "%s", fl_last_error());
}

Test(varlen, grid_counts_and_values)
{
    const int64_t cq[][5] = {{0, 5, 5, 17, 30}, {0, 1, 2, 3, 4}, {0, 30, 30, 30, 30}};
    const int64_t ck[][5] = {{0, 9, 9, 12, 40}, {0, 7, 9, 10, 30}, {0, 11, 11, 11, 11}};
    fl_algo algos[FL_ALGO_MAX]; /* every schedule with varlen and a backward, from the registry */
    const size_t nalgos = (size_t)sched_list(FL_ACCEPT_VARLEN | FL_ACCEPT_BWD, 0, algos);
    const fl_pass passes[] = {FL_PASS_FWD, FL_PASS_FWD_BWD};
    int n = 0;
    double worst = 0.0;
    for (size_t a = 0; a < nalgos; a++)
        for (size_t v = 0; v < 3; v++)
            for (int c = 0; c < 3; c++)
                for (size_t q = 0; q < 2; q++) {
                    fl_problem p = fl_problem_default();
                    p.algo = algos[a], p.batch = 4, p.cu_seqlens_q = cq[v], p.cu_seqlens_k = ck[v];
                    p.cu_seqlens_q_len = p.cu_seqlens_k_len = 5;
                    p.N = cq[v][4], p.Nk = ck[v][4], p.d = 5, p.M = 800, p.heads = 4, p.kv_heads = 2;
                    p.causal = (fl_causal)c, p.pass = passes[q], p.seed = 9 + v;
                    char what[64];
                    snprintf(what, sizeof what, "varlen %zu causal=%d pass=%d", v, c, p.pass);
                    expect_exact(&p, what, NULL);
                    expect_values(&p, what, &worst);
                    n++;
                }
    cr_log_info("varlen: %d configurations, worst rel err %.3e", n, worst);
}

Test(varlen, no_attention_crosses_a_boundary)
{
    /* counts: packed = sum of the sequences run alone (with the same blocks) */
    const int64_t cq[] = {0, 7, 20, 21}, ck[] = {0, 12, 20, 33};
    fl_algo algos[FL_ALGO_MAX]; /* "all": the registry's */
    const size_t nalgos = (size_t)fl_algos_all(NULL, algos);
    for (size_t a = 0; a < nalgos; a++)
        for (int c = 0; c < 3; c++) {
            fl_problem p = fl_problem_default();
            p.algo = algos[a], p.batch = 3, p.cu_seqlens_q = cq, p.cu_seqlens_k = ck, p.N = 21, p.Nk = 33;
            p.cu_seqlens_q_len = p.cu_seqlens_k_len = 4;
            p.d = 4, p.M = 600, p.Br = 4, p.Bc = 5, p.causal = (fl_causal)c, p.pass = FL_PASS_FWD_BWD;
            fl_result packed, one;
            cr_assert_eq(fl_run(&p, FL_COUNT, NULL, NULL, &packed), FL_OK, "%s", fl_last_error());
            int64_t sum = 0;
            for (int b = 0; b < 3; b++) {
                fl_problem s = p;
                s.batch = 1, s.cu_seqlens_q = s.cu_seqlens_k = NULL, s.cu_seqlens_q_len = s.cu_seqlens_k_len = 0;
                s.N = cq[b + 1] - cq[b], s.Nk = ck[b + 1] - ck[b];
                cr_assert_eq(fl_run(&s, FL_COUNT, NULL, NULL, &one), FL_OK, "%s", fl_last_error());
                sum += one.total;
            }
            cr_assert_eq(packed.total, sum, "%s causal=%d", fl_algo_name(p.algo), c);
            /* values: the reference attends within each sequence only; a crossing would differ */
            expect_values(&p, "boundary", NULL);
        }
}
