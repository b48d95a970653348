/* segments.c: the (batch, head) problems of a run (see segments.h). */
#include "segments.h"

#include <stdlib.h>
#include <string.h>

#include <flashlab/heads.h>

fl_status fl_segments_build(const fl_problem *p, int64_t G, fl_segments *out)
{
    const int64_t B = p->batch, Nk = p->Nk ? p->Nk : p->N;
    memset(out, 0, sizeof *out);
    out->Hq = p->heads;
    out->Hkv = p->kv_heads ? p->kv_heads : p->heads;
    out->ratio = out->Hq / out->Hkv;
    out->G = G;
    out->N = p->N;
    out->Nk = Nk;
    out->causal = p->causal;
    out->window_left = p->window_left;
    out->window_right = p->window_right;
    fl_problem_lengths(p, &out->max_nq, &out->max_nk);
    int64_t nseq = B;
    if (p->cu_seqlens_q) {
        out->cq = p->cu_seqlens_q;
        out->ck = p->cu_seqlens_k ? p->cu_seqlens_k : p->cu_seqlens_q;
        out->Tq = p->N;
        out->Tk = Nk;
        if ((uint64_t)B > SIZE_MAX / sizeof *out->seq || !(out->seq = malloc((size_t)B * sizeof *out->seq)))
            return fl_fail(FL_ENOMEM, "out of memory for %lld sequences", (long long)B);
        nseq = 0;
        for (int64_t b = 0; b < B; b++)
            if (out->cq[b + 1] > out->cq[b]) out->seq[nseq++] = b; /* empty on both sides: skipped */
        out->nseq = nseq;
    } else if (!fl_mul_ok(B, p->N, &out->Tq) || !fl_mul_ok(B, Nk, &out->Tk)) {
        return fl_fail(FL_EOVERFLOW, "{batch}/{N}: the packed token count overflows");
    }
    if (!fl_mul_ok(out->Hq, out->Tq, &out->q_rows) || !fl_mul_ok(out->Hkv, out->Tk, &out->k_rows) ||
        !fl_mul_ok(nseq, out->Hq / out->G, &out->nseg)) {
        fl_segments_free(out);
        return fl_fail(FL_EOVERFLOW, "{batch}/{heads}: the packed tensors are too large");
    }
    return FL_OK;
}

void fl_segment_at(const fl_segments *s, int64_t k, fl_seg *sg)
{
    const int64_t per = s->Hq / s->G, i = k / per, h = (k % per) * s->G;
    int64_t qs, nq, ks, nk;
    if (s->cq) {
        const int64_t b = s->seq[i];
        qs = s->cq[b], nq = s->cq[b + 1] - qs;
        ks = s->ck[b], nk = s->ck[b + 1] - ks;
    } else {
        qs = i * s->N, nq = s->N;
        ks = i * s->Nk, nk = s->Nk;
    }
    const int64_t kv = fl_kv_head(h, s->Hq, s->Hkv);
    sg->q0 = h * s->Tq + qs;
    sg->qstride = s->Tq;
    sg->k0 = kv * s->Tk + ks;
    sg->Nq = nq;
    sg->Nk = nk;
    sg->group = s->G;
    sg->kv_first = (h % s->ratio) == 0;
    /* cannot fail: lengths >= 1 and the window were checked by fl_problem_check */
    fl_mask_init(&sg->mask, nq, nk, s->causal, s->window_left, s->window_right);
}

void fl_segments_free(fl_segments *s)
{
    if (!s) return;
    free(s->seq);
    s->seq = NULL;
}
