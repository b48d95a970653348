/* examples.c: worked examples from shared/seeds (see examples.h). */
#include <flashlab/examples.h>

#include <math.h>
#include <string.h>

#include "attention_ref.h"
#include <flashlab/ops.h>
#include <flashlab/run.h>
#include <flashlab/blocksparse_mask.h>
#include <flashlab/decode.h>

/* Prints one row's online softmax tile by tile (docs/model.md eq. (OS)): m, l, the numerator u
 * and the rescale factor after each tile; checks the result against the full softmax and the
 * expected values given by the seed to the printed precision.  Returns 1 on agreement. */
static int walk_two_tiles(FILE *out, const char *title, const double *s, const double *V,
                          int n, int tile, const double *expect, int digits)
{
    enum { DV = 2 };
    double m = -INFINITY, l = 0.0, u[DV] = {0, 0}, o[DV], full[DV];
    fprintf(out, "%s\n  scores [", title);
    for (int j = 0; j < n; j++) fprintf(out, "%s%g", j ? ", " : "", s[j]);
    fprintf(out, "], values [");
    for (int j = 0; j < n; j++) fprintf(out, "%s[%g, %g]", j ? ", " : "", V[j * DV], V[j * DV + 1]);
    fprintf(out, "], tiles of %d\n", tile);
    for (int j0 = 0, k = 1; j0 < n; j0 += tile, k++) {
        const int nt = n - j0 < tile ? n - j0 : tile;
        const double mold = m;
        const double a = fl_osm_step(&m, &l, u, DV, s + j0, nt, V + j0 * DV, DV, NULL);
        fprintf(out, "  tile %d: m = %.6f, l = %.6f, u = [%.6f, %.6f], rescale e^(m_old - m) = ",
                k, m, l, u[0], u[1]);
        if (mold == -INFINITY) fprintf(out, "- (first tile)\n");
        else fprintf(out, "%.6f\n", a);
    }
    fl_osm_finish(l, u, DV, o);
    fl_ref_softmax_row(s, n, V, DV, full);
    const double tol = 0.5 * pow(10.0, -digits);
    int ok = 1;
    for (int c = 0; c < DV; c++)
        ok &= fabs(o[c] - full[c]) <= 1e-12 * fmax(1.0, fabs(full[c])) && fabs(o[c] - expect[c]) <= tol;
    fprintf(out, "  result O = u / l = [%.*f, %.*f]; full softmax = [%.*f, %.*f]; seed says [%.*f, %.*f]: %s\n\n",
            digits, o[0], digits, o[1], digits, full[0], digits, full[1], digits, expect[0], digits,
            expect[1], ok ? "PASS" : "FAIL");
    return ok;
}

static int ex_two_tile(FILE *out)
{
    /* handbook notes: one row s = [2, 1, 4, 3] with value rows [1,0], [0,1], [2,0], [0,2] */
    const double s1[] = {2, 1, 4, 3}, v1[] = {1, 0, 0, 1, 2, 0, 0, 2};
    const double e1[] = {1.37497284, 0.50582424};
    /* deep dive: scores [1, 2, 3, 0] with values [[10,0],[0,10],[5,5],[9,1]] */
    const double s2[] = {1, 2, 3, 0}, v2[] = {10, 0, 0, 10, 5, 5, 9, 1};
    const double e2[] = {4.379542, 5.620458};
    int ok = walk_two_tiles(out, "Handbook: two tiles, a larger maximum in the second", s1, v1, 4, 2, e1, 8);
    ok &= walk_two_tiles(out, "Deep dive: two tiles by hand (the 1/sqrt(d) scale omitted)", s2, v2, 4, 2, e2, 6);
    fprintf(out, "two-tile: %s\n", ok ? "PASS" : "FAIL");
    return ok;
}

/* deep dive, "Paged KV is a lookup": the final, partially used page can be loaded past the
 * sequence (whole tiles); masking those scores does not make NaN safe, since 0 * NaN = NaN.
 * Part 1 by hand (a dense P V over the last tile, as an MMA does); part 2 on the machine. */
