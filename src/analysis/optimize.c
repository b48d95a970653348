/* optimize.c: the IO-optimal tiling search (see optimize.h). */
#include <flashlab/optimize.h>

#include <stdlib.h>
#include <string.h>

typedef struct {
    fl_algo algo;
    int64_t Br, Bc;
    fl_counts predicted;
} cand;

/* Both passes the problem runs fit with blocks (Br, Bc) of schedule a. */
static int fits(const fl_problem *p, fl_algo a, int64_t Br, int64_t Bc)
{
    fl_problem q = *p;
    fl_blocks b;
    q.algo = a;
    q.Br = Br;
    q.Bc = Bc;
    if ((q.pass & FL_PASS_FWD) && fl_blocks_choose_pass(&q, 0, &b) != FL_OK) return 0;
    if ((q.pass & FL_PASS_BWD) && fl_blocks_choose_pass(&q, 1, &b) != FL_OK) return 0;
    return 1;
}

/* Largest x in [1, hi] with fits(Br = x, Bc = other) (or Bc = x when rows == 0); 0 if none.
 * Footprints grow with either block, so fitting is monotone. */
static int64_t largest(const fl_problem *p, fl_algo a, int rows, int64_t other, int64_t hi)
{
    int64_t lo = 0;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2 + (hi - lo) % 2;
        if (rows ? fits(p, a, mid, other) : fits(p, a, other, mid)) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

static int by_predicted(const void *x, const void *y)
{
    const cand *a = x, *b = y;
    if (a->predicted.total != b->predicted.total) return a->predicted.total < b->predicted.total ? -1 : 1;
    if (a->predicted.events != b->predicted.events) return a->predicted.events < b->predicted.events ? -1 : 1;
    if (a->algo != b->algo) return a->algo < b->algo ? -1 : 1;
    if (a->Br != b->Br) return a->Br < b->Br ? -1 : 1;
    return (a->Bc > b->Bc) - (a->Bc < b->Bc);
}

/* Adds candidate (a, Br, Bc) with its closed form, unless already present or not fitting. */
static fl_status add(const fl_problem *p, fl_algo a, int64_t Br, int64_t Bc, cand **v, int64_t *n,
                     int64_t *cap)
{
    if (Br < 1 || Bc < 1 || !fits(p, a, Br, Bc)) return FL_OK;
    for (int64_t i = 0; i < *n; i++)
        if ((*v)[i].algo == a && (*v)[i].Br == Br && (*v)[i].Bc == Bc) return FL_OK;
    if (*n == *cap) {
        cand *w = realloc(*v, (size_t)(*cap = *cap ? 2 * *cap : 64) * sizeof *w);
        if (!w) return fl_fail(FL_ENOMEM, "optimize: out of memory for candidates");
        *v = w;
    }
    fl_problem q = *p;
    fl_blocks b;
    q.algo = a;
    q.Br = Br;
    q.Bc = Bc;
    FL_TRY(fl_blocks_choose(&q, &b));
    cand *c = &(*v)[(*n)++];
    c->algo = a;
    c->Br = Br;
    c->Bc = Bc;
    return fl_closed_form(&q, &b, &c->predicted);
}

/* Executes (a, Br, Bc) (Br = Bc = 0: the default rule) and checks it against its closed form. */
static fl_status simulate(const fl_problem *p, fl_algo a, int64_t Br, int64_t Bc, fl_result *r)
{
    fl_problem q = *p;
    q.algo = a;
    q.Br = Br;
    q.Bc = Bc;
    FL_TRY(fl_run(&q, FL_COUNT, NULL, NULL, r));
    if (r->total != r->closed.total)
        return fl_fail(FL_EBOUNDS, "optimize: %s Br = %lld, Bc = %lld counted %lld, its closed form says %lld",
                       fl_algo_name(a), (long long)Br, (long long)Bc, (long long)r->total,
                       (long long)r->closed.total);
    return FL_OK;
}

static int better(const fl_result *a, const fl_result *b)
{
    return a->total < b->total || (a->total == b->total && a->events < b->events);
}

fl_status fl_optimize(const fl_problem *p, int top, fl_opt *out)
{
    if (top < 1) return fl_fail(FL_EINVAL, "--top: must be >= 1 (got %d)", top);
    FL_TRY(fl_problem_check(p));
    int64_t nq, nk;
    fl_problem_lengths(p, &nq, &nk);
    fl_algo algos[3] = {FL_ALGO_FLASH1, FL_ALGO_FLASH2, FL_ALGO_FLASH2_GQA};
    const int nalgo = fl_problem_group_ratio(p) > 1 ? 3 : 2;
    cand *v = NULL;
    int64_t n = 0, cap = 0;
    fl_status s = FL_OK;
    memset(out, 0, sizeof *out);

    for (int k = 0; k < nalgo && !s; k++) {
        const fl_algo a = algos[k];
        for (int64_t x = 1;; x = x > nq / 2 ? nq : 2 * x) { /* Br on the grid, Bc largest */
            if (!s) s = add(p, a, x, largest(p, a, 0, x, nk), &v, &n, &cap);
            if (x >= nq) break;
        }
        for (int64_t x = 1;; x = x > nk / 2 ? nk : 2 * x) { /* Bc on the grid, Br largest */
            if (!s) s = add(p, a, largest(p, a, 1, x, nq), x, &v, &n, &cap);
            if (x >= nk) break;
        }
    }
    /* the fixed schedules at their default rules: always executed */
    fl_result r;
    if (!s && simulate(p, FL_ALGO_FLASH1, 0, 0, &r) == FL_OK) out->flash1 = r, out->have_flash1 = 1;
    if (!s && simulate(p, FL_ALGO_FLASH2, 0, 0, &r) == FL_OK) out->flash2 = r, out->have_flash2 = 1;
    if (!s && !n && !out->have_flash1 && !out->have_flash2)
        s = fl_fail(FL_ECAPACITY, "--M: no tiled schedule fits in M = %lld elements at d = %lld",
                    (long long)p->M, (long long)p->d);
    if (s) {
        free(v);
        return s;
    }
    qsort(v, (size_t)n, sizeof *v, by_predicted);
    out->considered = n;
    int have = 0;
    if (out->have_flash1) out->best = out->flash1, have = 1;
    if (out->have_flash2 && (!have || better(&out->flash2, &out->best))) out->best = out->flash2, have = 1;
    out->simulated = out->have_flash1 + out->have_flash2;
    for (int64_t i = 0; i < n && i < top; i++) {
        if ((s = simulate(p, v[i].algo, v[i].Br, v[i].Bc, &r))) break;
        out->simulated++;
        if (!have || better(&r, &out->best)) out->best = r, have = 1;
    }
    free(v);
    return s;
}
