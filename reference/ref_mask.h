/* ref_mask.h: which keys a query may attend to, written for the oracle straight from the
 * definitions (docs/model.md §masks, rule K1), apart from the schedules' masks (src/mask/), so
 * that the reference checks the schedules' tile skipping instead of sharing it.
 *
 * For query i (0 <= i < Nq) and key j (0 <= j < Nk), with the diagonal offset o = Nk - Nq:
 *
 *   causal top-left      keep when j <= i                    (PyTorch SDPA is_causal)
 *   causal bottom-right  keep when j <= i + o                (FlashAttention >= 2.1)
 *   window (L, R)        keep when i + o - L <= j <= i + o + R; a side of -1 is unbounded
 *
 * and a key is kept when every constraint set keeps it.
 */
#ifndef FL_REF_MASK_H
#define FL_REF_MASK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int64_t Nq, Nk;
    int causal;          /* 0 none, 1 top-left, 2 bottom-right */
    int64_t left, right; /* window sides, -1 = unbounded */
} fl_ref_mask;

/* Nonzero when no constraint is set (every key kept). */
int fl_ref_mask_dense(const fl_ref_mask *mk);

/* The keep rule as a fl_ref_attention callback: ctx is a const fl_ref_mask *. */
int fl_ref_keep(int64_t i, int64_t j, const void *ctx);

#ifdef __cplusplus
}
#endif

#endif
