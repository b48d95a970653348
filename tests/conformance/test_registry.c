/* test_registry.c: the conformance suite, table-driven over the schedule registry
 * (include/flashlab/schedule.h).  Every registered schedule, including one added later, is run
 * here without editing this file: for a grid of problems built from the fields its descriptor
 * accepts, the machine's counts equal its closed form (reads, writes, events, SRAM peak), the
 * SRAM peak stays within M, the event floor it declares is a floor, the count is at least the
 * problem's proven lower bound (bounds.h), the compute run matches the reference to 1e-12, and
 * its descriptor is complete and consistent. */
#include <criterion/criterion.h>
#include <string.h>

#include "grid.h"
#include "quantity.h"
#include "bounds.h"
#include "optimize.h"
#include "schedule.h"

/* The variants of docs/model.md §14 on the base problem p, each with every field the schedule
 * accepts that it interacts with (masks with empty rows, heads and sequences sharing a sink's
 * gradient or a K/V head, varlen, the backward); a schedule that does not accept one refuses it
 * (a_field_the_schedule_does_not_accept_is_refused_naming_it).  Returns how many it wrote. */
static int variants_for(const fl_schedule *s, const fl_problem *base, fl_problem *out, int cap)
{
    static const int64_t cq[] = {0, 5, 5, 17}, ck[] = {0, 9, 9, 12};
    const unsigned a = s->accepts;
    int n = 0;
    fl_problem q = *base;
    /* the fields that make a variant meet the rest of the problem, where the schedule takes them */
    const int mask = (a & FL_ACCEPT_MASK) != 0, heads = (a & FL_ACCEPT_HEADS) != 0, bwd = (a & FL_ACCEPT_BWD) != 0;
    if (mask) q.Nk = (a & FL_ACCEPT_NK) ? 30 : 0, q.causal = FL_CAUSAL_BOTTOM_RIGHT;
    if (heads) q.batch = 2, q.heads = 4, q.kv_heads = 2;
    if ((a & FL_ACCEPT_DV) && n + 3 < cap) {
        out[n] = *base, out[n++].d_v = 5;
        out[n] = q, out[n++].d_v = 13;
        out[n] = q, out[n].d = 3, out[n].d_v = 11, out[n++].pass = bwd ? FL_PASS_FWD_BWD : FL_PASS_FWD;
        out[n] = *base, out[n].d = 12, out[n].d_v = 4, out[n++].pass = bwd ? FL_PASS_BWD : FL_PASS_FWD;
    }
    if ((a & FL_ACCEPT_SINKS) && n + 2 < cap) {
        out[n] = *base, out[n++].sinks = 1;
        out[n] = q, out[n].sinks = 1, out[n++].pass = bwd ? FL_PASS_FWD_BWD : FL_PASS_FWD;
        out[n] = q, out[n].sinks = 1, out[n].N = 40, out[n].Nk = mask ? 12 : 0; /* rows without a key */
        out[n++].pass = bwd ? FL_PASS_BWD : FL_PASS_FWD;
    }
    if ((a & FL_ACCEPT_SCORE_MODS) && n + 2 < cap) {
        out[n] = *base, out[n++].softcap = 0.4;
        out[n] = q, out[n].alibi = 1, out[n++].pass = bwd ? FL_PASS_FWD_BWD : FL_PASS_FWD;
        out[n] = q, out[n].softcap = 0.7, out[n].alibi = 1, out[n++].pass = bwd ? FL_PASS_BWD : FL_PASS_FWD;
    }
    if ((a & FL_ACCEPT_DROPOUT) && n + 1 < cap) {
        out[n] = *base, out[n++].dropout = 0.3;
        out[n] = q, out[n].dropout = 0.15, out[n++].pass = bwd ? FL_PASS_FWD_BWD : FL_PASS_FWD;
    }
    if ((a & FL_ACCEPT_FP8) && n + 2 < cap) { /* forward only (fl_problem_check_fields) */
        out[n] = *base, out[n++].elem_bytes = 1;
        out[n] = q, out[n].elem_bytes = 1, out[n++].scale_block = 4;
        out[n] = q, out[n].elem_bytes = 1, out[n].scale_block = 64, out[n].Br = 7, out[n++].Bc = 5;
    }
    if ((a & FL_ACCEPT_DETERMINISTIC) && bwd && n + 1 < cap) {
        out[n] = q, out[n].deterministic = 1, out[n++].pass = FL_PASS_BWD;
        out[n] = *base, out[n].deterministic = 1, out[n].Br = 7, out[n].Bc = 5, out[n++].pass = FL_PASS_FWD_BWD;
    }
    if ((a & FL_ACCEPT_VARIANTS) == FL_ACCEPT_VARIANTS && n + 1 < cap) { /* all of them at once */
        fl_problem v = q;
        v.d = 6, v.d_v = 9, v.sinks = 1, v.softcap = 0.8, v.alibi = 1, v.dropout = 0.2;
        if (a & FL_ACCEPT_VARLEN) {
            v.batch = 3, v.N = 17, v.Nk = 12;
            v.cu_seqlens_q = cq, v.cu_seqlens_k = ck, v.cu_seqlens_q_len = v.cu_seqlens_k_len = 4;
        }
        out[n] = v, out[n].deterministic = bwd, out[n++].pass = bwd ? FL_PASS_FWD_BWD : FL_PASS_FWD;
        out[n] = v, out[n].dropout = 0.0, out[n].elem_bytes = 1, out[n++].scale_block = 3;
    }
    /* a schedule's own rule may keep the variants out of its backward (smallcache's): there they
     * meet its forward only (the refusal itself is in the errors catalogue) */
    for (int i = 0; s->check && i < n; i++)
        if (out[i].pass != FL_PASS_FWD && s->check(&out[i]) != FL_OK) out[i].pass = FL_PASS_FWD;
    return n;
}

