/* analysis.h: what `flashlab bound`, `flashlab plot` and `flashlab report` share.
 * The sweeps they run, the fits they print (cmd_bound.c) and the figures they write
 * (cmd_plot.c).  docs/analysis.md explains every number. */
#ifndef FL_CLI_ANALYSIS_H
#define FL_CLI_ANALYSIS_H

#include <stdio.h>

#include <flashlab/fit.h>
#include <flashlab/sweep.h>

/* Runs the sweep and writes it as `flashlab sweep` would (provenance '#' lines naming command,
 * the count CSV header, rows, '# skipped:' lines).  collect (may be NULL) also receives every
 * row.  *st (may be NULL) receives the totals. */
fl_status fl_sweep_write_csv(const fl_sweep_spec *s, FILE *out, const char *command,
                             fl_table *collect, fl_sweep_stats *st);

/* The d sweep for the slope in d: all schedules, N = 65536, M = 524288, d = 16..256 (x2). */
fl_sweep_spec fl_analysis_dsweep(void);

/* Prints the fits of docs/analysis.md over the main sweep t and the d sweep dt.  brief: one row
 * per (schedule, d) at the largest N instead of every N.  Returns FL_OK or a fit error. */
fl_status fl_bound_print(FILE *out, const fl_table *t, const fl_table *dt, int brief);

/* The flash1 M-slope the analysis quotes: at the largest N of t with d = d, over the paper's
 * regime d <= M <= Nd.  *N receives that N. */
fl_status fl_bound_flash1_slope(const fl_table *t, int64_t d, int64_t *N, fl_fit *f);

/* Writes figures (a)-(d) as PNG, PDF and SVG, and their data CSVs (dir/data/), into dir
 * (created if missing).  scripts: the figures/ directory (NULL: $FLASHLAB_FIGURES_DIR, else the
 * source tree's).  Everything is generated in a temporary directory beside dir and moved in only
 * when complete.  FL_EIO naming the step on failure; FL_EINVAL if gnuplot is missing.
 * Progress lines go to log (may be NULL).  *nfiles receives the number of files written. */
fl_status fl_figures_write(const char *dir, const char *scripts, FILE *log, int *nfiles);

/* Checks, before any work, that dir can receive output: a path without quotes, created if
 * missing (one level), a directory, writable (a temporary directory is made and removed in it).
 * FL_EIO (FL_EINVAL for the quotes) naming --out otherwise. */
fl_status fl_outdir_check(const char *dir);

/* FL_OK when a gnuplot with the pngcairo, pdfcairo and svg terminals runs; else FL_EINVAL
 * with a one-line message naming what to install. */
fl_status fl_gnuplot_check(void);

#endif
