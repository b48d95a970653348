/* variants.c: the variants on chip and their counts (see variants.h; docs/model.md §14). */
#include "variants.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <flashlab/rng.h>

void fl_var_of(const fl_problem *p, fl_var *v)
{
    memset(v, 0, sizeof *v);
    v->dq = p->d;
    v->dv = fl_problem_dv(p);
    v->scale = 1.0 / sqrt((double)p->d);
    v->softcap = p->softcap;
    v->alibi = p->alibi;
    v->Hq = p->heads;
    v->dropout = p->dropout;
    v->seed = p->seed;
    v->sinks = p->sinks;
    v->fp8 = fl_problem_fp8(p);
    v->sb = p->scale_block;
}

int fl_var_transforms(const fl_var *v) { return v->softcap > 0.0 || v->alibi; }

fl_status fl_vrun_init(fl_vrun *r, const fl_var *v, fl_machine *m, const fl_qkvo *io, int64_t G, int64_t wcap)
{
    memset(r, 0, sizeof *r);
    r->v = v, r->io = io, r->G = G, r->cmp = fl_computes(m);
    r->last[0] = r->last[1] = r->last[2] = -1;
    if (!r->cmp) return FL_OK;
    if ((v->sinks && !(r->sink = calloc((size_t)G, sizeof *r->sink))) ||
        (v->dropout > 0.0 && !(r->w = malloc((size_t)fl_max64(1, wcap) * sizeof *r->w)))) {
        fl_vrun_free(r);
        return fl_fail(FL_ENOMEM, "out of memory for the variants of %lld stacked heads", (long long)G);
    }
    r->wcap = wcap;
    return FL_OK;
}

void fl_vrun_free(fl_vrun *r)
{
    free(r->sink);
    free(r->w);
    r->sink = r->w = NULL;
}

fl_status fl_vrun_segment(fl_machine *m, fl_vrun *r, const fl_seg *sg, unsigned what)
{
    double x;
    r->last[0] = r->last[1] = r->last[2] = -1;
    if ((what & FL_V_SINK) && r->v->sinks)
        for (int64_t g = 0; g < sg->group; g++) {
            FL_TRY(fl_load_scalar(m, r->io->sink, sg->head + g, 0, &x));
            if (r->sink) r->sink[g] = x;
        }
    if ((what & FL_V_RNG) && r->v->dropout > 0.0) /* the seed and the offset of the Philox stream */
        for (int k = 0; k < 2; k++) FL_TRY(fl_load_scalar(m, r->io->rng, k, 0, &x));
    return FL_OK;
}

int64_t fl_var_segment_reads(const fl_var *v, int64_t G, unsigned what)
{
    return ((what & FL_V_SINK) && v->sinks ? G : 0) + ((what & FL_V_RNG) && v->dropout > 0.0 ? 2 : 0);
}

/* the scale block of local row x */
static int64_t block_of(const fl_var *v, int64_t x) { return v->sb ? x / v->sb : 0; }

fl_status fl_vrun_load(fl_machine *m, fl_vrun *r, int which, fl_buf *b, int t, int64_t row, int64_t col,
                       int64_t nr, int64_t nc, int64_t sbase, int64_t local0)
{
    FL_TRY(fl_load(m, b, t, row, col, nr, nc));
    if (!r->v->fp8) return FL_OK;
    const int st = which == FL_VQ ? r->io->Qs : which == FL_VK ? r->io->Ks : r->io->Vs;
    /* block by block: the rows of block k are [max(local0, k sb), min(local0 + nr, (k + 1) sb)) */
    for (int64_t x = local0; x < local0 + nr;) {
        const int64_t k = block_of(r->v, x), srow = sbase + k;
        const int64_t end = r->v->sb ? fl_min64(local0 + nr, (k + 1) * r->v->sb) : local0 + nr;
        if (r->last[which] != srow) {
            FL_TRY(fl_load_scalar(m, st, srow, 0, &r->reg[which]));
            r->last[which] = srow;
        }
        if (b->x)
            for (int64_t y = x; y < end; y++)
                for (int64_t c = 0; c < nc; c++) b->x[(y - local0) * b->cols + c] *= r->reg[which];
        x = end;
    }
    return FL_OK;
}

int64_t fl_var_scales_entered(const fl_var *v, int64_t sbase, int64_t x0, int64_t x1, int64_t *last)
{
    if (!v->fp8 || x1 <= x0) return 0;
    const int64_t first = sbase + block_of(v, x0), final = sbase + block_of(v, x1 - 1);
    const int64_t n = final - first + 1 - (*last == first);
    *last = final;
    return n;
}

