/* fuzz_problem.c: the library API on arbitrary problems: the block rules, the footprints, the
 * closed forms and fl_run, in count mode over the whole int64 range and in compute mode on
 * small configurations checked against the reference.
 *
 * Input: byte 0 picks the part (even: full range, odd: compute), byte 1 the schedule; then
 * the fields as little-endian integers (full range: N, d, M, Br, Bc as raw int64, so negative
 * and huge values occur; compute: small sizes from single bytes).
 *
 * Oracles:
 *  - no sanitizer report, no crash, no hang (libFuzzer -timeout);
 *  - an error returns FL_EINVAL / FL_ECAPACITY / FL_EOVERFLOW with a one-line message that
 *    starts with the option it names ("--");
 *  - chosen blocks are >= 1, fit in M (footprint <= M), and keep an override as given;
 *  - a run's counts equal the closed form (reads, writes, events, SRAM peak), and its hbm_bytes
 *    is the per-tensor sum;
 *  - compute mode: O (and flash2's logsumexp) match the reference to 1e-12 relative.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_util.h"
#include "run.h"

/* Events a full-range count run may take (keeps each input fast). */
#define FZ_MAX_EVENTS 20000

static void check_blocks(const fl_problem *p, const fl_blocks *b)
{
    FZ_CHECK(b->Br >= 1 && b->Bc >= 1 && b->Bd >= 1 && b->Bd <= p->d, "blocks %lld %lld %lld",
             (long long)b->Br, (long long)b->Bc, (long long)b->Bd);
    FZ_CHECK(b->footprint >= 1 && b->footprint <= p->M, "footprint %lld, M %lld",
             (long long)b->footprint, (long long)p->M);
    FZ_CHECK(b->footprint == fl_footprint(p->algo, p->d, b->Br, b->Bc, b->Bd), "footprint");
    if (p->Br) FZ_CHECK(b->Br == p->Br, "override Br %lld -> %lld", (long long)p->Br, (long long)b->Br);
    if (p->Bc) FZ_CHECK(b->Bc == p->Bc, "override Bc %lld -> %lld", (long long)p->Bc, (long long)b->Bc);
}

static void check_result(const fl_result *r)
{
    FZ_CHECK(r->reads == r->closed.reads && r->writes == r->closed.writes,
             "%s N=%lld d=%lld M=%lld Br=%lld Bc=%lld: counted %lld/%lld, closed form %lld/%lld",
             fl_algo_name(r->p.algo), (long long)r->p.N, (long long)r->p.d, (long long)r->p.M,
             (long long)r->b.Br, (long long)r->b.Bc, (long long)r->reads, (long long)r->writes,
             (long long)r->closed.reads, (long long)r->closed.writes);
    FZ_CHECK(r->events == r->closed.events, "events %lld vs %lld", (long long)r->events,
             (long long)r->closed.events);
    FZ_CHECK(r->sram_peak == r->closed.sram_peak && r->sram_peak <= r->p.M, "sram peak %lld vs %lld",
             (long long)r->sram_peak, (long long)r->closed.sram_peak);
    FZ_CHECK(r->total == r->reads + r->writes, "total");
    int64_t bytes = 0;
    for (int t = 0; t < r->ntensors; t++)
        bytes += (r->t[t].reads + r->t[t].writes) * r->t[t].elem_bytes;
    FZ_CHECK(bytes == r->bytes, "bytes %lld vs %lld", (long long)bytes, (long long)r->bytes);
}

/* Whole int64 range: rules, closed forms, and a count run when it is short. */
static void full_range(fl_problem *p, fz_bytes *in)
{
    p->N = (int64_t)fz_take(in, 8);
    p->d = (int64_t)fz_take(in, 8);
    p->M = (int64_t)fz_take(in, 8);
    p->Br = (int64_t)fz_take(in, 8);
    p->Bc = (int64_t)fz_take(in, 8);
    /* half the time, small positive sizes so that runs happen */
    if (fz_take(in, 1) & 1) {
        p->N = 1 + (int64_t)((uint64_t)p->N % 4096);
        p->d = 1 + (int64_t)((uint64_t)p->d % 512);
        p->M = 1 + (int64_t)((uint64_t)p->M % (1 << 22));
        p->Br = (int64_t)((uint64_t)p->Br % 64);
        p->Bc = (int64_t)((uint64_t)p->Bc % 64);
    }
    fl_blocks b;
    fl_counts c;
    fl_status s = fl_blocks_choose(p, &b);
    if (s) return fz_check_message(s);
    check_blocks(p, &b);
    s = fl_closed_form(p, &b, &c);
    if (s) return fz_check_message(s);
    FZ_CHECK(c.total == c.reads + c.writes && c.reads >= 0 && c.writes >= 0 && c.events >= 0,
             "closed form");
    p->max_events = FZ_MAX_EVENTS;
    if (c.events > FZ_MAX_EVENTS) return;
    fl_result r;
    s = fl_run(p, FL_COUNT, NULL, NULL, &r);
    if (s) return fz_check_message(s);
    check_result(&r);
}

/* Small sizes, real values, checked against the reference. */
static void compute(fl_problem *p, fz_bytes *in)
{
    p->N = 1 + (int64_t)(fz_take(in, 1) % 80);
    p->d = 1 + (int64_t)(fz_take(in, 1) % 40);
    p->M = 1 + (int64_t)(fz_take(in, 2) % 12000);
    p->Br = (int64_t)(fz_take(in, 1) % 24);
    p->Bc = (int64_t)(fz_take(in, 1) % 24);
    p->seed = fz_take(in, 8);
    p->max_events = FZ_MAX_EVENTS; /* tiny tiles at N = 80 would take 10^5 events */
    fl_result r;
    fl_status s = fl_run(p, FL_COMPUTE, NULL, NULL, &r);
    if (s) return fz_check_message(s);
    check_blocks(p, &r.b);
    check_result(&r);
    FZ_CHECK(r.computed && r.rel_err <= 1e-12, "%s N=%lld d=%lld M=%lld Br=%lld Bc=%lld: rel err %g",
             fl_algo_name(p->algo), (long long)p->N, (long long)p->d, (long long)p->M,
             (long long)r.b.Br, (long long)r.b.Bc, r.rel_err);
    if (p->algo == FL_ALGO_FLASH2) FZ_CHECK(r.lse_rel_err <= 1e-12, "L rel err %g", r.lse_rel_err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_bytes in = {data, size};
    fl_problem p = fl_problem_default();
    const int part = (int)fz_take(&in, 1);
    const int a = (int)fz_take(&in, 1);
    /* the three core schedules (fl_footprint is their rule); a few invalid values too */
    p.algo = (fl_algo)(a < 250 ? a % (FL_ALGO_FLASH2 + 1) : a < 253 ? a - 252 : fl_schedule_count() + a - 253);
    if (part & 1) compute(&p, &in);
    else full_range(&p, &in);
    return 0;
}
