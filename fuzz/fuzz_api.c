/* fuzz_api.c: the C entry points the notebooks' Python binding calls (python/flashlab/),
 * with arbitrary arguments, each against an oracle of its documented contract:
 *
 *   0  fl_run on an fl_problem whose every field is arbitrary (sizes, enums, seeds, doubles,
 *      cu_seqlens and block tables of the lengths the problem states): the status is one of the
 *      bad-input codes with a one-line message naming an option, or FL_OK with counts that add
 *      up, equal the closed form, stay under max_events and M, and (compute mode, small sizes)
 *      an output equal to the reference;
 *   1  the machine: fl_machine_alloc, then up to 64 of fl_tensor_add, fl_sram_alloc,
 *      fl_sram_free, fl_load, fl_store (arbitrary ids, corners, shapes), fl_machine_set_trace,
 *      fl_machine_reset_peak; an independent model of the counters, SRAM use, peak and events
 *      after every call, the trace's events, and in compute mode the values a tile moves;
 *   2  fl_osm_step, fl_osm_finish, fl_osm_tiled and fl_ref_softmax_row on arbitrary doubles,
 *      lengths, strides and tile sizes: tiling whole equals one step; bad sizes refused;
 *   3  fl_mask_init (arbitrary lengths, corner, window) against the rule it states, then
 *      fl_mask_keep, fl_mask_row_range, fl_mask_tile, fl_mask_block_range and
 *      fl_mask_row_block_range inside the matrix against a brute-force evaluation of K1;
 *   4  fl_heads_check, fl_kv_head (after a passing check, as heads.h requires), and
 *      fl_cu_seqlens_check on arrays of exactly the length given (heap-allocated, so a read past
 *      them is an ASan report).
 *
 * The first input byte picks the target; the rest is read by fz_take.  Sizes come from
 * pick_i64, which favours edges (0, 1, -1, powers of two, FL_SIZE_MAX, INT64_MAX).  Limits kept
 * so one input stays fast: max_events in [1, 20000] for fl_run; compute mode only when every
 * size is at most 64; machine tensors of at most 256 x 256 in compute mode.
 *
 * FZ_CONTRACT_ONLY (default 1) also keeps the arguments that the findings recorded in
 * fuzz/RESULTS.md showed to be undefined behaviour in code outside the CLI (reported, not fixed
 * here): machine capacities below 2^56 (the counters overflow, finding A1), mask queries inside
 * the matrix (A2), fl_mask_init lengths at most FL_SIZE_MAX (A3), and fl_cu_seqlens_check batch
 * values above INT64_MIN + 1 and below INT64_MAX with n >= 1 (A4), decode pools whose K cache
 * fits 64 bits (A5), blocksparse problems of at most 2^22 mask blocks (B1: their closed form
 * walks every block before max_events is checked), decode problems of at most 2^22 row blocks x
 * splits (B3: the same walk), decode block tables of at most 2^20 pages (A6: allocated whatever
 * their size), and, for decode, blocksparse, memeff and the softmax schedules,
 * counts whose bytes fit 64 bits (B2: they are summed unchecked), and for the other schedules at
 * most 2^22 key blocks (B4: their closed forms walk every key block).  Build with
 * -DFZ_CONTRACT_ONLY=0 to look for them again.
 */
#include <float.h>
#include <stdio.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attention_ref.h"
#include "fuzz_util.h"
#include <flashlab/heads.h>
#include <flashlab/machine.h>
#include <flashlab/masks.h>
#include <flashlab/ops.h>
#include <flashlab/schedule.h>
#include <flashlab/run.h>
#include <flashlab/blocksparse_mask.h>
#include <flashlab/decode.h>

#ifndef FZ_CONTRACT_ONLY
#define FZ_CONTRACT_ONLY 1
#endif

/* An int64 that favours the edges of the ranges the API checks. */
static int64_t pick_i64(fz_bytes *b)
{
    const unsigned k = (unsigned)fz_take(b, 1);
    const int64_t small = (int64_t)(int8_t)fz_take(b, 1);
    switch (k % 8) {
    case 0: return (int64_t)fz_take(b, 8);
    case 1: return small;
    case 2: return FL_SIZE_MAX - (small & 7);
    case 3: return INT64_MAX - (small & 7);
    case 4: return INT64_MIN + (small & 7);
    case 5: return (INT64_C(1) << (small & 62)) + (small >> 6);
    case 6: return (int64_t)(fz_take(b, 2) & 0xfff);
    default: return 1 + (small & 63);
    }
}

