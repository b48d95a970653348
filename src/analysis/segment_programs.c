/* segment_programs.c: the segment programs of docs/bounds.md §2 -- how many elementary products a
 * segment of R element moves can form -- and their maxima, certified from above (see bounds.h).
 *
 * Everything here is at M = 1: a program's maximum at capacity M is M^(3/2) times its value at
 * M = 1 with d^2 = kappa M and R = r M (docs/bounds.md eq. (SC)), so one number phi(kappa, r) per
 * kind of pass serves every (d, M).  phi is computed by branch and bound over the programs'
 * reduced forms (RF-f), (RF-b); every cell's value is an upper bound (docs/bounds.md §2.5), so the
 * result is never below the maximum.  fl_segment_products caches phi on a grid of kappa and reads
 * between grid points through the two monotonicities of eq. (MON). */
#include <flashlab/bounds.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the inner maximum over p: a concave function of one variable ---- */

/* phi(p) = sqrt(u1 + v1 p) + sqrt((u2 + v2 p)(B - p)) on [0, B], u, v >= 0: the sum of two concave
 * functions (a square root of an affine function, the geometric mean of two affine ones). */
typedef struct {
    double u1, v1, u2, v2, B;
} inner;

static double inner_at(const inner *q, double p)
{
    const double e = q->B - p, a = q->u1 + q->v1 * p, b = (q->u2 + q->v2 * p) * (e > 0.0 ? e : 0.0);
    return sqrt(a > 0.0 ? a : 0.0) + sqrt(b > 0.0 ? b : 0.0);
}

/* The maximum of a concave function over [0, B]: golden section keeps a maximiser in [a, b]; then
 * with a < c < e < b, concavity puts the function under the secant of (c, e) outside [c, e] and
 * under that of (a, c) right of c, so max <= max(f(c), f(e)) + max(|s_ce|, |s_ac|) (b - a).
 * upper = 0 returns the largest value sampled (a value the function takes). */
static double inner_max(const inner *q, int upper)
{
    const double g = 0.6180339887498949;
    double a = 0.0, b = q->B, c = b - g * (b - a), e = a + g * (b - a), fc = inner_at(q, c), fe = inner_at(q, e);
    if (!(q->B > 0.0)) return inner_at(q, 0.0);
    for (int it = 0; it < 22; it++) {
        if (fc < fe) a = c, c = e, fc = fe, e = a + g * (b - a), fe = inner_at(q, e);
        else b = e, e = c, fe = fc, c = b - g * (b - a), fc = inner_at(q, c);
    }
    const double m = fc > fe ? fc : fe;
    if (!upper) return m;
    const double fa = inner_at(q, a), sce = e > c ? fabs(fe - fc) / (e - c) : 0.0;
    const double sac = c > a ? fabs(fc - fa) / (c - a) : 0.0;
    return m + (sce > sac ? sce : sac) * (b - a);
}

/* ---- the reduced forms at M = 1: I = 1 + r (inputs: start and loads), T = 2 + r (all) ---- */

typedef struct {
    double kappa, I, T;
} prog;

/* m(s, delta, nu) of (RF-b): the largest min(alpha, delta) min(beta, nu) over alpha + beta = s. */
static double mbar(double s, double de, double nu)
{
    if (de + nu <= s) return de * nu;
    const double lo = s - nu > 0.0 ? s - nu : 0.0, hi = s < de ? s : de;
    double a = s / 2.0;
    if (a < lo) a = lo;
    if (a > hi) a = hi;
    return a * (s - a);
}

/* The forward's cell a in [a0, a1] (docs/bounds.md §2.5): sup over nu <= I - 2 a0 and
 * nu + p + o <= T - 2 a0 of sqrt(c + p) (a1 + sqrt(nu o)), c = a1^2 / d^2, in closed form.  For
 * fixed p the best sqrt(nu o) is (T' - p) / 2 while that nu fits (p >= T' - 2x), else nu = x:
 * sqrt(x (T' - x - p)); on each piece the function of p is concave with one stationary point
 * (p* = 2 (a1 + T'/2 - c) / 3, resp. t = sqrt(T' - x - p) the positive root of
 * 2 sqrt(x) t^2 + a1 t - sqrt(x) (c + T' - x) = 0), so each piece's maximum is there, clamped.
 * -1 when the cell holds no feasible point (2 a0 > I). */
