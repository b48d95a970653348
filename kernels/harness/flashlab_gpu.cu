/* flashlab_gpu.cu: `flashlab-gpu`, the GPU harness: runs the CUDA kernels of kernels/ on random
 * inputs, checks them against the fp64 reference, and compares their byte counters with the
 * model's counts (fl_run in FL_COUNT mode, the only source of model counts).
 *
 *   flashlab-gpu list (or --list)             the versions and kernel variants built in, and (with a GPU)
 *                                             which of them run on it; no GPU needed: every kernel's
 *                                             footprint and pass checked against the model (exit 1
 *                                             when one fails)
 *   flashlab-gpu run --algo A --N N --d D --Br B --Bc B [--dtype fp16] [--causal] [--reps R]
 *                                             one case, per-tensor table (used under ncu)
 *   flashlab-gpu validate [--csv FILE] [--quick]
 *                                             the validation matrix (>= 40 cases), then shapes
 *                                             A, B, A in one process; CSV with provenance
 *   flashlab-gpu curve --N N --d D --csv FILE model counts against M_eff (no GPU needed)
 *
 * Exit status: 0 all passed; 1 a case failed or a CUDA error; 2 bad input; 77 no GPU (ctest
 * treats 77 as "skipped").  Build (see kernels/CMakeLists.txt): with -DFL_COUNTERS this is
 * `flashlab-gpu`; without, `flashlab-gpu-timing` (counters compiled out, nothing compared).
 */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "gpu_case.h"

extern "C" {
#include "args.h"
#include "run.h"
#include <flashlab/version.h>
}

#ifdef FL_COUNTERS
#define FL_BUILD "counters"
#else
#define FL_BUILD "timing (counters compiled out)"
#endif

static std::vector<const fl_kernel_info *> all_kernels()
{
    std::vector<const fl_kernel_info *> v;
    int nv;
    const fl_version_info *vs = fl_versions(&nv);
    for (int i = 0; i < nv; i++) {
        int n;
        const fl_kernel_info *k = vs[i].table(&n);
        for (int j = 0; j < n; j++) v.push_back(&k[j]);
    }
    return v;
}

/* ---- what runs on this GPU ------------------------------------------------------------------ */
/* The probe of each version, run once (needs a GPU). */
static const fl_probe_result &probe_of(int version)
{
    static fl_probe_result pr[64];
    static bool done[64];
    if (!done[version]) {
        fl_version(version)->probe(&pr[version]);
        done[version] = true;
    }
    return pr[version];
}

/* "sm_90a", "sm_80", ...: the architecture the loaded code of a probe was compiled for. */
static std::string code_name(const fl_probe_result &p)
{
    char b[32];
    snprintf(b, sizeof b, "sm_%d%s", p.code_arch / 10, p.feat_90a ? "a" : "");
    return b;
}

/* NULL when kernel k runs on this GPU; else why not (one line).  Needs a GPU. */
static const char *unavailable(const fl_kernel_info *k)
{
    static char why[256];
    return fl_why_not_here(k, probe_of(k->version), fl_version(k->version)->needs(), why, sizeof why);
}

/* The versions with at least one variant that runs here, as "1-6, 8" (needs a GPU). */
static std::string runnable_versions()
{
    int nv;
    const fl_version_info *vs = fl_versions(&nv);
    std::vector<int> ok;
    for (int i = 0; i < nv; i++) {
        int n;
        const fl_kernel_info *t = vs[i].table(&n);
        for (int j = 0; j < n; j++)
            if (!unavailable(&t[j])) { ok.push_back(vs[i].version); break; }
    }
    std::string out;
    for (size_t i = 0; i < ok.size();) {
        size_t j = i;
        while (j + 1 < ok.size() && ok[j + 1] == ok[j] + 1) j++;
        out += (out.empty() ? "" : ", ") + std::to_string(ok[i]) + (j > i ? "-" + std::to_string(ok[j]) : "");
        i = j + 1;
    }
    return out.empty() ? "none" : out;
}

