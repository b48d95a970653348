/* optimize.c: the exact tiling search (see optimize.h; the family and lemmas O1-O4 are in
 * docs/model.md §7). */
#include <flashlab/optimize.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <flashlab/masks.h>
#include <flashlab/schedule.h>

/* A candidate: a schedule with its blocks per pass (0 = the pass is not run) and its closed-form
 * counts. */
typedef struct {
    fl_algo algo;
    int64_t Br, Bc, Bd, Br_b, Bc_b, Bd_b;
    int64_t fwd, bwd, total, events;
} cand;

#define NALGO_MAX FL_ALGO_MAX

typedef struct {
    const fl_problem *p;
    int64_t nq, nk;   /* the longest sequence's lengths: blocks beyond them change nothing */
    int64_t ratio;    /* query heads per K/V head: G of a schedule that stacks a group */
    int64_t nseq;     /* sequences a closed form walks */
    int plain;        /* one dense head, no varlen: forward closed forms are O(1) */
    int dense;        /* no causal mask and no window */
    int64_t work, max_work, evaluated, pruned;
    int64_t limit, cmp_events; /* --max-work, and what the compared schedules take of it */
    cand best[NALGO_MAX][2]; /* per schedule and pass (0 forward, 1 backward): the least count */
    int have[NALGO_MAX][2];
    cand *top;        /* the `ntop` best candidates of a single pass: top_insert's heap, then
                       * ascending (top_sort); `cap` allocated, K wanted */
    int ntop, cap, K;
    int64_t incumbent[2]; /* the least count of each pass so far (lemma O4's pruning), -1 = none */
} ctx;

static int better(const cand *a, const cand *b)
{
    if (a->total != b->total) return a->total < b->total;
    if (a->events != b->events) return a->events < b->events;
    if (a->algo != b->algo) return a->algo < b->algo;
    if (a->Br + a->Br_b != b->Br + b->Br_b) return a->Br + a->Br_b > b->Br + b->Br_b;
    return a->Bc + a->Bc_b > b->Bc + b->Bc_b;
}

/* Keeps k if it is among the best K seen: c->top is a heap of at most K candidates whose root,
 * c->top[0], is the worst kept (sorted ascending by top_sort once the search ends).  The
 * search's candidates are distinct (every (schedule, blocks) is evaluated once, and `better`
 * orders distinct candidates totally), so the kept set is the K best, as a sorted list's would
 * be.  A step of work an entry compared: a rejection 1, a kept candidate about log2 K (with a
 * large --top a sorted list's scan and shifts, not the closed forms, were the search's cost). */
static fl_status top_insert(ctx *c, const cand *k)
{
    int i;
    if (c->ntop == c->K) { /* full: replace the worst and sift it down */
        c->work++;
        if (!better(k, &c->top[0])) return FL_OK;
        i = 0;
        for (;;) { /* w: the worse child; it rises while k is better */
            const int l = 2 * i + 1, r = l + 1;
            if (l >= c->ntop) break;
            const int w = r < c->ntop && better(&c->top[l], &c->top[r]) ? r : l;
            c->work++;
            if (!better(k, &c->top[w])) break;
            c->top[i] = c->top[w], i = w;
        }
        c->top[i] = *k;
        return FL_OK;
    }
    if (c->ntop == c->cap) { /* grow towards K: a --top far past the candidates costs nothing */
        const int cap = c->cap ? (c->cap > c->K / 2 ? c->K : 2 * c->cap) : (c->K < 64 ? c->K : 64);
        cand *t = realloc(c->top, (size_t)cap * sizeof *t);
        if (!t) return fl_fail(FL_ENOMEM, "optimize: out of memory keeping the %d best candidates", c->K);
        c->top = t, c->cap = cap;
    }
    for (i = c->ntop++; i > 0 && better(&c->top[(i - 1) / 2], k); i = (i - 1) / 2) { /* sift up */
        c->top[i] = c->top[(i - 1) / 2];
        c->work++;
    }
    c->top[i] = *k;
    c->work++;
    return FL_OK;
}

static int top_order(const void *a, const void *b)
{
    return better(a, b) ? -1 : better(b, a) ? 1 : 0;
}

/* The kept candidates, best first. */
static void top_sort(ctx *c)
{
    if (c->ntop > 1) qsort(c->top, (size_t)c->ntop, sizeof *c->top, top_order);
}

