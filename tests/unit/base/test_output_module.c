/* test_output_module.c: the output module (include/flashlab/output.h) through its C API, as the
 * CLI and a binding use it: a file is complete or untouched; a directory of files appears all at
 * once or not at all, also when a move fails part way (the files already replaced are put back);
 * a signal removes every temporary and staging directory; a closed stdout cannot be taken by a
 * file; names and targets that are not regular files are refused before anything is written. */
#define _DEFAULT_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <flashlab/output.h>

static void fresh_dir(char dir[64])
{
    snprintf(dir, 64, "/tmp/fl_omXXXXXX");
    cr_assert(mkdtemp(dir) != NULL, "mkdtemp");
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert(f, "%s: %s", path, strerror(errno));
    fputs(text, f);
    fclose(f);
}

/* The whole content of path ("" when it cannot be read). */
static char *slurp(const char *path)
{
    static char buf[4][256];
    static int k;
    char *b = buf[k++ % 4];
    b[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return b;
    size_t n = fread(b, 1, 255, f);
    b[n] = 0;
    fclose(f);
    return b;
}

/* The entries of dir, sorted, as "a b c " (recursively: "data/x "). */
static void listing(const char *dir, const char *prefix, char *out, size_t cap)
{
    struct dirent **list;
    int n = scandir(dir, &list, NULL, alphasort);
    if (!prefix[0]) out[0] = 0;
    for (int i = 0; i < n; i++) {
        const char *e = list[i]->d_name;
        if (strcmp(e, ".") && strcmp(e, "..")) {
            char sub[512], pre[300];
            snprintf(sub, sizeof sub, "%s/%s", dir, e);
            struct stat st;
            if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode)) {
                snprintf(pre, sizeof pre, "%s%s/", prefix, e);
                size_t len = strlen(out);
                snprintf(out + len, cap - len, "%s ", pre);
                listing(sub, pre, out, cap);
            } else {
                size_t len = strlen(out);
                snprintf(out + len, cap - len, "%s%s ", prefix, e);
            }
        }
        free(list[i]);
    }
    if (n >= 0) free(list);
}

Test(output_module, a_file_is_committed_whole)
{
    char dir[64], path[128], names[1024];
    fresh_dir(dir);
    snprintf(path, sizeof path, "%s/out.csv", dir);
    fl_output *o;
    cr_assert_eq(fl_output_open(path, "--output", &o), FL_OK, "%s", fl_last_error());
    listing(dir, "", names, sizeof names);
    cr_expect(strncmp(names, "out.csv.flashlab-tmp-", 21) == 0, "a temporary beside the target: %s", names);
    fprintf(fl_output_file(o), "a,b\n");
    cr_assert_eq(fl_output_write(o, "1,2\n", 4), FL_OK);
    cr_assert_eq(fl_output_commit(o), FL_OK, "%s", fl_last_error());
    cr_expect_str_eq(slurp(path), "a,b\n1,2\n");
    listing(dir, "", names, sizeof names);
    cr_expect_str_eq(names, "out.csv ");
}

Test(output_module, abort_leaves_the_target_as_it_was)
{
    char dir[64], path[128], names[1024];
    fresh_dir(dir);
    snprintf(path, sizeof path, "%s/out.csv", dir);
    put(path, "old\n");
    fl_output *o;
    cr_assert_eq(fl_output_open(path, NULL, &o), FL_OK);
    fputs("new\n", fl_output_file(o));
    fl_output_abort(o);
    fl_output_abort(NULL); /* a no-op */
    cr_expect_str_eq(slurp(path), "old\n");
    listing(dir, "", names, sizeof names);
    cr_expect_str_eq(names, "out.csv ");
    cr_expect_eq(fl_output_commit(NULL), FL_EINVAL);
}

/* A write that fails (the file-size limit) is reported by commit, and the target stays. */
Test(output_module, a_failed_write_is_reported_and_nothing_replaced)
{
    char dir[64], path[128];
    fresh_dir(dir);
    snprintf(path, sizeof path, "%s/out.csv", dir);
    put(path, "old\n");
    pid_t pid = fork();
    if (pid == 0) {
        struct rlimit rl = {1000, 1000};
        signal(SIGXFSZ, SIG_IGN);
        setrlimit(RLIMIT_FSIZE, &rl);
        fl_output *o;
        if (fl_output_open(path, "--output", &o)) _exit(10);
        for (int i = 0; i < 1000; i++) fprintf(fl_output_file(o), "row %d\n", i);
        const fl_status s = fl_output_commit(o);
        const char *want = "--output: writing ";
        _exit(s == FL_EIO && !strncmp(fl_last_error(), want, strlen(want)) &&
                      strstr(fl_last_error(), "failed (File too large); nothing written")
                  ? 0
                  : 11);
    }
    int st;
    waitpid(pid, &st, 0);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
    cr_expect_str_eq(slurp(path), "old\n");
}

