/* cta_timing.c: the measured-timing CSV of cta_timing.h, read strictly. */
#include <flashlab/cta_timing.h>

#include "analysis/csv_line.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ROWS (INT64_C(1) << 24)
#define HEADER "item,sm,start_ns,end_ns"

/* one decimal integer field >= 0 ending at ',' (or, for the last, the line's end): 1 on success */
static int field(char **p, int last, int64_t *v)
{
    char *s = *p, *end;
    if (*s < '0' || *s > '9') return 0; /* no sign, no space, no empty field */
    errno = 0;
    const long long x = strtoll(s, &end, 10);
    if (errno || end == s || (last ? *end != 0 : *end != ',')) return 0;
    *v = x;
    *p = last ? end : end + 1;
    return 1;
}

fl_status fl_cta_timing_read(FILE *in, const char *name, const char *option, fl_cta_time **out, int64_t *n)
{
    *out = NULL, *n = 0;
    char line[257]; /* 255 characters, the newline, the NUL */
    int64_t lineno = 0, cap = 0, rows = 0;
    int header = 0;
    fl_cta_time *t = NULL;
    int64_t *item = NULL; /* rows in file order, then placed by item index */
    fl_status e = FL_OK;
    char label[300];
    snprintf(label, sizeof label, "%s %s", option, name);
    int64_t bytes = 0;
    while (!e && fl_csv_read_line(in, label, (long)lineno + 1, line, sizeof line, &bytes, INT64_C(1) << 30,
                                   "a timing CSV", "", &e) == 1) {
        lineno++;
        size_t len = strlen(line);
        if (len && line[len - 1] == '\r') line[--len] = 0;
        if (line[0] == '#' || !len) continue; /* provenance, blank lines */
        if (!header) {
            if (strcmp(line, HEADER) != 0)
                e = fl_fail(FL_EINVAL, "%s %s: line %lld: the header must be '" HEADER "'", option, name,
                            (long long)lineno);
            header = 1;
            continue;
        }
        if (rows == MAX_ROWS) {
            e = fl_fail(FL_EINVAL, "%s %s: more than %lld rows", option, name, (long long)MAX_ROWS);
            break;
        }
        if (rows == cap) {
            cap = cap ? 2 * cap : 1024;
            fl_cta_time *nt = realloc(t, (size_t)cap * sizeof *t);
            if (nt) t = nt;
            int64_t *ni = nt ? realloc(item, (size_t)cap * sizeof *item) : NULL;
            if (ni) item = ni;
            if (!nt || !ni) {
                e = fl_fail(FL_ENOMEM, "%s %s: out of memory at line %lld", option, name, (long long)lineno);
                break;
            }
        }
        char *p = line;
        fl_cta_time r;
        if (!field(&p, 0, &item[rows]) || !field(&p, 0, &r.sm) || !field(&p, 0, &r.start) || !field(&p, 1, &r.end))
            e = fl_fail(FL_EINVAL, "%s %s: line %lld: a row must be four integers >= 0: item,sm,start_ns,end_ns",
                        option, name, (long long)lineno);
        else if (r.end < r.start)
            e = fl_fail(FL_EINVAL, "%s %s: line %lld: end_ns %lld is before start_ns %lld", option, name,
                        (long long)lineno, (long long)r.end, (long long)r.start);
        else t[rows++] = r;
    }
    if (!e && !rows) e = fl_fail(FL_EINVAL, "%s %s: no rows (header '" HEADER "', then one row per work item)", option, name);
    fl_cta_time *byitem = NULL;
    if (!e && !(byitem = malloc((size_t)rows * sizeof *byitem)))
        e = fl_fail(FL_ENOMEM, "%s %s: out of memory for %lld rows", option, name, (long long)rows);
    for (int64_t i = 0; !e && i < rows; i++) byitem[i].sm = -1; /* not yet given */
    for (int64_t i = 0; !e && i < rows; i++) {
        if (item[i] >= rows)
            e = fl_fail(FL_EINVAL, "%s %s: item %lld is out of range: %lld rows must number the items 0 .. %lld",
                        option, name, (long long)item[i], (long long)rows, (long long)(rows - 1));
        else if (byitem[item[i]].sm >= 0)
            e = fl_fail(FL_EINVAL, "%s %s: item %lld appears twice", option, name, (long long)item[i]);
        else byitem[item[i]] = t[i];
    }
    free(t);
    free(item);
    if (e) {
        free(byitem);
        return e;
    }
    *out = byitem, *n = rows;
    return FL_OK;
}