static int64_t group_of(const ctx *c, fl_algo a)
{
    return fl_schedule_get(a)->flags & FL_SCHED_STACKS_GROUP ? c->ratio : 1;
}

static int64_t footprint(const ctx *c, fl_algo a, int bwd, int64_t Br, int64_t Bc, int64_t Bd)
{
    fl_problem q = *c->p;
    q.algo = a;
    return fl_footprint_of(&q, bwd, group_of(c, a), Br, Bc, Bd);
}

/* The widest chunk a schedule that chunks the head dimensions takes: max(d, d_v) (rule D1). */
static int64_t dmax(const ctx *c) { return fl_max64(c->p->d, fl_problem_dv(c->p)); }

/* Whether the schedule's footprint depends on a chunk Bd of the head dimensions. */
static int chunked(const ctx *c, fl_algo a, int bwd)
{
    return footprint(c, a, bwd, 1, 1, 1) != footprint(c, a, bwd, 1, 1, fl_max64(2, dmax(c)));
}

static int fits(const ctx *c, fl_algo a, int bwd, int64_t Br, int64_t Bc, int64_t Bd)
{
    const int64_t f = footprint(c, a, bwd, Br, Bc, Bd);
    return f >= 0 && f <= c->p->M;
}

/* Largest x in [1, hi] with the pair (x, other) (rows) or (other, x) fitting with chunk Bd; 0 if
 * none.  Footprints grow with every block, so fitting is monotone. */
static int64_t largest(const ctx *c, fl_algo a, int bwd, int rows, int64_t other, int64_t Bd, int64_t hi)
{
    int64_t lo = 0;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo + 1) / 2;
        if (rows ? fits(c, a, bwd, mid, other, Bd) : fits(c, a, bwd, other, mid, Bd)) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* The blocks of (Br, Bc): Bd the largest chunk that fits (what `count --Br --Bc` chooses). */
static void blocks_of(const ctx *c, fl_algo a, int bwd, int64_t Br, int64_t Bc, fl_blocks *b)
{
    memset(b, 0, sizeof *b);
    b->Br = Br, b->Bc = Bc, b->overridden = 1;
    if (chunked(c, a, bwd)) {
        int64_t lo = 1, hi = dmax(c);
        while (lo < hi) {
            const int64_t mid = lo + (hi - lo + 1) / 2;
            if (fits(c, a, bwd, Br, Bc, mid)) lo = mid;
            else hi = mid - 1;
        }
        b->Bd = lo;
    } else {
        b->Bd = c->p->d;
    }
    b->footprint = footprint(c, a, bwd, Br, Bc, b->Bd);
}

static fl_status over_work(const ctx *c)
{
    char rest[128] = "";
    if (c->cmp_events)
        snprintf(rest, sizeof rest, " (the limit %lld less the compared schedules' %lld tile events)",
                 (long long)c->limit, (long long)c->cmp_events);
    return fl_fail(FL_EINVAL,
                   "{max_work}: the search takes more than %lld steps (block terms of closed forms, and keeping "
                   "its {top} best)%s at N = %lld, d = %lld, M = %lld; raise {max_work} (about 1e8 steps a second "
                   "here) or shrink the problem",
                   (long long)c->max_work, rest, (long long)c->p->N, (long long)c->p->d, (long long)c->p->M);
}

/* Block terms the closed form of schedule a's pass with blocks (Br, Bc) walks, at most: one for
 * the plain forward of one dense head; per sequence (twice: a first and a later query head of a
 * K/V head), the schedule's closed_form_terms (schedule.h). */
static int64_t cost_of(const ctx *c, fl_algo a, int bwd, int64_t Br, int64_t Bc)
{
    const fl_schedule *s = fl_schedule_get(a);
    const int64_t per = 2 * c->nseq;
    if (c->plain && !bwd) return 1;
    return s->closed_form_terms ? per * s->closed_form_terms(bwd, c->dense, c->nq, c->nk, Br, Bc) : per;
}

/* The problem of one pass of candidate schedule a with blocks (Br, Bc): p's fields, that pass
 * alone; a fixed-order dQ (deterministic) belongs to the backward, so the forward drops it. */
static fl_problem pass_problem(const fl_problem *p, fl_algo a, int bwd, int64_t Br, int64_t Bc)
{
    fl_problem q = *p;
    q.algo = a;
    q.Br = Br, q.Bc = Bc;
    q.pass = bwd ? FL_PASS_BWD : FL_PASS_FWD;
    if (!bwd) q.deterministic = 0;
    return q;
}

