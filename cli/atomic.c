/* atomic.c: a unique temporary file beside the target, fsync, rename (see atomic.h). */
#define _XOPEN_SOURCE 700
#include "atomic.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* What a non-regular file is, for the message. */
static const char *kind_of(mode_t m)
{
    if (S_ISDIR(m)) return "a directory";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISSOCK(m)) return "a socket";
    return "not a regular file";
}

/* The file a write to `path` lands in: path itself, or, when path is a symbolic link, the
 * file it resolves to (written through: the link stays a link).  Refuses every target that
 * exists and is not a regular file, and a link that points nowhere.  *exists, *mode: the
 * target's existence and permission bits. */
static fl_status resolve_target(const char *opt, const char *path, char *out, size_t cap, int *exists,
                                mode_t *mode)
{
    struct stat st;
    *exists = 0;
    if (lstat(path, &st) != 0) {
        if (errno != ENOENT)
            return fl_fail(FL_EINVAL, "%s: cannot use '%s' (%s)", opt, path, strerror(errno));
        if (snprintf(out, cap, "%s", path) >= (int)cap) return fl_fail(FL_EINVAL, "%s: path too long", opt);
        return FL_OK;
    }
    if (S_ISLNK(st.st_mode)) {
        char *real = realpath(path, NULL);
        if (!real)
            return fl_fail(FL_EINVAL, "%s: '%s' is a symbolic link to nothing (%s); flashlab writes "
                                      "through a link only to an existing regular file",
                           opt, path, strerror(errno));
        int too_long = snprintf(out, cap, "%s", real) >= (int)cap;
        free(real);
        if (too_long) return fl_fail(FL_EINVAL, "%s: path too long", opt);
        if (stat(out, &st) != 0)
            return fl_fail(FL_EINVAL, "%s: cannot use '%s' (%s)", opt, path, strerror(errno));
    } else if (snprintf(out, cap, "%s", path) >= (int)cap) {
        return fl_fail(FL_EINVAL, "%s: path too long", opt);
    }
    if (!S_ISREG(st.st_mode))
        return fl_fail(FL_EINVAL, "%s: '%s' is %s; flashlab writes regular files only", opt, path,
                       kind_of(st.st_mode));
    *exists = 1;
    *mode = st.st_mode & 07777;
    return FL_OK;
}

/* A unique name beside target: "<target>.flashlab-tmp-<pid>-<n>", created with O_EXCL (never an
 * existing file, never through a link).  Mode 0666 less the umask (open applies it). */
static int create_tmp(const char *target, char *tmp, size_t cap)
{
    static unsigned long serial;
    const unsigned long salt = (unsigned long)time(NULL) ^ ((unsigned long)(uintptr_t)&serial >> 4);
    for (int attempt = 0; attempt < 100; attempt++) {
        serial++;
        if (snprintf(tmp, cap, "%s.flashlab-tmp-%ld-%lx", target, (long)getpid(),
                     (salt + serial * 2654435761UL) & 0xffffffffUL) >= (int)cap) {
            errno = ENAMETOOLONG;
            return -1;
        }
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST) return fd;
    }
    return -1;
}

fl_status fl_atomic_open_opt(fl_atomic_file *af, const char *path, const char *opt)
{
    af->f = NULL;
    af->tmp[0] = 0;
    if (!path || !*path) return fl_fail(FL_EINVAL, "%s: needs a file name", opt);
    int exists;
    mode_t mode = 0;
    FL_TRY(resolve_target(opt, path, af->path, sizeof af->path, &exists, &mode));
    int fd = create_tmp(af->path, af->tmp, sizeof af->tmp);
    if (fd < 0) { /* a path the user named: bad input (exit 2), not an internal failure */
        af->tmp[0] = 0;
        return fl_fail(FL_EINVAL, "%s: cannot create %s (%s)", opt, path, strerror(errno));
    }
    if (exists && fchmod(fd, mode) != 0) { /* a replaced file keeps its permissions */
        const int e = errno;
        close(fd);
        unlink(af->tmp);
        af->tmp[0] = 0;
        return fl_fail(FL_EIO, "%s: cannot set the mode of the new '%s' (%s)", opt, path, strerror(e));
    }
    if (!(af->f = fdopen(fd, "w"))) {
        const int e = errno;
        close(fd);
        unlink(af->tmp);
        af->tmp[0] = 0;
        return fl_fail(FL_EIO, "%s: cannot open for writing (%s)", path, strerror(e));
    }
    return FL_OK;
}

fl_status fl_atomic_open(fl_atomic_file *af, const char *path)
{
    return fl_atomic_open_opt(af, path, "--output");
}

fl_status fl_atomic_commit(fl_atomic_file *af)
{
    if (!af->f) return fl_fail(FL_EIO, "%s: not open", af->path);
    int bad = ferror(af->f) != 0;
    bad |= fflush(af->f) != 0;
    int e = errno;
    if (!bad && fsync(fileno(af->f)) != 0) bad = 1, e = errno;
    if (fclose(af->f) != 0 && !bad) bad = 1, e = errno;
    af->f = NULL;
    /* the target may have been replaced by something else since the open: never rename over a
     * device, FIFO or directory */
    struct stat st;
    if (!bad && lstat(af->path, &st) == 0 && !S_ISREG(st.st_mode)) {
        unlink(af->tmp);
        af->tmp[0] = 0;
        return fl_fail(FL_EIO, "%s: became %s while being written; nothing written", af->path,
                       kind_of(st.st_mode));
    }
    if (bad || rename(af->tmp, af->path) != 0) {
        if (!bad) e = errno;
        unlink(af->tmp);
        af->tmp[0] = 0;
        return fl_fail(FL_EIO, "%s: write failed (%s); nothing written", af->path, strerror(e));
    }
    af->tmp[0] = 0;
    return FL_OK;
}

void fl_atomic_abort(fl_atomic_file *af)
{
    if (af->f) fclose(af->f);
    af->f = NULL;
    if (af->tmp[0]) unlink(af->tmp);
    af->tmp[0] = 0;
}
