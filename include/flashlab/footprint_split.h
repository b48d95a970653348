/* footprint_split.h: the footprints of footprint.h with the two head dimensions apart (docs/model.md
 * rule D1: Q, K, dQ, dK tiles are d_qk wide, V, O, dO, dV tiles d_v wide), for the model's
 * schedules.  A header of its own, so that footprint.h (which the CUDA kernels include, and whose
 * bytes their recorded source hashes cover) stays as the kernels were measured with.
 *
 *     footprint(R, C, Dq, Dv) = rq*R*Dq + rv*R*Dv + cq*C*Dq + cv*C*Dv + rc*R*C + r*R
 *
 * At Dq = Dv = D each is footprint.h's fl_fp_coef with rd = rq + rv, cd = cq + cv
 * (tests/unit/machine/test_machine.c holds them equal). */
#ifndef FL_FOOTPRINT_SPLIT_H
#define FL_FOOTPRINT_SPLIT_H

#include <flashlab/footprint.h>

typedef struct {
    int64_t rq, rv, cq, cv, rc, r;
} fl_fp_split;

/* (F1): Q_i | O_i | K_j | V_j | S_ij | six row vectors */
#define FL_FP2_FLASH1_FWD {1, 1, 1, 1, 1, 6}
/* (F1b): Q_i, dQ_i | O_i, dO_i | K_j, dK_j | V_j, dV_j | S_ij, dP_ij | l_i, m_i, D_i */
#define FL_FP2_FLASH1_BWD {2, 2, 2, 2, 2, 3}
/* (F2), (F2g): Q_i | O_i | K_j | V_j | S_ij | m_i, l_i */
#define FL_FP2_FLASH2_FWD {1, 1, 1, 1, 1, 2}
/* (F2b): Q_i, dQ_i | dO_i | K_j, dK_j | V_j, dV_j | S_ij, dP_ij | L_i, D_i */
#define FL_FP2_FLASH2_BWD {2, 1, 2, 2, 2, 2}

FL_FP_FN int64_t fl_fp2_eval(fl_fp_split k, int64_t R, int64_t C, int64_t Dq, int64_t Dv)
{
    return k.rq * R * Dq + k.rv * R * Dv + k.cq * C * Dq + k.cv * C * Dv + k.rc * R * C + k.r * R;
}

#endif
