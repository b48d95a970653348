/* test_cp.c: context parallelism (include/flashlab/cp.h, docs/context_parallel.md): the executed
 * counts equal their closed forms over P = 1..64 (ring, striped, Ulysses; causal or not; MHA,
 * GQA, MQA; forward and backward), the links conserve what they carry, the devices together
 * keep every pair of the whole problem once, P = 1 is the single-device run, the schedules
 * compute exact attention with real values, and the overlap condition reproduces the ring
 * attention paper's Table 2. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <string.h>

#include "cp.h"
#include "rng.h"
#include "run.h"
#include "schedule.h"

/* The schedules a device may run: those that save the logsumexp. */
static int kernels(fl_algo *out) { return fl_algos_with(FL_SCHED_SAVES_LSE, out); }

static fl_cp_spec spec(fl_cp_kind k, int64_t P, int64_t n, int64_t H, int64_t Hkv, int causal, fl_pass pass)
{
    fl_cp_spec s;
    memset(&s, 0, sizeof s);
    s.kind = k, s.P = P;
    s.p = fl_problem_default();
    s.p.N = n * P, s.p.d = 8, s.p.M = 2048, s.p.heads = H, s.p.kv_heads = Hkv == H ? 0 : Hkv;
    s.p.causal = causal ? FL_CAUSAL_TOP_LEFT : FL_CAUSAL_NONE, s.p.pass = pass, s.p.batch = 2;
    return s;
}

/* Every device and pass of s against the closed forms; the links' sent = received in total; the
 * devices' pairs add up to the whole problem's. */
static void check_all(const fl_cp_spec *s)
{
    fl_cp_result r;
    cr_assert_eq(fl_cp_run(s, &r), FL_OK, "%s P=%" PRId64 ": %s", fl_cp_name(s->kind), s->P, fl_last_error());
    const int64_t N = s->p.N, whole = s->p.batch * s->p.heads * (s->p.causal ? N * (N + 1) / 2 : N * N);
    for (int bwd = 0; bwd < 2; bwd++) {
        if (!r.dev[bwd]) continue;
        int64_t sent = 0, recv = 0, pairs = 0;
        for (int64_t d = 0; d < s->P; d++) {
            const fl_cp_pass *x = &r.dev[bwd][d];
            fl_cp_closed_counts c;
            cr_assert_eq(fl_cp_closed(s, d, bwd, &c), FL_OK, "%s", fl_last_error());
            cr_assert_eq(x->link_sent, c.link_sent, "%s P=%" PRId64 " n=%" PRId64 " H=%" PRId64 "/%" PRId64
                         " causal=%d bwd=%d dev %" PRId64 ": sent %" PRId64 " closed %" PRId64,
                         fl_cp_name(s->kind), s->P, r.n, s->p.heads, s->p.kv_heads, s->p.causal, bwd, d, x->link_sent,
                         c.link_sent);
            cr_assert_eq(x->link_recv, c.link_recv, "recv dev %" PRId64, d);
            cr_assert_eq(x->pairs, c.pairs, "%s P=%" PRId64 " n=%" PRId64 " dev %" PRId64 " pairs", fl_cp_name(s->kind), s->P, r.n, d);
            cr_assert_eq(x->kernels, c.kernels, "kernels dev %" PRId64, d);
            cr_assert_eq(x->kernel_reads + x->kernel_writes, c.kernel_total, "%s P=%" PRId64 " n=%" PRId64
                         " causal=%d bwd=%d dev %" PRId64 ": kernels %" PRId64 " closed %" PRId64,
                         fl_cp_name(s->kind), s->P, r.n, s->p.causal, bwd, d, x->kernel_reads + x->kernel_writes,
                         c.kernel_total);
            cr_assert_eq(x->merge_reads + x->merge_writes, c.merge_total, "%s P=%" PRId64 " n=%" PRId64
                         " H=%" PRId64 "/%" PRId64 " causal=%d bwd=%d dev %" PRId64 ": merges %" PRId64 " closed %" PRId64,
                         fl_cp_name(s->kind), s->P, r.n, s->p.heads, s->p.kv_heads, s->p.causal, bwd, d,
                         x->merge_reads + x->merge_writes, c.merge_total);
            cr_assert_eq(x->flops, x->pairs * s->p.d * (bwd ? 10 : 4));
            sent += x->link_sent, recv += x->link_recv, pairs += x->pairs;
        }
        cr_assert_eq(sent, recv, "what is sent is received");
        cr_assert_eq(pairs, whole, "%s P=%" PRId64 ": the devices keep %" PRId64 " pairs, the problem %" PRId64,
                     fl_cp_name(s->kind), s->P, pairs, whole);
    }
    fl_cp_free(&r);
}

