/* fuzz_util.h: helpers the libFuzzer harnesses share (header-only, static).
 *
 * A harness input is text: arguments separated by newlines (so corpus files read as command
 * lines, one argument a line).  FZ_CHECK aborts with a message when an oracle is violated, which
 * libFuzzer records as a crash and saves the input.
 */
#ifndef FL_FUZZ_UTIL_H
#define FL_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"

#define FZ_MAX_ARGS 32
#define FZ_MAX_INPUT 4096

#define FZ_CHECK(cond, ...)                                                  \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "FUZZ ORACLE FAILED %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                    \
            fputc('\n', stderr);                                             \
            abort();                                                         \
        }                                                                    \
    } while (0)

/* Splits data into at most FZ_MAX_ARGS newline-separated arguments, copied into buf (at least
 * size + 1 bytes).  NUL bytes end an argument early (C strings cannot hold them).  Returns the
 * number of arguments. */
static inline int fz_split(const uint8_t *data, size_t size, char *buf, char **argv)
{
    int n = 0;
    memcpy(buf, data, size);
    buf[size] = 0;
    char *p = buf;
    while (n < FZ_MAX_ARGS) {
        argv[n++] = p;
        char *nl = memchr(p, '\n', (size_t)(buf + size - p));
        if (!nl) break;
        *nl = 0;
        p = nl + 1;
    }
    return n;
}

/* Canonical check of a decimal integer: optional sign, at least one digit, digits only; value in
 * [min, max] computed exactly (saturating beyond 2^100).  The harnesses' independent oracle. */
static inline int fz_int_ok(const char *s, __int128 min, __int128 max, __int128 *val)
{
    const char *q = s;
    int neg = 0;
    if (*q == '+' || *q == '-') neg = *q++ == '-';
    if (!*q) return 0;
    __int128 v = 0, cap = (__int128)1 << 100;
    for (; *q; q++) {
        if (*q < '0' || *q > '9') return 0;
        if (v < cap) v = v * 10 + (*q - '0');
    }
    if (neg) v = -v;
    if (val) *val = v;
    return v >= min && v <= max;
}

/* A reader over the fuzzer's input bytes: fz_take returns the next k bytes as a little-endian
 * integer, reading 0 once the input runs out. */
typedef struct {
    const uint8_t *p;
    size_t n;
} fz_bytes;

static inline uint64_t fz_take(fz_bytes *b, int k)
{
    uint64_t v = 0;
    for (int i = 0; i < k; i++) {
        v |= (uint64_t)(b->n ? *b->p : 0) << (8 * i);
        if (b->n) b->p++, b->n--;
    }
    return v;
}

/* The library's error contract for a refused problem: a bad-input status and one line that
 * starts with the option it names. */
static inline void fz_check_message(fl_status s)
{
    const char *msg = fl_last_error();
    FZ_CHECK(s == FL_EINVAL || s == FL_ECAPACITY || s == FL_EOVERFLOW, "status %d: %s", s, msg);
    FZ_CHECK(!strncmp(msg, "--", 2), "message does not start with an option: %s", msg);
    FZ_CHECK(!strchr(msg, '\n'), "message is not one line: %s", msg);
}

#endif
