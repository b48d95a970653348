/* atomic.c: temp file + rename (see atomic.h). */
#define _POSIX_C_SOURCE 200809L
#include "atomic.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

fl_status fl_atomic_open(fl_atomic_file *af, const char *path)
{
    af->f = NULL;
    if (!path || !*path) return fl_fail(FL_EIO, "--output: needs a file name");
    if (snprintf(af->path, sizeof af->path, "%s", path) >= (int)sizeof af->path ||
        snprintf(af->tmp, sizeof af->tmp, "%s.tmp.XXXXXX", path) >= (int)sizeof af->tmp)
        return fl_fail(FL_EIO, "--output: path too long");
    int fd = mkstemp(af->tmp);
    if (fd < 0) /* a path the user named: bad input (exit 2), not an internal failure */
        return fl_fail(FL_EINVAL, "--output: cannot create %s (%s)", path, strerror(errno));
    fchmod(fd, 0644);
    if (!(af->f = fdopen(fd, "w"))) {
        close(fd);
        unlink(af->tmp);
        return fl_fail(FL_EIO, "%s: cannot open for writing (%s)", path, strerror(errno));
    }
    return FL_OK;
}

fl_status fl_atomic_commit(fl_atomic_file *af)
{
    if (!af->f) return fl_fail(FL_EIO, "%s: not open", af->path);
    int bad = ferror(af->f) | fflush(af->f);
    bad |= fclose(af->f);
    af->f = NULL;
    if (bad || rename(af->tmp, af->path) != 0) {
        int e = errno;
        unlink(af->tmp);
        return fl_fail(FL_EIO, "%s: write failed (%s); nothing written", af->path, strerror(e));
    }
    return FL_OK;
}

void fl_atomic_abort(fl_atomic_file *af)
{
    if (!af->f) return;
    fclose(af->f);
    af->f = NULL;
    unlink(af->tmp);
}
