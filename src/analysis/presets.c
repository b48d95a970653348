/* presets.c: SRAM presets and dtypes (see presets.h; numbers and sources in docs/analysis.md). */
#include <flashlab/presets.h>

#include <stdio.h>
#include <string.h>

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

static const fl_dtype dtypes[] = {{"fp16", 2}, {"bf16", 2}, {"fp32", 4}};

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
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (name && strcmp(name, presets[i].name) == 0) {
            *out = &presets[i];
            return FL_OK;
        }
    char choices[160];
    return fl_fail(FL_EINVAL, "{sram}: unknown preset '%s' (choose %s)", name ? name : "", fl_preset_names(choices, sizeof choices));
}

fl_status fl_gpu_preset_find(const char *name, const fl_sram_preset **out)
{
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (name && strcmp(name, presets[i].name) == 0) {
            *out = &presets[i];
            return FL_OK;
        }
    char choices[160];
    return fl_fail(FL_EINVAL, "{gpu}: unknown GPU '%s' (choose %s)", name ? name : "", fl_preset_names(choices, sizeof choices));
}

fl_status fl_dtype_parse(const char *name, int *bytes)
{
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (name && strcmp(name, dtypes[i].name) == 0) {
            *bytes = dtypes[i].bytes;
            return FL_OK;
        }
    return fl_fail(FL_EINVAL, "{dtype}: unknown element type '%s' (choose fp16, bf16 or fp32)",
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