static double pick_double(fz_bytes *b)
{
    const unsigned k = (unsigned)fz_take(b, 1);
    switch (k % 6) {
    case 0: {
        uint64_t u = fz_take(b, 8);
        double d;
        memcpy(&d, &u, sizeof d);
        return d;
    }
    case 1: return NAN;
    case 2: return k & 8 ? INFINITY : -INFINITY;
    case 3: return (double)(int16_t)fz_take(b, 2) / 64.0;
    case 4: return k & 8 ? 1e308 : -1e308;
    default: return 0.0;
    }
}

/* ---- 0: fl_run on an arbitrary problem ----------------------------------------------------- */

static int small(int64_t v) { return v >= -1 && v <= 64; }

static void fuzz_run(fz_bytes *b)
{
    static int64_t cuq[17], cuk[17], table[64];
    fl_problem p = fl_problem_default();
    fl_kv_cache p_kv = fl_kv_cache_default();
    fl_block_sparsity p_bm = fl_block_sparsity_default();
    p.algo = (fl_algo)(int8_t)fz_take(b, 1);
    if (fz_take(b, 1) & 1) p.algo = (fl_algo)(p.algo & 7); /* mostly a real schedule */
    p.N = pick_i64(b), p.d = pick_i64(b), p.M = pick_i64(b);
    p.Br = fz_take(b, 1) & 1 ? pick_i64(b) : 0;
    p.Bc = fz_take(b, 1) & 1 ? pick_i64(b) : 0;
    p.seed = fz_take(b, 8);
    p.elem_bytes = (int)(int8_t)fz_take(b, 1);
    if (fz_take(b, 1) & 1) p.elem_bytes = 2;
    p.max_events = 1 + (int64_t)(fz_take(b, 2) % 20000);
    const unsigned v = (unsigned)fz_take(b, 2); /* which variant fields to set */
    if (v & 1) p.Nk = pick_i64(b);
    if (v & 2) p.causal = (fl_causal)(int8_t)fz_take(b, 1);
    if (v & 4) p.window_left = pick_i64(b), p.window_right = pick_i64(b);
    if (v & 8) p.batch = pick_i64(b);
    if (v & 16) p.heads = pick_i64(b), p.kv_heads = pick_i64(b);
    if (v & 32) p.pass = (fl_pass)(int8_t)fz_take(b, 1);
    if ((v & 64) && p.batch >= 1 && p.batch <= 16) {
        for (int64_t i = 0; i <= p.batch; i++) cuq[i] = fz_take(b, 1) & 1 ? pick_i64(b) : i * (int64_t)(fz_take(b, 1) & 15);
        p.cu_seqlens_q = cuq;
        p.cu_seqlens_q_len = fz_take(b, 1) & 1 ? (int64_t)(fz_take(b, 1) % 18) : p.batch + 1; /* lengths checked */
        if (v & 128) {
            for (int64_t i = 0; i <= p.batch; i++) cuk[i] = fz_take(b, 1) & 1 ? pick_i64(b) : i * (int64_t)(fz_take(b, 1) & 15);
            p.cu_seqlens_k = cuk;
            p.cu_seqlens_k_len = p.batch + 1;
        }
    }
    if (v & 256) p_kv.page_size = pick_i64(b), p_kv.pool_pages = fz_take(b, 1) & 1 ? pick_i64(b) : 0;
    if (v & 512) p_kv.page_seed = fz_take(b, 8);
    if (v & 1024) {
        p_kv.block_table_len = (int64_t)(fz_take(b, 1) % 65);
        for (int64_t i = 0; i < p_kv.block_table_len; i++) table[i] = fz_take(b, 1) & 1 ? pick_i64(b) : i;
        p_kv.block_table = table;
    }
    if (v & 2048) p_kv.splits = pick_i64(b);
    if (v & 4096) p_kv.pad_value = pick_double(b);
    if (v & 8192) p_bm.density = pick_double(b), p_bm.mask_seed = fz_take(b, 8);
    if (v & (256 | 512 | 1024 | 2048 | 4096)) p.kv_cache = &p_kv; /* a cache field given: a cache */
    if (v & 8192) p.block_mask = &p_bm;
#if FZ_CONTRACT_ONLY /* finding A5: a K cache (Nk or pool x page rows of d) that does not fit 64 bits is
                      * blamed on "tensor K" */
    if (p_kv.page_size > 0 && p_kv.pool_pages > 0) {
        const __int128 rows = (__int128)p_kv.pool_pages * p_kv.page_size; /* < 2^126 */
        if (rows > INT64_MAX / 4 || rows * (p.d > 0 ? p.d : 1) > INT64_MAX / 4) p_kv.pool_pages = 0;
    }
    if (p.algo == FL_ALGO_DECODE && (__int128)(p.Nk > 0 ? p.Nk : p.N) * (p.d > 0 ? p.d : 1) > INT64_MAX / 8) return;
#endif
#if FZ_CONTRACT_ONLY
    if (fl_schedule_get(p.algo) && !(fl_schedule_get(p.algo)->flags & FL_SCHED_OWN_PROBLEM)) { /* finding B4: the closed forms walk every key block (Nk / Bc),
                                    * which the events' lower bound (row blocks) does not bound */
        fl_blocks bl;
        const int64_t Nk = p.Nk ? p.Nk : p.N;
        if (fl_problem_check(&p) == FL_OK && fl_blocks_choose(&p, &bl) == FL_OK && fl_cdiv(Nk, bl.Bc) > (INT64_C(1) << 22))
            return;
    }
    if (fl_schedule_get(p.algo) && (fl_schedule_get(p.algo)->flags & FL_SCHED_OWN_PROBLEM)) {
        fl_blocks bl;
        fl_counts cf;
        if (fl_problem_check(&p) == FL_OK && fl_blocks_choose(&p, &bl) == FL_OK) {
            /* finding B1: blocksparse's closed form walks Tr x Tc mask blocks before max_events
             * is checked */
            if (p.algo == FL_ALGO_BLOCKSPARSE && (__int128)fl_cdiv(p.N, bl.Br) * fl_cdiv(p.N, bl.Bc) > (INT64_C(1) << 22))
                return;
            /* finding B3: decode's closed form walks row blocks x splits before max_events is
             * checked (its lower bound counts the row blocks only) */
            const int64_t Nk = p.Nk ? p.Nk : p.N;
            if (p.algo == FL_ALGO_DECODE &&
                (__int128)fl_cdiv(p.N, bl.Br) * (p_kv.splits < Nk ? p_kv.splits : Nk) > (INT64_C(1) << 22))
                return;
            /* finding A6: decode allocates its block table (8 bytes a page) whatever its size; a
             * window keeps the events few while the pages are 10^15 */
            if (p.algo == FL_ALGO_DECODE && p_kv.page_size > 0 && fl_cdiv(Nk, p_kv.page_size) > (INT64_C(1) << 20)) return;
            /* finding B2: the bytes of these schedules are summed without an overflow check */
            if (fl_cdiv(p.N, bl.Br) <= p.max_events && /* fl_run's own bound first, as it does */
                fl_closed_form(&p, &bl, &cf) == FL_OK && cf.events <= p.max_events && (__int128)cf.total * 8 > INT64_MAX)
                return;
        }
    }
#endif
    const int compute = (fz_take(b, 1) & 1) && small(p.N) && small(p.d) && small(p.Nk) && small(p.batch) &&
                        small(p.heads) && small(p_kv.page_size) && small(p_kv.pool_pages) && p.M <= 1 << 20;
    if (getenv("FUZZ_API_VERBOSE")) /* to turn a finding into a command line */
        fprintf(stderr,
                "fl_run: algo %d N %lld d %lld M %lld Br %lld Bc %lld eb %d max_events %lld Nk %lld causal %d "
                "window %lld,%lld batch %lld heads %lld kv %lld pass %d cu_q %d cu_k %d page %lld pool %lld "
                "seed %llu table %lld splits %lld pad %g density %g compute %d\n",
                (int)p.algo, (long long)p.N, (long long)p.d, (long long)p.M, (long long)p.Br, (long long)p.Bc,
                p.elem_bytes, (long long)p.max_events, (long long)p.Nk, (int)p.causal, (long long)p.window_left,
                (long long)p.window_right, (long long)p.batch, (long long)p.heads, (long long)p.kv_heads, (int)p.pass,
                p.cu_seqlens_q != NULL, p.cu_seqlens_k != NULL, (long long)p_kv.page_size, (long long)p_kv.pool_pages,
                (unsigned long long)p_kv.page_seed, (long long)p_kv.block_table_len, (long long)p_kv.splits, p_kv.pad_value,
                p_bm.density, compute);
    fl_result r;
    const fl_status s = fl_run(&p, compute ? FL_COMPUTE : FL_COUNT, NULL, NULL, &r);
    if (s) {
        if (compute && !isfinite(p_kv.pad_value) && s == FL_EINVAL && fl_last_error_raw()[0] != '{') {
            /* the poisoned padding, reported by design (docs/errors.md) */
            FZ_CHECK(strstr(fl_last_error_raw(), "({pad})") && !strchr(fl_last_error(), '\n'), "%s", fl_last_error());
            return;
        }
        fz_check_message(s);
        return;
    }
    FZ_CHECK(r.reads + r.writes == r.total, "reads %lld + writes %lld != total %lld", (long long)r.reads,
             (long long)r.writes, (long long)r.total);
    FZ_CHECK(r.total == r.closed.total && r.events == r.closed.events,
             "counted %lld (%lld events), closed form %lld (%lld events)", (long long)r.total, (long long)r.events,
             (long long)r.closed.total, (long long)r.closed.events);
    FZ_CHECK(r.events <= p.max_events, "events %lld > max %lld", (long long)r.events, (long long)p.max_events);
    FZ_CHECK(r.sram_peak <= p.M, "peak %lld > M %lld", (long long)r.sram_peak, (long long)p.M);
    int64_t bytes = 0;
    for (int i = 0; i < r.ntensors; i++) bytes += (r.t[i].reads + r.t[i].writes) * r.t[i].elem_bytes;
    FZ_CHECK(bytes == r.bytes, "bytes %lld != per-tensor sum %lld", (long long)r.bytes, (long long)bytes);
    if (compute && isfinite(p_kv.pad_value))
        FZ_CHECK(r.rel_err <= 1e-10, "%s: rel_err %g against the reference", fl_algo_name(p.algo), r.rel_err);
}

