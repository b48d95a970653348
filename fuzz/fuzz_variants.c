/* fuzz_variants.c: cu_seqlens validation and the variant schedules (masks, windows, heads/GQA,
 * varlen, backward) on random small configurations in compute mode, checked against the
 * reference.
 *
 * Input bytes pick: schedule, pass, causal corner, window, batch and per-sequence query/key
 * lengths (0..12, so empty sequences occur), optionally one corrupted cu_seqlens entry or a
 * wrong token count, d, M, Br, Bc, heads, kv_heads (not always a divisor), the seed.
 *
 * Oracles:
 *  - fl_problem_check accepts exactly the problems an independent validator of the varlen rule
 *    (docs/model.md V1: start at 0, nondecreasing, end at the token count, a sequence empty on
 *    both sides or neither) and the heads rule (H1: kv_heads divides heads) accepts;
 *  - every error is FL_EINVAL/FL_ECAPACITY/FL_EOVERFLOW with one line starting with "--";
 *  - a run's counts equal the closed form; SRAM peak <= M;
 *  - O, and dQ, dK, dV for a backward, match the reference to 1e-12 relative.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_util.h"
#include "run.h"

/* The varlen rule, written again from docs/model.md V1. */
static int cu_valid(const int64_t *cu, int64_t batch, int64_t total)
{
    if (cu[0] != 0 || cu[batch] != total) return 0;
    for (int64_t b = 0; b < batch; b++)
        if (cu[b + 1] < cu[b]) return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    enum { BMAX = 4 };
    fz_bytes in = {data, size};
    fl_problem p = fl_problem_default();
    int64_t cq[BMAX + 1], ck[BMAX + 1];
    const unsigned a = fz_take(&in, 1), f = fz_take(&in, 1);
    p.algo = (fl_algo)(a % (FL_ALGO_FLASH2_GQA + 1)); /* the schedules with masks, heads, varlen, bwd */
    p.pass = (f & 3) == 0 ? FL_PASS_FWD : (f & 3) == 1 ? FL_PASS_BWD : FL_PASS_FWD_BWD;
    p.causal = (fl_causal)((f >> 2) % 3);
    const int varlen = (f >> 4) & 1, corrupt = (f >> 5) & 1, window = (f >> 6) & 1;
    p.d = 1 + fz_take(&in, 1) % 12;
    p.M = 1 + (fz_take(&in, 1) | fz_take(&in, 1) << 8) % 6000;
    p.Br = fz_take(&in, 1) % 10;
    p.Bc = fz_take(&in, 1) % 10;
    p.heads = 1 + fz_take(&in, 1) % 4;
    p.kv_heads = fz_take(&in, 1) % 5; /* 0 = heads */
    if (window) {
        p.window_left = (int64_t)(fz_take(&in, 1) % 8) - 1;
        p.window_right = (int64_t)(fz_take(&in, 1) % 8) - 1;
    }
    int valid = p.kv_heads == 0 || p.heads % p.kv_heads == 0;
    if (varlen) {
        p.batch = 1 + fz_take(&in, 1) % BMAX;
        cq[0] = ck[0] = 0;
        for (int64_t b = 0; b < p.batch; b++) {
            int64_t nq = fz_take(&in, 1) % 13, nk = fz_take(&in, 1) % 13;
            if ((nq == 0) != (nk == 0)) nq = nk = 0; /* mostly valid; corruption below */
            cq[b + 1] = cq[b] + nq;
            ck[b + 1] = ck[b] + nk;
        }
        p.N = cq[p.batch] ? cq[p.batch] : 1;
        p.Nk = ck[p.batch] ? ck[p.batch] : 1;
        if (corrupt) { /* one entry moved, or a wrong token count */
            const unsigned which = fz_take(&in, 1), delta = fz_take(&in, 1);
            int64_t *cu = (which & 1) ? ck : cq;
            cu[(which >> 1) % (p.batch + 1)] += (int64_t)(delta % 7) - 3;
            if (which & 0x80) p.N += 1;
        }
        p.cu_seqlens_q = cq;
        p.cu_seqlens_q_len = p.batch + 1;
        p.cu_seqlens_k = (f & 0x80) ? ck : NULL;
        p.cu_seqlens_k_len = p.cu_seqlens_k ? p.batch + 1 : 0;
        const int64_t *kk = p.cu_seqlens_k ? ck : cq;
        const int64_t Nk = p.cu_seqlens_k ? p.Nk : p.N;
        if (!p.cu_seqlens_k) p.Nk = 0;
        valid = valid && cu_valid(cq, p.batch, p.N) && cu_valid(kk, p.batch, Nk);
        for (int64_t b = 0; valid && b < p.batch; b++)
            valid = (cq[b + 1] == cq[b]) == (kk[b + 1] == kk[b]);
    } else {
        p.batch = 1 + fz_take(&in, 1) % 3;
        p.N = 1 + fz_take(&in, 1) % 40;
        p.Nk = fz_take(&in, 1) % 40; /* 0 = N */
    }
    p.seed = fz_take(&in, 1) | (uint64_t)fz_take(&in, 1) << 8;
    p.max_events = 20000;

    fl_status s = fl_problem_check(&p);
    FZ_CHECK((s == FL_OK) == valid, "fl_problem_check says %d, the rules say %s: %s", s,
             valid ? "valid" : "invalid", fl_last_error());
    if (s) return fz_check_message(s), 0;

    fl_result r;
    s = fl_run(&p, FL_COMPUTE, NULL, NULL, &r);
    if (s) return fz_check_message(s), 0;
    FZ_CHECK(r.reads == r.closed.reads && r.writes == r.closed.writes && r.events == r.closed.events,
             "%s: counted %lld/%lld/%lld events, closed form %lld/%lld/%lld", fl_algo_name(p.algo),
             (long long)r.reads, (long long)r.writes, (long long)r.events, (long long)r.closed.reads,
             (long long)r.closed.writes, (long long)r.closed.events);
    FZ_CHECK(r.sram_peak <= p.M, "SRAM peak %lld > M %lld", (long long)r.sram_peak, (long long)p.M);
    FZ_CHECK(r.rel_err <= 1e-12, "%s pass %d: O rel err %g", fl_algo_name(p.algo), p.pass, r.rel_err);
    if (p.pass != FL_PASS_FWD)
        FZ_CHECK(r.dq_rel_err <= 1e-12 && r.dk_rel_err <= 1e-12 && r.dv_rel_err <= 1e-12,
                 "%s: gradient rel errs %g %g %g", fl_algo_name(p.algo), r.dq_rel_err, r.dk_rel_err,
                 r.dv_rel_err);
    return 0;
}
