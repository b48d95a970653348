/* examples.h: the worked examples from the seed documents, reproduced and checked.
 *
 * Each example prints its walk-through to `out` and returns 1 when every number it checks
 * agrees (PASS), 0 otherwise.  `flashlab example NAME` runs one; `flashlab example list` lists
 * them; the report prints their PASS/FAIL lines.
 */
#ifndef FL_EXAMPLES_H
#define FL_EXAMPLES_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const char *name;
    const char *summary;
    int (*run)(FILE *out);
} fl_example;

/* The examples on masks and heads (src/analysis/examples_masks_heads.c), registered in the
 * table of src/analysis/examples.c. */
int fl_ex_backward(FILE *out);
int fl_ex_causal_corners(FILE *out);
int fl_ex_mask_polarity(FILE *out);
int fl_ex_gqa_map(FILE *out);

/* The examples of the score variants (src/analysis/examples_variants.c): a row with a sink
 * logit, a softcapped row, by hand, on the reference and on the machine. */
int fl_ex_sink_row(FILE *out);
int fl_ex_softcap_row(FILE *out);

/* All examples, in listing order; *n receives their number. */
const fl_example *fl_examples(int *n);

/* The example called name, or NULL. */
const fl_example *fl_example_find(const char *name);

#ifdef __cplusplus
}
#endif

#endif
