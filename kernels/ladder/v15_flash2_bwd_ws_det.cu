/* v15_flash2_bwd_ws_det.cu: version 15, version 14 in its deterministic mode: the contributions of
 * the key blocks to each dQ_i are added in the fixed order j = 0, 1, ... (a semaphore a query block
 * of each head, FlashAttention-3's deterministic backward), so that dQ is the same bits on every
 * run; dK and dV are the same bits in every version (each CTA owns its key block).
 *
 * The kernel is version 14's (v14_flash2_bwd_ws.cu, included; its header says how the order is
 * kept and why it cannot deadlock); this file is its table with DET set.  What it costs: a workspace
 * of nbh x ceil(N / Br) words zeroed each launch, the dQ warp's wait for its predecessor and for its
 * reductions to complete.  Predicted: +3 to +10 % of version 14's time on the benchmark's 64 shapes
 * (the skew of one step between consecutive key blocks when a wave starts, and the wait for
 * completion, not only the read, of each step's reductions).
 * Needs sm_90a; other targets compile a stub.
 */
#define FL_V14_KERNEL_ONLY
#define FL_V_NEEDS FL_NEED_SM90A
#include "v14_flash2_bwd_ws.cu"

static constexpr fl_kernel_info ws_bwd_det_table[] = {K14_SET(15, true, __half, FL_F16), K14_SET(15, true, __nv_bfloat16, FL_BF16)};

/* &FL_FLASH2_BWD: the table's pass (K14) */
FL_LADDER_FILE(15, ws_bwd_det_table, FL_V_NEEDS)
