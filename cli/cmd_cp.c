/* cmd_cp.c: `flashlab cp`: context parallelism over P devices (cp.h, docs/context_parallel.md):
 * per device and pass the HBM traffic of its kernels and merges, executed on the count-only
 * machine, and the elements over its links; the closed forms compared on every device; the time
 * at a host's FLOP rate and link bandwidth, and the fewest tokens per device that hide the
 * transfers.  --overlap-table reproduces Table 2 of the ring attention paper from the model. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include <flashlab/cp.h>
#include <flashlab/output.h>
#include <flashlab/schedule.h>
#include <flashlab/version.h>
#include "cli.h"
#include "problem_opts.h"

static const char *usage =
    "usage: flashlab cp [options]\n"
    "Context parallelism: P devices, each holding N/P tokens of the sequence.  For each device and\n"
    "pass: the HBM traffic of its attention kernels and merges (executed on the count-only machine),\n"
    "the elements it sends and receives over its links, its FLOPs; the closed forms of\n"
    "docs/context_parallel.md checked on every device; the time at a host's FLOP rate and link\n"
    "bandwidth, and the fewest tokens per device whose compute hides the transfers.\n\n"
    "  --devices P     devices, 1 to 4096, dividing N (and for ulysses the heads)     [8]\n"
    "  --cp S          ring, striped (ring with token i on device i mod P) or ulysses [ring]\n"
    "  --algo A        each device's kernel, a schedule that saves each row's logsumexp\n"
    "                  (a wrong one is refused with the list)          [the default schedule]\n"
    "  --host H        FLOP rate and link bandwidth: a100-nvlink, a100-ib, tpu-v3, tpu-v4,\n"
    "                  tpu-v5e (Liu et al. Table 2), h100-nvlink4, h100-ib-ndr    [h100-nvlink4]\n"
    "  --tflops F      FLOP rate of one device in TFLOP/s (overrides --host)\n"
    "  --link-gbs B    link bandwidth, one direction, in GB/s (overrides --host)\n"
    "  --per-device    a row for every device (default: the busiest and the least busy)\n"
    "  --overlap-table for every host, the fewest tokens per device whose compute hides the\n"
    "                  transfers of the forward (simulated), beside the closed form and the ring\n"
    "                  attention paper's Table 2 (its problem: MHA, 2-byte elements, no mask)\n"
    "  --format F      table or csv                                                [table]\n"
    "  --output FILE   write to FILE (atomically)\n"
    "  the problem: --N, --d, --M, --sram, --dtype, --causal, --batch, --heads, --kv-heads, --pass,\n"
    "  --max-events as for count (self-attention, no window, no varlen)\n"
    "  --help          this text\n";

typedef struct {
    fl_cp_spec s;
    int64_t flops, link_bw;
    const fl_cp_host *host;
    int per_device, table, csv;
} opts;

/* A rate given in units of unit (TFLOP/s as 1e12): positive, finite, at most 1e21 per second. */
static fl_status parse_rate(const char *opt, const char *v, double unit, int64_t *out)
{
    double x;
    FL_TRY(fl_popts_parse_double(opt, v, &x));
    if (!(x > 0) || x * unit > 1e21 || llround(x * unit) < 1)
        return fl_fail(FL_EINVAL, "%s: '%s' must be a positive rate (at most %g)", opt, fl_shown(v), 1e21 / unit);
    *out = llround(x * unit);
    return FL_OK;
}

static const char *human_time(double s, char *buf, size_t n)
{
    if (s == 0) snprintf(buf, n, "0 s");
    else if (s < 1e-3) snprintf(buf, n, "%.3g us", s * 1e6);
    else if (s < 1) snprintf(buf, n, "%.3g ms", s * 1e3);
    else snprintf(buf, n, "%.3g s", s);
    return buf;
}

static const char *pass_label(int bwd) { return bwd ? "backward" : "forward"; }

static void csv_row(FILE *out, int bwd, int64_t dev, const fl_cp_pass *x)
{
    fprintf(out, "%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
                 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 "\n",
            bwd ? "bwd" : "fwd", dev, x->kernels, x->kernel_reads, x->kernel_writes, x->merge_reads, x->merge_writes,
            x->hbm_bytes, x->link_sent, x->link_recv, x->link_sent_bytes, x->link_recv_bytes, x->pairs, x->flops);
}

static void table_row(FILE *out, const char *label, int64_t dev, const fl_cp_pass *x)
{
    fprintf(out, "  %-11s %6" PRId64 " %7" PRId64 " %15" PRId64 " %13" PRId64 " %13" PRId64 " %13" PRId64 " %13" PRId64
                 " %12.4g\n",
            label, dev, x->kernels, x->kernel_reads + x->kernel_writes, x->merge_reads + x->merge_writes, x->link_sent,
            x->link_recv, x->link_sent_bytes, x->flops / 1e9);
}

