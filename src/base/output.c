/* output.c: unique temporaries, fsync + rename, staged directories, cleanup on signals (see
 * output.h). */
#define _GNU_SOURCE /* syscall, getdents64's record layout */
#include <flashlab/output.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>


#define PATH_CAP 4352 /* a PATH_MAX path and the temporary suffix */

/* ---- the registry of what a signal must remove ------------------------------------------ */

enum { SLOT_FREE = 0, SLOT_CLAIMED = 1, SLOT_ARMED = 2 };

static struct {
    volatile sig_atomic_t state;
    int dir; /* a staging directory (removed with what is in it), else a file */
    char path[PATH_CAP];
} registry[FL_OUTPUT_MAX_PENDING];

/* Registers path (made absolute, so a later chdir cannot misdirect the cleanup); returns the
 * slot, or -1 when every slot is taken or the path is too long. */
static int reg_add(const char *path, int dir)
{
    for (int i = 0; i < FL_OUTPUT_MAX_PENDING; i++) {
        int expect = SLOT_FREE;
        if (!__atomic_compare_exchange_n(&registry[i].state, &expect, SLOT_CLAIMED, 0, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE))
            continue;
        char cwd[PATH_CAP] = "";
        int n;
        if (path[0] != '/' && !getcwd(cwd, sizeof cwd)) n = -1;
        else n = snprintf(registry[i].path, PATH_CAP, "%s%s%s", cwd, cwd[0] ? "/" : "", path);
        if (n < 0 || n >= PATH_CAP) {
            __atomic_store_n(&registry[i].state, SLOT_FREE, __ATOMIC_RELEASE);
            return -1;
        }
        registry[i].dir = dir;
        __atomic_store_n(&registry[i].state, SLOT_ARMED, __ATOMIC_RELEASE);
        return i;
    }
    return -1;
}

static void reg_drop(int slot)
{
    if (slot >= 0) __atomic_store_n(&registry[slot].state, SLOT_FREE, __ATOMIC_RELEASE);
}

/* Removes the directory `name` (relative to dirfd) and everything in it, to `depth` levels of
 * subdirectories.  Only async-signal-safe calls (openat, getdents64, unlinkat, close) and
 * static buffers, one per level: the signal handler uses it too. */
static void rm_tree_at(int dirfd, const char *name, int depth)
{
    static char buf[4][8192];
    if (depth < 4) {
        const int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0) {
            for (int pass = 0, removed = 1; removed && pass < 16; pass++) { /* until a pass removes nothing */
                removed = 0;
                lseek(fd, 0, SEEK_SET);
                long got;
                while ((got = syscall(SYS_getdents64, fd, buf[depth], sizeof buf[depth])) > 0) {
                    for (long off = 0; off < got;) {
                        /* struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name */
                        const char *rec = buf[depth] + off;
                        unsigned short reclen;
                        memcpy(&reclen, rec + 16, sizeof reclen);
                        const unsigned char type = (unsigned char)rec[18];
                        const char *entry = rec + 19;
                        off += reclen;
                        if (!strcmp(entry, ".") || !strcmp(entry, "..")) continue;
                        if (type == DT_DIR) rm_tree_at(fd, entry, depth + 1);
                        else if (unlinkat(fd, entry, 0) != 0 && errno == EISDIR) rm_tree_at(fd, entry, depth + 1);
                        removed = 1;
                    }
                }
            }
            close(fd);
        }
    }
    unlinkat(dirfd, name, AT_REMOVEDIR);
}

static void rm_tree(const char *path) { rm_tree_at(AT_FDCWD, path, 0); }

/* Every signal whose default action ends the process and that a handler may catch: the
 * asynchronous ones (sent by a user, a shell, a batch system's time limit) and the faults
 * (a bug; the cleanup then runs before the crash is reported).  Real-time signals, which also
 * end the process by default, are added at install time (SIGRTMIN is not a constant).
 * SIGXFSZ is not here: the CLI ignores it, so that a write past `ulimit -f` fails and is
 * reported instead of killing flashlab half-way.  SIGKILL and SIGSTOP cannot be caught. */
