/* problem_opts.h: the options that describe one problem (sizes, SRAM, dtype, pass, mask, heads,
 * varlen), parsed in one place for every subcommand that takes them.
 *
 * Use: fl_popts_init; for each option, fl_popts_take (returns 1 when the option is one of
 * these, with its parse status in *s; 0 when it is not, for the command to handle); then
 * fl_popts_finish, which applies varlen and the --sram/--dtype presets (overridden by --M) and
 * checks the problem (fl_problem_check).  Messages name the option and the rule. */
#ifndef FL_CLI_PROBLEM_OPTS_H
#define FL_CLI_PROBLEM_OPTS_H

#include <flashlab/schedule.h>

#define FL_CLI_MAX_BATCH 4096

typedef struct {
    fl_problem p;
    const char *sram, *dtype; /* presets.h; NULL = defaults */
    int64_t M_given;          /* --M, 0 = from --sram */
    int set_N, set_batch;
    int64_t cuq[FL_CLI_MAX_BATCH + 1], cuk[FL_CLI_MAX_BATCH + 1], ncuq, ncuk;
    int64_t table[FL_CLI_MAX_BATCH]; /* --block-table */
} fl_popts;

/* The help lines of these options, for a command's usage text. */
extern const char fl_popts_usage[];

void fl_popts_init(fl_popts *o);
int fl_popts_take(fl_popts *o, const char *name, const char *value, fl_status *s);
fl_status fl_popts_finish(fl_popts *o);

/* The work limit of a compute run (run, trace --compute): --max-macs, the multiply-adds the
 * schedule and the reference make together, at most FL_CLI_MAX_MACS unless raised (0: no
 * limit).  Counted as for dense attention (an upper bound where a mask skips blocks): per
 * sequence and query head Nq x Nk x d (x 1 for the softmax schedules instead of d), times 4
 * for a forward (S = QK^T and O = PV, in the schedule and in the reference), times 14 when the
 * run includes the backward (which also runs the forward that produces its inputs). */
#define FL_CLI_MAX_MACS INT64_C(10000000000)
extern const char fl_macs_usage[];
fl_status fl_compute_macs(const fl_problem *p, int64_t *macs); /* saturates at INT64_MAX */
fl_status fl_compute_check(const fl_problem *p, int64_t max_macs);

/* The memory limit of count and run (--max-memory, MiB; 0: no limit): decode's block table,
 * ceil(Nk / page-size) entries of 8 bytes, and 64 bytes more an entry while a random one is
 * drawn (--page-seed), as measured; FL_EINVAL naming --max-memory with the estimate when it
 * exceeds max_mb.  Other schedules hold nothing that grows with the problem in count mode (a
 * compute run is bounded by FL_COMPUTE_MAX_VALUES and --max-macs). */
#define FL_CLI_MAX_MEMORY_MB INT64_C(2048)
extern const char fl_memory_usage[];
fl_status fl_memory_check(const fl_problem *p, int64_t max_mb);

#endif