Test(output_module, targets_that_are_not_regular_files_are_refused)
{
    char dir[64], path[128], names[1024];
    fresh_dir(dir);
    fl_output *o;
    snprintf(path, sizeof path, "%s/sub", dir);
    cr_assert_eq(mkdir(path, 0755), 0);
    cr_expect_eq(fl_output_open(path, "--output", &o), FL_EINVAL);
    cr_expect(strstr(fl_last_error(), "is a directory; flashlab writes regular files only"), "%s", fl_last_error());
    cr_expect_eq(o, NULL);
    cr_expect_eq(fl_output_open("", "--out", &o), FL_EINVAL);
    cr_expect_str_eq(fl_last_error(), "--out: needs a file name");
    listing(dir, "", names, sizeof names);
    cr_expect_str_eq(names, "sub/ ");
}

/* A file another program wrote is accepted only whole: not empty, ending as its format ends
 * (trailing whitespace aside); an empty file, one cut short by a byte, a missing one and a
 * directory in its place are each refused with their own line, naming the file. */
Test(output_module, a_file_written_by_another_program_must_be_whole)
{
    char dir[64], path[128];
    fresh_dir(dir);
    snprintf(path, sizeof path, "%s/f.pdf", dir);
    put(path, "%PDF-1.5\nbody\n%%EOF\n\n");
    cr_expect_eq(fl_output_check_written("--out", path, "f.pdf", "%%EOF", 5), FL_OK, "%s", fl_last_error());
    cr_expect_eq(fl_output_check_written("--out", path, NULL, NULL, 0), FL_OK, "the size alone");
    /* planted faults: each must be caught */
    put(path, "%PDF-1.5\nbody\n%%EO");
    cr_expect_eq(fl_output_check_written("--out", path, "f.pdf", "%%EOF", 5), FL_EIO, "a file cut short passed");
    cr_expect(strstr(fl_last_error(), "--out: f.pdf came out incomplete (18 bytes, not ending as a complete file does"),
              "%s", fl_last_error());
    put(path, "");
    cr_expect_eq(fl_output_check_written("--out", path, "f.pdf", "%%EOF", 5), FL_EIO, "an empty file passed");
    cr_expect(strstr(fl_last_error(), "--out: f.pdf came out empty (0 bytes; "), "%s", fl_last_error());
    cr_expect_eq(fl_output_check_written("--out", path, "f.pdf", NULL, 0), FL_EIO, "an empty file passed the size check");
    put(path, "%%EOF"); /* a tail longer than the file */
    cr_expect_eq(fl_output_check_written("--out", path, NULL, "x%%EOF", 6), FL_EIO);
    static const char png_end[] = "\0\0\0\0IEND\xae\x42\x60\x82";
    FILE *f = fopen(path, "wb");
    cr_assert(f);
    fwrite("\x89PNG....", 1, 8, f);
    fwrite(png_end, 1, 12, f);
    fclose(f);
    cr_expect_eq(fl_output_check_written("--out", path, NULL, png_end, 12), FL_OK, "%s", fl_last_error());
    cr_expect_eq(truncate(path, 19), 0);
    cr_expect_eq(fl_output_check_written("--out", path, NULL, png_end, 12), FL_EIO, "a PNG without its last byte passed");
    unlink(path);
    cr_expect_eq(fl_output_check_written("--out", path, "f.pdf", NULL, 0), FL_EIO, "a missing file passed");
    cr_expect(strstr(fl_last_error(), "f.pdf was not written (No such file or directory)"), "%s", fl_last_error());
    cr_assert_eq(mkdir(path, 0755), 0);
    cr_expect_eq(fl_output_check_written("--out", path, "f.pdf", NULL, 0), FL_EIO, "a directory passed");
}

