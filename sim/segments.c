/* segments.c: the (batch, head) problems of a run (see segments.h). */
#include "segments.h"

#include <stdlib.h>
#include <string.h>

#include "../reference/heads.h"

fl_status fl_segments_build(const fl_problem *p, fl_segments *out)
{
    const int64_t B = p->batch, Hq = p->heads, Hkv = p->kv_heads ? p->kv_heads : p->heads;
    const int64_t Nk = p->Nk ? p->Nk : p->N, G = fl_problem_group(p), ratio = Hq / Hkv;
    const int64_t *cq = p->cu_seqlens_q, *ck = p->cu_seqlens_k ? p->cu_seqlens_k : p->cu_seqlens_q;
    memset(out, 0, sizeof *out);
    if (cq) {
        out->Tq = p->N;
        out->Tk = Nk;
    } else if (!fl_mul_ok(B, p->N, &out->Tq) || !fl_mul_ok(B, Nk, &out->Tk)) {
        return fl_fail(FL_EOVERFLOW, "--batch/--N: the packed token count overflows");
    }
    int64_t nseg;
    if (!fl_mul_ok(Hq, out->Tq, &out->q_rows) || !fl_mul_ok(Hkv, out->Tk, &out->k_rows) ||
        !fl_mul_ok(B, Hq / G, &nseg) || nseg > (int64_t)(SIZE_MAX / sizeof(fl_seg)))
        return fl_fail(FL_EOVERFLOW, "--batch/--heads: the packed tensors are too large");
    if (nseg > FL_MAX_SEGMENTS)
        return fl_fail(FL_EINVAL, "--batch/--heads: %lld (batch, head) problems, more than %lld; "
                                  "count one batch or fewer heads and scale", (long long)nseg,
                       (long long)FL_MAX_SEGMENTS);
    out->seg = malloc((size_t)(nseg ? nseg : 1) * sizeof *out->seg);
    if (!out->seg) return fl_fail(FL_ENOMEM, "out of memory for %lld segments", (long long)nseg);
    for (int64_t b = 0; b < B; b++) {
        const int64_t qs = cq ? cq[b] : b * p->N, nq = cq ? cq[b + 1] - cq[b] : p->N;
        const int64_t ks = cq ? ck[b] : b * Nk, nk = cq ? ck[b + 1] - ck[b] : Nk;
        if (nq == 0) continue; /* an empty sequence (then nk = 0 too: fl_problem_check) */
        for (int64_t h = 0; h < Hq; h += G) {
            fl_seg *sg = &out->seg[out->nseg++];
            const int64_t kv = fl_kv_head(h, Hq, Hkv);
            sg->q0 = h * out->Tq + qs;
            sg->qstride = out->Tq;
            sg->k0 = kv * out->Tk + ks;
            sg->Nq = nq;
            sg->Nk = nk;
            sg->group = G;
            sg->kv_first = (h % ratio) == 0;
            fl_status s = fl_mask_init(&sg->mask, nq, nk, p->causal, p->window_left, p->window_right);
            if (s) {
                fl_segments_free(out);
                return s;
            }
        }
    }
    return FL_OK;
}

void fl_segments_free(fl_segments *s)
{
    if (!s) return;
    free(s->seg);
    s->seg = NULL;
    s->nseg = 0;
}
