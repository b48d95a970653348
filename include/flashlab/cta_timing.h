/* cta_timing.h: when and on which SM each work item of a kernel launch ran, as measured by an
 * instrumented kernel (scripts/triton_cta_timing.py reads %globaltimer and %smid in each
 * program), for the launch model's timed walk (launch_model.h, rule S2 of docs/third_party.md §3).
 *
 * The file is a CSV: lines starting with '#' are provenance and skipped; the first other line is
 * the header `item,sm,start_ns,end_ns`; then one row per work item, the item's index in grid order
 * (0 .. rows - 1, each exactly once, in any row order), its SM (>= 0) and its start and end in
 * nanoseconds from any common origin (0 <= start <= end). */
#ifndef FL_CTA_TIMING_H
#define FL_CTA_TIMING_H
#include <stdint.h>
#include <stdio.h>

#include "status.h"

typedef struct {
    int64_t sm;         /* the SM the work item ran on */
    int64_t start, end; /* ns, start <= end */
} fl_cta_time;

/* Reads a timing CSV from `in` (`name` and `option` label the errors: "OPTION NAME: line L: rule").
 * On success *out (malloc'd, the caller frees it) holds *n entries indexed by item.  FL_EINVAL on
 * any row that breaks a rule above, on no rows, on more than 2^24 rows or a line over 255
 * characters; FL_ENOMEM when the host runs out of memory.  On failure *out is NULL and *n 0. */
fl_status fl_cta_timing_read(FILE *in, const char *name, const char *option, fl_cta_time **out, int64_t *n);
#endif
