/* csv_line.c: one strictly read CSV line (csv_line.h). */
#include "analysis/csv_line.h"

#include <errno.h>
#include <string.h>

int fl_csv_read_line(FILE *in, const char *name, long ln, char *line, size_t cap, int64_t *bytes, int64_t max_bytes,
                     const char *kind, const char *hint, fl_status *err)
{
    size_t n = 0;
    int c;
    while ((c = getc(in)) != EOF) {
        if (++*bytes > max_bytes) {
            *err = fl_fail(FL_EINVAL, "%s: more than %lld bytes; not %s", name, (long long)max_bytes, kind);
            return -1;
        }
        if (c == 0) {
            *err = fl_fail(FL_EINVAL, "%s:%ld: a NUL byte: binary data, not a CSV%s", name, ln, hint);
            return -1;
        }
        if (c == '\n') break;
        if (n + 1 >= cap) {
            *err = fl_fail(FL_EINVAL, "%s:%ld: line longer than %zu characters", name, ln, cap - 2);
            return -1;
        }
        line[n++] = (char)c;
    }
    line[n] = 0;
    if (c == EOF && ferror(in)) {
        *err = fl_fail(FL_EIO, "%s: read error (%s)", name, strerror(errno));
        return -1;
    }
    if (c == EOF && n > 0) { /* every line flashlab and its scripts write ends with a newline */
        *err = fl_fail(FL_EINVAL, "%s:%ld: the last line has no newline at its end: the file is cut short "
                                  "(a row cut in the middle reads as a wrong number)", name, ln);
        return -1;
    }
    return c == EOF ? 0 : 1;
}
