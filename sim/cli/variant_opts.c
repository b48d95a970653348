/* variant_opts.c: the variant options shared by count, run and sweep (see variant_opts.h). */
#include "variant_opts.h"

#include <string.h>

#include "args.h"

const char fl_variant_usage[] =
    "  --pass P      fwd, bwd (backward alone: its inputs are in HBM) or fwd+bwd [fwd]\n"
    "  --Nk N        key length                                       [N]\n"
    "  --causal C    none, top-left (SDPA is_causal) or bottom-right (FlashAttention >= 2.1) [none]\n"
    "  --window L,R  FA2 local window: query i sees keys [i+Nk-Nq-L, i+Nk-Nq+R]; -1 = unbounded [-1,-1]\n"
    "  --batch B     sequences                                        [1]\n"
    "  --heads H     query heads                                      [1]\n"
    "  --kv-heads H  key/value heads, dividing --heads (1 = MQA)      [heads]\n";

static fl_status parse_pass(const char *v, fl_pass *out)
{
    if (strcmp(v, "fwd") == 0) *out = FL_PASS_FWD;
    else if (strcmp(v, "bwd") == 0) *out = FL_PASS_BWD;
    else if (strcmp(v, "fwd+bwd") == 0) *out = FL_PASS_FWD_BWD;
    else return fl_fail(FL_EINVAL, "--pass: unknown pass '%s' (choose fwd, bwd or fwd+bwd)", v);
    return FL_OK;
}

static fl_status parse_window(const char *v, fl_problem *p)
{
    int64_t w[2], n;
    FL_TRY(fl_parse_i64_list("--window", v, -1, INT64_MAX / 4, w, 2, &n));
    if (n != 2) return fl_fail(FL_EINVAL, "--window: needs two values L,R (each >= 0, or -1 for unbounded)");
    p->window_left = w[0];
    p->window_right = w[1];
    return FL_OK;
}

int fl_variant_option(const char *name, const char *v, fl_problem *p, fl_status *st)
{
    const int64_t big = INT64_MAX / 4;
    if (strcmp(name, "--pass") == 0) *st = parse_pass(v, &p->pass);
    else if (strcmp(name, "--Nk") == 0) *st = fl_parse_i64(name, v, 1, big, &p->Nk);
    else if (strcmp(name, "--causal") == 0) *st = fl_causal_parse(v, &p->causal);
    else if (strcmp(name, "--window") == 0) *st = parse_window(v, p);
    else if (strcmp(name, "--batch") == 0) *st = fl_parse_i64(name, v, 1, big, &p->batch);
    else if (strcmp(name, "--heads") == 0) *st = fl_parse_i64(name, v, 1, big, &p->heads);
    else if (strcmp(name, "--kv-heads") == 0) *st = fl_parse_i64(name, v, 1, big, &p->kv_heads);
    else return 0;
    return 1;
}