/* The closed form of schedule a's pass with blocks (Br, Bc) (which must fit) as a candidate. */
static fl_status eval(ctx *c, fl_algo a, int bwd, int64_t Br, int64_t Bc, cand *k)
{
    fl_problem q = pass_problem(c->p, a, bwd, Br, Bc);
    fl_blocks b;
    fl_counts n;
    blocks_of(c, a, bwd, Br, Bc, &b);
    c->work += cost_of(c, a, bwd, Br, Bc);
    if (c->work > c->max_work) return over_work(c);
    FL_TRY(fl_closed_form_pass(&q, bwd, &b, &n));
    c->evaluated++;
    memset(k, 0, sizeof *k);
    k->algo = a;
    if (bwd) k->Br_b = Br, k->Bc_b = Bc, k->Bd_b = b.Bd, k->bwd = n.total;
    else k->Br = Br, k->Bc = Bc, k->Bd = b.Bd, k->fwd = n.total;
    k->total = n.total;
    k->events = n.events;
    return FL_OK;
}

/* Records a single-pass candidate: the schedule's best for the pass, the top list (when the
 * problem runs that pass alone) and the pass's incumbent. */
static fl_status consider(ctx *c, int slot, int bwd, const cand *k)
{
    if (!c->have[slot][bwd] || better(k, &c->best[slot][bwd])) c->best[slot][bwd] = *k, c->have[slot][bwd] = 1;
    if (c->incumbent[bwd] < 0 || k->total < c->incumbent[bwd]) c->incumbent[bwd] = k->total;
    return c->p->pass != FL_PASS_FWD_BWD ? top_insert(c, k) : FL_OK;
}

/* Lemmas O1 and O2 (docs/model.md §7): one block only adds to the count -- Br for a schedule
 * searched FL_SEARCH_ROWS_FREE (flash1, every backward: rows_j grows with Br, nothing else
 * depends on it), Bc for FL_SEARCH_COLS_FREE (the forward of flash2 and flash2-gqa: cols_i grows
 * with Bc) -- so for each value x of the other block the least count is at that block = 1.  Larger values of the free block can only lower the tile events: the
 * largest that fits and its halvings are tried, and one with the same count is kept. */
static fl_status search_one_free(ctx *c, int slot, fl_algo a, int bwd, int rows_free)
{
    const int64_t hi = rows_free ? c->nk : c->nq, hi_free = rows_free ? c->nq : c->nk, d = c->p->d;
    for (int64_t x = 1; x <= hi; x++) {
        if (rows_free ? !fits(c, a, bwd, 1, x, d) : !fits(c, a, bwd, x, 1, d)) break;
        cand k = {0}, t = {0};
        FL_TRY(eval(c, a, bwd, rows_free ? 1 : x, rows_free ? x : 1, &k));
        FL_TRY(consider(c, slot, bwd, &k));
        for (int64_t y = largest(c, a, bwd, rows_free, x, d, hi_free); y > 1; y /= 2) {
            FL_TRY(eval(c, a, bwd, rows_free ? y : x, rows_free ? x : y, &t));
            if (t.total == k.total) {
                FL_TRY(consider(c, slot, bwd, &t));
                break;
            }
        }
    }
    return FL_OK;
}

/* Lemma O3: the count of a schedule searched FL_SEARCH_FRONTIER (standard) falls as Br, Bc or Bd
 * grows (Tr, Tc, Td shrink), so a least pair
 * lies on the frontier where Bc is the largest that fits with Br and a chunk of at least
 * ceil(d / t) for some chunk count t: every Br and every chunk of chunk_values. */
static fl_status search_frontier(ctx *c, int slot, fl_algo a, int bwd, const int64_t *chunks, int64_t nchunks)
{
    for (int64_t Br = 1; Br <= c->nq; Br++) {
        if (!fits(c, a, bwd, Br, 1, 1)) break;
        int64_t prev = -1;
        for (int64_t t = 0; t < nchunks; t++) {
            const int64_t Bc = largest(c, a, bwd, 0, Br, chunks[t], c->nk);
            if (Bc < 1 || Bc == prev) continue;
            prev = Bc;
            cand k = {0};
            FL_TRY(eval(c, a, bwd, Br, Bc, &k));
            FL_TRY(consider(c, slot, bwd, &k));
        }
    }
    return FL_OK;
}