/* ---- 1: the machine -------------------------------------------------------------------------- */

typedef struct {
    int64_t reads, writes, used, peak, events;
    int ntensors;
    int64_t trows[FL_MAX_TENSORS], tcols[FL_MAX_TENSORS];
    int64_t treads[FL_MAX_TENSORS], twrites[FL_MAX_TENSORS];
    fl_buf *bufs[FL_MAX_BUFS];
    int64_t brows[FL_MAX_BUFS], bcols[FL_MAX_BUFS];
    int nbufs;
    int64_t trace_events;
    fl_machine *m;
} machine_model;

static void on_event(const fl_event *ev, void *ctx)
{
    machine_model *mm = ctx;
    mm->trace_events++;
    FZ_CHECK(ev->sram_used == fl_machine_sram_used(mm->m), "trace sram_used %lld", (long long)ev->sram_used);
    FZ_CHECK(ev->reads == fl_machine_reads(mm->m) && ev->writes == fl_machine_writes(mm->m), "trace totals");
    FZ_CHECK((ev->tensor != NULL) == (ev->kind == FL_EV_LOAD || ev->kind == FL_EV_STORE), "trace tensor name");
}

/* Whether a tile move is in bounds (the rule of machine.h), computed without overflow. */
static int tile_in(const machine_model *mm, int k, int t, int64_t r0, int64_t c0, int64_t nr, int64_t nc)
{
    if (t < 0 || t >= mm->ntensors || k < 0) return 0;
    return nr > 0 && nc > 0 && nr <= mm->brows[k] && nc <= mm->bcols[k] && r0 >= 0 && c0 >= 0 &&
           (__int128)r0 + nr <= mm->trows[t] && (__int128)c0 + nc <= mm->tcols[t];
}

