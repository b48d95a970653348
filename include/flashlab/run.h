/* run.h: run one schedule on the machine and report what it moved.
 *
 * fl_run is the one entry point the CLI, the tests, the notebooks (through the shared library)
 * and the GPU harness use to get model counts.  It validates the problem, chooses blocks,
 * computes the closed form (refusing sizes whose counts overflow 64 bits), builds a machine of
 * capacity M, adds Q, K, V, O (packed over batch and heads: src/problem/segments.h), executes the
 * schedule over every (batch, head) segment and copies the counters out.  In FL_COMPUTE mode the
 * inputs are random (uniform in [-1, 1), from p->seed) and the output O is compared with
 * reference/ (and flash2's logsumexp L with the reference's).  The variants' inputs (docs/model.md
 * §14) are added too: the sink logits (sink, Hq x 1, fp32, uniform in [-1, 1)), the dropout seed
 * (rng: p->seed and offset 0, 8 bytes each), fp8's scale factors (Q_scale, K_scale, V_scale, fp32,
 * powers of two 2^-2 .. 2^2), all drawn after the others so that a problem without them gets the
 * inputs it always got; a backward with sinks adds their gradient dsink (Hq x 1, fp32).
 *
 * Passes (docs/model.md §backward, rule P1).  p->pass = FL_PASS_FWD counts the forward.
 * FL_PASS_FWD_BWD runs the forward and then the backward on the same machine and counts both:
 * the backward reads what the forward saved (O and L, or l and m, or P).  FL_PASS_BWD counts the
 * backward alone: Q, K, V, O, dO and the saved statistics are in HBM when it starts (the forward
 * still runs, to produce them, but its traffic, events and SRAM are not reported); what the
 * backward reads of them, and everything it writes (dQ, dK, dV, D, dP, dS), is counted.  A
 * backward run also adds dO (random in compute mode), dQ, dK, dV, and checks dQ, dK, dV against
 * the reference's gradients.
 */
#ifndef FL_RUN_H
#define FL_RUN_H

#include "machine.h"
#include "problem.h"
#include "schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    char name[FL_NAME_LEN];
    int64_t reads, writes;
    int elem_bytes;
} fl_tensor_counts;

typedef struct {
    fl_problem p;
    fl_blocks b;                        /* the forward's blocks */
    fl_blocks b_bwd;                    /* the backward's blocks (pass includes bwd) */
    int ntensors;
    fl_tensor_counts t[FL_MAX_TENSORS]; /* per HBM tensor, in the order they were added */
    int64_t reads, writes, total;       /* elements, as counted by the machine */
    int64_t bytes;                      /* sum over tensors of (reads + writes) * elem_bytes */
    int64_t sram_peak, events;
    fl_counts closed;                   /* the closed form for the same problem and blocks */
    int64_t fwd_total, bwd_total;       /* reads + writes of each pass as counted (0 if not run) */
    int64_t segments;                   /* (batch, head) problems the schedule ran */
    int computed;                       /* FL_COMPUTE: the errors below are set */
    double max_abs_err, rel_err;        /* O against the reference */
    double lse_rel_err;                 /* flash2's L against the reference (NAN otherwise) */
    double dq_rel_err, dk_rel_err, dv_rel_err; /* backward: gradients vs the reference (NAN otherwise) */
    double dsink_rel_err;               /* backward with sinks: dsink vs the reference (NAN otherwise) */
} fl_result;

/* FL_COMPUTE_MAX_VALUES, the most values a compute run may hold in HBM: schedule.h. */

/* The multiply-adds of a compute run of p, schedule and reference together, as counted for
 * dense attention: per sequence and query head Nq x Nk x d (x 1 instead of d for the softmax
 * schedules), times 4 for a forward and 14 with the backward; saturates at INT64_MAX. */
int64_t fl_compute_macs(const fl_problem *p);

/* FL_EINVAL naming --max-macs, with the estimate, when a compute run of p would make more than
 * p->max_macs multiply-adds (0: no limit).  fl_run checks it before any compute run. */
fl_status fl_compute_check(const fl_problem *p);

/* Tile events a second of the count-only machine, measured on the 2-core build machine
 * (flash2's forward 1.25e8, flash1 1.6e8, standard 1.4e8, forward + backward 0.9e8 to 1.5e8;
 * blocksparse at density 0.5 only 3.2e7: its skipped blocks cost time without events).  What
 * the refusals' "about N s here" divide by; p->max_events' default, 3e9, is about 25 s. */
#define FL_EVENTS_PER_SECOND 1.2e8

/* "about N s here" for work at per_second ("under a second here", or about so many seconds,
 * minutes or hours): for the refusals of the work limits.  One of four rotating per-thread
 * buffers. */
const char *fl_seconds_of(int64_t work, double per_second);

/* The exact tile events fl_run(p, ...) will make (both passes of a fwd+bwd), computed from the
 * closed forms before any work, so that a caller running several problems can bound their sum.
 * FL_EINVAL as fl_run's checks, naming --max-events when p alone passes p->max_events: then
 * *events is the count past the limit, or, for a problem whose closed form walks every block
 * (refused from its events floor first), that floor; 0 after any other error. */
fl_status fl_run_events(const fl_problem *p, int64_t *events);

/* Runs p in the given mode.  trace (may be NULL) receives every tile event.  On FL_OK *r holds
 * the result; otherwise fl_last_error() says which input broke which rule and *r is unspecified.
 * FL_EINVAL also when the run would exceed p->max_events tile events, or a compute run would
 * make more than p->max_macs multiply-adds or hold more than FL_COMPUTE_MAX_VALUES values. */
fl_status fl_run(const fl_problem *p, fl_mode mode, fl_trace_fn trace, void *trace_ctx,
                 fl_result *r);

/* Values in and out of a compute run, in the packed layout of src/problem/segments.h (query rows
 * heads * Tq, key rows kv_heads * Tk; Tq = batch * N, or N with varlen).  Inputs NULL are
 * random as in fl_run; outputs NULL are not copied.  L has one value per query row. */
typedef struct {
    const double *Q, *K, *V, *dO; /* inputs (dO: backward only) */
    double *O, *L, *dQ, *dK, *dV; /* outputs (L: schedules that save it; dQ, dK, dV: backward) */
    const double *sink;           /* sinks: the Hq sink logits (NULL: random) */
    double *dsink;                /* backward with sinks: their gradient (Hq values) */
} fl_values;

/* fl_run in FL_COMPUTE mode with the caller's inputs and a copy of the outputs: the worked
 * examples and the notebooks use it to look at the numbers themselves. */
fl_status fl_run_values(const fl_problem *p, fl_values *v, fl_result *r);

#ifdef __cplusplus
}
#endif

#endif