/* The query-key matrices of the problem (one per sequence) and how many query heads meet each. */
typedef struct {
    fl_mask *mk;
    int64_t *times;
    int64_t n;
} shapes;

static fl_status shapes_of(const fl_problem *p, shapes *s)
{
    const int64_t Nk = p->Nk ? p->Nk : p->N, n = p->cu_seqlens_q ? p->batch : 1;
    s->n = 0;
    s->mk = malloc((size_t)n * sizeof *s->mk);
    s->times = malloc((size_t)n * sizeof *s->times);
    if (!s->mk || !s->times) return fl_fail(FL_ENOMEM, "optimize: out of memory for %lld sequences", (long long)n);
    if (!p->cu_seqlens_q) {
        FL_TRY(fl_mask_init(&s->mk[0], p->N, Nk, p->causal, p->window_left, p->window_right));
        s->times[0] = p->batch * p->heads, s->n = 1;
        return FL_OK;
    }
    const int64_t *cq = p->cu_seqlens_q, *ck = p->cu_seqlens_k ? p->cu_seqlens_k : cq;
    for (int64_t b = 0; b < p->batch; b++) {
        const int64_t nq = cq[b + 1] - cq[b], nk = ck[b + 1] - ck[b];
        if (nq < 1) continue;
        FL_TRY(fl_mask_init(&s->mk[s->n], nq, nk, p->causal, p->window_left, p->window_right));
        s->times[s->n++] = p->heads;
    }
    return FL_OK;
}

/* Lemma O4's bound on the count of schedule a's pass for blocks Br and any Bc <= cmax: its
 * count_floor over every sequence shape, times the query heads that meet it. */
static double count_floor(ctx *c, fl_algo a, int bwd, const shapes *s, int64_t Br, int64_t cmax)
{
    double total = 0.0;
    for (int64_t k = 0; k < s->n; k++)
        total += fl_schedule_get(a)->count_floor(bwd, c->p, &s->mk[k], Br, cmax) * (double)s->times[k];
    c->work += s->n * (fl_cdiv(c->nq, Br) + (bwd ? c->nk : 0));
    return total;
}

/* The count a pass of schedule `slot` must go under to matter (lemma O4's incumbent), -1 for
 * none: alone, the least count of the pass so far (any schedule's); with both passes, where a
 * candidate is one schedule's two passes, the least total so far less what this schedule's
 * forward takes at least (its least, once searched; the backward comes second). */
static int64_t incumbent(const ctx *c, int slot, int bwd)
{
    if (c->p->pass != FL_PASS_FWD_BWD) return c->incumbent[bwd];
    if (!c->ntop) return -1;
    return bwd && c->have[slot][0] ? c->top[0].total - c->best[slot][0].total : c->top[0].total;
}

/* Lemma O4: branch and bound over a pass's pairs against incumbent(). */
static fl_status search_bound(ctx *c, int slot, fl_algo a, int bwd)
{
    shapes s;
    fl_status st = shapes_of(c->p, &s);
#define INCUMBENT incumbent(c, slot, bwd)
    for (int64_t Br = 1; !st && Br <= c->nq; Br++) {
        const int64_t cmax = largest(c, a, bwd, 0, Br, 1, c->nk);
        if (cmax < 1) break;
        if (INCUMBENT >= 0 && count_floor(c, a, bwd, &s, Br, cmax) >= (double)INCUMBENT) {
            c->pruned += cmax;
            continue;
        }
        for (int64_t Bc = cmax; !st && Bc >= 1; Bc--) {
            if (INCUMBENT >= 0 && Bc < cmax && count_floor(c, a, bwd, &s, Br, Bc) >= (double)INCUMBENT) {
                c->pruned += Bc;
                break;
            }
            cand k = {0};
            if (!(st = eval(c, a, bwd, Br, Bc, &k))) st = consider(c, slot, bwd, &k);
        }
        if (!st && c->work > c->max_work) st = over_work(c);
    }
#undef INCUMBENT
    free(s.mk);
    free(s.times);
    return st;
}

