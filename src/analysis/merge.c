/* merge.c: the shards of a run joined into its CSV (see merge.h). */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include <flashlab/merge.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>


#define MAX_PRELUDE 64

void fl_merge_shard_line(FILE *out, int64_t i, int64_t n, int64_t configs)
{
    fprintf(out, "# shard: %" PRId64 "/%" PRId64 " of %" PRId64 " configurations; `flashlab merge` joins the %" PRId64
                 " shards round robin into the run's CSV\n",
            i, n, configs, n);
}

typedef struct {
    FILE *f;
    const char *name;
    char *pre[MAX_PRELUDE]; /* the provenance lines, the shard line left out */
    int npre;
    char *header;
    int64_t i, n, configs, want, got;
    long ln;
    int64_t bytes;
} shard;

/* Reads one line (newline kept) into *buf: 1, 0 at the end, -1 on error (*e set). */
static int read_line(shard *s, char **buf, size_t *cap, fl_status *e)
{
    size_t n = 0;
    int c = EOF;
    while ((c = getc(s->f)) != EOF) {
        if (++s->bytes > FL_MERGE_MAX_BYTES) {
            *e = fl_fail(FL_EINVAL, "%s: more than %lld bytes; not a shard flashlab writes", fl_shown(s->name),
                         (long long)FL_MERGE_MAX_BYTES);
            return -1;
        }
        if (c == 0) {
            *e = fl_fail(FL_EINVAL, "%s:%ld: a NUL byte: binary data, not a CSV", fl_shown(s->name), s->ln + 1);
            return -1;
        }
        if (n + 2 >= *cap) {
            if (*cap >= FL_MERGE_MAX_LINE) {
                *e = fl_fail(FL_EINVAL, "%s:%ld: line longer than %d characters", fl_shown(s->name), s->ln + 1, FL_MERGE_MAX_LINE);
                return -1;
            }
            char *b = realloc(*buf, *cap * 2);
            if (!b) {
                *e = fl_fail(FL_ENOMEM, "merge: out of memory");
                return -1;
            }
            *buf = b, *cap *= 2;
        }
        (*buf)[n++] = (char)c;
        if (c == '\n') break;
    }
    (*buf)[n] = 0;
    if (ferror(s->f)) {
        *e = fl_fail(FL_EIO, "%s: read error (%s)", fl_shown(s->name), strerror(errno));
        return -1;
    }
    if (!n) return 0;
    s->ln++;
    if (c != '\n') {
        *e = fl_fail(FL_EINVAL, "%s:%ld: the last line has no newline: the shard is cut short", fl_shown(s->name), s->ln);
        return -1;
    }
    return 1;
}

/* The provenance lines, the shard line and the header of s. */
static fl_status read_head(shard *s, char **buf, size_t *cap)
{
    fl_status e = FL_OK;
    int have_shard = 0, got;
    while ((got = read_line(s, buf, cap, &e)) == 1 && (*buf)[0] == '#') {
        long long i, n, c;
        if (sscanf(*buf, "# shard: %lld/%lld of %lld configurations", &i, &n, &c) == 3) {
            if (have_shard) return fl_fail(FL_EINVAL, "%s:%ld: a second shard line", fl_shown(s->name), s->ln);
            char want[256];
            snprintf(want, sizeof want, "# shard: %lld/%lld of %lld configurations; `flashlab merge` joins the %lld shards "
                                        "round robin into the run's CSV\n", i, n, c, n);
            if (strcmp(*buf, want) || n < 1 || i < 1 || i > n || c < 0)
                return fl_fail(FL_EINVAL, "%s:%ld: not a shard line flashlab writes", fl_shown(s->name), s->ln);
            s->i = i, s->n = n, s->configs = c, have_shard = 1;
            continue;
        }
        if (s->npre == MAX_PRELUDE) return fl_fail(FL_EINVAL, "%s: more than %d provenance lines", fl_shown(s->name), MAX_PRELUDE);
        if (!(s->pre[s->npre++] = strdup(*buf))) return fl_fail(FL_ENOMEM, "merge: out of memory");
    }
    if (got < 0) return e;
    if (!have_shard)
        return fl_fail(FL_EINVAL, "%s: not a shard of a flashlab run (no '# shard: I/N ...' line above the header)", fl_shown(s->name));
    if (got == 0) return fl_fail(FL_EINVAL, "%s: no header line: the shard is cut short", fl_shown(s->name));
    if (!(s->header = strdup(*buf))) return fl_fail(FL_ENOMEM, "merge: out of memory");
    s->want = s->configs / s->n + (s->i - 1 < s->configs % s->n); /* configurations k with k mod n = i - 1 */
    return FL_OK;
}

/* The version in a first provenance line "# flashlab X.Y.Z...": its length, or 0. */
static size_t version_len(const char *line)
{
    if (strncmp(line, "# flashlab ", 11)) return 0;
    return 11 + strcspn(line + 11, " :\n");
}

/* The shards agree: one run (N, configurations), every shard once, one version, one command,
 * the same provenance lines and header. */