/* Every device's counts against the closed forms: a difference is a bug of the model. */
static fl_status check_closed(const fl_cp_result *r, int bwd)
{
    for (int64_t dev = 0; dev < r->spec.P; dev++) {
        fl_cp_closed_counts c;
        const fl_cp_pass *x = &r->dev[bwd][dev];
        FL_TRY(fl_cp_closed(&r->spec, dev, bwd, &c));
        if (c.link_sent != x->link_sent || c.link_recv != x->link_recv || c.pairs != x->pairs || c.kernels != x->kernels ||
            c.kernel_total != x->kernel_reads + x->kernel_writes || c.merge_total != x->merge_reads + x->merge_writes)
            return fl_fail(FL_EBOUNDS, "cp: device %" PRId64 " (%s) counted link %" PRId64 ", HBM %" PRId64 " + %" PRId64
                                       " but the closed forms say %" PRId64 ", %" PRId64 " + %" PRId64,
                           dev, pass_label(bwd), x->link_sent, x->kernel_reads + x->kernel_writes,
                           x->merge_reads + x->merge_writes, c.link_sent, c.kernel_total, c.merge_total);
    }
    return FL_OK;
}

/* The busiest (most FLOPs, then most link bytes; the last such) and least busy devices. */
static void extremes(const fl_cp_result *r, int bwd, int64_t *hi, int64_t *lo)
{
    *hi = *lo = 0;
    for (int64_t d = 1; d < r->spec.P; d++) {
        const fl_cp_pass *x = &r->dev[bwd][d], *h = &r->dev[bwd][*hi], *l = &r->dev[bwd][*lo];
        if (x->flops > h->flops || (x->flops == h->flops && x->link_sent_bytes >= h->link_sent_bytes)) *hi = d;
        if (x->flops < l->flops) *lo = d;
    }
}

static fl_status report(FILE *out, const opts *o, const fl_cp_result *r)
{
    const fl_cp_spec *s = &o->s;
    const fl_problem *p = &s->p;
    const int64_t Hkv = p->kv_heads ? p->kv_heads : p->heads;
    char t1[32], t2[32], t3[32], t4[32];
    int64_t n_min = 0;
    if (s->kind != FL_CP_ULYSSES && s->P > 1) FL_TRY(fl_cp_min_rows(s, o->flops, o->link_bw, &n_min)); /* before output */
    fprintf(out, "flashlab cp: %s over P = %" PRId64 " devices; N = %" PRId64 " (%" PRId64 " tokens per device), d = %" PRId64
                 ", batch %" PRId64 ", %" PRId64 " heads (%" PRId64 " K/V), mask %s; each device runs %s at M = %" PRId64
                 " (count-only machine; elements)\n",
            fl_cp_name(s->kind), s->P, p->N, r->n, p->d, p->batch, p->heads, Hkv, fl_causal_name(p->causal),
            fl_algo_name(p->algo), p->M);
    fprintf(out, "host: %s%s%.4g TFLOP/s per device, %.4g GB/s per link and direction\n", o->host ? o->host->name : "",
            o->host ? ", " : "", o->flops / 1e12, o->link_bw / 1e9);
    if (o->host) fprintf(out, "  (%s)\n", o->host->source);
    for (int bwd = 0; bwd < 2; bwd++) {
        if (!r->dev[bwd]) continue;
        fl_cp_time t;
        fl_cp_time_of(r, bwd, o->flops, o->link_bw, &t);
        fprintf(out, "\n%s   %6s %7s %15s %13s %13s %13s %13s %12s\n", pass_label(bwd), "device", "kernels",
                "HBM kernels", "HBM merges", "link sent", "link recv", "link bytes", "GFLOP");
        if (o->per_device)
            for (int64_t d = 0; d < s->P; d++) table_row(out, "", d, &r->dev[bwd][d]);
        else {
            int64_t hi, lo;
            extremes(r, bwd, &hi, &lo);
            table_row(out, "busiest", hi, &r->dev[bwd][hi]);
            table_row(out, "least busy", lo, &r->dev[bwd][lo]);
        }
        fprintf(out, "  closed forms (docs/context_parallel.md §4): equal on all %" PRId64 " devices\n", s->P);
        fprintf(out, "  time: compute %s, link %s, pass %s, exposed link %s%s\n", human_time(t.compute_s, t1, sizeof t1),
                human_time(t.link_s, t2, sizeof t2), human_time(t.pass_s, t3, sizeof t3),
                human_time(t.exposed_s, t4, sizeof t4), t.hidden ? ": every transfer hidden behind compute" : "");
    }
    if (n_min) {
        const double c = (double)o->flops * (double)Hkv * p->elem_bytes / (2.0 * (double)p->heads * (double)o->link_bw);
        fprintf(out, "\noverlap (forward): transfers hidden from %" PRId64 " tokens per device (simulated; here %" PRId64
                     "); for dense steps the closed form is c >= F Hkv e / (2 H B) = %.1f (eq. CP-O)%s\n",
                n_min, r->n, c, p->causal ? ", and a causal step keeps about half its pairs: about twice that" : "");
    } else if (s->kind == FL_CP_ULYSSES && s->P > 1) {
        fprintf(out, "\noverlap: none; the all-to-alls of Ulysses come before and after the kernel (eq. CP-T)\n");
    }
    return ferror(out) ? fl_fail(FL_EIO, "cp: write failed") : FL_OK;
}

