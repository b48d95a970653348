/* emit.h: writing results as a table, CSV or JSON.  The CSV columns are a contract (docs/analysis.md):
 *   algo,N,d,M,Br,Bc,hbm_reads,hbm_writes,hbm_total,sram_peak,closed_form_total,hbm_bytes,
 *   tile_events,Bd   and, for run, max_abs_err,rel_err; then pass,Nk,causal,window_left,
 *   window_right,batch,heads,kv_heads,varlen,fwd_total,bwd_total, for run dq_rel_err,dk_rel_err,
 *   dv_rel_err, and last splits,page_size,density.  Counts are elements. */
#ifndef FL_CLI_EMIT_H
#define FL_CLI_EMIT_H

#include <stdio.h>

#include <flashlab/run.h>

typedef enum { FL_FMT_TABLE, FL_FMT_CSV, FL_FMT_JSON } fl_format;

/* Parses "table", "csv" or "json"; FL_EINVAL naming --format otherwise. */
fl_status fl_format_parse(const char *s, fl_format *out);

/* A results writer: begin once, one row per result, end once.  with_errors adds the columns of
 * a compute run. */
typedef struct {
    FILE *out;
    fl_format fmt;
    int with_errors;
    int rows;
} fl_emitter;

void fl_emit_begin(fl_emitter *e, FILE *out, fl_format fmt, int with_errors);
void fl_emit_row(fl_emitter *e, const fl_result *r);
void fl_emit_end(fl_emitter *e);

/* Prints how the blocks were chosen: the schedule's rule, the paper's sizes and the footprint
 * they would need (flash1), and what was chosen. */
void fl_emit_explain(FILE *out, const fl_result *r);

#endif
