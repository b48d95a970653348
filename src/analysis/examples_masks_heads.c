/* examples_masks_heads.c: the seeds' worked examples on masks and heads: the backward
 * check with an explicit bottom-right keep mask, the causal corners, the mask-polarity trap and
 * the GQA head map.  Each prints its walk-through and returns 1 when every check passes. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention_bwd.h"
#include <flashlab/heads.h>
#include <flashlab/masks.h>
#include <flashlab/rng.h>
#include <flashlab/examples.h>
#include <flashlab/run.h>

/* An explicit keep matrix (row-major Nq x Nk), written out as the seed builds it, independent
 * of the schedules' masks (src/mask/masks.c) and the reference's (reference/ref_mask.c). */
typedef struct {
    const int *keep;
    int64_t Nk;
} keep_matrix;

static int keep_at(int64_t i, int64_t j, const void *ctx)
{
    const keep_matrix *k = ctx;
    return k->keep[i * k->Nk + j];
}

static void print_matrix(FILE *out, const char *title, const int *k, int64_t Nq, int64_t Nk)
{
    fprintf(out, "  %s [", title);
    for (int64_t i = 0; i < Nq; i++) {
        fprintf(out, "%s[", i ? ", " : "");
        for (int64_t j = 0; j < Nk; j++) fprintf(out, "%s%d", j ? "," : "", k[i * Nk + j]);
        fputc(']', out);
    }
    fputs("]\n", out);
}

/* |a - b| <= tol + tol |b| everywhere (torch.testing.assert_close with atol = rtol = tol);
 * returns the largest |a - b|, or +inf on a violation or NaN. */
static double close_to(const double *a, const double *b, int64_t n, double tol)
{
    double worst = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const double e = fabs(a[i] - b[i]);
        if (!(e <= tol + tol * fabs(b[i]))) return INFINITY;
        if (e > worst) worst = e;
    }
    return worst;
}

