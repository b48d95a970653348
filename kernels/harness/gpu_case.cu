/* gpu_case.cu: one validation case (see gpu_case.h). */
#include "gpu_case.h"

#include <algorithm>
#include <math.h>
#include <string.h>
#include <vector>

extern "C" {
#include "attention_bwd.h"
#include "attention_ref.h"
#include "rng.h"
#include "run.h"
}

/* ---- host-side storage types ------------------------------------------------------------ */
static double round_to(int dtype, double x)
{
    switch (dtype) {
    case FL_F16: return (double)__half2float(__float2half_rn((float)x));
    case FL_BF16: return (double)__bfloat162float(__float2bfloat16_rn((float)x));
    default: return (double)(float)x;
    }
}
static double dtype_eps(int dtype) { return dtype == FL_F16 ? 0x1p-10 : dtype == FL_BF16 ? 0x1p-7 : 0x1p-23; }

static void pack(int dtype, const std::vector<double> &x, std::vector<unsigned char> &out)
{
    const int b = fl_dtype_bytes[dtype];
    out.resize(x.size() * b);
    for (size_t i = 0; i < x.size(); i++) {
        if (dtype == FL_F16) { __half h = __float2half_rn((float)x[i]); memcpy(&out[i * b], &h, b); }
        else if (dtype == FL_BF16) { __nv_bfloat16 h = __float2bfloat16_rn((float)x[i]); memcpy(&out[i * b], &h, b); }
        else { float f = (float)x[i]; memcpy(&out[i * b], &f, b); }
    }
}
static double unpack1(int dtype, const unsigned char *p)
{
    if (dtype == FL_F16) { __half h; memcpy(&h, p, 2); return __half2float(h); }
    if (dtype == FL_BF16) { __nv_bfloat16 h; memcpy(&h, p, 2); return __bfloat162float(h); }
    float f; memcpy(&f, p, 4); return f;
}

/* ---- the model ------------------------------------------------------------------------------ */
static void model_counts(const fl_gpu_case *c, fl_gpu_outcome *o)
{
    const fl_kernel_info *k = c->k;
    fl_algo algo;
    o->model_ok = 0;
    if (fl_algo_parse(k->algo, &algo) != FL_OK) {
        snprintf(o->model_msg, sizeof o->model_msg, "model: %s", fl_last_error());
        return;
    }
    const int64_t fp = k->bwd ? fl_footprint_pass(algo, 1, 1, k->d, k->Br, k->Bc, k->d)
                              : fl_footprint(algo, k->d, k->Br, k->Bc, k->d);
    if (fp != k->m_eff) {
        snprintf(o->model_msg, sizeof o->model_msg,
                 "kernel footprint %ld != model footprint %lld (docs/model.md F0-F2)", k->m_eff,
                 (long long)fp);
        return;
    }
    fl_problem p = fl_problem_default();
    p.algo = algo;
    p.N = c->N;
    p.d = k->d;
    p.M = fp;
    p.Br = k->Br;
    p.Bc = k->Bc;
    p.elem_bytes = fl_dtype_bytes[k->dtype];
    p.max_events = 0;
    p.causal = (fl_causal)c->causal; /* 0 none, 1 top-left, 2 bottom-right: the model's values */
    p.Nk = c->Nk && c->Nk != c->N ? c->Nk : 0;
    p.pass = k->bwd ? FL_PASS_BWD : FL_PASS_FWD; /* BWD: the backward's traffic alone */
    fl_result r;
    if (fl_run(&p, FL_COUNT, NULL, NULL, &r) != FL_OK) { /* e.g. a variant the model lacks yet */
        snprintf(o->model_msg, sizeof o->model_msg, "model: %s", fl_last_error());
        return;
    }
    if (!k->bwd && r.b.Bd != p.d) {
        snprintf(o->model_msg, sizeof o->model_msg, "model chose Bd = %lld != d", (long long)r.b.Bd);
        return;
    }
    o->model_ok = 1;
    for (int i = 0; i < r.ntensors; i++) {
        int t = -1;
        for (int u = 0; u < FL_NT; u++)
            if (strcmp(r.t[i].name, fl_tensor_names[u]) == 0) t = u;
        if (t < 0) { /* a tensor the kernels do not know: cannot be equal */
            o->model_ok = 0;
            snprintf(o->model_msg, sizeof o->model_msg, "model tensor '%s' unknown to the kernels", r.t[i].name);
            return;
        }
        o->model_rd[t] = r.t[i].reads;
        o->model_wr[t] = r.t[i].writes;
        o->model_rd_bytes += r.t[i].reads * r.t[i].elem_bytes;
        o->model_wr_bytes += r.t[i].writes * r.t[i].elem_bytes;
    }
    o->model_reads = r.reads;
    o->model_writes = r.writes;
    o->model_bytes = r.bytes;
}

