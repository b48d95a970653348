/* cp.c: the context-parallel model, executed: every device's kernels on the machine, its merges
 * as tile loops on the machine, every message counted at both ends (see cp.h,
 * docs/context_parallel.md). */
#include <flashlab/cp.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <flashlab/footprint.h>
#include <flashlab/machine.h>
#include <flashlab/run.h>
#include <flashlab/schedule.h>

#include "analysis/cp_layout.h"

const char *fl_cp_name(fl_cp_kind k)
{
    static const char *const names[] = {"ring", "striped", "ulysses"};
    return k >= FL_CP_RING && k <= FL_CP_ULYSSES ? names[k] : NULL;
}

fl_status fl_cp_parse(const char *s, fl_cp_kind *out)
{
    for (int k = FL_CP_RING; k <= FL_CP_ULYSSES; k++)
        if (s && strcmp(s, fl_cp_name((fl_cp_kind)k)) == 0) {
            *out = (fl_cp_kind)k;
            return FL_OK;
        }
    return fl_fail(FL_EINVAL, "unknown context-parallel schedule '%s' (choose ring, striped or ulysses)", fl_shown(s ? s : ""));
}

fl_status fl_cp_check(const fl_cp_spec *s)
{
    const fl_problem *p = &s->p;
    if (!fl_cp_name(s->kind)) return fl_fail(FL_EINVAL, "context-parallel schedule: unknown value %d", (int)s->kind);
    if (s->P < 1 || s->P > FL_CP_MAX_DEVICES)
        return fl_fail(FL_EINVAL, "{devices}: must be 1 to %d devices, got %lld", FL_CP_MAX_DEVICES, (long long)s->P);
    const unsigned f = fl_algo_flags(p->algo);
    if (!(f & FL_SCHED_SAVES_LSE) || (f & FL_SCHED_OWN_PROBLEM)) {
        fl_algo ok[FL_ALGO_MAX];
        char names[256] = "";
        const int n = fl_algos_with(FL_SCHED_SAVES_LSE, ok);
        for (int i = 0; i < n; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", fl_algo_name(ok[i]));
        return fl_fail(FL_EINVAL, "{algo}: schedule %s: each device's kernel must save the logsumexp the merges need (%s)",
                       fl_algo_name(p->algo) ? fl_algo_name(p->algo) : "?", names);
    }
    if (p->Nk && p->Nk != p->N)
        return fl_fail(FL_EINVAL, "{Nk}: context parallelism here splits self-attention (Nk = N), got Nk = %lld",
                       (long long)p->Nk);
    if (p->window_left != -1 || p->window_right != -1)
        return fl_fail(FL_EINVAL, "{window}: context parallelism here takes no local window");
    if (p->cu_seqlens_q || p->cu_seqlens_k)
        return fl_fail(FL_EINVAL, "{cu_seqlens_q}: context parallelism here splits sequences of equal length");
    const char *variant = fl_problem_variant_field(p);
    if (variant)
        return fl_fail(FL_EINVAL, "{%s}: context parallelism here merges plain attention; it takes none of the variants "
                                  "(d_v != d, sinks, softcap, ALiBi, dropout, fp8: docs/model.md §14)", variant);
    FL_TRY(fl_problem_check(p));
    if (p->N % s->P)
        return fl_fail(FL_EINVAL, "{N}: the %lld devices hold N / P tokens each, so P must divide N (N = %lld)",
                       (long long)s->P, (long long)p->N);
    const int64_t H = p->heads, Hkv = p->kv_heads ? p->kv_heads : H;
    if (s->kind == FL_CP_ULYSSES && (H % s->P || (Hkv % s->P && s->P % Hkv)))
        return fl_fail(FL_EINVAL, "{heads}: Ulysses gives each of the P = %lld devices H / P query heads, so P must divide "
                                  "the heads (%lld) and divide or be a multiple of the K/V heads ({kv_heads} = %lld)",
                       (long long)s->P, (long long)H, (long long)Hkv);
    return FL_OK;
}

/* ---- kernels and merges, each distinct one executed once ---- */

typedef struct {
    int64_t reads, writes, bytes, pairs;
} cost;

enum { K_KERNEL, K_MERGE_O, K_ACC_Q, K_ACC_KV, K_REDUCE_KV };

typedef struct {
    int64_t key[7];
    cost c;
} memo_entry;

typedef struct {
    const fl_cp_spec *s;
    memo_entry e[32];
    int n;
    int overflow;
} ctx;

static int64_t add(ctx *c, int64_t a, int64_t b)
{
    int64_t r;
    if (!fl_add_ok(a, b, &r)) c->overflow = 1;
    return r;
}

static int64_t mul(ctx *c, int64_t a, int64_t b)
{
    int64_t r;
    if (!fl_mul_ok(a, b, &r)) c->overflow = 1, r = 0;
    return r;
}

/* The machine's totals after a run: elements read and written, bytes. */
static void machine_cost(fl_machine *m, cost *c)
{
    c->reads = fl_machine_reads(m), c->writes = fl_machine_writes(m), c->bytes = 0;
    for (int i = 0; i < fl_tensor_count(m); i++) {
        const fl_tensor *t = fl_tensor_get(m, i);
        c->bytes += (t->reads + t->writes) * t->elem_bytes;
    }
}

typedef struct {
    const char *name;
    int64_t cols;
    int bytes, read, write;
} ew_tensor;

/* An elementwise pass over R rows of the tensors t[0..nt): tiles of as many rows as fit in M
 * with one buffer per tensor; each tile of a read tensor is loaded, of a written one stored
 * (docs/context_parallel.md rule CP-M). */
static fl_status elementwise(const fl_cp_spec *s, const char *what, int64_t R, const ew_tensor *t, int nt, cost *c)
{
    fl_machine *m = fl_machine_alloc(s->p.M, FL_COUNT, what);
    int id[8];
    fl_buf *b[8];
    int64_t width = 0;
    fl_status e = m ? FL_OK : FL_ENOMEM;
    for (int k = 0; k < nt && !e; k++) e = fl_tensor_add(m, t[k].name, R, t[k].cols, t[k].bytes, &id[k]), width += t[k].cols;
    const int64_t rows = fl_min64(R, s->p.M / width);
    if (!e && rows < 1)
        e = fl_fail(FL_ECAPACITY, "{M}: the %s needs %lld elements of SRAM for one row of its tensors, M = %lld", what,
                    (long long)width, (long long)s->p.M);
    for (int k = 0; k < nt && !e; k++) e = fl_sram_alloc(m, t[k].name, rows, t[k].cols, &b[k]);
    for (int64_t r0 = 0; r0 < R && !e; r0 += rows) {
        const int64_t nr = fl_min64(rows, R - r0);
        for (int k = 0; k < nt && !e; k++)
            if (t[k].read) e = fl_load(m, b[k], id[k], r0, 0, nr, t[k].cols);
        for (int k = 0; k < nt && !e; k++)
            if (t[k].write) e = fl_store(m, b[k], id[k], r0, 0, nr, t[k].cols);
    }
    if (!e) machine_cost(m, c);
    fl_machine_free(m);
    return e;
}

/* Sums rep partial gradients of R rows into one, for dK and dV: each tile of every partial is
 * loaded into one buffer and added in registers, the sum stored (rule CP-M). */
static fl_status reduce(const fl_cp_spec *s, int64_t R, int64_t rep, cost *c)
{
    const int64_t d = s->p.d, rows = fl_min64(R, s->p.M / (2 * d));
    fl_machine *m = fl_machine_alloc(s->p.M, FL_COUNT, "reduction");
    int id[4];
    fl_buf *b[2];
    fl_status e = m ? FL_OK : FL_ENOMEM;
    int64_t Rp;
    if (!e && !fl_mul_ok(R, rep, &Rp)) e = fl_fail(FL_EOVERFLOW, "{N}: a reduction of %lld partials overflows", (long long)rep);
    static const char *const names[] = {"dK_part", "dK", "dV_part", "dV"};
    for (int k = 0; k < 4 && !e; k++) e = fl_tensor_add(m, names[k], k % 2 ? R : Rp, d, FL_ACCUM_BYTES, &id[k]);
    if (!e && rows < 1)
        e = fl_fail(FL_ECAPACITY, "{M}: the reduction needs %lld elements of SRAM for one row, M = %lld", (long long)(2 * d),
                    (long long)s->p.M);
    if (!e) e = fl_sram_alloc(m, "part", rows, d, &b[0]);
    if (!e) e = fl_sram_alloc(m, "sum", rows, d, &b[1]);
    for (int64_t r0 = 0; r0 < R && !e; r0 += rows) {
        const int64_t nr = fl_min64(rows, R - r0);
        for (int g = 0; g < 2; g++) {
            for (int64_t k = 0; k < rep && !e; k++) e = fl_load(m, b[0], id[2 * g], k * R + r0, 0, nr, d);
            if (!e) e = fl_store(m, b[1], id[2 * g + 1], r0, 0, nr, d);
        }
    }
    if (!e) machine_cost(m, c);
    fl_machine_free(m);
    return e;
}

/* The cost of one operation, executed the first time it is asked for. */
static fl_status op(ctx *c, int kind, int64_t rows, int64_t a, int64_t b, int64_t h, int64_t hk, int bwd, cost *out)
{
    const int64_t key[7] = {kind, rows, a, b, h, hk, bwd};
    for (int i = 0; i < c->n; i++)
        if (!memcmp(c->e[i].key, key, sizeof key)) {
            *out = c->e[i].c;
            return FL_OK;
        }
    const fl_cp_spec *s = c->s;
    const int64_t d = s->p.d, batch = s->p.batch;
    const int eb = s->p.elem_bytes;
    memset(out, 0, sizeof *out);
    if (kind == K_KERNEL) { /* a: causal, b: window_right */
        int64_t pairs;
        if (!s->link_only) { /* first: fl_run refuses a kernel of more than max_events tile events */
            const fl_problem q = fl_cp_kernel_problem(s, rows, (fl_causal)a, b, h, hk, bwd);
            fl_result r;
            FL_TRY(fl_run(&q, FL_COUNT, NULL, NULL, &r));
            out->reads = r.reads, out->writes = r.writes, out->bytes = r.bytes;
        } else if (rows > FL_CP_MAX_ROWS) {
            return fl_fail(FL_EINVAL, "{N}: a link-only model counts the pairs of each step row by row, at most %lld rows "
                                      "(got %lld)", (long long)FL_CP_MAX_ROWS, (long long)rows);
        }
        FL_TRY(fl_cp_pairs(rows, (fl_causal)a, b, &pairs));
        out->pairs = mul(c, mul(c, pairs, h), batch);
    } else if (!s->link_only && kind == K_MERGE_O) { /* rows: query rows over heads and batch */
        const ew_tensor t[] = {{"O", d, eb, 1, 1}, {"L", 1, FL_STAT_BYTES, 1, 1}, {"O_step", d, eb, 1, 0},
                               {"L_step", 1, FL_STAT_BYTES, 1, 0}};
        FL_TRY(elementwise(s, "merge of O", rows, t, 4, out));
    } else if (!s->link_only && kind == K_ACC_Q) {
        const ew_tensor t[] = {{"dQ", d, FL_ACCUM_BYTES, 1, 1}, {"dQ_step", d, FL_ACCUM_BYTES, 1, 0}};
        FL_TRY(elementwise(s, "accumulation of dQ", rows, t, 2, out));
    } else if (!s->link_only && kind == K_ACC_KV) { /* rows: key rows over K/V heads and batch */
        const ew_tensor t[] = {{"dK", d, FL_ACCUM_BYTES, 1, 1}, {"dK_step", d, eb, 1, 0},
                               {"dV", d, FL_ACCUM_BYTES, 1, 1}, {"dV_step", d, eb, 1, 0}};
        FL_TRY(elementwise(s, "accumulation of dK, dV", rows, t, 4, out));
    } else if (!s->link_only && kind == K_REDUCE_KV) { /* a: partials */
        FL_TRY(reduce(s, rows, a, out));
    }
    if (c->n < (int)(sizeof c->e / sizeof c->e[0])) c->e[c->n].c = *out, memcpy(c->e[c->n++].key, key, sizeof key);
    return FL_OK;
}

/* ---- the passes ---- */

typedef struct {
    ctx *c;
    fl_cp_pass *dev;
    int64_t *sent, *recv; /* bytes of the current slot, per device */
    int64_t P;
} pass_ctx;

static void send(pass_ctx *x, int64_t from, int64_t to, int64_t elems, int bytes)
{
    if (from == to || !elems) return; /* a device's own data never crosses a link */
    ctx *c = x->c;
    const int64_t by = mul(c, elems, bytes);
    x->dev[from].link_sent = add(c, x->dev[from].link_sent, elems);
    x->dev[from].link_sent_bytes = add(c, x->dev[from].link_sent_bytes, by);
    x->dev[to].link_recv = add(c, x->dev[to].link_recv, elems);
    x->dev[to].link_recv_bytes = add(c, x->dev[to].link_recv_bytes, by);
    x->sent[from] = add(c, x->sent[from], by);
    x->recv[to] = add(c, x->recv[to], by);
}

static void add_kernel(pass_ctx *x, int64_t dev, const cost *k, int bwd, int64_t *flops)
{
    ctx *c = x->c;
    fl_cp_pass *d = &x->dev[dev];
    d->kernels++;
    d->kernel_reads = add(c, d->kernel_reads, k->reads);
    d->kernel_writes = add(c, d->kernel_writes, k->writes);
    d->hbm_bytes = add(c, d->hbm_bytes, k->bytes);
    d->pairs = add(c, d->pairs, k->pairs);
    *flops = mul(c, k->pairs, mul(c, c->s->p.d, bwd ? 10 : 4)); /* eq. CP-F */
    d->flops = add(c, d->flops, *flops);
}

static void add_merge(pass_ctx *x, int64_t dev, const cost *m)
{
    fl_cp_pass *d = &x->dev[dev];
    d->merge_reads = add(x->c, d->merge_reads, m->reads);
    d->merge_writes = add(x->c, d->merge_writes, m->writes);
    d->hbm_bytes = add(x->c, d->hbm_bytes, m->bytes);
}

/* Closes a slot: the busiest device's FLOPs and the busiest link's bytes. */
static void close_slot(pass_ctx *x, fl_cp_timeline *tl, int t, int64_t flops_max)
{
    int64_t b = 0;
    for (int64_t i = 0; i < x->P; i++) {
        b = fl_max64(b, fl_max64(x->sent[i], x->recv[i]));
        x->sent[i] = x->recv[i] = 0;
    }
    tl->slot_flops[t] = flops_max, tl->slot_bytes[t] = b;
}

/* Ring and striped: in step t device dev holds block (dev - t) mod P; it computes on it, merges,
 * and passes the block on (steps 0 .. P-2); backward it also passes the dK, dV accumulator of
 * the block it held in step t-1 (steps 1 .. P, the last one home to its owner). */
static fl_status ring_pass(pass_ctx *x, fl_cp_timeline *tl, int64_t n, int bwd, char *dev_started, char *blk_started)
{
    ctx *c = x->c;
    const fl_cp_spec *s = c->s;
    const int64_t P = s->P, H = s->p.heads, Hkv = s->p.kv_heads ? s->p.kv_heads : H, batch = s->p.batch;
    const int64_t kv = mul(c, mul(c, mul(c, 2, batch), mul(c, Hkv, n)), s->p.d); /* a K and V block */
    memset(dev_started, 0, (size_t)P);
    memset(blk_started, 0, (size_t)P);
    for (int t = 0; t < tl->nslots; t++) {
        int64_t fmax = 0;
        for (int64_t dev = 0; dev < P; dev++) {
            if (t < P) {
                const int64_t src = ((dev - t) % P + P) % P;
                fl_cp_step st;
                fl_cp_step_of(s, n, dev, src, &st);
                if (!st.empty) {
                    cost k, m;
                    int64_t f;
                    FL_TRY(op(c, K_KERNEL, st.rows, st.causal, st.window_right, H, Hkv, bwd, &k));
                    add_kernel(x, dev, &k, bwd, &f);
                    fmax = fl_max64(fmax, f);
                    if (dev_started[dev]) { /* O and L (forward), dQ (backward) */
                        FL_TRY(op(c, bwd ? K_ACC_Q : K_MERGE_O, mul(c, mul(c, batch, H), st.rows), 0, 0, 0, 0, bwd, &m));
                        add_merge(x, dev, &m);
                    }
                    if (bwd && blk_started[src]) { /* the travelling dK, dV of block src */
                        FL_TRY(op(c, K_ACC_KV, mul(c, mul(c, batch, Hkv), st.rows), 0, 0, 0, 0, bwd, &m));
                        add_merge(x, dev, &m);
                    }
                    dev_started[dev] = 1, blk_started[src] = 1;
                }
                if (t < P - 1) send(x, dev, (dev + 1) % P, kv, s->p.elem_bytes);
            }
            if (bwd && t >= 1) send(x, dev, (dev + 1) % P, kv, FL_ACCUM_BYTES); /* fp32, as ring-flash-attn */
        }
        close_slot(x, tl, t, fmax);
    }
    return FL_OK;
}

/* Ulysses: the all-to-all in (Q, K, V; backward dO), one kernel per device on all N tokens of
 * its heads, the all-to-all out (O; backward dQ, dK, dV), and backward the sum of the partial
 * dK, dV of a K/V head that several devices share. */
static fl_status ulysses_pass(pass_ctx *x, fl_cp_timeline *tl, int64_t n, int bwd)
{
    ctx *c = x->c;
    const fl_cp_spec *s = c->s;
    const int64_t P = s->P, piece = mul(c, mul(c, n, s->p.batch), s->p.d); /* n tokens of one head */
    int64_t q0, hq, k0, hk, fmax = 0;
    for (int phase = 0; phase < 2; phase++) { /* all-to-all in, then out */
        for (int64_t a = 0; a < P; a++)
            for (int64_t b = 0; b < P; b++) {
                /* in: a sends its tokens of b's heads; out: a sends b's tokens of its own heads */
                fl_cp_heads(s, phase ? a : b, &q0, &hq, &k0, &hk);
                const int64_t heads = phase == bwd ? add(c, hq, mul(c, 2, hk)) : hq; /* Q,K,V in or dQ,dK,dV out */
                send(x, a, b, mul(c, piece, heads), s->p.elem_bytes);
            }
        if (phase == 0) close_slot(x, tl, 0, 0);
        if (phase == 0)
            for (int64_t dev = 0; dev < P; dev++) {
                cost k;
                int64_t f;
                fl_cp_heads(s, dev, &q0, &hq, &k0, &hk);
                FL_TRY(op(c, K_KERNEL, s->p.N, s->p.causal ? FL_CAUSAL_TOP_LEFT : FL_CAUSAL_NONE, -1, hq, hk, bwd, &k));
                add_kernel(x, dev, &k, bwd, &f);
                fmax = fl_max64(fmax, f);
            }
        if (phase == 0) close_slot(x, tl, 1, fmax);
    }
    close_slot(x, tl, 2, 0);
    if (!bwd) return FL_OK;
    const int64_t Hkv = s->p.kv_heads ? s->p.kv_heads : s->p.heads;
    for (int64_t dev = 0; dev < P; dev++)
        for (int64_t kh = 0; kh < Hkv; kh++) { /* dev's tokens of K/V head kh: one partial per device using kh */
            int64_t rep = 0;
            for (int64_t a = 0; a < P; a++) fl_cp_heads(s, a, &q0, &hq, &k0, &hk), rep += kh >= k0 && kh < k0 + hk;
            if (rep > 1) {
                cost m;
                FL_TRY(op(c, K_REDUCE_KV, mul(c, n, s->p.batch), rep, 0, 0, 0, bwd, &m));
                add_merge(x, dev, &m);
            }
        }
    return FL_OK;
}

void fl_cp_free(fl_cp_result *r)
{
    if (!r) return;
    for (int b = 0; b < 2; b++) {
        free(r->dev[b]);
        free(r->line[b].slot_flops);
        free(r->line[b].slot_bytes);
    }
    memset(r, 0, sizeof *r);
}

fl_status fl_cp_run(const fl_cp_spec *s, fl_cp_result *r)
{
    memset(r, 0, sizeof *r);
    FL_TRY(fl_cp_check(s));
    r->spec = *s;
    r->n = s->p.N / s->P;
    r->passes = s->p.pass;
    ctx *c = calloc(1, sizeof *c);
    int64_t *scratch = calloc((size_t)(2 * s->P), sizeof *scratch);
    char *flags = calloc((size_t)(2 * s->P), 1);
    fl_status e = c && scratch && flags ? FL_OK : fl_fail(FL_ENOMEM, "context parallelism: out of memory");
    if (c) c->s = s;
    for (int bwd = 0; bwd < 2 && !e; bwd++) {
        if (!(s->p.pass & (bwd ? FL_PASS_BWD : FL_PASS_FWD))) continue;
        fl_cp_timeline *tl = &r->line[bwd];
        tl->nslots = s->kind == FL_CP_ULYSSES ? 3 : (int)s->P + bwd;
        r->dev[bwd] = calloc((size_t)s->P, sizeof *r->dev[bwd]);
        tl->slot_flops = calloc((size_t)tl->nslots, sizeof *tl->slot_flops);
        tl->slot_bytes = calloc((size_t)tl->nslots, sizeof *tl->slot_bytes);
        if (!r->dev[bwd] || !tl->slot_flops || !tl->slot_bytes) {
            e = fl_fail(FL_ENOMEM, "context parallelism: out of memory");
            break;
        }
        pass_ctx x = {c, r->dev[bwd], scratch, scratch + s->P, s->P};
        e = s->kind == FL_CP_ULYSSES ? ulysses_pass(&x, tl, r->n, bwd) : ring_pass(&x, tl, r->n, bwd, flags, flags + s->P);
    }
    if (!e && c->overflow)
        e = fl_fail(FL_EOVERFLOW, "{N}: the context-parallel counts of N = %lld over P = %lld devices do not fit in 64 bits",
                    (long long)s->p.N, (long long)s->P);
    free(c);
    free(scratch);
    free(flags);
    if (e) fl_cp_free(r);
    return e;
}
