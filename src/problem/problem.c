/* problem.c: a problem's defaults, the rules every problem obeys, and its sequence lengths
 * (see problem.h).  What a problem's schedule accepts is checked through the registry
 * (src/schedules/dispatch.c). */
#include <flashlab/heads.h>
#include <flashlab/problem.h>

#include <math.h>
#include <stdio.h>

fl_problem fl_problem_default(void)
{
    const fl_problem p = {FL_PROBLEM_FIELDS(FL_FIELD_DEFAULT)};
    return p;
}

const fl_field *fl_problem_fields(int *n)
{
#define FL_ENTRY(kind, type, name, dflt, what) {#name, offsetof(fl_problem, name), sizeof(type), kind},
    static const fl_field f[] = {FL_PROBLEM_FIELDS(FL_ENTRY)};
#undef FL_ENTRY
    *n = (int)(sizeof f / sizeof f[0]);
    return f;
}

int fl_problem_asks_kv_cache(const fl_problem *p) { return p->kv_cache != NULL; }

int fl_problem_asks_block_mask(const fl_problem *p) { return p->block_mask != NULL; }

int fl_problem_asks_variants(const fl_problem *p) { return fl_problem_variant_field(p) != NULL; }

const char *fl_problem_variant_field(const fl_problem *p)
{
    if (p->d_v != 0 && p->d_v != p->d) return "d_v";
    if (p->sinks != 0) return "sinks";
    if (p->softcap != 0.0) return "softcap";
    if (p->alibi != 0) return "alibi";
    if (p->dropout != 0.0) return "dropout";
    if (p->elem_bytes == 1) return "dtype";
    return NULL;
}

/* The variants of docs/model.md §14 and the combinations that have no meaning. */
static fl_status check_variants(const fl_problem *p)
{
    if (p->d_v < 0) return fl_fail(FL_EINVAL, "{d_v}: value head dimension must be an integer >= 1 (0 = d)");
    if (p->sinks != 0 && p->sinks != 1) return fl_fail(FL_EINVAL, "{sinks}: 0 (none) or 1 (a sink logit per query head)");
    if (p->alibi != 0 && p->alibi != 1) return fl_fail(FL_EINVAL, "{alibi}: 0 (none) or 1 (per-head slopes)");
    if (p->deterministic != 0 && p->deterministic != 1)
        return fl_fail(FL_EINVAL, "{deterministic}: 0 (atomics) or 1 (a fixed order)");
    if (!(p->softcap >= 0.0) || !isfinite(p->softcap))
        return fl_fail(FL_EINVAL, "{softcap}: must be a finite number >= 0 (0 = no cap), got %g", p->softcap);
    if (!(p->dropout >= 0.0 && p->dropout < 1.0))
        return fl_fail(FL_EINVAL, "{dropout}: the probability of dropping must be in [0, 1), got %g", p->dropout);
    if (p->scale_block < 0) return fl_fail(FL_EINVAL, "{scale_block}: must be an integer >= 1 (0 = one scale per sequence and head)");
    if (p->scale_block && p->elem_bytes != 1)
        return fl_fail(FL_EINVAL, "{scale_block}: scale factors belong to fp8 inputs ({dtype} fp8); got %d-byte elements",
                       p->elem_bytes);
    if (p->elem_bytes == 1 && (p->pass & FL_PASS_BWD))
        return fl_fail(FL_EINVAL, "{dtype}: fp8 is forward only here (FlashAttention-3's FP8 path has no backward); "
                                  "use {pass} fwd, or fp16/bf16 for a backward");
    if (p->deterministic && !(p->pass & FL_PASS_BWD))
        return fl_fail(FL_EINVAL, "{deterministic}: the forward accumulates nothing across blocks; a fixed order "
                                  "is the backward's (use {pass} bwd or fwd+bwd)");
    return FL_OK;
}

