/* headdim.h: traffic against the head dimension at the SRAM of the GPU presets -- the data of
 * figure (h) and its summary in `flashlab report` (docs/model.md §14, docs/bounds.md §2.3): where
 * d^2 > M a head is in the small-cache regime, whose traffic is Theta(N^2 d / sqrt(M)). */
#ifndef FL_HEADDIM_H
#define FL_HEADDIM_H

#include <stdint.h>
#include <stdio.h>

#include <flashlab/regimes.h>

/* The SRAM sizes of figure (h): the distinct M (elements, fp16) of the GPU presets in preset
 * order, each with the presets that share it joined by '/' ("h100/h200/b200").  Returns their
 * number (at most cap). */
int fl_headdim_Ms(int64_t *M, char (*names)[64], int cap);

/* The grid of figure (h): forward, one dense head, N = 4096, d = 64 .. 1024 at each M of
 * fl_headdim_Ms (fl_regime_point_at: every schedule at its default rule, the optimum, the
 * bound), computed once per process; *pts points into that store.  A run's error otherwise. */
fl_status fl_headdim_collect(const fl_regime_point **pts, size_t *n);

/* Prints the summary: per M, every d with the optimum and the ratios to the bound (regimes.h's
 * table), where the boundary d = sqrt(M) falls, and which model presets (presets.h) have their
 * head dimension on which side of it. */
void fl_headdim_print(FILE *out, const fl_regime_point *pts, size_t n);

/* Collects the grid and writes it as CSV (regimes.h's columns) to path.  FL_EIO naming it. */
fl_status fl_headdim_write_path(const char *path);

/* The gnuplot variables of figure (h): Ms and Mnames, the panels' M and preset names. */
void fl_headdim_gnuplot_vars(char *vars, size_t n);

#endif
