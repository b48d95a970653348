/* test_l2_order.c: the kernels in GPU order (include/flashlab/gpu_order.h) move exactly the elements the
 * model's schedules count (fl_run), per tensor; the three-level prediction on cases small enough
 * to compute by hand; the `flashlab l2` command's output and errors. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "cli_runner.h"
#include "gpu_order.h"
#include "l2_predict.h"
#include "run.h"
#include "schedule.h"

static void totals_equal_fl_run(fl_algo a, int bwd, int64_t N, int64_t d, int64_t Br, int64_t Bc, int eb)
{
    fl_gpu_machine mc = fl_gpu_machine_h200();
    fl_gpu_sched s;
    cr_assert_eq(fl_gpu_sched_build(a, bwd, N, d, Br, Bc, eb, &mc, &s), FL_OK, "%s", fl_last_error());
    fl_l2_pred pr;
    cr_assert_eq(fl_l2_predict(&s, 1 << 20, 32, 1, &pr), FL_OK, "%s", fl_last_error());
    fl_problem p = fl_problem_default();
    p.algo = a, p.N = N, p.d = d, p.Br = Br, p.Bc = Bc, p.M = s.M_eff, p.elem_bytes = eb;
    p.pass = bwd ? FL_PASS_BWD : FL_PASS_FWD;
    fl_result r;
    cr_assert_eq(fl_run(&p, FL_COUNT, NULL, NULL, &r), FL_OK, "%s", fl_last_error());
    int64_t gr = 0, gw = 0;
    for (int t = 0; t < FL_GT_COUNT; t++) gr += pr.total.reads[t], gw += pr.total.writes[t];
    cr_assert_eq(gr, r.reads, "%s N=%ld d=%ld %ldx%ld: reads %ld vs model %ld", fl_algo_name(a), (long)N, (long)d,
                 (long)Br, (long)Bc, (long)gr, (long)r.reads);
    cr_assert_eq(gw, r.writes, "%s N=%ld: writes %ld vs model %ld", fl_algo_name(a), (long)N, (long)gw, (long)r.writes);
    for (int i = 0; i < r.ntensors; i++) { /* and tensor by tensor */
        int t = -1;
        for (int g = 0; g < FL_GT_COUNT; g++)
            if (s.t[g].used && strcmp(s.t[g].name, r.t[i].name) == 0) t = g;
        if (t < 0) { /* a tensor the kernels never touch (the forward's O, S in a bwd-only run) */
            cr_assert(r.t[i].reads == 0 && r.t[i].writes == 0, "%s: model moves %s, the kernels do not",
                      fl_algo_name(a), r.t[i].name);
            continue;
        }
        cr_assert_eq(pr.total.reads[t], r.t[i].reads, "%s: %s reads", fl_algo_name(a), r.t[i].name);
        cr_assert_eq(pr.total.writes[t], r.t[i].writes, "%s: %s writes", fl_algo_name(a), r.t[i].name);
    }
}

Test(l2_order, totals_equal_the_model_per_tensor)
{
    fl_algo algos[FL_ALGO_MAX]; /* the registry's schedules whose kernels the GPU order describes */
    int nalgos = 0;
    const fl_gpu_machine mc = fl_gpu_machine_h200();
    for (int a = 0; a < fl_schedule_count(); a++) {
        fl_gpu_sched s;
        if (fl_gpu_sched_build((fl_algo)a, 0, 64, 16, 16, 16, 2, &mc, &s) == FL_OK) algos[nalgos++] = (fl_algo)a;
    }
    cr_assert_geq(nalgos, 3, "the readable kernels of three schedules are modelled");
    const int64_t Ns[] = {1, 100, 200, 333}, ds[] = {16, 64}, bs[][2] = {{16, 16}, {32, 64}, {64, 32}};
    for (int a = 0; a < nalgos; a++)
        for (int n = 0; n < 4; n++)
            for (int k = 0; k < 2; k++)
                for (int b = 0; b < 3; b++) {
                    totals_equal_fl_run(algos[a], 0, Ns[n], ds[k], bs[b][0], bs[b][1], 2);
                    totals_equal_fl_run(algos[a], 1, Ns[n], ds[k], bs[b][0], bs[b][1], 2);
                }
    /* standard's three-pass softmax and two-pass dsoftmax (N > M_eff), fp32 */
    totals_equal_fl_run(FL_ALGO_STANDARD, 0, 3000, 16, 16, 16, 4);
    totals_equal_fl_run(FL_ALGO_STANDARD, 1, 3000, 16, 16, 16, 4);
    totals_equal_fl_run(FL_ALGO_STANDARD, 1, 500, 16, 16, 16, 2); /* 2N > M_eff = 768 >= N */
    totals_equal_fl_run(FL_ALGO_FLASH2, 0, 1000, 64, 64, 64, 4);
}

/* flash2, N = 256, d = 16, 64x64, fp16: 4 CTAs; Q, K, V are 8 KiB each, a tile 2 KiB. */
static fl_l2_pred flash2_small(int64_t sms, int64_t l2_bytes)
{
    fl_gpu_machine mc = fl_gpu_machine_h200();
    mc.sms = sms, mc.ctas_per_sm = 1;
    fl_gpu_sched s;
    cr_assert_eq(fl_gpu_sched_build(FL_ALGO_FLASH2, 0, 256, 16, 64, 64, 2, &mc, &s), FL_OK);
    fl_l2_pred pr;
    cr_assert_eq(fl_l2_predict(&s, l2_bytes, 32, 1, &pr), FL_OK);
    return pr;
}

