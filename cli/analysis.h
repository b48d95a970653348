/* analysis.h: what `flashlab bound`, `flashlab plot` and `flashlab report` share.
 * The sweeps they run, the fits they print (cmd_bound.c) and the figures they write
 * (cmd_plot.c).  docs/analysis.md explains every number. */
#ifndef FL_CLI_ANALYSIS_H
#define FL_CLI_ANALYSIS_H

#include <stdio.h>

#include <flashlab/fit.h>
#include <flashlab/laws.h>
#include <flashlab/output.h>
#include <flashlab/sweep.h>

/* Runs the sweep and writes it as `flashlab sweep` would (provenance '#' lines naming command,
 * the count CSV header, rows, '# skipped:' lines).  collect (may be NULL) also receives every
 * row.  *st (may be NULL) receives the totals. */
fl_status fl_sweep_write_csv(const fl_sweep_spec *s, FILE *out, const char *command,
                             fl_table *collect, fl_sweep_stats *st);


/* The files figures (a)-(d), (g), (h) and (i) make, relative to the output directory: fig_*.png, .pdf,
 * .svg and data/fig_*.csv (FL_FIGURE_FILES).  Fills names[0..) up to cap; returns the count. */
int fl_figures_names(const char **names, int cap);

/* How many files fl_figures_names lists: seven figures (a)-(d), (g), (h), (i), each PNG, PDF, SVG and data. */
#define FL_FIGURE_FILES 28

/* Before any work: a gnuplot with the pngcairo, pdfcairo and svg terminals runs (FL_EINVAL
 * naming what to install otherwise), and the scripts exist.  scripts: the figures/ directory
 * (NULL: $FLASHLAB_FIGURES_DIR, else an installed flashlab's figures/ beside the executable or in
 * ../share/flashlab/figures, else the source tree's); *resolved receives the one used. */
fl_status fl_figures_prepare(const char *scripts, const char **resolved);

/* fl_outdir_open(dir, "--out", ...) for a directory whose path goes into gnuplot's strings:
 * quotes, '$', '`' and '\' are refused first (FL_EINVAL naming --out). */
fl_status fl_outdir_open_checked(const char *dir, const char **names, int n, fl_outdir **out);

/* Writes every file of fl_figures_names into dir (a staging directory, data/ in it): runs the
 * sweeps behind figures (a)-(d), their CSVs, and gnuplot (scripts from fl_figures_prepare) for
 * the PNG, PDF and SVG.  The PDFs carry a fixed creation date, so two runs give the same bytes.
 * FL_EIO naming the step on failure.  Progress lines go to log (may be NULL). */
fl_status fl_figures_write(const char *dir, const char *scripts, FILE *log);

/* FL_OK when a gnuplot with the pngcairo, pdfcairo and svg terminals runs; else FL_EINVAL
 * with a one-line message naming what to install. */
fl_status fl_gnuplot_check(void);

#endif