static int ex_nan_padding(FILE *out)
{
    enum { T = 4, DV = 2 };
    const double s[T] = {1.0, 0.0, -INFINITY, -INFINITY}; /* keys 8, 9; rows 2, 3 are padding */
    const double V[T * DV] = {10, 0, 0, 10, NAN, NAN, 0, 0};
    double pr[T], l = 0.0, naive[DV] = {0, 0}, skip[DV] = {0, 0};
    fprintf(out, "A cache of Nk = 10 keys in pages of 4 rows, block table [5, 2, 7]: logical page 2 "
                 "(physical 7)\nholds keys 8, 9 and two padding rows, which a whole-tile load "
                 "(tile = page) reads too.\n\n"
                 "1. The last tile by hand (one query, the 1/sqrt(d) scale omitted):\n"
                 "   scores [1, 0, masked, masked] -> -inf;  P = exp(s - 1) = [1, e^-1, 0, 0]\n"
                 "   value rows [10, 0], [0, 10], [NaN, NaN] (padding row 2), [0, 0] (padding row 3)\n");
    for (int j = 0; j < T; j++) {
        pr[j] = exp(s[j] - 1.0);
        l += pr[j];
    }
    for (int j = 0; j < T; j++)
        for (int c = 0; c < DV; c++) {
            naive[c] += pr[j] * V[j * DV + c] / l;               /* dense: 0 * NaN = NaN */
            if (s[j] != -INFINITY) skip[c] += pr[j] * V[j * DV + c] / l; /* masked skipped */
        }
    const double e1 = exp(-1.0), want[DV] = {10.0 / (1.0 + e1), 10.0 * e1 / (1.0 + e1)};
    fprintf(out, "   naive O = P V / l (every row, masked ones times 0) = [%g, %g]\n", naive[0], naive[1]);
    fprintf(out, "   skipping masked rows (or finite padding)          = [%.6f, %.6f]\n\n", skip[0], skip[1]);
    int ok = isnan(naive[0]) && isnan(naive[1]) && fabs(skip[0] - want[0]) < 1e-12 &&
             fabs(skip[1] - want[1]) < 1e-12;

    fl_problem p = fl_problem_default();
    fl_kv_cache p_kv = fl_kv_cache_default();
    p.kv_cache = &p_kv;
    const int64_t table[] = {5, 2, 7};
    fl_result r;
    p.algo = FL_ALGO_DECODE;
    p.N = 1;
    p.Nk = 10;
    p.d = 8;
    p.M = 2000;
    p_kv.page_size = 4;
    p_kv.pool_pages = 8;
    p_kv.block_table = table;
    p_kv.block_table_len = 3;
    p_kv.pad_value = NAN;
    fprintf(out, "2. The machine: flashlab run --algo decode --N 1 --Nk 10 --d 8 --M 2000 --page-size 4 \\\n"
                 "     --pool-pages 8 --block-table 5,2,7 --pad nan\n");
    const fl_status st = fl_run(&p, FL_COMPUTE, NULL, NULL, &r);
    const char *msg = fl_last_error();
    fprintf(out, "   refused: %s\n", st ? msg : "(accepted: WRONG)");
    ok &= st == FL_EINVAL && strstr(msg, "row 2 of physical page 7") && strstr(msg, "logical page 2");
    p_kv.pad_value = 0.0;
    const fl_status st0 = fl_run(&p, FL_COMPUTE, NULL, NULL, &r);
    fprintf(out, "   with --pad 0: %s, rel. error %.3e against the reference (the pool's 5 unused\n"
                 "   pages hold NaN and are never loaded: only the last page's loaded rows must be finite)\n",
            st0 ? fl_last_error() : "runs", st0 ? NAN : r.rel_err);
    ok &= st0 == FL_OK && r.rel_err <= 1e-12;
    fprintf(out, "\nnan-padding: %s\n", ok ? "PASS" : "FAIL");
    return ok;
}

/* The K and V reads of a tensor list (decode-traffic). */
static int64_t kv_reads(const fl_result *r)
{
    int64_t kv = 0;
    for (int t = 0; t < r->ntensors; t++)
        if (!strcmp(r->t[t].name, "K") || !strcmp(r->t[t].name, "V")) kv += r->t[t].reads;
    return kv;
}

/* Decode: one new token over a long cache; what the machine moves, by tensor (docs/model.md
 * eq. (CD)).  PASS when every count equals its closed form and K, V are read once each. */