/* The property test: every P from 1 to 64, each schedule, mask and pass, with head counts and
 * tokens per device drawn from a fixed seed (Ulysses: heads a multiple of P). */
Test(cp, closed_forms_equal_the_executed_counts_for_P_1_to_64)
{
    fl_time_limit(FL_T(600));
    uint64_t st = 2385;
    int runs = 0;
    for (int64_t P = 1; P <= 64; P++)
        for (int k = FL_CP_RING; k <= FL_CP_ULYSSES; k++)
            for (int causal = 0; causal < 2; causal++) {
                const int64_t n = 1 + (int64_t)(fl_rng_next(&st) % 5);
                int64_t H = 1 + (int64_t)(fl_rng_next(&st) % 4), Hkv;
                const int gqa = (int)(fl_rng_next(&st) % 3); /* MHA, GQA, MQA */
                if (k == FL_CP_ULYSSES) H = P * (1 + (int64_t)(fl_rng_next(&st) % 2));
                Hkv = gqa == 0 ? H : gqa == 2 ? 1 : (H % 2 ? H : H / 2);
                if (k == FL_CP_ULYSSES && Hkv % P && P % Hkv) Hkv = H; /* the rule Ulysses needs */
                fl_cp_spec s = spec((fl_cp_kind)k, P, n, H, Hkv, causal, FL_PASS_FWD_BWD);
                check_all(&s);
                runs++;
            }
    cr_assert_eq(runs, 64 * 3 * 2);
}

/* The same with the GQA schedule, batch 1, and the backward alone. */
Test(cp, closed_forms_hold_for_every_kernel_and_each_pass)
{
    fl_algo ks[FL_ALGO_MAX];
    const int nk = kernels(ks);
    cr_assert_geq(nk, 2, "a kernel that stacks GQA groups and one that does not");
    for (int a = 0; a < nk; a++)
        for (int64_t P = 1; P <= 16; P *= 2)
            for (int k = FL_CP_RING; k <= FL_CP_ULYSSES; k++)
                for (int pass = FL_PASS_FWD; pass <= FL_PASS_BWD; pass++) {
                    fl_cp_spec s = spec((fl_cp_kind)k, P, 3, 16, 4, 1, (fl_pass)pass);
                    s.p.algo = ks[a], s.p.batch = 1;
                    check_all(&s);
                }
}

/* A wrong model is caught: ring's counts are not striped's closed forms (causal, P >= 2), and
 * the conservation of pairs fails for a problem of the wrong size. */
Test(cp, the_comparisons_tell_schedules_apart)
{
    fl_cp_spec ring = spec(FL_CP_RING, 4, 64, 2, 2, 1, FL_PASS_FWD), striped = ring;
    striped.kind = FL_CP_STRIPED;
    fl_cp_result r;
    cr_assert_eq(fl_cp_run(&ring, &r), FL_OK);
    int differ = 0;
    for (int64_t d = 0; d < 4; d++) {
        fl_cp_closed_counts c;
        cr_assert_eq(fl_cp_closed(&striped, d, 0, &c), FL_OK);
        differ += c.pairs != r.dev[0][d].pairs || c.kernel_total != r.dev[0][d].kernel_reads + r.dev[0][d].kernel_writes;
    }
    cr_assert_eq(differ, 4, "every device of a causal ring differs from the striped closed form");
    /* ring is unbalanced, striped is not: device P-1 keeps P times device 0's pairs plus */
    cr_assert_gt(r.dev[0][3].pairs, 5 * r.dev[0][0].pairs);
    fl_cp_free(&r);
    cr_assert_eq(fl_cp_run(&striped, &r), FL_OK);
    cr_assert_lt(r.dev[0][3].pairs - r.dev[0][0].pairs, r.dev[0][0].pairs / 10);
    cr_assert_eq(r.dev[0][3].pairs - r.dev[0][0].pairs, 2 * 2 * 3 * 64, "one diagonal per other device");
    fl_cp_free(&r);
}