/* Liu et al. Table 2 from the model: the fewest tokens per device that hide the forward's
 * transfers on every host, s = 6 c as the paper defines it. */
static fl_status overlap_table(FILE *out, const opts *o)
{
    int nh;
    const fl_cp_host *h = fl_cp_hosts(&nh);
    const fl_problem *p = &o->s.p;
    const int64_t Hkv = p->kv_heads ? p->kv_heads : p->heads;
    int64_t n_min[32];
    /* the paper's numbers are for its problem only: MHA, 2-byte elements, no mask */
    const int papers = Hkv == p->heads && p->elem_bytes == 2 && p->causal == FL_CAUSAL_NONE;
    for (int i = 0; i < nh && i < 32; i++) FL_TRY(fl_cp_min_rows(&o->s, h[i].flops, h[i].link_bw, &n_min[i]));
    fprintf(out, "flashlab cp --overlap-table: the fewest tokens per device c whose forward compute hides its transfers\n"
                 "(%s, P = %" PRId64 ", d = %" PRId64 ", %" PRId64 " heads, %" PRId64 " K/V, %d-byte elements, mask %s; "
                 "simulated), beside c = F Hkv e / (2 H B) (eq. CP-O) and Liu et al. 2310.01889 Table 2 (x1e3)%s\n\n",
            fl_cp_name(o->s.kind), o->s.P, p->d, p->heads, Hkv, p->elem_bytes, fl_causal_name(p->causal),
            papers ? "" : ";\nthe paper's columns are for MHA (a K/V head per query head) in 2-byte elements, no mask: not this problem");
    fprintf(out, "%-13s %8s %8s %10s %12s %8s %10s %8s\n", "host", "TFLOP/s", "GB/s", "c (model)", "closed form",
            "paper c", "s = 6c", "paper s");
    for (int i = 0; i < nh && i < 32; i++) {
        const double c = (double)h[i].flops * (double)Hkv * p->elem_bytes / (2.0 * (double)p->heads * (double)h[i].link_bw);
        char pc[16] = "-", ps[16] = "-";
        if (papers && h[i].paper_c > 0) snprintf(pc, sizeof pc, "%.1f", h[i].paper_c / 1e3);
        if (papers && h[i].paper_s > 0) snprintf(ps, sizeof ps, "%.1f", h[i].paper_s / 1e3);
        fprintf(out, "%-13s %8.4g %8.4g %10" PRId64 " %12.1f %8s %10.1f %8s\n", h[i].name, h[i].flops / 1e12,
                h[i].link_bw / 1e9, n_min[i], c, pc, 6.0 * n_min[i] / 1e3, ps);
    }
    return ferror(out) ? fl_fail(FL_EIO, "cp: write failed") : FL_OK;
}

/* The library's message of e, prefixed with the option that gave the value. */
static fl_status named(const char *opt, fl_status e)
{
    char msg[512];
    if (!e) return e;
    snprintf(msg, sizeof msg, "%s", fl_last_error_raw());
    return fl_fail(e, "%s: %s", opt, msg);
}