Test(output_module, at_most_a_fixed_number_pending)
{
    char dir[64], path[128];
    fresh_dir(dir);
    fl_output *o[FL_OUTPUT_MAX_PENDING + 1];
    int opened = 0;
    for (int i = 0; i <= FL_OUTPUT_MAX_PENDING; i++) {
        snprintf(path, sizeof path, "%s/f%d", dir, i);
        if (fl_output_open(path, "--output", &o[i]) == FL_OK) opened++;
        else cr_expect(strstr(fl_last_error(), "outputs open at once"), "%s", fl_last_error());
    }
    cr_expect_eq(opened, FL_OUTPUT_MAX_PENDING);
    for (int i = 0; i < opened; i++) fl_output_abort(o[i]);
    snprintf(path, sizeof path, "%s/again", dir); /* the slots are free again */
    cr_assert_eq(fl_output_open(path, "--output", &o[0]), FL_OK);
    fl_output_abort(o[0]);
}

static const char *const figs[] = {"a.png", "b.pdf", "data/a.csv"};

/* Writes every name of figs into the staging directory d, each holding text. */
static void stage(fl_outdir *d, const char *text)
{
    char p[512];
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", fl_outdir_path(d), figs[i]);
        put(p, text);
    }
}

Test(output_module, a_new_directory_appears_whole)
{
    char dir[64], out[128], names[1024];
    fresh_dir(dir);
    snprintf(out, sizeof out, "%s/figs", dir);
    const mode_t old = umask(027);
    fl_outdir *d;
    cr_assert_eq(fl_outdir_open(out, "--out", figs, 3, &d), FL_OK, "%s", fl_last_error());
    struct stat st;
    cr_expect(stat(out, &st) != 0, "the directory exists before the commit");
    stage(d, "new\n");
    cr_assert_eq(fl_outdir_commit(d), FL_OK, "%s", fl_last_error());
    umask(old);
    listing(dir, "", names, sizeof names);
    cr_expect_str_eq(names, "figs/ figs/a.png figs/b.pdf figs/data/ figs/data/a.csv ");
    cr_assert_eq(stat(out, &st), 0);
    cr_expect_eq(st.st_mode & 0777, 0750, "mode %o: the umask decides", st.st_mode & 0777);
}

/* Files of another user, replaced by root: each keeps its owner, group and mode (a file and a
 * directory of files); replaced by a user who may not give a file away: replaced all the same,
 * the writer's then, mode kept. */
Test(output_module, a_replaced_file_keeps_its_owner_and_mode)
{
    if (geteuid() != 0) cr_skip_test("needs root: the files of another user cannot be made");
    char dir[64], file[128], fig[128];
    fresh_dir(dir);
    snprintf(file, sizeof file, "%s/out.csv", dir);
    snprintf(fig, sizeof fig, "%s/a.png", dir);
    put(file, "old\n");
    put(fig, "old\n");
    cr_assert_eq(chown(file, 12345, 23456), 0);
    cr_assert_eq(chown(fig, 12345, 23456), 0);
    cr_assert_eq(chmod(file, 02640), 0); /* set-group-ID too: a chown clears it, so the mode comes after */
    cr_assert_eq(chmod(fig, 0604), 0);
    fl_output *o;
    cr_assert_eq(fl_output_open(file, "--output", &o), FL_OK, "%s", fl_last_error());
    fputs("new\n", fl_output_file(o));
    cr_assert_eq(fl_output_commit(o), FL_OK, "%s", fl_last_error());
    fl_outdir *d;
    cr_assert_eq(fl_outdir_open(dir, "--out", figs, 3, &d), FL_OK, "%s", fl_last_error());
    stage(d, "new\n");
    cr_assert_eq(fl_outdir_commit(d), FL_OK, "%s", fl_last_error());
    struct stat st;
    cr_assert_eq(stat(file, &st), 0);
    cr_expect_str_eq(slurp(file), "new\n");
    cr_expect(st.st_uid == 12345 && st.st_gid == 23456 && (st.st_mode & 07777) == 02640, "file: %u:%u %o",
              (unsigned)st.st_uid, (unsigned)st.st_gid, st.st_mode & 07777);
    cr_assert_eq(stat(fig, &st), 0);
    cr_expect_str_eq(slurp(fig), "new\n");
    cr_expect(st.st_uid == 12345 && st.st_gid == 23456 && (st.st_mode & 07777) == 0604, "figure: %u:%u %o",
              (unsigned)st.st_uid, (unsigned)st.st_gid, st.st_mode & 07777);
    /* an unprivileged writer in a folder it may write: EPERM on the chown is not a failure */
    cr_assert_eq(chmod(dir, 0777), 0);
    pid_t pid = fork();
    if (pid == 0) {
        if (setgid(12346) || setuid(12346)) _exit(10);
        fl_output *u;
        if (fl_output_open(file, "--output", &u)) _exit(11);
        fputs("theirs\n", fl_output_file(u));
        _exit(fl_output_commit(u) == FL_OK ? 0 : 12);
    }
    int wst;
    waitpid(pid, &wst, 0);
    cr_expect(WIFEXITED(wst) && WEXITSTATUS(wst) == 0, "unprivileged child: %d", wst);
    cr_assert_eq(stat(file, &st), 0);
    cr_expect_str_eq(slurp(file), "theirs\n");
    cr_expect(st.st_uid == 12346 && (st.st_mode & 0777) == 0640, "%u %o", (unsigned)st.st_uid, st.st_mode & 07777);
}

