/* footprint.h: the numbers the model and the CUDA kernels must agree on, defined once.
 *
 * Plain C (no library, no allocation): included by the model (src/, through fl_footprint_pass)
 * and by the kernels (kernels/, in constexpr tile traits and the harness).  Every number here
 * is a formula of docs/model.md, cited at its line.
 *
 * 1. SRAM footprints of the tiled schedules' buffers (docs/model.md §3, eqs. F0, F1, F1b, F2,
 *    F2g, F2b), as the coefficients of one bilinear form
 *
 *        footprint(R, C, D) = rd*R*D + cd*C*D + rc*R*C + r*R
 *
 *    where R is the rows of a query tile (Br, or G*Br for a group of G stacked query heads),
 *    C the rows of a key tile (Bc) and D the columns of a tile (d, or standard's chunk Bd).
 *    fl_fp_eval() evaluates it without overflow checks (kernels: compile-time sizes);
 *    the model evaluates the same coefficients with checked arithmetic.
 *
 * 2. Bytes per element of each HBM tensor (docs/model.md rule R8): the storage type for the
 *    inputs, outputs and materialized matrices; 4 bytes (fp32) for the per-row statistics and
 *    for the accumulators that cross HBM: flash1's running O (read and rewritten after every
 *    key block) and every backward's dQ (FlashAttention's dq_accum).
 */
#ifndef FLASHLAB_FOOTPRINT_H
#define FLASHLAB_FOOTPRINT_H

#include <stdint.h>

#ifdef __CUDACC__
#define FL_FP_FN __host__ __device__ static inline constexpr
#elif defined(__cplusplus)
#define FL_FP_FN static inline constexpr
#else
#define FL_FP_FN static inline
#endif

typedef struct {
    int64_t rd, cd, rc, r;
} fl_fp_coef;

/* docs/model.md (F0): standard, both passes: Br*Bd + Bc*Bd + Br*Bc (the products' tiles) */
#define FL_FP_STANDARD {1, 1, 1, 0}
/* docs/model.md (F1): flash1 forward: 2*Br*d + 2*Bc*d + Br*Bc + 6*Br */
#define FL_FP_FLASH1_FWD {2, 2, 1, 6}
/* docs/model.md (F1b): flash1 backward: 4*Br*d + 4*Bc*d + 2*Br*Bc + 3*Br */
#define FL_FP_FLASH1_BWD {4, 4, 2, 3}
/* docs/model.md (F2), (F2g): flash2 forward, R = G*Br: 2*R*d + 2*Bc*d + R*Bc + 2*R */
#define FL_FP_FLASH2_FWD {2, 2, 1, 2}
/* docs/model.md (F2b): flash2 backward, R = G*Br: 3*R*d + 4*Bc*d + 2*R*Bc + 2*R */
#define FL_FP_FLASH2_BWD {3, 4, 2, 2}

/* The footprint of coefficients k at (R, C, D); no overflow check (callers with run-time sizes
 * that may be large use the model's checked fl_footprint_pass). */
FL_FP_FN int64_t fl_fp_eval(fl_fp_coef k, int64_t R, int64_t C, int64_t D)
{
    return k.rd * R * D + k.cd * C * D + k.rc * R * C + k.r * R;
}

/* Bytes per element of the tensors whose size is not the storage type's (rule R8). */
#define FL_STAT_BYTES 4  /* l, m, L (logsumexp), D = rowsum(dO o O): fp32 */
#define FL_ACCUM_BYTES 4 /* flash1's running O and every backward's dQ: fp32 accumulators */

#endif