/* The kernel of this schedule, type and tiles; version 0: the first built (the plainest). */
static const fl_kernel_info *find_kernel(const char *algo, int dtype, int d, int Br, int Bc, int bwd = 0, int version = 0)
{
    for (auto k : all_kernels())
        if (!strcmp(k->s->algo, algo) && k->dtype == dtype && k->d == d && k->Br == Br && k->Bc == Bc && k->s->bwd == bwd &&
            (!version || k->version == version))
            return k;
    return NULL;
}

static int version_count(void)
{
    int nv;
    fl_versions(&nv);
    return nv;
}

static int bad(const char *msg)
{
    fprintf(stderr, "flashlab-gpu: %s\n", msg);
    return 2;
}

/* 0 when a GPU is there; else prints why not and returns 77. */
static int need_gpu(void)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        fprintf(stderr, "flashlab-gpu: no CUDA GPU available (%s); nothing was run\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return 77;
    }
    return 0;
}

/* A GPU is there (no message). */
static bool need_gpu_quiet(void)
{
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

/* ---- provenance ----------------------------------------------------------------------------- */
static void provenance(FILE *f, int argc, char **argv, const char *what)
{
    cudaDeviceProp pr;
    int dev = 0, drv = 0, rt = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaGetDeviceProperties(&pr, dev));
    CUDA_CHECK(cudaDriverGetVersion(&drv));
    CUDA_CHECK(cudaRuntimeGetVersion(&rt));
    char date[64];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    const char *commit = getenv("FLASHLAB_COMMIT");
    fprintf(f, "# %s\n", what);
    fprintf(f, "# commit: %s\n", commit ? commit : "unknown (set FLASHLAB_COMMIT)");
    fprintf(f, "# date: %s\n", date);
    fprintf(f, "# gpu: %s, cc %d.%d, %d SMs, L2 %d MB, %.0f GB\n", pr.name, pr.major, pr.minor,
            pr.multiProcessorCount, pr.l2CacheSize >> 20, pr.totalGlobalMem / 1e9);
    fprintf(f, "# driver (CUDA API): %d.%d; runtime: %d.%d; nvcc: %d.%d\n", drv / 1000, (drv % 1000) / 10,
            rt / 1000, (rt % 1000) / 10, __CUDACC_VER_MAJOR__, __CUDACC_VER_MINOR__);
    const fl_probe_result &p1 = probe_of(1);
    const char *jit = getenv("CUDA_FORCE_PTX_JIT");
    fprintf(f, "# build: %s; code loaded for this GPU: %s (machine code sm_%d from PTX %d)%s; versions that run here: %s\n",
            FL_BUILD, code_name(p1).c_str(), p1.binary_version, p1.ptx_version,
            jit && *jit && strcmp(jit, "0") ? ", CUDA_FORCE_PTX_JIT set" : "", runnable_versions().c_str());
    fprintf(f, "# model: libflashlab %s fl_run(FL_COUNT) at M = M_eff = fl_footprint(schedule, d, Br, Bc, d)\n",
            FLASHLAB_VERSION);
    fprintf(f, "# accuracy: max|O - O_ref| <= 2 * max|O_naive - O_ref| + eps/2 * max|O_ref| on sampled rows "
               "(fp64 reference; naive = same storage precision, fp32 accumulation)\n");
    fprintf(f, "# command:");
    for (int i = 0; i < argc; i++) fprintf(f, " %s", argv[i]);
    fprintf(f, "\n");
}

static const char *csv_header =
    "tag,algo,pass,version,dtype,N,d,Br,Bc,causal,M_eff,model_reads,model_writes,gpu_reads,gpu_writes,"
    "ratio,model_bytes,gpu_bytes,bytes_ratio,tensors_equal,max_err,naive_err,tol,L_err,unwritten,"
    "acc_ok,flag_polls,ms,status,Nk,corner,smem_bytes,local_bytes,tiles_ok,flag_writes";