/* The problems a schedule is checked on: small enough to compute, varied in the fields it
 * accepts (N and blocks that do not divide each other, masks, heads, varlen, backward, a paged
 * cache, a block mask).  Returns how many it wrote (at most cap). */
static int problems_for(const fl_schedule *s, fl_algo a, fl_problem *out, int cap)
{
    static const int64_t cq[] = {0, 5, 5, 17}, ck[] = {0, 9, 9, 12};
    int n = 0;
    const int64_t Ns[] = {1, 7, 33}, ds[] = {1, 8}, Ms[] = {200, 1000, 60000};
    for (size_t i = 0; i < 3; i++)
        for (size_t j = 0; j < 2; j++)
            for (size_t k = 0; k < 3 && n < cap; k++) {
                fl_problem p = fl_problem_default();
                p.algo = a, p.N = Ns[i], p.d = ds[j], p.M = Ms[k], p.max_events = 1000000;
                out[n++] = p;
            }
    fl_problem p = fl_problem_default();
    p.algo = a, p.N = 45, p.d = 8, p.M = 5000, p.max_events = 1000000;
    if (n < cap) out[n++] = p;
    if (n < cap) { /* blocks that do not divide N */
        out[n] = p;
        out[n].Br = 7, out[n].Bc = 5;
        if (s->flags & FL_SCHED_SOFTMAX) out[n].Br = 3, out[n].Bc = 13;
        n++;
    }
    if ((s->accepts & FL_ACCEPT_NK) && n + 1 < cap) {
        out[n] = p, out[n++].Nk = 70;
        out[n] = p, out[n++].Nk = 20;
    }
    if ((s->accepts & FL_ACCEPT_MASK) && n + 3 < cap) {
        out[n] = p, out[n].Nk = 60, out[n++].causal = FL_CAUSAL_BOTTOM_RIGHT;
        out[n] = p, out[n].Nk = 30, out[n++].causal = FL_CAUSAL_TOP_LEFT;
        out[n] = p, out[n].window_left = 6, out[n++].window_right = 2;
        out[n] = p, out[n].N = 40, out[n].Nk = 12, out[n++].causal = FL_CAUSAL_BOTTOM_RIGHT; /* empty rows */
    }
    if ((s->accepts & FL_ACCEPT_HEADS) && n + 1 < cap) {
        out[n] = p, out[n].batch = 2, out[n].heads = 6, out[n++].kv_heads = 2;
        out[n] = p, out[n].heads = 3, out[n++].kv_heads = 1;
    }
    if ((s->accepts & FL_ACCEPT_VARLEN) && n < cap) {
        out[n] = p, out[n].batch = 3, out[n].N = 17, out[n].Nk = 12, out[n].heads = 2;
        out[n].cu_seqlens_q = cq, out[n].cu_seqlens_k = ck, out[n].cu_seqlens_q_len = out[n].cu_seqlens_k_len = 4;
        n++;
    }
    if ((s->accepts & FL_ACCEPT_BWD) && n + 2 < cap) {
        out[n] = p, out[n++].pass = FL_PASS_BWD;
        out[n] = p, out[n].pass = FL_PASS_FWD_BWD, out[n].Nk = 50, out[n++].causal = FL_CAUSAL_BOTTOM_RIGHT;
        out[n] = p, out[n].pass = FL_PASS_FWD_BWD, out[n].heads = 4, out[n++].kv_heads = 2;
    }
    if ((s->accepts & FL_ACCEPT_KV_CACHE) && n + 1 < cap) {
        static fl_kv_cache paged, split; /* outlive the problems that point at them */
        paged = fl_kv_cache_default(), split = fl_kv_cache_default();
        paged.page_size = 8, paged.pool_pages = 20, paged.page_seed = 5, paged.splits = 3;
        split.splits = 4;
        out[n] = p, out[n].N = 3, out[n].Nk = 90, out[n++].kv_cache = &paged;
        out[n] = p, out[n].N = 2, out[n].Nk = 61, out[n++].kv_cache = &split;
    }
    if ((s->accepts & FL_ACCEPT_BLOCK_MASK) && n < cap) {
        static fl_block_sparsity half;
        half = fl_block_sparsity_default(), half.density = 0.5, half.mask_seed = 3;
        out[n] = p, out[n++].block_mask = &half;
    }
    return n + variants_for(s, &p, out + n, cap - n);
}

