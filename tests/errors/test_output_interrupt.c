/* test_output_interrupt.c: outputs through the CLI when something else happens at the same time:
 * SIGINT or SIGTERM while a file or a directory of figures is being written (every temporary
 * and staging directory removed, the target as it was, then death by the signal), two runs
 * writing one path at once (one complete file, never a mix), and an output path holding a
 * newline (no forged line in the CSV's provenance comment). */
#include "test_errors_util.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <time.h>
#include "disk.h"

static void fresh_dir(char dir[64])
{
    snprintf(dir, 64, "/tmp/fl_irXXXXXX");
    cr_assert(mkdtemp(dir) != NULL, "mkdtemp");
}

/* Starts FLASHLAB_CLI argv in dir, in a process group of its own, stdout and stderr to
 * /dev/null, env entries added; returns its pid. */
static pid_t spawn(const char *dir, char *const env[], const char *const argv[])
{
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        setpgid(0, 0);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        if (chdir(dir) != 0) _exit(126);
        for (int i = 0; env && env[i]; i++) putenv(env[i]);
        execv(FLASHLAB_CLI, (char *const *)argv);
        _exit(127);
    }
    return pid;
}

/* Waits (up to 240 s: plot computes figure (g)'s data before its first gnuplot, slow under the
 * sanitizers on a loaded machine) until an entry of dir contains part; 1 when one did. */
