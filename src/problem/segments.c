/* segments.c: the (batch, head) problems of a run (see segments.h). */
#include "segments.h"

#include <stdlib.h>
#include <string.h>

#include <flashlab/heads.h>

static fl_status scales(const fl_problem *p, fl_segments *out);

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
    return scales(p, out);
}

int64_t fl_scale_blocks(int64_t n, int64_t sb) { return n < 1 ? 0 : sb ? fl_cdiv(n, sb) : 1; }

/* fp8's scale layout (segments.h): per head, the blocks of every sequence in order. */
static fl_status scales(const fl_problem *p, fl_segments *out)
{
    if (!fl_problem_fp8(p)) return FL_OK;
    const int64_t B = p->batch, sb = out->sb = p->scale_block;
    if (!out->cq) {
        out->SQ = B * fl_scale_blocks(out->N, sb); /* <= Tq, Tk: no overflow */
        out->SK = B * fl_scale_blocks(out->Nk, sb);
    } else {
        if (!(out->sq_pre = malloc((size_t)(B + 1) * sizeof *out->sq_pre)) ||
            !(out->sk_pre = malloc((size_t)(B + 1) * sizeof *out->sk_pre))) {
            fl_segments_free(out);
            return fl_fail(FL_ENOMEM, "out of memory for the scale layout of %lld sequences", (long long)B);
        }
        out->sq_pre[0] = out->sk_pre[0] = 0;
        for (int64_t b = 0; b < B; b++) {
            out->sq_pre[b + 1] = out->sq_pre[b] + fl_scale_blocks(out->cq[b + 1] - out->cq[b], sb);
            out->sk_pre[b + 1] = out->sk_pre[b] + fl_scale_blocks(out->ck[b + 1] - out->ck[b], sb);
        }
        out->SQ = out->sq_pre[B], out->SK = out->sk_pre[B];
    }
    out->q_scale_rows = out->Hq * out->SQ; /* <= q_rows, k_rows */
    out->k_scale_rows = out->Hkv * out->SK;
    return FL_OK;
}

void fl_segment_at(const fl_segments *s, int64_t k, fl_seg *sg)
{
    const int64_t per = s->Hq / s->G, i = k / per, h = (k % per) * s->G;
    const int64_t b = s->cq ? s->seq[i] : i;
    int64_t qs, nq, ks, nk;
    if (s->cq) {
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
    sg->head = h;
    sg->seq = b;
    sg->head_first = i == 0;
    sg->qsstride = s->SQ;
    sg->qs0 = h * s->SQ + (s->sq_pre ? s->sq_pre[b] : b * fl_scale_blocks(s->N, s->sb));
    sg->ks0 = kv * s->SK + (s->sk_pre ? s->sk_pre[b] : b * fl_scale_blocks(s->Nk, s->sb));
    /* cannot fail: lengths >= 1 and the window were checked by fl_problem_check */
    fl_mask_init(&sg->mask, nq, nk, s->causal, s->window_left, s->window_right);
}

void fl_segments_free(fl_segments *s)
{
    if (!s) return;
    free(s->seq);
    free(s->sq_pre);
    free(s->sk_pre);
    s->seq = s->sq_pre = s->sk_pre = NULL;
}
