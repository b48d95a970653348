/* test_machine.c: the two-level machine's contract (include/flashlab/machine.h, docs/model.md §1). */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "machine.h"
#include "ops.h"
#include "run.h"
#include "footprint_split.h"

Test(machine, counts_each_element_moved_per_tensor)
{
    fl_machine *m = fl_machine_alloc(100, FL_COUNT, "unit");
    int A, B;
    fl_buf *b;
    cr_assert_eq(fl_tensor_add(m, "A", 10, 7, 2, &A), FL_OK);
    cr_assert_eq(fl_tensor_add(m, "B", 3, 3, 4, &B), FL_OK);
    cr_assert_eq(fl_sram_alloc(m, "t", 4, 5, &b), FL_OK);
    cr_assert_eq(fl_load(m, b, A, 6, 2, 4, 5), FL_OK);  /* 20 reads of A */
    cr_assert_eq(fl_load(m, b, A, 0, 0, 3, 1), FL_OK);  /* 3 more */
    cr_assert_eq(fl_store(m, b, B, 1, 1, 2, 2), FL_OK); /* 4 writes of B */
    cr_assert_eq(fl_tensor_get(m, A)->reads, 23);
    cr_assert_eq(fl_tensor_get(m, A)->writes, 0);
    cr_assert_eq(fl_tensor_get(m, B)->writes, 4);
    cr_assert_eq(fl_machine_reads(m), 23);
    cr_assert_eq(fl_machine_writes(m), 4);
    cr_assert_eq(fl_machine_events(m), 3);
    fl_machine_free(m);
}

Test(machine, capacity_error_names_schedule_live_buffers_and_M)
{
    fl_machine *m = fl_machine_alloc(50, FL_COUNT, "myschedule");
    fl_buf *a, *b, *c;
    cr_assert_eq(fl_sram_alloc(m, "Kj", 4, 5, &a), FL_OK);
    cr_assert_eq(fl_sram_alloc(m, "Vj", 5, 5, &b), FL_OK);
    cr_assert_eq(fl_sram_alloc(m, "Sij", 2, 3, &c), FL_ECAPACITY); /* 20 + 25 + 6 = 51 > 50 */
    cr_assert_null(c);
    const char *e = fl_last_error();
    cr_assert(strstr(e, "myschedule"), "%s", e);
    cr_assert(strstr(e, "M = 50"), "%s", e);
    cr_assert(strstr(e, "Sij"), "%s", e);
    cr_assert(strstr(e, "Kj 4x5=20"), "%s", e);
    cr_assert(strstr(e, "Vj 5x5=25"), "%s", e);
    /* exactly M fits */
    cr_assert_eq(fl_sram_alloc(m, "Sij", 1, 5, &c), FL_OK);
    cr_assert_eq(fl_machine_sram_used(m), 50);
    fl_machine_free(m);
}

Test(machine, peak_is_the_largest_live_total)
{
    fl_machine *m = fl_machine_alloc(1000, FL_COUNT, "unit");
    fl_buf *a, *b, *c;
    cr_assert_eq(fl_sram_alloc(m, "a", 10, 10, &a), FL_OK);
    cr_assert_eq(fl_sram_alloc(m, "b", 10, 30, &b), FL_OK);
    fl_sram_free(m, a);
    cr_assert_eq(fl_sram_alloc(m, "c", 7, 3, &c), FL_OK);
    cr_assert_eq(fl_machine_sram_used(m), 321);
    cr_assert_eq(fl_machine_sram_peak(m), 400);
    fl_sram_free(m, NULL); /* no-op */
    fl_sram_free(m, b);
    fl_sram_free(m, c);
    cr_assert_eq(fl_machine_sram_used(m), 0);
    cr_assert_eq(fl_machine_sram_peak(m), 400);
    fl_machine_free(m);
    fl_machine_free(NULL); /* no-op */
}