static const int caught_async[] = {
    SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE, SIGALRM, SIGTERM, SIGXCPU, SIGVTALRM, SIGPROF,
#ifdef SIGSTKFLT
    SIGSTKFLT,
#endif
#ifdef SIGIO
    SIGIO,
#endif
#ifdef SIGPWR
    SIGPWR,
#endif
};
static const int caught_faults[] = {SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE, SIGSEGV, SIGSYS};
#define NASYNC ((int)(sizeof caught_async / sizeof caught_async[0]))
#define NFAULTS ((int)(sizeof caught_faults / sizeof caught_faults[0]))

static volatile sig_atomic_t owner_pid; /* the process that installed the handlers */

static void on_signal(int sig)
{
    const int e = errno;
    /* a child forked before it exec'd (gnuplot) inherits the handlers, not the temporaries */
    if (owner_pid == (sig_atomic_t)getpid()) {
        for (int i = 0; i < FL_OUTPUT_MAX_PENDING; i++) {
            if (registry[i].state != SLOT_ARMED) continue;
            if (registry[i].dir) rm_tree(registry[i].path);
            else unlink(registry[i].path);
            registry[i].state = SLOT_FREE;
        }
    }
    errno = e;
    /* SA_RESETHAND restored the default action; the signal is blocked while this runs and is
     * delivered again when it returns (a fault, when it returns to the faulting instruction) */
    raise(sig);
}

/* The asynchronous signals caught, real-time ones included, as a set. */
static void async_set(sigset_t *s)
{
    sigemptyset(s);
    for (int i = 0; i < NASYNC; i++) sigaddset(s, caught_async[i]);
    for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++) sigaddset(s, sig);
}

/* Installs on_signal for sig when its action is the default: a signal ignored by whoever
 * started us stays ignored (nohup), and one with a handler of its own (AddressSanitizer's
 * SIGSEGV, a profiler's SIGPROF) keeps it. */
static fl_status catch_one(int sig, const struct sigaction *sa)
{
    struct sigaction old;
    if (sigaction(sig, NULL, &old) != 0)
        return fl_fail(FL_EINVAL, "output: cannot read the action of signal %d", sig);
    if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) return FL_OK;
    if (sigaction(sig, sa, NULL) != 0)
        return fl_fail(FL_EINVAL, "output: cannot install the cleanup for signal %d", sig);
    return FL_OK;
}

fl_status fl_output_catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESETHAND;
    async_set(&sa.sa_mask); /* one cleanup at a time */
    owner_pid = (sig_atomic_t)getpid();
    for (int i = 0; i < NASYNC; i++) FL_TRY(catch_one(caught_async[i], &sa));
    for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++) FL_TRY(catch_one(sig, &sa));
    for (int i = 0; i < NFAULTS; i++) FL_TRY(catch_one(caught_faults[i], &sa));
    return FL_OK;
}

/* Blocks the signals caught (a commit must not be cut in half, a temporary must not be created
 * and left unregistered); restores with unblock.  The fault signals are blocked too: sent by
 * kill() they wait for unblock and its cleanup (seen: a SIGSYS between open and registration
 * left a temporary); a real fault inside these few lines ends the process at once instead. */
static void block(sigset_t *old)
{
    sigset_t s;
    async_set(&s);
    for (int i = 0; i < NFAULTS; i++) sigaddset(&s, caught_faults[i]);
    sigprocmask(SIG_BLOCK, &s, old);
}

static void unblock(const sigset_t *old) { sigprocmask(SIG_SETMASK, old, NULL); }

/* ---- files ---------------------------------------------------------------------------- */

struct fl_output {
    FILE *f;
    int slot;
    int failed, err; /* fl_output_write saw a failure, and its errno */
    char opt[48];
    char path[PATH_CAP]; /* the file the rename replaces (a link's target) */
    char shown[PATH_CAP]; /* the path as the user gave it, for messages */
    char tmp[PATH_CAP];
};

/* What a non-regular file is, for the message. */
static const char *kind_of(mode_t m)
{
    if (S_ISREG(m)) return "a regular file";
    if (S_ISDIR(m)) return "a directory";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISSOCK(m)) return "a socket";
    if (S_ISLNK(m)) return "a symbolic link";
    return "not a regular file";
}