Test(output_module, an_existing_directory_keeps_its_other_files)
{
    char dir[64], p[256], names[1024];
    fresh_dir(dir);
    snprintf(p, sizeof p, "%s/mine.txt", dir);
    put(p, "mine\n");
    snprintf(p, sizeof p, "%s/a.png", dir);
    put(p, "old\n");
    chmod(p, 0600);
    fl_outdir *d;
    cr_assert_eq(fl_outdir_open(dir, "--out", figs, 3, &d), FL_OK, "%s", fl_last_error());
    stage(d, "new\n");
    cr_assert_eq(fl_outdir_commit(d), FL_OK, "%s", fl_last_error());
    listing(dir, "", names, sizeof names);
    cr_expect_str_eq(names, "a.png b.pdf data/ data/a.csv mine.txt ");
    cr_expect_str_eq(slurp(p), "new\n");
    struct stat st;
    cr_assert_eq(stat(p, &st), 0);
    cr_expect_eq(st.st_mode & 0777, 0600, "a replaced file keeps its mode (%o)", st.st_mode & 0777);
}

/* A figure's path is a directory: refused at open, before any work, and nothing created. */
Test(output_module, a_directory_in_a_files_place_is_refused_first)
{
    char dir[64], p[256], names[1024];
    fresh_dir(dir);
    snprintf(p, sizeof p, "%s/b.pdf", dir);
    cr_assert_eq(mkdir(p, 0755), 0);
    fl_outdir *d = NULL;
    cr_expect_eq(fl_outdir_open(dir, "--out", figs, 3, &d), FL_EINVAL);
    char want[256];
    snprintf(want, sizeof want, "--out: '%s/b.pdf' is a directory; flashlab writes regular files only", dir);
    cr_expect_str_eq(fl_last_error(), want);
    cr_expect_eq(d, NULL);
    rmdir(p);
    snprintf(p, sizeof p, "%s/data", dir); /* a subdirectory that is a file */
    put(p, "x");
    cr_expect_eq(fl_outdir_open(dir, "--out", figs, 3, &d), FL_EINVAL);
    snprintf(want, sizeof want, "--out: '%s/data' is a regular file; flashlab needs a directory there", dir);
    cr_expect_str_eq(fl_last_error(), want);
    listing(dir, "", names, sizeof names);
    cr_expect_str_eq(names, "data ");
}

/* A file the caller did not write: commit refuses and nothing is moved. */
Test(output_module, a_missing_file_moves_nothing)
{
    char dir[64], p[512], names[1024];
    fresh_dir(dir);
    fl_outdir *d;
    cr_assert_eq(fl_outdir_open(dir, "--out", figs, 3, &d), FL_OK);
    snprintf(p, sizeof p, "%s/a.png", fl_outdir_path(d));
    put(p, "new\n");
    cr_expect_eq(fl_outdir_commit(d), FL_EIO);
    cr_expect(strstr(fl_last_error(), "b.pdf was not written; nothing written"), "%s", fl_last_error());
    listing(dir, "", names, sizeof names);
    cr_expect_str_eq(names, "");
}

/* A move that fails part way (the data/ directory made immutable, so its file cannot arrive):
 * the files already moved are put back as they were.  Needs root and a file system with
 * immutable files (ext4); skipped elsewhere. */
