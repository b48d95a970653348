/* gpu_order.h: a schedule's tile accesses in the order a GPU runs them (docs/l2_model.md §2).
 *
 * The model's schedules (src/schedules/) list their tile loads and stores in program order.
 * The CUDA kernels of versions 1-6 of the ladder (kernels/ladder/v01_standard_fwd.cu to
 * v06_standard_bwd.cu) run the same loads and stores, split over a grid of thread blocks (CTAs).
 * Here each kernel of a schedule is described as its kernel file launches it: its grid (which
 * blockIdx owns which tiles), each CTA's accesses in its program order, and its shared memory per
 * CTA, the grid and shared memory from the kernels' own plain-C layouts (kernel_tiles.h).  The GPU order (rule G1) runs the CTAs in launch order in waves of
 * (SMs x CTAs per SM) resident at once; within a wave the CTAs advance in lock step, one tile
 * access each per step (CTA c's k-th access at step k + skew * c; skew = 0 except flash1's
 * wavefront, where CTA j trails CTA j-1 by one query block, rule G2).
 *
 * Modelled: standard forward (fl_std_scores, fl_std_softmax_row or _3pass, fl_std_pv) and
 * backward (version 6: fl_std_nn, fl_std_nt, fl_std_dsoftmax_row or _2pass,
 * fl_std_nn, fl_std_nn), flash1 forward (fl_flash1_init, fl_flash1_fwd), flash2 forward
 * (fl_flash2_fwd) and backward (fl_flash2_bwd_pre, the wavefront fl_flash_bwd), flash1 backward
 * (fl_flash1_bwd_init, fl_flash_bwd style FA1); one head, no mask.
 * The element totals per tensor equal fl_run's counts for the same problem (tests/unit/analysis/test_l2_order.c).
 */
#ifndef FL_GPU_ORDER_H
#define FL_GPU_ORDER_H
#include <stdint.h>

#include "problem.h"
#include "status.h"

/* The tensors the kernels touch (names as fl_run reports them). */
typedef enum {
    FL_GT_Q, FL_GT_K, FL_GT_V, FL_GT_O, FL_GT_L, FL_GT_S, FL_GT_P, FL_GT_l, FL_GT_m,
    FL_GT_dO, FL_GT_dP, FL_GT_dS, FL_GT_dQ, FL_GT_dK, FL_GT_dV, FL_GT_D, FL_GT_COUNT
} fl_gt;

typedef struct {
    const char *name;
    int64_t rows, cols;
    int elem_bytes; /* as the kernel stores it (flash1's running O, l, m: fp32) */
    uint64_t base;  /* byte address; tensors start on 2 MiB boundaries (cudaMalloc of large buffers) */
    int used;
} fl_gpu_tensor;

/* One tile access: the nr x nc tile at (r0, c0) of a tensor, read (write = 0) or written.
 * A flat chunk of a tensor is r0 = 0, nr = 1, c0 = its first element (c0 may pass cols). */
typedef struct {
    int tensor, write;
    int64_t r0, c0, nr, nc;
} fl_gpu_access;

typedef enum {
    FL_GK_NT,        /* fl_std_scores / fl_std_nt: C = A B^T, a CTA per bo rows of A */
    FL_GK_NN,        /* fl_std_pv / fl_std_nn: O = P V (or P^T V), a CTA per bo rows of O */
    FL_GK_STD_SOFTMAX_ROW, FL_GK_STD_SOFTMAX_3PASS, /* a CTA per row of S */
    FL_GK_STD_DSOFTMAX_ROW, FL_GK_STD_DSOFTMAX_2PASS, /* a CTA per row of P, dP */
    FL_GK_FLASH1_INIT, FL_GK_FLASH1, FL_GK_FLASH2,
    FL_GK_FLASH2_BWD_PRE, FL_GK_FLASH2_BWD, /* version 4 (kernels/common/flash_bwd_loop.cuh, style FA2) */
    FL_GK_FLASH1_BWD_INIT, FL_GK_FLASH1_BWD /* version 5 (the same loop, style FA1) */
} fl_gk_kind;

typedef struct {
    fl_gk_kind kind;
    const char *name;  /* the __global__ function's name */
    int64_t ctas;      /* grid size */
    int64_t smem;      /* shared memory per CTA, bytes (dynamic + static), from kernel_tiles.h */
    int64_t per_sm;    /* CTAs resident per SM (rule G3, or the override) */
    int64_t skew;      /* steps CTA c starts after CTA c-1 within its wave (rule G2) */
    int ta, tb, tc;    /* NT: A, B, C; NN: P, V, O (tensor ids) */
    int64_t bo, bs;    /* NT: rows of A, of B per tile; NN: rows of O, step of the sum */
    int transp;        /* NN: O = P^T V */
} fl_gpu_kernel;

/* The machine's parameters (one set for every configuration; docs/l2_model.md §3). */
typedef struct {
    int64_t sms;             /* 132 on the H200 */
    int64_t smem_per_sm;     /* 228 KiB */
    int64_t smem_reserved;   /* 1 KiB per CTA reserved by the system */
    int64_t threads_per_sm;  /* 2048 */
    int64_t max_ctas_per_sm; /* 32 */
    int64_t threads;         /* per CTA: FL_THREADS of kernel_tiles.h */
    int64_t ctas_per_sm;     /* 0 = from the rule G3; else this for every kernel */
} fl_gpu_machine;

/* The H200's parameters above. */
fl_gpu_machine fl_gpu_machine_h200(void);

#define FL_GPU_MAX_KERNELS 6
typedef struct {
    fl_algo algo;
    int bwd; /* the backward pass's kernels */
    int64_t N, d, Br, Bc, Tr, Tc, M_eff; /* M_eff: the footprint (F0/F1/F2) the model runs with */
    int elem_bytes;
    int64_t sms; /* the machine's SMs (a wave is sms x per_sm CTAs) */
    fl_gpu_tensor t[FL_GT_COUNT];
    int nkernels;
    fl_gpu_kernel k[FL_GPU_MAX_KERNELS];
} fl_gpu_sched;

/* Describes the kernels of algo (standard, flash1, flash2; bwd = 1: the backward alone; one head, no mask) at N, d, blocks Br x Bc, elements of elem_bytes (2 or 4) on machine
 * mc.  FL_EINVAL naming the option when the schedule is not modelled or an input is out of range
 * (N, d, Br, Bc >= 1; a CTA must fit on an SM). */
fl_status fl_gpu_sched_build(fl_algo algo, int bwd, int64_t N, int64_t d, int64_t Br, int64_t Bc, int elem_bytes,
                             const fl_gpu_machine *mc, fl_gpu_sched *s);

/* Number of tile accesses CTA cta of kernel k makes, and its i-th (0 <= i < len) access. */
int64_t fl_gpu_cta_len(const fl_gpu_sched *s, int k, int64_t cta);
void fl_gpu_cta_access(const fl_gpu_sched *s, int k, int64_t cta, int64_t i, fl_gpu_access *a);

/* Calls fn on every access of kernel k in GPU order (rule G1/G2).  Returns the number of
 * accesses visited. */
typedef void (*fl_gpu_visit)(const fl_gpu_sched *s, const fl_gpu_access *a, void *ctx);
int64_t fl_gpu_walk(const fl_gpu_sched *s, int k, fl_gpu_visit fn, void *ctx);
#endif
