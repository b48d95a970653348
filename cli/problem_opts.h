/* problem_opts.h: the options that describe one problem (sizes, SRAM, dtype, pass, mask, heads,
 * varlen), parsed in one place for every subcommand that takes them.
 *
 * Use: fl_popts_init; for each option, fl_popts_take (returns 1 when the option is one of
 * these, with its parse status in *s; 0 when it is not, for the command to handle); then
 * fl_popts_finish, which applies varlen and the --sram/--dtype presets (overridden by --M) and
 * checks the problem (fl_problem_check).  Messages name the option and the rule. */
#ifndef FL_CLI_PROBLEM_OPTS_H
#define FL_CLI_PROBLEM_OPTS_H

#include <flashlab/blocksparse_mask.h>
#include <flashlab/decode.h>
#include <flashlab/schedule.h>

#define FL_CLI_MAX_BATCH 4096

typedef struct {
    fl_problem p;
    const char *sram, *dtype; /* presets.h; NULL = defaults */
    int64_t M_given;          /* --M, 0 = from --sram */
    int set_N, set_batch;
    const char *model;        /* --model (presets.h), NULL = none */
    unsigned keep;            /* the fields given explicitly, which --model leaves (FL_MODEL_KEEP_*) */
    int64_t cuq[FL_CLI_MAX_BATCH + 1], cuk[FL_CLI_MAX_BATCH + 1], ncuq, ncuk;
    int64_t table[FL_CLI_MAX_BATCH]; /* --block-table */
    fl_kv_cache kv;           /* decode's cache options; p.kv_cache points here once one is given */
    fl_block_sparsity bm;     /* blocksparse's; p.block_mask likewise */
} fl_popts;

/* The help lines of these options, for a command's usage text. */
extern const char fl_popts_usage[];

void fl_popts_init(fl_popts *o);
int fl_popts_take(fl_popts *o, const char *name, const char *value, fl_status *s);

/* The problem's options that are flags (--sinks, --alibi, --deterministic): returns 1 when name
 * is one, with the status of its parse (fl_args_flag: no "=value") in *s; 0 when it is not.  A
 * command asks this before it reads an option's value. */
int fl_popts_flag(fl_popts *o, const char *name, const char *inline_value, fl_status *s);
fl_status fl_popts_finish(fl_popts *o);

/* A decimal number (nan and inf allowed): strtod over the whole string, which must start with a
 * sign, a digit, a point or a letter of nan/inf and hold no hexadecimal; FL_EINVAL naming opt. */
fl_status fl_popts_parse_double(const char *opt, const char *v, double *out);

/* The help line of --max-macs (run, trace --compute), the problem's max_macs: the limit of a
 * compute run's multiply-adds, fl_compute_macs of run.h (0: no limit). */
extern const char fl_macs_usage[];


#endif
