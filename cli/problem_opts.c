/* problem_opts.c: one parser for the options that describe a problem (see problem_opts.h). */
#include "problem_opts.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include <flashlab/presets.h>
#include <flashlab/schedule.h>

const char fl_popts_usage[] =
    "  --N N         query sequence length (packed tokens with --cu-seqlens-q) [1024]\n"
    "  --d D         head dimension of Q and K (also --d-qk)          [64]\n"
    "  --d-v D       head dimension of V and O (MLA: 576/512)         [d]\n"
    "  --M M         SRAM capacity in elements (overrides --sram)     [98304 = A100 192 KiB, fp16]\n"
    "  --sram GPU    M from a preset: a100, h100, h200, b200          [a100]\n"
    "  --dtype T     fp16, bf16, fp32 or fp8 (e4m3 Q, K, V with scale factors; O bf16):\n"
    "                bytes per element; M from --sram              [fp16]\n"
    "  --scale-block B  fp8: rows per scale factor of Q, K, V [0 = one per sequence and head]\n"
    "  --model NAME  heads, head dims, sinks, softcap of a current model: gpt-oss-120b,\n"
    "                llama-3-8b, gemma-2-9b, gemma-4-global, deepseek-v3, deepseek-v3-decode\n"
    "                (options given explicitly win)\n"
    "  --sinks       a learnable sink logit per query head joins each row's softmax\n"
    "  --softcap C   scores become C tanh(s / C) (Gemma 2: 50)         [0 = none]\n"
    "  --alibi       ALiBi bias -m_h |i + Nk - Nq - j|, m_h = 2^(-8(h+1)/heads)\n"
    "  --dropout P   drop entries of P with probability P (Philox from --seed) [0]\n"
    "  --deterministic  the backward's dQ in a fixed order (per-key-block partials, not atomics)\n"
    "  --Br B        query block rows (default: the schedule's rule, docs/model.md §3)\n"
    "  --Bc B        key/value block rows (default: the schedule's rule)\n"
    "  --seed S      seed of the random inputs (run)                  [1]\n"
    "  --pass P      fwd, bwd (backward alone: its inputs are in HBM) or fwd+bwd [fwd]\n"
    "  --Nk N        key length (packed keys with --cu-seqlens-k)     [N]\n"
    "  --causal C    none, top-left (SDPA is_causal) or bottom-right (FlashAttention >= 2.1) [none]\n"
    "  --window L,R  FA2 local window: query i sees keys [i+Nk-Nq-L, i+Nk-Nq+R]; -1 = unbounded [-1,-1]\n"
    "  --batch B     sequences                                        [1]\n"
    "  --heads H     query heads                                      [1]\n"
    "  --kv-heads H  key/value heads, dividing --heads (1 = MQA)      [heads]\n"
    "  --cu-seqlens-q LIST  varlen: batch+1 offsets 0,...,N of the packed queries\n"
    "  --cu-seqlens-k LIST  varlen: the same for the keys (default: --cu-seqlens-q)\n"
    "  --max-events E  refuse more tile events than E in all (0: no limit; 3e9: about 25 s) [3e9]\n"
    "  decode:       --splits S (split-KV)  --page-size P (paged cache; default contiguous)\n"
    "                --pool-pages K  --page-seed S (0 = identity table)  --block-table 5,2,7\n"
    "                --pad X (run: the last page's rows beyond Nk; nan poisons them)\n"
    "  blocksparse:  --density s in (0, 1]  --mask-seed S\n"
    "  memeff:       --Br/--Bc are Rabe-Staats' query and key chunk sizes\n"
    "  softmax-*:    softmax of each row of an N x Nk matrix\n";

const char fl_macs_usage[] =
    "  --max-macs X  refuse compute runs of more than X multiply-adds, schedule and reference\n"
    "                together (0: no limit)                           [1e10]\n";

void fl_popts_init(fl_popts *o)
{
    memset(o, 0, sizeof *o);
    o->p = fl_problem_default();
    o->kv = fl_kv_cache_default();
    o->bm = fl_block_sparsity_default();
}

/* A decimal double (nan and inf allowed): strtod over the whole string, which must start with a
 * sign, a digit, a point or a letter of nan/inf (no leading blank) and hold no hexadecimal. */