/* The file a write to `path` lands in: path itself, or, when path is a symbolic link, the
 * file it resolves to (written through: the link stays a link).  Refuses every target that
 * exists and is not a regular file, and a link that points nowhere.  *exists, *was: the
 * target's existence and its stat (owner, group, permission bits). */
static fl_status resolve_target(const char *opt, const char *path, char *out, size_t cap, int *exists,
                                struct stat *was)
{
    struct stat st;
    *exists = 0;
    if (lstat(path, &st) != 0) {
        if (errno != ENOENT)
            return fl_fail(FL_EINVAL, "%s: cannot use '%s' (%s)", opt, fl_shown(path), strerror(errno));
        if (snprintf(out, cap, "%s", path) >= (int)cap) return fl_fail(FL_EINVAL, "%s: path too long", opt);
        return FL_OK;
    }
    if (S_ISLNK(st.st_mode)) {
        char *real = realpath(path, NULL);
        if (!real)
            return fl_fail(FL_EINVAL, "%s: '%s' is a symbolic link to nothing (%s); flashlab writes "
                                      "through a link only to an existing regular file",
                           opt, fl_shown(path), strerror(errno));
        const int too_long = snprintf(out, cap, "%s", real) >= (int)cap;
        free(real);
        if (too_long) return fl_fail(FL_EINVAL, "%s: path too long", opt);
        if (stat(out, &st) != 0)
            return fl_fail(FL_EINVAL, "%s: cannot use '%s' (%s)", opt, fl_shown(path), strerror(errno));
    } else if (snprintf(out, cap, "%s", path) >= (int)cap) {
        return fl_fail(FL_EINVAL, "%s: path too long", opt);
    }
    if (!S_ISREG(st.st_mode))
        return fl_fail(FL_EINVAL, "%s: '%s' is %s; flashlab writes regular files only", opt, fl_shown(path),
                       kind_of(st.st_mode));
    *exists = 1;
    *was = st;
    return FL_OK;
}

/* Gives the new file fd the owner, group and permission bits of the file it replaces (was),
 * as far as this process may: another owner needs privilege (root), another group membership
 * of it; a change the process may not make (EPERM) is skipped, and the new file is then the
 * writer's, as any file it creates.  The mode comes last: a change of owner clears the
 * set-user-ID and set-group-ID bits.  Returns 0, or -1 with errno. */
static int keep_owner_mode(int fd, const struct stat *was)
{
    struct stat now;
    if (fstat(fd, &now) != 0) return -1;
    if (now.st_uid != was->st_uid || now.st_gid != was->st_gid) {
        if (fchown(fd, was->st_uid, was->st_gid) != 0) {
            if (errno != EPERM) return -1;
            if (now.st_gid != was->st_gid && fchown(fd, (uid_t)-1, was->st_gid) != 0 && errno != EPERM) return -1;
        }
    }
    return fchmod(fd, was->st_mode & 07777);
}

/* A name no one else uses: "<base>.flashlab-tmp-<pid>-<8 hex digits>". */
static int unique_name(const char *base, char *out, size_t cap, unsigned long n)
{
    static unsigned long serial;
    const unsigned long salt = (unsigned long)time(NULL) ^ ((unsigned long)(uintptr_t)&serial >> 4) ^
                               ((unsigned long)clock() << 7);
    serial++;
    if (snprintf(out, cap, "%s.flashlab-tmp-%ld-%08lx", base, (long)getpid(),
                 (salt + (serial + n) * 2654435761UL) & 0xffffffffUL) >= (int)cap) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

/* Creates the temporary file beside target with O_EXCL (never an existing file, never through a
 * link), mode 0666 less the umask (open applies it). */
static int create_tmp(const char *target, char *tmp, size_t cap)
{
    for (unsigned long attempt = 0; attempt < 100; attempt++) {
        if (unique_name(target, tmp, cap, attempt) != 0) return -1;
        const int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST) return fd;
    }
    return -1;
}

