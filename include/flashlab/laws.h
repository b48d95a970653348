/* laws.h: the IO laws fitted (GSL, fit.h) to sweeps of the count-only machine, printed as
 * `flashlab bound` and `flashlab report` show them.  docs/analysis.md explains every number and
 * why each fit's regime is the one chosen; the schedules fitted are the registry's "all" and its
 * roles (schedule.h: the paper's law, the schedule that materializes S and P). */
#ifndef FL_LAWS_H
#define FL_LAWS_H

#include <stdio.h>

#include "fit.h"
#include "sweep.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The d sweep for the slope in d: every schedule of "all", N = 65536, M = 524288, d = 16..256
 * (x2). */
fl_sweep_spec fl_analysis_dsweep(void);

/* Prints the fits of docs/analysis.md over the main sweep t and the d sweep dt (may be NULL or
 * empty: the slope in d is then fitted over the (N, M) of t with the most values of d).  brief:
 * one row per (schedule, d) at the largest N instead of every N.  Returns FL_OK; a fit with
 * fewer than 3 points is left out, never an error. */
fl_status fl_bound_print(FILE *out, const fl_table *t, const fl_table *dt, int brief);

#ifdef __cplusplus
}
#endif

#endif