/* One shape of the deep dive's backward check: 2 heads, d = dv = 3, keep = j <= i + Nk - Nq. */
static int backward_shape(FILE *out, int64_t Nq, int64_t Nk)
{
    enum { H = 2, D = 3 };
    const double tol = 1e-12, scale = 1.0 / sqrt((double)D);
    int ok = 1;
    int *keep = malloc((size_t)(Nq * Nk) * sizeof *keep);
    double *buf = calloc((size_t)(H * (8 * Nq * D + 6 * Nk * D + Nq * Nk + Nq)), sizeof *buf);
    if (!keep || !buf) {
        free(keep), free(buf);
        fprintf(out, "  out of memory\n");
        return 0;
    }
    double *Q = buf, *K = Q + H * Nq * D, *V = K + H * Nk * D, *dO = V + H * Nk * D;
    double *O = dO + H * Nq * D, *dQ = O + H * Nq * D, *dK = dQ + H * Nq * D, *dV = dK + H * Nk * D;
    double *Or = dV + H * Nk * D, *dQr = Or + H * Nq * D, *dKr = dQr + H * Nq * D, *dVr = dKr + H * Nk * D;
    double *dS = dVr + H * Nk * D, *L = dS + Nq * Nk;
    uint64_t st = 7;
    fl_rng_fill(&st, Q, H * Nq * D, -1.0, 1.0);
    fl_rng_fill(&st, K, H * Nk * D, -1.0, 1.0);
    fl_rng_fill(&st, V, H * Nk * D, -1.0, 1.0);
    fl_rng_fill(&st, dO, H * Nq * D, -1.0, 1.0);

    /* keep = arange(Nk)[None, :] <= arange(Nq)[:, None] + Nk - Nq, and the mask module agrees */
    fl_mask mk;
    fl_mask_init(&mk, Nq, Nk, FL_CAUSAL_BOTTOM_RIGHT, -1, -1);
    int64_t masked = 0, zero_ds = 0;
    for (int64_t i = 0; i < Nq; i++)
        for (int64_t j = 0; j < Nk; j++) {
            keep[i * Nk + j] = j <= i + Nk - Nq;
            ok &= keep[i * Nk + j] == fl_mask_keep(&mk, i, j);
        }
    fprintf(out, "Q=%" PRId64 ", K=%" PRId64 ":\n", Nq, Nk);
    print_matrix(out, "keep (bottom-right)", keep, Nq, Nk);

    /* the reference, per head, with the explicit matrix: O, dQ, dK, dV and dS */
    keep_matrix km = {keep, Nk};
    for (int h = 0; h < H && ok; h++) {
        ok &= fl_ref_attention_bwd(Nq, Nk, D, D, Q + h * Nq * D, K + h * Nk * D, V + h * Nk * D,
                                   dO + h * Nq * D, scale, keep_at, &km, dQr + h * Nq * D,
                                   dKr + h * Nk * D, dVr + h * Nk * D, Or + h * Nq * D, L, NULL, dS) == FL_OK;
        for (int64_t e = 0; e < Nq * Nk; e++)
            if (!keep[e]) masked++, zero_ds += dS[e] == 0.0;
    }
    fprintf(out, "  reference: masked entries of dS %" PRId64 ", exactly zero %" PRId64 "\n", masked, zero_ds);
    ok &= masked == zero_ds;

    /* the machine: every schedule, forward + backward, 2x2 tiles (empty, full and boundary) */
    fl_algo algos[FL_ALGO_MAX];
    const int nalgos = fl_algos_all(NULL, algos);
    for (int a = 0; a < nalgos; a++) {
        fl_problem p = fl_problem_default();
        p.algo = algos[a], p.N = Nq, p.Nk = Nk, p.d = D, p.M = 200, p.Br = p.Bc = 2;
        p.heads = H, p.causal = FL_CAUSAL_BOTTOM_RIGHT, p.pass = FL_PASS_FWD_BWD;
        fl_values v = {Q, K, V, dO, O, NULL, dQ, dK, dV, NULL, NULL};
        fl_result r;
        if (fl_run_values(&p, &v, &r) != FL_OK) {
            fprintf(out, "  %s: %s\n", fl_algo_name(p.algo), fl_last_error());
            ok = 0;
            continue;
        }
        const double eo = close_to(O, Or, H * Nq * D, tol), eq = close_to(dQ, dQr, H * Nq * D, tol),
                     ek = close_to(dK, dKr, H * Nk * D, tol), ev = close_to(dV, dVr, H * Nk * D, tol);
        int rows0 = 1;
        int64_t empty = 0;
        for (int h = 0; h < H; h++)
            for (int64_t i = 0; i < Nq; i++) {
                int any = 0;
                for (int64_t j = 0; j < Nk; j++) any |= keep[i * Nk + j];
                if (any) continue;
                empty++;
                for (int c = 0; c < D; c++) rows0 &= O[(h * Nq + i) * D + c] == 0.0;
            }
        const int good = isfinite(eo) && isfinite(eq) && isfinite(ek) && isfinite(ev) && rows0;
        fprintf(out, "  %-8s output and Q/K/V gradients %s (max |diff| O %.1e, dQ %.1e, dK %.1e, dV %.1e); "
                     "fully masked rows (both heads) %" PRId64 ": output %s\n",
                fl_algo_name(p.algo), good ? "match" : "DIFFER", eo, eq, ek, ev, empty,
                rows0 ? "exactly zero" : "NOT zero");
        ok &= good;
    }
    free(keep), free(buf);
    return ok;
}

int fl_ex_backward(FILE *out)
{
    fprintf(out, "Deep dive: the backward pass with an explicit bottom-right keep mask, unequal lengths both\n"
                 "ways.  Reference: reference/attention_bwd.c in double; machine: each schedule's forward +\n"
                 "backward on 2 x 2 tiles; agreement |a - b| <= 1e-12 + 1e-12 |b| (the seed's atol = rtol).\n\n");
    int ok = backward_shape(out, 2, 5);
    ok &= backward_shape(out, 5, 2);
    ok &= backward_shape(out, 4, 4);
    fprintf(out, "backward: %s\n", ok ? "PASS" : "FAIL");
    return ok;
}

/* Prints the keep matrix of a corner and compares it with `want` (NULL: print only). */
static int corner(FILE *out, int64_t Nq, int64_t Nk, fl_causal c, const int *want)
{
    fl_mask mk;
    int k[64], ok = 1;
    fl_mask_init(&mk, Nq, Nk, c, -1, -1);
    for (int64_t i = 0; i < Nq; i++)
        for (int64_t j = 0; j < Nk; j++) k[i * Nk + j] = fl_mask_keep(&mk, i, j);
    char title[64];
    snprintf(title, sizeof title, "(Nq, Nk) = (%" PRId64 ", %" PRId64 ") %-12s", Nq, Nk, fl_causal_name(c));
    print_matrix(out, title, k, Nq, Nk);
    if (want) {
        ok = memcmp(k, want, (size_t)(Nq * Nk) * sizeof *k) == 0;
        fprintf(out, "    the seed's matrix: %s\n", ok ? "PASS" : "FAIL");
    }
    return ok;
}

