/* test_shard.c: `sweep --shard I/N`, `optimize --shard I/N` and `flashlab merge`: the shards of a
 * run merge into the run's CSV byte for byte (1, 3 and 4 shards; 4 run at once through xargs -P);
 * merge refuses what is not one run's complete set of shards, and writes nothing then. */
#include "test_errors_util.h"

#include <sys/stat.h>

#define SWEEP "sweep", "--N", "64:2048:x2", "--d", "16,64", "--M", "128:65536:x4", "--M-upto-Nd", "--causal", "top-left"
#define FL_TEST_MAX_SHARDS 8
#define OPT "optimize", "--N", "512", "--d", "32", "--M", "256:131072:x2", "--pass", "fwd+bwd", "--format", "csv"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot read %s", path);
    char *b = malloc(CLI_CAP + 1);
    size_t n = fread(b, 1, CLI_CAP, f);
    b[n] = 0;
    fclose(f);
    return b;
}

static void tmpdir(char *dir) { cr_assert(mkdtemp(dir), "mkdtemp"); }

static void rmtree(const char *dir)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* Runs argv (NULL-terminated, without "flashlab") with --output <dir>/<name>; asserts success. */
static void run_to(const char *dir, const char *name, const char *const *args)
{
    const char *argv[40] = {"flashlab"};
    int n = 1;
    while (args[n - 1]) argv[n] = args[n - 1], n++;
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    argv[n++] = "--output", argv[n++] = path, argv[n] = NULL;
    cli_result r = cli_run_in(NULL, NULL, argv);
    cr_assert_eq(r.status, 0, "%s: %s", name, r.err);
    cli_free(&r);
}

/* The run's CSV on stdout, each of n shards to a file, merged; the merge must equal the run. */
static void merged_equals_whole(const char *const *args, int n)
{
    char dir[] = "/tmp/fl_shardXXXXXX", sh[16], path[256];
    tmpdir(dir);
    const char *argv[48] = {"flashlab"};
    int k = 1;
    while (args[k - 1]) argv[k] = args[k - 1], k++;
    argv[k] = NULL;
    cli_result whole = cli_run_in(NULL, NULL, argv);
    cr_assert_eq(whole.status, 0, "%s", whole.err);
    const char *margv[FL_TEST_MAX_SHARDS + 4] = {"flashlab", "merge"};
    char names[FL_TEST_MAX_SHARDS][256];
    for (int i = 1; i <= n; i++) {
        argv[k] = "--shard", snprintf(sh, sizeof sh, "%d/%d", i, n), argv[k + 1] = sh, argv[k + 2] = NULL;
        snprintf(path, sizeof path, "shard%d.csv", i);
        run_to(dir, path, argv + 1);
        snprintf(names[i - 1], sizeof names[0], "%s/shard%d.csv", dir, i);
        margv[1 + (n - i + 1)] = names[i - 1]; /* given in reverse: merge orders them */
    }
    margv[n + 2] = NULL;
    cli_result m = cli_run_in(NULL, NULL, margv);
    cr_assert_eq(m.status, 0, "%s", m.err);
    cr_assert_str_eq(m.out, whole.out, "%d shards merged differ from the whole run", n);
    cr_assert(strstr(whole.out, "\nalgo,") || strstr(whole.out, "\nN,d,M"), "%s", whole.out);
    cli_free(&m);
    cli_free(&whole);
    rmtree(dir);
}

Test(shard, sweep_shards_merge_to_the_whole_run)
{
    fl_time_limit(FL_T(300));
    const char *const args[] = {SWEEP, NULL};
    for (int n = 1; n <= 4; n++)
        if (n != 2) merged_equals_whole(args, n);
}

Test(shard, sweep_with_skipped_lines_and_more_shards_than_rows)
{
    /* M = 60 and 70 are below every schedule's smallest tiles at d = 16: '# skipped:' lines */
    const char *const args[] = {"sweep", "--N", "32,100", "--d", "16", "--M", "60,70,4096", "--pass", "fwd+bwd", NULL};
    merged_equals_whole(args, 3);
    merged_equals_whole(args, 4);
    merged_equals_whole(args, 8); /* 18 configurations over 8 shards */
}

Test(shard, optimize_shards_merge_to_the_whole_run)
{
    fl_time_limit(FL_T(300));
    const char *const args[] = {OPT, NULL};
    merged_equals_whole(args, 1);
    merged_equals_whole(args, 3);
    merged_equals_whole(args, 4);
}

/* Four shards run at once, each its own process, through xargs -P 4 (GNU parallel's job, with
 * what every system has). */
Test(shard, four_shards_at_once_through_xargs)
{
    fl_time_limit(FL_T(300));
    char dir[] = "/tmp/fl_xargsXXXXXX", cmd[2048];
    tmpdir(dir);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && printf '1\\n2\\n3\\n4\\n' | xargs -P 4 -I{} '%s' sweep --N 64:2048:x2 --d 16,64 "
             "--M 128:65536:x4 --M-upto-Nd --shard {}/4 --output shard{}.csv && '%s' merge shard1.csv shard2.csv "
             "shard3.csv shard4.csv --output merged.csv && '%s' sweep --N 64:2048:x2 --d 16,64 --M 128:65536:x4 "
             "--M-upto-Nd > whole.csv 2>/dev/null && cmp merged.csv whole.csv",
             dir, FLASHLAB_CLI, FLASHLAB_CLI, FLASHLAB_CLI);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    rmtree(dir);
}

