/* attn.h: the kernels' host interface, shared by the ladder files and the harness.
 *
 * The ladder (kernels/ladder/, llm.c dev/cuda style: plainest first, one version a file, each
 * file's header says what changed from the rung before and what it costs) is listed once, in
 * kernels/ladder/ladder.def: versions 1-6 the paper's algorithms literally (standard, flash1,
 * flash2, forward and backward), 7-13 the same schedules on the tensor cores (mma.sync, then
 * Hopper's wgmma, TMA and warp specialization).  `flashlab-gpu list` prints the list.
 *
 * The list of the rungs is read here, by the harness's registry, the fast library, CMake and
 * the scripts.  Every kernel variant (schedule x storage type x head dim x tile sizes) is one
 * entry of its version's table (constexpr); fl_versions() lists the versions, each with its
 * table, what it needs of the GPU (arch.cuh) and its probe.  An entry's launch() runs the whole
 * schedule (all its kernels, in order); m_eff is the model's footprint of its tiles in elements,
 * from the tile traits (traits.cuh), which the harness checks equal to the model's fl_footprint
 * before it compares any count; smem is the most shared memory one of its kernels takes.
 */
#ifndef FL_KERNELS_ATTN_H
#define FL_KERNELS_ATTN_H

#include <string.h>

#include <cuda_runtime.h>

#include "arch.cuh"
#include "common.cuh"
#include "counted.cuh"
#include "launch.cuh"
#include "traits.cuh"

enum fl_dtype { FL_F32 = 0, FL_F16 = 1, FL_BF16 = 2, FL_NDTYPE = 3 };
static const char *const fl_dtype_names[FL_NDTYPE] = {"fp32", "fp16", "bf16"};
static const int fl_dtype_bytes[FL_NDTYPE] = {4, 2, 2};

/* Device buffers and sizes of one attention call (Q, K, V, O are N x d a head, row-major, in the
 * entry's storage type).  Workspaces a schedule does not use may be NULL. */
struct fl_gpu_args {
    int N, d;                /* N: queries (rows of Q, O) */
    int nbh;                 /* batch x heads, contiguous N x d slices (B, H, N, d); 0 = 1.  Only
                              * the fast kernels (versions 7-13) take more than one */
    int Nk;                  /* keys (rows of K, V); 0 = N.  Only the flash2 forwards take Nk != N */
    int causal;              /* 0 none, 1 top-left, 2 bottom-right (the same when Nk = N) */
    int ctas;                /* kernels with a persistent grid: at most this many CTAs; 0 = one an SM
                              * (validation uses few, so that each CTA runs many tiles) */
    const void *Q, *K, *V;
    void *O;
    void *S, *P;             /* standard: N x N scores and probabilities */
    float *l, *m;            /* flash1: running row sums and maxima (N each) */
    float *L;                /* flash2: logsumexp (N) */
    const void *dO;          /* backward: the upstream gradient (N x d, storage type) */
    float *dQ;               /* backward: dQ accumulator (N x d, fp32) */
    void *dQout;             /* versions 9, 11: dQ in the storage type (NULL: the fp32 accumulator
                              * is the output, as versions 4-6) */
    void *dK, *dV;           /* backward: outputs (N x d, storage type) */
    float *Dv;               /* backward: D = rowsum(dO o O) (N) */
    void *dPbuf, *dSbuf;     /* standard backward: N x N dP and dS (storage type) */
    unsigned *flags;         /* versions 2, 4, 5: one word per query block, the wavefront's hand-off */
    int *error;              /* versions 2, 4, 5: set to 1 if a hand-off wait timed out */
    fl_gpu_counters *cnt;    /* NULL: do not count (or a build without FL_COUNTERS) */
    fl_launch_log *log;      /* NULL: do not record the launches */
    cudaStream_t stream;
};

typedef void (*fl_launch_fn)(const fl_gpu_args *a);

/* The bit of HBM tensor t (common.cuh's numbering) in a set of tensors. */
#define FL_BIT(t) (1u << (t))

/* A pass of one of the model's schedules as the harness meets its kernels: the model's name, and
 * the HBM tensors the pass's launch is handed (which the harness allocates, fills or poisons; the
 * harness checks that the model moves no element of a tensor outside this set). */
