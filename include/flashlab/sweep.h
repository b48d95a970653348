/* sweep.h: run a grid of configurations on the count-only machine.
 *
 * A sweep is the Cartesian product of value lists for the schedule, N, d, M, Br and Bc.  Each
 * configuration is executed by fl_run (run.h) in FL_COUNT mode: every count comes from the
 * schedule running on the machine, never from a closed form.
 *
 * Order (deterministic): schedules in the order given, then N, then d, then M, then Br, then Bc,
 * each list in the order given (the last list varies fastest).
 *
 * A configuration that cannot run is *skipped* with its reason, never dropped silently: M below
 * the schedule's smallest tiles (FL_ECAPACITY), a --Br/--Bc override that does not fit in M,
 * more tile events than max_events (FL_EINVAL), counts that overflow 64 bits (FL_EOVERFLOW).
 * The sink's skip callback receives the problem and the raw line of fl_last_error_raw() (its
 * quantities as {name} tokens, status.h: render it with fl_error_render).  Any other error
 * (out of memory, a schedule bug) stops the sweep and is returned.
 *
 * With M_upto_Nd set, M values above N*d are not part of the grid for that (N, d): this is the
 * upper end of the paper's regime d <= M <= Nd, a choice of grid, not a skip.
 *
 * Shards (a grid spread over the machines of a cluster): with nshards > 1 a run executes only the
 * configurations k (numbered from 0 in sweep order) with k mod nshards == shard, in order, so the
 * shards' rows interleaved round robin are the whole run's rows (`flashlab merge`).
 */
#ifndef FL_SWEEP_H
#define FL_SWEEP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "run.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int algos[FL_ALGO_MAX];     /* fl_algo values, in output order */
    int nalgos;
    const int64_t *N, *d, *M; /* value lists (caller-owned, must outlive the sweep) */
    int nN, nd, nM;
    const int64_t *Br, *Bc;  /* NULL (or a 0 value) = the schedule's default rule */
    int nBr, nBc;
    int M_upto_Nd;           /* keep only M <= N*d */
    int elem_bytes;          /* bytes per element of Q, K, V, O, S, P */
    int64_t max_events;      /* per configuration; 0 = no limit */
    int64_t max_total_events; /* the whole sweep (fl_sweep_estimate), checked before the first
                               * configuration runs; 0 = no limit */
    const fl_problem *base;  /* NULL (= fl_problem_default()), or the problem every configuration
                              * starts from: the fields no list sets (Nk, masks, heads, pass,
                              * decode's cache, blocksparse's mask, seed); the lists, elem_bytes
                              * and max_events above replace its fields */
    int64_t shard, nshards;  /* run the configurations k with k mod nshards == shard (0 <= shard
                              * < nshards); nshards 0 or 1: every configuration */
    int jobs;                /* configurations run at once on threads (pool.h); 0: the default
                              * (fl_pool_set_default_jobs); the results reach the sink in sweep
                              * order whatever the jobs, so the output is the same */
} fl_sweep_spec;

/* Configurations in flight (run, waiting for the ones before them to be taken) with `jobs`
 * threads: the pool's window (pool.h), about 1.2 KB each.  Wide, so a worker keeps going while one
 * long configuration holds the oldest slot (one configuration of the report's sweep makes a third of its tile events). */
#define FL_SWEEP_WINDOW(jobs) ((jobs) * 128 > 4096 ? (jobs) * 128 : 4096)

/* Receives the sweep's results in order, on the thread that called fl_sweep_run (whatever the
 * jobs).  Any callback may be NULL.  check, called after each configuration, stops the sweep when
 * it returns a status other than FL_OK (having recorded its message with fl_fail): fl_sweep_run
 * then returns that status (a writer whose output failed). */
typedef struct {
    void (*row)(const fl_result *r, void *ctx);
    void (*skip)(const fl_problem *p, const char *reason, void *ctx);
    void (*progress)(int64_t done, int64_t total, void *ctx); /* configurations finished so far
                                                                * (in any order), as they grow */
    void *ctx;
    fl_status (*check)(void *ctx);
} fl_sweep_sink;

typedef struct {
    int64_t configs; /* configurations this run executes: the grid's (after M_upto_Nd), or its shard's */
    int64_t rows;    /* configurations that ran */
    int64_t skipped; /* configurations that could not run */
    int64_t events;  /* tile events executed, summed over rows */
} fl_sweep_stats;

/* A spec with no lists, the three schedules standard, flash1, flash2 (one head, forward), fp16
 * sizes, fl_problem_default's event limit per configuration and FL_SWEEP_MAX_TOTAL_EVENTS for
 * the whole sweep. */
fl_sweep_spec fl_sweep_spec_init(void);