Test(machine, out_of_bounds_tiles_are_errors_and_count_nothing)
{
    fl_machine *m = fl_machine_alloc(100, FL_COUNT, "unit");
    int A;
    fl_buf *b;
    cr_assert_eq(fl_tensor_add(m, "A", 8, 8, 2, &A), FL_OK);
    cr_assert_eq(fl_sram_alloc(m, "t", 4, 4, &b), FL_OK);
    cr_assert_eq(fl_load(m, b, A, 6, 0, 4, 4), FL_EBOUNDS); /* past the tensor's last row */
    cr_assert_eq(fl_load(m, b, A, 0, 0, 5, 4), FL_EBOUNDS); /* taller than the buffer */
    cr_assert_eq(fl_load(m, b, A, -1, 0, 1, 1), FL_EBOUNDS);
    cr_assert_eq(fl_load(m, b, 7, 0, 0, 1, 1), FL_EBOUNDS); /* no such tensor */
    fl_sram_free(m, b);
    cr_assert_eq(fl_store(m, b, A, 0, 0, 1, 1), FL_EBOUNDS); /* buffer no longer live */
    cr_assert_eq(fl_machine_reads(m) + fl_machine_writes(m), 0);
    fl_machine_free(m);
}

Test(machine, compute_mode_moves_real_values)
{
    fl_machine *m = fl_machine_alloc(64, FL_COMPUTE, "unit");
    int A, B;
    fl_buf *b;
    cr_assert_eq(fl_tensor_add(m, "A", 3, 4, 8, &A), FL_OK);
    cr_assert_eq(fl_tensor_add(m, "B", 3, 4, 8, &B), FL_OK);
    double *a = fl_tensor_get(m, A)->data;
    for (int i = 0; i < 12; i++) a[i] = 1.5 * i - 2.385;
    cr_assert_eq(fl_sram_alloc(m, "t", 2, 3, &b), FL_OK);
    cr_assert_eq(fl_load(m, b, A, 1, 1, 2, 3), FL_OK);
    cr_assert(b->x[0] == a[5], "%.17g vs %.17g", b->x[0], a[5]);
    cr_assert(b->x[3 + 2] == a[11], "%.17g vs %.17g", b->x[3 + 2], a[11]);
    fl_op_fill(b, 1, 3, 7.25);
    cr_assert_eq(fl_store(m, b, B, 0, 1, 2, 3), FL_OK);
    const double *o = fl_tensor_get(m, B)->data;
    cr_assert(o[1] == 7.25, "%.17g vs %.17g", o[1], 7.25);
    cr_assert(o[4 + 3] == a[11], "%.17g vs %.17g", o[4 + 3], a[11]);
    cr_assert(o[0] == 0.0, "%.17g vs %.17g", o[0], 0.0);
    fl_machine_free(m);
}

Test(machine, count_mode_holds_no_values)
{
    fl_machine *m = fl_machine_alloc(64, FL_COUNT, "unit");
    int A;
    fl_buf *b;
    cr_assert_eq(fl_tensor_add(m, "A", 1000000, 1000, 2, &A), FL_OK); /* 1e9 elements: no storage */
    cr_assert_null(fl_tensor_get(m, A)->data);
    cr_assert_eq(fl_sram_alloc(m, "t", 8, 8, &b), FL_OK);
    cr_assert_null(b->x);
    fl_machine_free(m);
}

Test(machine, rejects_bad_capacity_and_sizes)
{
    cr_assert_null(fl_machine_alloc(0, FL_COUNT, "unit"));
    cr_assert(strstr(fl_last_error_raw(), "{M}"));
    fl_machine *m = fl_machine_alloc(10, FL_COUNT, "unit");
    int A;
    fl_buf *b;
    cr_assert_eq(fl_tensor_add(m, "A", 0, 3, 2, &A), FL_EINVAL);
    cr_assert_eq(fl_tensor_add(m, "A", INT64_MAX, 3, 2, &A), FL_EINVAL); /* size overflows */
    cr_assert_eq(fl_sram_alloc(m, "t", -1, 3, &b), FL_EINVAL);
    cr_assert_eq(fl_sram_alloc(m, "t", INT64_MAX, INT64_MAX, &b), FL_EINVAL);
    fl_machine_free(m);
}

typedef struct {
    int loads, stores, allocs, frees;
    int64_t last_reads, max_used;
} trace_tally;

static int tally(const fl_event *ev, void *ctx)
{
    trace_tally *t = ctx;
    t->loads += ev->kind == FL_EV_LOAD;
    t->stores += ev->kind == FL_EV_STORE;
    t->allocs += ev->kind == FL_EV_ALLOC;
    t->frees += ev->kind == FL_EV_FREE;
    t->last_reads = ev->reads;
    if (ev->sram_used > t->max_used) t->max_used = ev->sram_used;
    return 0;
}