/* Executes candidate k (each pass it has, with its blocks) and checks it against its closed form. */
static fl_status simulate(const ctx *c, const cand *k, fl_opt_choice *o)
{
    memset(o, 0, sizeof *o);
    o->algo = k->algo;
    for (int bwd = 0; bwd < 2; bwd++) {
        const int64_t Br = bwd ? k->Br_b : k->Br, Bc = bwd ? k->Bc_b : k->Bc, Bd = bwd ? k->Bd_b : k->Bd;
        if (!Br) continue;
        fl_problem q = pass_problem(c->p, k->algo, bwd, Br, Bc);
        fl_result r;
        FL_TRY(fl_run(&q, FL_COUNT, NULL, NULL, &r));
        const int64_t want = bwd ? k->bwd : k->fwd;
        const fl_blocks *rb = bwd ? &r.b_bwd : &r.b;
        if (r.total != want || r.closed.total != want || rb->Bd != Bd)
            return fl_fail(FL_EBOUNDS, "optimize: %s {pass} %s {Br} %lld {Bc} %lld counted %lld (Bd %lld), the search's "
                                       "closed form says %lld (Bd %lld)",
                           fl_algo_name(k->algo), bwd ? "bwd" : "fwd", (long long)Br, (long long)Bc,
                           (long long)r.total, (long long)rb->Bd, (long long)want, (long long)Bd);
        if (bwd) o->Br_bwd = Br, o->Bc_bwd = Bc, o->Bd_bwd = Bd, o->bwd_total = r.total;
        else o->Br = Br, o->Bc = Bc, o->Bd = Bd, o->fwd_total = r.total;
        o->events += r.events;
        o->sram_peak = fl_max64(o->sram_peak, r.sram_peak);
    }
    o->total = o->fwd_total + o->bwd_total;
    return FL_OK;
}

static int choice_better(const fl_opt_choice *a, const fl_opt_choice *b)
{
    return a->total < b->total || (a->total == b->total && a->events < b->events);
}

fl_status fl_optimize_check(const fl_problem *p)
{
    if (fl_problem_asks_kv_cache(p))
        return fl_fail(FL_EINVAL, "{page_size}/{pool_pages}/{page_seed}/{block_table}/{splits}/{pad}: a KV cache is "
                                  "the decode schedule's problem; optimize searches the attention schedules");
    if (fl_problem_asks_block_mask(p))
        return fl_fail(FL_EINVAL, "{density}/{mask_seed}: a block mask is the blocksparse schedule's problem; "
                                  "optimize searches the attention schedules");
    return FL_OK;
}

/* sum over x = 1..xmax of ceil(n / x), at most n (ln xmax + 1) + xmax */
static double harmonic(double n, double xmax) { return xmax < 1.0 ? 0.0 : n * (log(xmax) + 1.0) + xmax; }

/* The chunk sizes lemma O3 walks: a superset of every ceil(d / t), t >= 1: ceil(d / t) for
 * t <= T = ceil(sqrt(d)), and 1 .. ceil(d / T) (every value at most that).  Descending, distinct;
 * returns their number (at most 2 sqrt(d) + 2). */
static int64_t chunk_values(int64_t d, int64_t *v, int64_t cap)
{
    int64_t T = (int64_t)ceil(sqrt((double)d)), n = 0;
    while (T * T < d) T++;
    for (int64_t t = 1; t <= T && n < cap; t++) {
        const int64_t x = fl_cdiv(d, t);
        if (!n || x < v[n - 1]) v[n++] = x;
    }
    for (int64_t x = fl_cdiv(d, T) - 1; x >= 1 && n < cap; x--) v[n++] = x;
    return n;
}

/* The n1 + n2 chunk sizes at v (two runs, each descending) as one descending run without
 * repeats, in place; returns its length. */
static int64_t merge_chunks(int64_t *v, int64_t n1, int64_t n2)
{
    int64_t n = n1 + n2, m = 0;
    for (int64_t i = 1; i < n; i++) /* insertion sort, descending: n is O(sqrt(d)) */
        for (int64_t j = i; j > 0 && v[j - 1] < v[j]; j--) {
            const int64_t t = v[j];
            v[j] = v[j - 1], v[j - 1] = t;
        }
    for (int64_t i = 0; i < n; i++)
        if (!m || v[i] != v[m - 1]) v[m++] = v[i];
    return m;
}

/* An up-front estimate of the block terms of lemmas O1-O3 (O4's are counted as they go), from
 * the ranges the enumerations walk. */