int fl_ex_causal_corners(FILE *out)
{
    const int tl25[] = {1, 0, 0, 0, 0, 1, 1, 0, 0, 0};
    const int br25[] = {1, 1, 1, 1, 0, 1, 1, 1, 1, 1};
    const int br52[] = {0, 0, 0, 0, 0, 0, 1, 0, 1, 1};
    fprintf(out, "Causal corners (reference/masks.h, docs/model.md rule K1).  Top-left keeps j <= i (PyTorch\n"
                 "SDPA is_causal); bottom-right keeps j <= i + Nk - Nq (FlashAttention >= 2.1: the last query\n"
                 "sees the last key).  They differ only when Nq != Nk.\n\n");
    int ok = corner(out, 2, 5, FL_CAUSAL_TOP_LEFT, tl25);
    ok &= corner(out, 2, 5, FL_CAUSAL_BOTTOM_RIGHT, br25);
    ok &= corner(out, 5, 2, FL_CAUSAL_BOTTOM_RIGHT, br52);
    fprintf(out, "\n  For contrast: (5, 2) top-left, and one decode query over five cached keys, where only the\n"
                 "  bottom-right corner lets the new token see its history (the review question):\n");
    corner(out, 5, 2, FL_CAUSAL_TOP_LEFT, NULL);
    corner(out, 1, 5, FL_CAUSAL_TOP_LEFT, NULL);
    corner(out, 1, 5, FL_CAUSAL_BOTTOM_RIGHT, NULL);
    /* rows 0..2 of (5, 2) bottom-right keep no key: they output zero (rule M0) */
    fprintf(out, "\n  Tiles of (Nq, Nk) = (6, 6) bottom-right with Br = Bc = 2 (E skipped, F unmasked, P masked\n"
                 "  per element; rule K2-K4):\n");
    fl_mask mk;
    fl_mask_init(&mk, 6, 6, FL_CAUSAL_BOTTOM_RIGHT, -1, -1);
    const char cls[] = {'E', 'F', 'P'};
    for (int64_t r0 = 0; r0 < 6; r0 += 2) {
        fputs("   ", out);
        for (int64_t c0 = 0; c0 < 6; c0 += 2) fprintf(out, " %c", cls[fl_mask_tile(&mk, r0, 2, c0, 2)]);
        fputc('\n', out);
    }
    fprintf(out, "causal-corners: %s\n", ok ? "PASS" : "FAIL");
    return ok;
}

int fl_ex_mask_polarity(FILE *out)
{
    /* one query, two keys, both scores 0; the real key has value 10, the padded one 1000 */
    const double q[1] = {0.0}, k[2] = {0.0, 0.0}, v[2] = {10.0, 1000.0};
    const int padding[2] = {0, 1}; /* MultiheadAttention key_padding_mask: 1 = exclude */
    const int keep[2] = {1, 0};    /* SDPA attn_mask (and flashlab): 1 = attend */
    keep_matrix wrong = {padding, 2}, right = {keep, 2};
    double ow = 0.0, oc = 0.0;
    fl_ref_attention(1, 2, 1, 1, q, k, v, 1.0, keep_at, &wrong, &ow, NULL);
    fl_ref_attention(1, 2, 1, 1, q, k, v, 1.0, keep_at, &right, &oc, NULL);
    fprintf(out, "Mask polarity (deep dive).  One query, keys with equal scores, values [10, 1000]; key 1 is\n"
                 "padding.  A padding mask says True = exclude: [False, True].  Passed where a keep mask\n"
                 "(True = attend) is expected, it attends only to the padding:\n\n");
    fprintf(out, "  reused padding mask [0, 1] as keep: output %g\n", ow);
    fprintf(out, "  keep mask = NOT padding   [1, 0]: output %g\n", oc);
    const int ok = ow == 1000.0 && oc == 10.0;
    fprintf(out, "\n  No shape error warns you: both masks are valid.  flashlab's keep(i, j) means attend.\n");
    fprintf(out, "mask-polarity: %s (seed: 1000 and 10)\n", ok ? "PASS" : "FAIL");
    return ok;
}

