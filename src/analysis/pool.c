/* pool.c: a small pthread pool whose results are taken in order (see pool.h). */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <flashlab/pool.h>

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { FREE = 0, QUEUED, RUNNING, FINISHED };

struct fl_pool {
    fl_pool_work_fn work;
    fl_pool_done_fn done;
    fl_pool_progress_fn progress;
    void *ctx;
    size_t slot_size;
    int window, nthreads;
    char *slots;     /* window slots; task i lives in slot i mod window */
    int *state;      /* per slot */
    int64_t submitted, started, finished, taken; /* tasks queued, begun, worked, done */
    int64_t told;    /* finished count last given to progress */
    int stop;        /* no task starts any more: closing, or done failed */
    fl_status err;   /* done's first failure */
    pthread_mutex_t mu;
    pthread_cond_t has_work, has_result;
    pthread_t *threads;
};

static int default_jobs = 1;

void fl_pool_set_default_jobs(int jobs) { default_jobs = jobs >= 1 ? jobs : 1; }

int fl_pool_jobs_or_default(int jobs) { return jobs >= 1 ? jobs : default_jobs; }

int fl_pool_cores(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) >= 1) return CPU_COUNT(&set);
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n >= 1 ? (int)n : 1;
}

fl_status fl_pool_keep(fl_pool_status *s, fl_status e)
{
    if ((s->e = e)) snprintf(s->why, sizeof s->why, "%s", fl_last_error_raw());
    return e;
}

fl_status fl_pool_raise(const fl_pool_status *s) { return s->e ? fl_fail(s->e, "%s", s->why) : FL_OK; }

static void *slot_of(fl_pool *p, int64_t i) { return p->slots + (size_t)(i % p->window) * p->slot_size; }

static void *worker(void *arg)
{
    fl_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->started == p->submitted) pthread_cond_wait(&p->has_work, &p->mu);
        if (p->stop) break;
        const int64_t i = p->started++;
        p->state[i % p->window] = RUNNING;
        pthread_mutex_unlock(&p->mu);
        p->work(slot_of(p, i), p->ctx);
        pthread_mutex_lock(&p->mu);
        p->state[i % p->window] = FINISHED;
        p->finished++;
        pthread_cond_signal(&p->has_result);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* With the lock held: takes the finished tasks at the head, in order, waiting for them until
 * `upto` tasks are taken (or done failed), and tells progress what has finished meanwhile.
 * Returns with the lock held. */
static void drain(fl_pool *p, int64_t upto)
{
    while (!p->err && p->taken < upto) {
        if (p->state[p->taken % p->window] != FINISHED) {
            if (p->progress && p->finished > p->told) {
                p->told = p->finished;
                pthread_mutex_unlock(&p->mu);
                p->progress(p->told, p->ctx);
                pthread_mutex_lock(&p->mu);
                continue;
            }
            pthread_cond_wait(&p->has_result, &p->mu);
            continue;
        }
        const int64_t i = p->taken, f = p->finished;
        const int tell = p->progress && f > p->told;
        if (tell) p->told = f;
        pthread_mutex_unlock(&p->mu);
        if (tell) p->progress(f, p->ctx);
        const fl_status e = p->done(i, slot_of(p, i), p->ctx);
        pthread_mutex_lock(&p->mu);
        p->state[i % p->window] = FREE;
        p->taken++;
        if (e) p->err = e, p->stop = 1, pthread_cond_broadcast(&p->has_work);
    }
}

fl_status fl_pool_open(int jobs, size_t slot_size, int window, fl_pool_work_fn work, fl_pool_done_fn done,
                       fl_pool_progress_fn progress, void *ctx, fl_pool **out)
{
    *out = NULL;
    if (jobs > FL_POOL_MAX_JOBS) jobs = FL_POOL_MAX_JOBS;
    if (jobs < 1) jobs = 1;
    if (window < jobs) window = jobs;
    if (jobs == 1) window = 1;
    fl_pool *p = calloc(1, sizeof *p);
    if (!p) return fl_fail(FL_ENOMEM, "out of memory for a pool of %d threads", jobs);
    p->work = work, p->done = done, p->progress = progress, p->ctx = ctx;
    p->slot_size = slot_size ? slot_size : 1, p->window = window;
    p->slots = calloc((size_t)window, p->slot_size);
    p->state = calloc((size_t)window, sizeof *p->state);
    p->threads = jobs > 1 ? calloc((size_t)jobs, sizeof *p->threads) : NULL;
    if (!p->slots || !p->state || (jobs > 1 && !p->threads)) {
        free(p->slots), free(p->state), free(p->threads), free(p);
        return fl_fail(FL_ENOMEM, "out of memory for a pool of %d threads", jobs);
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->has_work, NULL);
    pthread_cond_init(&p->has_result, NULL);
    for (int k = 0; k < jobs && jobs > 1; k++)
        if (pthread_create(&p->threads[p->nthreads], NULL, worker, p) == 0) p->nthreads++;
    if (p->nthreads == 0) p->window = 1; /* no thread: the caller's loop, as jobs = 1 */
    *out = p;
    return FL_OK;
}

fl_status fl_pool_submit(fl_pool *p, const void *input)
{
    if (!p->nthreads) { /* serial: work and done at once */
        if (p->err) return p->err;
        void *slot = p->slots;
        memcpy(slot, input, p->slot_size);
        p->work(slot, p->ctx);
        p->finished++;
        if (p->progress) p->progress(p->finished, p->ctx);
        const fl_status e = p->done(p->taken++, slot, p->ctx);
        if (e) p->err = e;
        return e;
    }
    pthread_mutex_lock(&p->mu);
    drain(p, p->submitted - p->window + 1); /* room for one more */
    fl_status e = p->err;
    if (!e) {
        memcpy(slot_of(p, p->submitted), input, p->slot_size);
        p->state[p->submitted % p->window] = QUEUED;
        p->submitted++;
        pthread_cond_signal(&p->has_work);
    }
    pthread_mutex_unlock(&p->mu);
    return e;
}

fl_status fl_pool_close(fl_pool *p)
{
    if (!p) return FL_OK;
    if (p->nthreads) {
        pthread_mutex_lock(&p->mu);
        drain(p, p->submitted);
        p->stop = 1;
        pthread_cond_broadcast(&p->has_work);
        pthread_mutex_unlock(&p->mu);
        for (int k = 0; k < p->nthreads; k++) pthread_join(p->threads[k], NULL);
    }
    const fl_status e = p->err;
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->has_work);
    pthread_cond_destroy(&p->has_result);
    free(p->slots), free(p->state), free(p->threads), free(p);
    return e;
}