Test(registry, the_named_entries_keep_their_positions)
{
    const struct { fl_algo a; const char *name; } named[] = {
        {FL_ALGO_STANDARD, "standard"}, {FL_ALGO_FLASH1, "flash1"}, {FL_ALGO_FLASH2, "flash2"},
        {FL_ALGO_FLASH2_GQA, "flash2-gqa"}, {FL_ALGO_DECODE, "decode"}, {FL_ALGO_BLOCKSPARSE, "blocksparse"},
        {FL_ALGO_MEMEFF, "memeff"}, {FL_ALGO_SOFTMAX_SAFE, "softmax-safe"}, {FL_ALGO_SOFTMAX_ONLINE, "softmax-online"}};
    for (size_t i = 0; i < sizeof named / sizeof *named; i++)
        cr_assert_str_eq(fl_algo_name(named[i].a), named[i].name);
    cr_assert_leq(fl_schedule_count(), FL_ALGO_MAX);
    cr_assert_null(fl_schedule_get((fl_algo)fl_schedule_count()));
    cr_assert_null(fl_schedule_get((fl_algo)-1));
    cr_assert(fl_schedule_get(FL_ALGO_DEFAULT)->flags & FL_SCHED_DEFAULT, "FL_ALGO_DEFAULT is the default schedule");
    cr_assert_eq(fl_problem_default().algo, FL_ALGO_DEFAULT);
}

/* The roles the analysis asks for: exactly one default and one paper-law schedule, both in
 * "all"; "all" has one schedule that materializes S and P and at least one that does not (the
 * report compares them); every compared schedule fits optimize's comparison columns. */
Test(registry, every_role_has_its_schedules)
{
    fl_algo v[FL_ALGO_MAX];
    cr_assert_eq(fl_algos_with(FL_SCHED_DEFAULT, v), 1);
    cr_assert_eq(fl_algo_with_role(FL_SCHED_DEFAULT), v[0]);
    cr_assert_eq(fl_algos_with(FL_SCHED_PAPER_LAW | FL_SCHED_IN_ALL, v), 1);
    cr_assert_eq(fl_algo_with_role(FL_SCHED_PAPER_LAW), v[0]);
    cr_assert_eq(fl_algos_with(FL_SCHED_MATERIALIZES | FL_SCHED_IN_ALL, v), 1);
    const int nall = fl_algos_all(NULL, v);
    cr_assert_geq(nall, 2);
    const int ncmp = fl_algos_with(FL_SCHED_COMPARED, v);
    cr_assert(ncmp >= 1 && ncmp <= FL_OPT_MAX_COMPARED, "%d compared schedules", ncmp);
    cr_assert_eq(fl_algos_with(0, v), fl_schedule_count());
}

/* "all" follows the flags: every FL_SCHED_IN_ALL schedule, those stacking a group only where the
 * problem has groups, in registry order. */
Test(registry, all_is_the_flagged_schedules)
{
    fl_problem gqa = fl_problem_default();
    gqa.heads = 8, gqa.kv_heads = 2;
    fl_algo v[FL_ALGO_MAX], w[FL_ALGO_MAX];
    const int n = fl_algos_all(NULL, v), ng = fl_algos_all(&gqa, w);
    int k = 0, kg = 0;
    for (int a = 0; a < fl_schedule_count(); a++) {
        const unsigned f = fl_schedule_get((fl_algo)a)->flags;
        if (!(f & FL_SCHED_IN_ALL)) continue;
        if (!(f & FL_SCHED_STACKS_GROUP)) cr_assert(k < n && v[k++] == a, "%s missing from all", fl_algo_name((fl_algo)a));
        cr_assert(kg < ng && w[kg++] == a, "%s missing from all with groups", fl_algo_name((fl_algo)a));
    }
    cr_assert_eq(k, n);
    cr_assert_eq(kg, ng);
    cr_assert_gt(ng, n, "a schedule of all stacks GQA groups");
}