/* ---- the reference on sampled rows ---------------------------------------------------------- */
struct keep_ctx { const std::vector<int> *rows; long off; };
static int keep_causal(int64_t i, int64_t j, const void *ctx)
{
    const keep_ctx *k = (const keep_ctx *)ctx;
    return fl_causal_keep((*k->rows)[i], j, k->off);
}

/* The naive same-precision row: s, p and o rounded to the storage type, fp32 accumulation. */
static void naive_row(int dtype, int N, int d, int causal, long off, int i, const double *Q, const double *K,
                      const double *V, std::vector<float> &s, double *o)
{
    const float scale = 1.0f / sqrtf((float)d);
    float mx = -INFINITY;
    for (int j = 0; j < N; j++) {
        if (causal && !fl_causal_keep(i, j, off)) { s[j] = -INFINITY; continue; }
        float acc = 0.f;
        for (int t = 0; t < d; t++) acc += (float)Q[(long)i * d + t] * (float)K[(long)j * d + t];
        s[j] = (float)round_to(dtype, acc * scale);
        mx = fmaxf(mx, s[j]);
    }
    float sum = 0.f;
    for (int j = 0; j < N; j++) sum += (s[j] == -INFINITY) ? 0.f : expf(s[j] - mx);
    for (int j = 0; j < N; j++) s[j] = (s[j] == -INFINITY) ? 0.f : (float)round_to(dtype, expf(s[j] - mx) / sum);
    for (int t = 0; t < d; t++) {
        float acc = 0.f;
        for (int j = 0; j < N; j++) acc += s[j] * (float)V[(long)j * d + t];
        o[t] = round_to(dtype, acc);
    }
}

static std::vector<int> sample_rows(int N, uint64_t seed)
{
    std::vector<int> rows;
    if (N <= 64) {
        for (int i = 0; i < N; i++) rows.push_back(i);
        return rows;
    }
    rows.push_back(0);
    rows.push_back(N - 1);
    rows.push_back(N / 2);
    uint64_t st = seed ^ 0x5eedULL;
    while (rows.size() < 32) rows.push_back((int)(fl_rng_next(&st) % (uint64_t)N));
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    return rows;
}

/* ---- the backward's accuracy: full gradients (N small) ------------------------------------- */
static int keep_lower(int64_t i, int64_t j, const void *ctx) { (void)ctx; return fl_causal_keep(i, j, 0); }

/* Naive same-precision backward (what an unfused framework does in the storage type): S, P, dP,
 * dS and the gradients rounded to the storage type, fp32 accumulation, D_i = sum_j P_ij dP_ij. */
