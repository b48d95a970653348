/* presets.c: SRAM presets and dtypes (see presets.h; numbers and sources in docs/analysis.md). */
#include <flashlab/presets.h>

#include <stddef.h>
#include <stdio.h>

#include "named.h"

_Static_assert(offsetof(fl_sram_preset, name) == 0 && offsetof(fl_dtype, name) == 0 &&
                   offsetof(fl_model_preset, name) == 0,
               "FL_NAMED reads a catalogue entry's name as its first member");

/* The GPU's figures (after the SRAM source): the device word, SMs, L2 in MiB, the launch model's
 * L2 partitions, whether they were checked against the GPU, and where they come from
 * (docs/analysis.md §2, docs/third_party.md §3). */
static const fl_sram_preset presets[] = {
    {"a100", "NVIDIA A100 (Ampere, sm_80)", 192 * 1024, 164 * 1024,
     "NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020): 192 KB combined L1/shared "
     "memory per SM, up to 164 KB shared; FlashAttention paper Sec. 2.1 uses 192KB",
     "A100", 108, 40, 2, 0,
     "A100 whitepaper (2020): 108 SMs, 40 MB L2 in two partitions, each serving the SMs directly "
     "connected to it; not measured here"},
    {"h100", "NVIDIA H100 (Hopper, sm_90)", 256 * 1024, 227 * 1024,
     "NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022): 256 KB combined L1/shared "
     "memory per SM, up to 228 KB shared (227 KB per block)",
     "H100", 132, 50, 2, 0,
     "H100 whitepaper (2022): SXM5, 132 SMs, 50 MB L2; two partitions as the H200's (the same GH100 "
     "die); not measured here (an H100 PCIe has 114 SMs: ncu's launch__sm_count says which)"},
    {"h200", "NVIDIA H200 (Hopper, sm_90)", 256 * 1024, 227 * 1024,
     "H200 uses the GH100 GPU of the H100 (more HBM3e, same SM): 256 KB L1/shared per SM; "
     "CUDA C++ Programming Guide, compute capability 9.0",
     "H200", 132, 60, 2, 1,
     "measured: cudaDeviceProp (132 SMs, l2CacheSize 60 MiB) and bench/l2_probe.cu's two partitions "
     "(docs/l2_model.md section 6)"},
    {"l40s", "NVIDIA L40S (Ada, sm_89)", 128 * 1024, 99 * 1024,
     "CUDA C++ Programming Guide, compute capability 8.9: 128 KB unified data cache per SM, up to "
     "100 KB shared (99 KB per block)",
     "L40S", 142, 96, 1, 0,
     "L40S product brief: 142 SMs, 96 MB L2; no partitioning published (one LRU); not measured here"},
    {"rtx4090", "NVIDIA GeForce RTX 4090 (Ada, sm_89)", 128 * 1024, 99 * 1024,
     "CUDA C++ Programming Guide, compute capability 8.9: 128 KB unified data cache per SM, up to "
     "100 KB shared (99 KB per block)",
     "RTX 4090", 128, 72, 1, 0,
     "Ada GPU Architecture whitepaper (2022): RTX 4090, 128 SMs, 72 MB L2; no partitioning published "
     "(one LRU); not measured here"},
    {"b200", "NVIDIA B200 (Blackwell, sm_100)", 256 * 1024, 227 * 1024,
     "CUDA C++ Programming Guide, technical specifications per compute capability 10.0: "
     "256 KB unified data cache per SM, up to 228 KB shared (227 KB per block)",
     "B200", 148, 126, 2, 0,
     "published figures: 148 SMs (74 per die), 126 MB L2 (public sources differ); one partition per "
     "die assumed; not measured here"},
};

static const fl_dtype dtypes[] = {{"fp16", 2}, {"bf16", 2}, {"fp32", 4}, {"fp8", 1}};

const fl_sram_preset *fl_sram_presets(int *n)
{
    *n = (int)(sizeof presets / sizeof presets[0]);
    return presets;
}

/* "a100, h100, ... or b200": the presets' names for a message, in buf. */
static const char *fl_preset_names(char *buf, size_t cap)
{
    const size_t n = sizeof presets / sizeof presets[0];
    size_t at = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n && at < cap; i++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%s", i == 0 ? "" : i + 1 == n ? " or " : ", ", presets[i].name);
    return buf;
}

fl_status fl_sram_preset_find(const char *name, const fl_sram_preset **out)
{
    const fl_sram_preset *p = FL_NAMED(presets, name);
    if (p) return *out = p, FL_OK;
    char choices[160];
    return fl_fail(FL_EINVAL, "{sram}: unknown preset '%s' (choose %s)", name ? name : "", fl_preset_names(choices, sizeof choices));
}

fl_status fl_gpu_preset_find(const char *name, const fl_sram_preset **out)
{
    const fl_sram_preset *p = FL_NAMED(presets, name);
    if (p) return *out = p, FL_OK;
    char choices[160];
    return fl_fail(FL_EINVAL, "{gpu}: unknown GPU '%s' (choose %s)", name ? name : "", fl_preset_names(choices, sizeof choices));
}

fl_status fl_dtype_parse(const char *name, int *bytes)
{
    const fl_dtype *t = FL_NAMED(dtypes, name);
    if (t) return *bytes = t->bytes, FL_OK;
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
    const fl_model_preset *m = FL_NAMED(models, name);
    if (m) return *out = m, FL_OK;
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