/* The default sweep of `flashlab report` and `flashlab bound`: all three forward schedules,
 * N = 512..65536 (x2), d in {64, 128}, M = 4096..N*d (x2), default blocks. */
fl_sweep_spec fl_sweep_spec_report(void);

/* Largest grid a sweep accepts (configurations before --M-upto-Nd): each configuration costs a
 * few microseconds even when tiny, and a grid beyond this would also write hundreds of MB, so it
 * is refused with the rule instead (docs/errors.md). */
#define FL_SWEEP_MAX_CONFIGS INT64_C(1000000)

/* Default limit of a whole sweep's tile events (--max-total-events): 3e9, as a count's
 * --max-events (about 25 s of the count-only machine here: FL_EVENTS_PER_SECOND, run.h). */
#define FL_SWEEP_MAX_TOTAL_EVENTS INT64_C(3000000000)

/* Number of configurations in the grid (every shard's); FL_EINVAL (naming the option) if a list
 * is empty, the grid has more than FL_SWEEP_MAX_CONFIGS configurations, or the shard is not one of
 * 0 .. nshards - 1. */
fl_status fl_sweep_size(const fl_sweep_spec *s, int64_t *configs);

/* The configurations of the grid that this spec's shard runs (all of them without shards). */
int64_t fl_sweep_shard_size(const fl_sweep_spec *s, int64_t configs);

/* The tile events the sweep will execute, summed over its configurations (its shard's; saturating
 * at INT64_MAX), from each one's closed form, before anything runs: a configuration that will be
 * skipped (M too small, more than max_events, overflow) adds 0.  A configuration whose closed
 * form walks its blocks is first bounded below as fl_run does (every row block stores its
 * output), so the estimate costs no more than the runs' own checks.  *configs: the
 * configurations it runs (fl_sweep_shard_size).  FL_EINVAL as fl_sweep_size. */
fl_status fl_sweep_estimate(const fl_sweep_spec *s, int64_t *configs, int64_t *events);

/* The sweep's limits, before any work: fl_sweep_size's, and, when s->max_total_events > 0, the
 * estimate of fl_sweep_estimate against it (FL_EINVAL naming --max-total-events, the
 * configurations and the estimate).  *configs: the configurations this run executes
 * (fl_sweep_shard_size). */
fl_status fl_sweep_check(const fl_sweep_spec *s, int64_t *configs);

/* Runs the sweep, calling sink for each configuration in order; *stats (may be NULL) receives
 * the totals.  Returns FL_OK when the sweep completed (skips included).  fl_sweep_check's
 * errors come first, before any configuration runs. */
fl_status fl_sweep_run(const fl_sweep_spec *s, const fl_sweep_sink *sink, fl_sweep_stats *stats);

/* One configuration's counts, as kept in memory by fl_sweep_collect. */
typedef struct {
    fl_algo algo;
    int64_t N, d, M, Br, Bc, Bd;
    int64_t reads, writes, total, bytes, events, closed_total;
} fl_point;

/* Points in sweep order.  Zero-initialise; free with fl_table_free. */
typedef struct {
    fl_point *p;
    size_t n, cap;
    int64_t skipped;
} fl_table;

/* Appends r's counts to t.  FL_ENOMEM if t cannot grow. */
fl_status fl_table_add(fl_table *t, const fl_result *r);

/* Runs the sweep and appends every row to t (skips are counted in t->skipped). */
fl_status fl_sweep_collect(const fl_sweep_spec *s, fl_table *t, fl_sweep_stats *stats);

/* Frees t's points; t becomes empty.  NULL is a no-op. */
void fl_table_free(fl_table *t);

/* Reads the CSV that `flashlab sweep` (or `count --format csv`) writes into t (appending):
 * '#' lines and blank lines are skipped; the first other line must be the header, starting
 * algo,N,d,M,Br,Bc,hbm_reads,hbm_writes,hbm_total; each row needs at least the 14 columns up to
 * Bd, with integer counts.  Rows of a pass other than fwd are refused (the laws are about the
 * forward pass).  FL_EINVAL naming name:line and the rule on a malformed line.  The reader
 * cannot loop on endless input: a NUL byte (binary data, /dev/zero), a line longer than 4094
 * characters, more than FL_CSV_MAX_LINES lines or FL_CSV_MAX_BYTES bytes is FL_EINVAL at once;
 * a failed read is FL_EIO. */
#define FL_CSV_MAX_LINES INT64_C(4000000)
#define FL_CSV_MAX_BYTES (INT64_C(1) << 30)
fl_status fl_table_read_csv(FILE *in, const char *name, fl_table *t);

/* The first point with these coordinates (any blocks), or NULL. */
const fl_point *fl_table_find(const fl_table *t, fl_algo a, int64_t N, int64_t d, int64_t M);

#ifdef __cplusplus
}
#endif

#endif
