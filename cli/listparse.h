/* listparse.h: value lists for sweeps.
 *
 * A list is one or more comma-separated items; an item is
 *   V          one integer                                     "512"
 *   A:B:xK     the geometric range A, A*K, A*K^2, ... up to B   "64:65536:x2"   (K >= 2)
 *   A:B:+K     the arithmetic range A, A+K, A+2K, ... up to B   "16:256:+16"    (K >= 1)
 * B is included when the range reaches it exactly.  Items may be mixed: "64,128:1024:x2".
 *
 * Strict: an empty list or item ("", "1,,2", "1,"), a reversed range (A > B), an unbounded one
 * ("64:", "64::x2", "64:x2"), a step that never advances (x1, x0, +0), a value outside
 * [min, max], a duplicate value, or more than FL_LIST_MAX values is an error (FL_EINVAL) whose
 * message names the option and the rule.
 */
#ifndef FL_CLI_LISTPARSE_H
#define FL_CLI_LISTPARSE_H

#include <stdint.h>

#include <flashlab/schedule.h>
#include <flashlab/status.h>

#define FL_LIST_MAX 4096

/* A parsed list: values in the order written.  Free with fl_list_free. */
typedef struct {
    int64_t *v;
    int n;
} fl_list;

/* Parses s into *out (which is overwritten; free the old list first).  opt names the option in
 * messages ("--N").  Every value must lie in [min, max].  On error *out is empty (v NULL). */
fl_status fl_list_parse(const char *opt, const char *s, int64_t min, int64_t max, fl_list *out);

/* Parses a schedule list: "all" (standard, flash1, flash2) or comma-separated names
 * (fl_algo_parse: flash2-gqa too), each at most once, into algos[0..*n), which has room for
 * FL_ALGO_MAX.  FL_EINVAL naming --algo otherwise. */
fl_status fl_list_parse_algos(const char *s, int *algos, int *n);

/* Frees the values; the list becomes empty.  NULL or an empty list is a no-op. */
void fl_list_free(fl_list *l);

#endif