/* P = 1 is today's single device: the same kernel counts and bytes, no merge, no link. */
Test(cp, one_device_is_the_single_device_run)
{
    fl_algo ks[FL_ALGO_MAX];
    const int nk = kernels(ks);
    for (int k = FL_CP_RING; k <= FL_CP_ULYSSES; k++)
        for (int causal = 0; causal < 2; causal++)
            for (int a = 0; a < nk; a++) {
                fl_cp_spec s = spec((fl_cp_kind)k, 1, 300, 8, 2, causal, FL_PASS_FWD_BWD);
                s.p.algo = ks[a], s.p.d = 64, s.p.M = 98304;
                fl_cp_result r;
                fl_result one;
                cr_assert_eq(fl_cp_run(&s, &r), FL_OK, "%s", fl_last_error());
                fl_problem f = s.p, b = s.p;
                f.pass = FL_PASS_FWD, b.pass = FL_PASS_BWD;
                for (int bwd = 0; bwd < 2; bwd++) {
                    cr_assert_eq(fl_run(bwd ? &b : &f, FL_COUNT, NULL, NULL, &one), FL_OK);
                    const fl_cp_pass *x = &r.dev[bwd][0];
                    cr_assert_eq(x->kernel_reads, one.reads);
                    cr_assert_eq(x->kernel_writes, one.writes);
                    cr_assert_eq(x->hbm_bytes, one.bytes);
                    cr_assert_eq(x->merge_reads + x->merge_writes + x->link_sent + x->link_recv, 0);
                    cr_assert_eq(x->kernels, 1);
                }
                fl_cp_free(&r);
            }
}

/* The outputs: every device's kernels with real values, merged, equal exact attention. */
Test(cp, the_schedules_compute_exact_attention)
{
    fl_time_limit(FL_T(300));
    const int64_t Ps[] = {1, 2, 3, 4, 8};
    for (int k = FL_CP_RING; k <= FL_CP_ULYSSES; k++)
        for (int causal = 0; causal < 2; causal++)
            for (size_t i = 0; i < sizeof Ps / sizeof Ps[0]; i++) {
                const int64_t P = Ps[i], H = k == FL_CP_ULYSSES ? 2 * P : 4, Hkv = k == FL_CP_ULYSSES && P > 1 ? P / 2 : 2;
                fl_cp_spec s = spec((fl_cp_kind)k, P, 5, H, Hkv, causal, FL_PASS_FWD);
                double err = 1;
                cr_assert_eq(fl_cp_check_values(&s, &err), FL_OK, "%s", fl_last_error());
                cr_assert_lt(err, 1e-12, "%s P=%" PRId64 " causal=%d: rel err %g", fl_cp_name((fl_cp_kind)k), P, causal, err);
            }
}

/* The overlap condition: F / B rows for one dense head in 2-byte elements, exactly at the
 * boundary; the paper's Table 2 at its printed precision. */
Test(cp, overlap_reproduces_the_ring_paper_table)
{
    fl_cp_spec s = spec(FL_CP_RING, 4, 1, 1, 1, 0, FL_PASS_FWD);
    s.p.batch = 1, s.p.elem_bytes = 2;
    const fl_cp_host *nv, *ib;
    cr_assert_eq(fl_cp_host_find("a100-nvlink", &nv), FL_OK);
    cr_assert_eq(fl_cp_host_find("a100-ib", &ib), FL_OK);
    int64_t c;
    cr_assert_eq(fl_cp_min_rows(&s, nv->flops, nv->link_bw, &c), FL_OK, "%s", fl_last_error());
    cr_assert_eq(c, 1040, "312e12 / 300e9 = 1040 rows, got %" PRId64, c);
    cr_assert_eq(fl_cp_min_rows(&s, ib->flops, ib->link_bw, &c), FL_OK);
    cr_assert_eq(c, 24960, "312e12 / 12.5e9 = 24960 rows, got %" PRId64, c);
    /* the paper prints c in thousands to one decimal: 1.0 and 24.5 (its own F / B is 24.96) */
    cr_assert_eq(nv->paper_c, 1.0e3);
    cr_assert_eq(ib->paper_c, 24.5e3);
    int n;
    const fl_cp_host *h = fl_cp_hosts(&n);
    for (int i = 0; i < n; i++) {
        if (h[i].paper_c <= 0) continue;
        cr_assert_eq(fl_cp_min_rows(&s, h[i].flops, h[i].link_bw, &c), FL_OK);
        const double ours = (double)c / 1e3, paper = h[i].paper_c / 1e3;
        if (h + i == ib) /* the one row whose printed value is not F / B: 24.5 against 24.96 */
            cr_assert(ours - paper > 0.4 && ours - paper < 0.5, "%s: %.3f vs %.1f", h[i].name, ours, paper);
        else
            cr_assert(ours - paper > -0.05 && ours - paper < 0.05, "%s: %.3f vs %.1f", h[i].name, ours, paper);
    }
    /* GQA divides what a step sends by H / Hkv, so the rows needed too; 4-byte elements double them */
    s.p.heads = 8, s.p.kv_heads = 2;
    cr_assert_eq(fl_cp_min_rows(&s, nv->flops, nv->link_bw, &c), FL_OK);
    cr_assert_eq(c, 260);
    s.p.elem_bytes = 4;
    cr_assert_eq(fl_cp_min_rows(&s, nv->flops, nv->link_bw, &c), FL_OK);
    cr_assert_eq(c, 520);
}