Test(output_module, a_failure_part_way_puts_everything_back)
{
    char dir[64], p[256], sub[256], names[1024];
    fresh_dir(dir);
    snprintf(p, sizeof p, "%s/a.png", dir);
    put(p, "old a\n");
    snprintf(sub, sizeof sub, "%s/data", dir);
    cr_assert_eq(mkdir(sub, 0755), 0);
    fl_outdir *d;
    cr_assert_eq(fl_outdir_open(dir, "--out", figs, 3, &d), FL_OK);
    stage(d, "new\n");
    int fd = open(sub, O_RDONLY | O_DIRECTORY), flags = 0;
    if (fd < 0 || ioctl(fd, FS_IOC_GETFLAGS, &flags) != 0 ||
        (flags |= FS_IMMUTABLE_FL, ioctl(fd, FS_IOC_SETFLAGS, &flags) != 0)) {
        if (fd >= 0) close(fd);
        fl_outdir_abort(d);
        cr_skip_test("cannot make a directory immutable here");
    }
    const fl_status s = fl_outdir_commit(d);
    flags &= ~FS_IMMUTABLE_FL;
    ioctl(fd, FS_IOC_SETFLAGS, &flags);
    close(fd);
    cr_expect_eq(s, FL_EIO);
    cr_expect(strstr(fl_last_error(), "data/a.csv into place (Operation not permitted); nothing written"), "%s",
              fl_last_error());
    cr_expect_str_eq(slurp(p), "old a\n", "a.png was not put back");
    listing(dir, "", names, sizeof names);
    cr_expect_str_eq(names, "a.png data/ ", "left: %s", names);
}

Test(output_module, names_must_stay_inside_the_directory)
{
    char dir[64];
    fresh_dir(dir);
    const char *bad[] = {"../x", "/etc/x", "a/b/c", "", "./x", "data/..", "x/"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fl_outdir *d = NULL;
        cr_expect_eq(fl_outdir_open(dir, "--out", &bad[i], 1, &d), FL_EINVAL, "'%s' accepted", bad[i]);
        cr_expect_eq(d, NULL);
    }
}

/* A signal removes what is pending, then the process dies of it. */
static void die_with_pending(int sig, const char *dir)
{
    char p[256];
    fl_output_catch_signals();
    fl_output *o;
    fl_outdir *d;
    snprintf(p, sizeof p, "%s/file.csv", dir);
    if (fl_output_open(p, "--output", &o)) _exit(10);
    fputs("partial", fl_output_file(o));
    fflush(fl_output_file(o));
    snprintf(p, sizeof p, "%s/figs", dir);
    if (fl_outdir_open(p, "--out", figs, 3, &d)) _exit(11);
    stage(d, "partial\n");
    if (fl_outdir_open(dir, "--out", figs, 3, &d)) _exit(12);
    stage(d, "partial\n");
    raise(sig);
    _exit(13);
}

Test(output_module, a_signal_removes_every_temporary)
{
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
    for (int i = 0; i < 4; i++) {
        char dir[64], p[256], names[1024];
        fresh_dir(dir);
        snprintf(p, sizeof p, "%s/file.csv", dir);
        put(p, "old\n");
        pid_t pid = fork();
        if (pid == 0) die_with_pending(sigs[i], dir);
        int st;
        waitpid(pid, &st, 0);
        cr_expect(WIFSIGNALED(st) && WTERMSIG(st) == sigs[i], "signal %d: status %d", sigs[i], st);
        listing(dir, "", names, sizeof names);
        cr_expect_str_eq(names, "file.csv ", "signal %d left: %s", sigs[i], names);
        cr_expect_str_eq(slurp(p), "old\n");
    }
}

/* A closed stdout is held by a placeholder: a file opened next does not become stdout, and
 * writing to stdout fails and is reported. */
Test(output_module, a_closed_stdout_is_not_taken_by_a_file)
{
    char dir[64], p[128];
    fresh_dir(dir);
    snprintf(p, sizeof p, "%s/out.csv", dir);
    pid_t pid = fork();
    if (pid == 0) {
        close(1);
        fl_output_std_streams();
        fl_output *o;
        if (fl_output_open(p, "--output", &o)) _exit(10);
        if (fileno(fl_output_file(o)) == 1) _exit(11);
        printf("text for stdout\n");
        const fl_status s = fl_output_stdout_status();
        if (s != FL_EIO || strcmp(fl_last_error(), "stdout: write failed (Bad file descriptor)")) _exit(12);
        fputs("file\n", fl_output_file(o));
        _exit(fl_output_commit(o) ? 13 : 0);
    }
    int st;
    waitpid(pid, &st, 0);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
    cr_expect_str_eq(slurp(p), "file\n");
}