struct fl_sched_pass {
    const char *algo;   /* "standard", "flash1", "flash2": the model's schedule name (fl_algo_parse) */
    int bwd;            /* 0: forward; 1: backward (reads O and the statistics of a forward run first) */
    unsigned hbm;       /* FL_BIT(FL_T_x) of every tensor the pass reads or writes */
    int nk_ok;          /* its kernels take queries and keys of different numbers (Nk != N) */
};
#define FL_HBM_QKVO (FL_BIT(FL_T_Q) | FL_BIT(FL_T_K) | FL_BIT(FL_T_V) | FL_BIT(FL_T_O))
#define FL_HBM_GRADS (FL_BIT(FL_T_dO) | FL_BIT(FL_T_dQ) | FL_BIT(FL_T_dK) | FL_BIT(FL_T_dV))
/* standard (Algorithms 0 and 3): S, P materialized; the backward reads P (not O) and materializes
 * dP, dS.  A backward's forward run has its own pass (ladder.def's fwd rung). */
inline constexpr fl_sched_pass FL_STANDARD_FWD = {"standard", 0, FL_HBM_QKVO | FL_BIT(FL_T_S) | FL_BIT(FL_T_P), 0};
inline constexpr fl_sched_pass FL_STANDARD_BWD = {
    "standard", 1, FL_BIT(FL_T_Q) | FL_BIT(FL_T_K) | FL_BIT(FL_T_V) | FL_BIT(FL_T_P) | FL_HBM_GRADS | FL_BIT(FL_T_dP) | FL_BIT(FL_T_dS), 0};
/* flash1 (Algorithms 1 and 4): the running O (fp32), l, m in HBM; the wavefront's flags */
inline constexpr fl_sched_pass FL_FLASH1_FWD = {"flash1", 0, FL_HBM_QKVO | FL_BIT(FL_T_l) | FL_BIT(FL_T_m) | FL_BIT(FL_T_FLAGS), 0};
inline constexpr fl_sched_pass FL_FLASH1_BWD = {
    "flash1", 1, FL_HBM_QKVO | FL_BIT(FL_T_l) | FL_BIT(FL_T_m) | FL_HBM_GRADS | FL_BIT(FL_T_FLAGS), 0};
/* flash2 (FlashAttention-2): L = logsumexp; the backward's D = rowsum(dO o O) (and flags: version 4) */
inline constexpr fl_sched_pass FL_FLASH2_FWD = {"flash2", 0, FL_HBM_QKVO | FL_BIT(FL_T_L), 1};
inline constexpr fl_sched_pass FL_FLASH2_BWD = {
    "flash2", 1, FL_HBM_QKVO | FL_BIT(FL_T_L) | FL_HBM_GRADS | FL_BIT(FL_T_D) | FL_BIT(FL_T_FLAGS), 0};

struct fl_kernel_info {
    const fl_sched_pass *s; /* its schedule and pass */
    int version;        /* the rung, kernels/ladder/ladder.def */
    int dtype;          /* fl_dtype of Q, K, V (and S, P) */
    int o_dtype;        /* fl_dtype of O: the storage type, except flash1's fp32 running O */
    int d, Br, Bc;
    long m_eff;         /* on-chip footprint of the tiles, elements (tile traits) */
    int causal_ok;      /* the kernel implements the causal mask */
    fl_launch_fn launch;
    long smem;          /* the most shared memory (dynamic + static) one of its kernels takes, bytes */
    int persistent = 0; /* 1: a persistent grid (each CTA loops over tiles; fl_gpu_args.ctas caps it) */
};

/* What a ladder file's probe kernel reports of the code the driver loaded for this GPU. */
struct fl_probe_result {
    int ran;            /* the probe launched (else: no code for this GPU in the binary) */
    int code_arch;      /* __CUDA_ARCH__ of the loaded code: 750, 800, ..., 900 */
    int feat_90a;       /* compiled with sm_90a's feature set */
    int has;            /* the version's kernels are real here (FL_CODE_HAS(need)), not stubs */
    int binary_version; /* cudaFuncGetAttributes of the probe: the machine code it runs as (90: sm_90) */
    int ptx_version;    /* ... and the PTX it came from (80 when compute_80 PTX was compiled at load) */
    cudaError_t err;    /* why it did not launch */
};

struct fl_version_info {
    int version;
    const char *file;    /* kernels/ladder/vNN_*.cu */
    const char *what;
    int lib;             /* also in libflashlab_kernels.so */
    int fwd;             /* a backward rung: the forward rung run first for its O and statistics */
    int (*needs)(void);  /* FL_NEED_BASE, FL_NEED_SM80, FL_NEED_SM90A: the file's FL_V_NEEDS */
    const fl_kernel_info *(*table)(int *n);
    void (*probe)(fl_probe_result *r);
};

/* The rungs of kernels/ladder/ladder.def, in order (harness/registry.cu). */
const fl_version_info *fl_versions(int *n);

