/* flashlab_gpu.cu: `flashlab-gpu`, the GPU harness: runs the CUDA kernels of kernels/ on random
 * inputs, checks them against the fp64 reference, and compares their byte counters with the
 * model's counts (fl_run in FL_COUNT mode, the only source of model counts).
 *
 *   flashlab-gpu list                         the kernel variants built in
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
}

#ifdef FL_COUNTERS
#define FL_BUILD "counters"
#else
#define FL_BUILD "timing (counters compiled out)"
#endif

static std::vector<const fl_kernel_info *> all_kernels()
{
    std::vector<const fl_kernel_info *> v;
    const fl_kernel_info *(*tables[])(int *) = {fl_standard_kernels, fl_flash1_kernels, fl_flash2_kernels,
                                                   fl_flash2_bwd_kernels, fl_standard_bwd_kernels,
                                                   fl_fast_fwd_kernels, fl_fast_std_kernels, fl_fast_bwd_kernels,
                                                   fl_wg_fwd_kernels, fl_fast_std_bwd_kernels};
    for (auto t : tables) {
        int n;
        const fl_kernel_info *k = t(&n);
        for (int i = 0; i < n; i++) v.push_back(&k[i]);
    }
    return v;
}

/* The kernel of this schedule, type and tiles; version 0: the first built (the plainest). */
static const fl_kernel_info *find_kernel(const char *algo, int dtype, int d, int Br, int Bc, int bwd = 0, int version = 0)
{
    for (auto k : all_kernels())
        if (!strcmp(k->algo, algo) && k->dtype == dtype && k->d == d && k->Br == Br && k->Bc == Bc && k->bwd == bwd &&
            (!version || k->version == version))
            return k;
    return NULL;
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
    fprintf(f, "# build: %s; kernels: v1 standard, v2 flash1 (wavefront), v3 flash2; fp32 arithmetic\n", FL_BUILD);
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
    "acc_ok,flag_polls,ms,status,Nk,corner";

static void csv_row(FILE *f, const fl_gpu_case &c, const fl_gpu_outcome &o)
{
    const fl_kernel_info *k = c.k;
    fprintf(f, "%s,%s,%s,%d,%s,%d,%d,%d,%d,%d,%ld,", c.tag, k->algo, k->bwd ? "bwd" : "fwd", k->version, fl_dtype_names[k->dtype],
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
            o.unwritten, o.acc_ok, o.gpu_polls, o.ms, o.ok ? (o.model_ok ? "ok" : "ok (no model counts)") : "FAIL");
    fprintf(f, ",%d,%s\n", c.Nk ? c.Nk : c.N, c.causal == 1 ? "top-left" : c.causal == 2 ? "bottom-right" : "none");
}

static void print_case(const fl_gpu_case &c, const fl_gpu_outcome &o)
{
    const fl_kernel_info *k = c.k;
    printf("%-6s %-8s %s %-4s N=%-5d", c.tag, k->algo, k->bwd ? "bwd" : "fwd", fl_dtype_names[k->dtype], c.N);
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
        else if (!strcmp(name, "--version")) s = fl_parse_i64(name, v, 1, 11, &version);
        else if (!strcmp(name, "--dtype")) { if (parse_dtype(v, &dt)) return bad("--dtype: choose fp32, fp16 or bf16"); }
        else return bad((std::string(name) + ": unknown option (see flashlab-gpu --help)").c_str());
        if (s != FL_OK) return bad(fl_last_error());
    }
    if (r < 0) return bad(fl_last_error());
    const fl_kernel_info *k = find_kernel(algo, dt, (int)d, (int)Br, (int)Bc, bwd, (int)version);
    if (bwd && N > 2048) check = 0; /* the full fp64 backward reference is O(N^2 d) on the CPU */
    if (!k) return bad("--algo/--dtype/--d/--Br/--Bc: no such kernel is built (see flashlab-gpu list)");
    if (causal && !k->causal_ok) return bad("--causal: this schedule has no causal kernel");
    if (Nk && Nk != N && (bwd || strcmp(algo, "flash2")))
        return bad("--Nk: only the flash2 forward kernel takes Nk != N");
    if (int g = need_gpu()) return g;
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
    printf("bytes: M_eff=%ld model_read=%lld model_write=%lld counter_read=%lld counter_write=%lld polls=%lld\n",
           o.m_eff, o.model_rd_bytes, o.model_wr_bytes, o.gpu_rd_bytes, o.gpu_wr_bytes, o.gpu_polls);
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
        else if (!strcmp(name, "--version")) s = fl_parse_i64(name, v, 1, 11, &only_version);
        else return bad((std::string(name) + ": unknown option (see flashlab-gpu --help)").c_str());
        if (s != FL_OK) return bad(fl_last_error());
    }
    if (r < 0) return bad(fl_last_error());
    if (int g = need_gpu()) return g;

    std::vector<fl_gpu_case> cases;
    uint64_t sd = (uint64_t)seed;
    auto add = [&](const fl_kernel_info *k, int N, int causal, const char *tag, int Nk = 0) {
        fl_gpu_case c = {k, N, causal, sd++, tag, !k->bwd || N <= 1024, 0, Nk}; /* bwd reference: O(N^2 d) */
        cases.push_back(c);
    };
    std::vector<const fl_kernel_info *> ks; /* optionally only some (sanitizers are slow) */
    for (auto k : all_kernels())
        if ((!only_algo || !strcmp(k->algo, only_algo)) && (only_dt < 0 || k->dtype == only_dt) &&
            (!only_d || k->d == only_d) && (only_pass < 0 || k->bwd == only_pass) &&
            (!only_version || k->version == only_version))
            ks.push_back(k);
    if (quick) { /* every kernel once at a small, ragged size (sanitizers, ctest) */
        for (auto k : ks) {
            add(k, 200, 0, "quick");
            if (k->causal_ok) add(k, 200, 2, "quick");
            if (!strcmp(k->algo, "flash2") && !k->bwd) /* unequal lengths, both corners */
                for (int cm = 0; cm <= 2; cm++) {
                    add(k, 77, cm, "quick", 200);
                    add(k, 200, cm, "quick", 77);
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
            if (!strcmp(k->algo, "flash2") && !k->bwd && k->dtype == FL_F16 &&
                (k->version >= 7 || (k->Br == k->Bc && ((k->d == 64 && k->Br == 64) || (k->d == 128 && k->Br == 32)))))
                for (auto nn : {std::pair<int, int>(1000, 4096), {4096, 1000}, {2, 5}, {5, 2}})
                    for (int cm = 0; cm <= 2; cm++) add(k, nn.first, cm, "Nq!=Nk", nn.second);
        }
        /* shapes A, B, A in one process, each checked (the deep dive's mixed-shape lesson) */
        const fl_kernel_info *A = find_kernel("flash2", FL_F16, 64, 64, 64);
        const fl_kernel_info *B = find_kernel("flash2", FL_F16, 128, 32, 32, 1);
        if (A && B && !only_algo && only_dt < 0 && !only_d && only_pass < 0 && !only_version) {
            add(A, 1000, 0, "ABA-A1");
            add(B, 1000, 0, "ABA-B");
            add(A, 1000, 0, "ABA-A2");
            cases.back().seed = cases[cases.size() - 3].seed; /* A again on the same inputs */
        }
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
        if (o.model_ok) { compared++; equal += o.tensors_equal; }
    }
    if (csv) {
        if (fclose(f) != 0 || rename(tmp.c_str(), csv) != 0) return bad("--csv: could not write the file");
    }
    printf("flashlab-gpu validate: %zu cases, %d compared with the model (%d equal to the element), "
           "%d failed\n", cases.size(), compared, equal, fails);
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

static int cmd_list(void)
{
    printf("%-8s %-4s %-2s %-5s %-5s %-4s %-4s %-4s %-7s %s\n", "algo", "pass", "v", "dtype", "O", "d", "Br", "Bc", "M_eff", "causal");
    for (auto k : all_kernels())
        printf("%-8s %-4s %-2d %-5s %-5s %-4d %-4d %-4d %-7ld %s\n", k->algo, k->bwd ? "bwd" : "fwd", k->version, fl_dtype_names[k->dtype],
               fl_dtype_names[k->o_dtype], k->d, k->Br, k->Bc, k->m_eff, k->causal_ok ? "yes" : "no");
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: flashlab-gpu COMMAND [options]   build: %s\n\n"
               "  list       the kernel variants built in\n"
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
    if (!strcmp(cmd, "list")) return cmd_list();
    if (!strcmp(cmd, "run")) return cmd_run(argc - 2, argv + 2);
    if (!strcmp(cmd, "validate")) return cmd_validate(argc - 2, argv + 2, argc, argv);
    if (!strcmp(cmd, "curve")) return cmd_curve(argc - 2, argv + 2, argc, argv);
    fprintf(stderr, "flashlab-gpu: '%s': unknown command (see flashlab-gpu --help)\n", cmd);
    return 2;
}