static void check_model(const machine_model *mm)
{
    FZ_CHECK(fl_machine_reads(mm->m) == mm->reads && fl_machine_writes(mm->m) == mm->writes, "totals");
    FZ_CHECK(fl_machine_sram_used(mm->m) == mm->used, "sram used %lld, model %lld",
             (long long)fl_machine_sram_used(mm->m), (long long)mm->used);
    FZ_CHECK(fl_machine_sram_peak(mm->m) == mm->peak, "peak %lld, model %lld", (long long)fl_machine_sram_peak(mm->m),
             (long long)mm->peak);
    FZ_CHECK(fl_machine_events(mm->m) == mm->events, "events");
    FZ_CHECK(fl_tensor_count(mm->m) == mm->ntensors, "tensor count");
    for (int t = 0; t < mm->ntensors; t++) {
        const fl_tensor *T = fl_tensor_get(mm->m, t);
        FZ_CHECK(T && T->reads == mm->treads[t] && T->writes == mm->twrites[t], "tensor %d counters", t);
    }
    FZ_CHECK(fl_tensor_get(mm->m, mm->ntensors) == NULL && fl_tensor_get(mm->m, -1) == NULL, "tensor_get range");
}

static void fuzz_machine(fz_bytes *b)
{
    int64_t M = pick_i64(b);
#if FZ_CONTRACT_ONLY
    if (M > (INT64_C(1) << 56)) M = INT64_C(1) << 56; /* finding A1: the counters overflow */
#endif
    const int compute = (int)(fz_take(b, 1) & 1);
    machine_model mm;
    memset(&mm, 0, sizeof mm);
    mm.m = fl_machine_alloc(M, compute ? FL_COMPUTE : FL_COUNT, "fuzz");
    if (M <= 0) {
        FZ_CHECK(!mm.m, "a machine of M = %lld", (long long)M);
        return;
    }
    FZ_CHECK(mm.m && fl_machine_capacity(mm.m) == M && fl_computes(mm.m) == compute, "machine_alloc");
    const int64_t cap = compute ? 256 : INT64_MAX;
    for (int op = 0; op < 64 && b->n; op++) {
        const unsigned code = (unsigned)fz_take(b, 1);
        fl_status s;
        switch (code % 8) {
        case 0: { /* tensor_add */
            char name[40];
            const int len = (int)(fz_take(b, 1) % 39);
            for (int i = 0; i < len; i++) name[i] = (char)('A' + fz_take(b, 1) % 26);
            name[len] = 0;
            int64_t rows = pick_i64(b), cols = pick_i64(b);
            if (compute) rows = rows % (cap + 1), cols = cols % (cap + 1);
            const int eb = (int)(int8_t)fz_take(b, 1);
            int id = -7;
            int64_t n;
            const int ok = mm.ntensors < FL_MAX_TENSORS && rows > 0 && cols > 0 && fl_mul_ok(rows, cols, &n);
            s = fl_tensor_add(mm.m, name, rows, cols, eb, &id);
            FZ_CHECK((s == FL_OK) == ok, "tensor_add %lld x %lld: status %d (%s)", (long long)rows, (long long)cols, s,
                     fl_last_error());
            if (!ok) break;
            FZ_CHECK(id == mm.ntensors, "tensor id %d", id);
            mm.trows[id] = rows, mm.tcols[id] = cols;
            mm.ntensors++;
            fl_tensor *T = fl_tensor_get(mm.m, id);
            FZ_CHECK(!strncmp(T->name, name, FL_NAME_LEN - 1) && strlen(T->name) < FL_NAME_LEN, "tensor name");
            if (compute) {
                FZ_CHECK(T->data != NULL, "compute tensor without data");
                for (int64_t i = 0; i < rows * cols; i++) T->data[i] = (double)i + 0.5;
            } else {
                FZ_CHECK(T->data == NULL, "count tensor with data");
            }
            break;
        }
        case 1: { /* sram_alloc */
            int64_t rows = pick_i64(b), cols = pick_i64(b);
            if (compute) rows = rows % 65, cols = cols % 65;
            fl_buf *buf = NULL;
            int64_t n, used;
            int slot = -1, nlive = 0; /* a freed entry of the model is reused first */
            for (int i = 0; i < mm.nbufs; i++) {
                if (!mm.bufs[i] && slot < 0) slot = i;
                nlive += mm.bufs[i] != NULL;
            }
            const int ok = rows > 0 && cols > 0 && fl_mul_ok(rows, cols, &n) && fl_add_ok(mm.used, n, &used) &&
                           used <= M && nlive < FL_MAX_BUFS;
            s = fl_sram_alloc(mm.m, "buf", rows, cols, &buf);
            FZ_CHECK((s == FL_OK) == ok, "sram_alloc %lld x %lld (used %lld, M %lld): status %d (%s)", (long long)rows,
                     (long long)cols, (long long)mm.used, (long long)M, s, fl_last_error());
            if (!ok) {
                FZ_CHECK(s == FL_EINVAL || s == FL_ECAPACITY, "sram_alloc status %d", s);
                break;
            }
            FZ_CHECK(buf && buf->rows == rows && buf->cols == cols && buf->live && (buf->x != NULL) == compute, "buffer");
            if (slot < 0) slot = mm.nbufs++;
            mm.bufs[slot] = buf, mm.brows[slot] = rows, mm.bcols[slot] = cols;
            mm.used = used;
            if (used > mm.peak) mm.peak = used;
            break;
        }
        case 2: { /* sram_free: a live buffer, or NULL */
            const int k = mm.nbufs ? (int)(fz_take(b, 1) % (unsigned)(mm.nbufs + 1)) : 0;
            if (k == mm.nbufs || !mm.bufs[k]) {
                fl_sram_free(mm.m, NULL);
                break;
            }
            fl_sram_free(mm.m, mm.bufs[k]);
            mm.used -= mm.brows[k] * mm.bcols[k];
            mm.bufs[k] = NULL;
            break;
        }
        case 3:
        case 4: { /* load, store */
            const int store = code % 8 == 4;
            int k = mm.nbufs ? (int)(fz_take(b, 1) % (unsigned)(mm.nbufs + 1)) : -1;
            if (k >= 0 && (k == mm.nbufs || !mm.bufs[k])) k = -1;
            const int t = fz_take(b, 1) & 1 ? (int)(int32_t)fz_take(b, 4) : (int)(fz_take(b, 1) % (mm.ntensors + 1));
            int64_t r0 = pick_i64(b), c0 = pick_i64(b), nr = pick_i64(b), nc = pick_i64(b);
            fl_buf *buf = k >= 0 ? mm.bufs[k] : NULL;
            const int ok = tile_in(&mm, k, t, r0, c0, nr, nc);
            s = store ? fl_store(mm.m, buf, t, r0, c0, nr, nc) : fl_load(mm.m, buf, t, r0, c0, nr, nc);
            FZ_CHECK((s == FL_OK) == ok, "%s: status %d (%s)", store ? "store" : "load", s, fl_last_error());
            if (!ok) {
                FZ_CHECK(s == FL_EBOUNDS, "bad tile: status %d", s);
                break;
            }
            const int64_t n = nr * nc;
            mm.events++;
            if (store) mm.writes += n, mm.twrites[t] += n;
            else mm.reads += n, mm.treads[t] += n;
            if (compute) {
                const fl_tensor *T = fl_tensor_get(mm.m, t);
                for (int64_t r = 0; r < nr; r++)
                    for (int64_t c = 0; c < nc; c++)
                        FZ_CHECK(buf->x[r * buf->cols + c] == T->data[(r0 + r) * T->cols + c0 + c], "tile values");
            }
            break;
        }
        case 5:
            fl_machine_set_trace(mm.m, fz_take(b, 1) & 1 ? on_event : NULL, &mm);
            break;
        case 6:
            fl_machine_reset_peak(mm.m);
            mm.peak = mm.used;
            break;
        default: break;
        }
        check_model(&mm);
    }
    fl_machine_free(mm.m);
    fl_machine_free(NULL);
}

