/* machine.h: the two-level machine (HBM and an SRAM of M elements).  docs/model.md §1.
 *
 * HBM holds named tensors (row-major matrices of rows x cols elements).  SRAM holds buffers that
 * a schedule allocates; their capacities (rows x cols elements each) add up to at most M while
 * they are live.  A schedule moves rectangular tiles between the two:
 *
 *   fl_load  (HBM -> SRAM): counts nr*nc reads  on the tensor   (docs/model.md rule R1)
 *   fl_store (SRAM -> HBM): counts nr*nc writes on the tensor   (docs/model.md rule R2)
 *
 * and computes only on buffers (ops.h).  Nothing else is counted: scalars a schedule keeps
 * per row (a register) cost no SRAM (rule R3).
 *
 * Two modes.  FL_COMPUTE allocates real storage (double) for tensors and buffers and really
 * copies tiles, so a schedule's output can be checked against reference/.  FL_COUNT allocates no
 * element storage; fl_load/fl_store then only check bounds and add to counters, so a run costs
 * time proportional to the number of tile events.  Schedules test fl_computes() around their
 * arithmetic.
 *
 * Errors: an allocation that would take SRAM use above M fails with FL_ECAPACITY and a message
 * naming the schedule, the buffer asked for, every live buffer and M.  A tile outside its tensor
 * or buffer fails with FL_EBOUNDS; counts that would not fit 64 bits fail with FL_EOVERFLOW.
 */
#ifndef FL_MACHINE_H
#define FL_MACHINE_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FL_MAX_TENSORS 24
#define FL_MAX_BUFS 32
#define FL_NAME_LEN 16

typedef enum { FL_COUNT = 0, FL_COMPUTE = 1 } fl_mode;

/* An HBM tensor.  data is NULL in FL_COUNT mode. */
typedef struct {
    char name[FL_NAME_LEN];
    int64_t rows, cols;
    int elem_bytes;   /* bytes per element when reporting bytes (2 for fp16, 4 for fp32 stats) */
    double *data;     /* rows*cols values, row-major; FL_COMPUTE only */
    int64_t reads;    /* elements moved HBM -> SRAM */
    int64_t writes;   /* elements moved SRAM -> HBM */
} fl_tensor;

/* An SRAM buffer of capacity rows x cols.  x is NULL in FL_COUNT mode; in FL_COMPUTE mode it
 * holds rows*cols doubles with leading dimension cols.  A tile of nr x nc (nr <= rows,
 * nc <= cols) occupies its top-left corner. */
typedef struct {
    char name[FL_NAME_LEN];
    int64_t rows, cols;
    double *x;
    int live;
} fl_buf;

/* What fl_load, fl_store, fl_sram_alloc and fl_sram_free report to a trace callback. */
typedef enum { FL_EV_LOAD, FL_EV_STORE, FL_EV_ALLOC, FL_EV_FREE } fl_event_kind;

typedef struct {
    fl_event_kind kind;
    const char *tensor;      /* NULL for ALLOC/FREE */
    const char *buf;
    int64_t r0, c0, nr, nc;  /* the tile (ALLOC/FREE: 0, 0, rows, cols of the buffer) */
    int64_t sram_used;       /* after the event */
    int64_t reads, writes;   /* machine totals after the event */
} fl_event;

/* A trace callback: returns 0 to go on, nonzero to stop the run.  After a nonzero return the
 * machine refuses every further load, store and allocation with FL_ESTOPPED (the event that was
 * reported has happened), so the schedule returns at once and fl_run passes FL_ESTOPPED on. */
typedef int (*fl_trace_fn)(const fl_event *ev, void *ctx);

typedef struct fl_machine fl_machine;

/* Allocates a machine with SRAM capacity M (> 0) elements in the given mode, for the schedule
 * named `schedule` (used in error messages; the string must outlive the machine).
 * Returns NULL (with fl_last_error set) if M <= 0 or memory runs out.  Free with
 * fl_machine_free. */
fl_machine *fl_machine_alloc(int64_t M, fl_mode mode, const char *schedule);