/* Writes the shards of `sweep --N 64,128,256 --d 16 --M 4096` (3 configurations x 3 schedules)
 * into dir as s1.csv .. s3.csv. */
static void three_shards(const char *dir)
{
    char sh[8], name[16];
    for (int i = 1; i <= 3; i++) {
        snprintf(sh, sizeof sh, "%d/3", i), snprintf(name, sizeof name, "s%d.csv", i);
        const char *const a[] = {"sweep", "--N", "64,128,256", "--d", "16", "--M", "4096", "--shard", sh, NULL};
        run_to(dir, name, a);
    }
}

/* Runs `sh -c SETUP` in dir, then `flashlab merge FILES --output out.csv` there; expects one
 * line naming `says`, exit 2 and no out.csv. */
static void refused(const char *dir, const char *setup, const char *files, const char *says)
{
    char cmd[1024], out[256];
    snprintf(cmd, sizeof cmd, "cd '%s' && rm -f out.csv && %s", dir, setup);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' merge %s --output out.csv 2>err.txt; echo $? > rc.txt", dir, FLASHLAB_CLI,
             files);
    cr_assert_eq(system(cmd), 0);
    snprintf(out, sizeof out, "%s/rc.txt", dir);
    char *rc = slurp(out);
    snprintf(out, sizeof out, "%s/err.txt", dir);
    char *err = slurp(out);
    cr_expect_str_eq(rc, "2\n", "%s: exit %s (%s)", setup, rc, err);
    cr_expect(strstr(err, says), "%s: '%s' not in: %s", setup, says, err);
    cr_expect(strchr(err, '\n') && !strchr(err, '\n')[1], "%s: one line: %s", setup, err);
    snprintf(out, sizeof out, "%s/out.csv", dir);
    cr_expect_eq(access(out, F_OK), -1, "%s: nothing written", setup);
    free(rc), free(err);
}

Test(shard, merge_refusals)
{
    char dir[] = "/tmp/fl_mergeXXXXXX";
    tmpdir(dir);
    three_shards(dir);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' merge s3.csv s1.csv s2.csv > all.csv", dir, FLASHLAB_CLI);
    cr_assert_eq(system(cmd), 0, "the unharmed shards merge"); /* each refusal below harms one thing */
    refused(dir, "true", "s1.csv s3.csv", "shard 2/3 is missing");
    refused(dir, "true", "s1.csv s2.csv s2.csv s3.csv", "given twice");
    refused(dir, "sed 's/^# flashlab [0-9.]*/# flashlab 9.9.9/' s2.csv > x.csv", "s1.csv x.csv s3.csv", "different versions");
    refused(dir, "sed 's/--N 64,128,256/--N 64,128,512/' s2.csv > x.csv", "s1.csv x.csv s3.csv", "different commands");
    refused(dir, "sed 's/^algo,N/algo,NN/' s2.csv > x.csv", "s1.csv x.csv s3.csv", "different headers");
    refused(dir, "sed 's/round robin/roundrobin/' s2.csv > x.csv", "s1.csv x.csv s3.csv", "not a shard line");
    refused(dir, "sed 's/2\\/3 of 9/2\\/3 of 10/' s2.csv > x.csv", "s1.csv x.csv s3.csv", "different runs");
    refused(dir, "head -n -1 s2.csv > x.csv", "s1.csv x.csv s3.csv", "incomplete");
    refused(dir, "head -c -1 s2.csv > x.csv", "s1.csv x.csv s3.csv", "no newline");
    refused(dir, "(cat s2.csv; tail -n 1 s2.csv) > x.csv", "s1.csv x.csv s3.csv", "more lines than");
    refused(dir, "grep -v '^# shard' s2.csv > x.csv", "s1.csv x.csv s3.csv", "not a shard");
    refused(dir, "printf 'a\\0b\\n' > x.csv", "s1.csv x.csv s3.csv", "NUL byte");
    refused(dir, "cp s1.csv x.csv", "x.csv s2.csv s3.csv s1.csv", "given twice");
    refused(dir, "'" FLASHLAB_CLI "' sweep --N 64,128 --d 16 --M 4096 --shard 2/3 --output x.csv", "s1.csv x.csv s3.csv",
            "different runs");
    refused(dir, "true", "s1.csv s2.csv s3.csv --bogus", "--bogus");
    refused(dir, "mkdir -p dd", "s1.csv dd s3.csv", "dd");
    /* every configuration skipped: the whole run would refuse too */
    refused(dir,
            "for i in 1 2; do '" FLASHLAB_CLI "' sweep --algo flash1,flash2 --N 64 --d 16 --M 10,20 --shard $i/2 "
            "--output z$i.csv 2>/dev/null; done",
            "z1.csv z2.csv", "none of the 4 configurations");
    rmtree(dir);
}

Test(shard, shard_option_refusals)
{
    EXPECT_BAD_NAMES("--shard", "sweep", "--shard", "0/4");
    EXPECT_BAD_NAMES("--shard", "sweep", "--shard", "5/4");
    EXPECT_BAD_NAMES("--shard", "sweep", "--shard", "1/0");
    EXPECT_BAD_NAMES("--shard", "sweep", "--shard", "1-4");
    EXPECT_BAD_NAMES("--shard", "sweep", "--shard", "a/b");
    EXPECT_BAD_NAMES("--shard", "sweep", "--shard", "1/4", "--format", "table");
    EXPECT_BAD_NAMES("--shard", "optimize", "--M", "512,1024", "--shard", "1/2");
    EXPECT_BAD_NAMES("--shard", "optimize", "--M", "512,1024", "--shard", "3/2", "--format", "csv");
}
