/* status.c: the per-thread last-error message and checked arithmetic (see status.h). */
#include <flashlab/status.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char last_error[1024];

fl_status fl_fail(fl_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    /* one line, whatever the input quoted in it holds: control characters become '?' */
    for (char *c = last_error; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
    return code;
}

const char *fl_last_error(void) { return last_error; }

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
    static _Thread_local char buf[4][FL_SHOWN_MAX + 4];
    static _Thread_local int next;
    if (!s || strlen(s) <= FL_SHOWN_MAX) return s;
    char *b = buf[next];
    next = (next + 1) % 4;
    memcpy(b, s, FL_SHOWN_MAX);
    memcpy(b + FL_SHOWN_MAX, "...", 4);
    return b;
}