Test(l2_order, by_hand_flash2_waves)
{
    /* SM side: Q once (8 KiB) + every CTA reads all of K and V (4 x 16 KiB) = 73728 B */
    fl_l2_pred big = flash2_small(1, 1 << 20);
    cr_assert_eq(big.total.sm_read_B, 73728);
    cr_assert_eq(big.total.dram_read_B, 24576); /* L2 holds everything: Q, K, V once */
    /* 8 KiB of L2, one CTA a wave: each CTA sweeps 16 KiB of K, V through it, cyclic: all miss */
    fl_l2_pred small = flash2_small(1, 8192);
    cr_assert_eq(small.total.dram_read_B, 73728);
    /* 8 KiB of L2, all 4 CTAs in one wave: the first CTA's K_j, V_j miss, the other three hit */
    fl_l2_pred wave = flash2_small(4, 8192);
    cr_assert_eq(wave.total.dram_read_B, 24576);
    /* two waves of two CTAs: K and V cross DRAM once per wave: 8 KiB + 2 x 16 KiB */
    fl_l2_pred two = flash2_small(2, 8192);
    cr_assert_eq(two.total.dram_read_B, 8192 + 2 * 16384);
}

Test(l2_order, by_hand_standard_three_pass_softmax)
{
    /* N = 4096 > M_eff = 16*16*3 = 768: three passes; fp16 rows of 8 KiB; 1 SM, 1 CTA a wave.
     * L2 of 16 KiB holds a row: S is read from DRAM once (32 MiB), every pass after hits. */
    fl_gpu_machine mc = fl_gpu_machine_h200();
    mc.sms = 1, mc.ctas_per_sm = 1;
    fl_gpu_sched s;
    cr_assert_eq(fl_gpu_sched_build(FL_ALGO_STANDARD, 0, 4096, 16, 16, 16, 2, &mc, &s), FL_OK);
    cr_assert_eq(s.k[1].kind, FL_GK_STD_SOFTMAX_3PASS);
    fl_l2_pred pr;
    cr_assert_eq(fl_l2_predict(&s, 16384, 32, 1, &pr), FL_OK);
    cr_assert_eq(pr.k[1].sm_read_B, 3 * 4096 * 4096 * 2);
    /* pass 3 writes P beside S: 8 KiB of S and 8 KiB of P fill the 16 KiB exactly, so S stays */
    cr_assert_eq(pr.k[1].dram_read_B, 4096 * 4096 * 2);
    /* 4 KiB of L2 (half a row): each pass misses the whole row again */
    cr_assert_eq(fl_l2_predict(&s, 4096, 32, 1, &pr), FL_OK);
    cr_assert_eq(pr.k[1].dram_read_B, 3 * 4096 * 4096 * 2);
}

Test(l2_order, occupancy_from_shared_memory_and_threads)
{
    fl_gpu_machine mc = fl_gpu_machine_h200();
    fl_gpu_sched s;
    /* flash2 fp16 d = 64, 64x64: 83456 B per CTA: floor(233472 / 84480) = 2 per SM */
    cr_assert_eq(fl_gpu_sched_build(FL_ALGO_FLASH2, 0, 4096, 64, 64, 64, 2, &mc, &s), FL_OK);
    cr_assert_eq(s.k[0].smem, 83456);
    cr_assert_eq(s.k[0].per_sm, 2);
    /* the standard softmax: 16 B of shared memory, 2048 / 128 threads = 16 per SM */
    cr_assert_eq(fl_gpu_sched_build(FL_ALGO_STANDARD, 0, 16384, 64, 64, 64, 2, &mc, &s), FL_OK);
    cr_assert_eq(s.k[1].per_sm, 16);
    cr_assert_eq(fl_gpu_sched_build(FL_ALGO_FLASH2_GQA, 0, 64, 64, 64, 64, 2, &mc, &s), FL_EINVAL);
}

Test(l2_order, cli_prints_dram_beside_sm_bytes_and_refuses_bad_input)
{
    const char *ok[] = {"l2", "--algo", "flash2", "--N", "256", "--d", "16", "--Br", "64", "--Bc", "64",
                        "--format", "csv", NULL};
    cli_result *r = cli_run(ok);
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert(strstr(r->out, "# command: flashlab l2") != NULL);
    cr_assert(strstr(r->out, "flash2,fwd,fp16,256,16,64,64,total,0,0,0,73728,73728,24576,") != NULL, "%s", r->out);
    free(r);
    const char *bad[][12] = {
        {"l2", "--algo", "flash2", "--N", "0", "--d", "16", "--Br", "64", "--Bc", "64", NULL},
        {"l2", "--algo", "decode", "--N", "64", "--d", "16", "--Br", "64", "--Bc", "64", NULL},
        {"l2", "--algo", "flash2", "--N", "64", "--d", "16", "--Br", "64", NULL},
        {"l2", "--algo", "flash2", "--N", "64", "--d", "16", "--Br", "64", "--Bc", "x", NULL},
    };
    for (int i = 0; i < 4; i++) {
        r = cli_run(bad[i]);
        cr_assert_eq(r->status, 2, "case %d: status %d", i, r->status);
        cr_assert(strncmp(r->err, "flashlab: ", 10) == 0 && strchr(r->err, '\n') == r->err + strlen(r->err) - 1,
                  "case %d: %s", i, r->err);
        cr_assert_eq(r->out[0], 0);
        free(r);
    }
}
