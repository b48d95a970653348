/* fuzz_list.c: the value-list parsers of the CLI (cli/listparse.h: fl_list_parse for
 * sweep lists and ranges, fl_list_parse_algos; cli/args.h: fl_parse_i64_list for --window
 * and --cu-seqlens-*) against an independent implementation of their documented grammar.
 *
 * Input: byte 0 picks the parser, byte 1 the bounds [min, max] from a small table, the rest is
 * the value text.  Oracles: the parser accepts exactly what the grammar below accepts, with the
 * same values in the same order; an error is FL_EINVAL with one line naming the option.
 */
#include <stdint.h>
#include <string.h>

#include "args.h"
#include "fuzz_util.h"
#include "listparse.h"
#include "problem.h"

#define OPT "--X"

static const int64_t bounds[][2] = {
    {1, INT64_MAX / 4}, {0, INT64_MAX / 4}, {-1, INT64_MAX / 4}, {1, 100}, {0, INT64_MAX}, {5, 5},
};

/* One integer item as fl_parse_i64 defines it (sign, digits, nothing else) in [min, max]. */
static int int_item(const char *s, size_t len, int64_t min, int64_t max, int64_t *v)
{
    char buf[FZ_MAX_INPUT + 1];
    __int128 x;
    memcpy(buf, s, len);
    buf[len] = 0;
    if (!fz_int_ok(buf, min, max, &x)) return 0;
    *v = (int64_t)x;
    return 1;
}

/* docs: listparse.h.  Returns 1 and the values, or 0 for an error. */
static int oracle_list(const char *s, int64_t min, int64_t max, int64_t *out, int *n)
{
    *n = 0;
    if (!*s) return 0;
    for (const char *p = s;;) {
        size_t len = strcspn(p, ",");
        const char *c1 = memchr(p, ':', len);
        if (!len) return 0;
        if (!c1) {
            int64_t v;
            if (!int_item(p, len, min, max, &v)) return 0;
            for (int i = 0; i < *n; i++)
                if (out[i] == v) return 0;
            if (*n == FL_LIST_MAX) return 0;
            out[(*n)++] = v;
        } else {
            const char *c2 = memchr(c1 + 1, ':', (size_t)(p + len - c1 - 1));
            if (!c2 || memchr(c2 + 1, ':', (size_t)(p + len - c2 - 1))) return 0;
            int64_t a, b, k;
            const char *st = c2 + 1;
            const size_t stlen = (size_t)(p + len - st);
            if (!int_item(p, (size_t)(c1 - p), min, max, &a) ||
                !int_item(c1 + 1, (size_t)(c2 - c1 - 1), min, max, &b) || a > b || stlen < 2)
                return 0;
            const int geo = st[0] == 'x';
            if (!geo && st[0] != '+') return 0;
            if (!int_item(st + 1, stlen - 1, geo ? 2 : 1, INT64_MAX, &k)) return 0;
            if (geo && a < 1) return 0;
            for (__int128 v = a; v <= b; v = geo ? v * k : v + k) {
                for (int i = 0; i < *n; i++)
                    if (out[i] == (int64_t)v) return 0;
                if (*n == FL_LIST_MAX) return 0;
                out[(*n)++] = (int64_t)v;
            }
        }
        if (!p[len]) return 1;
        p += len + 1;
    }
}

/* docs: args.h fl_parse_i64_list: integers, each at most 63 characters, at most cap. */
static int oracle_i64_list(const char *s, int64_t min, int64_t max, int64_t cap, int64_t *out, int64_t *n)
{
    *n = 0;
    if (!*s) return 0;
    for (const char *p = s;;) {
        size_t len = strcspn(p, ",");
        if (!len || len >= 64 || *n >= cap || !int_item(p, len, min, max, &out[*n])) return 0;
        (*n)++;
        if (!p[len]) return 1;
        p += len + 1;
    }
}

static void check_error(fl_status s)
{
    const char *msg = fl_last_error();
    FZ_CHECK(s == FL_EINVAL, "status %d: %s", s, msg);
    FZ_CHECK(!strncmp(msg, "--", 2) && !strchr(msg, '\n'), "message: %s", msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char text[FZ_MAX_INPUT + 1];
    static int64_t want[FL_LIST_MAX], got[64];
    if (size < 2 || size - 2 > FZ_MAX_INPUT) return 0;
    const int which = data[0] % 3;
    const int64_t min = bounds[data[1] % 6][0], max = bounds[data[1] % 6][1];
    memcpy(text, data + 2, size - 2);
    text[size - 2] = 0;

    if (which == 0) {
        fl_list l;
        int n;
        const int ok = oracle_list(text, min, max, want, &n);
        fl_status s = fl_list_parse(OPT, text, min, max, &l);
        FZ_CHECK((s == FL_OK) == ok, "fl_list_parse('%.100s') = %d, the grammar says %s: %s", text, s,
                 ok ? "valid" : "invalid", fl_last_error());
        if (s) {
            check_error(s);
            FZ_CHECK(l.v == NULL && l.n == 0, "an error left a list");
            return 0;
        }
        FZ_CHECK(l.n == n, "'%.100s': %d values, want %d", text, l.n, n);
        for (int i = 0; i < n; i++) FZ_CHECK(l.v[i] == want[i], "value %d", i);
        fl_list_free(&l);
    } else if (which == 1) {
        int64_t n, wn;
        const int64_t cap = 1 + data[1] % 8;
        const int ok = oracle_i64_list(text, min, max, cap, want, &wn);
        fl_status s = fl_parse_i64_list(OPT, text, min, max, got, cap, &n);
        FZ_CHECK((s == FL_OK) == ok, "fl_parse_i64_list('%.100s') = %d, the grammar says %s: %s", text,
                 s, ok ? "valid" : "invalid", fl_last_error());
        if (s) return check_error(s), 0;
        FZ_CHECK(n == wn, "count");
        for (int64_t i = 0; i < n; i++) FZ_CHECK(got[i] == want[i], "value %lld", (long long)i);
    } else {
        int algos[FL_ALGO_MAX + 1], n;
        fl_status s = fl_list_parse_algos(text, algos, &n);
        if (s) return check_error(s), 0;
        FZ_CHECK(n >= 1 && n <= fl_schedule_count(), "%d schedules", n);
        for (int i = 0; i < n; i++) {
            FZ_CHECK(fl_algo_name((fl_algo)algos[i]) != NULL, "schedule %d", algos[i]);
            for (int j = 0; j < i; j++) FZ_CHECK(algos[i] != algos[j], "repeat");
        }
    }
    return 0;
}
