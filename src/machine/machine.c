/* machine.c: the two-level machine (see machine.h; rules in docs/model.md §1). */
#include <flashlab/machine.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fl_machine {
    int64_t M;
    fl_mode mode;
    const char *schedule;
    fl_tensor tensors[FL_MAX_TENSORS];
    int ntensors;
    fl_buf bufs[FL_MAX_BUFS];
    int64_t sram_used, sram_peak;
    int64_t events;
    int64_t reads, writes; /* running totals over tensors (= the sums of their counters) */
    fl_trace_fn trace;
    void *trace_ctx;
    int stopped; /* the trace callback asked to stop: every further move is refused */
};

fl_machine *fl_machine_alloc(int64_t M, fl_mode mode, const char *schedule)
{
    if (M <= 0) {
        fl_fail(FL_EINVAL, "{M}: SRAM capacity must be a positive number of elements (got %lld)",
                (long long)M);
        return NULL;
    }
    fl_machine *m = calloc(1, sizeof *m);
    if (!m) {
        fl_fail(FL_ENOMEM, "out of memory allocating the machine");
        return NULL;
    }
    m->M = M;
    m->mode = mode;
    m->schedule = schedule ? schedule : "schedule";
    return m;
}

void fl_machine_free(fl_machine *m)
{
    if (!m) return;
    for (int i = 0; i < m->ntensors; i++) free(m->tensors[i].data);
    for (int i = 0; i < FL_MAX_BUFS; i++) free(m->bufs[i].x);
    free(m);
}

int fl_computes(const fl_machine *m) { return m->mode == FL_COMPUTE; }

void fl_machine_set_trace(fl_machine *m, fl_trace_fn fn, void *ctx)
{
    m->trace = fn;
    m->trace_ctx = ctx;
}

static inline void emit(fl_machine *m, fl_event_kind kind, const char *tensor, const fl_buf *b,
                 int64_t r0, int64_t c0, int64_t nr, int64_t nc)
{
    fl_event ev = {kind, tensor, b->name, r0, c0, nr, nc, m->sram_used,
                   m->reads, m->writes};
    if (m->trace(&ev, m->trace_ctx)) m->stopped = 1;
}

#if defined(__GNUC__)
__attribute__((noinline, cold))
#endif
static fl_status overflow(const fl_machine *m, const fl_tensor *T)
{
    return fl_fail(FL_EOVERFLOW, "%s: the element counts of tensor %s would overflow 64 bits", m->schedule, T->name);
}

#if defined(__GNUC__)
__attribute__((noinline, cold))
#endif
static fl_status stopped(const fl_machine *m)
{
    return fl_fail(FL_ESTOPPED, "%s: the trace callback stopped the run after %lld tile events",
                   m->schedule, (long long)m->events);
}

fl_status fl_tensor_add(fl_machine *m, const char *name, int64_t rows, int64_t cols,
                        int elem_bytes, int *id)
{
    int64_t n;
    if (m->ntensors == FL_MAX_TENSORS)
        return fl_fail(FL_EINVAL, "%s: more than %d HBM tensors", m->schedule, FL_MAX_TENSORS);
    if (rows <= 0 || cols <= 0 || !fl_mul_ok(rows, cols, &n))
        return fl_fail(FL_EINVAL, "%s: tensor %s must have a positive size that fits 64 bits",
                       m->schedule, name);
    fl_tensor *t = &m->tensors[m->ntensors];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->rows = rows;
    t->cols = cols;
    t->elem_bytes = elem_bytes;
    if (m->mode == FL_COMPUTE) {
        if ((uint64_t)n > SIZE_MAX / sizeof(double) || !(t->data = calloc((size_t)n, sizeof(double))))
            return fl_fail(FL_ENOMEM, "%s: out of memory for tensor %s (%lld x %lld)", m->schedule,
                           name, (long long)rows, (long long)cols);
    }
    *id = m->ntensors++;
    return FL_OK;
}

fl_tensor *fl_tensor_get(fl_machine *m, int id)
{
    return (id >= 0 && id < m->ntensors) ? &m->tensors[id] : NULL;
}

int fl_tensor_count(const fl_machine *m) { return m->ntensors; }

/* Appends "name RxC=n, ..." for every live buffer to out. */
static void describe_live(const fl_machine *m, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = 0;
    for (int i = 0; i < FL_MAX_BUFS && len < cap; i++) {
        const fl_buf *b = &m->bufs[i];
        if (!b->live) continue;
        int k = snprintf(out + len, cap - len, "%s%s %lldx%lld=%lld", len ? ", " : "", b->name,
                         (long long)b->rows, (long long)b->cols, (long long)(b->rows * b->cols));
        if (k < 0) break;
        len += (size_t)k;
    }
    if (!len) snprintf(out, cap, "none");
}

