/* bounds.h: lower bounds on the HBM traffic of any schedule for a problem.  docs/bounds.md.
 *
 * For a problem p (its pass, N, Nk, d, M, mask or window, heads, varlen; decode, block-sparse and
 * softmax problems too) fl_lower_bound returns numbers that no schedule flashlab can run goes
 * under, each with the assumptions under which it is proven (docs/bounds.md states them and the
 * proofs):
 *
 *   floor    (LB0) the compulsory traffic: every input element the outputs depend on is read
 *            once, every output element that can be nonzero is written once -- K and V once per
 *            K/V head, only the key ranges a mask or window keeps, a query row that keeps one
 *            key needs neither its Q row nor the keys' K rows.  No assumption beyond the machine
 *            (data enters SRAM only by loads, leaves only by stores).
 *   product  (LB1) the matrix-product bound: with segments of R element moves, at most
 *            f_R = (M + R)^2 / (4d) + h_R elementary products of a score (or of an entry of
 *            dP = dO V^T) can be formed per segment, so traffic >= R (ceil(W / f_R) - 1), W the
 *            products the outputs need; the largest over a grid of R is returned.  This is the
 *            Hong-Kung / Irony-Toledo-Tiskin argument with an explicit constant: >= N^2 d^2 / 2M - M
 *            for M >= d^2 (the Theta(N^2 d^2 / M) of the FlashAttention paper's Prop. 3 and Saha &
 *            Ye) and >= N^2 d / 2 sqrt(M) - M for M < d^2 (Saha & Ye's small-cache regime), per dense
 *            head and pass.  Assumes classical products (each needed score is the sum of its d
 *            products, formed from loaded operands) and no value outside SRAM across a tile event.
 *   bound    max(floor, product).
 *
 * Everything is exact integer arithmetic except W / f_R, which is evaluated in long double with
 * a relative safety margin that can only lower the result.  Sums that would not fit in 64 bits
 * saturate at INT64_MAX (a smaller number is still a lower bound).
 */
#ifndef FL_BOUNDS_H
#define FL_BOUNDS_H

#include <stdint.h>

#include "masks.h"
#include "problem.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int64_t floor_reads;  /* (LB0) elements every schedule must read */
    int64_t floor_writes; /* (LB0) elements every schedule must write */
    int64_t floor;        /* floor_reads + floor_writes */
    double products;      /* W: elementary products of the needed scores (forward) and of the
                             needed entries of dP = dO V^T (backward), d per entry */
    int64_t segment;      /* R of the best product bound (0 when W = 0) */
    int64_t product;      /* (LB1) R (ceil(W / f_R) - 1) at that R; 0 when W = 0 */
    int64_t bound;        /* max(floor, product): what no schedule goes under */
    int small_cache;      /* M < d^2: the regime of Theta(N^2 d / sqrt M) (Saha & Ye) */
    double shape;         /* the regime's Theta shape summed over the problem: W / sqrt(M) for
                             M < d^2, W d / M otherwise (N^2 d / sqrt M, N^2 d^2 / M for one
                             dense head); for ratios, not a bound */
} fl_lower_bound;

/* The lower bounds of docs/bounds.md for p (its fields checked with fl_problem_check_fields;
 * what its schedule accepts is the caller's, through fl_problem_check).  b: the forward's
 * blocks, used only by the block-sparse schedule, whose block mask is cut along them (required
 * there, ignored elsewhere; this module sits below the schedules and does not choose blocks).
 * FL_EINVAL when a block-sparse problem comes without its blocks or its block mask has more than
 * 2^31 blocks (the bound walks them); other errors as fl_problem_check. */
fl_status fl_lower_bound_of(const fl_problem *p, const fl_blocks *b, fl_lower_bound *out);

/* (LB1) alone: the largest R (ceil(W / f_R) - 1) over the grid R = M 2^(k/8), k = -48..48, for W
 * elementary products at head dimension d and capacity M (docs/bounds.md eq. (LB1)); *R receives
 * the R that attains it (0 when the bound is 0).  W <= 0 gives 0. */
int64_t fl_product_bound(double W, int64_t d, int64_t M, int64_t *R);

/* What one query-key matrix of a problem needs (docs/bounds.md §1): rows that keep at least one
 * key (r1) and at least two (r2); keys kept by some row (k1) and by some row that keeps at least
 * two (k2); s2, the kept scores of the rows that keep at least two keys.  O(1) for the
 * causal/window masks of masks.h (the kept keys of row i are one interval whose length is
 * concave in i). */
typedef struct {
    int64_t r1, r2, k1, k2;
    double s2;
} fl_need;

/* The need of an Nq x Nk score matrix under the mask mk. */
void fl_need_of_mask(const fl_mask *mk, fl_need *out);

#ifdef __cplusplus
}
#endif

#endif
