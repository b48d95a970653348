/* atomic.h: write a file so that it appears whole or not at all, and only as a regular file.
 *
 * fl_atomic_open checks the target: a path that exists must be a regular file (a device, FIFO,
 * socket or directory is refused with FL_EINVAL naming the option: flashlab never replaces
 * one, so `--output /dev/null` is an error, not a new /dev/null); a symbolic link is written
 * through to the regular file it resolves to (the link stays a link; a dangling link is
 * refused).  It then creates a temporary file with a unique name beside the target (same
 * directory, so rename is atomic) with O_EXCL and O_NOFOLLOW, mode 0666 less the umask, or the
 * replaced file's mode.  Write to af->f; fl_atomic_commit flushes, fsyncs, closes and renames it
 * onto the target; fl_atomic_abort closes and removes it.  After either, af is finished.  A file
 * that cannot be created is FL_EINVAL (naming the option); a failed write is FL_EIO naming the
 * path, and the target is then untouched. */
#ifndef FL_CLI_ATOMIC_H
#define FL_CLI_ATOMIC_H

#include <stdio.h>

#include <flashlab/status.h>

typedef struct {
    FILE *f;
    char tmp[4096];
    char path[4096];
} fl_atomic_file;

fl_status fl_atomic_open(fl_atomic_file *af, const char *path); /* option named "--output" */
fl_status fl_atomic_open_opt(fl_atomic_file *af, const char *path, const char *opt);
fl_status fl_atomic_commit(fl_atomic_file *af);
void fl_atomic_abort(fl_atomic_file *af);

#endif