static void csv_row(FILE *f, const fl_gpu_case &c, const fl_gpu_outcome &o)
{
    const fl_kernel_info *k = c.k;
    fprintf(f, "%s,%s,%s,%d,%s,%d,%d,%d,%d,%d,%ld,", c.tag, k->s->algo, k->s->bwd ? "bwd" : "fwd", k->version, fl_dtype_names[k->dtype],
            c.N, k->d, k->Br, k->Bc, c.causal, o.m_eff);
    if (o.model_ok)
        fprintf(f, "%lld,%lld,", o.model_reads, o.model_writes);
    else
        fprintf(f, ",,");
    fprintf(f, "%lld,%lld,", o.gpu_reads, o.gpu_writes);
    if (o.model_ok)
        fprintf(f, "%.6f,%lld,%lld,%.6f,%d,", o.ratio, o.model_bytes, o.gpu_bytes, o.bytes_ratio, o.tensors_equal);
    else
        fprintf(f, ",,%lld,,,", o.gpu_bytes);
    fprintf(f, "%.3e,%.3e,%.3e,%.3e,%lld,%d,%lld,%.4f,%s", o.max_err, o.naive_err, o.tol, o.L_err,
            o.unwritten, o.acc_ok, o.gpu_polls, o.ms, o.ok ? (o.counted ? "ok" : "ok (not counted)") : "FAIL");
    fprintf(f, ",%d,%s,%ld,%ld,%d,%lld\n", c.Nk ? c.Nk : c.N,
            c.causal == 1 ? "top-left" : c.causal == 2 ? "bottom-right" : "none", o.smem_bytes, o.local_bytes, o.tiles_ok,
            o.gpu_flag_writes);
}

static void print_case(const fl_gpu_case &c, const fl_gpu_outcome &o)
{
    const fl_kernel_info *k = c.k;
    printf("%-6s %-8s %s %-4s N=%-5d", c.tag, k->s->algo, k->s->bwd ? "bwd" : "fwd", fl_dtype_names[k->dtype], c.N);
    if (c.Nk && c.Nk != c.N) printf(" Nk=%-5d", c.Nk);
    printf(" d=%-3d Br=%-3d Bc=%-3d %s M_eff=%-6ld ", k->d, k->Br, k->Bc,
           c.causal == 1 ? "causal-TL" : c.causal == 2 ? "causal-BR" : "full     ", o.m_eff);
#ifndef FL_COUNTERS
    if (o.model_ok)
        printf("[timing build: not counted] ");
    else
#endif
    if (o.model_ok)
        printf("ratio %.6f %s ", o.ratio, o.tensors_equal ? "(every tensor equal)" : "(TENSORS DIFFER)");
    else
        printf("[%s] ", o.model_msg);
    if (!o.tiles_ok) printf("[tiles: %s] ", o.tiles_msg);
    printf("err %.2e <= %.2e (naive %.2e) %s %.3f ms  %s\n", o.max_err, o.tol, o.naive_err,
           o.unwritten ? "UNWRITTEN" : "", o.ms, o.ok ? "ok" : "FAIL");
    fflush(stdout);
}

/* ---- run ------------------------------------------------------------------------------------ */
static int parse_dtype(const char *s, int *dt)
{
    for (int i = 0; i < FL_NDTYPE; i++)
        if (!strcmp(s, fl_dtype_names[i])) { *dt = i; return 0; }
    return -1;
}

