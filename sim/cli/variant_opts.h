/* variant_opts.h: the options of issue 4's variants that count, run and sweep share:
 *   --pass fwd|bwd|fwd+bwd, --Nk N, --causal none|top-left|bottom-right, --window L,R,
 *   --batch B, --heads H, --kv-heads H
 * (varlen's --cu-seqlens-q/-k are count/run only: a sweep varies N).  Each bad value is one
 * line naming the option and the rule (FL_EINVAL). */
#ifndef FL_CLI_VARIANT_OPTS_H
#define FL_CLI_VARIANT_OPTS_H

#include "problem.h"

/* If name is one of the options above, parses value v into p, sets *st (FL_OK or the error) and
 * returns 1; otherwise returns 0 and touches nothing. */
int fl_variant_option(const char *name, const char *v, fl_problem *p, fl_status *st);

/* Help lines for the options above (two-space indented, newline-terminated). */
extern const char fl_variant_usage[];

#endif
