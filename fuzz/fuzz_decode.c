/* fuzz_decode.c: block-table validation and the variant schedules (decode over a
 * contiguous or paged KV cache with split-KV, block-sparse, memory-efficient, softmax alone) on
 * random small configurations in compute mode, checked against the reference.
 *
 * Input bytes pick: the schedule, Nq, Nk, d, M, Br, Bc, causal corner; for decode the page size,
 * pool, splits, page seed, and optionally an explicit block table (entries from the input, so
 * out-of-pool, negative and repeated pages occur) of the right or a wrong length; for
 * blocksparse the density and mask seed.
 *
 * Oracles:
 *  - fl_problem_check accepts an explicit block table exactly when an independent validator
 *    accepts it (ceil(Nk / P) entries, each in [0, pool), distinct; pool >= pages used);
 *  - every error is FL_EINVAL/FL_ECAPACITY/FL_EOVERFLOW with one line starting with "--";
 *  - a run's counts equal the closed form; SRAM peak <= M;
 *  - the output matches the reference to 1e-12 relative.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_util.h"
#include "run.h"
#include "schedule.h"
#include "blocksparse_mask.h"
#include "decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    enum { TMAX = 48 };
    fl_algo algos[FL_ALGO_MAX]; /* the schedules with a problem of their own, from the registry */
    const int nalgos = fl_algos_with(FL_SCHED_OWN_PROBLEM, algos);
    fz_bytes in = {data, size};
    fl_problem p = fl_problem_default();
    fl_kv_cache p_kv = fl_kv_cache_default();
    fl_block_sparsity p_bm = fl_block_sparsity_default();
    int64_t table[TMAX];
    p.algo = algos[fz_take(&in, 1) % nalgos];
    const unsigned f = fz_take(&in, 1);
    p.N = 1 + fz_take(&in, 1) % 24;
    p.Nk = 1 + fz_take(&in, 1) % 96;
    p.d = 1 + fz_take(&in, 1) % 16;
    p.M = 1 + (fz_take(&in, 1) | fz_take(&in, 1) << 8) % 8000;
    p.Br = fz_take(&in, 1) % 9;
    p.Bc = fz_take(&in, 1) % 17;
    p.seed = fz_take(&in, 1) | (uint64_t)fz_take(&in, 1) << 8;
    p.max_events = 20000;
    int table_valid = 1, has_table = 0;
    if (p.algo == FL_ALGO_DECODE) {
        p.kv_cache = &p_kv;
        p.causal = (fl_causal)(f % 3);
        if (f & 4) { /* a paged cache */
            p_kv.page_size = 1 + fz_take(&in, 1) % 12;
            const int64_t used = (p.Nk + p_kv.page_size - 1) / p_kv.page_size;
            p_kv.pool_pages = (f & 8) ? used + (int64_t)(fz_take(&in, 1) % 8) - 1 : 0; /* sometimes one short */
            const int64_t pool = p_kv.pool_pages ? p_kv.pool_pages : 2 * used;
            p_kv.page_seed = (f & 16) ? fz_take(&in, 1) : 0;
            if ((f & 32) && used <= TMAX) { /* an explicit table, perhaps broken */
                has_table = 1;
                p_kv.block_table_len = used + ((f & 64) ? (int64_t)(fz_take(&in, 1) % 3) - 1 : 0);
                if (p_kv.block_table_len < 1 || p_kv.block_table_len > TMAX) p_kv.block_table_len = used;
                for (int64_t k = 0; k < p_kv.block_table_len; k++) {
                    const unsigned v = fz_take(&in, 1);
                    table[k] = (v & 0x80) ? (int64_t)(v & 0x7f) - 2 : (k * 5 + v) % (pool ? pool : 1);
                }
                p_kv.block_table = table;
                table_valid = p_kv.block_table_len == used && pool >= used;
                for (int64_t k = 0; table_valid && k < used; k++) {
                    table_valid = table[k] >= 0 && table[k] < pool;
                    for (int64_t q = 0; table_valid && q < k; q++) table_valid = table[q] != table[k];
                }
            }
            if (!has_table) table_valid = pool >= used;
            if (f & 128) p_kv.pad_value = NAN; /* padding rows beyond Nk poisoned */
        }
        p_kv.splits = 1 + fz_take(&in, 1) % 6;
    } else if (p.algo == FL_ALGO_BLOCKSPARSE) {
        p.block_mask = &p_bm;
        p.Nk = 0;
        p_bm.density = (1 + fz_take(&in, 1) % 16) / 16.0;
        p_bm.mask_seed = 1 + fz_take(&in, 1);
    } else if (p.algo == FL_ALGO_MEMEFF) {
        p.Nk = 0;
    }

    fl_status s = fl_problem_check(&p);
    if (p.algo == FL_ALGO_DECODE && p_kv.page_size)
        FZ_CHECK((s == FL_OK) == table_valid, "block table: fl_problem_check %d, the rules say %s: %s",
                 s, table_valid ? "valid" : "invalid", fl_last_error());
    if (s) return fz_check_message(s), 0;

    fl_result r;
    s = fl_run(&p, FL_COMPUTE, NULL, NULL, &r);
    if (s) {
        /* a NaN pad is refused by the machine, naming the page and row (the nan-padding lesson) */
        if (isnan(p_kv.pad_value)) return 0;
        return fz_check_message(s), 0;
    }
    FZ_CHECK(r.reads == r.closed.reads && r.writes == r.closed.writes && r.events == r.closed.events,
             "%s: counted %lld/%lld/%lld events, closed form %lld/%lld/%lld", fl_algo_name(p.algo),
             (long long)r.reads, (long long)r.writes, (long long)r.events, (long long)r.closed.reads,
             (long long)r.closed.writes, (long long)r.closed.events);
    FZ_CHECK(r.sram_peak <= p.M, "SRAM peak %lld > M %lld", (long long)r.sram_peak, (long long)p.M);
    FZ_CHECK(r.rel_err <= 1e-12, "%s: rel err %g (N %lld, Nk %lld, d %lld, P %lld, splits %lld)",
             fl_algo_name(p.algo), r.rel_err, (long long)p.N, (long long)p.Nk, (long long)p.d,
             (long long)p_kv.page_size, (long long)p_kv.splits);
    return 0;
}
