/* presets.h: hardware presets: the SRAM capacity M, the GPU's SMs and L2 for the L2 models, and
 * element types.
 *
 * M is in elements: a preset gives the on-chip memory of one streaming multiprocessor in bytes
 * (the combined L1 / shared-memory array, the figure the FlashAttention paper uses for the A100:
 * "192KB"), and M = bytes / element size.  The numbers and their sources are listed in
 * docs/analysis.md ("Hardware presets"); fl_sram_presets() returns them for printing.
 *
 *   a100  192 KiB/SM   M = 98304 (fp16/bf16), 49152 (fp32)
 *   h100  256 KiB/SM   M = 131072 (fp16/bf16), 65536 (fp32)
 *   h200  256 KiB/SM   (same GH100 SM as the H100)
 *   b200  256 KiB/SM
 *
 *   l40s, rtx4090  128 KiB/SM (Ada)
 *
 * Any preset is overridden by an explicit --M (the CLI applies --M last).  The same rows give the
 * whole GPU for `flashlab l2 --launch --gpu` and scripts/explain_kernels.py (SMs, L2 capacity,
 * the launch model's L2 partitions); only the H200's are checked against hardware.
 */
#ifndef FL_PRESETS_H
#define FL_PRESETS_H

#include <stdint.h>

#include "problem.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const char *name;        /* "a100" */
    const char *gpu;         /* "NVIDIA A100 (Ampere, sm_80)" */
    int64_t sram_bytes;      /* combined L1/shared memory per SM, bytes */
    int64_t max_smem_block;  /* largest shared memory one block may use, bytes (for reference) */
    const char *source;      /* where the numbers come from */
    /* the whole GPU, for the L2 models (launch_model.h) */
    const char *device;      /* the word of the device name the CUDA runtime and ncu report ("H200") */
    int64_t sms;             /* streaming multiprocessors */
    int64_t l2_mib;          /* L2 capacity, MiB (cudaDeviceProp::l2CacheSize) */
    int l2_parts;            /* L2 partitions of the launch model (l2_parts.h): 2 or 1 (none published) */
    int checked;             /* 1: sms, l2_mib and l2_parts measured on this GPU; 0: published figures */
    const char *gpu_source;  /* where those come from */
} fl_sram_preset;

typedef struct {
    const char *name; /* "fp16" */
    int bytes;        /* 2 */
} fl_dtype;

/* All presets in listing order; *n receives their number. */
const fl_sram_preset *fl_sram_presets(int *n);

/* The preset called name; FL_EINVAL naming --sram and the choices if unknown. */
fl_status fl_sram_preset_find(const char *name, const fl_sram_preset **out);

/* The same lookup for the whole GPU: FL_EINVAL naming --gpu and the choices if unknown. */
fl_status fl_gpu_preset_find(const char *name, const fl_sram_preset **out);

/* Parses fp16, bf16, fp32 or fp8 (e4m3: docs/model.md rule Q8) into bytes per element; FL_EINVAL
 * naming --dtype otherwise. */
fl_status fl_dtype_parse(const char *name, int *bytes);

/* M in elements for a preset at elem_bytes per element: sram_bytes / elem_bytes. */
int64_t fl_preset_M(const fl_sram_preset *p, int elem_bytes);

/* The attention of a current model (docs/model.md §14.2): its query and K/V heads, head
 * dimensions, sinks and softcap; decode presets also set one query per sequence (N) and a cache
 * length (Nk).  0 in d_v: d_v = d; 0 in N, Nk: the problem's own. */
typedef struct {
    const char *name;   /* "gemma-2-9b" */
    const char *what;   /* one line */
    int64_t heads, kv_heads, d, d_v;
    int sinks;
    double softcap;
    int64_t N, Nk;
    const char *source; /* where the numbers come from */
} fl_model_preset;

/* All model presets in listing order; *n receives their number. */
const fl_model_preset *fl_model_presets(int *n);

/* The model preset called name; FL_EINVAL naming {model} and the choices if unknown. */
fl_status fl_model_preset_find(const char *name, const fl_model_preset **out);

/* The fields of a problem a caller gave itself, which a preset leaves alone. */
enum {
    FL_MODEL_KEEP_HEADS = 1u << 0, FL_MODEL_KEEP_D = 1u << 1, FL_MODEL_KEEP_DV = 1u << 2,
    FL_MODEL_KEEP_SINKS = 1u << 3, FL_MODEL_KEEP_SOFTCAP = 1u << 4, FL_MODEL_KEEP_N = 1u << 5,
    FL_MODEL_KEEP_NK = 1u << 6
};

/* Sets p's heads and kv_heads, d, d_v, sinks, softcap (and N, Nk for a decode preset) from m,
 * except the fields named in keep (FL_MODEL_KEEP_*). */
void fl_model_preset_apply(const fl_model_preset *m, fl_problem *p, unsigned keep);

/* What --sram, --dtype and --M together mean (sram, dtype may be NULL = not given; M_given 0 =
 * not given): *elem_bytes from dtype (fp16 when absent); *M = M_given when nonzero, else the
 * preset's bytes (a100 when absent) / *elem_bytes.  FL_EINVAL naming the option if a name is
 * unknown. */
fl_status fl_presets_resolve(const char *sram, const char *dtype, int64_t M_given, int64_t *M,
                             int *elem_bytes);

#ifdef __cplusplus
}
#endif

#endif