void fl_var_scores(const fl_vrun *r, const fl_seg *sg, fl_buf *S, int64_t r0, int64_t br, int64_t rows,
                   int64_t c0, int64_t bc, fl_tile_kind kind)
{
    if (!S->x) return;
    const fl_var *v = r->v;
    const int tf = fl_var_transforms(v), masked = kind != FL_TILE_FULL; /* standard computes empty tiles too */
    if (!tf && !masked) return;
    const int64_t off = sg->Nk - sg->Nq; /* ALiBi's diagonal: i + Nk - Nq - j */
    for (int64_t q = 0; q < rows; q++) {
        const int64_t i = r0 + q % br, h = sg->head + q / br;
        const double slope = v->alibi ? fl_alibi_slope(h, v->Hq) : 0.0;
        double *s = S->x + q * S->cols;
        for (int64_t c = 0; c < bc; c++) {
            if (masked && !fl_mask_keep(&sg->mask, i, c0 + c)) {
                s[c] = -INFINITY;
                continue;
            }
            if (v->softcap > 0.0) s[c] = v->softcap * tanh(s[c] / v->softcap);
            if (v->alibi) s[c] -= slope * fabs((double)(i + off - (c0 + c)));
        }
    }
}

void fl_var_osm_init(const fl_vrun *r, fl_buf *mi, fl_buf *li, int64_t br, int64_t rows)
{
    if (!mi->x) return;
    for (int64_t q = 0; q < rows; q++) {
        mi->x[q] = r->v->sinks ? r->sink[q / br] : -INFINITY;
        li->x[q] = r->v->sinks ? 1.0 : 0.0;
    }
}

const double *fl_var_drop_row(fl_vrun *r, const fl_seg *sg, int64_t r0, int64_t br, int64_t row,
                              int64_t c0, int64_t bc)
{
    const fl_var *v = r->v;
    if (!(v->dropout > 0.0) || !r->w) return NULL;
    const int64_t i = r0 + row % br, h = sg->head + row / br;
    for (int64_t c = 0; c < bc; c++)
        r->w[c] = fl_dropout_keep(v->seed, sg->seq, h, i, c0 + c, v->dropout) ? 1.0 / (1.0 - v->dropout) : 0.0;
    return r->w;
}

void fl_var_bwd_p(const fl_vrun *r, const fl_seg *sg, fl_buf *S, fl_buf *Pd, const double *mrow,
                  const double *lrow, int64_t r0, int64_t br, int64_t rows, int64_t c0, int64_t bc)
{
    if (!S->x) return;
    const fl_var *v = r->v;
    const int64_t off = sg->Nk - sg->Nq;
    for (int64_t q = 0; q < rows; q++) {
        const int64_t i = r0 + q % br, h = sg->head + q / br;
        const double slope = v->alibi ? fl_alibi_slope(h, v->Hq) : 0.0;
        double *s = S->x + q * S->cols, *pd = Pd->x + q * Pd->cols;
        for (int64_t c = 0; c < bc; c++) {
            if (s[c] == -INFINITY) { /* masked: P = 0, hence dS = 0 exactly */
                s[c] = pd[c] = 0.0;
                continue;
            }
            double p = exp(s[c] - mrow[q]);
            if (lrow) p /= lrow[q];
            double f = 1.0;
            if (v->softcap > 0.0) { /* the cap's derivative at the capped score s_c (before ALiBi) */
                const double t = (v->alibi ? s[c] + slope * fabs((double)(i + off - (c0 + c))) : s[c]) / v->softcap;
                f = 1.0 - t * t;
            }
            pd[c] = v->dropout > 0.0
                        ? (fl_dropout_keep(v->seed, sg->seq, h, i, c0 + c, v->dropout) ? p / (1.0 - v->dropout) : 0.0)
                        : p;
            s[c] = p * f;
        }
    }
}

void fl_var_bwd_ds(fl_vrun *r, const fl_seg *sg, const fl_buf *W, fl_buf *dP, const double *D, int64_t r0,
                   int64_t br, int64_t rows, int64_t c0, int64_t bc)
{
    if (!dP->x) return;
    for (int64_t q = 0; q < rows; q++) {
        const double *w = fl_var_drop_row(r, sg, r0, br, q, c0, bc), *x = W->x + q * W->cols;
        double *g = dP->x + q * dP->cols;
        for (int64_t c = 0; c < bc; c++) g[c] = x[c] * ((w ? g[c] * w[c] : g[c]) - D[q]);
    }
}
