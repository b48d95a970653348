/* test_trace_cli.c: `flashlab trace` as a user meets it (exit status, one-line errors, nothing
 * half-written) and the figure scripts that read its CSV (figures/trace_*.gp). */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[256];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/fl_trace_cli_XXXXXX");
    cr_assert(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    (void)system(cmd);
}

/* Runs a shell command; returns its exit status. */
static int sh(const char *fmt, const char *a, const char *b)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, fmt, a, b);
    int s = system(cmd);
    return WIFEXITED(s) ? WEXITSTATUS(s) : -1;
}

static int exists(const char *d, const char *name)
{
    char p[512];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", d, name);
    return stat(p, &st) == 0 && st.st_size > 0;
}

static long count_lines(const char *d, const char *name)
{
    char p[512], line[1024];
    snprintf(p, sizeof p, "%s/%s", d, name);
    FILE *f = fopen(p, "r");
    if (!f) return -1;
    long n = 0;
    while (fgets(line, sizeof line, f)) n++;
    fclose(f);
    return n;
}

TestSuite(trace_cli, .init = setup, .fini = teardown);

Test(trace_cli, writes_csv_and_jsonl_of_the_same_events)
{
    cr_assert_eq(sh(FLASHLAB_CLI " trace --out %s/t.csv", dir, ""), 0);
    cr_assert_eq(sh(FLASHLAB_CLI " trace --format jsonl > %s/t.jsonl", dir, ""), 0);
    long csv = count_lines(dir, "t.csv"), jsonl = count_lines(dir, "t.jsonl");
    cr_assert_gt(csv, 100);
    cr_assert_eq(csv, jsonl + 1, "one header line, then the same events");
}

Test(trace_cli, bad_input_is_one_line_exit_2_and_no_file)
{
    const char *bad[] = {"--M 3 --algo flash2", "--algo Flash_X", "--N 0", "--format xml",
                         "--bogus 1", "--N 4096 --max-events 1000", "--Br 1000 --algo flash2"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, FLASHLAB_CLI " trace %s --out %%s/bad.csv 2> %%s/err", bad[k]);
        cr_assert_eq(sh(cmd, dir, dir), 2, "flashlab trace %s", bad[k]);
        cr_assert(!exists(dir, "bad.csv"), "%s left a file", bad[k]);
        cr_assert(!exists(dir, "bad.csv.tmp"), "%s left a temporary file", bad[k]);
        cr_assert_eq(count_lines(dir, "err"), 1, "%s: one line on stderr", bad[k]);
    }
    /* to stdout: nothing at all on stdout when the second schedule fails */
    cr_assert_eq(sh(FLASHLAB_CLI " trace --algo flash2,standard --M 300 --d 8 --max-events 150 > %s/out 2>/dev/null", dir, ""), 2);
    cr_assert_eq(count_lines(dir, "out"), 0);
}

Test(trace_cli, figure_scripts_make_an_animation_and_a_strip)
{
    if (system("command -v gnuplot > /dev/null 2>&1") != 0) cr_skip_test("gnuplot is not installed");
    cr_assert_eq(sh(FLASHLAB_CLI " trace --out %s/t.csv", dir, ""), 0);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "gnuplot -e \"data='%%s/t.csv'; out='%%s/t.gif'; frames=4\" "
                              FLASHLAB_SOURCE_DIR "/figures/trace_anim.gp 2>/dev/null");
    cr_assert_eq(sh(cmd, dir, dir), 0);
    snprintf(cmd, sizeof cmd, "gnuplot -e \"data='%%s/t.csv'; out='%%s/s.png'\" "
                              FLASHLAB_SOURCE_DIR "/figures/trace_strip.gp 2>/dev/null");
    cr_assert_eq(sh(cmd, dir, dir), 0);
    cr_assert(exists(dir, "t.gif"));
    cr_assert(exists(dir, "s.png"));
    /* a GIF animation: the header, and one image descriptor (0x2C after a graphic control
     * extension) per frame */
    char p[512];
    snprintf(p, sizeof p, "%s/t.gif", dir);
    FILE *f = fopen(p, "rb");
    unsigned char head[6];
    cr_assert_eq(fread(head, 1, 6, f), 6u);
    cr_assert(memcmp(head, "GIF89a", 6) == 0);
    int c, prev = -1, frames = 0;
    while ((c = fgetc(f)) != EOF) {
        if (prev == 0x21 && c == 0xF9) frames++; /* graphic control extension: one per frame */
        prev = c;
    }
    fclose(f);
    cr_assert_geq(frames, 4, "an animation of 4 frames (found %d)", frames);
}
