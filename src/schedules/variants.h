/* variants.h: the variants of the problem (docs/model.md §14) as the schedules' loops apply them
 * on chip, and what they add to the closed forms (private to src/schedules/).
 *
 *   d_v      (D1)  Q, K tiles are d wide, V, O tiles d_v wide: the loops take dq and dv
 *   sinks    (SK)  each row's softmax starts from the state (m, l) = (sink, 1): the sink is a key
 *                  whose value is 0; the backward adds -e^(sink - L_i) D_i to dsink
 *   softcap, alibi (SC, AL): on chip, after the scale and before the mask: s = c tanh(s / c),
 *                  s -= m_h |i + Nk - Nq - j|; the backward multiplies dS by 1 - (s_c / c)^2
 *   dropout  (DR)  P~ = P o Z / (1 - p), Z regenerated from Philox (rng.h) wherever it is needed
 *   fp8      (Q8)  scale factors applied to Q, K, V rows as their tiles arrive
 *
 * and rule R3b: the per-head scalars -- the G sink logits of a segment, the Philox seed and
 * offset, fp8 scale factors -- are loaded with fl_load_scalar into registers (counted reads, no
 * SRAM).  A segment loads its sinks and the seed once per pass (fl_vrun_segment); fp8 keeps the
 * last scale factor it loaded of each of Q, K, V in a register, reset at each segment, and a tile
 * whose rows enter a scale block loads that block's factor unless the register holds it. */
#ifndef FL_SCHEDULES_VARIANTS_H
#define FL_SCHEDULES_VARIANTS_H

#include <flashlab/machine.h>
#include <flashlab/masks.h>
#include <flashlab/schedule.h>

#include "base/checked.h"

/* The variants of one problem, as numbers. */
typedef struct {
    int64_t dq, dv;         /* head dimensions of Q, K and of V, O (rule D1) */
    double scale;           /* 1 / sqrt(dq) */
    double softcap;         /* > 0: scores c tanh(s / c) */
    int alibi;              /* ALiBi slopes fl_alibi_slope(h, Hq) */
    int64_t Hq;
    double dropout;         /* probability of dropping an entry of P */
    uint64_t seed;          /* Philox key (the problem's seed) */
    int sinks;
    int fp8;
    int64_t sb;             /* fp8: rows per scale block; 0: one block per sequence and head */
} fl_var;

void fl_var_of(const fl_problem *p, fl_var *v);

/* Nonzero when the scores need more than the scale and the mask (softcap or ALiBi). */
int fl_var_transforms(const fl_var *v);

/* What a pass of a schedule loads per segment (fl_vrun_segment). */
enum { FL_V_SINK = 1, FL_V_RNG = 2 };

/* A loop's state for the variants: the tensors, the registers of the current segment, and (compute
 * mode) scratch for the dropout weights of one row of a tile. */
typedef struct fl_vrun {
    const fl_var *v;
    const fl_qkvo *io;
    int64_t G;           /* query heads a segment stacks */
    double *sink;        /* compute: the segment's G sink logits */
    double *w;           /* compute: dropout weights, wcap entries */
    int64_t wcap;
    int64_t last[3];     /* fp8 registers of Q, K, V: the scale row held (-1 none) and its value */
    double reg[3];
    int cmp;
} fl_vrun;

enum { FL_VQ = 0, FL_VK = 1, FL_VV = 2 };

/* Prepares r for a loop over io's segments (G stacked query heads, key tiles of at most wcap
 * keys).  FL_ENOMEM if its scratch cannot be allocated.  Free with fl_vrun_free. */
fl_status fl_vrun_init(fl_vrun *r, const fl_var *v, fl_machine *m, const fl_qkvo *io, int64_t G, int64_t wcap);
void fl_vrun_free(fl_vrun *r);

/* The start of a segment in a pass: loads the sink logits of its G query heads (what has
 * FL_V_SINK and the problem has sinks) and the dropout seed and offset (FL_V_RNG, dropout), one
 * scalar each (rule R3b); empties the fp8 registers. */
fl_status fl_vrun_segment(fl_machine *m, fl_vrun *r, const fl_seg *sg, unsigned what);

/* The scalars fl_vrun_segment loads for one segment of G query heads (the closed forms' term). */
int64_t fl_var_segment_reads(const fl_var *v, int64_t G, unsigned what);

/* fl_load of a tile whose rows are rows [local0, local0 + nr) of the segment's sequence of tensor
 * `which` (FL_VQ, FL_VK, FL_VV), its scale factors at scale row `sbase` + block: under fp8, the
 * factors of the scale blocks the rows enter are loaded (unless the register holds one) and, in
 * compute mode, multiply the tile's rows. */
fl_status fl_vrun_load(fl_machine *m, fl_vrun *r, int which, fl_buf *b, int t, int64_t row, int64_t col,
                       int64_t nr, int64_t nc, int64_t sbase, int64_t local0);

/* The closed forms' count of those factors: the scale blocks of rows [x0, x1) of a sequence whose
 * first scale row is sbase, less the one *last holds; *last becomes the final block's row (0 for
 * an empty range; nothing when the problem is not fp8). */
int64_t fl_var_scales_entered(const fl_var *v, int64_t sbase, int64_t x0, int64_t x1, int64_t *last);

/* Compute mode, after S = scale Q K^T on a tile of `rows` rows (G heads of br rows stacked:
 * row r is query r0 + r % br of head sg->head + r / br) and bc keys from c0: the cap, the ALiBi
 * bias and the mask (-inf where it drops a key; kind says whether the tile needs it). */
void fl_var_scores(const fl_vrun *r, const fl_seg *sg, fl_buf *S, int64_t r0, int64_t br, int64_t rows,
                   int64_t c0, int64_t bc, fl_tile_kind kind);

/* Compute mode: the online-softmax state of a tile's rows at the start (rule SK): m = the row's
 * sink logit and l = 1, or m = -inf and l = 0 without sinks. */
void fl_var_osm_init(const fl_vrun *r, fl_buf *mi, fl_buf *li, int64_t br, int64_t rows);

/* Compute mode: the dropout weights Z_ij / (1 - p) of row r of a tile (as in fl_var_scores) over
 * keys c0 .. c0 + bc - 1, in r's scratch; NULL without dropout (every weight 1). */
const double *fl_var_drop_row(fl_vrun *r, const fl_seg *sg, int64_t r0, int64_t br, int64_t row,
                              int64_t c0, int64_t bc);

/* Compute mode, the backward's recomputation: S holds the tile's scores as fl_var_scores left them.
 * Row r's probabilities are P = exp(S - mrow[r]) / lrow[r] (lrow NULL: / 1); this writes
 * P o Z / (1 - p) into Pd (the dropped-out probabilities dV needs) and P times the cap's
 * derivative 1 - (s_c / c)^2 into S (what dS needs). */
void fl_var_bwd_p(const fl_vrun *r, const fl_seg *sg, fl_buf *S, fl_buf *Pd, const double *mrow,
                  const double *lrow, int64_t r0, int64_t br, int64_t rows, int64_t c0, int64_t bc);

/* Compute mode: dS = W o (dP o Z / (1 - p) - D_r) in place of dP, with W what fl_var_bwd_p left in S. */
void fl_var_bwd_ds(fl_vrun *r, const fl_seg *sg, const fl_buf *W, fl_buf *dP, const double *D, int64_t r0,
                   int64_t br, int64_t rows, int64_t c0, int64_t bc);

#endif