static fl_status check_same(shard *s, int n)
{
    const shard *a = &s[0];
    for (int k = 1; k < n; k++) {
        const shard *b = &s[k];
        if (b->n != a->n || b->configs != a->configs)
            return fl_fail(FL_EINVAL, "merge: %s is shard %lld/%lld of %lld configurations, %s %lld/%lld of %lld: shards of "
                                      "different runs", fl_shown(a->name), (long long)a->i, (long long)a->n,
                           (long long)a->configs, fl_shown(b->name), (long long)b->i, (long long)b->n, (long long)b->configs);
    }
    if (a->n > n) { /* the first index missing from the sorted list */
        int64_t missing = 1;
        for (int k = 0; k < n && s[k].i <= missing; k++) missing = s[k].i + 1;
        return fl_fail(FL_EINVAL, "merge: the run has %lld shards, %d given (shard %lld/%lld is missing)", (long long)a->n,
                       n, (long long)missing, (long long)a->n);
    }
    for (int k = 1; k < n; k++) { /* n >= N shards of 1..N: a repeated one if n > N */
        const shard *b = &s[k];
        if (b->i == s[k - 1].i)
            return fl_fail(FL_EINVAL, "merge: shard %lld/%lld given twice (%s and %s)", (long long)b->i, (long long)b->n,
                           fl_shown(s[k - 1].name), fl_shown(b->name));
        const size_t va = a->npre ? version_len(a->pre[0]) : 0, vb = b->npre ? version_len(b->pre[0]) : 0;
        if (va != vb || (va && strncmp(a->pre[0], b->pre[0], va)))
            return fl_fail(FL_EINVAL, "merge: %s and %s were written by different versions of flashlab", fl_shown(a->name),
                           fl_shown(b->name));
        for (int j = 1; j < a->npre || j < b->npre; j++) {
            const char *x = j < a->npre ? a->pre[j] : "", *y = j < b->npre ? b->pre[j] : "";
            if (strcmp(x, y))
                return fl_fail(FL_EINVAL, "merge: %s and %s are shards of different %s", fl_shown(a->name), fl_shown(b->name),
                               !strncmp(x, "# command:", 10) || !strncmp(y, "# command:", 10) ? "commands"
                                                                                             : "runs (a provenance line differs)");
        }
        if (strcmp(a->header, b->header))
            return fl_fail(FL_EINVAL, "merge: %s and %s have different headers", fl_shown(a->name), fl_shown(b->name));
    }
    for (int k = 0; k < n; k++)
        if (s[k].i != k + 1)
            return fl_fail(FL_EINVAL, "merge: shard %d/%d is missing", k + 1, n);
    return FL_OK;
}

static int by_index(const void *x, const void *y)
{
    const shard *a = x, *b = y;
    return (a->i > b->i) - (a->i < b->i);
}

fl_status fl_merge_shards(FILE *const *in, const char *const *names, int n, FILE *out)
{
    if (n < 1) return fl_fail(FL_EINVAL, "merge: needs the CSV files of the shards");
    if (n > FL_MERGE_MAX_SHARDS) return fl_fail(FL_EINVAL, "merge: at most %d shards, got %d", FL_MERGE_MAX_SHARDS, n);
    shard *s = calloc((size_t)n, sizeof *s);
    size_t cap = 4096;
    char *buf = malloc(cap);
    fl_status e = s && buf ? FL_OK : fl_fail(FL_ENOMEM, "merge: out of memory");
    for (int k = 0; k < n && !e; k++) {
        s[k].f = in[k], s[k].name = names[k];
        e = read_head(&s[k], &buf, &cap);
    }
    if (!e) qsort(s, (size_t)n, sizeof *s, by_index);
    if (!e) e = check_same(s, n);
    for (int j = 0; j < (e ? 0 : s[0].npre); j++) fputs(s[0].pre[j], out);
    if (!e) fputs(s[0].header, out);
    int64_t rows = 0;
    for (int64_t c = 0; !e && c < s[0].configs; c++) { /* configuration c is in shard c mod n */
        shard *x = &s[c % n];
        const int got = read_line(x, &buf, &cap, &e);
        if (got == 0)
            e = fl_fail(FL_EINVAL, "%s: shard %lld/%lld ends after %lld of its %lld configurations: incomplete", fl_shown(x->name),
                        (long long)x->i, (long long)x->n, (long long)x->got, (long long)x->want);
        if (got != 1) break;
        x->got++;
        rows += buf[0] != '#';
        fputs(buf, out);
    }
    for (int k = 0; k < n && !e; k++) {
        const int got = read_line(&s[k], &buf, &cap, &e);
        if (got == 1)
            e = fl_fail(FL_EINVAL, "%s:%ld: more lines than the %lld configurations of shard %lld/%lld", fl_shown(s[k].name), s[k].ln,
                        (long long)s[k].want, (long long)s[k].i, (long long)s[k].n);
    }
    if (!e && !rows)
        e = fl_fail(FL_EINVAL, "merge: none of the %lld configurations of the run produced a row", (long long)s[0].configs);
    if (!e && ferror(out)) e = fl_fail(FL_EIO, "merge: write failed");
    for (int k = 0; s && k < n; k++) {
        for (int j = 0; j < s[k].npre; j++) free(s[k].pre[j]);
        free(s[k].header);
    }
    free(s);
    free(buf);
    return e;
}
