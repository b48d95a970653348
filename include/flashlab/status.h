/* status.h: status codes, the last error message, and checked 64-bit arithmetic.
 *
 * Every fallible function in libflashlab returns an fl_status.  FL_OK is 0; any other value
 * is an error whose one-line explanation (naming the input and the rule it broke; control
 * characters of quoted input are shown as '?', so it is always one line) can be read
 * with fl_last_error() on the same thread until the next error replaces it.
 *
 * The library names quantities, never a front end's flags: a message refers to an input as a
 * token {name} -- the quantity's name (N, Nk, d, M, Br, kv_heads, cu_seqlens_q, page_size, ...) in
 * braces.  fl_last_error() shows a token as the bare name ("M: SRAM capacity must be ...");
 * a front end renders the raw message (fl_last_error_raw) with its own spelling of each name
 * (fl_error_render): the CLI as its flag ("--M: ..."), the Python binding as its keyword.  "{{"
 * and "}}" stand for literal braces (fl_shown doubles the braces of the values it quotes).
 */
#ifndef FL_STATUS_H
#define FL_STATUS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    FL_OK = 0,
    FL_EINVAL = 1,    /* an argument breaks a documented rule */
    FL_ECAPACITY = 2, /* a schedule asked for more SRAM than M */
    FL_EOVERFLOW = 3, /* a size or count does not fit in 64-bit arithmetic */
    FL_ENOMEM = 4,    /* the host could not allocate memory */
    FL_EIO = 5,       /* a file could not be written */
    FL_EBOUNDS = 6,   /* a tile lies outside its tensor or buffer (a schedule bug) */
    FL_ESTOPPED = 7   /* a trace callback asked the run to stop */
} fl_status;

/* Records msg (printf-style) as this thread's last error and returns code.  Use through
 * fl_fail(code, fmt, ...) so every error site reads as one line. */
fl_status fl_fail(fl_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The message of this thread's most recent error ("" if none), each {name} token shown as the
 * bare name.  Valid until the next error (or the next call on this thread). */
const char *fl_last_error(void);

/* The same message raw: tokens {name} and doubled braces as the library wrote them. */
const char *fl_last_error_raw(void);

/* How a front end spells the quantity `name`: writes it into buf (cap bytes, NUL-terminated). */
typedef void (*fl_spell_fn)(const char *name, char *buf, size_t cap, void *ctx);

/* Renders a raw message into out (cap >= 1 bytes, always NUL-terminated, cut if longer): each
 * token {name} (name: a letter, then letters, digits, '_') through spell (NULL: the bare name),
 * "{{" as "{", "}}" as "}", anything else as it is.  Returns out. */
char *fl_error_render(const char *raw, char *out, size_t cap, fl_spell_fn spell, void *ctx);

/* A short name for a status code ("capacity exceeded", ...).  Never NULL. */
const char *fl_strerror(fl_status code);

/* Checked arithmetic on non-negative int64 values: *out = a*b (or a+b), FL_EOVERFLOW if the
 * exact result does not fit.  Sizes in flashlab are int64_t elements; every count that could
 * overflow goes through these. */
int fl_mul_ok(int64_t a, int64_t b, int64_t *out);
int fl_add_ok(int64_t a, int64_t b, int64_t *out);

/* ceil(a / b) for a >= 0, b > 0; exact for every such pair (no a + b - 1 that could overflow). */
static inline int64_t fl_cdiv(int64_t a, int64_t b) { return a / b + (a % b != 0); }
static inline int64_t fl_min64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t fl_max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* s itself when it is at most FL_SHOWN_MAX characters long and holds no brace, else its first
 * FL_SHOWN_MAX characters followed by "..." and with every brace doubled (so a quoted value is
 * never read as a token), in one of four rotating per-thread buffers (so a message may quote up
 * to four values): what a message quotes of a value the user typed, so that the message stays
 * short and its rule is never cut off. */
#define FL_SHOWN_MAX 200
const char *fl_shown(const char *s);

/* Propagate a non-OK status from a call. */
#define FL_TRY(expr)                      \
    do {                                  \
        fl_status fl_try_s_ = (expr);     \
        if (fl_try_s_ != FL_OK) return fl_try_s_; \
    } while (0)

#ifdef __cplusplus
}
#endif

#endif
