/* dispatch.c: the problem-level functions of schedule.h, each through the problem's descriptor:
 * names, the check of what a schedule accepts, footprints, blocks and closed forms. */
#include <stdio.h>
#include <string.h>

#include <flashlab/blocksparse_mask.h>
#include <flashlab/decode.h>
#include <flashlab/schedule.h>

static const fl_schedule *sched(fl_algo a) { return fl_schedule_get(a); }

const char *fl_algo_name(fl_algo a)
{
    const fl_schedule *s = sched(a);
    return s ? s->name : NULL;
}

const char *fl_algo_choices(void)
{
    static _Thread_local char buf[1024];
    const int n = fl_schedule_count();
    size_t len = 0;
    buf[0] = 0;
    for (int a = 0; a < n && len < sizeof buf; a++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", a == 0 ? "" : a == n - 1 ? " or " : ", ",
                                sched((fl_algo)a)->name);
    return buf;
}

fl_status fl_algo_parse(const char *name, fl_algo *out)
{
    if (fl_schedule_find(name, out)) return FL_OK;
    return fl_fail(FL_EINVAL, "{algo}: unknown schedule '%s' (choose %s)", fl_shown(name ? name : ""),
                   fl_algo_choices());
}

int64_t fl_problem_group(const fl_problem *p)
{
    const fl_schedule *s = sched(p->algo);
    return s && (s->flags & FL_SCHED_STACKS_GROUP) ? fl_problem_group_ratio(p) : 1;
}

/* "decode" or "a, b or c": the schedules that accept `what`, for a refusal's message. */
static const char *accepting(unsigned what, char *buf, size_t cap)
{
    int n = 0, k = 0;
    for (int a = 0; a < fl_schedule_count(); a++) n += (sched((fl_algo)a)->accepts & what) != 0;
    size_t len = 0;
    buf[0] = 0;
    for (int a = 0; a < fl_schedule_count() && len < cap; a++) {
        if (!(sched((fl_algo)a)->accepts & what)) continue;
        k++;
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", k == 1 ? "" : k == n ? " or " : ", ",
                                sched((fl_algo)a)->name);
    }
    return buf;
}

/* The variants of docs/model.md §14 that s does not accept, each refused naming its quantity
 * and the schedules that take it. */
static fl_status check_variants(const fl_schedule *s, const fl_problem *p)
{
    static const struct { unsigned flag; const char *what; } v[] = {
        {FL_ACCEPT_DV, "{d_v}: %s runs one head dimension for Q, K and V (d_v = d); d_v != d is taken by %s"},
        {FL_ACCEPT_SINKS, "{sinks}: %s has no sink logits; sinks are taken by %s"},
        {FL_ACCEPT_SCORE_MODS, "{softcap}/{alibi}: %s does not cap or bias its scores; softcap and ALiBi are taken by %s"},
        {FL_ACCEPT_DROPOUT, "{dropout}: %s has no dropout; dropout is taken by %s"},
        {FL_ACCEPT_FP8, "{dtype}: %s has no fp8 path with scale factors; fp8 is taken by %s"},
        {FL_ACCEPT_DETERMINISTIC, "{deterministic}: %s has no fixed-order backward; it is taken by %s"}};
    const int asks[] = {p->d_v != 0 && p->d_v != p->d, p->sinks != 0, p->softcap != 0.0 || p->alibi != 0,
                        p->dropout != 0.0, p->elem_bytes == 1, p->deterministic != 0};
    char who[256];
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++)
        if (asks[k] && !(s->accepts & v[k].flag))
            return fl_fail(FL_EINVAL, v[k].what, s->name, accepting(v[k].flag, who, sizeof who));
    return FL_OK;
}

/* Refuses the fields p sets away from their defaults that its schedule s does not accept. */
static fl_status check_accepts(const fl_schedule *s, const fl_problem *p)
{
    char who[256];
    if (!(s->accepts & FL_ACCEPT_KV_CACHE) && fl_problem_asks_kv_cache(p))
        return fl_fail(FL_EINVAL, "{page_size}/{pool_pages}/{page_seed}/{block_table}/{splits}/{pad}: "
                                  "only the %s schedule reads a KV cache (got {algo} %s)",
                       accepting(FL_ACCEPT_KV_CACHE, who, sizeof who), s->name);
    if (!(s->accepts & FL_ACCEPT_BLOCK_MASK) && fl_problem_asks_block_mask(p))
        return fl_fail(FL_EINVAL, "{density}/{mask_seed}: only the %s schedule has a "
                                  "block mask (got {algo} %s)",
                       accepting(FL_ACCEPT_BLOCK_MASK, who, sizeof who), s->name);
    if (!(s->accepts & FL_ACCEPT_HEADS) && (p->batch != 1 || p->heads != 1 || (p->kv_heads != 0 && p->kv_heads != 1)))
        return fl_fail(FL_EINVAL, "{batch}/{heads}/{kv_heads}: %s runs one head", s->name);
    if (!(s->accepts & FL_ACCEPT_BWD) && p->pass != FL_PASS_FWD)
        return fl_fail(FL_EINVAL, "{pass}: %s is forward only", s->name);
    if (!(s->accepts & FL_ACCEPT_VARLEN) && (p->cu_seqlens_q || p->cu_seqlens_k))
        return fl_fail(FL_EINVAL, "{cu_seqlens_q}/{cu_seqlens_k}: %s runs one sequence", s->name);
    return check_variants(s, p);
}