static int ex_decode_traffic(FILE *out)
{
    const int64_t Nk = 32768, d = 128, splits[] = {1, 4, 16}, pages[] = {0, 256};
    int ok = 1;
    fprintf(out, "One query (N = 1) over a cache of Nk = %lld keys, d = %lld, M = 98304, bottom-right:\n\n"
                 "  %-10s %6s %12s %12s %12s %8s\n", (long long)Nk, (long long)d, "cache", "splits",
            "total", "K + V reads", "the rest", "K,V %");
    for (int pg = 0; pg < 2; pg++)
        for (int k = 0; k < 3; k++) {
            fl_problem p = fl_problem_default();
            fl_kv_cache p_kv = fl_kv_cache_default();
            p.kv_cache = &p_kv;
            fl_result r;
            p.algo = FL_ALGO_DECODE;
            p.N = 1;
            p.Nk = Nk;
            p.d = d;
            p.causal = FL_CAUSAL_BOTTOM_RIGHT;
            p_kv.splits = splits[k];
            p_kv.page_size = pages[pg];
            if (fl_run(&p, FL_COUNT, NULL, NULL, &r)) {
                fprintf(out, "  %s\n", fl_last_error());
                return 0;
            }
            const int64_t kv = kv_reads(&r);
            ok &= r.total == r.closed.total && r.events == r.closed.events && kv == 2 * Nk * d;
            fprintf(out, "  %-10s %6lld %12lld %12lld %12lld %7.3f%%\n", pg ? "paged 256" : "contiguous",
                    (long long)splits[k], (long long)r.total, (long long)kv, (long long)(r.total - kv),
                    100.0 * (double)kv / (double)r.total);
        }
    fprintf(out, "\nK and V are read once each (2 Nk d); Q, the block table and the split partials\n"
                 "(S (d + 2) each way) are the rest.  Splitting buys parallelism, not traffic.\n"
                 "decode-traffic: %s\n", ok ? "PASS" : "FAIL");
    return ok;
}

/* Block-sparse FlashAttention: traffic against the density s (Proposition 4). */
static int ex_blocksparse_density(FILE *out)
{
    const int64_t N = 16384, d = 64;
    const double ss[] = {0.0625, 0.125, 0.25, 0.5, 0.75, 1.0};
    const int64_t fixed = 2 * N * d + N; /* Q read, O and L written: every block row, always */
    int64_t dense = 0;
    int ok = 1;
    fprintf(out, "blocksparse at N = %lld, d = %lld, M = 98304 (flash2's blocks), block mask of density s:\n\n"
                 "  %8s %14s %14s %18s\n", (long long)N, (long long)d, "s", "HBM total", "closed form",
            "K/V part / dense");
    for (int k = 5; k >= 0; k--) { /* dense first */
        fl_problem p = fl_problem_default();
        fl_block_sparsity p_bm = fl_block_sparsity_default();
        p.block_mask = &p_bm;
        fl_result r;
        p.algo = FL_ALGO_BLOCKSPARSE;
        p.N = N;
        p.d = d;
        p_bm.density = ss[k];
        if (fl_run(&p, FL_COUNT, NULL, NULL, &r)) {
            fprintf(out, "  %s\n", fl_last_error());
            return 0;
        }
        if (k == 5) dense = r.total;
        const double frac = (double)(r.total - fixed) / (double)(dense - fixed);
        ok &= r.total == r.closed.total && fabs(frac - ss[k]) < 0.03;
        fprintf(out, "  %8.4f %14lld %14lld %18.4f\n", ss[k], (long long)r.total,
                (long long)r.closed.total, frac);
    }
    fprintf(out, "\nAbove the fixed 2Nd + N = %lld (O is written in full), the K/V traffic is the kept\n"
                 "fraction of blocks: linear in s, Theta(Nd + N^2 d^2 s / M).\nsparse-density: %s\n",
            (long long)fixed, ok ? "PASS" : "FAIL");
    return ok;
}

static const fl_example examples[] = {
    {"two-tile", "online softmax over two tiles, step by step (handbook and deep dive rows)", ex_two_tile},
    {"backward", "gradients with a bottom-right keep mask, (Nq, Nk) = (2,5), (5,2), (4,4), vs the reference", fl_ex_backward},
    {"causal-corners", "top-left vs bottom-right keep matrices for unequal lengths; tile classes", fl_ex_causal_corners},
    {"mask-polarity", "a padding mask (True = exclude) reused as a keep mask picks 1000, not 10", fl_ex_mask_polarity},
    {"gqa-map", "query heads onto K/V heads: 6 over 2 is 0,0,0,1,1,1; MQA; the traffic GQA saves", fl_ex_gqa_map},
    {"nan-padding", "paged KV: NaN in the last page's padding rows -- the failure and the check", ex_nan_padding},
    {"decode-traffic", "one token over a 32k cache: K and V reads are 99.9% of the traffic", ex_decode_traffic},
    {"sparse-density", "block-sparse traffic against the density s: linear (Prop. 4)", ex_blocksparse_density},
    {"sink-row", "a row with a sink logit: the online softmax starts from (sink, 1); by hand, reference, machine", fl_ex_sink_row},
    {"softcap-row", "a softcapped row, c tanh(s / c) before the softmax; by hand, reference, machine", fl_ex_softcap_row},
};

const fl_example *fl_examples(int *n)
{
    *n = (int)(sizeof examples / sizeof examples[0]);
    return examples;
}

const fl_example *fl_example_find(const char *name)
{
    int n;
    const fl_example *e = fl_examples(&n);
    for (int i = 0; i < n; i++)
        if (strcmp(e[i].name, name) == 0) return &e[i];
    return NULL;
}