fl_status fl_output_open(const char *path, const char *opt, fl_output **out)
{
    *out = NULL;
    if (!opt) opt = "{output}";
    if (!path || !*path) return fl_fail(FL_EINVAL, "%s: needs a file name", opt);
    fl_output *o = calloc(1, sizeof *o);
    if (!o) return fl_fail(FL_ENOMEM, "%s: out of memory", opt);
    o->slot = -1;
    snprintf(o->opt, sizeof o->opt, "%s", opt);
    snprintf(o->shown, sizeof o->shown, "%s", path);
    int exists;
    struct stat was;
    fl_status s = resolve_target(opt, path, o->path, sizeof o->path, &exists, &was);
    if (s) {
        free(o);
        return s;
    }
    /* no signal between the temporary's creation and its registration: the handler would not
     * know to remove it (a SIGINT landing there left it behind) */
    sigset_t old;
    block(&old);
    const int fd = create_tmp(o->path, o->tmp, sizeof o->tmp);
    const int err = errno;
    o->slot = fd < 0 ? -1 : reg_add(o->tmp, 0);
    if (fd >= 0 && o->slot < 0) {
        close(fd);
        unlink(o->tmp);
    }
    unblock(&old);
    if (fd < 0) { /* a path the user named: bad input (exit 2), not an internal failure */
        s = fl_fail(FL_EINVAL, "%s: cannot create %s (%s)", opt, fl_shown(path), strerror(err));
        free(o);
        return s;
    }
    if (o->slot < 0) {
        free(o);
        return fl_fail(FL_EINVAL, "%s: more than %d outputs open at once, or a path too long", opt,
                       FL_OUTPUT_MAX_PENDING);
    }
    if (exists && keep_owner_mode(fd, &was) != 0) { /* a replaced file keeps its owner and permissions */
        s = fl_fail(FL_EIO, "%s: cannot give the new %s the owner and mode of the old (%s)", opt, fl_shown(path),
                    strerror(errno));
        close(fd);
        fl_output_abort(o);
        return s;
    }
    if (!(o->f = fdopen(fd, "w"))) {
        s = fl_fail(FL_ENOMEM, "%s: cannot open a stream on %s (%s)", opt, fl_shown(path), strerror(errno));
        close(fd);
        fl_output_abort(o);
        return s;
    }
    *out = o;
    return FL_OK;
}

FILE *fl_output_file(fl_output *o) { return o ? o->f : NULL; }

fl_status fl_output_write(fl_output *o, const void *buf, size_t n)
{
    if (!o || !o->f) return fl_fail(FL_EINVAL, "output: not open");
    if (n && fwrite(buf, 1, n, o->f) != n) {
        if (!o->failed) o->err = errno;
        o->failed = 1;
        return fl_fail(FL_EIO, "%s: writing %s failed (%s)", o->opt, fl_shown(o->shown), strerror(o->err));
    }
    return FL_OK;
}

/* Flushes, fsyncs and closes f; returns 0 or the errno of the first failure (EIO when a write
 * failed earlier without a reason left to report). */
static int close_checked(FILE *f)
{
    int e = ferror(f) ? EIO : 0;
    errno = 0;
    if (fflush(f) != 0) e = errno ? errno : EIO;
    if (!e && fsync(fileno(f)) != 0 && errno != EINVAL) e = errno; /* EINVAL: cannot be synced */
    if (fclose(f) != 0 && !e) e = errno ? errno : EIO;
    return e;
}

fl_status fl_output_commit(fl_output *o)
{
    if (!o) return fl_fail(FL_EINVAL, "output: not open");
    int e = close_checked(o->f);
    o->f = NULL;
    if (!e && o->failed) e = o->err ? o->err : EIO;
    fl_status s = FL_OK;
    struct stat st;
    sigset_t old;
    block(&old);
    if (e) {
        s = fl_fail(FL_EIO, "%s: writing %s failed (%s); nothing written", o->opt, fl_shown(o->shown), strerror(e));
    } else if (lstat(o->path, &st) == 0 && !S_ISREG(st.st_mode)) {
        /* the target was replaced by something else since the open: never rename over it */
        s = fl_fail(FL_EIO, "%s: %s became %s while being written; nothing written", o->opt, fl_shown(o->shown),
                    kind_of(st.st_mode));
    } else if (rename(o->tmp, o->path) != 0) {
        s = fl_fail(FL_EIO, "%s: writing %s failed (%s); nothing written", o->opt, fl_shown(o->shown),
                    strerror(errno));
    } else {
        o->tmp[0] = 0; /* renamed: nothing to remove */
    }
    if (o->tmp[0]) unlink(o->tmp);
    reg_drop(o->slot);
    unblock(&old);
    free(o);
    return s;
}