fl_status fl_problem_check_fields(const fl_problem *p)
{
    if (p->N < 1) return fl_fail(FL_EINVAL, "{N}: sequence length must be an integer >= 1");
    if (p->d < 1) return fl_fail(FL_EINVAL, "{d}: head dimension must be an integer >= 1");
    if (p->M < 1) return fl_fail(FL_EINVAL, "{M}: SRAM capacity must be an integer >= 1 element");
    if (p->Br < 0) return fl_fail(FL_EINVAL, "{Br}: block size must be an integer >= 1");
    if (p->Bc < 0) return fl_fail(FL_EINVAL, "{Bc}: block size must be an integer >= 1");
    if (p->elem_bytes != 1 && p->elem_bytes != 2 && p->elem_bytes != 4 && p->elem_bytes != 8)
        return fl_fail(FL_EINVAL, "{dtype}: element size must be 1 (fp8), 2, 4 or 8 bytes");
    if (p->max_events < 0) return fl_fail(FL_EINVAL, "{max_events}: must be >= 0 (0 = no limit)");
    if (p->max_macs < 0) return fl_fail(FL_EINVAL, "{max_macs}: must be >= 0 (0 = no limit)");
    const struct { const char *opt; int64_t v; } sizes[] = {
        {"{N}", p->N}, {"{Nk}", p->Nk}, {"{d}", p->d}, {"{M}", p->M}, {"{Br}", p->Br}, {"{Bc}", p->Bc},
        {"{batch}", p->batch}, {"{heads}", p->heads}, {"{kv_heads}", p->kv_heads},
        {"{window}", p->window_left}, {"{window}", p->window_right}, {"{d_v}", p->d_v},
        {"{scale_block}", p->scale_block}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) /* sums of two sizes fit in 64 bits */
        if (sizes[i].v > FL_SIZE_MAX)
            return fl_fail(FL_EINVAL, "%s: %lld is more than the largest size %lld", sizes[i].opt,
                           (long long)sizes[i].v, (long long)FL_SIZE_MAX);
    /* Variants: docs/model.md K1 (masks), H1 (heads), V1 (varlen). */
    if (p->Nk < 0) return fl_fail(FL_EINVAL, "{Nk}: key length must be an integer >= 1 (0 = N)");
    if (!fl_causal_name(p->causal)) return fl_fail(FL_EINVAL, "{causal}: unknown corner (choose none, top-left or bottom-right)");
    if (p->window_left < -1 || p->window_right < -1)
        return fl_fail(FL_EINVAL, "{window}: each side must be >= 0, or -1 for unbounded");
    if (p->batch < 1) return fl_fail(FL_EINVAL, "{batch}: must be an integer >= 1");
    FL_TRY(fl_heads_check(p->heads, p->kv_heads ? p->kv_heads : p->heads));
    if (p->pass != FL_PASS_FWD && p->pass != FL_PASS_BWD && p->pass != FL_PASS_FWD_BWD)
        return fl_fail(FL_EINVAL, "{pass}: choose fwd, bwd or fwd+bwd");
    if (p->cu_seqlens_k && !p->cu_seqlens_q)
        return fl_fail(FL_EINVAL, "{cu_seqlens_k}: needs {cu_seqlens_q} too (varlen describes both)");
    if ((p->cu_seqlens_q != NULL) != (p->cu_seqlens_q_len != 0) || (p->cu_seqlens_k != NULL) != (p->cu_seqlens_k_len != 0))
        return fl_fail(FL_EINVAL, "{cu_seqlens_q}/{cu_seqlens_k}: an array needs its number of entries, and "
                                  "a number of entries its array");
    if (p->cu_seqlens_q) {
        const int64_t Nk = p->Nk ? p->Nk : p->N;
        const int64_t *cq = p->cu_seqlens_q, *ck = p->cu_seqlens_k ? p->cu_seqlens_k : p->cu_seqlens_q;
        FL_TRY(fl_cu_seqlens_check("{cu_seqlens_q}", cq, p->cu_seqlens_q_len, p->batch, p->N));
        FL_TRY(fl_cu_seqlens_check(p->cu_seqlens_k ? "{cu_seqlens_k}" : "{cu_seqlens_q} (as keys)", ck,
                                   p->cu_seqlens_k ? p->cu_seqlens_k_len : p->cu_seqlens_q_len, p->batch, Nk));
        for (int64_t b = 0; b < p->batch; b++)
            if ((cq[b + 1] == cq[b]) != (ck[b + 1] == ck[b]))
                return fl_fail(FL_EINVAL,
                               "{cu_seqlens_q}/{cu_seqlens_k}: sequence %lld has %lld queries and %lld keys; "
                               "a sequence is empty on both sides or on neither",
                               (long long)b, (long long)(cq[b + 1] - cq[b]), (long long)(ck[b + 1] - ck[b]));
    }
    return check_variants(p);
}

void fl_problem_lengths(const fl_problem *p, int64_t *max_nq, int64_t *max_nk)
{
    const int64_t Nk = p->Nk ? p->Nk : p->N;
    if (!p->cu_seqlens_q) {
        *max_nq = p->N;
        *max_nk = Nk;
        return;
    }
    const int64_t *cq = p->cu_seqlens_q, *ck = p->cu_seqlens_k ? p->cu_seqlens_k : cq;
    *max_nq = *max_nk = 1;
    for (int64_t b = 0; b < p->batch; b++) {
        *max_nq = fl_max64(*max_nq, cq[b + 1] - cq[b]);
        *max_nk = fl_max64(*max_nk, ck[b + 1] - ck[b]);
    }
}

int64_t fl_problem_group_ratio(const fl_problem *p)
{
    return p->heads / (p->kv_heads ? p->kv_heads : p->heads);
}

int64_t fl_problem_dv(const fl_problem *p) { return p->d_v ? p->d_v : p->d; }

int fl_problem_fp8(const fl_problem *p) { return p->elem_bytes == 1; }

int fl_problem_out_bytes(const fl_problem *p) { return p->elem_bytes == 1 ? 2 : p->elem_bytes; }

double fl_alibi_slope(int64_t h, int64_t Hq) { return exp2(-8.0 * (double)(h + 1) / (double)Hq); }
