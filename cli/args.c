/* args.c: strict value parsing and an argv walker (see args.h). */
#include "args.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

fl_status fl_parse_i64(const char *opt, const char *s, int64_t min, int64_t max, int64_t *out)
{
    if (!s || !*s) return fl_fail(FL_EINVAL, "%s: needs an integer value", opt);
    const char *q = s;
    if (*q == '-' || *q == '+') q++;
    if (!isdigit((unsigned char)*q))
        return fl_fail(FL_EINVAL, "%s: '%s' is not an integer", opt, fl_shown(s));
    for (const char *c = q; *c; c++)
        if (!isdigit((unsigned char)*c))
            return fl_fail(FL_EINVAL, "%s: '%s' is not an integer (whole numbers only, no '%c')", opt,
                           fl_shown(s), *c);
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno == ERANGE || v < min || v > max)
        return fl_fail(FL_EINVAL, "%s: %s is out of range (must be between %lld and %lld)", opt, fl_shown(s),
                       (long long)min, (long long)max);
    *out = v;
    return FL_OK;
}

fl_status fl_parse_limit(const char *opt, const char *s, int64_t min, int64_t max, int64_t *out)
{
    const char *e = s ? strpbrk(s, "eE") : NULL;
    if (!e) return fl_parse_i64(opt, s, min, max, out);
    /* D[.F]eX, exactly: the integer DF times 10^(X - digits of F), never through a double */
    const char *c = s;
    const int neg = *c == '-';
    if (*c == '-' || *c == '+') c++;
    unsigned long long m = 0; /* the digits of D and F */
    int int_digits = 0, frac = 0, dot = 0, over = 0, bad = 0, exp = 0, exp_digits = 0;
    for (; c < e && !bad; c++) {
        if (*c == '.' && !dot) {
            dot = 1;
            continue;
        }
        if (!isdigit((unsigned char)*c)) {
            bad = 1;
            break;
        }
        if (dot) frac++;
        else int_digits++;
        if (m > (ULLONG_MAX - 9) / 10) over = 1;
        else m = m * 10 + (unsigned)(*c - '0');
    }
    for (c = e + 1; *c && !bad; c++) {
        if (!isdigit((unsigned char)*c)) {
            bad = 1;
        } else {
            exp_digits++;
            if (exp < 100000) exp = exp * 10 + (*c - '0'); /* past that it overflows anyway */
        }
    }
    if (bad || !int_digits || (dot && !frac) || !exp_digits)
        return fl_fail(FL_EINVAL, "%s: '%s' is not an integer (digits, or a whole number in the form 1e10 or "
                                  "2.5e9)", opt, fl_shown(s));
    while (frac > 0 && !over && m % 10 == 0) m /= 10, frac--; /* 2.50e1 is 25: a whole number */
    if (frac > exp && m != 0 && !over) return fl_fail(FL_EINVAL, "%s: '%s' is not a whole number", opt, fl_shown(s));
    for (int k = frac; k < exp && m && !over; k++) {
        if (m > ULLONG_MAX / 10) over = 1;
        else m *= 10;
    }
    const int64_t v = neg ? -(int64_t)m : (int64_t)m;
    if (over || m > (unsigned long long)INT64_MAX || v < min || v > max)
        return fl_fail(FL_EINVAL, "%s: %s is out of range (must be between %lld and %lld)", opt, fl_shown(s),
                       (long long)min, (long long)max);
    *out = v;
    return FL_OK;
}

fl_status fl_parse_u64(const char *opt, const char *s, uint64_t *out)
{
    if (!s || !*s) return fl_fail(FL_EINVAL, "%s: needs a value", opt);
    for (const char *c = s; *c; c++)
        if (!isdigit((unsigned char)*c))
            return fl_fail(FL_EINVAL, "%s: '%s' is not a non-negative integer", opt, fl_shown(s));
    errno = 0;
    unsigned long long v = strtoull(s, NULL, 10);
    if (errno == ERANGE) return fl_fail(FL_EINVAL, "%s: %s does not fit in 64 bits", opt, fl_shown(s));
    *out = v;
    return FL_OK;
}