/* Stops the run at the n-th event (ctx: a counter starting at n). */
static int stop_after(const fl_event *ev, void *ctx)
{
    (void)ev;
    return --*(int *)ctx <= 0;
}

Test(machine, a_trace_callback_stops_the_run)
{
    for (int n = 1; n <= 12; n++) {
        fl_problem p = fl_problem_default();
        p.algo = FL_ALGO_FLASH2, p.N = 64, p.d = 8, p.M = 2000;
        fl_result r;
        int left = n;
        cr_assert_eq(fl_run(&p, FL_COUNT, stop_after, &left, &r), FL_ESTOPPED, "stop at event %d", n);
        cr_assert(strstr(fl_last_error(), "stopped the run"), "%s", fl_last_error());
    }
    /* the machine refuses every move after the stop */
    fl_machine *m = fl_machine_alloc(100, FL_COUNT, "test");
    int left = 1, t;
    fl_buf *b;
    fl_machine_set_trace(m, stop_after, &left);
    cr_assert_eq(fl_tensor_add(m, "A", 4, 4, 2, &t), FL_OK);
    cr_assert_eq(fl_sram_alloc(m, "a", 2, 2, &b), FL_ESTOPPED); /* the alloc event stops it */
    cr_assert_eq(fl_load(m, b, t, 0, 0, 2, 2), FL_ESTOPPED);
    cr_assert_eq(fl_store(m, b, t, 0, 0, 2, 2), FL_ESTOPPED);
    cr_assert_eq(fl_machine_reads(m), 0, "a refused load counts nothing");
    fl_machine_free(m);
}

Test(machine, trace_sees_every_event_with_running_totals)
{
    trace_tally t = {0};
    fl_machine *m = fl_machine_alloc(64, FL_COUNT, "unit");
    fl_machine_set_trace(m, tally, &t);
    int A;
    fl_buf *b;
    cr_assert_eq(fl_tensor_add(m, "A", 8, 8, 2, &A), FL_OK);
    cr_assert_eq(fl_sram_alloc(m, "t", 4, 8, &b), FL_OK);
    cr_assert_eq(fl_load(m, b, A, 0, 0, 4, 8), FL_OK);
    cr_assert_eq(fl_load(m, b, A, 4, 0, 3, 8), FL_OK);
    cr_assert_eq(fl_store(m, b, A, 4, 0, 4, 8), FL_OK);
    fl_sram_free(m, b);
    cr_assert_eq(t.loads, 2);
    cr_assert_eq(t.stores, 1);
    cr_assert_eq(t.allocs, 1);
    cr_assert_eq(t.frees, 1);
    cr_assert_eq(t.last_reads, 56);
    cr_assert_eq(t.max_used, 32);
    fl_machine_free(m);
}

/* footprint_split.h's coefficients with the head dimensions apart are footprint.h's at Dq = Dv
 * (rd = rq + rv, cd = cq + cv), and a split coefficient moved to the other side differs. */
Test(machine, split_footprints_are_the_plain_ones_at_one_head_dimension)
{
    const fl_fp_split s[] = {FL_FP2_FLASH1_FWD, FL_FP2_FLASH1_BWD, FL_FP2_FLASH2_FWD, FL_FP2_FLASH2_BWD};
    const fl_fp_coef k[] = {FL_FP_FLASH1_FWD, FL_FP_FLASH1_BWD, FL_FP_FLASH2_FWD, FL_FP_FLASH2_BWD};
    for (int i = 0; i < 4; i++)
        for (int64_t R = 1; R <= 9; R += 4)
            for (int64_t C = 1; C <= 9; C += 3)
                for (int64_t D = 1; D <= 200; D += 37) {
                    cr_assert_eq(fl_fp2_eval(s[i], R, C, D, D), fl_fp_eval(k[i], R, C, D), "footprint %d", i);
                    if (s[i].rq != s[i].rv && R != C) /* a wrong split shows at Dq != Dv */
                        cr_assert_neq(fl_fp2_eval(s[i], R, C, D, D + 1),
                                      fl_fp2_eval((fl_fp_split){s[i].rv, s[i].rq, s[i].cq, s[i].cv, s[i].rc, s[i].r}, R, C, D, D + 1));
                }
}
