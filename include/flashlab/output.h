/* output.h: the one way flashlab writes a file or a directory of files.
 *
 * Files.  fl_output_open checks the target first: a path that exists must be a regular file
 * (a device, FIFO, socket or directory is refused with FL_EINVAL naming the option, so
 * `--output /dev/null` is an error, never a new /dev/null); a symbolic link is written through to
 * the regular file it resolves to (the link stays a link; a dangling link is refused).  It then
 * creates a temporary file with a unique name beside the target ("<target>.flashlab-tmp-..."),
 * with O_EXCL and O_NOFOLLOW, mode 0666 less the umask, or the replaced file's owner, group and
 * mode (as far as the process may: a change of owner needs root, EPERM leaves the file the
 * writer's).  Write to
 * fl_output_file() (or with fl_output_write); fl_output_commit checks every write, flushes,
 * fsyncs, closes and renames the temporary onto the target, so the target is complete or
 * untouched, never half-written; fl_output_abort removes the temporary.  Either frees the handle.
 *
 * Directories.  fl_outdir_open prepares a set of files (names relative to the directory, at most
 * one level of subdirectory: "fig.png", "data/fig.csv") to appear in dir all at once.  It checks,
 * before any work, that dir can receive them: dir is a directory or can be created (its parent
 * exists and is writable), each name is absent or a regular file (a directory, device, link or
 * FIFO in its place is refused), and it creates a staging directory (a unique ".flashlab-tmp-..."
 * inside dir, or beside it when dir does not exist yet) where the caller writes the files
 * (fl_outdir_path).  fl_outdir_commit moves them in: a new dir is renamed into place whole;
 * into an existing dir each file replaces its target by rename (keeping the target's owner and
 * mode, as a file does), and
 * a failure part way puts back every file already replaced (from hard-linked copies), so the
 * directory holds either every new file or none.  fl_outdir_abort removes the staging directory.
 *
 * Interruption.  Every temporary file and staging directory is registered while it exists;
 * fl_output_catch_signals (the CLI calls it first thing) installs, for every signal whose
 * default action ends the process and that can be caught (SIGHUP, SIGINT, SIGQUIT, SIGUSR1,
 * SIGUSR2, SIGPIPE, SIGALRM, SIGTERM, SIGXCPU, SIGVTALRM, SIGPROF, SIGSTKFLT, SIGIO, SIGPWR, the
 * real-time signals, and the faults SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE, SIGSEGV, SIGSYS),
 * a handler that removes what is registered (async-signal-safe: unlink, and a walk of the
 * staging directory with getdents) and then dies of the signal by its default action.  A signal
 * that is ignored, or has a handler of its own (AddressSanitizer's SIGSEGV), when it is called
 * is left so.  SIGXFSZ is not caught: the CLI ignores it, so that a write past the file-size
 * limit fails and is reported.  A child forked before it execs runs the handler without
 * removing anything.  A library user that handles signals itself (Python) calls
 * fl_output_abort / fl_outdir_abort instead.  Commits block the asynchronous signals while they
 * rename, so an interruption never leaves half a directory.  At most FL_OUTPUT_MAX_PENDING
 * outputs are open at once.
 *
 * Errors: FL_EINVAL (naming opt) for a target that cannot be used, found before anything is
 * written; FL_EIO ("<opt>: writing <path> failed (<reason>); ...") for a write, flush, fsync,
 * close or rename that fails, after which the target is as it was; FL_ENOMEM.  The CLI exits
 * with status 2 for the first and 1 for the others.
 */
#ifndef FL_OUTPUT_H
#define FL_OUTPUT_H

#include <stddef.h>
#include <stdio.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FL_OUTPUT_MAX_PENDING 32

typedef struct fl_output fl_output;

/* Opens a temporary file for path; opt names the option in messages ("--output").  On FL_OK
 * *out is a handle to commit or abort; otherwise *out is NULL and nothing was created. */
fl_status fl_output_open(const char *path, const char *opt, fl_output **out);

/* The stream to write to (owned by the handle; do not close it). */
FILE *fl_output_file(fl_output *o);

/* Writes n bytes of buf (for callers without a FILE *, such as a ctypes binding).  A failure
 * is FL_EIO and is reported again by fl_output_commit. */
fl_status fl_output_write(fl_output *o, const void *buf, size_t n);

/* Checks that every write succeeded, flushes, fsyncs, closes and renames the temporary onto
 * the target.  Frees o (also on failure, after removing the temporary).  NULL is FL_EINVAL. */
fl_status fl_output_commit(fl_output *o);

/* Closes and removes the temporary; the target is untouched.  Frees o.  NULL is a no-op. */
void fl_output_abort(fl_output *o);

typedef struct fl_outdir fl_outdir;

/* Prepares the files names[0..n) to appear in dir (see above); opt names the option ("--out").
 * On FL_OK *out is a handle to commit or abort. */
fl_status fl_outdir_open(const char *dir, const char *opt, const char *const *names, int n, fl_outdir **out);

/* The staging directory: write name i at "<fl_outdir_path(d)>/<names[i]>".  The subdirectories
 * the names use already exist there. */
const char *fl_outdir_path(const fl_outdir *d);

/* Moves every staged file into the directory, all or none.  A name the caller did not write is
 * FL_EIO (nothing moved).  Frees d. */
fl_status fl_outdir_commit(fl_outdir *d);

/* Removes the staging directory and what is in it.  Frees d.  NULL is a no-op. */
void fl_outdir_abort(fl_outdir *d);

/* Checks a file another program (gnuplot) wrote at path inside a staging directory, before
 * fl_outdir_commit moves it in.  A program that runs out of space or into a file-size limit may
 * still exit with status 0, its file empty or cut short; so the file must be a regular file of
 * at least one byte whose last bytes, trailing whitespace (space, tab, CR, LF) aside, are the
 * tail_len bytes of tail (the end every complete file of its format has: "%%EOF" for a PDF, the
 * IEND chunk for a PNG; tail NULL checks the size only).  FL_OK, or FL_EIO with one line,
 * "<opt>: <name> came out empty (0 bytes; <K> KiB free where it is written); nothing written" or
 * "... came out incomplete (<n> bytes, not ending as a complete file does; ...)", name being
 * what the user knows the file by (NULL: path).  The caller then aborts the staging directory,
 * so the old file stays. */
fl_status fl_output_check_written(const char *opt, const char *path, const char *name, const void *tail,
                                  size_t tail_len);

/* Checks, flushes, fsyncs and closes a stream the caller opened inside a staging directory:
 * FL_EIO ("<opt>: writing <path> failed (<reason>)") if a write failed at any time.  f is closed
 * either way. */
fl_status fl_output_close_staged(FILE *f, const char *opt, const char *path);

/* Installs the cleanup handlers (idempotent).  Returns FL_OK, or FL_EINVAL if sigaction fails. */
fl_status fl_output_catch_signals(void);

/* Makes sure file descriptors 0, 1 and 2 are open, so no file flashlab opens takes their place:
 * a closed one is reopened on /dev/null for reading only, so that writing to it fails (EBADF)
 * and is reported.  Call before opening anything. */
void fl_output_std_streams(void);

/* Flushes stdout and reports whether any write to it failed since the start: FL_OK, or FL_EIO
 * with "stdout: write failed (<reason>)". */
fl_status fl_output_stdout_status(void);

/* Writes n bytes of buf to stdout and flushes: FL_OK, or FL_EIO with "stdout: write failed
 * (<reason>)", the reason taken from the write that failed. */
fl_status fl_output_stdout_write(const void *buf, size_t n);

#ifdef __cplusplus
}
#endif

#endif
