/* headdim.c: figure (h)'s grid and summary, traffic against head dimension (see headdim.h). */
#include <flashlab/headdim.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <flashlab/output.h>
#include <flashlab/presets.h>
#include <flashlab/schedule.h>
#include <flashlab/version.h>

#define HEADDIM_N 4096
#define HEADDIM_MAX_M 8

static const int64_t dims[] = {64, 96, 128, 160, 192, 256, 320, 384, 448, 512, 640, 768, 1024};
enum { NDIMS = (int)(sizeof dims / sizeof dims[0]) };

int fl_headdim_Ms(int64_t *M, char (*names)[64], int cap)
{
    int np, n = 0;
    const fl_sram_preset *ps = fl_sram_presets(&np);
    for (int i = 0; i < np; i++) {
        const int64_t m = fl_preset_M(&ps[i], 2);
        int k = 0;
        while (k < n && M[k] != m) k++;
        if (k == n) {
            if (n == cap) continue;
            M[n] = m, names[n][0] = 0, n++;
        }
        const size_t len = strlen(names[k]);
        snprintf(names[k] + len, 64 - len, "%s%s", len ? "/" : "", ps[i].name);
    }
    return n;
}

static fl_regime_point *store;
static size_t nstore;

fl_status fl_headdim_collect(const fl_regime_point **pts, size_t *n)
{
    if (!store) {
        int64_t Ms[HEADDIM_MAX_M];
        char names[HEADDIM_MAX_M][64];
        const int nM = fl_headdim_Ms(Ms, names, HEADDIM_MAX_M);
        fl_regime_point *v = calloc((size_t)nM * NDIMS, sizeof *v);
        if (!v) return fl_fail(FL_ENOMEM, "figure (h): out of memory");
        size_t k = 0;
        for (int i = 0; i < nM; i++)
            for (int j = 0; j < NDIMS; j++, k++) v[k].N = HEADDIM_N, v[k].d = dims[j], v[k].M = Ms[i], v[k].pass = FL_PASS_FWD;
        FL_TRY(fl_regimes_keep(v, k, &store, &nstore));
    }
    *pts = store, *n = nstore;
    return FL_OK;
}

/* The largest d with d^2 <= M. */
static int64_t isqrt(int64_t M)
{
    int64_t r = 0;
    while ((r + 1) <= M / (r + 1)) r++;
    return r;
}

void fl_headdim_print(FILE *out, const fl_regime_point *pts, size_t n)
{
    int64_t Ms[HEADDIM_MAX_M];
    char names[HEADDIM_MAX_M][64];
    const int nM = fl_headdim_Ms(Ms, names, HEADDIM_MAX_M);
    fl_algo sched[FL_ALGO_MAX];
    int width[FL_ALGO_MAX];
    const int ns = fl_regime_scheds(sched);
    fprintf(out, "\nTraffic against head dimension (figure (h); forward, one head, N = %d, fp16 SRAM of the presets;\n"
                 "optimum of flashlab optimize, bound of docs/bounds.md; each schedule at its default rule, over the bound):\n",
            HEADDIM_N);
    int np;
    const fl_model_preset *mp = fl_model_presets(&np);
    for (int i = 0; i < nM; i++) {
        const int64_t r = isqrt(Ms[i]);
        fprintf(out, " %s: M = %" PRId64 "; small cache (d^2 > M) from d = %" PRId64 "\n", names[i], Ms[i], r + 1);
        fl_regimes_print_header(out, ns, sched, width);
        for (size_t k = 0; k < n; k++)
            if (pts[k].M == Ms[i]) fl_regimes_print_row(out, &pts[k], ns, width);
        for (int small = 0; small < 2; small++) {
            fprintf(out, "  %s:", small ? "models in the small-cache regime" : "models in the large-cache regime");
            int any = 0;
            for (int m = 0; m < np; m++)
                if ((mp[m].d > r) == small)
                    fprintf(out, "%s %s (d %" PRId64 ")", any++ ? "," : "", mp[m].name, mp[m].d);
            fputs(any ? "\n" : " none\n", out);
        }
    }
}

fl_status fl_headdim_write_path(const char *path)
{
    const fl_regime_point *pts;
    size_t n;
    FL_TRY(fl_headdim_collect(&pts, &n));
    FILE *f = fopen(path, "w");
    if (!f) return fl_fail(FL_EIO, "figures: cannot write %s (%s)", fl_shown(path), strerror(errno));
    fprintf(f, "# flashlab %s: figure (h), HBM traffic (elements) of the count-only machine against head dimension d\n"
               "# forward, one dense head, N = %d, M = the fp16 SRAM of the GPU presets; each schedule at its default "
               "rule (flashlab count),\n# the optimum of flashlab optimize (docs/model.md §7), the lower bound of "
               "docs/bounds.md; '-': the schedule's smallest tiles do not fit\n",
            FLASHLAB_VERSION, HEADDIM_N);
    const fl_status e = fl_regimes_write_rows(f, pts, n, "figure (h)");
    const fl_status c = fl_output_close_staged(f, "figures", path);
    return e ? e : c;
}

void fl_headdim_gnuplot_vars(char *vars, size_t n)
{
    int64_t Ms[HEADDIM_MAX_M];
    char names[HEADDIM_MAX_M][64], ms[256] = "", mn[600] = "";
    const int nM = fl_headdim_Ms(Ms, names, HEADDIM_MAX_M);
    for (int i = 0; i < nM; i++) {
        snprintf(ms + strlen(ms), sizeof ms - strlen(ms), "%s%" PRId64, i ? " " : "", Ms[i]);
        snprintf(mn + strlen(mn), sizeof mn - strlen(mn), "%s%s", i ? " " : "", names[i]);
    }
    snprintf(vars, n, "Ms='%s'; Mnames='%s'", ms, mn);
}
