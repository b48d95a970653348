/* quantity.h: for the tests of the library's messages.  The library names quantities as {name}
 * tokens in its raw message (include/flashlab/status.h), the CLI spells them as flags; a test that
 * knows an input by its flag ("--kv-heads", "--Br/--Bc") asks whether the raw message names it. */
#ifndef FL_TEST_QUANTITY_H
#define FL_TEST_QUANTITY_H

#include <stdio.h>
#include <string.h>

#include "status.h"

/* Whether this thread's last raw error message contains opt with every flag "--x-y" written as
 * the library's token "{x_y}" ("--Br/--Bc" -> "{Br}/{Bc}"). */
static inline int fl_test_names(const char *opt)
{
    char want[256];
    size_t n = 0;
    for (const char *p = opt; *p && n + 2 < sizeof want;) {
        if (p[0] == '-' && p[1] == '-' && ((p[2] >= 'a' && p[2] <= 'z') || (p[2] >= 'A' && p[2] <= 'Z'))) {
            want[n++] = '{';
            for (p += 2; *p && n + 2 < sizeof want && ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                                                       (*p >= '0' && *p <= '9') || *p == '-'); p++)
                want[n++] = *p == '-' ? '_' : *p;
            want[n++] = '}';
        } else {
            want[n++] = *p++;
        }
    }
    want[n] = 0;
    return strstr(fl_last_error_raw(), want) != NULL;
}

#endif