fl_status fl_popts_parse_double(const char *opt, const char *v, double *out)
{
    char *end;
    const char c = *v == '+' || *v == '-' ? v[1] : v[0];
    if (!*v || !(isdigit((unsigned char)c) || c == '.' || c == 'n' || c == 'N' || c == 'i' || c == 'I') ||
        strpbrk(v, "xX"))
        return fl_fail(FL_EINVAL, "%s: '%s' is not a number", opt, fl_shown(v));
    *out = strtod(v, &end);
    if (*end) return fl_fail(FL_EINVAL, "%s: '%s' is not a number", opt, fl_shown(v));
    return FL_OK;
}

/* A preset and an element type are checked where they are given, so that a bad value is refused
 * even when a later one overrides it (docs/errors.md: an option given twice takes its last value). */
static fl_status check_sram(const char *v)
{
    const fl_sram_preset *pre;
    return fl_sram_preset_find(v, &pre);
}

static fl_status check_dtype(const char *v)
{
    int bytes;
    return fl_dtype_parse(v, &bytes);
}

static fl_status check_model(const char *v)
{
    const fl_model_preset *m;
    return fl_model_preset_find(v, &m);
}

int fl_popts_flag(fl_popts *o, const char *name, const char *iv, fl_status *s)
{
    fl_problem *p = &o->p;
    if (strcmp(name, "--sinks") == 0) p->sinks = 1, o->keep |= FL_MODEL_KEEP_SINKS;
    else if (strcmp(name, "--alibi") == 0) p->alibi = 1;
    else if (strcmp(name, "--deterministic") == 0) p->deterministic = 1;
    else return 0;
    *s = fl_args_flag(name, iv);
    return 1;
}

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

int fl_popts_take(fl_popts *o, const char *name, const char *v, fl_status *s)
{
    const int64_t big = INT64_MAX / 4;
    fl_problem *p = &o->p;
    *s = FL_OK;
    if (strcmp(name, "--N") == 0) *s = fl_parse_i64(name, v, 1, big, &p->N), o->set_N = 1, o->keep |= FL_MODEL_KEEP_N;
    else if (strcmp(name, "--d") == 0 || strcmp(name, "--d-qk") == 0)
        *s = fl_parse_i64(name, v, 1, big, &p->d), o->keep |= FL_MODEL_KEEP_D;
    else if (strcmp(name, "--d-v") == 0) *s = fl_parse_i64(name, v, 1, big, &p->d_v), o->keep |= FL_MODEL_KEEP_DV;
    else if (strcmp(name, "--softcap") == 0) *s = fl_popts_parse_double(name, v, &p->softcap), o->keep |= FL_MODEL_KEEP_SOFTCAP;
    else if (strcmp(name, "--dropout") == 0) *s = fl_popts_parse_double(name, v, &p->dropout);
    else if (strcmp(name, "--scale-block") == 0) *s = fl_parse_i64(name, v, 1, big, &p->scale_block);
    else if (strcmp(name, "--model") == 0) *s = check_model(v), o->model = v;
    else if (strcmp(name, "--M") == 0) *s = fl_parse_i64(name, v, 1, big, &o->M_given);
    else if (strcmp(name, "--sram") == 0) *s = check_sram(v), o->sram = v;
    else if (strcmp(name, "--dtype") == 0) *s = check_dtype(v), o->dtype = v;
    else if (strcmp(name, "--Br") == 0) *s = fl_parse_i64(name, v, 1, big, &p->Br);
    else if (strcmp(name, "--Bc") == 0) *s = fl_parse_i64(name, v, 1, big, &p->Bc);
    else if (strcmp(name, "--seed") == 0) *s = fl_parse_u64(name, v, &p->seed);
    else if (strcmp(name, "--pass") == 0) *s = parse_pass(v, &p->pass);
    else if (strcmp(name, "--Nk") == 0) *s = fl_parse_i64(name, v, 1, big, &p->Nk), o->keep |= FL_MODEL_KEEP_NK;
    else if (strcmp(name, "--causal") == 0) *s = fl_causal_parse(v, &p->causal);
    else if (strcmp(name, "--window") == 0) *s = parse_window(v, p);
    else if (strcmp(name, "--batch") == 0) *s = fl_parse_i64(name, v, 1, big, &p->batch), o->set_batch = 1;
    else if (strcmp(name, "--heads") == 0) *s = fl_parse_i64(name, v, 1, big, &p->heads), o->keep |= FL_MODEL_KEEP_HEADS;
    else if (strcmp(name, "--kv-heads") == 0) *s = fl_parse_i64(name, v, 1, big, &p->kv_heads), o->keep |= FL_MODEL_KEEP_HEADS;
    else if (strcmp(name, "--cu-seqlens-q") == 0)
        *s = fl_parse_i64_list(name, v, 0, big, o->cuq, FL_CLI_MAX_BATCH + 1, &o->ncuq);
    else if (strcmp(name, "--cu-seqlens-k") == 0)
        *s = fl_parse_i64_list(name, v, 0, big, o->cuk, FL_CLI_MAX_BATCH + 1, &o->ncuk);
    else if (strcmp(name, "--max-events") == 0) *s = fl_parse_limit(name, v, 0, INT64_MAX, &p->max_events);
    /* decode, blocksparse (docs/model.md §Decode, §Block-sparse) */
    /* a cache option, even at its default value, asks for a cache (decode's), a mask option for a
     * block mask (blocksparse's): p points at the extension then */
    else if (strcmp(name, "--splits") == 0) *s = fl_parse_i64(name, v, 1, big, &o->kv.splits), p->kv_cache = &o->kv;
    else if (strcmp(name, "--page-size") == 0) *s = fl_parse_i64(name, v, 1, big, &o->kv.page_size), p->kv_cache = &o->kv;
    else if (strcmp(name, "--pool-pages") == 0) *s = fl_parse_i64(name, v, 1, big, &o->kv.pool_pages), p->kv_cache = &o->kv;
    else if (strcmp(name, "--page-seed") == 0) *s = fl_parse_u64(name, v, &o->kv.page_seed), p->kv_cache = &o->kv;
    else if (strcmp(name, "--block-table") == 0) {
        *s = fl_parse_i64_list(name, v, -big, big, o->table, FL_CLI_MAX_BATCH, &o->kv.block_table_len);
        o->kv.block_table = o->table;
        p->kv_cache = &o->kv;
    }
    else if (strcmp(name, "--pad") == 0) *s = fl_popts_parse_double(name, v, &o->kv.pad_value), p->kv_cache = &o->kv;
    else if (strcmp(name, "--density") == 0) *s = fl_popts_parse_double(name, v, &o->bm.density), p->block_mask = &o->bm;
    else if (strcmp(name, "--mask-seed") == 0) *s = fl_parse_u64(name, v, &o->bm.mask_seed), p->block_mask = &o->bm;
    else return 0;
    return 1;
}