static fl_status parse(int argc, char **argv, opts *o, fl_popts *po, const char **output, int *help)
{
    fl_args a;
    const char *name, *iv, *v;
    const char *host = "h100-nvlink4";
    int64_t flops = 0, bw = 0;
    int k;
    fl_status e = FL_OK;
    memset(o, 0, sizeof *o);
    o->s.kind = FL_CP_RING, o->s.P = 8;
    fl_popts_init(po);
    fl_args_init(&a, argc, argv);
    while ((k = fl_args_next(&a, &name, &iv)) == 1) {
        if (!strcmp(name, "--help") || !strcmp(name, "--per-device") || !strcmp(name, "--overlap-table")) {
            FL_TRY(fl_args_flag(name, iv));
            if (name[2] == 'h') *help = 1;
            else if (name[2] == 'p') o->per_device = 1;
            else o->table = 1;
            continue;
        }
        FL_TRY(fl_args_value(&a, name, iv, &v));
        if (!strcmp(name, "--devices")) e = fl_parse_i64(name, v, 1, FL_CP_MAX_DEVICES, &o->s.P);
        else if (!strcmp(name, "--cp")) e = named(name, fl_cp_parse(v, &o->s.kind));
        else if (!strcmp(name, "--algo")) e = fl_algo_parse(v, &po->p.algo);
        else if (!strcmp(name, "--host")) e = named(name, fl_cp_host_find(v, &o->host)), host = v;
        else if (!strcmp(name, "--tflops")) e = parse_rate(name, v, 1e12, &flops);
        else if (!strcmp(name, "--link-gbs")) e = parse_rate(name, v, 1e9, &bw);
        else if (!strcmp(name, "--output")) *output = v;
        else if (!strcmp(name, "--format")) {
            if (!strcmp(v, "csv")) o->csv = 1;
            else if (!strcmp(v, "table")) o->csv = 0;
            else e = fl_fail(FL_EINVAL, "--format: unknown format '%s' (choose table or csv)", fl_shown(v));
        } else if (!fl_popts_take(po, name, v, &e))
            e = fl_fail(FL_EINVAL, "%s: unknown option for cp (see flashlab cp --help)", name);
        if (e) return e;
    }
    if (k < 0) return FL_EINVAL;
    if (*help) return FL_OK;
    FL_TRY(fl_cp_host_find(host, &o->host));
    o->flops = flops ? flops : o->host->flops;
    o->link_bw = bw ? bw : o->host->link_bw;
    if (flops || bw) o->host = NULL; /* a host of the user's own */
    FL_TRY(fl_popts_finish(po));
    o->s.p = po->p;
    if (o->table && o->csv) return fl_fail(FL_EINVAL, "--overlap-table: prints a table; it takes no --format csv");
    if (o->table && o->s.kind == FL_CP_ULYSSES)
        return fl_fail(FL_EINVAL, "--overlap-table: the overlap condition is about a ring (--cp ring or striped)");
    if (o->table && o->s.P < 2) return fl_fail(FL_EINVAL, "--overlap-table: a ring needs --devices 2 or more");
    return fl_cp_check(&o->s);
}

int fl_cmd_cp(int argc, char **argv)
{
    static fl_popts po; /* large (the cu_seqlens arrays): not on the stack */
    opts o;
    const char *output = NULL;
    int help = 0;
    fl_cp_result r = {0};
    fl_output *out = NULL;
    fl_status e = parse(argc, argv, &o, &po, &output, &help);
    if (!e && help) {
        fputs(usage, stdout);
        return 0;
    }
    if (!e && output) e = fl_output_open(output, "--output", &out); /* before the work */
    FILE *f = out ? fl_output_file(out) : stdout;
    if (!e && o.table) e = overlap_table(f, &o);
    if (!e && !o.table) e = fl_cp_run(&o.s, &r);
    for (int bwd = 0; bwd < 2 && !e && !o.table; bwd++)
        if (r.dev[bwd]) e = check_closed(&r, bwd);
    if (!e && !o.table && o.csv) {
        fprintf(f, "# flashlab %s cp: %s context parallelism; counts in elements from schedules executed on the "
                   "count-only machine and messages of the schedule (a model, not a measurement)\n",
                FLASHLAB_VERSION, fl_cp_name(o.s.kind));
        fl_cli_command_comment(f, "cp", argc, argv);
        fputs("pass,device,kernels,hbm_kernel_reads,hbm_kernel_writes,hbm_merge_reads,hbm_merge_writes,hbm_bytes,"
              "link_sent,link_recv,link_sent_bytes,link_recv_bytes,pairs,flops\n", f);
        for (int bwd = 0; bwd < 2; bwd++)
            for (int64_t d = 0; r.dev[bwd] && d < o.s.P; d++) csv_row(f, bwd, d, &r.dev[bwd][d]);
    } else if (!e && !o.table) {
        e = report(f, &o, &r);
    }
    fl_cp_free(&r);
    if (!e && out) e = fl_output_commit(out);
    else if (e) fl_output_abort(out);
    return e ? fl_cli_error(e) : 0;
}