static int wait_for_entry(const char *dir, const char *part)
{
    char names[4096];
    for (int i = 0; i < 24000; i++) {
        dir_entries(dir, names, sizeof names);
        if (strstr(names, part)) return 1;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs(text, f);
    fclose(f);
}

static int same_text(const char *path, const char *text)
{
    char buf[64] = "";
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return strcmp(buf, text) == 0;
}

/* A long sweep into big.csv, interrupted once its temporary exists. */
static void interrupt_sweep(int sig)
{
    char dir[64], path[128], names[4096];
    fresh_dir(dir);
    snprintf(path, sizeof path, "%s/big.csv", dir);
    put(path, "old\n");
    const char *const argv[] = {"flashlab", "sweep", "--N", "64:65536:x2", "--d", "16:256:x2", "--M", "4096:1048576:x2",
                                "--max-total-events", "0", "--output", "big.csv", NULL};
    pid_t pid = spawn(dir, NULL, argv);
    cr_assert(wait_for_entry(dir, "big.csv.flashlab-tmp-"), "no temporary appeared");
    kill(pid, sig);
    int st;
    waitpid(pid, &st, 0);
    cr_expect(WIFSIGNALED(st) && WTERMSIG(st) == sig, "signal %d: status %d", sig, st);
    dir_entries(dir, names, sizeof names);
    cr_expect_str_eq(names, "big.csv ", "left after signal %d: %s", sig, names);
    cr_expect(same_text(path, "old\n"), "big.csv changed");
}

Test(output_interrupt, sigint_during_a_sweep_leaves_nothing) {
    fl_time_limit(FL_T(60));
    interrupt_sweep(SIGINT);
}
Test(output_interrupt, sigterm_during_a_sweep_leaves_nothing) {
    fl_time_limit(FL_T(60));
    interrupt_sweep(SIGTERM);
}

/* SIGTERM while gnuplot runs (a stand-in that passes the terminal check, then marks that it has
 * started and sleeps): the staging directory beside figs/ is removed and figs/ never appears. */
Test(output_interrupt, sigterm_during_plot_removes_the_staging_directory)
{
    fl_time_limit(FL_T(300));
    char dir[64], fake[128], mark[128], names[4096];
    fresh_dir(dir);
    snprintf(fake, sizeof fake, "%s/gp", dir);
    snprintf(mark, sizeof mark, "%s/started", dir);
    FILE *f = fopen(fake, "w");
    cr_assert(f);
    fprintf(f, "#!/bin/sh\ncase \"$*\" in *'set terminal pngcairo; set terminal pdfcairo'*) exit 0;; esac\n"
               "touch '%s'\nexec sleep 5\n", mark);
    fclose(f);
    chmod(fake, 0755);
    char env_gp[160];
    snprintf(env_gp, sizeof env_gp, "FLASHLAB_GNUPLOT=%s", fake);
    char *env[] = {env_gp, NULL};
    const char *const argv[] = {"flashlab", "plot", "--out", "figs", NULL};
    pid_t pid = spawn(dir, env, argv);
    cr_assert(wait_for_entry(dir, "started"), "gnuplot never started");
    dir_entries(dir, names, sizeof names);
    cr_expect(strstr(names, "figs.flashlab-tmp-"), "no staging directory while gnuplot ran: %s", names);
    kill(pid, SIGTERM);
    int st;
    waitpid(pid, &st, 0);
    kill(-pid, SIGKILL); /* the sleeping stand-in */
    cr_expect(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "status %d", st);
    dir_entries(dir, names, sizeof names);
    cr_expect_str_eq(names, "gp started ", "left: %s", names);
}

/* Two traces into one path at once: the file is one run's output, whole (each run writes its
 * own temporary and renames it; the last rename wins). */
Test(output_interrupt, two_runs_writing_one_path_leave_one_complete_file)
{
    fl_time_limit(FL_T(120));
    char dir[64], names[4096];
    fresh_dir(dir);
    const char *const ref[] = {"flashlab", "trace", "--algo", "all", "--N", "128", "--d", "8", "--M", "384",
                               "--max-events", "1000000", "--out", "ref.csv", NULL};
    cli_result r = cli_run_in(dir, NULL, ref);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cli_free(&r);
    for (int round = 0; round < 4; round++) {
        const char *const argv[] = {"flashlab", "trace", "--algo", "all", "--N", "128", "--d", "8", "--M", "384",
                                    "--max-events", "1000000", "--out", "same.csv", NULL};
        pid_t a = spawn(dir, NULL, argv), b = spawn(dir, NULL, argv);
        int sa, sb;
        waitpid(a, &sa, 0);
        waitpid(b, &sb, 0);
        cr_expect(WIFEXITED(sa) && WEXITSTATUS(sa) == 0 && WIFEXITED(sb) && WEXITSTATUS(sb) == 0, "statuses %d %d", sa,
                  sb);
        char cmd[256];
        snprintf(cmd, sizeof cmd, "cmp -s '%s/ref.csv' '%s/same.csv'", dir, dir);
        cr_expect_eq(system(cmd), 0, "round %d: same.csv is not one whole run's trace", round);
    }
    dir_entries(dir, names, sizeof names);
    cr_expect_str_eq(names, "ref.csv same.csv ", "left: %s", names);
}

/* A newline in --output is shown as '?' in the '# command:' line; it cannot start a data line. */
Test(output_interrupt, a_newline_in_the_path_forges_no_line)
{
    char dir[64], path[128], line[512];
    fresh_dir(dir);
    const char *const argv[] = {"flashlab", "sweep", "--N", "64", "--d", "8", "--M", "1000", "--output",
                                "x\nflash9,1,2,3.csv", NULL};
    cli_result r = cli_run_in(dir, NULL, argv);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cli_free(&r);
    snprintf(path, sizeof path, "%s/x\nflash9,1,2,3.csv", dir);
    FILE *f = fopen(path, "r");
    cr_assert(f, "the file was not written under its name");
    int n = 0, commands = 0;
    while (fgets(line, sizeof line, f)) {
        n++;
        cr_expect(line[0] == '#' || !strncmp(line, "algo,", 5) || !strncmp(line, "standard,", 9) ||
                      !strncmp(line, "flash1,", 7) || !strncmp(line, "flash2,", 7),
                  "line %d is neither a comment, the header nor a row: %s", n, line);
        if (!strncmp(line, "# command: ", 11)) {
            commands++;
            cr_expect_str_eq(line, "# command: flashlab sweep --N 64 --d 8 --M 1000 --output x?flash9,1,2,3.csv\n");
        }
    }
    fclose(f);
    cr_expect_eq(commands, 1);
}
