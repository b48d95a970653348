/* test_examples_variants.c: the variants' worked examples (masks, heads, and the score variants: a
 * sink row, a softcapped row) pass and print the numbers of the seeds and of docs/model.md §14. */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples.h"

/* Runs example name into a buffer; returns its PASS flag, the text in *text (free it). */
static int run_example(const char *name, char **text)
{
    const fl_example *e = fl_example_find(name);
    cr_assert_not_null(e, "%s is registered", name);
    size_t n = 0;
    FILE *f = open_memstream(text, &n);
    int ok = e->run(f);
    fclose(f);
    return ok;
}

Test(examples_variants, backward)
{
    char *t;
    cr_assert(run_example("backward", &t));
    cr_assert(strstr(t, "[[1,1,1,1,0], [1,1,1,1,1]]") && strstr(t, "[[0,0], [0,0], [0,0], [1,0], [1,1]]"));
    cr_assert(!strstr(t, "DIFFER") && !strstr(t, "NOT zero"));
    free(t);
}

Test(examples_variants, causal_corners)
{
    char *t;
    cr_assert(run_example("causal-corners", &t));
    cr_assert(strstr(t, "(2, 5) top-left     [[1,0,0,0,0], [1,1,0,0,0]]"));
    cr_assert(strstr(t, "(2, 5) bottom-right [[1,1,1,1,0], [1,1,1,1,1]]"));
    free(t);
}

Test(examples_variants, mask_polarity)
{
    char *t;
    cr_assert(run_example("mask-polarity", &t));
    cr_assert(strstr(t, "output 1000") && strstr(t, "output 10\n"));
    free(t);
}

Test(examples_variants, gqa_map)
{
    char *t;
    cr_assert(run_example("gqa-map", &t));
    cr_assert(strstr(t, "[0,0,0,1,1,1]") && strstr(t, "[0,0,0,0,0,0]"));
    free(t);
}

/* The score variants' rows (docs/model.md §14): the hand numbers the docs print, the reference
 * and flash2 on the machine agree; the sink is read once. */
Test(examples_variants, sink_row)
{
    char *t;
    cr_assert(run_example("sink-row", &t), "%s", t);
    cr_assert(strstr(t, "flash2 on the machine [1.11164358, 0.40895082]"), "%s", t);
    cr_assert(strstr(t, "e^(sink - m) / l = 0.19151597"), "%s", t);
    cr_assert(strstr(t, "(1 of them the sink, rule R3b)"), "%s", t);
    free(t);
}

Test(examples_variants, softcap_row)
{
    char *t;
    cr_assert(run_example("softcap-row", &t), "%s", t);
    cr_assert(strstr(t, "capped scores [1.52318831, 0.92423431, 1.92805516, 1.81029651]"), "%s", t);
    cr_assert(strstr(t, "flash2 on the machine [0.91261208, 0.73373220]"), "%s", t);
    free(t);
}