fl_status fl_parse_table_or_csv(const char *s, int *csv)
{
    if (strcmp(s, "csv") == 0) *csv = 1;
    else if (strcmp(s, "table") == 0) *csv = 0;
    else return fl_fail(FL_EINVAL, "--format: unknown format '%s' (choose table or csv)", s);
    return FL_OK;
}

void fl_args_init(fl_args *a, int argc, char **argv)
{
    a->argc = argc;
    a->argv = argv;
    a->i = 0;
}

int fl_args_next(fl_args *a, const char **name, const char **inline_value)
{
    if (a->i >= a->argc) return 0;
    const char *arg = a->argv[a->i++];
    if (strncmp(arg, "--", 2) != 0 || arg[2] == 0 || arg[2] == '=') { /* "--=x" names no option */
        fl_fail(FL_EINVAL, "'%s': expected an option such as --N 1024 (see --help)", fl_shown(arg));
        return -1;
    }
    const char *eq = strchr(arg, '=');
    const size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
    *inline_value = eq ? eq + 1 : NULL;
    *name = arg;
    if (eq || n >= sizeof a->buf) { /* a copy; a name too long for it is shown cut, with "..." */
        if (n < sizeof a->buf) {
            memcpy(a->buf, arg, n);
            a->buf[n] = 0;
        } else {
            memcpy(a->buf, arg, sizeof a->buf - 4);
            memcpy(a->buf + sizeof a->buf - 4, "...", 4);
        }
        *name = a->buf;
    }
    return 1;
}

int fl_args_next_option(fl_args *a, const char **name, const char **inline_value)
{
    const int k = fl_args_next(a, name, inline_value);
    if (k != 1 || strcmp(*name, "--help") != 0) return k;
    return fl_args_flag(*name, *inline_value) ? -1 : FL_ARGS_HELP;
}

int fl_args_is_flag(const char *name, const char *inline_value, const char *flag, fl_status *s)
{
    if (strcmp(name, flag) != 0) return 0;
    *s = fl_args_flag(name, inline_value);
    return 1;
}

fl_status fl_args_value(fl_args *a, const char *name, const char *inline_value, const char **out)
{
    if (inline_value) {
        *out = inline_value;
        return FL_OK;
    }
    if (a->i >= a->argc) return fl_fail(FL_EINVAL, "%s: needs a value", name);
    *out = a->argv[a->i++];
    return FL_OK;
}

fl_status fl_args_flag(const char *name, const char *inline_value)
{
    if (inline_value)
        return fl_fail(FL_EINVAL, "%s: is a flag and takes no value (got '=%s')", name, fl_shown(inline_value));
    return FL_OK;
}

int fl_exit_code(fl_status s)
{
    return (s == FL_EINVAL || s == FL_ECAPACITY || s == FL_EOVERFLOW) ? 2 : 1;
}

fl_status fl_parse_i64_list(const char *opt, const char *s, int64_t min, int64_t max, int64_t *out,
                            int64_t cap, int64_t *n)
{
    char item[64];
    *n = 0;
    if (!s || !*s) return fl_fail(FL_EINVAL, "%s: needs a comma-separated list of integers", opt);
    for (const char *p = s;;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == 0 || len >= sizeof item)
            return fl_fail(FL_EINVAL, "%s: '%s' is not a comma-separated list of integers", opt, fl_shown(s));
        if (*n >= cap) return fl_fail(FL_EINVAL, "%s: at most %lld entries", opt, (long long)cap);
        memcpy(item, p, len);
        item[len] = 0;
        FL_TRY(fl_parse_i64(opt, item, min, max, &out[*n]));
        (*n)++;
        if (!e) break;
        p = e + 1;
    }
    return FL_OK;
}
