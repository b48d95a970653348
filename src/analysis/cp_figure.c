/* cp_figure.c: the data of figure (i), link traffic and compute time of context parallelism
 * against P and against N (docs/context_parallel.md §6). */
#include <flashlab/cp.h>
#include <flashlab/version.h>

#include <inttypes.h>

/* One row: the busiest device's link bytes and FLOPs of the forward, and the pass's times. */
static fl_status row(FILE *f, const char *panel, const fl_cp_spec *s, const fl_cp_host *h)
{
    fl_cp_result r;
    fl_cp_time t;
    FL_TRY(fl_cp_run(s, &r));
    int64_t bytes = 0, flops = 0;
    for (int64_t d = 0; d < s->P; d++) {
        const fl_cp_pass *x = &r.dev[0][d];
        bytes = bytes > x->link_sent_bytes ? bytes : x->link_sent_bytes;
        flops = flops > x->flops ? flops : x->flops;
    }
    fl_cp_time_of(&r, 0, h->flops, h->link_bw, &t);
    fl_cp_free(&r);
    fprintf(f, "%s,%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%.6g,%.6g,%.6g,%.6g\n", panel, fl_cp_name(s->kind),
            s->P, s->p.N, bytes, flops, t.compute_s, t.link_s, t.pass_s, t.exposed_s);
    return FL_OK;
}

fl_status fl_cp_figure_csv(FILE *f)
{
    const fl_cp_host *h;
    FL_TRY(fl_cp_host_find("h100-nvlink4", &h));
    fl_cp_spec s = {.kind = FL_CP_RING, .P = 1, .link_only = 1};
    s.p = fl_problem_default();
    s.p.d = 128, s.p.heads = 64, s.p.kv_heads = 8, s.p.causal = FL_CAUSAL_TOP_LEFT, s.p.elem_bytes = 2;
    fprintf(f, "# flashlab %s: figure (i), context parallelism of one causal attention layer, forward, d = 128, 64 "
               "heads, 8 K/V heads, 2-byte elements;\n# per pass the busiest device's link bytes (sent) and FLOPs, "
               "and the pass's times at %s (%.4g TFLOP/s, %.4g GB/s per link and direction)\n"
               "# (docs/context_parallel.md eq. CP-T); panel P: N = 131072, P = 1..64; panel N: P = 8, N = 8192..1048576\n",
            FLASHLAB_VERSION, h->name, h->flops / 1e12, h->link_bw / 1e9);
    fputs("panel,cp,P,N,link_bytes,flops,compute_s,link_s,pass_s,exposed_s\n", f);
    for (int k = FL_CP_RING; k <= FL_CP_ULYSSES; k++) {
        s.kind = (fl_cp_kind)k, s.p.N = 131072;
        for (s.P = 1; s.P <= 64; s.P *= 2) FL_TRY(row(f, "P", &s, h));
        s.P = 8;
        for (s.p.N = 8192; s.p.N <= 1048576; s.p.N *= 2) FL_TRY(row(f, "N", &s, h));
    }
    return ferror(f) ? fl_fail(FL_EIO, "figure (i): writing its data failed") : FL_OK;
}
