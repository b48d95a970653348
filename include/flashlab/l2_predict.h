/* l2_predict.h: a schedule's kernels run in GPU order (gpu_order.h) through an L2 (l2.h): the
 * DRAM bytes they read, beside the SM<->L2 bytes (docs/l2_model.md §3). */
#ifndef FL_L2_PREDICT_H
#define FL_L2_PREDICT_H
#include <stdint.h>

#include "gpu_order.h"
#include "status.h"

typedef struct {
    int64_t sm_read_B, sm_write_B; /* SM<->L2: sectors touched x sector bytes (rule L1) */
    int64_t dram_read_B;           /* read misses x sector bytes */
    int64_t writeback_B;           /* dirty sectors evicted during the kernel x sector bytes */
    int64_t reads[FL_GT_COUNT], writes[FL_GT_COUNT]; /* elements, per tensor */
} fl_l2_kpred;

typedef struct {
    int nkernels;
    fl_l2_kpred k[FL_GPU_MAX_KERNELS];
    fl_l2_kpred total; /* sums over the kernels */
} fl_l2_pred;

/* Runs every kernel of s, in launch order, through one L2 of l2_bytes in sectors of sector bytes;
 * flush = 1 empties it before each kernel (ncu --cache-control all), 0 keeps it across kernels.
 * FL_EINVAL / FL_ENOMEM from fl_l2_alloc. */
fl_status fl_l2_predict(const fl_gpu_sched *s, int64_t l2_bytes, int64_t sector, int flush, fl_l2_pred *out);

/* What fl_l2_predict(s, l2_bytes, sector, ...) will do, counted before it runs: *steps, the CTA
 * slots the GPU-order walk visits (every CTA of a wave at every step, rule G1/G2, idle ones
 * included), from one pass over the CTAs; then *lookups, the L2 sectors its accesses look up
 * (rule L1, less the repeated reads it skips), counted along the walk without a cache.  The
 * lookups are counted only while steps + lookups stays within limit (0: no limit), so a problem
 * far too large costs at most the limit's steps to refuse.  Returns 1 when steps + lookups
 * passes limit (then *lookups, 0 when steps alone pass it, is the part counted), else 0.
 * Saturates at INT64_MAX. */
int fl_l2_work(const fl_gpu_sched *s, int64_t l2_bytes, int64_t sector, int64_t limit, int64_t *steps,
               int64_t *lookups);
#endif