void fl_output_abort(fl_output *o)
{
    if (!o) return;
    if (o->f) fclose(o->f);
    if (o->tmp[0]) unlink(o->tmp);
    reg_drop(o->slot);
    free(o);
}

fl_status fl_output_close_staged(FILE *f, const char *opt, const char *path)
{
    const int e = close_checked(f);
    if (e) return fl_fail(FL_EIO, "%s: writing %s failed (%s); nothing written", opt, fl_shown(path), strerror(e));
    return FL_OK;
}

/* Free space, in KiB, of the file system that holds path (-1 when it cannot be read). */
static long long free_kib(const char *path)
{
    struct statvfs v;
    if (statvfs(path, &v) != 0) return -1;
    return (long long)((unsigned long long)v.f_bavail * v.f_frsize / 1024);
}

fl_status fl_output_check_written(const char *opt, const char *path, const char *name, const void *tail,
                                  size_t tail_len)
{
    if (!opt) opt = "output";
    if (!name) name = path;
    const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        const int e = fd < 0 ? errno : EINVAL;
        if (fd >= 0) close(fd);
        return fl_fail(FL_EIO, "%s: %s was not written (%s); nothing written", opt, fl_shown(name), strerror(e));
    }
    /* the file's last bytes, trailing whitespace aside: enough of them for the tail */
    char buf[512];
    int complete = st.st_size > 0;
    if (complete && tail && tail_len) {
        const size_t want = tail_len + 128 < sizeof buf ? tail_len + 128 : sizeof buf;
        const off_t from = st.st_size > (off_t)want ? st.st_size - (off_t)want : 0;
        const ssize_t got = pread(fd, buf, (size_t)(st.st_size - from), from);
        size_t n = got > 0 ? (size_t)got : 0;
        while (n && strchr(" \t\r\n", buf[n - 1]) && buf[n - 1]) n--;
        complete = n >= tail_len && memcmp(buf + n - tail_len, tail, tail_len) == 0;
    }
    close(fd);
    if (complete) return FL_OK;
    const long long kib = free_kib(path);
    char space[64] = "";
    if (kib >= 0) snprintf(space, sizeof space, "; %lld KiB free where it is written", kib);
    if (st.st_size == 0)
        return fl_fail(FL_EIO, "%s: %s came out empty (0 bytes%s); nothing written", opt, fl_shown(name), space);
    return fl_fail(FL_EIO, "%s: %s came out incomplete (%lld bytes, not ending as a complete file does%s); "
                           "nothing written", opt, fl_shown(name), (long long)st.st_size, space);
}

/* ---- directories ----------------------------------------------------------------------- */

struct fl_outdir {
    char opt[48];
    char dir[PATH_CAP];     /* as given */
    char staging[PATH_CAP]; /* inside dir, or beside it when fresh */
    int fresh;              /* dir did not exist at open */
    int slot;
    int n;
    char **names;
};

/* A name the directory output accepts: relative, one or two non-empty components, none of
 * them "." or ".." or starting with ".flashlab-tmp". */
static int name_ok(const char *s)
{
    if (!s || !*s || s[0] == '/' || strlen(s) > 255) return 0;
    const char *slash = strchr(s, '/');
    if (slash && (strchr(slash + 1, '/') || slash == s || !slash[1])) return 0;
    for (const char *c = s; c && *c; c = strchr(c, '/') ? strchr(c, '/') + 1 : NULL)
        if (!strncmp(c, "./", 2) || !strcmp(c, ".") || !strncmp(c, "../", 3) || !strcmp(c, ".."))
            return 0;
    return 1;
}

/* The subdirectory of name ("data" of "data/x.csv") into sub; 0 when it has none. */
static int subdir_of(const char *name, char *sub, size_t cap)
{
    const char *slash = strchr(name, '/');
    if (!slash) return 0;
    snprintf(sub, cap, "%.*s", (int)(slash - name), name);
    return 1;
}