/* Every name follows the rule that keeps "Flash_X" (the negative tests' unknown name) from ever
 * being one; the rule itself refuses what it must. */
Test(registry, every_name_follows_the_rule)
{
    for (int a = 0; a < fl_schedule_count(); a++)
        cr_assert(fl_algo_name_valid(fl_algo_name((fl_algo)a)), "%s", fl_algo_name((fl_algo)a));
    const char *bad[] = {"Flash_X", "", "-a", "a-", "a--b", "9a", "a b", "abcdefghijklmnopqrstuvwxyzabcdef", "flash2 "};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) cr_assert(!fl_algo_name_valid(bad[i]), "'%s'", bad[i]);
    cr_assert(fl_algo_name_valid("flash3") && fl_algo_name_valid("a-b2"));
    fl_algo a;
    cr_assert_eq(fl_algo_parse("Flash_X", &a), FL_EINVAL);
}

/* A schedule in optimize's family says how its closed form walks and, searched by branch and
 * bound, gives a floor; its closed form covers every block pair (overrides are honoured). */
Test(registry, every_family_member_is_searchable)
{
    int members = 0;
    for (int a = 0; a < fl_schedule_count(); a++) {
        const fl_schedule *s = fl_schedule_get((fl_algo)a);
        for (int pb = 0; pb < 2; pb++) {
            if (!s->search[pb]) continue;
            members++;
            cr_assert(s->footprint, "%s: the search needs the footprint", s->name);
            cr_assert(!pb || s->bwd, "%s: a backward search without a backward loop", s->name);
            cr_assert(s->search[pb] != FL_SEARCH_BOUND || s->count_floor, "%s: lemma O4 needs a count floor", s->name);
            cr_assert(!(s->flags & (FL_SCHED_OWN_PROBLEM | FL_SCHED_SOFTMAX)), "%s: a problem of its own in the family", s->name);
        }
    }
    cr_assert_geq(members, 2);
}

Test(registry, every_descriptor_is_complete)
{
    for (int a = 0; a < fl_schedule_count(); a++) {
        const fl_schedule *s = fl_schedule_get((fl_algo)a);
        cr_assert(s && s->name && *s->name && s->summary && *s->summary, "schedule %d", a);
        cr_assert(s->blocks && s->closed_form && s->fwd, "%s: blocks, closed_form and fwd are required", s->name);
        cr_assert_eq(s->bwd != NULL, (s->accepts & FL_ACCEPT_BWD) != 0, "%s: a backward loop iff it accepts bwd", s->name);
        cr_assert(s->explain || s->explain_after, "%s: --explain has nothing to say", s->name);
        fl_algo back;
        cr_assert_eq(fl_schedule_find(s->name, &back), s, "%s: found by name", s->name);
        cr_assert_eq((int)back, a);
        cr_assert_eq(fl_algo_parse(s->name, &back), FL_OK);
        for (int b = 0; b < a; b++) cr_assert_str_neq(s->name, fl_schedule_get((fl_algo)b)->name, "two schedules named %s", s->name);
        cr_assert(strstr(fl_algo_choices(), s->name), "%s missing from the choices", s->name);
    }
}

