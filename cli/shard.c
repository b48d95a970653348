/* shard.c: --shard I/N (see shard.h). */
#include "shard.h"

#include <string.h>

#include "args.h"
#include <flashlab/merge.h>
#include "cli.h"

fl_status fl_shard_parse(const char *opt, const char *v, fl_shard *s)
{
    const char *slash = strchr(v, '/');
    char num[32];
    if (!slash || (size_t)(slash - v) >= sizeof num)
        return fl_fail(FL_EINVAL, "%s: '%s' is not I/N (the I-th of N shards, 1 <= I <= N)", opt, fl_shown(v));
    memcpy(num, v, (size_t)(slash - v));
    num[slash - v] = 0;
    FL_TRY(fl_parse_i64(opt, slash + 1, 1, FL_SHARD_MAX, &s->n));
    FL_TRY(fl_parse_i64(opt, num, 1, s->n, &s->i));
    return FL_OK;
}

int fl_shard_owns(const fl_shard *s, int64_t k) { return s->n <= 1 || k % s->n == s->i - 1; }

void fl_shard_comments(FILE *out, const char *command, int argc, char **argv, const fl_shard *s, int64_t configs)
{
    static const char *const where[] = {"--jobs=", "--shard=", "--output=", "--progress", NULL};
    if (!s->n) {
        fl_cli_command_comment(out, command, argc, argv);
        return;
    }
    fl_cli_command_comment_except(out, command, argc, argv, where);
    fl_merge_shard_line(out, s->i, s->n, configs);
}