static int print_map(FILE *out, int64_t Hq, int64_t Hkv, const int64_t *want)
{
    int ok = fl_heads_check(Hq, Hkv) == FL_OK;
    fprintf(out, "  %" PRId64 " query heads over %" PRId64 " K/V head%s: [", Hq, Hkv, Hkv > 1 ? "s" : "");
    for (int64_t h = 0; h < Hq && ok; h++) {
        const int64_t kv = fl_kv_head(h, Hq, Hkv);
        fprintf(out, "%s%" PRId64, h ? "," : "", kv);
        ok &= kv == want[h];
    }
    fprintf(out, "]  %s\n", ok ? "PASS" : "FAIL");
    return ok;
}

int fl_ex_gqa_map(FILE *out)
{
    const int64_t gqa[] = {0, 0, 0, 1, 1, 1}, mqa[] = {0, 0, 0, 0, 0, 0}, mha[] = {0, 1, 2};
    fprintf(out, "GQA head map (deep dive; reference/heads.h rule H1): query head h uses K/V head\n"
                 "h / (Hq / Hkv): consecutive groups, not alternating.\n\n");
    int ok = print_map(out, 6, 2, gqa);
    ok &= print_map(out, 6, 1, mqa);
    ok &= print_map(out, 3, 3, mha);
    fprintf(out, "\n  Invalid counts are refused with the rule:\n");
    const int64_t bad[][2] = {{0, 1}, {5, 2}, {6, 0}, {2, 4}};
    for (int i = 0; i < 4; i++) {
        const int refused = fl_heads_check(bad[i][0], bad[i][1]) != FL_OK;
        fprintf(out, "  (%" PRId64 ", %" PRId64 "): %s\n", bad[i][0], bad[i][1], refused ? fl_last_error() : "ACCEPTED");
        ok &= refused;
    }
    /* the traffic a group schedule saves: flash2 loads K/V once per query head, flash2-gqa once
     * per group of Hq/Hkv query heads (docs/model.md eq. (C2g)) */
    fprintf(out, "\n  HBM traffic, N = 1024, d = 64, M = 98304, elements (flash2: per query head; flash2-gqa:\n"
                 "  the group's query heads stacked, each K/V tile loaded once per group):\n");
    fprintf(out, "    %-14s %-8s %-10s %14s %14s\n", "heads", "pass", "schedule", "K+V reads", "total");
    const int64_t hk[][2] = {{6, 2}, {6, 1}};
    const fl_pass passes[] = {FL_PASS_FWD, FL_PASS_FWD_BWD};
    for (int i = 0; i < 2; i++)
        for (int q = 0; q < 2; q++) {
            int64_t tot[2] = {0, 0};
            for (int g = 0; g < 2; g++) {
                fl_problem p = fl_problem_default();
                p.algo = g ? FL_ALGO_FLASH2_GQA : FL_ALGO_FLASH2;
                p.heads = hk[i][0], p.kv_heads = hk[i][1], p.pass = passes[q];
                fl_result r;
                if (fl_run(&p, FL_COUNT, NULL, NULL, &r) != FL_OK || r.total != r.closed.total) {
                    ok = 0;
                    continue;
                }
                int64_t kv = 0;
                for (int t = 0; t < r.ntensors; t++)
                    if (!strcmp(r.t[t].name, "K") || !strcmp(r.t[t].name, "V")) kv += r.t[t].reads;
                char hs[32];
                snprintf(hs, sizeof hs, "%" PRId64 " over %" PRId64, p.heads, p.kv_heads);
                fprintf(out, "    %-14s %-8s %-10s %14" PRId64 " %14" PRId64 "\n", hs, q ? "fwd+bwd" : "fwd",
                        fl_algo_name(p.algo), kv, r.total);
                tot[g] = r.total;
            }
            fprintf(out, "    %-14s %-8s %-10s %14s %13.1f%%\n", "", "", "saved", "", 100.0 * (1.0 - (double)tot[1] / (double)tot[0]));
            ok &= tot[1] < tot[0];
        }
    fprintf(out, "gqa-map: %s\n", ok ? "PASS" : "FAIL");
    return ok;
}