static double estimate(const ctx *c, const fl_algo *algos, int nalgo, int fwd, int bwd, int64_t nchunks)
{
    const double per = c->plain ? 1.0 : 2.0 * (double)c->nseq;
    const double halvings = log2((double)fl_max64(c->nq, c->nk)) + 2.0;
    double e = 0.0;
    for (int i = 0; i < nalgo; i++)
        for (int pb = 0; pb < 2; pb++) {
            const fl_algo a = algos[i];
            if ((pb && !bwd) || (!pb && !fwd)) continue;
            switch (fl_schedule_get(a)->search[pb]) {
            case FL_SEARCH_FRONTIER:
                e += 2.0 * (double)c->nseq * (double)largest(c, a, pb, 1, 1, 1, c->nq) * (double)nchunks;
                break;
            case FL_SEARCH_ROWS_FREE:
                e += per * harmonic((double)c->nk, (double)largest(c, a, pb, 0, 1, c->p->d, c->nk)) * halvings;
                break;
            case FL_SEARCH_COLS_FREE:
                e += per * harmonic((double)c->nq, (double)largest(c, a, pb, 1, 1, c->p->d, c->nq)) * halvings;
                break;
            default: break;
            }
        }
    return e;
}

/* The family of problem p (docs/model.md §7): every schedule with a search for each pass p runs
 * (one that stacks a group only when p's query heads form groups), in registry order, those
 * searched by branch and bound last (they prune against the others' least count), less those
 * that refuse p (standard-skip and smallcache's backward take none of the variants).  Returns
 * their number. */
static int family_of(const fl_problem *p, int64_t ratio, fl_algo *algos)
{
    const int fwd = (p->pass & FL_PASS_FWD) != 0, bwd = (p->pass & FL_PASS_BWD) != 0;
    int n = 0;
    for (int last = 0; last < 2; last++)
        for (int a = 0; a < fl_schedule_count(); a++) {
            const fl_schedule *s = fl_schedule_get((fl_algo)a);
            if ((fwd && !s->search[0]) || (bwd && !s->search[1])) continue;
            if ((s->flags & FL_SCHED_STACKS_GROUP) && ratio <= 1) continue;
            fl_problem q = *p; /* one that refuses p (a variant its pass does not take) is left out */
            q.algo = (fl_algo)a;
            if (fl_problem_check(&q) != FL_OK) continue;
            const int bound = (fwd && s->search[0] == FL_SEARCH_BOUND) || (bwd && s->search[1] == FL_SEARCH_BOUND);
            if (bound == last) algos[n++] = (fl_algo)a;
        }
    return n;
}

/* The search's problem (the default schedule, the blocks to be searched) and its context, shared
 * by fl_optimize and fl_optimize_estimate.  *chunks is malloc'ed (free it). */
static fl_status prepare(const fl_problem *p, int64_t max_work, fl_problem *base, ctx *c, fl_algo *algos, int *nalgo,
                         int64_t **chunks, int64_t *nchunks)
{
    FL_TRY(fl_optimize_check(p));
    *base = *p;
    base->algo = fl_algo_with_role(FL_SCHED_DEFAULT), base->Br = base->Bc = 0;
    FL_TRY(fl_problem_check(base));
    memset(c, 0, sizeof *c);
    c->p = base;
    fl_problem_lengths(base, &c->nq, &c->nk);
    c->ratio = fl_problem_group_ratio(base);
    c->nseq = base->cu_seqlens_q ? base->batch : 1;
    c->plain = base->batch == 1 && base->heads == 1 && !base->cu_seqlens_q && (!base->Nk || base->Nk == base->N) &&
               base->causal == FL_CAUSAL_NONE && base->window_left == -1 && base->window_right == -1;
    c->dense = base->causal == FL_CAUSAL_NONE && base->window_left == -1 && base->window_right == -1;
    c->max_work = c->limit = max_work;
    c->incumbent[0] = c->incumbent[1] = -1;
    /* the family: the attention schedules the problem's passes allow */
    *nalgo = family_of(base, c->ratio, algos);
    /* the chunk sizes of lemma O3: at most T + ceil(D / T) of them per head dimension D (d, and
     * d_v when it differs: the least Bd giving chunk counts (Td, Tdv) is one of ceil(d / Td),
     * ceil(d_v / Tdv)), T = ceil(sqrt(D)) */
    const int64_t dv = fl_problem_dv(base), dd[2] = {base->d, dv};
    int64_t cap = 0;
    for (int k = 0; k < 1 + (dv != base->d); k++) {
        const int64_t T = (int64_t)ceil(sqrt((double)dd[k])) + 1;
        cap += T + fl_cdiv(dd[k], T) + 2;
    }
    *chunks = NULL, *nchunks = 0;
    if ((double)cap > (double)max_work) return over_work(c);
    if (!(*chunks = malloc((size_t)cap * sizeof **chunks))) return fl_fail(FL_ENOMEM, "optimize: out of memory");
    *nchunks = chunk_values(base->d, *chunks, cap);
    if (dv != base->d) *nchunks = merge_chunks(*chunks, *nchunks, chunk_values(dv, *chunks + *nchunks, cap - *nchunks));
    return FL_OK;
}

