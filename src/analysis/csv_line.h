/* csv_line.h: one line of a CSV the user gives flashlab, read strictly (sweep.c's --input table,
 * cta_timing.c's measured timing). */
#ifndef FL_CSV_LINE_H
#define FL_CSV_LINE_H
#include <stdint.h>
#include <stdio.h>

#include <flashlab/status.h>

/* Reads one line of `in` into line (cap bytes, the newline dropped): 1 for a line, 0 at the end,
 * -1 with *err set (and fl_last_error) for a NUL byte ("NAME:LN: a NUL byte: binary data, not a
 * CSV" and `hint`), a last line without its newline ("NAME:LN: the last line has no newline at
 * its end: the file is cut short ...": a file truncated in the middle of a row, whose cut number
 * would read as a smaller one), a line of cap - 1 characters or more ("line longer than cap - 2"), more than
 * max_bytes in all ("more than ... bytes; not KIND") (FL_EINVAL) or a read error (FL_EIO).
 * *bytes counts what was read. */
int fl_csv_read_line(FILE *in, const char *name, long ln, char *line, size_t cap, int64_t *bytes, int64_t max_bytes,
                     const char *kind, const char *hint, fl_status *err);
#endif