/* Checks that dir/name can be replaced: absent or a regular file; its subdirectory absent or
 * a real directory.  *exists and *was describe the target. */
static fl_status target_ok(const fl_outdir *d, const char *name, int *exists, struct stat *was, fl_status code)
{
    char p[2 * PATH_CAP], sub[256];
    struct stat st;
    *exists = 0;
    if (subdir_of(name, sub, sizeof sub)) {
        snprintf(p, sizeof p, "%s/%s", d->dir, sub);
        if (lstat(p, &st) == 0 && !S_ISDIR(st.st_mode))
            return fl_fail(code, "%s: '%s' is %s; flashlab needs a directory there", d->opt, fl_shown(p),
                           kind_of(st.st_mode));
    }
    snprintf(p, sizeof p, "%s/%s", d->dir, name);
    if (lstat(p, &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR) return FL_OK;
        return fl_fail(code, "%s: cannot use '%s' (%s)", d->opt, fl_shown(p), strerror(errno));
    }
    if (!S_ISREG(st.st_mode))
        return fl_fail(code, "%s: '%s' is %s; flashlab writes regular files only", d->opt, fl_shown(p),
                       kind_of(st.st_mode));
    *exists = 1;
    *was = st;
    return FL_OK;
}

void fl_outdir_abort(fl_outdir *d)
{
    if (!d) return;
    if (d->staging[0]) rm_tree(d->staging);
    reg_drop(d->slot);
    for (int i = 0; i < d->n; i++) free(d->names[i]);
    free(d->names);
    free(d);
}

fl_status fl_outdir_open(const char *dir, const char *opt, const char *const *names, int n, fl_outdir **out)
{
    *out = NULL;
    if (!opt) opt = "{out}";
    if (!dir || !*dir) return fl_fail(FL_EINVAL, "%s: needs a directory name", opt);
    if (n < 0 || (n && !names)) return fl_fail(FL_EINVAL, "%s: no list of file names", opt);
    for (int i = 0; i < n; i++)
        if (!name_ok(names[i]))
            return fl_fail(FL_EINVAL, "%s: '%s' is not a file name inside the directory", opt,
                           names[i] ? fl_shown(names[i]) : "(null)");
    fl_outdir *d = calloc(1, sizeof *d);
    if (!d || !(d->names = calloc((size_t)(n ? n : 1), sizeof *d->names))) {
        free(d);
        return fl_fail(FL_ENOMEM, "%s: out of memory", opt);
    }
    d->slot = -1;
    snprintf(d->opt, sizeof d->opt, "%s", opt);
    fl_status s = FL_OK;
    if (snprintf(d->dir, sizeof d->dir, "%s", dir) >= (int)sizeof d->dir - 64) {
        s = fl_fail(FL_EINVAL, "%s: path too long", opt);
        goto fail;
    }
    for (int i = 0; i < n; i++, d->n++)
        if (!(d->names[i] = strdup(names[i]))) {
            s = fl_fail(FL_ENOMEM, "%s: out of memory", opt);
            goto fail;
        }
    struct stat st;
    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
            s = fl_fail(FL_EINVAL, "%s: %s is not a directory", opt, fl_shown(dir));
            goto fail;
        }
        for (int i = 0; i < n; i++) {
            int exists;
            struct stat was;
            if ((s = target_ok(d, d->names[i], &exists, &was, FL_EINVAL))) goto fail;
        }
    } else if (errno == ENOENT && lstat(dir, &st) == 0) { /* a link to nothing: never replaced */
        s = fl_fail(FL_EINVAL, "%s: '%s' is a symbolic link to nothing; flashlab writes a directory only "
                               "where nothing is, or into an existing directory", opt, fl_shown(dir));
        goto fail;
    } else if (errno == ENOENT) {
        d->fresh = 1;
    } else {
        s = fl_fail(FL_EINVAL, "%s: cannot use %s (%s)", opt, fl_shown(dir), strerror(errno));
        goto fail;
    }
    /* the staging directory: inside dir, or beside it (same parent, so one rename moves it) */
    char base[PATH_CAP + 32];
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/') len--;
    if (d->fresh) snprintf(base, sizeof base, "%.*s", (int)len, dir);
    else snprintf(base, sizeof base, "%.*s/", (int)len, dir);
    int made = -1, e = 0;
    sigset_t old; /* as for a file: no signal between the directory's creation and its registration */
    block(&old);
    for (unsigned long attempt = 0; attempt < 100 && made != 0; attempt++) {
        if (unique_name(base, d->staging, sizeof d->staging, attempt) != 0) {
            e = errno;
            break;
        }
        made = mkdir(d->staging, 0777); /* mode 0777 less the umask: the new directory's */
        e = errno;
        if (made != 0 && e != EEXIST) break;
    }
    if (made == 0) d->slot = reg_add(d->staging, 1);
    unblock(&old);
    if (made != 0) {
        d->staging[0] = 0;
        s = d->fresh ? fl_fail(FL_EINVAL, "%s: cannot create directory %s (%s)", opt, fl_shown(dir), strerror(e))
                     : fl_fail(FL_EINVAL, "%s: cannot write in %s (%s)", opt, fl_shown(dir), strerror(e));
        goto fail;
    }
    if (d->slot < 0) {
        s = fl_fail(FL_EINVAL, "%s: more than %d outputs open at once, or a path too long", opt,
                    FL_OUTPUT_MAX_PENDING);
        goto fail;
    }
    for (int i = 0; i < n; i++) {
        char sub[256], p[2 * PATH_CAP];
        if (!subdir_of(d->names[i], sub, sizeof sub)) continue;
        snprintf(p, sizeof p, "%s/%s", d->staging, sub);
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            s = fl_fail(FL_EINVAL, "%s: cannot write in %s (%s)", opt, fl_shown(dir), strerror(errno));
            goto fail;
        }
    }
    *out = d;
    return FL_OK;