static double fwd_cell(const prog *g, double a0, double a1)
{
    const double x = g->I - 2.0 * a0, Tp = g->T - 2.0 * a0, c = a1 * a1 / g->kappa;
    if (x < 0.0) return -1.0;
    const double lo1 = Tp - 2.0 * x > 0.0 ? Tp - 2.0 * x : 0.0;
    double p = 2.0 * (a1 + Tp / 2.0 - c) / 3.0;
    p = p < lo1 ? lo1 : p > Tp ? Tp : p;
    double best = sqrt(c + p) * (a1 + (Tp - p) / 2.0);
    if (Tp - 2.0 * x > 0.0 && x > 0.0) {
        const double E = Tp - x, A = c + E, sx = sqrt(x), sE = sqrt(E);
        double t = (-a1 + sqrt(a1 * a1 + 8.0 * x * A)) / (4.0 * sx);
        t = t < sx ? sx : t > sE ? sE : t;
        const double q = A - t * t, h = sqrt(q > 0.0 ? q : 0.0) * (a1 + sx * t);
        if (h > best) best = h;
    }
    return best;
}

/* The backward's cell (docs/bounds.md §2.5) in x = (D, sigma, nu), D = delta + s the dO and Q/K
 * budget, s = sigma D: every increasing part at its largest in the cell (delta at D1 (1 - sigma0),
 * s at D1 sigma1), the budget left for p and the outputs at the lower corner.  Returns the inner
 * function; -1 when the cell holds no feasible point (D0 + nu0 > I). */
static int bwd_inner(const prog *g, const double *lo, const double *hi, inner *q)
{
    if (lo[0] + lo[2] > g->I) return -1;
    const double de = hi[0] * (1.0 - lo[1]), s = hi[0] * hi[1], nu = hi[2], X = de * nu;
    *q = (inner){X * X / g->kappa, X, (s * s * de / 4.0 + mbar(s, de, nu) * s) / g->kappa, hi[0], g->T - lo[0] - lo[2]};
    return 0;
}

/* The upper value of a cell, or -1 when it holds no feasible point; with lo == hi, a value the
 * program takes (a feasible point). */
static double cell_value(fl_products kind, const prog *g, const double *lo, const double *hi, int upper)
{
    if (kind == FL_PRODUCTS_FWD) return fwd_cell(g, lo[0], hi[0]);
    inner q;
    return bwd_inner(g, lo, hi, &q) ? -1.0 : inner_max(&q, upper);
}

/* ---- branch and bound over the cells ---- */

typedef struct {
    double lo[3], hi[3], U;
} cell;

static void heap_push(cell *h, int *n, const cell *c)
{
    int i = (*n)++;
    while (i > 0 && h[(i - 1) / 2].U < c->U) h[i] = h[(i - 1) / 2], i = (i - 1) / 2;
    h[i] = *c;
}

static cell heap_pop(cell *h, int *n)
{
    const cell top = h[0], last = h[--*n];
    int i = 0;
    for (;;) {
        const int l = 2 * i + 1, r = l + 1;
        int m = i;
        double mu = last.U;
        if (l < *n && h[l].U > mu) m = l, mu = h[l].U;
        if (r < *n && h[r].U > mu) m = r;
        if (m == i) break;
        h[i] = h[m], i = m;
    }
    h[i] = last;
    return top;
}

enum { HEAP_CAP = 1 << 17 };
#define BB_TOL 5e-3 /* stop when the largest cell bound is within this of a value taken */

