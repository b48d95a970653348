/* status.c: the per-thread last-error message and checked arithmetic (see status.h). */
#include <flashlab/status.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char last_raw[1024], last_shown[1024];

fl_status fl_fail(fl_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_raw, sizeof last_raw, fmt, ap);
    va_end(ap);
    /* one line, whatever the input quoted in it holds: control characters become '?' */
    for (char *c = last_raw; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
    return code;
}

const char *fl_last_error_raw(void) { return last_raw; }

const char *fl_last_error(void) { return fl_error_render(last_raw, last_shown, sizeof last_shown, NULL, NULL); }

static int name_char(char c, int first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && ((c >= '0' && c <= '9') || c == '_'));
}

char *fl_error_render(const char *raw, char *out, size_t cap, fl_spell_fn spell, void *ctx)
{
    size_t n = 0;
    for (const char *p = raw ? raw : ""; *p && n + 1 < cap;) {
        if ((p[0] == '{' && p[1] == '{') || (p[0] == '}' && p[1] == '}')) {
            out[n++] = *p;
            p += 2;
            continue;
        }
        size_t len = 0;
        if (p[0] == '{' && name_char(p[1], 1))
            for (len = 2; name_char(p[len], 0); len++) {}
        if (!len || p[len] != '}' || len - 1 > 63) {
            out[n++] = *p++;
            continue;
        }
        char name[64], spelt[96];
        memcpy(name, p + 1, len - 1);
        name[len - 1] = 0;
        if (spell) spell(name, spelt, sizeof spelt, ctx);
        else snprintf(spelt, sizeof spelt, "%s", name);
        for (const char *s = spelt; *s && n + 1 < cap; s++) out[n++] = *s;
        p += len + 1;
    }
    out[n] = 0;
    return out;
}

const char *fl_strerror(fl_status code)
{
    switch (code) {
    case FL_OK: return "ok";
    case FL_EINVAL: return "invalid argument";
    case FL_ECAPACITY: return "SRAM capacity exceeded";
    case FL_EOVERFLOW: return "64-bit overflow";
    case FL_ENOMEM: return "out of memory";
    case FL_EIO: return "i/o error";
    case FL_EBOUNDS: return "tile out of bounds";
    case FL_ESTOPPED: return "stopped by the trace callback";
    }
    return "unknown status";
}

int fl_mul_ok(int64_t a, int64_t b, int64_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

int fl_add_ok(int64_t a, int64_t b, int64_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}

const char *fl_shown(const char *s)
{
    static _Thread_local char buf[4][2 * FL_SHOWN_MAX + 4];
    static _Thread_local int next;
    if (!s || (strlen(s) <= FL_SHOWN_MAX && !strpbrk(s, "{}"))) return s;
    char *b = buf[next];
    next = (next + 1) % 4;
    size_t n = 0, i = 0;
    for (; s[i] && i < FL_SHOWN_MAX; i++) {
        if (s[i] == '{' || s[i] == '}') b[n++] = s[i];
        b[n++] = s[i];
    }
    memcpy(b + n, s[i] ? "..." : "", s[i] ? 4 : 1);
    return b;
}