/* The tile events of the schedules compared, at their default rules (0 for one that refuses the
 * problem: it is not run; at least its events floor for one past budget); from the closed
 * forms, before any run. */
static int64_t compared_events(const fl_problem *base, int64_t budget)
{
    fl_algo cmp[FL_ALGO_MAX];
    const int n = fl_algos_with(FL_SCHED_COMPARED, cmp);
    int64_t sum = 0, ev;
    for (int i = 0; i < n && i < FL_OPT_MAX_COMPARED; i++) {
        fl_problem q = *base;
        q.algo = cmp[i], q.max_events = budget; /* past the budget: its events floor is enough */
        const fl_status s = fl_run_events(&q, &ev);
        if ((s == FL_OK || ev > budget) && !fl_add_ok(sum, ev, &sum)) sum = INT64_MAX;
    }
    return sum;
}

/* The refusal of a whole optimize past --max-work: the search's block terms, the executed
 * candidates' and the compared schedules' tile events (each about 1e-8 s here). */
static fl_status over_budget(const ctx *c, const char *what, double terms, int ncand, const char *at_least,
                             int64_t cand_events, int64_t cmp_events)
{
    const double steps = terms + (double)cand_events + (double)cmp_events;
    const int64_t s = steps >= 9.2e18 ? INT64_MAX : (int64_t)steps;
    char cands[96] = "";
    if (ncand == 1) snprintf(cands, sizeof cands, ", executes its best candidate (%s%lld tile events)", at_least,
                             (long long)cand_events);
    else if (ncand) snprintf(cands, sizeof cands, ", executes its %d best candidates (%s%lld tile events)", ncand,
                             at_least, (long long)cand_events);
    return fl_fail(FL_EINVAL,
                   "{max_work}: optimize at N = %lld, d = %lld, M = %lld %s %.3g block terms of closed forms%s and "
                   "runs the compared schedules at their default blocks (%lld tile events): %.3g steps in all (%s), "
                   "more than the limit %lld; raise {max_work}%s",
                   (long long)c->p->N, (long long)c->p->d, (long long)c->p->M, what, terms, cands,
                   (long long)cmp_events, steps, fl_seconds_of(s, FL_OPT_STEPS_PER_SECOND), (long long)c->limit,
                   ncand > 1 ? ", or lower {top}" : ", or shrink the problem");
}

fl_status fl_optimize_estimate(const fl_problem *p, int64_t *steps)
{
    fl_problem base;
    ctx c;
    fl_algo algos[NALGO_MAX];
    int nalgo;
    int64_t *chunks, nchunks;
    *steps = 0;
    fl_status s = prepare(p, INT64_MAX, &base, &c, algos, &nalgo, &chunks, &nchunks);
    if (!s) {
        const double e = estimate(&c, algos, nalgo, (base.pass & FL_PASS_FWD) != 0, (base.pass & FL_PASS_BWD) != 0,
                                  nchunks) + (double)compared_events(&base, INT64_MAX);
        *steps = e >= 9.2e18 ? INT64_MAX : (int64_t)e;
    }
    free(chunks);
    return s;
}