fail:
    fl_outdir_abort(d);
    return s;
}

const char *fl_outdir_path(const fl_outdir *d) { return d ? d->staging : NULL; }

/* fsync of a file by name (what gnuplot wrote is not ours to fsync through a stream). */
static int sync_file(const char *p)
{
    const int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return errno;
    const int e = (fsync(fd) != 0 && errno != EINVAL) ? errno : 0;
    close(fd);
    return e;
}

/* Moves each staged file onto its target in dir, in order; on a failure puts back what was
 * replaced (from the hard links made first) and removes what was new. */
static fl_status commit_files(fl_outdir *d)
{
    const int n = d->n;
    char a[2 * PATH_CAP], b[2 * PATH_CAP], bak[2 * PATH_CAP], sub[256];
    int *exists = calloc((size_t)(n ? n : 1), sizeof *exists), *backup = calloc((size_t)(n ? n : 1), sizeof *backup);
    char made_sub[8][256]; /* subdirectories created here, by name */
    int nmade = 0, moved = 0;
    fl_status s = FL_OK;
    if (!exists || !backup) {
        s = fl_fail(FL_ENOMEM, "%s: out of memory", d->opt);
        goto out;
    }
    for (int i = 0; i < n && !s; i++) { /* the targets may have changed since the open */
        struct stat was;
        if ((s = target_ok(d, d->names[i], &exists[i], &was, FL_EIO))) break;
        if (!exists[i]) continue;
        snprintf(a, sizeof a, "%s/%s", d->staging, d->names[i]);
        const int fd = open(a, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || keep_owner_mode(fd, &was) != 0)
            s = fl_fail(FL_EIO, "%s: cannot give %s/%s the owner and mode of the old (%s); nothing written", d->opt,
                        fl_shown(d->dir), d->names[i], strerror(errno));
        if (fd >= 0) close(fd);
    }
    for (int i = 0; i < n && !s; i++) {
        if (!subdir_of(d->names[i], sub, sizeof sub)) continue;
        snprintf(b, sizeof b, "%s/%s", d->dir, sub);
        if (mkdir(b, 0777) == 0) {
            if (nmade < 8) memcpy(made_sub[nmade++], sub, sizeof sub);
        } else if (errno != EEXIST) {
            s = fl_fail(FL_EIO, "%s: cannot create directory %s (%s); nothing written", d->opt, fl_shown(b),
                        strerror(errno));
        }
    }
    for (int i = 0; i < n && !s; i++) { /* keep the old files reachable until the end */
        if (!exists[i]) continue;
        snprintf(b, sizeof b, "%s/%s", d->dir, d->names[i]);
        snprintf(bak, sizeof bak, "%s/.old-%d", d->staging, i);
        backup[i] = link(b, bak) == 0;
    }
    for (; moved < n && !s; moved++) {
        snprintf(a, sizeof a, "%s/%s", d->staging, d->names[moved]);
        snprintf(b, sizeof b, "%s/%s", d->dir, d->names[moved]);
        if (rename(a, b) != 0) {
            s = fl_fail(FL_EIO, "%s: cannot move %s into place (%s); nothing written", d->opt, fl_shown(b),
                        strerror(errno));
            break;
        }
    }
    if (s) { /* put back what was replaced, remove what was new */
        for (int i = 0; i < moved; i++) {
            snprintf(b, sizeof b, "%s/%s", d->dir, d->names[i]);
            snprintf(bak, sizeof bak, "%s/.old-%d", d->staging, i);
            if (exists[i] && backup[i]) rename(bak, b);
            else if (!exists[i]) unlink(b);
        }
        for (int k = 0; k < nmade; k++) {
            snprintf(b, sizeof b, "%s/%s", d->dir, made_sub[k]);
            rmdir(b);
        }
    }
out:
    free(exists);
    free(backup);
    return s;
}