/* ---- 2: online softmax ----------------------------------------------------------------------- */

static void fuzz_osm(fz_bytes *b)
{
    enum { NMAX = 64, DVMAX = 8 };
    double s[NMAX], V[NMAX * (DVMAX + 3)], u[DVMAX], out[DVMAX], tiled[DVMAX], p[NMAX], ref[DVMAX];
    const int64_t n = (int64_t)(fz_take(b, 1) % (NMAX + 1)), dv = (int64_t)(fz_take(b, 1) % (DVMAX + 1));
    const int64_t ldv = dv + (int64_t)(fz_take(b, 1) % 4);
    for (int64_t j = 0; j < n; j++) s[j] = pick_double(b);
    for (int64_t k = 0; k < n * ldv; k++) V[k] = fz_take(b, 1) & 1 ? pick_double(b) : (double)(int8_t)fz_take(b, 1);
    double m = fz_take(b, 1) & 1 ? -INFINITY : pick_double(b), l = fz_take(b, 1) & 1 ? 0.0 : pick_double(b);
    for (int64_t c = 0; c < dv; c++) u[c] = pick_double(b);
    int masked = 1;
    for (int64_t j = 0; j < n; j++) masked &= s[j] == -INFINITY;
    const double m0 = m, l0 = l;
    const double a = fl_osm_step(&m, &l, u, dv, s, n, V, ldv, fz_take(b, 1) & 1 ? p : NULL);
    if (masked) /* an all-masked (or empty) tile changes nothing */
        FZ_CHECK(a == 1.0 && (m == m0 || (isnan(m) && isnan(m0))) && (l == l0 || (isnan(l) && isnan(l0))),
                 "masked tile changed the state");
    fl_osm_finish(l, u, dv, out);
    fl_osm_finish(l, u, dv, u); /* out may alias u */
    for (int64_t c = 0; c < dv; c++)
        FZ_CHECK(out[c] == u[c] || (isnan(out[c]) && isnan(u[c])), "finish in place differs");
    /* tiled: bad sizes refused; a single tile equals the step from an empty state */
    const int64_t tile = pick_i64(b);
    if (ldv != dv) return; /* fl_osm_tiled reads rows of dv */
    const fl_status st = fl_osm_tiled(s, n, V, dv, tile, tiled);
    if (tile < 1 || n < 1 || dv < 1) {
        FZ_CHECK(st == FL_EINVAL, "osm_tiled(n %lld, dv %lld, tile %lld): status %d", (long long)n, (long long)dv,
                 (long long)tile, st);
        return;
    }
    FZ_CHECK(st == FL_OK, "osm_tiled: %s", fl_last_error());
    if (tile >= n) {
        double m1 = -INFINITY, l1 = 0.0, u1[DVMAX] = {0}, o1[DVMAX];
        fl_osm_step(&m1, &l1, u1, dv, s, n, V, dv, NULL);
        fl_osm_finish(l1, u1, dv, o1);
        for (int64_t c = 0; c < dv; c++)
            FZ_CHECK(o1[c] == tiled[c] || (isnan(o1[c]) && isnan(tiled[c])), "one tile %g vs step %g", tiled[c], o1[c]);
    }
    fl_ref_softmax_row(s, n, V, dv, ref);
}

