/* shard.h: `--shard I/N` of sweep and optimize: the I-th of N round-robin slices of a run, whose
 * CSVs `flashlab merge` joins into the whole run's CSV byte for byte (docs/analysis.md §1). */
#ifndef FL_CLI_SHARD_H
#define FL_CLI_SHARD_H

#include <stdint.h>
#include <stdio.h>

#include <flashlab/status.h>

/* The most shards of one run. */
#define FL_SHARD_MAX 100000

typedef struct {
    int64_t i, n; /* shard i of n, 1 <= i <= n; n = 0: the run is not sharded */
} fl_shard;

/* Parses "I/N" (1 <= I <= N <= FL_SHARD_MAX); FL_EINVAL naming opt otherwise. */
fl_status fl_shard_parse(const char *opt, const char *v, fl_shard *s);

/* Whether configuration k (from 0, in the run's order) belongs to the shard: k mod n == i - 1
 * (always, when not sharded). */
int fl_shard_owns(const fl_shard *s, int64_t k);

/* Writes the "# command:" provenance line of a CSV and, for a shard, the "# shard:" line after
 * it.  A shard's command line leaves out --shard, --output, --progress (and, as every command
 * line, --jobs), so that every shard of a run names the same command, the one whose stdout the
 * merged CSV equals; configs: the whole run's configurations. */
void fl_shard_comments(FILE *out, const char *command, int argc, char **argv, const fl_shard *s, int64_t configs);

#endif
