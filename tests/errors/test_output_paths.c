/* test_output_paths.c: what an output path may point at.  flashlab writes regular files only:
 * a device, FIFO or directory named by --output / --out is refused (exit 2, one line, the thing
 * untouched); a symbolic link is written through to the regular file it resolves to; the
 * temporary file never has a fixed, guessable name; the umask and an existing file's mode are
 * respected.  Each case runs the built CLI in a fresh directory. */
#include "test_errors_util.h"

#include <errno.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

/* A fresh directory under /tmp for one test; its path is written to dir. */
static void fresh_dir(char dir[64])
{
    snprintf(dir, 64, "/tmp/fl_outXXXXXX");
    cr_assert(mkdtemp(dir) != NULL, "mkdtemp");
}

static void path_in(char *out, size_t n, const char *dir, const char *name)
{
    snprintf(out, n, "%s/%s", dir, name);
}

/* Runs a small sweep writing to `target` (given as a path relative to dir, run in dir). */
static cli_result sweep_to(const char *dir, const char *target)
{
    const char *const argv[] = {"flashlab", "sweep", "--N", "64", "--d", "8", "--M", "1000",
                                "--output", target, NULL};
    return cli_run_in(dir, NULL, argv);
}

/* No file of dir other than the ones listed remains (no temporaries left behind). */
static int count_entries(const char *dir)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", dir);
    FILE *p = popen(cmd, "r");
    int n = -1;
    if (p && fscanf(p, "%d", &n) != 1) n = -1;
    if (p) pclose(p);
    return n;
}

Test(output_paths, character_device_is_refused_and_kept)
{
    char dir[64], dev[128];
    fresh_dir(dir);
    path_in(dev, sizeof dev, dir, "fakedev");
    if (mknod(dev, S_IFCHR | 0666, makedev(1, 3)) != 0) /* needs root (CI runs as root) */
        cr_skip_test("mknod: %s (not root?)", strerror(errno));
    cli_result r = sweep_to(dir, "fakedev");
    expect_bad_r(&r, NULL, "--output: 'fakedev' is a character device; flashlab writes regular files only",
                 "sweep --output fakedev");
    struct stat st;
    cr_assert(lstat(dev, &st) == 0 && S_ISCHR(st.st_mode), "fakedev is no longer a character device");
    cr_expect_eq(count_entries(dir), 1, "a temporary file was left beside the device");
    cli_free(&r);
}

Test(output_paths, fifo_and_directory_are_refused)
{
    char dir[64], fifo[128], sub[128];
    fresh_dir(dir);
    path_in(fifo, sizeof fifo, dir, "pipe");
    path_in(sub, sizeof sub, dir, "sub");
    cr_assert(mkfifo(fifo, 0644) == 0 && mkdir(sub, 0755) == 0);
    cli_result r = sweep_to(dir, "pipe");
    expect_bad_r(&r, NULL, "--output: 'pipe' is a FIFO; flashlab writes regular files only", "fifo");
    cli_free(&r);
    r = sweep_to(dir, "sub");
    expect_bad_r(&r, NULL, "--output: 'sub' is a directory; flashlab writes regular files only", "dir");
    cli_free(&r);
    struct stat st;
    cr_expect(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode), "the FIFO was replaced");
    cr_expect(lstat(sub, &st) == 0 && S_ISDIR(st.st_mode), "the directory was replaced");
    cr_expect_eq(count_entries(dir), 2, "something was left in the directory");
    /* trace --out and the other commands share the rule */
    const char *const argv[] = {"flashlab", "trace", "--out", "pipe", NULL};
    r = cli_run_in(dir, NULL, argv);
    expect_bad_r(&r, NULL, "--out: 'pipe' is a FIFO; flashlab writes regular files only", "trace --out");
    cli_free(&r);
}