/* The time of a pass: a ring of dense steps hides its link from c rows on; Ulysses never does
 * (its all-to-alls are outside the kernel). */
Test(cp, time_of_a_pass)
{
    const int64_t F = INT64_C(312000000000000), B = INT64_C(300000000000);
    for (int64_t n = 1039; n <= 1040; n++) {
        fl_cp_spec s = spec(FL_CP_RING, 4, n, 1, 1, 0, FL_PASS_FWD);
        s.p.batch = 1, s.link_only = 1;
        fl_cp_result r;
        fl_cp_time t;
        cr_assert_eq(fl_cp_run(&s, &r), FL_OK);
        fl_cp_time_of(&r, 0, F, B, &t);
        cr_assert_eq(t.hidden, n == 1040, "n = %" PRId64, n);
        cr_assert_eq(r.line[0].nslots, 4);
        cr_assert_eq(r.line[0].slot_bytes[3], 0, "the last step sends nothing");
        cr_assert_eq(r.line[0].slot_bytes[0], 2 * n * 8 * 2, "K and V of n rows, d = 8, 2 bytes");
        fl_cp_free(&r);
    }
    fl_cp_spec u = spec(FL_CP_ULYSSES, 4, 64, 4, 4, 0, FL_PASS_FWD);
    fl_cp_result r;
    fl_cp_time t;
    cr_assert_eq(fl_cp_run(&u, &r), FL_OK);
    fl_cp_time_of(&r, 0, F, B, &t);
    cr_assert_eq(t.hidden, 0);
    cr_assert_float_eq(t.exposed_s, t.link_s, 1e-18);
    cr_assert_float_eq(t.pass_s, t.compute_s + t.link_s, 1e-18);
    fl_cp_free(&r);
}

/* What cannot be modelled is refused with the quantity and the rule. */
Test(cp, refusals)
{
    struct {
        fl_cp_spec s;
        const char *says;
    } bad[8];
    for (int i = 0; i < 8; i++) bad[i].s = spec(FL_CP_RING, 4, 8, 4, 4, 0, FL_PASS_FWD);
    bad[0].s.P = 0, bad[0].says = "devices: must be 1 to";
    bad[1].s.P = FL_CP_MAX_DEVICES + 1, bad[1].says = "devices: must be 1 to";
    bad[2].s.p.N = 30, bad[2].says = "P must divide N";
    bad[3].s.kind = FL_CP_ULYSSES, bad[3].s.P = 8, bad[3].says = "heads";
    bad[4].says = "must save the logsumexp";
    for (int a = 0; a < fl_schedule_count(); a++) /* the first registered schedule that does not */
        if (!(fl_algo_flags((fl_algo)a) & FL_SCHED_SAVES_LSE)) {
            bad[4].s.p.algo = (fl_algo)a;
            break;
        }
    bad[5].s.p.window_left = 3, bad[5].says = "window";
    bad[6].s.p.Nk = 16, bad[6].says = "Nk";
    bad[7].s.kind = FL_CP_ULYSSES, bad[7].s.p.heads = 12, bad[7].s.p.kv_heads = 3, bad[7].says = "K/V heads";
    for (int i = 0; i < 8; i++) {
        fl_cp_result r;
        cr_assert_eq(fl_cp_run(&bad[i].s, &r), FL_EINVAL, "case %d", i);
        cr_assert(strstr(fl_last_error(), bad[i].says), "case %d: %s", i, fl_last_error());
        cr_assert_null(r.dev[0]);
    }
    fl_cp_kind k;
    cr_assert_eq(fl_cp_parse("zigzag", &k), FL_EINVAL);
    const fl_cp_host *h;
    cr_assert_eq(fl_cp_host_find("a100", &h), FL_EINVAL);
    fl_cp_spec u = spec(FL_CP_ULYSSES, 4, 8, 4, 4, 0, FL_PASS_FWD);
    int64_t c;
    cr_assert_eq(fl_cp_min_rows(&u, 1, 1, &c), FL_EINVAL);
    /* a link-only model of a step too long to count row by row is refused, not run for hours */
    fl_cp_spec big = spec(FL_CP_RING, 1, INT64_C(1) << 40, 1, 1, 0, FL_PASS_FWD);
    big.link_only = 1;
    fl_cp_result r;
    cr_assert_eq(fl_cp_run(&big, &r), FL_EINVAL);
    cr_assert(strstr(fl_last_error(), "row by row"), "%s", fl_last_error());
    /* and a full one is refused by the kernel's own event limit */
    big.link_only = 0;
    cr_assert_eq(fl_cp_run(&big, &r), FL_EINVAL);
}