fl_status fl_optimize(const fl_problem *p, int top, int64_t max_work, fl_opt *out)
{
    if (top < 1) return fl_fail(FL_EINVAL, "{top}: must be >= 1 (got %d)", top);
    if (max_work < 1) return fl_fail(FL_EINVAL, "{max_work}: must be >= 1 (got %lld)", (long long)max_work);
    memset(out, 0, sizeof *out);
    fl_problem base;
    ctx c;
    fl_algo algos[NALGO_MAX];
    int nalgo;
    int64_t *chunks = NULL, nchunks = 0;
    fl_status s = prepare(p, max_work, &base, &c, algos, &nalgo, &chunks, &nchunks);
    if (!s) s = fl_lower_bound_of(&base, NULL, &out->lb);
    if (s) {
        free(chunks);
        return s;
    }
    out->nfamily = nalgo;
    memcpy(out->family, algos, (size_t)nalgo * sizeof *algos);
    const int fwd = (base.pass & FL_PASS_FWD) != 0, bwd = (base.pass & FL_PASS_BWD) != 0;
    /* up front: the search's estimate and the compared schedules' runs, in one budget */
    const int64_t cmp_events = compared_events(&base, max_work);
    const double est = estimate(&c, algos, nalgo, fwd, bwd, nchunks);
    /* every executed candidate moves at least the lower bound, at most M elements a tile event */
    const double least = (double)top * ceil((double)out->lb.bound / (double)base.M);
    if (est + least + (double)cmp_events > (double)max_work)
        s = over_budget(&c, "would walk about", est, top, "at least ", least >= 9.2e18 ? INT64_MAX : (int64_t)least,
                        cmp_events);
    c.K = top;
    /* the search may use what the compared schedules leave */
    c.max_work = max_work - cmp_events, c.cmp_events = cmp_events;
    for (int i = 0; i < nalgo && !s; i++) {
        const fl_algo a = algos[i];
        for (int pb = 0; pb < 2 && !s; pb++) {
            if ((pb && !bwd) || (!pb && !fwd)) continue;
            switch (fl_schedule_get(a)->search[pb]) {
            case FL_SEARCH_FRONTIER: s = search_frontier(&c, i, a, pb, chunks, nchunks); break;
            case FL_SEARCH_BOUND: s = search_bound(&c, i, a, pb); break;
            case FL_SEARCH_ROWS_FREE: s = search_one_free(&c, i, a, pb, 1); break;
            default: s = search_one_free(&c, i, a, pb, 0); break;
            }
        }
        if (!s && fwd && bwd && c.have[i][0] && c.have[i][1]) { /* both passes: the same schedule */
            cand k = c.best[i][0];
            const cand *b = &c.best[i][1];
            k.Br_b = b->Br_b, k.Bc_b = b->Bc_b, k.Bd_b = b->Bd_b, k.bwd = b->bwd;
            k.total += b->total, k.events += b->events;
            s = top_insert(&c, &k);
        }
    }
    out->evaluated = c.evaluated;
    out->pruned = c.pruned;
    out->work = c.work;
    top_sort(&c);
    if (!s && !c.ntop)
        s = fl_fail(FL_ECAPACITY, "{M}: no schedule of the family fits in M = %lld elements at d = %lld",
                    (long long)base.M, (long long)base.d);
    /* the candidates to execute: their events, known from their closed forms, within the budget */
    int64_t exec = 0;
    int nexec = 0;
    for (int i = 0; i < c.ntop && !s; i++)
        if (base.max_events <= 0 || c.top[i].events <= base.max_events) {
            nexec++;
            if (!fl_add_ok(exec, c.top[i].events, &exec)) exec = INT64_MAX;
        }
    if (!s && (double)c.work + (double)exec + (double)cmp_events > (double)max_work)
        s = over_budget(&c, "walks", (double)c.work, nexec, "", exec, cmp_events);
    for (int i = 0; i < c.ntop && !s; i++) {
        fl_opt_choice o;
        if (base.max_events > 0 && c.top[i].events > base.max_events) {
            if (i == 0)
                s = fl_fail(FL_EINVAL, "{max_events}: the least count, %s at M = %lld, makes %lld tile events, more "
                                       "than the limit %lld; raise {max_events}",
                            fl_algo_name(c.top[i].algo), (long long)base.M, (long long)c.top[i].events,
                            (long long)base.max_events);
            continue;
        }
        if (!(s = simulate(&c, &c.top[i], &o))) {
            out->simulated++;
            if (i == 0 || choice_better(&o, &out->best)) out->best = o;
        }
    }
    free(c.top);
    free(chunks);
    if (s) return s;
    /* the schedules compared, at their default rules, simulated */
    fl_algo cmp[FL_ALGO_MAX];
    out->ncompared = fl_algos_with(FL_SCHED_COMPARED, cmp);
    for (int i = 0; i < out->ncompared && i < FL_OPT_MAX_COMPARED; i++) {
        out->compared[i].algo = base.algo = cmp[i];
        base.max_events = 0; /* in the budget above */
        out->compared[i].have = fl_run(&base, FL_COUNT, NULL, NULL, &out->compared[i].r) == FL_OK;
    }
    if (out->ncompared > FL_OPT_MAX_COMPARED) out->ncompared = FL_OPT_MAX_COMPARED;
    out->steps = out->work + exec + cmp_events;
    return FL_OK;
}
