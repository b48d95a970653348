/* checked.h: checked 64-bit arithmetic with a sticky overflow flag, so that a closed form reads
 * as a formula:   ck c = {0};  x = add(&c, Nd, mul(&c, Tc, y));  if (c.ovf) ...overflow...
 * Internal to sim/ (short names): included by the .c files that hold closed forms, never by a
 * public header.  On overflow the result is 0 and c->ovf is set. */
#ifndef FL_CHECKED_H
#define FL_CHECKED_H

#include <stdint.h>

#include <flashlab/status.h>

typedef struct { int ovf; } ck;

static inline int64_t mul(ck *c, int64_t a, int64_t b)
{
    int64_t r;
    if (!fl_mul_ok(a, b, &r)) { c->ovf = 1; return 0; }
    return r;
}

static inline int64_t add(ck *c, int64_t a, int64_t b)
{
    int64_t r;
    if (!fl_add_ok(a, b, &r)) { c->ovf = 1; return 0; }
    return r;
}

#endif