fl_status fl_outdir_commit(fl_outdir *d)
{
    if (!d) return fl_fail(FL_EINVAL, "output: not open");
    fl_status s = FL_OK;
    char p[2 * PATH_CAP];
    struct stat st;
    for (int i = 0; i < d->n && !s; i++) { /* every file written, and on disk */
        snprintf(p, sizeof p, "%s/%s", d->staging, d->names[i]);
        if (lstat(p, &st) != 0 || !S_ISREG(st.st_mode))
            s = fl_fail(FL_EIO, "%s: %s/%s was not written; nothing written", d->opt, fl_shown(d->dir), d->names[i]);
        else if ((errno = sync_file(p)) != 0)
            s = fl_fail(FL_EIO, "%s: writing %s/%s failed (%s); nothing written", d->opt, fl_shown(d->dir),
                        d->names[i], strerror(errno));
    }
    sigset_t old;
    block(&old);
    if (!s) {
        if (d->fresh && rename(d->staging, d->dir) == 0) {
            d->staging[0] = 0; /* it is the directory now */
        } else if (d->fresh && errno != EEXIST && errno != ENOTEMPTY) {
            s = fl_fail(FL_EIO, "%s: cannot create directory %s (%s); nothing written", d->opt, fl_shown(d->dir),
                        strerror(errno));
        } else {
            s = commit_files(d); /* dir existed, or appeared meanwhile */
        }
    }
    if (d->staging[0]) rm_tree(d->staging);
    d->staging[0] = 0;
    reg_drop(d->slot);
    d->slot = -1;
    unblock(&old);
    fl_outdir_abort(d);
    return s;
}

/* ---- the standard streams ------------------------------------------------------------- */

void fl_output_std_streams(void)
{
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
        const int nf = open("/dev/null", O_RDONLY); /* takes the lowest free descriptor: fd */
        if (nf >= 0 && nf != fd) {
            dup2(nf, fd);
            close(nf);
        }
    }
}

fl_status fl_output_stdout_status(void)
{
    int e = ferror(stdout) ? EIO : 0;
    errno = 0;
    if (fflush(stdout) != 0) e = errno ? errno : EIO;
    if (e) {
        clearerr(stdout);
        return fl_fail(FL_EIO, "stdout: write failed (%s)", strerror(e));
    }
    return FL_OK;
}

fl_status fl_output_stdout_write(const void *buf, size_t n)
{
    errno = 0;
    if (n && fwrite(buf, 1, n, stdout) != n) {
        const int e = errno ? errno : EIO;
        clearerr(stdout);
        return fl_fail(FL_EIO, "stdout: write failed (%s)", strerror(e));
    }
    return fl_output_stdout_status();
}