Test(registry, every_schedule_counts_its_closed_form_and_computes_the_reference)
{
    fl_time_limit(FL_T(600));
    for (int a = 0; a < fl_schedule_count(); a++) {
        const fl_schedule *s = fl_schedule_get((fl_algo)a);
        fl_problem ps[96];
        const int n = problems_for(s, (fl_algo)a, ps, 96);
        int ran = 0;
        for (int i = 0; i < n; i++) {
            char what[400];
            describe(&ps[i], what, sizeof what);
            cr_assert_eq(fl_problem_check(&ps[i]), FL_OK, "%s: %s", what, fl_last_error());
            fl_blocks b, bb;
            fl_status st = fl_blocks_choose(&ps[i], &b);
            if (st == FL_ECAPACITY || (st == FL_EINVAL && (ps[i].Br || ps[i].Bc))) continue; /* M too small */
            cr_assert_eq(st, FL_OK, "%s: %s", what, fl_last_error());
            cr_assert_leq(b.footprint, ps[i].M, "%s: footprint above M", what);
            const int bwd = (ps[i].pass & FL_PASS_BWD) != 0;
            if (bwd) {
                st = fl_blocks_choose_pass(&ps[i], 1, &bb);
                if (st == FL_ECAPACITY) continue;
                cr_assert_eq(st, FL_OK, "%s: %s", what, fl_last_error());
            }
            fl_result r;
            expect_exact(&ps[i], what, &r);
            fl_lower_bound lb; /* no schedule goes under the problem's proven lower bound */
            cr_assert_eq(fl_lower_bound_of(&ps[i], &b, &lb), FL_OK, "%s: %s", what, fl_last_error());
            cr_assert_leq(lb.bound, r.total, "%s: %lld elements moved, under the lower bound %lld", what,
                          (long long)r.total, (long long)lb.bound);
            if (s->events_floor)
                cr_assert_leq(s->events_floor(&ps[i], &b, bwd ? &bb : NULL), r.events, "%s: the event floor is above the events", what);
            expect_values(&ps[i], what, NULL);
            ran++;
        }
        cr_assert_geq(ran, 5, "%s: only %d of %d problems ran", s->name, ran, n);
    }
}

Test(registry, a_field_the_schedule_does_not_accept_is_refused_naming_it)
{
    for (int a = 0; a < fl_schedule_count(); a++) {
        const fl_schedule *s = fl_schedule_get((fl_algo)a);
        const struct { unsigned flag; const char *opt; void (*set)(fl_problem *); } fields[] = {
            {FL_ACCEPT_BWD, "--pass", NULL}, {FL_ACCEPT_HEADS, "--heads", NULL}, {FL_ACCEPT_MASK, "--causal", NULL},
            {FL_ACCEPT_KV_CACHE, "--page-size", NULL}, {FL_ACCEPT_BLOCK_MASK, "--density", NULL}, {FL_ACCEPT_NK, "--Nk", NULL},
            {FL_ACCEPT_DV, "--d-v", NULL}, {FL_ACCEPT_SINKS, "--sinks", NULL}, {FL_ACCEPT_SCORE_MODS, "--softcap", NULL},
            {FL_ACCEPT_SCORE_MODS, "--alibi", NULL}, {FL_ACCEPT_DROPOUT, "--dropout", NULL},
            {FL_ACCEPT_FP8, "--dtype", NULL}, {FL_ACCEPT_DETERMINISTIC, "--deterministic", NULL}};
        for (size_t f = 0; f < sizeof fields / sizeof *fields; f++) {
            if (s->accepts & fields[f].flag) continue;
            fl_problem p = fl_problem_default();
            fl_kv_cache p_kv = fl_kv_cache_default();
            fl_block_sparsity p_bm = fl_block_sparsity_default();
            p.algo = (fl_algo)a, p.N = 16, p.d = 4, p.M = 10000;
            switch (fields[f].flag) {
            case FL_ACCEPT_BWD: p.pass = FL_PASS_BWD; break;
            case FL_ACCEPT_HEADS: p.heads = 2; break;
            case FL_ACCEPT_MASK: p.causal = FL_CAUSAL_TOP_LEFT; break;
            case FL_ACCEPT_KV_CACHE: p_kv.page_size = 4, p.kv_cache = &p_kv; break;
            case FL_ACCEPT_BLOCK_MASK: p_bm.density = 0.5, p.block_mask = &p_bm; break;
            case FL_ACCEPT_NK: p.Nk = 20; break;
            case FL_ACCEPT_DV: p.d_v = 6; break;
            case FL_ACCEPT_SINKS: p.sinks = 1; break;
            case FL_ACCEPT_SCORE_MODS: if (fields[f].opt[2] == 's') p.softcap = 3.0; else p.alibi = 1; break;
            case FL_ACCEPT_DROPOUT: p.dropout = 0.5; break;
            case FL_ACCEPT_FP8: p.elem_bytes = 1; break;
            case FL_ACCEPT_DETERMINISTIC: p.deterministic = 1, p.pass = (s->accepts & FL_ACCEPT_BWD) ? FL_PASS_BWD : FL_PASS_FWD; break;
            }
            cr_assert_eq(fl_problem_check(&p), FL_EINVAL, "%s accepted %s", s->name, fields[f].opt);
            cr_assert(fl_test_names(fields[f].opt), "%s: the refusal names %s: %s", s->name, fields[f].opt,
                      fl_last_error());
        }
    }
}