fl_status fl_sram_alloc(fl_machine *m, const char *name, int64_t rows, int64_t cols,
                        fl_buf **out)
{
    int64_t n, used;
    *out = NULL;
    if (m->stopped) return stopped(m);
    if (rows <= 0 || cols <= 0 || !fl_mul_ok(rows, cols, &n))
        return fl_fail(FL_EINVAL, "%s: SRAM buffer %s must have a positive size (%lld x %lld)",
                       m->schedule, name, (long long)rows, (long long)cols);
    if (!fl_add_ok(m->sram_used, n, &used) || used > m->M) {
        char live[512];
        describe_live(m, live, sizeof live);
        return fl_fail(FL_ECAPACITY,
                       "%s: SRAM capacity M = %lld elements exceeded allocating %s (%lldx%lld=%lld) "
                       "with %lld live [%s]",
                       m->schedule, (long long)m->M, name, (long long)rows, (long long)cols,
                       (long long)n, (long long)m->sram_used, live);
    }
    int slot = -1;
    for (int i = 0; i < FL_MAX_BUFS; i++)
        if (!m->bufs[i].live) { slot = i; break; }
    if (slot < 0)
        return fl_fail(FL_EINVAL, "%s: more than %d live SRAM buffers", m->schedule, FL_MAX_BUFS);
    fl_buf *b = &m->bufs[slot];
    free(b->x);
    memset(b, 0, sizeof *b);
    snprintf(b->name, sizeof b->name, "%s", name);
    b->rows = rows;
    b->cols = cols;
    if (m->mode == FL_COMPUTE) {
        if ((uint64_t)n > SIZE_MAX / sizeof(double) || !(b->x = calloc((size_t)n, sizeof(double))))
            return fl_fail(FL_ENOMEM, "%s: out of memory for SRAM buffer %s", m->schedule, name);
    }
    b->live = 1;
    m->sram_used = used;
    if (used > m->sram_peak) m->sram_peak = used;
    if (m->trace) emit(m, FL_EV_ALLOC, NULL, b, 0, 0, rows, cols);
    *out = b;
    return m->stopped ? stopped(m) : FL_OK;
}

void fl_sram_free(fl_machine *m, fl_buf *b)
{
    if (!b || !b->live) return;
    b->live = 0;
    m->sram_used -= b->rows * b->cols;
    if (m->trace) emit(m, FL_EV_FREE, NULL, b, 0, 0, b->rows, b->cols);
    free(b->x);
    b->x = NULL;
}

int fl_buf_owned(const fl_machine *m, const fl_buf *b)
{
    if (!m || !b) return 0;
    for (int i = 0; i < FL_MAX_BUFS; i++) /* equality only: b may point anywhere */
        if (b == &m->bufs[i]) return b->live;
    return 0;
}

/* Bounds of a tile move; a failure here is a bug in the schedule, not in the user's input.
 * tile_ok is the hot path of the count-only machine (one call per tile event): a few compares,
 * inlined; check_tile, out of line, builds the message only when a tile is bad. */
static inline int tile_ok(const fl_machine *m, const fl_buf *b, int t, int64_t r0, int64_t c0,
                          int64_t nr, int64_t nc)
{
    if ((unsigned)t >= (unsigned)m->ntensors || !b || !b->live) return 0;
    const fl_tensor *T = &m->tensors[t];
    return nr > 0 && nc > 0 && nr <= b->rows && nc <= b->cols && r0 >= 0 && c0 >= 0 &&
           r0 <= T->rows - nr && c0 <= T->cols - nc;
}

#if defined(__GNUC__)
__attribute__((noinline, cold))
#endif
static fl_status check_tile(const fl_machine *m, const fl_buf *b, int t, int64_t r0, int64_t c0,
                            int64_t nr, int64_t nc, const char *verb)
{
    if (t < 0 || t >= m->ntensors)
        return fl_fail(FL_EBOUNDS, "%s: %s of unknown tensor id %d", m->schedule, verb, t);
    const fl_tensor *T = &m->tensors[t];
    if (!b || !b->live)
        return fl_fail(FL_EBOUNDS, "%s: %s of %s through a buffer that is not live", m->schedule,
                       verb, T->name);
    return fl_fail(FL_EBOUNDS,
                   "%s: %s of tile %lldx%lld at (%lld,%lld) of %s (%lldx%lld) via %s (%lldx%lld) "
                   "is out of bounds",
                   m->schedule, verb, (long long)nr, (long long)nc, (long long)r0, (long long)c0,
                   T->name, (long long)T->rows, (long long)T->cols, b->name, (long long)b->rows,
                   (long long)b->cols);
}

