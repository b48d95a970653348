/* test_figure_h.c: figure (h), traffic against head dimension at the presets' SRAM.  In its data
 * (the grid `plot` and `report` compute, src/analysis/headdim.c, written as CSV and read back)
 * every schedule and the optimum lie on or above the lower bound, the optimum on or below every
 * schedule, flash2 is the optimum where d^2 <= M and smallcache where d^2 >= 2M (the small-cache
 * regime of docs/bounds.md §2.3); the report's summary names the boundary and the models on each
 * side; the gnuplot script draws the data in the three formats. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_runner.h"
#include "disk.h"
#include "headdim.h"

Test(figure_h, its_data_show_the_small_cache_regime_and_the_script_draws_them)
{
    fl_time_limit(FL_T(600));
    int64_t Ms[8];
    char names[8][64];
    const int nM = fl_headdim_Ms(Ms, names, 8);
    cr_assert_eq(nM, 3, "the presets' fp16 SRAM: A100, H100/H200/B200 and L40S/RTX 4090");
    cr_assert_eq(Ms[0], 98304);
    cr_assert_str_eq(names[0], "a100");
    cr_assert_eq(Ms[1], 131072);
    cr_assert_str_eq(names[1], "h100/h200/b200");
    cr_assert_eq(Ms[2], 65536);
    cr_assert_str_eq(names[2], "l40s/rtx4090");

    const fl_regime_point *pts;
    size_t npts;
    cr_assert_eq(fl_headdim_collect(&pts, &npts), FL_OK, "%s", fl_last_error());
    char dir[] = "/tmp/flashlab-figh-XXXXXX", path[256], cmd[1024];
    cr_assert(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/fig_h_traffic_vs_d.csv", dir);
    cr_assert_eq(fl_headdim_write_path(path), FL_OK, "%s", fl_last_error());

    FILE *f = fopen(path, "r");
    cr_assert(f, "%s", path);
    char line[512];
    int n = 0, small = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == 'N') continue;
        long long N, d, M, s[4], opt, lb;
        char sc[4][24], algo[32];
        cr_assert_eq(sscanf(line, "%lld,%lld,%lld,fwd,%23[^,],%23[^,],%23[^,],%23[^,],%lld,%31[^,],%*d,%*d,%lld", &N, &d,
                            &M, sc[0], sc[1], sc[2], sc[3], &opt, algo, &lb),
                     10, "%s", line);
        for (int k = 0; k < 4; k++) s[k] = strcmp(sc[k], "-") ? atoll(sc[k]) : -1;
        cr_assert_geq(opt, lb, "d %lld M %lld", d, M);
        for (int k = 0; k < 4; k++)
            if (s[k] >= 0) {
                cr_assert_geq(s[k], lb, "d %lld M %lld schedule %d", d, M, k);
                cr_assert_leq(opt, s[k], "d %lld M %lld schedule %d", d, M, k);
            }
        if (d * d <= M) cr_assert_str_eq(algo, "flash2", "d %lld M %lld", d, M);
        if (d * d >= 2 * M) {
            cr_assert_str_eq(algo, "smallcache", "d %lld M %lld", d, M);
            small++;
        }
        n++;
    }
    fclose(f);
    cr_assert_eq(n, 39, "13 head dimensions at each of 3 values of M");
    cr_assert_geq(small, 8, "d = 512 .. 1024 are small-cache heads at both M");

    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    fl_headdim_print(m, pts, npts);
    fclose(m);
    const char *want[] = {"a100: M = 98304; small cache (d^2 > M) from d = 314",
                          "h100/h200/b200: M = 131072; small cache (d^2 > M) from d = 363",
                          "models in the small-cache regime: gemma-4-global (d 512), deepseek-v3-decode (d 576)",
                          "models in the large-cache regime: gpt-oss-120b (d 64)"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) cr_assert(strstr(buf, want[i]), "lacks '%s':\n%s", want[i], buf);
    free(buf);

    if (!have_gnuplot()) cr_skip_test("gnuplot (pngcairo, pdfcairo, svg) is not installed: apt-get install gnuplot-nox");
    const char *fmts[] = {"png", "pdf", "svg"}, *magic[] = {"\x89PNG", "%PDF", "<?xml"};
    for (int k = 0; k < 3; k++) {
        snprintf(cmd, sizeof cmd,
                 "cd %s/figures && gnuplot -e \"data='%s'; Ms='98304 131072'; Mnames='a100 h100'; fmt='%s'; "
                 "out='%s/h.%s'\" fig_h_traffic_vs_d.gp",
                 FLASHLAB_SOURCE_DIR, path, fmts[k], dir, fmts[k]);
        cr_assert_eq(system(cmd), 0, "%s", cmd);
        char out[300];
        snprintf(out, sizeof out, "%s/h.%s", dir, fmts[k]);
        cr_assert(file_starts_with(out, magic[k]) || (k == 2 && file_starts_with(out, "<svg")), "%s", out);
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}
