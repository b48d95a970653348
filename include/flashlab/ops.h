/* ops.h: arithmetic on SRAM-resident buffers.  A schedule computes only through these (and
 * through the row loops it writes beside the paper's lines), never on HBM tensors.
 *
 * Every op is a no-op in FL_COUNT mode (the buffer has no storage), so a schedule may call
 * them unconditionally; the machine counts nothing for on-chip work (docs/model.md rule R3).
 */
#ifndef FL_OPS_H
#define FL_OPS_H

#include <stdint.h>

#include "machine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sets the top-left nr x nc tile of b to v. */
void fl_op_fill(fl_buf *b, int64_t nr, int64_t nc, double v);

/* C[0:m, 0:n] = alpha * A[0:m, 0:k] * op(B) (+ C when accumulate), where op(B) is B[0:n, 0:k]^T
 * when transB, else B[0:k, 0:n].  C must not alias A or B. */
void fl_op_matmul(fl_buf *C, const fl_buf *A, const fl_buf *B, int64_t m, int64_t n, int64_t k,
                  int transB, double alpha, int accumulate);

/* One step of online softmax for one row (Milakov & Gimelshein; docs/model.md eq. (OS)):
 * state (m, l, u[0:dv]) absorbs scores s[0:n] with value rows v[j*ldv + 0:dv]:
 *   m' = max(m, max s);  a = exp(m - m');  l' = a*l + sum exp(s - m');
 *   u' = a*u + sum_j exp(s_j - m') v_j.
 * Scores of -inf are masked.  A step whose scores are all -inf changes nothing (it is skipped
 * before any exp, since -inf - -inf is undefined).  A NaN or +inf score makes the state NaN,
 * and it stays NaN (docs/errors.md: NaN propagates, it is never taken for a masked score).  Returns the rescale factor a (1 when
 * skipped, 0 when the state was empty).  p (if not NULL) receives exp(s - m'). */
double fl_osm_step(double *m, double *l, double *u, int64_t dv, const double *s, int64_t n,
                   const double *v, int64_t ldv, double *p);

/* fl_osm_step with weighted values (dropout, docs/model.md rule DR): u' = a*u + sum_j
 * exp(s_j - m') w_j v_j while l' sums the unweighted exp(s_j - m'); an entry with w_j = 0 adds
 * nothing to u (a dropped value is never read).  w NULL: every w_j = 1 (fl_osm_step). */
double fl_osm_step_w(double *m, double *l, double *u, int64_t dv, const double *s, int64_t n,
                     const double *v, int64_t ldv, double *p, const double *w);

/* fl_osm_step for a caller that holds arrays of known lengths (the Python binding), which this
 * checks instead of trusting: u holds u_len >= dv values; the step absorbs all s_len >= 1 scores
 * of s; v holds v_rows rows of ldv >= dv values, one per score (v_rows == s_len); p, when not
 * NULL, holds p_len >= s_len entries.  FL_EINVAL naming the array and the rule otherwise; else
 * *a receives fl_osm_step's rescale factor. */
fl_status fl_osm_step_checked(double *m, double *l, double *u, int64_t u_len, int64_t dv,
                              const double *s, int64_t s_len, const double *v, int64_t v_rows,
                              int64_t ldv, double *p, int64_t p_len, double *a);

/* Finishes a row: out[0:dv] = u / l, or zeros when l == 0 (no legal key; docs/model.md rule M0);
 * a NaN l gives NaN.
 * out may alias u. */
void fl_osm_finish(double l, const double *u, int64_t dv, double *out);


/* Online softmax over a whole row in tiles of `tile` scores: out[0:dv] = softmax(s[0:n]) V,
 * computed by fl_osm_step per tile and fl_osm_finish.  FL_EINVAL if tile < 1 or n < 1;
 * FL_ENOMEM if the numerator cannot be allocated. */
fl_status fl_osm_tiled(const double *s, int64_t n, const double *V, int64_t dv, int64_t tile,
                       double *out);

/* fl_osm_tiled with the arrays' lengths checked: s has n scores, V holds v_len == n * dv values,
 * out holds out_len >= dv.  FL_EINVAL naming the array and the rule otherwise. */
fl_status fl_osm_tiled_checked(const double *s, int64_t n, const double *V, int64_t v_len, int64_t dv,
                               int64_t tile, double *out, int64_t out_len);

/* ---- Checked tile ops: the machine's operations for a schedule written outside the library ----
 *
 * A student's schedule (the binding's student machine, python/flashlab/flmachine.py) is a sequence of
 * these calls; its values stay in the machine and reach the caller only through fl_store.  Every
 * op checks what fl_op_* trusts, and fails with one message naming the op, the buffer and the
 * rule (nothing is changed when it fails):
 *   - every buffer is one of m's and live (fl_buf_owned), else FL_EINVAL;
 *   - the tile nr x nc has 1 <= nr, 1 <= nc and fits each buffer it touches (rows x cols of a
 *     tile operand; nr x 1 of a row vector), else FL_EBOUNDS;
 *   - the operands the op reads while writing are not the buffer it writes, where that would
 *     read an overwritten value (named per op), else FL_EINVAL.
 * In FL_COUNT mode the checks run and nothing is computed; in FL_COMPUTE mode the op computes.
 * None is counted (docs/model.md rule R3): only fl_tile_load and fl_tile_store move elements.
 * A "row vector" is a buffer whose first column holds one value per row of the tile.
 * Masked scores are -inf: exp(-inf - m) = 0 whatever m is, a row whose scores are all -inf keeps
 * its maximum (and its rescale factor is 1), and a row whose sum l is 0 outputs zeros (rule M0). */

