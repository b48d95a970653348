/* consumer.c: a C program that uses an installed flashlab, built by tests/install/test_install.py
 * once through find_package(flashlab) (CMakeLists.txt beside it) and once through
 * `pkg-config --cflags --libs flashlab`.
 *
 *     consumer ALGO N d M
 *
 * prints the versions of the headers and of the library, then one CSV row of the count-only
 * run of ALGO on the problem (N, d, M), in the columns of `flashlab count --format csv`, then
 * the slope and intercept of ln(hbm_total) against ln(M) over M, 2M, 4M, 8M fitted by
 * fl_fit_power (GSL: a static build must link it); exit status 2 with fl_last_error() on a
 * refused input. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <flashlab/fit.h>
#include <flashlab/run.h>
#include <flashlab/version.h>

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: consumer ALGO N d M\n");
        return 2;
    }
    fl_problem p = fl_problem_default();
    fl_result r;
    fl_status s = fl_algo_parse(argv[1], &p.algo);
    p.N = strtoll(argv[2], NULL, 10);
    p.d = strtoll(argv[3], NULL, 10);
    p.M = strtoll(argv[4], NULL, 10);
    if (!s) s = fl_run(&p, FL_COUNT, NULL, NULL, &r);
    if (s) {
        fprintf(stderr, "consumer: %s\n", fl_last_error());
        return 2;
    }
    printf("headers %s library %s\n", FLASHLAB_VERSION, fl_version());
    printf("algo,N,d,M,Br,Bc,hbm_reads,hbm_writes,hbm_total,sram_peak,closed_form_total\n");
    printf("%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
           ",%" PRId64 ",%" PRId64 "\n",
           fl_algo_name(p.algo), p.N, p.d, p.M, r.b.Br, r.b.Bc, r.reads, r.writes, r.total, r.sram_peak,
           r.closed.reads + r.closed.writes);
    double M[4], total[4];
    for (int k = 0; k < 4; k++) {
        fl_problem q = p;
        fl_result rk;
        q.M = p.M << k;
        if ((s = fl_run(&q, FL_COUNT, NULL, NULL, &rk))) break;
        M[k] = (double)q.M, total[k] = (double)rk.total;
    }
    fl_fit f;
    if (!s) s = fl_fit_power(M, total, 4, &f);
    if (s) {
        fprintf(stderr, "consumer: %s\n", fl_last_error());
        return 2;
    }
    printf("power_fit_M,%.17g,%.17g\n", f.slope, f.intercept);
    return 0;
}
