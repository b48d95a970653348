/* heads.h: how query heads share key/value heads, and how packed variable-length batches are
 * described: the semantics of docs/model.md §heads and §varlen (rules H1, H2, V1), shared by the
 * reference and the schedules.
 *
 * Heads (H1): Hq query heads over Hkv key/value heads, Hkv dividing Hq; query head h uses K/V
 * head h / (Hq / Hkv), i.e. consecutive groups of Hq / Hkv query heads share one K/V head
 * (FlashAttention's mapping: 6 over 2 is 0,0,0,1,1,1, not 0,1,0,1,0,1).  Hkv = Hq is
 * multi-head attention (MHA), Hkv = 1 multi-query (MQA), anything between grouped-query (GQA).
 *
 * Varlen (V1): a packed batch of B sequences is described by cu_seqlens, B + 1 nondecreasing
 * offsets starting at 0 and ending at the packed token count T; sequence b owns tokens
 * [cu[b], cu[b+1]).  Queries and keys have one array each.  Attention never crosses a sequence
 * boundary: sequence b's queries see only sequence b's keys (its own Nq x Nk problem, with the
 * causal corner and window applied to that problem).
 */
#ifndef FL_HEADS_H
#define FL_HEADS_H

#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* FL_OK when Hq >= 1, Hkv >= 1 and Hkv divides Hq; else FL_EINVAL naming --heads/--kv-heads and
 * the rule broken. */
fl_status fl_heads_check(int64_t Hq, int64_t Hkv);

/* The K/V head query head h (0 <= h < Hq) uses: h / (Hq / Hkv); -1 when (Hq, Hkv) fails
 * fl_heads_check or h is not a query head. */
int64_t fl_kv_head(int64_t h, int64_t Hq, int64_t Hkv);

/* FL_OK when batch >= 1, cu has batch + 1 entries (n == batch + 1), cu[0] = 0, cu is
 * nondecreasing and cu[batch] = total; else FL_EINVAL (cu is not read when n is wrong) naming `opt` (e.g. "--cu-seqlens-q"), the first entry that
 * breaks the rule, and the rule. */
fl_status fl_cu_seqlens_check(const char *opt, const int64_t *cu, int64_t n, int64_t batch,
                              int64_t total);

#ifdef __cplusplus
}
#endif

#endif