/* Rung v of the ladder, or NULL. */
const fl_version_info *fl_version(int v);

/* Each ladder file's table and probe (defined there by FL_LADDER_FILE). */
#define FL_RUNG(v, stem, lib, fwd, what) \
    const fl_kernel_info *fl_v##v##_kernels(int *n); \
    void fl_v##v##_probe(fl_probe_result *r); \
    int fl_v##v##_needs(void);
#include "../ladder/ladder.def"

/* The version number of a rung's two digits NN (01 -> 1): 1NN - 100, never an octal literal. */
#define FL_RUNG_NUMBER(v) (1##v - 100)

#define FL_CDIV(a, b) (((a) + (b) - 1) / (b))

/* Every entry of a rung's table (constexpr) names the rung's version. */
constexpr bool fl_table_is_version(const fl_kernel_info *t, size_t n, int v)
{
    for (size_t i = 0; i < n; i++)
        if (t[i].version != v) return false;
    return true;
}

/* Defines, in a ladder file, fl_vNN_kernels (the table and its length), fl_vNN_needs (need) and
 * fl_vNN_probe: a one-thread kernel compiled with the file's own code, which writes
 * __CUDA_ARCH__ and the sm_90a feature flag it was compiled with and whether the file's kernels
 * are real there (FL_CODE_HAS(need)). */
#define FL_LADDER_FILE(v, table, need)                                                          \
    static_assert(fl_table_is_version(table, sizeof table / sizeof table[0], FL_RUNG_NUMBER(v)),   \
                  "every entry of the table names the file's version");                          \
    const fl_kernel_info *fl_v##v##_kernels(int *n)                                             \
    {                                                                                           \
        *n = (int)(sizeof table / sizeof table[0]);                                             \
        return table;                                                                           \
    }                                                                                           \
    int fl_v##v##_needs(void) { return need; }                                                  \
    static __global__ void fl_v##v##_probe_kernel(fl_gptr<int, FL_T_FLAGS> out)                 \
    {                                                                                           \
        FlCount c; /* not flushed: the probe is no part of a schedule */                         \
        out.st_vec<int4>(c, 0, make_int4(FL_CODE_ARCH, FL_CODE_FEAT_90A, FL_CODE_HAS(need), 1)); \
    }                                                                                           \
    void fl_v##v##_probe(fl_probe_result *r) { fl_run_probe(fl_v##v##_probe_kernel, r); }

/* NULL when kernel k runs on this GPU, given its version's probe p and need; else why not, one
 * line in buf (n bytes): no code for this GPU in the binary, code compiled for an architecture
 * without the version's instructions, or tiles larger than this GPU's shared memory. */
static inline const char *fl_why_not_here(const fl_kernel_info *k, const fl_probe_result &p, int need, char *buf, size_t n)
{
    if (!p.ran) {
        snprintf(buf, n, "the binary has no code for this GPU (%s)", cudaGetErrorString(p.err));
        return buf;
    }
    if (!p.has) {
        snprintf(buf, n, "needs %s; the code loaded for this GPU is sm_%d%s", fl_need_name(need), p.code_arch / 10,
                 p.feat_90a ? "a" : "");
        return buf;
    }
    const size_t optin = fl_device_smem_optin();
    if ((size_t)k->smem > optin) {
        snprintf(buf, n, "needs %ld bytes of shared memory a CTA; this GPU allows %zu", k->smem, optin);
        return buf;
    }
    return NULL;
}

/* Launches a probe kernel (above) and reads what it wrote. */
static inline void fl_run_probe(void (*kern)(fl_gptr<int, FL_T_FLAGS>), fl_probe_result *r)
{
    int *d = NULL;
    int h[4] = {0, 0, 0, 0};
    memset(r, 0, sizeof *r);
    CUDA_CHECK(cudaMalloc(&d, sizeof h));
    CUDA_CHECK(cudaMemset(d, 0, sizeof h));
    kern<<<1, 1>>>(fl_gptr<int, FL_T_FLAGS>(d));
    r->err = cudaGetLastError(); /* no kernel image for this device: not sticky */
    if (r->err == cudaSuccess) r->err = cudaDeviceSynchronize();
    if (r->err == cudaSuccess) {
        cudaFuncAttributes at;
        CUDA_CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaFuncGetAttributes(&at, kern));
        r->ran = h[3];
        r->code_arch = h[0];
        r->feat_90a = h[1];
        r->has = h[2];
        r->binary_version = at.binaryVersion;
        r->ptx_version = at.ptxVersion;
    }
    CUDA_CHECK(cudaFree(d));
}

#endif
