/* pool.h: independent tasks on all cores, their results taken in order.
 *
 * A pool runs `work` on up to `jobs` threads, one task at a time per thread, and calls `done` for
 * each task on the thread that submitted it, in submission order, so a caller that writes
 * results from `done` writes exactly what a serial loop writes: a sweep's CSV with --jobs 4 is
 * byte for byte its CSV with --jobs 1.  At most `window` tasks are in flight (submitted but not
 * yet done): fl_pool_submit blocks while the window is full, taking finished tasks meanwhile, so
 * memory stays bounded however many tasks a run has.  With jobs = 1 there is no thread: submit
 * runs work and done at once, as the plain loop did.
 *
 * Thread safety of work: it runs concurrently with other tasks' work; everything the library
 * does for one configuration (fl_run, fl_optimize, the closed forms, the machine) keeps its
 * state in its arguments, and errors are per thread (status.h), so work that records its status
 * and fl_last_error() in its slot, for done to report, is safe.
 */
#ifndef FL_POOL_H
#define FL_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fl_pool fl_pool;

/* Runs one task on its slot (its input as submitted; its output for done).  Any thread. */
typedef void (*fl_pool_work_fn)(void *slot, void *ctx);

/* Takes task i's slot after its work, on the submitting thread, for i = 0, 1, ... in order.  A
 * status other than FL_OK stops the pool: no further task starts, no further done is called, and
 * fl_pool_submit and fl_pool_close return that status (its message stays this thread's
 * fl_last_error). */
typedef fl_status (*fl_pool_done_fn)(int64_t i, void *slot, void *ctx);

/* Told, on the submitting thread, how many tasks have finished their work (in any order) whenever
 * that number grows; may be NULL. */
typedef void (*fl_pool_progress_fn)(int64_t finished, void *ctx);

/* A task's status carried from its worker to done: errors are per thread (status.h), so work
 * keeps its status and message in the slot (fl_pool_keep) and done raises them again on the
 * submitting thread (fl_pool_raise). */
typedef struct {
    fl_status e;
    char why[1024]; /* the raw message */
} fl_pool_status;

/* Records e in s, with this thread's raw message (fl_last_error_raw: tokens kept for the front
 * end to render) when e is not FL_OK; returns e. */
fl_status fl_pool_keep(fl_pool_status *s, fl_status e);

/* FL_OK, or s's error raised on this thread (its message as fl_last_error()). */
fl_status fl_pool_raise(const fl_pool_status *s);

/* The jobs a caller that names none gets (fl_pool_jobs_or_default): 1 unless set.  The CLI sets it
 * from --jobs before any work; set it before starting threads, never concurrently. */
void fl_pool_set_default_jobs(int jobs);
int fl_pool_jobs_or_default(int jobs); /* jobs when >= 1, else the default */

/* The cores this process may run on (its CPU affinity; at least 1). */
int fl_pool_cores(void);

/* The most threads one pool starts. */
#define FL_POOL_MAX_JOBS 1024

/* Starts a pool of min(jobs, FL_POOL_MAX_JOBS) threads (jobs <= 1: none) whose tasks are slots of
 * slot_size bytes, at most window (>= 1; raised to jobs) in flight.  FL_ENOMEM; a thread that
 * cannot be started leaves the pool with fewer threads (none: it runs as jobs = 1). */
fl_status fl_pool_open(int jobs, size_t slot_size, int window, fl_pool_work_fn work, fl_pool_done_fn done,
                       fl_pool_progress_fn progress, void *ctx, fl_pool **out);

/* Queues a task whose slot starts as a copy of input (slot_size bytes).  Blocks while window
 * tasks are in flight, calling done for finished ones in order.  Returns done's first failure (the
 * task is then not queued). */
fl_status fl_pool_submit(fl_pool *p, const void *input);

/* Waits for every queued task, calls done for each in order, joins the threads and frees p.
 * Returns done's first failure, else FL_OK.  NULL is FL_OK. */
fl_status fl_pool_close(fl_pool *p);

#ifdef __cplusplus
}
#endif

#endif
