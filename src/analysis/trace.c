/* trace.c: tile events as CSV or JSON lines (see trace.h). */
#include <flashlab/trace.h>

#include <errno.h>
#include <inttypes.h>
#include <string.h>

static const char *const kind_names[] = {"load", "store", "alloc", "free"};

fl_status fl_trace_format_parse(const char *s, fl_trace_format *out)
{
    if (strcmp(s, "csv") == 0) *out = FL_TRACE_CSV;
    else if (strcmp(s, "jsonl") == 0) *out = FL_TRACE_JSONL; /* not "json": the lines are no one document */
    else return fl_fail(FL_EINVAL, "{format}: unknown trace format '%s' (choose csv or jsonl)", s);
    return FL_OK;
}

void fl_trace_init(fl_trace_writer *w, FILE *out, fl_trace_format fmt)
{
    memset(w, 0, sizeof *w);
    w->out = out;
    w->fmt = fmt;
}

void fl_trace_begin_run(fl_trace_writer *w, const char *label, int64_t M)
{
    snprintf(w->label, sizeof w->label, "%s", label ? label : "run");
    w->M = M;
    w->step = 0;
    w->base_reads = w->base_writes = 0;
    w->nbufs = w->ntensors = 0;
}

/* The slot called name in tab (adding it, zeroed, when absent and there is room); NULL if full. */
static fl_trace_slot *slot(fl_trace_slot *tab, int *n, int cap, const char *name)
{
    for (int i = 0; i < *n; i++)
        if (strcmp(tab[i].name, name) == 0) return &tab[i];
    if (*n == cap) return NULL;
    fl_trace_slot *s = &tab[(*n)++];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    return s;
}

int fl_trace_event(const fl_event *ev, void *ctx)
{
    fl_trace_writer *w = ctx;
    const int tile = ev->kind == FL_EV_LOAD || ev->kind == FL_EV_STORE;
    int64_t tr = -1, tc = -1, treads = 0, twrites = 0;
    fl_trace_slot *b = slot(w->bufs, &w->nbufs, FL_MAX_BUFS, ev->buf);
    if (ev->kind == FL_EV_ALLOC && b) {
        b->a = ev->nr;
        b->b = ev->nc;
    }
    if (tile) {
        /* the tile's index in units of the buffer's allocated shape (its nr x nc if unknown) */
        const int64_t rows = (b && b->a > 0) ? b->a : ev->nr, cols = (b && b->b > 0) ? b->b : ev->nc;
        tr = ev->r0 / rows;
        tc = ev->c0 / cols;
        fl_trace_slot *t = slot(w->tensors, &w->ntensors, FL_MAX_TENSORS, ev->tensor);
        if (t) {
            if (ev->kind == FL_EV_LOAD) t->a += ev->nr * ev->nc; /* rule R1 */
            else t->b += ev->nr * ev->nc;                        /* rule R2 */
            treads = t->a;
            twrites = t->b;
        }
    }
    if (w->step++ == 0) { /* totals before this run's first visible event */
        w->base_reads = ev->reads - (ev->kind == FL_EV_LOAD ? ev->nr * ev->nc : 0);
        w->base_writes = ev->writes - (ev->kind == FL_EV_STORE ? ev->nr * ev->nc : 0);
    }
    const int64_t reads = ev->reads - w->base_reads, writes = ev->writes - w->base_writes;
    if (w->fmt == FL_TRACE_CSV) {
        if (!w->header_done) {
            fputs("algo,step,event,tensor,buf,r0,c0,nr,nc,tile_r,tile_c,sram_used,sram_capacity,"
                  "tensor_reads,tensor_writes,reads,writes\n", w->out);
            w->header_done = 1;
        }
        fprintf(w->out, "%s,%" PRId64 ",%s,%s,%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
                        ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
                        ",%" PRId64 ",%" PRId64 "\n",
                w->label, w->step, kind_names[ev->kind], tile ? ev->tensor : "-", ev->buf, ev->r0,
                ev->c0, ev->nr, ev->nc, tr, tc, ev->sram_used, w->M, treads, twrites, reads,
                writes);
    } else {
        fprintf(w->out, "{\"algo\": \"%s\", \"step\": %" PRId64 ", \"event\": \"%s\", \"tensor\": ",
                w->label, w->step, kind_names[ev->kind]);
        if (tile) fprintf(w->out, "\"%s\"", ev->tensor);
        else fputs("null", w->out);
        fprintf(w->out, ", \"buf\": \"%s\", \"r0\": %" PRId64 ", \"c0\": %" PRId64 ", \"nr\": %" PRId64
                        ", \"nc\": %" PRId64 ", \"tile_r\": %" PRId64 ", \"tile_c\": %" PRId64
                        ", \"sram_used\": %" PRId64 ", \"sram_capacity\": %" PRId64
                        ", \"tensor_reads\": %" PRId64 ", \"tensor_writes\": %" PRId64
                        ", \"reads\": %" PRId64 ", \"writes\": %" PRId64 "}\n",
                ev->buf, ev->r0, ev->c0, ev->nr, ev->nc, tr, tc, ev->sram_used, w->M, treads,
                twrites, reads, writes);
    }
    return ferror(w->out) != 0;
}

fl_status fl_trace_finish(fl_trace_writer *w)
{
    int e = ferror(w->out) ? EIO : 0;
    errno = 0;
    if (fflush(w->out) != 0) e = errno ? errno : EIO; /* a failed write fails again: its reason */
    if (e) return fl_fail(FL_EIO, "trace: writing the trace failed (%s)", strerror(e));
    return FL_OK;
}