static int cmd_run(int argc, char **argv)
{
    const char *algo = "flash2";
    int64_t N = 1024, Nk = 0, d = 64, Br = 64, Bc = 64, reps = 0, seed = 1, version = 0;
    int dt = FL_F16, causal = 0, check = 1, bwd = 0;
    fl_args a;
    const char *name, *iv, *v;
    int r;
    fl_args_init(&a, argc, argv);
    while ((r = fl_args_next(&a, &name, &iv)) == 1) {
        fl_status s = FL_OK;
        if (!strcmp(name, "--causal")) causal = 2; /* bottom-right, FlashAttention >= 2.1 */
        else if (!strcmp(name, "--bwd")) bwd = 1;
        else if (!strcmp(name, "--no-check")) check = 0;
        else if ((s = fl_args_value(&a, name, iv, &v)) != FL_OK) return bad(fl_last_error());
        else if (!strcmp(name, "--algo")) algo = v;
        else if (!strcmp(name, "--N")) s = fl_parse_i64(name, v, 1, 1 << 20, &N);
        else if (!strcmp(name, "--Nk")) s = fl_parse_i64(name, v, 1, 1 << 20, &Nk);
        else if (!strcmp(name, "--corner")) {
            if (!strcmp(v, "top-left")) causal = 1;
            else if (!strcmp(v, "bottom-right")) causal = 2;
            else return bad("--corner: choose top-left or bottom-right");
        }
        else if (!strcmp(name, "--d")) s = fl_parse_i64(name, v, 1, 1024, &d);
        else if (!strcmp(name, "--Br")) s = fl_parse_i64(name, v, 1, 1024, &Br);
        else if (!strcmp(name, "--Bc")) s = fl_parse_i64(name, v, 1, 1024, &Bc);
        else if (!strcmp(name, "--reps")) s = fl_parse_i64(name, v, 0, 1000, &reps);
        else if (!strcmp(name, "--seed")) s = fl_parse_i64(name, v, 0, INT64_MAX, &seed);
        else if (!strcmp(name, "--version")) s = fl_parse_i64(name, v, 1, version_count(), &version);
        else if (!strcmp(name, "--dtype")) { if (parse_dtype(v, &dt)) return bad("--dtype: choose fp32, fp16 or bf16"); }
        else return bad((std::string(name) + ": unknown option (see flashlab-gpu --help)").c_str());
        if (s != FL_OK) return bad(fl_last_error());
    }
    if (r < 0) return bad(fl_last_error());
    const fl_kernel_info *k = find_kernel(algo, dt, (int)d, (int)Br, (int)Bc, bwd, (int)version);
    if (bwd && N > 2048) check = 0; /* the full fp64 backward reference is O(N^2 d) on the CPU */
    if (!k) return bad("--algo/--dtype/--d/--Br/--Bc: no such kernel is built (see flashlab-gpu list)");
    if (causal && !k->causal_ok) return bad("--causal: this schedule has no causal kernel");
    if (Nk && Nk != N && !k->s->nk_ok)
        return bad("--Nk: this kernel takes Nk = N only (the flash2 forwards take Nk != N)");
    if (int g = need_gpu()) return g;
    if (const char *why = unavailable(k)) {
        fprintf(stderr, "flashlab-gpu: version %d does not run on this GPU: %s (see flashlab-gpu list)\n", k->version, why);
        return 2;
    }
    fl_gpu_case c = {k, (int)N, causal, (uint64_t)seed, "run", check, (int)reps, (int)Nk};
    fl_gpu_outcome o;
    if (fl_gpu_case_run(&c, &o)) return 1;
    printf("%-6s %15s %15s %15s %15s\n", "tensor", "model reads", "gpu reads", "model writes", "gpu writes");
    for (int t = 0; t < FL_NT_DATA; t++)
        if (o.gpu_rd[t] || o.gpu_wr[t] || o.model_rd[t] || o.model_wr[t])
            printf("%-6s %15lld %15lld %15lld %15lld\n", fl_tensor_names[t], o.model_rd[t], o.gpu_rd[t],
                   o.model_wr[t], o.gpu_wr[t]);
    printf("%-6s %15lld %15lld %15lld %15lld\n", "total", o.model_reads, o.gpu_reads, o.model_writes, o.gpu_writes);
    printf("model bytes %lld, gpu bytes %lld\n", o.model_bytes, o.gpu_bytes);
    if (o.gpu_polls) printf("flag polls (synchronisation, not in the model): %lld\n", o.gpu_polls);
    if (o.gpu_flag_writes) printf("flag releases (synchronisation, not in the model): %lld\n", o.gpu_flag_writes);
    printf("bytes: M_eff=%ld model_read=%lld model_write=%lld counter_read=%lld counter_write=%lld polls=%lld "
           "flag_writes=%lld local_bytes=%ld counted=%d\n",
           o.m_eff, o.model_rd_bytes, o.model_wr_bytes, o.gpu_rd_bytes, o.gpu_wr_bytes, o.gpu_polls, o.gpu_flag_writes,
           o.local_bytes, o.counted);
    if (reps) printf("median of %lld launches: %.4f ms\n", (long long)reps, o.ms_median);
    print_case(c, o);
    return o.ok ? 0 : 1;
}