/* ---- 3: masks -------------------------------------------------------------------------------- */

/* K1, independently: query i keeps key j. */
static int keep_rule(int64_t Nq, int64_t Nk, int causal, int64_t L, int64_t R, int64_t i, int64_t j)
{
    const __int128 off = (__int128)Nk - Nq, dj = (__int128)j - i;
    if (causal == FL_CAUSAL_TOP_LEFT && dj > 0) return 0;
    if (causal == FL_CAUSAL_BOTTOM_RIGHT && dj > off) return 0;
    if (R >= 0 && dj > off + R) return 0;
    if (L >= 0 && dj < off - L) return 0;
    return 1;
}

static int64_t in_range(fz_bytes *b, int64_t n) /* an index in [0, n) */
{
    const uint64_t u = fz_take(b, 8);
    switch (fz_take(b, 1) % 3) {
    case 0: return 0;
    case 1: return n - 1;
    default: return (int64_t)(u % (uint64_t)n);
    }
}

static void fuzz_mask(fz_bytes *b)
{
    int64_t Nq = pick_i64(b), Nk = pick_i64(b), L = pick_i64(b), R = pick_i64(b);
    const int causal = (int)(int8_t)fz_take(b, 1) % 4;
#if FZ_CONTRACT_ONLY
    if (Nq > FL_SIZE_MAX) Nq = FL_SIZE_MAX; /* finding A3: Nq + Nk overflows in fl_mask_init */
    if (Nk > FL_SIZE_MAX) Nk = FL_SIZE_MAX;
#endif
    fl_mask mk;
    const fl_status s = fl_mask_init(&mk, Nq, Nk, (fl_causal)causal, L, R);
    const int ok = Nq >= 1 && Nk >= 1 && causal >= 0 && causal <= 2 && L >= -1 && R >= -1;
    FZ_CHECK((s == FL_OK) == ok, "mask_init(%lld, %lld, %d, %lld, %lld): status %d (%s)", (long long)Nq, (long long)Nk,
             causal, (long long)L, (long long)R, s, fl_last_error());
    if (!ok) {
        fz_check_message(s);
        return;
    }
    FZ_CHECK(fl_mask_is_dense(&mk) == (causal == 0 && L == -1 && R == -1), "is_dense");
    for (int q = 0; q < 8; q++) {
        const int64_t i = in_range(b, Nq), j = in_range(b, Nk);
        FZ_CHECK(fl_mask_keep(&mk, i, j) == keep_rule(Nq, Nk, causal, L, R, i, j), "keep(%lld, %lld)", (long long)i,
                 (long long)j);
        int64_t lo, hi;
        fl_mask_row_range(&mk, i, &lo, &hi);
        if (lo <= hi) {
            FZ_CHECK(lo >= 0 && hi < Nk && keep_rule(Nq, Nk, causal, L, R, i, lo) && keep_rule(Nq, Nk, causal, L, R, i, hi),
                     "row range ends");
            FZ_CHECK(lo == 0 || !keep_rule(Nq, Nk, causal, L, R, i, lo - 1), "row range starts late");
            FZ_CHECK(hi == Nk - 1 || !keep_rule(Nq, Nk, causal, L, R, i, hi + 1), "row range ends early");
        } else {
            FZ_CHECK(!keep_rule(Nq, Nk, causal, L, R, i, j), "an empty row keeps key %lld", (long long)j);
        }
        /* a tile of at most 8 x 8 inside the matrix, classified by brute force */
        const int64_t nr = 1 + (int64_t)(fz_take(b, 1) % (uint64_t)(Nq - i < 8 ? Nq - i : 8));
        const int64_t nc = 1 + (int64_t)(fz_take(b, 1) % (uint64_t)(Nk - j < 8 ? Nk - j : 8));
        int any = 0, all = 1;
        for (int64_t r = 0; r < nr; r++)
            for (int64_t c = 0; c < nc; c++) {
                const int k = keep_rule(Nq, Nk, causal, L, R, i + r, j + c);
                any |= k, all &= k;
            }
        const fl_tile_kind want = !any ? FL_TILE_EMPTY : all ? FL_TILE_FULL : FL_TILE_PARTIAL;
        FZ_CHECK(fl_mask_tile(&mk, i, nr, j, nc) == want, "tile (%lld, %lld) %lldx%lld", (long long)i, (long long)j,
                 (long long)nr, (long long)nc);
    }
    if (Nq <= 64 && Nk <= 64) { /* block ranges, by brute force over the whole matrix */
        const int64_t B = 1 + (int64_t)(fz_take(b, 1) % 16), r0 = in_range(b, Nq);
        const int64_t nr = 1 + (int64_t)(fz_take(b, 1) % (uint64_t)(Nq - r0));
        int64_t j0, j1, lo = -1, hi = -1;
        fl_mask_block_range(&mk, r0, nr, B, &j0, &j1);
        for (int64_t i = r0; i < r0 + nr; i++)
            for (int64_t j = 0; j < Nk; j++)
                if (keep_rule(Nq, Nk, causal, L, R, i, j)) {
                    if (lo < 0 || j / B < lo) lo = j / B;
                    if (j / B + 1 > hi) hi = j / B + 1;
                }
        if (lo < 0) FZ_CHECK(j0 >= j1, "block range of a masked row block not empty");
        else FZ_CHECK(j0 == lo && j1 == hi, "block range [%lld, %lld), want [%lld, %lld)", (long long)j0, (long long)j1,
                      (long long)lo, (long long)hi);
        const int64_t c0 = in_range(b, Nk), nc = 1 + (int64_t)(fz_take(b, 1) % (uint64_t)(Nk - c0));
        int64_t i0, i1;
        lo = hi = -1;
        fl_mask_row_block_range(&mk, c0, nc, B, &i0, &i1);
        for (int64_t i = 0; i < Nq; i++)
            for (int64_t j = c0; j < c0 + nc; j++)
                if (keep_rule(Nq, Nk, causal, L, R, i, j)) {
                    if (lo < 0 || i / B < lo) lo = i / B;
                    if (i / B + 1 > hi) hi = i / B + 1;
                }
        if (lo < 0) FZ_CHECK(i0 >= i1, "row block range of a masked key block not empty");
        else FZ_CHECK(i0 == lo && i1 == hi, "row block range [%lld, %lld), want [%lld, %lld)", (long long)i0,
                      (long long)i1, (long long)lo, (long long)hi);
    }
}