static void naive_bwd(int dt, int N, int d, int causal, const std::vector<double> &Q, const std::vector<double> &K,
                      const std::vector<double> &V, const std::vector<double> &G, std::vector<double> &dQ,
                      std::vector<double> &dK, std::vector<double> &dV)
{
    const float scale = 1.0f / sqrtf((float)d);
    std::vector<float> P((size_t)N * N), dS((size_t)N * N);
    for (int i = 0; i < N; i++) {
        float *p = &P[(size_t)i * N], mx = -INFINITY, sum = 0.f, Dd = 0.f;
        for (int j = 0; j < N; j++) {
            if (causal && !fl_causal_keep(i, j, 0)) { p[j] = -INFINITY; continue; }
            float acc = 0.f;
            for (int t = 0; t < d; t++) acc += (float)Q[(long)i * d + t] * (float)K[(long)j * d + t];
            p[j] = (float)round_to(dt, acc * scale);
            mx = fmaxf(mx, p[j]);
        }
        for (int j = 0; j < N; j++) sum += p[j] == -INFINITY ? 0.f : expf(p[j] - mx);
        for (int j = 0; j < N; j++) p[j] = p[j] == -INFINITY ? 0.f : (float)round_to(dt, expf(p[j] - mx) / sum);
        float *g = &dS[(size_t)i * N];
        for (int j = 0; j < N; j++) {
            float acc = 0.f;
            for (int t = 0; t < d; t++) acc += (float)G[(long)i * d + t] * (float)V[(long)j * d + t];
            g[j] = (float)round_to(dt, acc); /* dP */
            Dd += p[j] * g[j];
        }
        for (int j = 0; j < N; j++) g[j] = (float)round_to(dt, p[j] * (g[j] - Dd));
    }
    for (int i = 0; i < N; i++)
        for (int t = 0; t < d; t++) {
            float acc = 0.f;
            for (int j = 0; j < N; j++) acc += dS[(size_t)i * N + j] * (float)K[(long)j * d + t];
            dQ[(long)i * d + t] = round_to(dt, scale * acc);
        }
    for (int j = 0; j < N; j++)
        for (int t = 0; t < d; t++) {
            float av = 0.f, ak = 0.f;
            for (int i = 0; i < N; i++) {
                av += P[(size_t)i * N + j] * (float)G[(long)i * d + t];
                ak += dS[(size_t)i * N + j] * (float)Q[(long)i * d + t];
            }
            dV[(long)j * d + t] = round_to(dt, av);
            dK[(long)j * d + t] = round_to(dt, scale * ak);
        }
}

/* ---- the tiles against the launched kernels --------------------------------------------------- */
/* Step 4 of gpu_case.h: for every launched kernel, its static shared memory (cudaFuncGetAttributes)
 * equals its traits' __shared__ arrays, its dynamic shared-memory limit the traits' bytes, and the
 * model's buffers fit in what it has; the largest footprint of the schedule's kernels is M_eff. */
static void check_tiles(const fl_kernel_info *k, const fl_launch_log &log, fl_gpu_outcome *o)
{
    long fp = 0;
    o->tiles_ok = 1;
    o->tiles_msg[0] = 0;
    if (log.n == 0) {
        o->tiles_ok = 0;
        snprintf(o->tiles_msg, sizeof o->tiles_msg, "no launch was recorded");
        return;
    }
    for (int i = 0; i < log.n; i++) {
        const fl_launch_rec &r = log.r[i];
        const long have = (long)r.attr.sharedSizeBytes + (long)r.dyn_launched;
        if (have > o->smem_bytes) o->smem_bytes = have;
        if ((long)r.attr.localSizeBytes > o->local_bytes) o->local_bytes = (long)r.attr.localSizeBytes;
        if (r.tiles.footprint > fp) fp = r.tiles.footprint;
        const char *why = (size_t)r.attr.sharedSizeBytes != r.tiles.static_bytes ? "static shared memory != its traits'"
                          : (size_t)r.attr.maxDynamicSharedSizeBytes != r.tiles.dyn_bytes ? "dynamic shared memory != its traits'"
                          : r.tiles.smem_model_bytes > (size_t)have ? "the model's buffers exceed its shared memory"
                          : r.tiles.footprint > k->m_eff ? "a footprint above M_eff"
                                                         : NULL;
        if (why && o->tiles_ok) {
            o->tiles_ok = 0;
            snprintf(o->tiles_msg, sizeof o->tiles_msg, "%s: %s (attributes: %zu static + %d dynamic bytes; traits: %zu + %zu)",
                     r.tiles.kernel, why, r.attr.sharedSizeBytes, r.attr.maxDynamicSharedSizeBytes, r.tiles.static_bytes,
                     r.tiles.dyn_bytes);
        }
    }
    if (o->tiles_ok && fp != k->m_eff) {
        o->tiles_ok = 0;
        snprintf(o->tiles_msg, sizeof o->tiles_msg, "largest footprint of the launched kernels %ld != M_eff %ld", fp, k->m_eff);
    }
}

/* The verdict: the model ran, the tiles passed, the counts equal the model's (counters build),
 * every output was written and, when checked, accurate, and no hand-off timed out. */
static int case_ok(const fl_gpu_case *c, const fl_gpu_outcome *o)
{
    return o->model_ok && o->tiles_ok && (!o->counted || o->tensors_equal) &&
           (c->check ? o->acc_ok : o->unwritten == 0) && !o->wait_timeout;
}