/* ---- validate ------------------------------------------------------------------------------- */
static int cmd_validate(int argc, char **argv, int argc0, char **argv0)
{
    const char *csv = NULL, *only_algo = NULL;
    int quick = 0, only_dt = -1, only_pass = -1;
    int64_t seed = 20261129, only_d = 0, only_version = 0;
    fl_args a;
    const char *name, *iv, *v;
    int r;
    fl_args_init(&a, argc, argv);
    while ((r = fl_args_next(&a, &name, &iv)) == 1) {
        fl_status s = FL_OK;
        if (!strcmp(name, "--quick")) quick = 1;
        else if ((s = fl_args_value(&a, name, iv, &v)) != FL_OK) return bad(fl_last_error());
        else if (!strcmp(name, "--csv")) csv = v;
        else if (!strcmp(name, "--algo")) only_algo = v;
        else if (!strcmp(name, "--pass")) {
            if (strcmp(v, "fwd") && strcmp(v, "bwd")) return bad("--pass: choose fwd or bwd");
            only_pass = !strcmp(v, "bwd");
        }
        else if (!strcmp(name, "--d")) s = fl_parse_i64(name, v, 1, 1024, &only_d);
        else if (!strcmp(name, "--dtype")) { if (parse_dtype(v, &only_dt)) return bad("--dtype: choose fp32, fp16 or bf16"); }
        else if (!strcmp(name, "--seed")) s = fl_parse_i64(name, v, 0, INT64_MAX, &seed);
        else if (!strcmp(name, "--version")) s = fl_parse_i64(name, v, 1, version_count(), &only_version);
        else return bad((std::string(name) + ": unknown option (see flashlab-gpu --help)").c_str());
        if (s != FL_OK) return bad(fl_last_error());
    }
    if (r < 0) return bad(fl_last_error());
    if (int g = need_gpu()) return g;

    std::vector<fl_gpu_case> cases;
    uint64_t sd = (uint64_t)seed;
    auto add = [&](const fl_kernel_info *k, int N, int causal, const char *tag, int Nk = 0) {
        fl_gpu_case c = {k, N, causal, sd++, tag, !k->s->bwd || N <= 1024, 0, Nk}; /* bwd reference: O(N^2 d) */
        cases.push_back(c);
    };
    std::vector<const fl_kernel_info *> ks; /* optionally only some (sanitizers are slow) */
    std::vector<std::string> skipped;       /* variants that do not run on this GPU, and why */
    for (auto k : all_kernels())
        if ((!only_algo || !strcmp(k->s->algo, only_algo)) && (only_dt < 0 || k->dtype == only_dt) &&
            (!only_d || k->d == only_d) && (only_pass < 0 || k->s->bwd == only_pass) &&
            (!only_version || k->version == only_version)) {
            if (const char *why = unavailable(k)) {
                char b[512];
                snprintf(b, sizeof b, "v%d %s %s d=%d %dx%d: %s", k->version, k->s->algo, fl_dtype_names[k->dtype], k->d, k->Br,
                         k->Bc, why);
                skipped.push_back(b);
            } else {
                ks.push_back(k);
            }
        }
    if (quick) { /* every kernel once at a small, ragged size (sanitizers, ctest) */
        for (auto k : ks) {
            add(k, 200, 0, "quick");
            if (k->causal_ok) add(k, 200, 2, "quick");
            if (k->s->nk_ok) /* unequal lengths, both corners */
                for (int cm = 0; cm <= 2; cm++) {
                    add(k, 77, cm, "quick", 200);
                    add(k, 200, cm, "quick", 77);
                }
            if (k->persistent) { /* one CTA for every tile: the tiles' hand-offs, and tiles that see no key */
                add(k, 200, 0, "quick, 1 CTA");
                cases.back().ctas = 1;
                add(k, 400, 2, "quick, 1 CTA", 77);
                cases.back().ctas = 1;
            }
        }
    } else {
        const int Ns[] = {128, 1000, 4096, 16384};
        for (auto k : ks) {
            if (k->dtype == FL_F16) /* the sweep: every tile, every N */
                for (int N : Ns) add(k, N, 0, "matrix");
            else /* fp32 (tight) and bf16: two tiles at two sizes */
                for (int N : {1000, 4096}) add(k, N, 0, "matrix");
            if (k->causal_ok && k->dtype == FL_F16 &&
                (k->version >= 7 || ((k->Br == 32 || k->Br == 64) && k->Bc <= 64 && k->Br == k->Bc)))
                for (int N : {1000, 4096}) add(k, N, 2, "causal");
            /* queries != keys (decode-like and the reverse), no mask and both causal corners; the
             * seeds' 2 x 5 and 5 x 2 examples among them */
            if (k->s->nk_ok && k->dtype == FL_F16 &&
                (k->version >= 7 || (k->Br == k->Bc && ((k->d == 64 && k->Br == 64) || (k->d == 128 && k->Br == 32)))))
                for (auto nn : {std::pair<int, int>(1000, 4096), {4096, 1000}, {2, 5}, {5, 2}})
                    for (int cm = 0; cm <= 2; cm++) add(k, nn.first, cm, "Nq!=Nk", nn.second);
            /* a persistent grid of 3 CTAs, each running many tiles in turn (at N <= 16384 one head has
             * fewer tiles than the GPU has SMs): no mask, causal, and bottom-right with Nk < N, where
             * the first tiles see no key */
            if (k->persistent && k->dtype == FL_F16)
                for (auto nn : {std::pair<int, int>(1000, 1000), {4096, 4096}, {4096, 1000}})
                    for (int cm : {0, 2}) {
                        add(k, nn.first, cm, "3 CTAs", nn.second);
                        cases.back().ctas = 3;
                    }
        }
        /* shapes A, B, A in one process, each checked (the deep dive's mixed-shape lesson) */
        const fl_kernel_info *A = find_kernel("flash2", FL_F16, 64, 64, 64);
        const fl_kernel_info *B = find_kernel("flash2", FL_F16, 128, 32, 32, 1);
        if (A && B && !unavailable(A) && !unavailable(B) && !only_algo && only_dt < 0 && !only_d && only_pass < 0 && !only_version) {
            add(A, 1000, 0, "ABA-A1");
            add(B, 1000, 0, "ABA-B");
            add(A, 1000, 0, "ABA-A2");
            cases.back().seed = cases[cases.size() - 3].seed; /* A again on the same inputs */
        }
    }

    for (auto &w : skipped) fprintf(stderr, "flashlab-gpu: skipped (does not run on this GPU): %s\n", w.c_str());
    if (cases.empty()) {
        fprintf(stderr, "flashlab-gpu: no case of the selection runs on this GPU: nothing was validated\n");
        return 1;
    }
    FILE *f = stdout;
    std::string tmp;
    if (csv) {
        tmp = std::string(csv) + ".tmp";
        f = fopen(tmp.c_str(), "w");
        if (!f) return bad((std::string("--csv: cannot write ") + tmp).c_str());
    }
    provenance(f, argc0, argv0, "flashlab-gpu validate: kernel byte counters vs the model, accuracy vs fp64");
    fprintf(f, "%s\n", csv_header);
    int fails = 0, compared = 0, equal = 0;
    double a1_err = NAN;
    for (auto &c : cases) {
        fl_gpu_outcome o;
        if (fl_gpu_case_run(&c, &o)) return 1;
        /* A after B must give what A gave before B: the same error on the same inputs */
        if (!strcmp(c.tag, "ABA-A1")) a1_err = o.max_err;
        if (!strcmp(c.tag, "ABA-A2") && !(o.max_err == a1_err)) {
            fprintf(stderr, "flashlab-gpu: shape A after B: error %.6e, before B %.6e\n", o.max_err, a1_err);
            o.ok = 0;
        }
        if (csv) print_case(c, o);
        csv_row(f, c, o);
        fails += !o.ok;
        if (o.model_ok && o.counted) { compared++; equal += o.tensors_equal; }
    }
    if (csv) {
        if (fclose(f) != 0 || rename(tmp.c_str(), csv) != 0) return bad("--csv: could not write the file");
    }
    printf("flashlab-gpu validate: %zu cases, %d compared with the model (%d equal to the element), "
           "%d failed; %zu variants skipped (they do not run on this GPU); versions that run here: %s\n",
           cases.size(), compared, equal, fails, skipped.size(), runnable_versions().c_str());
    return fails ? 1 : 0;
}