/* Frees the machine, its tensors and buffers.  fl_machine_free(NULL) is a no-op. */
void fl_machine_free(fl_machine *m);

/* Nonzero when the machine moves real values (FL_COMPUTE). */
int fl_computes(const fl_machine *m);

/* Installs a trace callback (NULL removes it).  Called once per load/store/alloc/free; see
 * fl_trace_fn for how it stops a run. */
void fl_machine_set_trace(fl_machine *m, fl_trace_fn fn, void *ctx);

/* Adds an HBM tensor of rows x cols elements, each reported as elem_bytes bytes.  In FL_COMPUTE
 * mode its data is zeroed storage the caller may fill (fl_tensor_get(...)->data).  Returns the
 * tensor's id (>= 0) through *id. */
fl_status fl_tensor_add(fl_machine *m, const char *name, int64_t rows, int64_t cols,
                        int elem_bytes, int *id);

/* The tensor with this id (NULL if out of range), and the number of tensors. */
fl_tensor *fl_tensor_get(fl_machine *m, int id);
int fl_tensor_count(const fl_machine *m);

/* The id of the tensor called name, or -1. */
int fl_tensor_find(fl_machine *m, const char *name);

/* Allocates an SRAM buffer of rows x cols elements named `name` (must outlive the call: it is
 * copied).  Fails with FL_ECAPACITY if live buffers would exceed M.  *out points into the
 * machine and stays valid until fl_sram_free or fl_machine_free. */
fl_status fl_sram_alloc(fl_machine *m, const char *name, int64_t rows, int64_t cols,
                        fl_buf **out);

/* Releases a buffer's SRAM.  NULL is a no-op. */
void fl_sram_free(fl_machine *m, fl_buf *b);

/* Nonzero when b is one of m's SRAM buffers and live (not freed): what a caller outside the
 * library (the binding's student machine, include/flashlab/ops.h's fl_tile_* ops) checks before
 * it uses a buffer pointer it was handed. */
int fl_buf_owned(const fl_machine *m, const fl_buf *b);

/* Loads the nr x nc tile at (r0, c0) of tensor t into the top-left of buffer b: counts
 * nr*nc reads on t.  docs/model.md rule R1. */
fl_status fl_load(fl_machine *m, fl_buf *b, int t, int64_t r0, int64_t c0, int64_t nr,
                  int64_t nc);

/* Stores the top-left nr x nc tile of buffer b to (r0, c0) of tensor t: counts nr*nc writes
 * on t.  docs/model.md rule R2. */
fl_status fl_store(fl_machine *m, const fl_buf *b, int t, int64_t r0, int64_t c0, int64_t nr,
                   int64_t nc);

/* Loads element (r, c) of tensor t into the register *v (docs/model.md rule R3b: a per-head
 * scalar of a variant -- a sink logit, the dropout seed, an fp8 scale factor): one read and one
 * tile event on t, no SRAM.  *v is 0 in FL_COUNT mode.  The trace reports it as a 1 x 1 load
 * into the buffer "reg". */
fl_status fl_load_scalar(fl_machine *m, int t, int64_t r, int64_t c, double *v);

/* Stores the register v to element (r, c) of tensor t (rule R3b): one write and one tile
 * event, no SRAM. */
fl_status fl_store_scalar(fl_machine *m, double v, int t, int64_t r, int64_t c);

/* Totals over all tensors; peak SRAM use (elements); number of tile events (loads + stores). */
int64_t fl_machine_reads(const fl_machine *m);
int64_t fl_machine_writes(const fl_machine *m);
int64_t fl_machine_sram_peak(const fl_machine *m);

/* Restarts the peak record from the current SRAM use (fl_run reports a backward pass's own peak
 * after a forward it does not count). */
void fl_machine_reset_peak(fl_machine *m);
int64_t fl_machine_sram_used(const fl_machine *m);
int64_t fl_machine_events(const fl_machine *m);
int64_t fl_machine_capacity(const fl_machine *m);

#ifdef __cplusplus
}
#endif

#endif
