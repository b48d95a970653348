/* test_pool.c: the pool of include/flashlab/pool.h: done sees every task once, in order, on the
 * submitting thread, whatever the jobs; work runs on several threads at once; no more than the
 * window is in flight; a failing done stops the pool at that task, with its message; progress
 * counts finished tasks and never goes back. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "pool.h"

typedef struct {
    int64_t i, square;
    pthread_t ran_on;
} slot;

typedef struct {
    int64_t next, fail_at, in_flight_max, finished_seen;
    int64_t submitted, taken;
    pthread_t caller;
    pthread_mutex_t mu;
    int threads_seen;
    pthread_t seen[64];
    int progress_back, wrong_thread;
} ctx;

static void nap(long us)
{
    struct timespec t = {0, us * 1000};
    nanosleep(&t, NULL);
}

static void work(void *vs, void *vc)
{
    slot *s = vs;
    ctx *c = vc;
    s->square = s->i * s->i;
    s->ran_on = pthread_self();
    nap(s->i % 7 == 0 ? 3000 : 200); /* uneven tasks, so they finish out of order */
    pthread_mutex_lock(&c->mu);
    int k = 0;
    while (k < c->threads_seen && !pthread_equal(c->seen[k], s->ran_on)) k++;
    if (k == c->threads_seen && k < 64) c->seen[c->threads_seen++] = s->ran_on;
    pthread_mutex_unlock(&c->mu);
}

static fl_status done(int64_t i, void *vs, void *vc)
{
    slot *s = vs;
    ctx *c = vc;
    cr_assert_eq(i, c->next, "done in order: got %lld, want %lld", (long long)i, (long long)c->next);
    cr_assert_eq(s->i, i);
    cr_assert_eq(s->square, i * i);
    if (!pthread_equal(pthread_self(), c->caller)) c->wrong_thread = 1;
    c->next++, c->taken++;
    if (i == c->fail_at) return fl_fail(FL_EIO, "task %lld failed", (long long)i);
    return FL_OK;
}

static void progress(int64_t finished, void *vc)
{
    ctx *c = vc;
    if (finished < c->finished_seen) c->progress_back = 1;
    c->finished_seen = finished;
    if (c->submitted - c->taken > c->in_flight_max) c->in_flight_max = c->submitted - c->taken;
}

static void init_ctx(ctx *c)
{
    memset(c, 0, sizeof *c);
    c->fail_at = -1, c->caller = pthread_self();
    pthread_mutex_init(&c->mu, NULL);
}

static fl_status go(int jobs, int window, int64_t n, ctx *c)
{
    fl_pool *p;
    FL_TRY(fl_pool_open(jobs, sizeof(slot), window, work, done, progress, c, &p));
    fl_status e = FL_OK;
    for (int64_t i = 0; i < n && !e; i++) {
        slot s = {.i = i};
        e = fl_pool_submit(p, &s);
        c->submitted += !e;
    }
    const fl_status f = fl_pool_close(p);
    return e ? e : f;
}

Test(pool, done_in_order_on_the_caller_for_any_jobs)
{
    fl_time_limit(FL_T(120));
    const int jobs[] = {1, 2, 3, 8};
    for (int k = 0; k < 4; k++) {
        ctx c;
        init_ctx(&c);
        cr_assert_eq(go(jobs[k], 4 * jobs[k], 200, &c), FL_OK, "%s", fl_last_error());
        cr_assert_eq(c.next, 200);
        cr_assert_eq(c.wrong_thread, 0);
        cr_assert_eq(c.progress_back, 0);
        cr_assert_eq(c.finished_seen, 200, "progress reached every task");
        if (jobs[k] == 1) cr_assert_eq(c.threads_seen, 1, "jobs 1: the caller's thread only");
        else cr_assert_geq(c.threads_seen, 2, "jobs %d: work on several threads", jobs[k]);
        if (jobs[k] == 1) cr_assert(pthread_equal(c.seen[0], pthread_self()));
    }
}

Test(pool, the_window_bounds_what_is_in_flight)
{
    ctx c;
    init_ctx(&c);
    cr_assert_eq(go(3, 5, 100, &c), FL_OK);
    cr_assert_leq(c.in_flight_max, 5, "in flight %lld", (long long)c.in_flight_max);
}

Test(pool, a_failing_done_stops_at_that_task)
{
    for (int jobs = 1; jobs <= 3; jobs++) {
        ctx c;
        init_ctx(&c);
        c.fail_at = 37;
        cr_assert_eq(go(jobs, 8, 100, &c), FL_EIO);
        cr_assert_str_eq(fl_last_error(), "task 37 failed");
        cr_assert_eq(c.next, 38, "jobs %d: done stopped after task 37, got to %lld", jobs, (long long)c.next);
        cr_assert_leq(c.submitted, 37 + 8, "submissions stop once done failed");
    }
}

Test(pool, defaults_and_cores)
{
    cr_assert_geq(fl_pool_cores(), 1);
    fl_pool_set_default_jobs(3);
    cr_assert_eq(fl_pool_jobs_or_default(0), 3);
    cr_assert_eq(fl_pool_jobs_or_default(5), 5);
    fl_pool_set_default_jobs(0);
    cr_assert_eq(fl_pool_jobs_or_default(0), 1);
    cr_assert_eq(fl_pool_close(NULL), FL_OK);
}

/* A worker's error reaches the caller with its message: errors are per thread. */
typedef struct {
    int64_t i;
    fl_pool_status st;
} failing_slot;

static void failing_work(void *vs, void *vc)
{
    failing_slot *s = vs;
    fl_pool_keep(&s->st, s->i == 5 ? fl_fail(FL_ECAPACITY, "worker says %lld", (long long)s->i) : FL_OK);
}

static fl_status failing_done(int64_t i, void *vs, void *vc) { return fl_pool_raise(&((failing_slot *)vs)->st); }

Test(pool, a_workers_message_reaches_the_caller)
{
    for (int jobs = 1; jobs <= 3; jobs += 2) {
        fl_pool *p;
        fl_fail(FL_EIO, "an older error on this thread");
        cr_assert_eq(fl_pool_open(jobs, sizeof(failing_slot), 4, failing_work, failing_done, NULL, NULL, &p), FL_OK);
        fl_status e = FL_OK;
        for (int64_t i = 0; i < 10 && !e; i++) {
            failing_slot s = {.i = i};
            e = fl_pool_submit(p, &s);
        }
        const fl_status f = fl_pool_close(p);
        cr_assert_eq(e ? e : f, FL_ECAPACITY);
        cr_assert_str_eq(fl_last_error(), "worker says 5");
    }
}