/* Varlen: the number of entries sets --batch (or must be --batch + 1), the last entry sets
 * --N / --Nk (or must equal them): docs/model.md rule V1. */
static fl_status finish_varlen(fl_popts *o)
{
    if (o->ncuk && !o->ncuq) return fl_fail(FL_EINVAL, "--cu-seqlens-k: needs --cu-seqlens-q too");
    if (!o->ncuq) return FL_OK;
    if (o->ncuk && o->ncuk != o->ncuq)
        return fl_fail(FL_EINVAL, "--cu-seqlens-k: needs as many entries as --cu-seqlens-q (batch + 1 = %lld), got %lld",
                       (long long)o->ncuq, (long long)o->ncuk);
    if (o->set_batch && o->ncuq != o->p.batch + 1)
        return fl_fail(FL_EINVAL, "--cu-seqlens-q: needs batch + 1 = %lld entries, got %lld",
                       (long long)(o->p.batch + 1), (long long)o->ncuq);
    if (o->ncuq < 2) return fl_fail(FL_EINVAL, "--cu-seqlens-q: needs batch + 1 >= 2 entries");
    o->p.batch = o->ncuq - 1;
    if (!o->set_N) o->p.N = o->cuq[o->ncuq - 1];
    if (o->ncuk && !o->p.Nk) o->p.Nk = o->cuk[o->ncuk - 1];
    o->p.cu_seqlens_q = o->cuq;
    o->p.cu_seqlens_q_len = o->ncuq;
    o->p.cu_seqlens_k = o->ncuk ? o->cuk : NULL;
    o->p.cu_seqlens_k_len = o->ncuk;
    return FL_OK;
}

fl_status fl_popts_finish(fl_popts *o)
{
    if (o->model) { /* the model's fields, except those given explicitly */
        const fl_model_preset *m;
        FL_TRY(fl_model_preset_find(o->model, &m));
        fl_model_preset_apply(m, &o->p, o->keep);
    }
    FL_TRY(finish_varlen(o));
    FL_TRY(fl_presets_resolve(o->sram, o->dtype, o->M_given, &o->p.M, &o->p.elem_bytes)); /* presets.h */
    return fl_problem_check(&o->p);
}