/* fl_load / fl_store with the tile at rows [brow, brow + nr) of buffer b instead of its top rows
 * (query tiles of a GQA group stacked in one buffer).  0 <= brow, brow + nr <= b's rows. */
fl_status fl_tile_load(fl_machine *m, fl_buf *b, int64_t brow, int t, int64_t r0, int64_t c0,
                       int64_t nr, int64_t nc);
fl_status fl_tile_store(fl_machine *m, const fl_buf *b, int64_t brow, int t, int64_t r0, int64_t c0,
                        int64_t nr, int64_t nc);

/* b[0:nr, 0:nc] = v. */
fl_status fl_tile_fill(fl_machine *m, fl_buf *b, int64_t nr, int64_t nc, double v);

/* dst[0:nr, 0:nc] = src[0:nr, 0:nc]  (dst may be src: nothing changes). */
fl_status fl_tile_copy(fl_machine *m, fl_buf *dst, const fl_buf *src, int64_t nr, int64_t nc);

/* fl_op_matmul checked: C[0:mm, 0:n] = alpha A[0:mm, 0:k] op(B) (+ C when accumulate), op(B) =
 * B[0:n, 0:k]^T when transB, else B[0:k, 0:n].  C must be neither A nor B; alpha finite. */
fl_status fl_tile_matmul(fl_machine *m, fl_buf *C, const fl_buf *A, const fl_buf *B, int64_t mm,
                         int64_t n, int64_t k, int transB, double alpha, int accumulate);

/* Row reductions into the row vector dst: dst[r] = max_c src[r, c] (a NaN wins), or
 * dst[r] = sum_c src[r, c]; with accumulate, max(dst[r], .) or dst[r] + . (dst may be src). */
fl_status fl_tile_row_max(fl_machine *m, fl_buf *dst, const fl_buf *src, int64_t nr, int64_t nc,
                          int accumulate);
fl_status fl_tile_row_sum(fl_machine *m, fl_buf *dst, const fl_buf *src, int64_t nr, int64_t nc,
                          int accumulate);

/* dst[r, c] = exp(x[r, c] - mx[r]), 0 where x[r, c] = -inf (eq. (OS): P = exp(S - m)).  dst may
 * be x (in place); it must not be the row vector mx. */
fl_status fl_tile_exp_diff(fl_machine *m, fl_buf *dst, const fl_buf *x, const fl_buf *mx,
                           int64_t nr, int64_t nc);

/* dst[r, c] *= f[r] (a rescale), and dst[r, c] = l[r] != 0 ? dst[r, c] / l[r] : 0 (the final
 * division, rule M0).  dst must not be the row vector. */
fl_status fl_tile_scale_rows(fl_machine *m, fl_buf *dst, const fl_buf *f, int64_t nr, int64_t nc);
fl_status fl_tile_div_rows(fl_machine *m, fl_buf *dst, const fl_buf *l, int64_t nr, int64_t nc);

/* The log-sum-exp of each row: dst[r] = l[r] > 0 ? mx[r] + log(l[r]) : -inf (flash2's line 13,
 * rule M0).  dst may be mx or l. */
fl_status fl_tile_lse(fl_machine *m, fl_buf *dst, const fl_buf *mx, const fl_buf *l, int64_t nr);

/* The running maximum absorbs a tile of scores, and what was accumulated under the old maximum is
 * rescaled (eq. (OS), lines 9-10 of flash2): for each row r < nr,
 *   m' = max(mx[r], max_c s[r, 0:nc]);  a = e^(mx[r] - m') (1 when both are -inf);
 *   every rescale[k][r, :] *= a;  mx[r] = m'.
 * a is a per-row scalar while the row is processed (rule R3: a register, no buffer).  rescale
 * holds nrescale (0..8) buffers of at least nr rows, all columns rescaled; none may be mx or s, nor
 * appear twice; mx must not be s. */
fl_status fl_tile_max_rescale(fl_machine *m, fl_buf *mx, const fl_buf *s, int64_t nr, int64_t nc,
                              fl_buf *const *rescale, int nrescale);

/* Masks a tile of scores: b[r, c] = -inf where keep[r * nc + c] == 0 (keep holds keep_len == nr *
 * nc entries, 0 or 1; the caller computes them with fl_mask_keep, include/flashlab/masks.h). */
fl_status fl_tile_keep(fl_machine *m, fl_buf *b, int64_t nr, int64_t nc, const unsigned char *keep,
                       int64_t keep_len);

#ifdef __cplusplus
}
#endif

#endif
