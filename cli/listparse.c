/* listparse.c: comma lists and ranges of integers (see listparse.h). */
#define _POSIX_C_SOURCE 200809L
#include "listparse.h"

#include <stdlib.h>
#include <string.h>

#include <flashlab/schedule.h>

#include "args.h"
#include <flashlab/schedule.h>

static fl_status push(const char *opt, fl_list *l, int64_t v)
{
    for (int i = 0; i < l->n; i++)
        if (l->v[i] == v)
            return fl_fail(FL_EINVAL, "%s: the value %lld is listed twice", opt, (long long)v);
    if (l->n == FL_LIST_MAX)
        return fl_fail(FL_EINVAL, "%s: more than %d values", opt, FL_LIST_MAX);
    if (!l->v && !(l->v = malloc(FL_LIST_MAX * sizeof *l->v)))
        return fl_fail(FL_ENOMEM, "%s: out of memory", opt);
    l->v[l->n++] = v;
    return FL_OK;
}

/* One item: a value or a range A:B:xK / A:B:+K. */
static fl_status item(const char *opt, char *it, int64_t min, int64_t max, fl_list *l)
{
    if (!*it) return fl_fail(FL_EINVAL, "%s: empty item in the list (write e.g. 512,1024 or 64:65536:x2)", opt);
    char *c1 = strchr(it, ':');
    if (!c1) {
        int64_t v;
        FL_TRY(fl_parse_i64(opt, it, min, max, &v));
        return push(opt, l, v);
    }
    *c1 = 0;
    char *bs = c1 + 1, *c2 = strchr(bs, ':');
    if (!c2 || !*it || bs == c2 || !c2[1])
        return fl_fail(FL_EINVAL, "%s: a range needs a start, an end and a step: A:B:xK or A:B:+K", opt);
    *c2 = 0;
    char *st = c2 + 1;
    if (strchr(st, ':')) return fl_fail(FL_EINVAL, "%s: a range has three parts A:B:xK", opt);
    int64_t a, b, k;
    FL_TRY(fl_parse_i64(opt, it, min, max, &a));
    FL_TRY(fl_parse_i64(opt, bs, min, max, &b));
    if (a > b)
        return fl_fail(FL_EINVAL, "%s: range %lld:%lld is reversed (start must be <= end)", opt,
                       (long long)a, (long long)b);
    const int geometric = st[0] == 'x';
    if (!geometric && st[0] != '+')
        return fl_fail(FL_EINVAL, "%s: range step '%s' must be xK (geometric) or +K (arithmetic)", opt, st);
    if (fl_parse_i64(opt, st + 1, geometric ? 2 : 1, INT64_MAX, &k))
        return fl_fail(FL_EINVAL, "%s: range step '%s' never advances or is not an integer (%s)", opt,
                       st, geometric ? "xK needs K >= 2" : "+K needs K >= 1");
    if (geometric && a < 1)
        return fl_fail(FL_EINVAL, "%s: a geometric range must start at 1 or more", opt);
    for (int64_t v = a;;) {
        FL_TRY(push(opt, l, v));
        int64_t next;
        if (geometric ? !fl_mul_ok(v, k, &next) : (v >= 0 ? !fl_add_ok(v, k, &next) : (next = v + k, 0)))
            break;
        if (next > b) break;
        v = next;
    }
    return FL_OK;
}

fl_status fl_list_parse(const char *opt, const char *s, int64_t min, int64_t max, fl_list *out)
{
    out->v = NULL;
    out->n = 0;
    if (!s || !*s) return fl_fail(FL_EINVAL, "%s: needs a value or a list (e.g. 512,1024 or 64:65536:x2)", opt);
    char *buf = strdup(s);
    if (!buf) return fl_fail(FL_ENOMEM, "%s: out of memory", opt);
    fl_status st = FL_OK;
    char *p = buf;
    for (;;) {
        char *comma = strchr(p, ',');
        if (comma) *comma = 0;
        if ((st = item(opt, p, min, max, out))) break;
        if (!comma) break;
        p = comma + 1;
    }
    free(buf);
    if (st) fl_list_free(out);
    return st;
}

void fl_list_free(fl_list *l)
{
    if (!l) return;
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

fl_status fl_list_parse_algos(const char *s, int *algos, int *n)
{
    *n = 0;
    if (s && strcmp(s, "all") == 0) { /* the registry's "all" of a problem without groups */
        fl_algo all[FL_ALGO_MAX];
        *n = fl_algos_all(NULL, all);
        for (int k = 0; k < *n; k++) algos[k] = (int)all[k];
        return FL_OK;
    }
    if (!s) s = "";
    for (const char *item = s;; item++) {
        const size_t len = strcspn(item, ",");
        char tok[32];
        fl_algo a;
        if (len == 0)
            return fl_fail(FL_EINVAL, "--algo: '%s' has an empty item (a comma list such as flash1,flash2)", fl_shown(s));
        if (len >= sizeof tok)
            return fl_fail(FL_EINVAL, "--algo: unknown schedule '%.*s%s' (choose %s)",
                           (int)(len > FL_SHOWN_MAX ? FL_SHOWN_MAX : len), item, len > FL_SHOWN_MAX ? "..." : "",
                           fl_algo_choices());
        memcpy(tok, item, len);
        tok[len] = 0;
        FL_TRY(fl_algo_parse(tok, &a));
        for (int k = 0; k < *n; k++)
            if (algos[k] == (int)a) return fl_fail(FL_EINVAL, "--algo: '%s' is listed twice", tok);
        algos[(*n)++] = (int)a;
        item += len;
        if (!*item) break;
    }
    return FL_OK;
}