/* The mask and key-length fields, after the schedule's own rules (decode checks its mask with
 * its cache). */
static fl_status check_accepts_late(const fl_schedule *s, const fl_problem *p)
{
    if (!(s->accepts & FL_ACCEPT_MASK) && (p->causal != FL_CAUSAL_NONE || p->window_left != -1 || p->window_right != -1))
        return fl_fail(FL_EINVAL, "{causal}/{window}: %s takes no causal or window mask", s->name);
    if (!(s->accepts & FL_ACCEPT_NK) && p->Nk && p->Nk != p->N)
        return fl_fail(FL_EINVAL, "{Nk}: %s attends N queries to N keys (Nk = N)", s->name);
    return FL_OK;
}

fl_status fl_problem_check(const fl_problem *p)
{
    const fl_schedule *s = sched(p->algo);
    if (!s) return fl_fail(FL_EINVAL, "{algo}: unknown schedule");
    FL_TRY(fl_problem_check_fields(p));
    if (p->kv_cache) FL_TRY(fl_kv_cache_check(p->kv_cache)); /* the extensions' own rules */
    if (p->block_mask) FL_TRY(fl_block_sparsity_check(p->block_mask));
    FL_TRY(check_accepts(s, p));
    if (s->check) FL_TRY(s->check(p));
    return check_accepts_late(s, p);
}

int64_t fl_footprint_of(const fl_problem *p, int bwd, int64_t G, int64_t Br, int64_t Bc, int64_t Bd)
{
    const fl_schedule *s = sched(p->algo);
    return s && s->footprint ? s->footprint(p, bwd, G, Br, Bc, Bd) : -1;
}

int64_t fl_footprint_pass(fl_algo a, int bwd, int64_t G, int64_t d, int64_t Br, int64_t Bc, int64_t Bd)
{
    fl_problem q = fl_problem_default();
    q.algo = a;
    q.d = d;
    return fl_footprint_of(&q, bwd, G, Br, Bc, Bd);
}

int64_t fl_footprint(fl_algo a, int64_t d, int64_t Br, int64_t Bc, int64_t Bd)
{
    return fl_footprint_pass(a, 0, 1, d, Br, Bc, Bd);
}

fl_status fl_blocks_choose_pass(const fl_problem *p, int bwd, fl_blocks *b)
{
    FL_TRY(fl_problem_check(p));
    memset(b, 0, sizeof *b);
    return sched(p->algo)->blocks(p, bwd, b);
}

fl_status fl_blocks_choose(const fl_problem *p, fl_blocks *b)
{
    return fl_blocks_choose_pass(p, 0, b);
}

fl_status fl_closed_form_pass(const fl_problem *p, int bwd, const fl_blocks *b, fl_counts *out)
{
    return sched(p->algo)->closed_form(p, bwd, b, out);
}

fl_status fl_closed_form(const fl_problem *p, const fl_blocks *b, fl_counts *out)
{
    fl_counts f = {0}, g = {0};
    if (p->pass & FL_PASS_FWD) FL_TRY(fl_closed_form_pass(p, 0, b, &f));
    if (p->pass & FL_PASS_BWD) {
        fl_blocks bb;
        FL_TRY(fl_blocks_choose_pass(p, 1, &bb));
        FL_TRY(fl_closed_form_pass(p, 1, &bb, &g));
    }
    int64_t t;
    fl_counts r;
    if (!fl_add_ok(f.reads, g.reads, &r.reads) || !fl_add_ok(f.writes, g.writes, &r.writes) ||
        !fl_add_ok(r.reads, r.writes, &t) || !fl_add_ok(f.events, g.events, &r.events))
        return fl_fail(FL_EOVERFLOW, "{N}/{d}: counts would overflow 64-bit arithmetic");
    r.total = t;
    r.sram_peak = fl_max64(f.sram_peak, g.sram_peak);
    *out = r;
    return FL_OK;
}
