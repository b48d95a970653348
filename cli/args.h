/* args.h (cli/): strict parsing of command-line values, for the front ends that read argv (the
 * flashlab command and the GPU harness); the library itself never parses a flag.  Each parser, on bad input, records one line
 * naming the option and the rule (fl_last_error) and returns FL_EINVAL; the CLI prints it and
 * exits with status 2. */
#ifndef FL_CLI_ARGS_H
#define FL_CLI_ARGS_H

#include <stdint.h>

#include <flashlab/status.h>

/* A decimal integer in [min, max]: no sign games, no trailing characters, no fractions, no
 * exponent, no overflow.  opt is the option's name for the message ("--N"). */
fl_status fl_parse_i64(const char *opt, const char *s, int64_t min, int64_t max, int64_t *out);

/* A limit (--max-events, --max-work ...) in [min, max]: a decimal integer as fl_parse_i64 reads
 * it, or a whole number in the scientific form the help prints its default in: D[.F]eX ("1e10",
 * "2.5e9", "1E9"), computed exactly in integers.  Refused, naming opt: a fraction ("1.5e0", "1e-3"
 * is not a form), anything around the number ("1e10junk", " 1e9"), an empty exponent or
 * mantissa ("1e", "e9", "1.e9"), and a value outside [min, max] ("1e30"). */
fl_status fl_parse_limit(const char *opt, const char *s, int64_t min, int64_t max, int64_t *out);

/* A comma-separated list of at most cap integers, each in [min, max] ("0,3,7"): *n receives the
 * count.  Empty items, spaces and non-integers are refused naming opt. */
fl_status fl_parse_i64_list(const char *opt, const char *s, int64_t min, int64_t max, int64_t *out,
                            int64_t cap, int64_t *n);

/* The value of --format of a command that prints a table or a CSV: *csv 1 for "csv", 0 for
 * "table"; anything else is FL_EINVAL naming --format and the two choices (*csv untouched). */
fl_status fl_parse_table_or_csv(const char *s, int *csv);

/* An unsigned 64-bit seed (decimal). */
fl_status fl_parse_u64(const char *opt, const char *s, uint64_t *out);

/* A walker over argv of the form  --name value | --name=value | --flag.
 * fl_args_next returns 1 and sets *name ("--N") and *inline_value (the text after '=', NULL when
 * there is no '=') for each option, 0 at the end, and -1 (with fl_last_error set) on an argument
 * that is not an option.  A name of 64 characters or more is returned cut to 60, followed by
 * "...", so a message quoting it stays short (it matches no option). */
typedef struct {
    int argc, i;
    char **argv;
    char buf[64];
} fl_args;

void fl_args_init(fl_args *a, int argc, char **argv);
int fl_args_next(fl_args *a, const char **name, const char **inline_value);

/* fl_args_next for a command's option loop, with --help taken out of it: returns FL_ARGS_HELP at
 * a bare --help (the command prints its usage and stops there), -1 (fl_last_error set, as
 * fl_args_flag says) at "--help=value", else what fl_args_next returns. */
enum { FL_ARGS_HELP = 2 };
int fl_args_next_option(fl_args *a, const char **name, const char **inline_value);

/* Whether name is the flag `flag`: 1, with the status of its parse (fl_args_flag: no "=value")
 * in *s; 0 when it is another option (*s untouched). */
int fl_args_is_flag(const char *name, const char *inline_value, const char *flag, fl_status *s);

/* The value of the option just returned: its inline "=value", else the next argument.
 * FL_EINVAL ("--N: needs a value") when there is none. */
fl_status fl_args_value(fl_args *a, const char *name, const char *inline_value, const char **out);

/* A flag (an option without a value, such as --explain): FL_OK when it came without "=value",
 * else FL_EINVAL "--explain: is a flag and takes no value (got '=yes')".  "--x=false" is an error
 * too, never a way to switch a flag off. */
fl_status fl_args_flag(const char *name, const char *inline_value);

/* Exit status the CLI uses for a library status: 2 for bad input (EINVAL, ECAPACITY,
 * EOVERFLOW: docs/errors.md), 1 for anything else (a write that failed, FL_EIO; out of memory;
 * a schedule bug). */
int fl_exit_code(fl_status s);

#endif
