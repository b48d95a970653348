/* test_cli_variants.c: the variant options of count/run (--pass, --causal, --Nk, --window,
 * --batch, --heads, --kv-heads, --cu-seqlens-q/-k): each bad input is one line naming the option
 * and the rule, exit 2, nothing on stdout; good inputs count and report the closed form. */
#include "test_errors_util.h"

Test(cli_variants, bad_inputs_name_option_and_rule)
{
    EXPECT_BAD("--pass: unknown pass 'fwdbwd' (choose fwd, bwd or fwd+bwd)", "count", "--pass", "fwdbwd");
    EXPECT_BAD("--causal: unknown corner 'upper' (choose none, top-left or bottom-right)", "count", "--causal", "upper");
    EXPECT_BAD("--window: needs two values L,R (each >= 0, or -1 for unbounded)", "count", "--window", "3");
    EXPECT_BAD_NAMES("--window", "count", "--window", "-2,1");
    EXPECT_BAD_NAMES("--window", "count", "--window", "1,,2");
    EXPECT_BAD("--kv-heads: 2 key/value heads must divide the 5 query heads (query head h uses K/V head h / (Hq/Hkv))",
               "count", "--heads", "5", "--kv-heads", "2");
    EXPECT_BAD_NAMES("--kv-heads", "count", "--kv-heads", "0");
    EXPECT_BAD_NAMES("--Nk", "count", "--Nk", "0");
    EXPECT_BAD_NAMES("--batch", "count", "--batch", "-1");
    EXPECT_BAD("--cu-seqlens-q: must be nondecreasing (entry 2 = 2 < entry 1 = 3)", "count", "--cu-seqlens-q", "0,3,2", "--N", "2");
    EXPECT_BAD("--cu-seqlens-q: must start at 0 (entry 0 is 1)", "count", "--cu-seqlens-q", "1,3");
    EXPECT_BAD("--cu-seqlens-q: must end at the packed token count 6 (last entry is 5)", "count", "--cu-seqlens-q", "0,3,5", "--N", "6");
    EXPECT_BAD("--cu-seqlens-q: needs batch + 1 = 4 entries, got 3", "count", "--cu-seqlens-q", "0,3,5", "--batch", "3");
    EXPECT_BAD("--cu-seqlens-k: needs --cu-seqlens-q too", "count", "--cu-seqlens-k", "0,3");
    EXPECT_BAD_NAMES("--cu-seqlens-k", "count", "--cu-seqlens-q", "0,3,5", "--cu-seqlens-k", "0,3");
    EXPECT_BAD_NAMES("--cu-seqlens-k", "count", "--cu-seqlens-q", "0,3,5", "--cu-seqlens-k", "0,4,2");
    EXPECT_BAD_NAMES("--cu-seqlens-q", "run", "--cu-seqlens-q", "0,3,x");
}

Test(cli_variants, good_inputs_count_with_the_closed_form)
{
    const char *const argv[] = {"flashlab", "count", "--N", "300", "--Nk", "700", "--causal", "bottom-right",
                                "--window", "64,0", "--batch", "3", "--heads", "8", "--kv-heads", "2",
                                "--pass", "fwd+bwd", "--format", "csv", NULL};
    cli_result r = cli_run_in(NULL, NULL, argv);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, ",pass,Nk,causal,window_left,window_right,batch,heads,kv_heads,varlen,fwd_total,bwd_total"), "%s", r.out);
    cr_assert(strstr(r.out, ",fwd+bwd,700,bottom-right,64,0,3,8,2,0,"), "%s", r.out);
    /* hbm_total (col 9) equals closed_form_total (col 11) on every row */
    for (char *line = strchr(r.out, '\n') + 1; *line; line = strchr(line, '\n') + 1) {
        long long v[12];
        char name[32];
        cr_assert_eq(sscanf(line, "%31[^,],%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld", name, &v[1], &v[2], &v[3],
                            &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10]), 11);
        cr_assert_eq(v[8], v[10], "%s", line);
    }
    cli_free(&r);
    const char *const vl[] = {"flashlab", "run", "--cu-seqlens-q", "0,5,12,30", "--cu-seqlens-k", "0,9,10,40",
                              "--d", "8", "--M", "2000", "--causal", "top-left", "--pass", "bwd", NULL};
    r = cli_run_in(NULL, NULL, vl);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "(varlen)") && strstr(r.out, "gradients rel. error"), "%s", r.out);
    cli_free(&r);
}

Test(cli_variants, sweep_takes_the_variant_options)
{
    const char *const argv[] = {"flashlab", "sweep", "--N", "100,257", "--d", "16", "--M", "4000,9000", "--causal",
                                "top-left", "--Nk", "300", "--pass", "bwd", "--heads", "4", "--kv-heads", "1",
                                "--algo", "standard,flash1,flash2,flash2-gqa", NULL};
    cli_result r = cli_run_in(NULL, NULL, argv);
    cr_assert_eq(r.status, 0, "%s", r.err);
    int rows = 0;
    for (char *line = r.out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (*line == '#' || strncmp(line, "algo,", 5) == 0) continue;
        long long v[12];
        char name[32];
        cr_assert_eq(sscanf(line, "%31[^,],%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld", name, &v[1], &v[2], &v[3],
                            &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10]), 11);
        cr_assert_eq(v[8], v[10], "%s", line);
        cr_assert(strstr(line, ",bwd,300,top-left,-1,-1,1,4,1,0,"), "%s", line);
        rows++;
    }
    cr_assert_eq(rows, 16, "%s", r.out);
    cli_free(&r);
    EXPECT_BAD_NAMES("--kv-heads", "sweep", "--heads", "5", "--kv-heads", "2");
    EXPECT_BAD_NAMES("--pass", "sweep", "--pass", "both");
}