Test(output_paths, symlink_is_written_through)
{
    char dir[64], target[128], link[128];
    fresh_dir(dir);
    path_in(target, sizeof target, dir, "real.csv");
    path_in(link, sizeof link, dir, "link.csv");
    FILE *f = fopen(target, "w");
    cr_assert(f && fputs("old\n", f) >= 0 && fclose(f) == 0);
    cr_assert(symlink("real.csv", link) == 0);
    cli_result r = sweep_to(dir, "link.csv");
    cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.err);
    cli_free(&r);
    struct stat st;
    cr_expect(lstat(link, &st) == 0 && S_ISLNK(st.st_mode), "the link is no longer a link");
    cr_expect(stat(target, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 100,
              "the link's target did not receive the sweep");
    /* a dangling link is refused, and stays dangling */
    char dangling[128];
    path_in(dangling, sizeof dangling, dir, "nowhere.csv");
    cr_assert(symlink("missing/x.csv", dangling) == 0);
    r = sweep_to(dir, "nowhere.csv");
    expect_bad_r(&r, "--output: 'nowhere.csv' is a symbolic link to nothing", NULL, "dangling link");
    cli_free(&r);
    cr_expect(lstat(dangling, &st) == 0 && S_ISLNK(st.st_mode));
}

Test(output_paths, trace_temporary_is_not_a_fixed_name)
{
    /* ln -s victim t.csv.tmp; trace --out t.csv must not write through t.csv.tmp */
    char dir[64], victim[128], tmp[128], out[128];
    fresh_dir(dir);
    path_in(victim, sizeof victim, dir, "victim");
    path_in(tmp, sizeof tmp, dir, "t.csv.tmp");
    path_in(out, sizeof out, dir, "t.csv");
    FILE *f = fopen(victim, "w");
    cr_assert(f && fputs("precious\n", f) >= 0 && fclose(f) == 0);
    cr_assert(symlink("victim", tmp) == 0);
    const char *const argv[] = {"flashlab", "trace", "--out", "t.csv", NULL};
    cli_result r = cli_run_in(dir, NULL, argv);
    cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.err);
    cli_free(&r);
    char buf[64] = {0};
    f = fopen(victim, "r");
    cr_assert(f && fgets(buf, sizeof buf, f));
    fclose(f);
    cr_expect_str_eq(buf, "precious\n", "trace wrote through the planted link");
    struct stat st;
    cr_expect(stat(out, &st) == 0 && st.st_size > 100, "t.csv was not written");
    cr_expect_eq(count_entries(dir), 3, "a temporary file was left behind");
}

Test(output_paths, umask_and_existing_mode_are_respected)
{
    char dir[64], fresh[128], kept[128];
    fresh_dir(dir);
    path_in(fresh, sizeof fresh, dir, "new.csv");
    path_in(kept, sizeof kept, dir, "kept.csv");
    const mode_t old = umask(077);
    cli_result r = sweep_to(dir, "new.csv");
    umask(old);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cli_free(&r);
    struct stat st;
    cr_assert(stat(fresh, &st) == 0);
    cr_expect_eq(st.st_mode & 0777, 0600, "under umask 077 the new file has mode %o", st.st_mode & 0777);
    FILE *f = fopen(kept, "w");
    cr_assert(f && fclose(f) == 0 && chmod(kept, 0640) == 0);
    r = sweep_to(dir, "kept.csv");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cli_free(&r);
    cr_assert(stat(kept, &st) == 0);
    cr_expect_eq(st.st_mode & 0777, 0640, "a replaced file keeps its mode, got %o", st.st_mode & 0777);
}

/* A directory named by --output is refused before the sweep runs, not after it (this grid takes
 * minutes: the timeout fails the test if the sweep ran first). */
Test(output_paths, directory_refused_before_the_work)
{
    fl_time_limit(FL_T(10.0));
    char dir[64], sub[128];
    fresh_dir(dir);
    path_in(sub, sizeof sub, dir, "existingdir");
    cr_assert(mkdir(sub, 0755) == 0);
    const char *const argv[] = {"flashlab", "sweep", "--N", "64:65536:x2", "--d", "16:256:x2", "--M",
                                "4096:1048576:x2", "--max-total-events", "0", "--output", "existingdir", NULL};
    cli_result r = cli_run_in(dir, NULL, argv);
    expect_bad_r(&r, NULL, "--output: 'existingdir' is a directory; flashlab writes regular files only",
                 "sweep --output existingdir");
    cli_free(&r);
}