/* ---- curve: the model against M_eff (no GPU) ------------------------------------------------ */
static int cmd_curve(int argc, char **argv, int argc0, char **argv0)
{
    int64_t N = 4096, d = 64;
    const char *csv = NULL;
    fl_args a;
    const char *name, *iv, *v;
    int r;
    fl_args_init(&a, argc, argv);
    while ((r = fl_args_next(&a, &name, &iv)) == 1) {
        fl_status s = FL_OK;
        if ((s = fl_args_value(&a, name, iv, &v)) != FL_OK) return bad(fl_last_error());
        else if (!strcmp(name, "--N")) s = fl_parse_i64(name, v, 1, 1 << 20, &N);
        else if (!strcmp(name, "--d")) s = fl_parse_i64(name, v, 1, 1024, &d);
        else if (!strcmp(name, "--csv")) csv = v;
        else return bad((std::string(name) + ": unknown option").c_str());
        if (s != FL_OK) return bad(fl_last_error());
    }
    if (r < 0) return bad(fl_last_error());
    if (!csv) return bad("--csv: needs a file name");
    std::string tmp = std::string(csv) + ".tmp";
    FILE *f = fopen(tmp.c_str(), "w");
    if (!f) return bad("--csv: cannot write the file");
    fprintf(f, "# flashlab-gpu curve: model counts (fl_run FL_COUNT) of the kernels' tile shapes, "
               "M = M_eff = fl_footprint\n# commit: %s\n# command:",
            getenv("FLASHLAB_COMMIT") ? getenv("FLASHLAB_COMMIT") : "unknown (set FLASHLAB_COMMIT)");
    for (int i = 0; i < argc0; i++) fprintf(f, " %s", argv0[i]);
    fprintf(f, "\n# shapes: standard and flash2 Br = Bc = B; flash1 Br = min(B, d), Bc = B (the paper's)\n");
    fprintf(f, "algo,N,d,Br,Bc,M_eff,reads,writes,total,bytes_fp16\n");
    for (int al = 0; al < fl_schedule_count(); al++)
        for (int64_t B = 4; B <= 512 && B <= N; B = B < 16 ? B + 4 : B + B / 8) {
            fl_problem p = fl_problem_default();
            p.algo = (fl_algo)al;
            p.N = N;
            p.d = d;
            p.Bc = B;
            p.Br = al == FL_ALGO_FLASH1 ? (B < d ? B : d) : B;
            p.M = fl_footprint(p.algo, d, p.Br, p.Bc, d);
            p.elem_bytes = 2;
            p.max_events = 0;
            fl_result res;
            if (fl_run(&p, FL_COUNT, NULL, NULL, &res) != FL_OK) {
                fclose(f);
                return bad(fl_last_error());
            }
            fprintf(f, "%s,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld\n", fl_algo_name(p.algo),
                    (long long)N, (long long)d, (long long)p.Br, (long long)p.Bc, (long long)p.M,
                    (long long)res.reads, (long long)res.writes, (long long)res.total, (long long)res.bytes);
        }
    if (fclose(f) != 0 || rename(tmp.c_str(), csv) != 0) return bad("--csv: could not write the file");
    return 0;
}

