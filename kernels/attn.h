/* attn.h: the kernels' host interface, shared by the launch files and the harness.
 *
 * Every kernel variant (schedule x storage type x head dim x tile sizes) is one entry of a
 * table: fl_gpu_kernels() returns all of them.  An entry's launch() runs the whole schedule
 * (all its kernels, in order) on the arguments; m_eff is the on-chip footprint of its tiles in
 * elements, computed from the buffers the kernel holds, which the harness checks equal to the
 * model's fl_footprint (docs/model.md eqs. F0, F1, F2) before it compares any count.
 *
 * Versions (llm.c dev/cuda style, plainest first; each validated by `flashlab-gpu validate`):
 *   1 standard  attn_standard.cu  S = QK^T to HBM, softmax into P in HBM, O = PV (Algorithm 0)
 *   2 flash1    attn_flash1.cu    Algorithm 1 literally: O, l, m updated in HBM every step
 *   3 flash2    attn_flash2.cu    FlashAttention-2 forward: query-owned, O and L written once
 *   4 flash2    attn_flash2_bwd.cu  FlashAttention-2 backward (Algorithm 2): recomputation, dQ
 *                                 accumulated in HBM, dK, dV written once
 *   5 flash1    attn_flash2_bwd.cu  FlashAttention backward (Algorithm 4): the same loop from
 *                                 O, l, m; dQ, dK, dV zeroed in HBM first
 *   6 standard  attn_standard_bwd.cu  standard backward (Algorithm 3) from the saved P: dP, dS
 *                                 materialized in HBM
 * The fast versions (issue 7: the same schedules on the tensor cores, kernels/mma.cuh):
 *   7 flash2    attn_fast_fwd.cu  version 3's schedule with mma.sync, cp.async prefetch, heads
 *   8 standard  attn_fast_std.cu  version 1's schedule (S, P materialized) with mma.sync
 *   9 flash2    attn_fast_bwd.cu  version 4's schedule (FlashAttention-2 backward) with mma.sync
 *  10 flash2    attn_fast_wgmma.cu  version 7 with Hopper's wgmma (sm_90a), V_j transposed on chip
 *  11 standard  attn_fast_std_bwd.cu  version 6's schedule (Algorithm 3: dP, dS materialized) with
 *                                 mma.sync (kernels/tc_gemm.cuh, shared with version 8)
 */
#ifndef FL_KERNELS_ATTN_H
#define FL_KERNELS_ATTN_H

#include <cuda_runtime.h>

#include "common.cuh"

enum fl_dtype { FL_F32 = 0, FL_F16 = 1, FL_BF16 = 2, FL_NDTYPE = 3 };
static const char *const fl_dtype_names[FL_NDTYPE] = {"fp32", "fp16", "bf16"};
static const int fl_dtype_bytes[FL_NDTYPE] = {4, 2, 2};

/* Device buffers and sizes of one attention call (one head: Q, K, V, O are N x d, row-major,
 * in the entry's storage type).  Workspaces a schedule does not use may be NULL. */
struct fl_gpu_args {
    int N, d;                /* N: queries (rows of Q, O) */
    int nbh;                 /* batch x heads, contiguous N x d slices (B, H, N, d); 0 = 1.  Only
                              * the fast kernels (versions 7-9) take more than one */
    int Nk;                  /* keys (rows of K, V); 0 = N.  Only flash2 forward takes Nk != N */
    int causal;              /* 0 none, 1 top-left, 2 bottom-right (the same when Nk = N) */
    const void *Q, *K, *V;
    void *O;
    void *S, *P;             /* standard: N x N scores and probabilities */
    float *l, *m;            /* flash1: running row sums and maxima (N each) */
    float *L;                /* flash2: logsumexp (N) */
    const void *dO;          /* backward: the upstream gradient (N x d, storage type) */
    float *dQ;               /* backward: dQ accumulator (N x d, fp32) */
    void *dQout;             /* version 9: dQ in the storage type (NULL: the fp32 accumulator is
                              * the output, as versions 4-6) */
    void *dK, *dV;           /* backward: outputs (N x d, storage type) */
    float *Dv;               /* backward: D = rowsum(dO o O) (N) */
    void *dPbuf, *dSbuf;     /* standard backward: N x N dP and dS (storage type) */
    unsigned *flags;         /* flash1, flash2 bwd: one word per query block, the wavefront's hand-off */
    int *error;              /* flash1: set to 1 if a hand-off wait timed out */
    fl_gpu_counters *cnt;    /* NULL: do not count (or a build without FL_COUNTERS) */
    cudaStream_t stream;
};

typedef void (*fl_launch_fn)(const fl_gpu_args *a);

struct fl_kernel_info {
    const char *algo;   /* "standard", "flash1", "flash2": the model's schedule name */
    int version;        /* 1, 2, 3 as above */
    int dtype;          /* fl_dtype of Q, K, V (and S, P) */
    int o_dtype;        /* fl_dtype of O: the storage type, except flash1's fp32 running O */
    int d, Br, Bc;
    long m_eff;         /* on-chip footprint of the tiles, elements */
    int causal_ok;      /* the kernel implements the causal mask */
    fl_launch_fn launch;
    int bwd;            /* 0: forward; 1: backward (reads O, L of a forward run first) */
};

/* Each launch file's table (defined there) and the concatenation of all of them. */
const fl_kernel_info *fl_standard_kernels(int *n);
const fl_kernel_info *fl_flash1_kernels(int *n);
const fl_kernel_info *fl_flash2_kernels(int *n);
const fl_kernel_info *fl_flash2_bwd_kernels(int *n);
const fl_kernel_info *fl_standard_bwd_kernels(int *n);
const fl_kernel_info *fl_fast_fwd_kernels(int *n);  /* version 7: tensor-core flash2 forward */
const fl_kernel_info *fl_fast_std_kernels(int *n);  /* version 8: tensor-core standard forward */
const fl_kernel_info *fl_fast_bwd_kernels(int *n);  /* version 9: tensor-core flash2 backward */
const fl_kernel_info *fl_wg_fwd_kernels(int *n);    /* version 10: wgmma flash2 forward (sm_90a) */
const fl_kernel_info *fl_fast_std_bwd_kernels(int *n); /* version 11: tensor-core standard backward */

/* Defines fn(int *n), which returns a launch file's table and its length. */
#define FL_TABLE_GETTER(fn, table)                           \
    const fl_kernel_info *fn(int *n)                         \
    {                                                        \
        *n = (int)(sizeof table / sizeof table[0]);          \
        return table;                                        \
    }

/* Tiles every kernel family instantiates: the fp16 build sweeps four (Br, Bc); fp32 (the tight
 * comparison) and bf16 take two of them, to keep the build short (CI compiles on 2 cores). */
#define FL_CDIV(a, b) (((a) + (b) - 1) / (b))

#endif
