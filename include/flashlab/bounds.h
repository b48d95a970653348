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
 *   product  (LB1) the product bound: a segment of R element moves forms at most f_R elementary
 *            products of the pass (forward: the d of each needed score S_ij and the d of P_ij V_j;
 *            backward: those of dP_ij, dV, dQ and dK), the maximum of the segment program of
 *            docs/bounds.md §2 (RP-f, RP-b), so traffic >= R (ceil(W / f_R) - 1), W the products
 *            the outputs need; the largest over a grid of R.  Per dense head: forward
 *            >= 1.46 N^2 d^2/M - 4M for M >= d^2 and >= 1.46 N^2 d/sqrt(M) - 4M below; backward
 *            >= 2.5 N^2 d^2/M - 4M and >= 2.5 N^2 d/sqrt(M) - 4M (docs/bounds.md §2.6; tending to
 *            1.64 and 2.83 forward, 4 and 4 backward, far from M = d^2).  Assumes classical
 *            products (each needed entry the sum of its products, formed from operand values on
 *            chip) and no value outside SRAM across a tile event.
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

/* The kinds of elementary products LB1 charges (docs/bounds.md §2.1). */
typedef enum {
    FL_PRODUCTS_FWD = 0, /* the forward's: S_ij = Q_i K_j^T and P_ij V_j, 2d per needed score */
    FL_PRODUCTS_BWD = 1  /* the backward's: dP_ij = dO_i V_j^T, dV_j += P_ij dO_i, dQ_i += dS_ij K_j,
                            dK_j += dS_ij Q_i, 4d per needed score */
} fl_products;

typedef struct {
    int64_t floor_reads;  /* (LB0) elements every schedule must read */
    int64_t floor_writes; /* (LB0) elements every schedule must write */
    int64_t floor;        /* floor_reads + floor_writes */
    double products_fwd;  /* W_f: the forward's elementary products the outputs need (0 when the
                             pass has no forward), 2d per needed score */
    double products_bwd;  /* W_b: the backward's, 4d per needed score (0 without a backward) */
    double products;      /* W_f + W_b */
    int64_t segment;      /* R of the best product bound (0 when it is 0) */
    int64_t product;      /* (LB1) the largest R (ceil(W / f_R) - 1) over the R grid and the forms of
                             the pass (docs/bounds.md eq. (LB1-fb) for both passes); 0 when W = 0 */
    int64_t bound;        /* max(floor, product): what no schedule goes under */
    int small_cache;      /* M < d^2: the regime of Theta(N^2 d / sqrt M) (Saha & Ye) */
    double shape;         /* the regime's Theta shape summed over the problem: W / sqrt(M) for
                             M < d^2, W d / M otherwise (2 N^2 d / sqrt M, 2 N^2 d^2 / M for a dense
                             head's forward); for ratios, not a bound */
} fl_lower_bound;

/* The lower bounds of docs/bounds.md for p (its fields checked with fl_problem_check_fields;
 * what its schedule accepts is the caller's, through fl_problem_check).  b: the forward's
 * blocks, used only by the block-sparse schedule, whose block mask is cut along them (required
 * there, ignored elsewhere; this module sits below the schedules and does not choose blocks).
 * FL_EINVAL when a block-sparse problem comes without its blocks or its block mask has more than
 * 2^31 blocks (the bound walks them); other errors as fl_problem_check. */
fl_status fl_lower_bound_of(const fl_problem *p, const fl_blocks *b, fl_lower_bound *out);

/* (LB1) of one kind alone: the largest R (ceil(W / f_R) - 1) over the grid R = floor(r_j M)
 * (fl_segment_r), for W elementary products of that kind at head dimension d and capacity M
 * (docs/bounds.md eq. (LB1)); *R receives the R that attains it (0 when the bound is 0).
 * W <= 0 gives 0. */
int64_t fl_product_bound(fl_products kind, double W, int64_t d, int64_t M, int64_t *R);

/* The R grid of LB1: r_j = 2^((j + FL_SEGMENT_JMIN) / 2), j = 0 .. FL_SEGMENT_NR - 1 (1/2 .. 4). */
#define FL_SEGMENT_JMIN (-2)
#define FL_SEGMENT_NR 7
double fl_segment_r(int j);

/* phi(kappa, r) of docs/bounds.md eq. (SC): the maximum of the segment program of `kind` at
 * M = 1, d^2 = kappa, R = r, certified from above by branch and bound (§2.5): never below the
 * maximum, above it by at most a relative 5e-3.  INFINITY (no claim) unless kappa, r > 0. */
double fl_segment_program(fl_products kind, double kappa, double r);

/* f_R of eq. (LB1) at head dimension d, capacity M and R = r_j M: M^(3/2) phi(kappa, r_j) with
 * kappa = d^2 / M, read from phi on the grid kappa = 2^(k/16) (computed once per thread) through
 * eq. (MON): never below the program's maximum. */
long double fl_segment_products(fl_products kind, int64_t d, int64_t M, int j);

/* A number of products a segment can form at (d, M, R = r_j M) in the program's terms: its value
 * at a few feasible points, never above fl_segment_products; cheap (no branch and bound).  It
 * bounds the best R (ceil(W / f_R) - 1) of r_j from above, so LB1 skips the grid points that
 * cannot win. */
long double fl_segment_products_taken(fl_products kind, int64_t d, int64_t M, int j);

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