/* What a load does beyond counting: copy values (FL_COMPUTE) and report (trace).  Out of line so
 * that the count-only path stays short. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void load_slow(fl_machine *m, fl_buf *b, fl_tensor *T, int64_t r0, int64_t c0, int64_t nr,
                      int64_t nc)
{
    if (m->mode == FL_COMPUTE)
        for (int64_t r = 0; r < nr; r++)
            memcpy(b->x + r * b->cols, T->data + (r0 + r) * T->cols + c0, (size_t)nc * sizeof(double));
    if (m->trace) emit(m, FL_EV_LOAD, T->name, b, r0, c0, nr, nc);
}

#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void store_slow(fl_machine *m, const fl_buf *b, fl_tensor *T, int64_t r0, int64_t c0,
                       int64_t nr, int64_t nc)
{
    if (m->mode == FL_COMPUTE)
        for (int64_t r = 0; r < nr; r++)
            memcpy(T->data + (r0 + r) * T->cols + c0, b->x + r * b->cols, (size_t)nc * sizeof(double));
    if (m->trace) emit(m, FL_EV_STORE, T->name, b, r0, c0, nr, nc);
}

fl_status fl_load(fl_machine *m, fl_buf *b, int t, int64_t r0, int64_t c0, int64_t nr,
                  int64_t nc)
{
    if (!tile_ok(m, b, t, r0, c0, nr, nc)) return check_tile(m, b, t, r0, c0, nr, nc, "load");
    if (m->stopped) return stopped(m);
    fl_tensor *T = &m->tensors[t];
    int64_t tr, mr; /* rule R1: one read per element moved HBM -> SRAM (nr * nc fits: a tile) */
    if (!fl_add_ok(T->reads, nr * nc, &tr) || !fl_add_ok(m->reads, nr * nc, &mr)) return overflow(m, T);
    T->reads = tr;
    m->reads = mr;
    m->events++;
    if (m->mode == FL_COMPUTE || m->trace) load_slow(m, b, T, r0, c0, nr, nc);
    return m->stopped ? stopped(m) : FL_OK;
}

fl_status fl_store(fl_machine *m, const fl_buf *b, int t, int64_t r0, int64_t c0, int64_t nr,
                   int64_t nc)
{
    if (!tile_ok(m, b, t, r0, c0, nr, nc)) return check_tile(m, b, t, r0, c0, nr, nc, "store");
    if (m->stopped) return stopped(m);
    fl_tensor *T = &m->tensors[t];
    int64_t tw, mw; /* rule R2: one write per element moved SRAM -> HBM */
    if (!fl_add_ok(T->writes, nr * nc, &tw) || !fl_add_ok(m->writes, nr * nc, &mw)) return overflow(m, T);
    T->writes = tw;
    m->writes = mw;
    m->events++;
    if (m->mode == FL_COMPUTE || m->trace) store_slow(m, b, T, r0, c0, nr, nc);
    return m->stopped ? stopped(m) : FL_OK;
}

/* The register a scalar moves through (rule R3b): a buffer of one element that takes no SRAM,
 * named for the trace. */
static const fl_buf reg_buf = {"reg", 1, 1, NULL, 1};

fl_status fl_load_scalar(fl_machine *m, int t, int64_t r, int64_t c, double *v)
{
    if (!tile_ok(m, &reg_buf, t, r, c, 1, 1)) return check_tile(m, &reg_buf, t, r, c, 1, 1, "load");
    if (m->stopped) return stopped(m);
    fl_tensor *T = &m->tensors[t];
    if (T->reads == INT64_MAX || m->reads == INT64_MAX) return overflow(m, T);
    T->reads++, m->reads++, m->events++;
    *v = m->mode == FL_COMPUTE ? T->data[r * T->cols + c] : 0.0;
    if (m->trace) emit(m, FL_EV_LOAD, T->name, &reg_buf, r, c, 1, 1);
    return m->stopped ? stopped(m) : FL_OK;
}

fl_status fl_store_scalar(fl_machine *m, double v, int t, int64_t r, int64_t c)
{
    if (!tile_ok(m, &reg_buf, t, r, c, 1, 1)) return check_tile(m, &reg_buf, t, r, c, 1, 1, "store");
    if (m->stopped) return stopped(m);
    fl_tensor *T = &m->tensors[t];
    if (T->writes == INT64_MAX || m->writes == INT64_MAX) return overflow(m, T);
    T->writes++, m->writes++, m->events++;
    if (m->mode == FL_COMPUTE) T->data[r * T->cols + c] = v;
    if (m->trace) emit(m, FL_EV_STORE, T->name, &reg_buf, r, c, 1, 1);
    return m->stopped ? stopped(m) : FL_OK;
}

/* The running totals kept by fl_load/fl_store: equal to the sums of the tensors' counters, which
 * only those two functions change; O(1), so a trace (which reports them on every event) stays
 * cheap. */
int64_t fl_machine_reads(const fl_machine *m) { return m->reads; }
int64_t fl_machine_writes(const fl_machine *m) { return m->writes; }

int64_t fl_machine_sram_peak(const fl_machine *m) { return m->sram_peak; }
void fl_machine_reset_peak(fl_machine *m) { m->sram_peak = m->sram_used; }
int64_t fl_machine_sram_used(const fl_machine *m) { return m->sram_used; }
int64_t fl_machine_events(const fl_machine *m) { return m->events; }
int64_t fl_machine_capacity(const fl_machine *m) { return m->M; }

int fl_tensor_find(fl_machine *m, const char *name)
{
    for (int t = 0; t < fl_tensor_count(m); t++)
        if (strcmp(fl_tensor_get(m, t)->name, name) == 0) return t;
    return -1;
}
