/* fuzz_softmax.c: the online-softmax helpers (include/flashlab/ops.h: fl_osm_step via fl_osm_tiled) against
 * the reference's two-pass softmax row (reference/attention_ref.h) on arbitrary scores: any
 * double, NaN, +inf and -inf (masked) included, any tile size.
 *
 * Input: n (1..64), dv (1..4), tile (1..n+1), then n scores as raw little-endian doubles, then
 * n*dv values as signed 16-bit integers / 64 (finite).
 *
 * The rule (docs/errors.md, "NaN and infinities"): -inf is a masked score; a row whose legal
 * scores are all -inf outputs zeros; a NaN or +inf among a row's scores makes its output NaN,
 * however the row is tiled; otherwise the output is finite and the tiled result equals the
 * reference to rounding (|diff| <= 64 n eps max|V|).
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attention_ref.h"
#include "fuzz_util.h"
#include "ops.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    enum { NMAX = 64, DVMAX = 4 };
    double s[NMAX], V[NMAX * DVMAX], tiled[DVMAX], ref[DVMAX];
    if (size < 3) return 0;
    const int64_t n = 1 + data[0] % NMAX, dv = 1 + data[1] % DVMAX, tile = 1 + data[2] % (n + 1);
    data += 3, size -= 3;
    if (size < (size_t)(n * 8)) return 0;
    int bad = 0, legal = 0;
    for (int64_t j = 0; j < n; j++) {
        memcpy(&s[j], data + 8 * j, 8);
        if (isnan(s[j]) || s[j] == INFINITY) bad = 1;
        else if (s[j] != -INFINITY) legal = 1;
    }
    data += 8 * n, size -= 8 * (size_t)n;
    double vmax = 0.0;
    for (int64_t k = 0; k < n * dv; k++) {
        int16_t q = 0;
        if (size >= 2) memcpy(&q, data + 2 * k, 2), size -= 2;
        V[k] = q / 64.0;
        vmax = fmax(vmax, fabs(V[k]));
    }
    FZ_CHECK(fl_osm_tiled(s, n, V, dv, tile, tiled) == FL_OK, "%s", fl_last_error());
    const double lse = fl_ref_softmax_row(s, n, V, dv, ref);
    for (int64_t c = 0; c < dv; c++) {
        if (bad) {
            FZ_CHECK(isnan(tiled[c]) && isnan(ref[c]),
                     "NaN/+inf score: tiled %g, reference %g (n %lld, tile %lld)", tiled[c], ref[c],
                     (long long)n, (long long)tile);
        } else if (!legal) {
            FZ_CHECK(tiled[c] == 0.0 && ref[c] == 0.0 && lse == -INFINITY, "masked row");
        } else {
            FZ_CHECK(isfinite(tiled[c]) && isfinite(ref[c]), "finite row: %g %g", tiled[c], ref[c]);
            FZ_CHECK(fabs(tiled[c] - ref[c]) <= 64.0 * (double)n * DBL_EPSILON * vmax,
                     "tiled %.17g vs reference %.17g (n %lld, tile %lld)", tiled[c], ref[c],
                     (long long)n, (long long)tile);
        }
    }
    if (bad) FZ_CHECK(isnan(lse), "NaN/+inf score: logsumexp %g", lse);
    return 0;
}
