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

static const fl_dtype dtypes[] = {{"fp16", 2}, {"bf16", 2}, {"fp32", 4}};

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
