/* presets.c: SRAM presets and dtypes (see presets.h; numbers and sources in docs/analysis.md). */
#include <flashlab/presets.h>

#include <string.h>

static const fl_sram_preset presets[] = {
    {"a100", "NVIDIA A100 (Ampere, sm_80)", 192 * 1024, 164 * 1024,
     "NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020): 192 KB combined L1/shared "
     "memory per SM, up to 164 KB shared; FlashAttention paper Sec. 2.1 uses 192KB"},
    {"h100", "NVIDIA H100 (Hopper, sm_90)", 256 * 1024, 227 * 1024,
     "NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022): 256 KB combined L1/shared "
     "memory per SM, up to 228 KB shared (227 KB per block)"},
    {"h200", "NVIDIA H200 (Hopper, sm_90)", 256 * 1024, 227 * 1024,
     "H200 uses the GH100 GPU of the H100 (more HBM3e, same SM): 256 KB L1/shared per SM; "
     "CUDA C++ Programming Guide, compute capability 9.0"},
    {"b200", "NVIDIA B200 (Blackwell, sm_100)", 256 * 1024, 227 * 1024,
     "CUDA C++ Programming Guide, technical specifications per compute capability 10.0: "
     "256 KB unified data cache per SM, up to 228 KB shared (227 KB per block)"},
};

static const fl_dtype dtypes[] = {{"fp16", 2}, {"bf16", 2}, {"fp32", 4}, {"fp8", 1}};

const fl_sram_preset *fl_sram_presets(int *n)
{
    *n = (int)(sizeof presets / sizeof presets[0]);
    return presets;
}

fl_status fl_sram_preset_find(const char *name, const fl_sram_preset **out)
{
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (name && strcmp(name, presets[i].name) == 0) {
            *out = &presets[i];
            return FL_OK;
        }
    return fl_fail(FL_EINVAL, "{sram}: unknown preset '%s' (choose a100, h100, h200 or b200)",
                   name ? name : "");
}

fl_status fl_dtype_parse(const char *name, int *bytes)
{
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (name && strcmp(name, dtypes[i].name) == 0) {
            *bytes = dtypes[i].bytes;
            return FL_OK;
        }
    return fl_fail(FL_EINVAL, "{dtype}: unknown element type '%s' (choose fp16, bf16, fp32 or fp8)",
                   name ? name : "");
}

int64_t fl_preset_M(const fl_sram_preset *p, int elem_bytes)
{
    return p->sram_bytes / elem_bytes;
}

fl_status fl_presets_resolve(const char *sram, const char *dtype, int64_t M_given, int64_t *M,
                             int *elem_bytes)
{
    const fl_sram_preset *p = &presets[0];
    int bytes = 2;
    if (sram) FL_TRY(fl_sram_preset_find(sram, &p));
    if (dtype) FL_TRY(fl_dtype_parse(dtype, &bytes));
    *elem_bytes = bytes;
    *M = M_given ? M_given : fl_preset_M(p, bytes);
    return FL_OK;
}

/* The attention of current models (docs/model.md §14.2; each source says where its numbers come
 * from). */
static const fl_model_preset models[] = {
    {"gpt-oss-120b", "OpenAI gpt-oss-120b: 64 query heads of d = 64 over 8 K/V heads, a learned sink per head",
     64, 8, 64, 0, 1, 0.0, 0, 0,
     "OpenAI, gpt-oss-120b & gpt-oss-20b model card (2025): 64 query heads of dimension 64, 8 key-value "
     "heads (GQA), learned attention sinks per head; alternate layers use a banded window of 128 tokens"},
    {"llama-3-8b", "Meta Llama 3 8B: 32 query heads of d = 128 over 8 K/V heads",
     32, 8, 128, 0, 0, 0.0, 0, 0,
     "Meta, Llama 3 8B config.json: hidden 4096, 32 attention heads, 8 key-value heads (head dimension 128)"},
    {"gemma-2-9b", "Google Gemma 2 9B: 16 query heads of d = 256 over 8 K/V heads, attention logits capped at 50",
     16, 8, 256, 0, 0, 50.0, 0, 0,
     "Gemma 2 report (arXiv 2408.00118), Table 1: 9B has 16 heads, 8 KV heads, head size 256; attention "
     "logit soft-capping 50.0"},
    {"gemma-4-global", "Google Gemma 4 26B-A4B, global layers: 8 query heads of d = 512 over 4 K/V heads",
     8, 4, 512, 0, 0, 0.0, 0, 0,
     "Gemma 4 26B-A4B config as quoted in flash-attention issue #2427 (2026): global_head_dim 512, "
     "num_attention_heads 8, num_key_value_heads 4 (its sliding-window layers use head_dim 256)"},
    {"deepseek-v3", "DeepSeek-V3 MLA in prefill and training: 128 heads, Q/K 192 wide (128 + 64 RoPE), V 128",
     128, 128, 192, 128, 0, 0.0, 0, 0,
     "DeepSeek-V3 technical report (arXiv 2412.19437) and config.json: 128 heads, qk_nope_head_dim 128 + "
     "qk_rope_head_dim 64, v_head_dim 128"},
    {"deepseek-v3-decode", "DeepSeek-V3 MLA in decode (absorbed): 128 query heads over one latent K/V, Q/K 576, V 512",
     128, 1, 576, 512, 0, 0.0, 1, 4096,
     "FlashMLA and flash-attention issue #1471: with the projections absorbed, every query head attends "
     "to one shared latent (kv_lora_rank 512) plus 64 RoPE dimensions: d_qk = 576, d_v = 512; one "
     "query per sequence, a cache of 4096 tokens unless --Nk"},
};

const fl_model_preset *fl_model_presets(int *n)
{
    *n = (int)(sizeof models / sizeof models[0]);
    return models;
}

fl_status fl_model_preset_find(const char *name, const fl_model_preset **out)
{
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++)
        if (name && strcmp(name, models[i].name) == 0) {
            *out = &models[i];
            return FL_OK;
        }
    return fl_fail(FL_EINVAL, "{model}: unknown model '%s' (choose gpt-oss-120b, llama-3-8b, gemma-2-9b, "
                              "gemma-4-global, deepseek-v3 or deepseek-v3-decode)", fl_shown(name ? name : ""));
}

void fl_model_preset_apply(const fl_model_preset *m, fl_problem *p, unsigned keep)
{
    if (!(keep & FL_MODEL_KEEP_HEADS)) p->heads = m->heads, p->kv_heads = m->kv_heads;
    if (!(keep & FL_MODEL_KEEP_D)) p->d = m->d;
    if (!(keep & FL_MODEL_KEEP_DV)) p->d_v = m->d_v;
    if (!(keep & FL_MODEL_KEEP_SINKS)) p->sinks = m->sinks;
    if (!(keep & FL_MODEL_KEEP_SOFTCAP)) p->softcap = m->softcap;
    if (m->N && !(keep & FL_MODEL_KEEP_N)) p->N = m->N;
    if (m->Nk && !(keep & FL_MODEL_KEEP_NK)) p->Nk = m->Nk;
}