/* ---- 4: heads and cu_seqlens ------------------------------------------------------------------ */

static void fuzz_heads(fz_bytes *b)
{
    const int64_t Hq = pick_i64(b), Hkv = pick_i64(b);
    const fl_status s = fl_heads_check(Hq, Hkv);
    const int ok = Hq >= 1 && Hkv >= 1 && Hq % Hkv == 0;
    FZ_CHECK((s == FL_OK) == ok, "heads_check(%lld, %lld): status %d", (long long)Hq, (long long)Hkv, s);
    if (!ok) fz_check_message(s);
    else {
        const int64_t h = in_range(b, Hq), kv = fl_kv_head(h, Hq, Hkv);
        FZ_CHECK(kv >= 0 && kv < Hkv && kv == h / (Hq / Hkv), "kv_head(%lld) = %lld", (long long)h, (long long)kv);
    }
    int64_t n = (int64_t)(fz_take(b, 1) % 33), batch = fz_take(b, 1) & 1 ? n - 1 : pick_i64(b);
    const int64_t total = fz_take(b, 1) & 1 ? pick_i64(b) : -1;
#if FZ_CONTRACT_ONLY
    if (n < 1) n = 1;                                            /* finding A4: n = 0 reads cu[0] */
    if (batch == INT64_MAX || batch == INT64_MIN) batch = n - 1; /* finding A4: batch + 1 overflows */
#endif
    int64_t *cu = malloc((size_t)(n ? n : 1) * sizeof *cu);
    int64_t acc = 0;
    for (int64_t i = 0; i < n; i++) {
        acc += (int64_t)(fz_take(b, 1) % 5);
        cu[i] = fz_take(b, 1) % 8 == 0 ? pick_i64(b) : (i == 0 ? 0 : acc);
    }
    const int64_t tot = total == -1 && n ? cu[n - 1] : total;
    int good = (__int128)batch + 1 == n && n >= 1 && cu[0] == 0 && cu[n - 1] == tot;
    for (int64_t i = 1; i < n && good; i++) good = cu[i] >= cu[i - 1];
    const fl_status c = fl_cu_seqlens_check("--cu-seqlens-q", cu, n, batch, tot);
    FZ_CHECK((c == FL_OK) == good, "cu_seqlens_check(n %lld, batch %lld): status %d (%s)", (long long)n, (long long)batch,
             c, fl_last_error());
    if (!good) fz_check_message(c);
    free(cu);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    fz_bytes b = {data + 1, size - 1};
    switch (data[0] % 5) {
    case 0: fuzz_run(&b); break;
    case 1: fuzz_machine(&b); break;
    case 2: fuzz_osm(&b); break;
    case 3: fuzz_mask(&b); break;
    default: fuzz_heads(&b); break;
    }
    return 0;
}
