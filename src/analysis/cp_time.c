/* cp_time.c: hosts, the time of a context-parallel pass and the overlap condition
 * (docs/context_parallel.md §5). */
#include <flashlab/cp.h>

#include <stddef.h>
#include <string.h>

#include "named.h"

_Static_assert(offsetof(fl_cp_host, name) == 0, "FL_NAMED reads a host's name as its first member");

/* Liu et al. 2310.01889, Table 2 (p. 5): FLOPS and unidirectional interconnect bandwidth per
 * host, the minimal block size c = FLOPS / bandwidth and sequence length s = 6 c it prints
 * (x 1e3).  The H100 rows: dense BF16 989.4 TFLOP/s (H100 SXM datasheet: 1,979 with sparsity,
 * half without), NVLink 4 900 GB/s per GPU in both directions (450 GB/s one way), InfiniBand NDR
 * 400 Gb/s per port (50 GB/s one way). */
static const fl_cp_host hosts[] = {
    {"a100-nvlink", INT64_C(312000000000000), INT64_C(300000000000), 1.0e3, 6.2e3,
     "Liu et al. 2310.01889 Table 2: A100 NVLink, 312 TFLOPS, 300 GB/s"},
    {"a100-ib", INT64_C(312000000000000), INT64_C(12500000000), 24.5e3, 149.5e3,
     "Liu et al. 2310.01889 Table 2: A100 InfiniBand, 312 TFLOPS, 12.5 GB/s"},
    {"tpu-v3", INT64_C(123000000000000), INT64_C(112000000000), 1.1e3, 6.6e3,
     "Liu et al. 2310.01889 Table 2: TPU v3, 123 TFLOPS, 112 GB/s"},
    {"tpu-v4", INT64_C(275000000000000), INT64_C(268000000000), 1.0e3, 6.2e3,
     "Liu et al. 2310.01889 Table 2: TPU v4, 275 TFLOPS, 268 GB/s"},
    {"tpu-v5e", INT64_C(196000000000000), INT64_C(186000000000), 1.1e3, 6.3e3,
     "Liu et al. 2310.01889 Table 2: TPU v5e, 196 TFLOPS, 186 GB/s"},
    {"h100-nvlink4", INT64_C(989400000000000), INT64_C(450000000000), 0, 0,
     "H100 SXM datasheet: 989.4 TFLOP/s dense BF16; NVLink 4, 900 GB/s both ways = 450 GB/s one way"},
    {"h100-ib-ndr", INT64_C(989400000000000), INT64_C(50000000000), 0, 0,
     "H100 SXM datasheet: 989.4 TFLOP/s dense BF16; InfiniBand NDR, 400 Gb/s = 50 GB/s one way"},
};

const fl_cp_host *fl_cp_hosts(int *n)
{
    *n = (int)(sizeof hosts / sizeof hosts[0]);
    return hosts;
}

fl_status fl_cp_host_find(const char *name, const fl_cp_host **out)
{
    const fl_cp_host *h = FL_NAMED(hosts, name);
    if (h) return *out = h, FL_OK;
    return fl_fail(FL_EINVAL, "unknown host '%s' (choose a100-nvlink, a100-ib, tpu-v3, tpu-v4, tpu-v5e, "
                              "h100-nvlink4 or h100-ib-ndr)", fl_shown(name ? name : ""));
}

void fl_cp_time_of(const fl_cp_result *r, int bwd, int64_t flops, int64_t link_bw, fl_cp_time *t)
{
    const fl_cp_timeline *tl = &r->line[bwd];
    memset(t, 0, sizeof *t);
    t->hidden = 1;
    for (int k = 0; k < tl->nslots; k++) {
        const double c = (double)tl->slot_flops[k] / (double)flops, l = (double)tl->slot_bytes[k] / (double)link_bw;
        t->compute_s += c, t->link_s += l, t->pass_s += c > l ? c : l;
        /* eq. CP-O: bytes / link_bw <= FLOPs / flops, in integers */
        if ((unsigned __int128)tl->slot_bytes[k] * (unsigned __int128)flops >
            (unsigned __int128)tl->slot_flops[k] * (unsigned __int128)link_bw)
            t->hidden = 0;
    }
    t->exposed_s = t->pass_s - t->compute_s;
}

/* Whether the forward of s at n tokens per device hides every transfer. */
static fl_status hides(const fl_cp_spec *s, int64_t n, int64_t flops, int64_t link_bw, int *yes)
{
    fl_cp_spec t = *s;
    fl_cp_result r;
    fl_cp_time tm;
    t.link_only = 1, t.p.pass = FL_PASS_FWD, t.p.N = n * s->P;
    FL_TRY(fl_cp_run(&t, &r));
    fl_cp_time_of(&r, 0, flops, link_bw, &tm);
    fl_cp_free(&r);
    *yes = tm.hidden;
    return FL_OK;
}

fl_status fl_cp_min_rows(const fl_cp_spec *s, int64_t flops, int64_t link_bw, int64_t *n_min)
{
    if (s->kind == FL_CP_ULYSSES || s->P < 2)
        return fl_fail(FL_EINVAL, "{devices}: the overlap condition is about a ring of P >= 2 devices (got %s, P = %lld)",
                       fl_cp_name(s->kind) ? fl_cp_name(s->kind) : "?", (long long)s->P);
    if (flops < 1 || link_bw < 1) return fl_fail(FL_EINVAL, "{flops} and {link_bw}: the FLOP rate and the link bandwidth must be positive");
    int64_t lo = 0, hi = 1; /* lo fails (or is 0), hi is being tried */
    int yes = 0;
    for (;;) {
        FL_TRY(hides(s, hi, flops, link_bw, &yes));
        if (yes) break;
        lo = hi;
        if (hi >= FL_CP_MAX_ROWS)
            return fl_fail(FL_EINVAL, "{N}: even %lld tokens per device do not hide the transfers at these rates",
                           (long long)FL_CP_MAX_ROWS);
        hi *= 2;
    }
    while (hi - lo > 1) {
        const int64_t mid = lo + (hi - lo) / 2;
        FL_TRY(hides(s, mid, flops, link_bw, &yes));
        if (yes) hi = mid;
        else lo = mid;
    }
    *n_min = hi;
    return FL_OK;
}
