/* merge.h: joining the CSVs of a sharded run (`flashlab merge`, docs/analysis.md §1).
 *
 * A shard's CSV is the whole run's CSV with three differences: its provenance lines (the '#'
 * lines above the header) hold one more line, "# shard: I/N of C configurations; ...", written by
 * fl_merge_shard_line; its command line leaves out the options that name the shard and where it
 * was written; and below the header it holds only the lines of its configurations: configuration
 * k (from 0, in the run's order) is in shard k mod N + 1, one line each (a row, or sweep's
 * '# skipped:' line).  Merging therefore takes the provenance lines without the shard line, the
 * header, and the shards' lines round robin; the result is the run's CSV byte for byte.
 */
#ifndef FL_MERGE_H
#define FL_MERGE_H

#include <stdint.h>
#include <stdio.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most shards one merge joins (each is an open file). */
#define FL_MERGE_MAX_SHARDS 1000

/* The longest line a shard may hold, and the most bytes of one shard. */
#define FL_MERGE_MAX_LINE (1 << 20)
#define FL_MERGE_MAX_BYTES (INT64_C(1) << 36)

/* Writes the "# shard: I/N of C configurations; ..." line of shard i (1 <= i <= n) of a run of
 * `configs` configurations. */
void fl_merge_shard_line(FILE *out, int64_t i, int64_t n, int64_t configs);

/* Reads the n shards in[0..n) (named names[i] in messages, in any order) and writes the whole
 * run's CSV to out.  Refused with FL_EINVAL, naming the file and the rule, before or while
 * writing (the caller writes out through output.h, so a refusal leaves no file): a file that is not
 * a shard (no shard line, no header, a NUL byte, a line over FL_MERGE_MAX_LINE or a file over
 * FL_MERGE_MAX_BYTES); shards of different runs (their N or configuration counts differ), a
 * shard missing or given twice, more than FL_MERGE_MAX_SHARDS; shards written by different
 * versions of flashlab (their first lines differ), of different commands (their "# command:"
 * lines differ) or with other provenance lines or headers that differ; a shard with fewer or
 * more lines than its configurations, or whose last line has no newline (cut short); and a run
 * none of whose configurations produced a row.  FL_EIO when a read or a write fails. */
fl_status fl_merge_shards(FILE *const *in, const char *const *names, int n, FILE *out);

#ifdef __cplusplus
}
#endif

#endif