/* Every kernel against the model, no GPU needed: its footprint equals fl_footprint and its pass
 * holds every tensor the model moves (fl_gpu_case_model at N = 200, no mask).  Prints one line;
 * returns the number of kernels that fail (each named on stderr). */
static int check_models(void)
{
    int bad = 0, n = 0;
    for (auto k : all_kernels()) {
        fl_gpu_case c = {k, 200, 0, 1, "list", 0, 0, 0};
        fl_gpu_outcome o;
        memset(&o, 0, sizeof o);
        fl_gpu_case_model(&c, &o);
        n++;
        if (!o.model_ok) {
            fprintf(stderr, "flashlab-gpu: v%d %s %s %s d=%d %dx%d: %s\n", k->version, k->s->algo, k->s->bwd ? "bwd" : "fwd",
                    fl_dtype_names[k->dtype], k->d, k->Br, k->Bc, o.model_msg);
            bad++;
        }
    }
    printf("\nmodel (no GPU): %d of %d kernels have the model's footprint and a pass holding every tensor the "
           "model moves (N = 200)\n", n - bad, n);
    return bad;
}

static int cmd_list(void)
{
    int nv;
    const fl_version_info *vs = fl_versions(&nv);
    const bool gpu = need_gpu_quiet();
    if (gpu) {
        cudaDeviceProp pr;
        int dev;
        CUDA_CHECK(cudaGetDevice(&dev));
        CUDA_CHECK(cudaGetDeviceProperties(&pr, dev));
        printf("GPU: %s (compute capability %d.%d, %zu bytes of shared memory a CTA); versions that run here: %s\n\n",
               pr.name, pr.major, pr.minor, fl_device_smem_optin(), runnable_versions().c_str());
    } else {
        printf("no GPU: which versions run is not probed (each needs the GPU below or newer)\n\n");
    }
    printf("%-3s %-24s %-7s %s\n", "v", "file", "needs", "what");
    for (int i = 0; i < nv; i++) {
        std::string here;
        if (gpu) {
            const fl_probe_result &p = probe_of(vs[i].version);
            here = !p.ran ? std::string("no: the binary has no code for this GPU") : !p.has ? "no: the code loaded is " + code_name(p)
                                                                                            : "yes (" + code_name(p) + " code)";
        }
        printf("%-3d %-24s %-7s %s%s%s\n", vs[i].version, vs[i].file, fl_need_name(vs[i].needs()), vs[i].what,
               gpu ? "; on this GPU: " : "", here.c_str());
    }
    printf("\n%-8s %-4s %-2s %-5s %-5s %-4s %-4s %-4s %-7s %-6s %-7s %s\n", "algo", "pass", "v", "dtype", "O", "d", "Br", "Bc",
           "M_eff", "causal", "smem", gpu ? "runs here" : "");
    for (auto k : all_kernels()) {
        const char *why = gpu ? unavailable(k) : NULL;
        printf("%-8s %-4s %-2d %-5s %-5s %-4d %-4d %-4d %-7ld %-6s %-7ld %s\n", k->s->algo, k->s->bwd ? "bwd" : "fwd", k->version,
               fl_dtype_names[k->dtype], fl_dtype_names[k->o_dtype], k->d, k->Br, k->Bc, k->m_eff, k->causal_ok ? "yes" : "no",
               k->smem, !gpu ? "" : why ? why : "yes");
    }
    return check_models() ? 1 : 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: flashlab-gpu COMMAND [options]   build: %s\n\n"
               "  list       the versions and kernel variants built in (--list too; no GPU needed),\n"
               "             each checked against the model; with a GPU, which of them run on it\n"
               "  run        one kernel: --algo standard|flash1|flash2 --N N --d 64|128 --Br B --Bc B\n"
               "             [--dtype fp32|fp16|bf16] [--causal] [--bwd] [--seed S] [--reps R] [--no-check]\n"
               "             [--version V]: that version of the kernel (7-11: the fast ones; default the first)\n"
               "  validate   the validation matrix and shapes A, B, A (A twice on the same inputs):\n"
               "             [--csv FILE] [--quick] [--seed S]\n"
               "             [--algo A] [--dtype T] [--d D] [--pass fwd|bwd] [--version V]: only those kernels\n"
               "  curve      model counts against M_eff (no GPU): --N N --d D --csv FILE\n\n"
               "Exit status: 0 passed, 1 a case failed, 2 bad input, 77 no GPU.\n", FL_BUILD);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "help")) { usage(stdout); return 0; }
    if (!strcmp(cmd, "list") || !strcmp(cmd, "--list")) return cmd_list();
    if (!strcmp(cmd, "run")) return cmd_run(argc - 2, argv + 2);
    if (!strcmp(cmd, "validate")) return cmd_validate(argc - 2, argv + 2, argc, argv);
    if (!strcmp(cmd, "curve")) return cmd_curve(argc - 2, argv + 2, argc, argv);
    fprintf(stderr, "flashlab-gpu: '%s': unknown command (see flashlab-gpu --help)\n", cmd);
    return 2;
}