double fl_segment_program(fl_products kind, double kappa, double r)
{
    const prog g = {kappa, 1.0 + r, 2.0 + r};
    const int dim = kind == FL_PRODUCTS_FWD ? 1 : 3;
    cell *h = malloc(sizeof *h * HEAP_CAP);
    if (!h || !(kappa > 0.0) || !(r > 0.0)) {
        free(h);
        return INFINITY; /* no claim: an infinite segment capacity gives no bound */
    }
    int n = 0;
    cell c0;
    memset(&c0, 0, sizeof c0);
    if (kind == FL_PRODUCTS_FWD) c0.hi[0] = g.I / 2.0; /* a */
    else c0.hi[0] = g.I, c0.hi[1] = 1.0, c0.hi[2] = g.I; /* D, sigma, nu */
    c0.U = cell_value(kind, &g, c0.lo, c0.hi, 1);
    heap_push(h, &n, &c0);
    double L = 0.0, pruned = 0.0, result;
    for (;;) {
        if (!n) {
            result = pruned;
            break;
        }
        const cell c = heap_pop(h, &n);
        if (c.U <= L * (1.0 + BB_TOL) || n + 2 > HEAP_CAP) {
            result = c.U > pruned ? c.U : pruned;
            break;
        }
        int ax = 0; /* the widest side, relative to the whole box */
        for (int i = 1; i < dim; i++)
            if ((c.hi[i] - c.lo[i]) / c0.hi[i] > (c.hi[ax] - c.lo[ax]) / c0.hi[ax]) ax = i;
        const double mid = 0.5 * (c.lo[ax] + c.hi[ax]);
        for (int side = 0; side < 2; side++) {
            cell d = c;
            if (side) d.lo[ax] = mid;
            else d.hi[ax] = mid;
            if ((d.U = cell_value(kind, &g, d.lo, d.hi, 1)) < 0.0) continue;
            const double v = cell_value(kind, &g, d.lo, d.lo, 0); /* the lower corner is feasible */
            if (v > L) L = v;
            if (d.U > L * (1.0 + BB_TOL)) heap_push(h, &n, &d);
            else if (d.U > pruned) pruned = d.U;
        }
    }
    free(h);
    return result * (1.0 + 1e-9); /* rounding of the double arithmetic, upward */
}

/* A value the program takes at (kappa, r): the largest at a few feasible points (the shapes of
 * the optimum far below and far above M = d^2).  Never above the maximum; cheap. */
static double program_value(fl_products kind, double kappa, double r)
{
    const prog g = {kappa, 1.0 + r, 2.0 + r};
    double best = 0.0, x[3] = {0.0, 0.0, 0.0};
    for (int i = 1; i <= 10; i++)
        for (int k = 0; k <= (kind == FL_PRODUCTS_FWD ? 0 : 4); k++) {
            if (kind == FL_PRODUCTS_FWD) x[0] = g.I / 2.0 * i / 10.0;
            else x[0] = g.I * i / 10.0, x[1] = 0.0, x[2] = (g.I - x[0]) * k / 4.0;
            const double v = cell_value(kind, &g, x, x, 0);
            if (v > best) best = v;
        }
    return best;
}

long double fl_segment_products_taken(fl_products kind, int64_t d, int64_t M, int j)
{
    const long double kappa = (long double)d * (long double)d / (long double)M;
    return (long double)M * sqrtl((long double)M) * program_value(kind, (double)kappa, fl_segment_r(j)) * (1.0L - 1e-9L);
}

/* ---- the cache: phi on the grid kappa_k = 2^(k / 16), r_j = 2^(j / 2) ---- */

enum { KGRID = 16, KOCT = 48, NK = 2 * KGRID * KOCT + 1 };

static _Thread_local double phi_cache[2][NK][FL_SEGMENT_NR];

double fl_segment_r(int j) { return exp2((double)(j + FL_SEGMENT_JMIN) / 2.0); }

static double phi_grid(fl_products kind, int k, int j)
{
    double *v = &phi_cache[kind][k + KGRID * KOCT][j];
    if (*v == 0.0) *v = fl_segment_program(kind, exp2l((long double)k / KGRID), fl_segment_r(j));
    return *v;
}

long double fl_segment_products(fl_products kind, int64_t d, int64_t M, int j)
{
    const long double kappa = (long double)d * (long double)d / (long double)M, M32 = (long double)M * sqrtl((long double)M);
    long double lk = floorl(log2l(kappa) * KGRID);
    if (lk < -KGRID * KOCT) lk = -KGRID * KOCT;
    if (lk > KGRID * KOCT - 1) lk = KGRID * KOCT - 1;
    int k = (int)lk;
    if (k > -KGRID * KOCT && exp2l((long double)k / KGRID) > kappa) k--; /* kappa_k <= kappa */
    const long double kk = exp2l((long double)k / KGRID), k1 = exp2l((long double)(k + 1) / KGRID);
    /* (MON): phi falls as kappa grows; phi sqrt(kappa) does not */
    long double best = INFINITY;
    if (kk <= kappa) best = phi_grid(kind, k, j);
    if (k1 >= kappa && kk != kappa) {
        const long double v = phi_grid(kind, k + 1, j) * sqrtl(k1 / kappa);
        if (v < best) best = v;
    }
    return M32 * best;
}
