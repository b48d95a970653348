/* atomic.h: write a file so that it appears whole or not at all.
 *
 * fl_atomic_open creates a temporary file beside `path` (same directory, so rename is atomic);
 * write to af->f; fl_atomic_commit flushes, closes and renames it onto path; fl_atomic_abort
 * closes and removes it.  After either, af is finished.  A file that cannot be created is
 * FL_EINVAL (naming --output); a failed write is FL_EIO naming the path. */
#ifndef FL_CLI_ATOMIC_H
#define FL_CLI_ATOMIC_H

#include <stdio.h>

#include "status.h"

typedef struct {
    FILE *f;
    char tmp[4096];
    char path[4096];
} fl_atomic_file;

fl_status fl_atomic_open(fl_atomic_file *af, const char *path);
fl_status fl_atomic_commit(fl_atomic_file *af);
void fl_atomic_abort(fl_atomic_file *af);

#endif
