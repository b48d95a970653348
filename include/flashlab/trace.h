/* trace.h: writing a run's tile events (machine.h's trace callback) as CSV or JSON lines.
 *
 * A trace writer is the ctx of fl_machine_set_trace / fl_run's trace argument: pass
 * fl_trace_event as the callback and the writer as its context.  Every event becomes one line
 * holding what the machine reported (the kind, the tensor, the SRAM buffer, the tile's corner and
 * shape, SRAM use after the event, the machine's total reads and writes so far) and what the
 * writer derives from earlier events of the same run, without re-running any model:
 *
 *   tile_r, tile_c   the tile's index in units of the buffer's shape (r0 / rows, c0 / cols of the
 *                    buffer as it was allocated), -1 for ALLOC/FREE;
 *   tensor_reads,    this tensor's reads / writes so far (the sum of the nr*nc of its earlier
 *   tensor_writes    loads / stores, i.e. the machine's rules R1/R2 seen from outside);
 *   step             1, 2, ... per run;
 *   reads, writes    the machine's totals so far, counted from the run's first visible event (a
 *                    backward-only run hides the forward that produces its inputs: run.h).
 *
 * CSV columns (a contract, docs/labs/lab2.md and figures/trace_*.gp read them):
 *   algo,step,event,tensor,buf,r0,c0,nr,nc,tile_r,tile_c,sram_used,sram_capacity,
 *   tensor_reads,tensor_writes,reads,writes
 * event is load, store, alloc or free; tensor is "-" for alloc/free.  JSON lines carry the same
 * keys, one object per line, with "tensor": null for alloc/free.
 *
 * Several runs may go to one writer (e.g. standard, flash1, flash2 side by side): call
 * fl_trace_begin_run before each; the CSV header is written once.
 */
#ifndef FL_TRACE_H
#define FL_TRACE_H

#include <stdint.h>
#include <stdio.h>

#include "machine.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { FL_TRACE_CSV = 0, FL_TRACE_JSONL = 1 } fl_trace_format;

/* Parses "csv" or "jsonl"; FL_EINVAL naming --format otherwise ("json" too: JSON lines are not
 * one JSON document, so that name would promise what is not written). */
fl_status fl_trace_format_parse(const char *s, fl_trace_format *out);

typedef struct {
    char name[FL_NAME_LEN];
    int64_t a, b; /* buffers: rows, cols; tensors: reads, writes so far */
} fl_trace_slot;

/* The writer's state.  Set it up with fl_trace_init; its fields are private. */
typedef struct {
    FILE *out;
    fl_trace_format fmt;
    int header_done;
    char label[FL_NAME_LEN];
    int64_t M, step;
    int64_t base_reads, base_writes; /* the machine's totals before the run's first visible event */
    fl_trace_slot bufs[FL_MAX_BUFS];
    int nbufs;
    fl_trace_slot tensors[FL_MAX_TENSORS];
    int ntensors;
} fl_trace_writer;

/* Prepares w to write to out (not owned) in format fmt. */
void fl_trace_init(fl_trace_writer *w, FILE *out, fl_trace_format fmt);

/* Starts a run: events that follow carry `label` (e.g. the schedule's name, copied) in the algo
 * column and sram_capacity = M; step and the per-run state restart. */
void fl_trace_begin_run(fl_trace_writer *w, const char *label, int64_t M);

/* The trace callback: ctx is an fl_trace_writer.  Writes one line for ev; returns nonzero (the
 * run stops, machine.h) once writing to the output has failed, so a full disk ends the run at
 * once instead of after its last event.  fl_trace_finish then reports the failure. */
int fl_trace_event(const fl_event *ev, void *ctx);

/* Flushes the output; FL_EIO ("trace: ...") if any write failed. */
fl_status fl_trace_finish(fl_trace_writer *w);

#ifdef __cplusplus
}
#endif

#endif
