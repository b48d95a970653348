/* masks.h: which keys a query may attend to; the one place the mask semantics live.
 * docs/model.md §masks (rules K1-K4).  Used by every schedule in src/schedules/ (tile skipping),
 * never re-implemented elsewhere; the oracle checks it with its own rule (reference/ref_mask.h).
 *
 * A mask is the intersection of up to three constraints on query i (0 <= i < Nq) and key j
 * (0 <= j < Nk), all expressed on the diagonal offset j - i:
 *
 *   causal top-left      j <= i                                  (PyTorch SDPA is_causal)
 *   causal bottom-right  j <= i + Nk - Nq                        (FlashAttention >= 2.1)
 *   window (L, R)        i + Nk - Nq - L <= j <= i + Nk - Nq + R  (FlashAttention-2;
 *                        L = -1 or R = -1: that side unbounded)
 *
 * so the keys a row keeps form one interval, [i + a, i + b] clipped to [0, Nk), where a is the
 * largest lower offset and b the smallest upper offset (rule K1).  This is what makes tile
 * classification exact and O(1): in a tile of rows [r0, r1] and keys [c0, c1] the offset j - i
 * takes every value in [c0 - r1, c1 - r0], so the tile is
 *
 *   FL_TILE_EMPTY    when [c0 - r1, c1 - r0] misses [a, b]   (skipped: nothing loaded, K2)
 *   FL_TILE_FULL     when it lies inside [a, b]              (computed without a mask, K3)
 *   FL_TILE_PARTIAL  otherwise                               (masked per element, K4)
 *
 * A row that keeps no key (e.g. the first Nq - Nk rows of a bottom-right mask when Nq > Nk)
 * outputs zeros and logsumexp -inf (rule M0), never NaN.
 *
 * Keep-mask polarity: keep(i, j) nonzero means "attend" (SDPA's boolean attn_mask); a padding
 * mask (True = exclude, MultiheadAttention's key_padding_mask) must be inverted first.
 */
#ifndef FL_MASKS_H
#define FL_MASKS_H

#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which corner a causal mask is aligned to when Nq != Nk (the seeds: FlashAttention >= 2.1 is
 * bottom-right; PyTorch SDPA's is_causal is top-left). */
typedef enum { FL_CAUSAL_NONE = 0, FL_CAUSAL_TOP_LEFT = 1, FL_CAUSAL_BOTTOM_RIGHT = 2 } fl_causal;

/* The name of a corner ("none", "top-left", "bottom-right"); NULL for an unknown value. */
const char *fl_causal_name(fl_causal c);

/* Parses "none", "top-left" or "bottom-right"; FL_EINVAL naming --causal otherwise. */
fl_status fl_causal_parse(const char *s, fl_causal *out);

typedef struct {
    int64_t Nq, Nk;
    fl_causal causal;
    int64_t left, right; /* the window as given (-1 = unbounded) */
    /* derived (rule K1): the kept offsets j - i are [a, b]; has_a / has_b = 0 when unbounded */
    int has_a, has_b;
    int64_t a, b;
} fl_mask;

/* The largest length a mask takes (2^61 - 1, problem.h's FL_SIZE_MAX), so that every offset
 * and Nq + Nk fit in 64 bits. */
#define FL_MASK_SIZE_MAX (INT64_MAX / 4)

/* Builds the mask of an Nq x Nk score matrix.  FL_EINVAL (naming --N/--Nk, --causal or
 * --window and the rule) when Nq or Nk < 1, the corner is unknown, or a window side is below
 * -1. */
fl_status fl_mask_init(fl_mask *mk, int64_t Nq, int64_t Nk, fl_causal causal, int64_t left,
                       int64_t right);

/* Nonzero when no constraint is set (every key kept). */
int fl_mask_is_dense(const fl_mask *mk);

/* Nonzero when query i may attend to key j; 0 for any (i, j) outside the matrix. */
int fl_mask_keep(const fl_mask *mk, int64_t i, int64_t j);

/* The keys row i keeps: [*lo, *hi] (inclusive); *lo > *hi when it keeps none. */
void fl_mask_row_range(const fl_mask *mk, int64_t i, int64_t *lo, int64_t *hi);

/* Over the rows of mk that keep at least one key: their number (*rows), the entries they keep
 * (*kept = sum of len(i) = hi - lo + 1) and sum ceil(len(i) / C) (*chunks: the chunks of C
 * columns that cover each row's kept keys from its first).  O(1): len is piecewise linear in i
 * with at most three pieces (rule K1).  Returns 1; 0 (and zeros) when C < 1 or Nq or Nk is above
 * 2^31 (the sums could pass 64 bits). */
int fl_mask_row_sums(const fl_mask *mk, int64_t C, int64_t *rows, int64_t *kept, int64_t *chunks);

typedef enum { FL_TILE_EMPTY = 0, FL_TILE_FULL = 1, FL_TILE_PARTIAL = 2 } fl_tile_kind;

/* Classifies the tile of rows [r0, r0 + nr) and keys [c0, c0 + nc): empty (every entry masked),
 * full (every entry kept) or partial.  Exact.  Only the part inside the matrix counts: a tile
 * with none (or nr, nc < 1) is empty. */
fl_tile_kind fl_mask_tile(const fl_mask *mk, int64_t r0, int64_t nr, int64_t c0, int64_t nc);

/* The key blocks of size Bc that the row block [r0, r0 + nr) touches: blocks [*j0, *j1)
 * (possibly empty, *j0 >= *j1).  The non-empty tiles of a row block are contiguous, so this is
 * where a tiled schedule's inner loop starts and ends (rule K2); closed forms use it too. */
void fl_mask_block_range(const fl_mask *mk, int64_t r0, int64_t nr, int64_t Bc, int64_t *j0,
                         int64_t *j1);

/* The query blocks of size Br that the key block [c0, c0 + nc) touches: [*i0, *i1). */
void fl_mask_row_block_range(const fl_mask *mk, int64_t c0, int64_t nc, int64_t Br, int64_t *i0,
                             int64_t *i1);

/* Adapter for fl_ref_attention's keep callback: ctx is a const fl_mask *. */
int fl_mask_keep_fn(int64_t i, int64_t j, const void *ctx);

#ifdef __cplusplus
}
#endif

#endif