/* ---- one case ------------------------------------------------------------------------------ */
int fl_gpu_case_run(const fl_gpu_case *c, fl_gpu_outcome *o)
{
    const fl_kernel_info *k = c->k;
    const int N = c->N, d = k->d, dt = k->dtype, eb = fl_dtype_bytes[dt];
    const int odt = k->o_dtype, ob = fl_dtype_bytes[odt]; /* O's type (flash1: fp32) */
    const long Nd = (long)N * d;
    memset(o, 0, sizeof *o);
    o->m_eff = k->m_eff;
    model_counts(c, o);

    /* inputs, rounded to the storage type (the reference sees the rounded values) */
    const int Nk = c->Nk ? c->Nk : N;        /* keys: rows of K, V */
    const long Nkd = (long)Nk * d;
    const long off = c->causal == 2 ? (long)Nk - N : 0; /* bottom-right: j <= i + Nk - Nq */
    if (Nk != N && (k->bwd || strcmp(k->algo, "flash2"))) {
        fprintf(stderr, "flashlab-gpu: --Nk != --N: only the flash2 forward kernel takes it\n");
        return 1;
    }
    std::vector<double> Q(Nd), K(Nkd), V(Nkd), G(k->bwd ? Nd : 0);
    uint64_t st = c->seed;
    fl_rng_fill(&st, Q.data(), Nd, -1.0, 1.0);
    fl_rng_fill(&st, K.data(), Nkd, -1.0, 1.0);
    fl_rng_fill(&st, V.data(), Nkd, -1.0, 1.0);
    if (k->bwd) fl_rng_fill(&st, G.data(), Nd, -1.0, 1.0); /* dO */
    for (long i = 0; i < Nd; i++) Q[i] = round_to(dt, Q[i]);
    for (long i = 0; i < Nkd; i++) { K[i] = round_to(dt, K[i]); V[i] = round_to(dt, V[i]); }
    for (long i = 0; i < (long)G.size(); i++) G[i] = round_to(dt, G[i]);
    std::vector<unsigned char> hQ, hK, hV, hG;
    pack(dt, Q, hQ);
    pack(dt, K, hK);
    pack(dt, V, hV);
    pack(dt, G, hG);

    fl_gpu_args a;
    memset(&a, 0, sizeof a);
    a.N = N;
    a.d = d;
    a.causal = c->causal;
    a.Nk = Nk;
    a.ctas = c->ctas;
    void *dQ, *dK, *dV, *dO, *dS = NULL, *dP = NULL;
    float *dl = NULL, *dm = NULL, *dL = NULL;
    unsigned *dflags = NULL;
    int *derr = NULL;
    fl_gpu_counters *dcnt = NULL;
    CUDA_CHECK(cudaMalloc(&dQ, Nd * eb));
    CUDA_CHECK(cudaMalloc(&dK, Nkd * eb));
    CUDA_CHECK(cudaMalloc(&dV, Nkd * eb));
    CUDA_CHECK(cudaMalloc(&dO, Nd * ob));
    CUDA_CHECK(cudaMemcpy(dQ, hQ.data(), Nd * eb, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dK, hK.data(), Nkd * eb, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dV, hV.data(), Nkd * eb, cudaMemcpyHostToDevice));
    const bool is_std = strcmp(k->algo, "standard") == 0, is_f1 = strcmp(k->algo, "flash1") == 0;
    if (is_std) {
        CUDA_CHECK(cudaMalloc(&dS, (size_t)N * N * eb));
        CUDA_CHECK(cudaMalloc(&dP, (size_t)N * N * eb));
    }
    CUDA_CHECK(cudaMalloc(&dl, N * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dm, N * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dL, N * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dflags, ((size_t)N + 1) * sizeof(unsigned) /* any Br */));
    CUDA_CHECK(cudaMalloc(&derr, sizeof(int)));
    CUDA_CHECK(cudaMalloc(&dcnt, sizeof(fl_gpu_counters)));
    CUDA_CHECK(cudaMemset(derr, 0, sizeof(int)));
    CUDA_CHECK(cudaMemset(dcnt, 0, sizeof(fl_gpu_counters)));
    /* poison every output and workspace: 0xFF bytes are NaN in fp32, fp16 and bf16 */
    CUDA_CHECK(cudaMemset(dO, 0xFF, Nd * ob));
    CUDA_CHECK(cudaMemset(dL, 0xFF, N * sizeof(float)));
    CUDA_CHECK(cudaMemset(dl, 0xFF, N * sizeof(float)));
    CUDA_CHECK(cudaMemset(dm, 0xFF, N * sizeof(float)));
    if (is_std) {
        CUDA_CHECK(cudaMemset(dS, 0xFF, (size_t)N * N * eb));
        CUDA_CHECK(cudaMemset(dP, 0xFF, (size_t)N * N * eb));
    }
    CUDA_CHECK(cudaMemset(dflags, 0xFF, ((size_t)N + 1) * sizeof(unsigned) /* any Br */));
    a.Q = dQ; a.K = dK; a.V = dV; a.O = dO; a.S = dS; a.P = dP;
    a.l = dl; a.m = dm; a.L = dL; a.flags = dflags; a.error = derr; a.cnt = dcnt;
    a.stream = 0;
    void *gdO = NULL, *gdK = NULL, *gdV = NULL, *gdP = NULL, *gdS = NULL;
    float *gdQ = NULL, *gD = NULL;
    if (k->bwd) { /* the forward first (uncounted) saves O and L; then poison the gradients */
        const fl_kernel_info *f = NULL;
        int nf;
        /* the fast standard backward (version 11) takes P from the fast standard forward (version
         * 8), the only standard forward with the causal mask */
        const fl_kernel_info *tab = !strcmp(k->algo, "flash1") ? fl_v02_kernels(&nf)
                                    : is_std ? (k->version == 11 ? fl_v08_kernels(&nf) : fl_v01_kernels(&nf))
                                             : fl_v03_kernels(&nf);
        for (int i = 0; i < nf; i++) /* the same tiles if built, else the first of this type */
            if (tab[i].dtype == dt && tab[i].d == d && (!f || (tab[i].Br == k->Br && tab[i].Bc == k->Bc))) f = &tab[i];
        if (!f) { fprintf(stderr, "flashlab-gpu: no %s forward for this backward\n", k->algo); return 1; }
        a.cnt = NULL;
        f->launch(&a);
        CUDA_CHECK(cudaDeviceSynchronize());
        a.cnt = dcnt;
        CUDA_CHECK(cudaMalloc(&gdO, Nd * eb));
        CUDA_CHECK(cudaMalloc(&gdK, Nd * eb));
        CUDA_CHECK(cudaMalloc(&gdV, Nd * eb));
        CUDA_CHECK(cudaMalloc(&gdQ, Nd * sizeof(float)));
        CUDA_CHECK(cudaMalloc(&gD, N * sizeof(float)));
        CUDA_CHECK(cudaMemcpy(gdO, hG.data(), Nd * eb, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemset(gdK, 0xFF, Nd * eb));
        CUDA_CHECK(cudaMemset(gdV, 0xFF, Nd * eb));
        CUDA_CHECK(cudaMemset(gdQ, 0xFF, Nd * sizeof(float)));
        CUDA_CHECK(cudaMemset(gD, 0xFF, N * sizeof(float)));
        a.dO = gdO; a.dQ = gdQ; a.dK = gdK; a.dV = gdV; a.Dv = gD;
        if (is_std) { /* dP and dS of the standard backward: N x N each, poisoned */
            CUDA_CHECK(cudaMalloc(&gdP, (size_t)N * N * eb));
            CUDA_CHECK(cudaMalloc(&gdS, (size_t)N * N * eb));
            CUDA_CHECK(cudaMemset(gdP, 0xFF, (size_t)N * N * eb));
            CUDA_CHECK(cudaMemset(gdS, 0xFF, (size_t)N * N * eb));
            a.dPbuf = gdP;
            a.dSbuf = gdS;
        }
    }

    cudaEvent_t e0, e1;
    fl_launch_log log;
    log.n = 0;
    a.log = &log;
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    CUDA_CHECK(cudaEventRecord(e0));
    k->launch(&a);
    CUDA_CHECK(cudaEventRecord(e1));
    CUDA_CHECK(cudaEventSynchronize(e1));
    CUDA_CHECK(cudaGetLastError());
    a.log = NULL;
    check_tiles(k, log, o);
    float ms = 0.f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    o->ms = ms;
    int herr = 0;
    CUDA_CHECK(cudaMemcpy(&herr, derr, sizeof(int), cudaMemcpyDeviceToHost));
    o->wait_timeout = herr;

    fl_gpu_counters hc;
    CUDA_CHECK(cudaMemcpy(&hc, dcnt, sizeof hc, cudaMemcpyDeviceToHost));
    o->gpu_polls = (long long)hc.rd_elems[FL_T_FLAGS];
    o->gpu_flag_writes = (long long)hc.wr_elems[FL_T_FLAGS];
    for (int t = 0; t < FL_NT_DATA; t++) {
        o->gpu_rd[t] = (long long)hc.rd_elems[t];
        o->gpu_wr[t] = (long long)hc.wr_elems[t];
        o->gpu_reads += o->gpu_rd[t];
        o->gpu_writes += o->gpu_wr[t];
        o->gpu_bytes += (long long)(hc.rd_bytes[t] + hc.wr_bytes[t]);
        o->gpu_rd_bytes += (long long)hc.rd_bytes[t];
        o->gpu_wr_bytes += (long long)hc.wr_bytes[t];
    }
#ifdef FL_COUNTERS
    const int counted = 1;
#else
    const int counted = 0; /* a timing build: nothing to compare */
#endif
    o->counted = counted;
    if (o->model_ok && counted) {
        o->tensors_equal = 1;
        for (int t = 0; t < FL_NT_DATA; t++)
            if (o->gpu_rd[t] != o->model_rd[t] || o->gpu_wr[t] != o->model_wr[t]) o->tensors_equal = 0;
        o->ratio = (double)(o->gpu_reads + o->gpu_writes) / (double)(o->model_reads + o->model_writes);
        o->bytes_ratio = (double)o->gpu_bytes / (double)o->model_bytes;
    }

    /* extra timed launches (outputs are rewritten identically) */
    if (c->reps > 0) {
        std::vector<float> t(c->reps);
        a.cnt = NULL;
        for (int r = 0; r < c->reps; r++) {
            CUDA_CHECK(cudaEventRecord(e0));
            k->launch(&a);
            CUDA_CHECK(cudaEventRecord(e1));
            CUDA_CHECK(cudaEventSynchronize(e1));
            CUDA_CHECK(cudaEventElapsedTime(&t[r], e0, e1));
        }
        std::sort(t.begin(), t.end());
        o->ms_median = t[c->reps / 2];
    }

    if (k->bwd) { /* gradients: every element written, and (small N) accurate */
        std::vector<float> hdQ(Nd);
        std::vector<unsigned char> hdK(Nd * eb), hdV(Nd * eb);
        CUDA_CHECK(cudaMemcpy(hdQ.data(), gdQ, Nd * sizeof(float), cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(hdK.data(), gdK, Nd * eb, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(hdV.data(), gdV, Nd * eb, cudaMemcpyDeviceToHost));
        for (long i = 0; i < Nd; i++)
            o->unwritten += isnan(hdQ[i]) + isnan(unpack1(dt, &hdK[i * eb])) + isnan(unpack1(dt, &hdV[i * eb]));
        o->max_err = o->naive_err = o->tol = o->L_err = NAN;
        o->acc_ok = 0;
        if (c->check) {
            std::vector<double> rQ(Nd), rK(Nd), rV(Nd), nQ(Nd), nK(Nd), nV(Nd);
            if (fl_ref_attention_bwd(N, N, d, d, Q.data(), K.data(), V.data(), G.data(), 1.0 / sqrt((double)d),
                                     c->causal ? keep_lower : NULL, NULL, rQ.data(), rK.data(), rV.data(),
                                     NULL, NULL, NULL, NULL) != FL_OK) {
                fprintf(stderr, "flashlab-gpu: reference backward: %s\n", fl_last_error());
                return 1;
            }
            naive_bwd(dt, N, d, c->causal, Q, K, V, G, nQ, nK, nV);
            double worst = -1.0;
            o->acc_ok = o->unwritten == 0;
            for (int w = 0; w < 3; w++) { /* dQ, dK, dV: each must pass; report the tightest */
                const std::vector<double> &ref = w == 0 ? rQ : w == 1 ? rK : rV, &nai = w == 0 ? nQ : w == 1 ? nK : nV;
                double ek = 0.0, en = 0.0, sc = 0.0;
                for (long i = 0; i < Nd; i++) {
                    const double got = w == 0 ? hdQ[i] : unpack1(dt, &(w == 1 ? hdK : hdV)[i * eb]);
                    ek = isnan(got) || isnan(ek) ? NAN : fmax(ek, fabs(got - ref[i]));
                    en = fmax(en, fabs(nai[i] - ref[i]));
                    sc = fmax(sc, fabs(ref[i]));
                }
                const double tol = 2.0 * en + 0.5 * dtype_eps(dt) * sc;
                if (isnan(ek) || ek > tol) o->acc_ok = 0;
                const double q = isnan(ek) ? 1e300 : ek / tol;
                if (q > worst) { worst = q; o->max_err = ek; o->naive_err = en; o->tol = tol; }
            }
        }
        o->ok = case_ok(c, o);
        CUDA_CHECK(cudaEventDestroy(e0));
        CUDA_CHECK(cudaEventDestroy(e1));
        void *bufs[] = {dQ, dK, dV, dO, dS, dP, dl, dm, dL, dflags, derr, dcnt, gdO, gdK, gdV, gdQ, gD, gdP, gdS};
        for (void *b : bufs)
            if (b) CUDA_CHECK(cudaFree(b));
        return 0;
    }

    /* every output element written? */
    std::vector<unsigned char> hO(Nd * ob);
    std::vector<float> hL(N);
    CUDA_CHECK(cudaMemcpy(hO.data(), dO, Nd * ob, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(hL.data(), dL, N * sizeof(float), cudaMemcpyDeviceToHost));
    for (long i = 0; i < Nd; i++)
        if (isnan(unpack1(odt, &hO[i * ob]))) o->unwritten++;

    o->max_err = o->naive_err = o->tol = o->L_err = NAN;
    o->acc_ok = 0;
    if (c->check) {
        std::vector<int> rows = sample_rows(N, c->seed);
        const int ns = (int)rows.size();
        std::vector<double> Qs((long)ns * d), Oref((long)ns * d), Lref(ns), on(d);
        for (int r = 0; r < ns; r++)
            for (int t = 0; t < d; t++) Qs[(long)r * d + t] = Q[(long)rows[r] * d + t];
        keep_ctx kc = {&rows, off};
        if (fl_ref_attention(ns, Nk, d, d, Qs.data(), K.data(), V.data(), 1.0 / sqrt((double)d),
                             c->causal ? keep_causal : NULL, &kc, Oref.data(), Lref.data()) != FL_OK) {
            fprintf(stderr, "flashlab-gpu: reference: %s\n", fl_last_error());
            return 1;
        }
        std::vector<float> srow(Nk);
        double ek = 0.0, en = 0.0, scale = 0.0, el = 0.0;
        for (int r = 0; r < ns; r++) {
            naive_row(dt, Nk, d, c->causal, off, rows[r], Q.data(), K.data(), V.data(), srow, on.data());
            for (int t = 0; t < d; t++) {
                const double ref = Oref[(long)r * d + t];
                const double got = unpack1(odt, &hO[((long)rows[r] * d + t) * ob]);
                ek = isnan(got) ? NAN : fmax(ek, fabs(got - ref));
                en = fmax(en, fabs(on[t] - ref));
                scale = fmax(scale, fabs(ref));
                if (isnan(ek)) break;
            }
            if (strcmp(k->algo, "flash2") == 0 && isfinite(Lref[r]))
                el = fmax(el, fabs((double)hL[rows[r]] - Lref[r]));
        }
        o->max_err = ek;
        o->naive_err = en;
        o->tol = 2.0 * en + 0.5 * dtype_eps(dt) * scale;
        o->L_err = strcmp(k->algo, "flash2") == 0 ? el : NAN;
        o->acc_ok = !isnan(ek) && ek <= o->tol && o->unwritten == 0;
    }
    o->ok = case_ok(c, o);

    CUDA_CHECK(cudaEventDestroy(e0));
    CUDA_CHECK(cudaEventDestroy(e1));
    void *bufs[] = {dQ, dK, dV, dO, dS, dP, dl, dm, dL, dflags, derr, dcnt};
    for (void *b : bufs)
        if (b) CUDA_CHECK(cudaFree(b));
    (void)is_f1;
    return 0;
}
