/* gpu_values.cu: the host side of a validation case's data (gpu_case_parts.h): the inputs, rounded
 * to the storage type, and the outputs checked against the fp64 reference (reference/) and a naive
 * implementation in the same precision. */
#include "gpu_case_parts.h"

#include <algorithm>
#include <math.h>
#include <string.h>

extern "C" {
#include "attention_bwd.h"
#include "attention_ref.h"
#include "rng.h"
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

std::vector<unsigned char> fl_case_pack(int dtype, const std::vector<double> &x)
{
    const int b = fl_dtype_bytes[dtype];
    std::vector<unsigned char> out(x.size() * b);
    for (size_t i = 0; i < x.size(); i++) {
        if (dtype == FL_F16) { __half h = __float2half_rn((float)x[i]); memcpy(&out[i * b], &h, b); }
        else if (dtype == FL_BF16) { __nv_bfloat16 h = __float2bfloat16_rn((float)x[i]); memcpy(&out[i * b], &h, b); }
        else { float f = (float)x[i]; memcpy(&out[i * b], &f, b); }
    }
    return out;
}
static double unpack1(int dtype, const unsigned char *p)
{
    if (dtype == FL_F16) { __half h; memcpy(&h, p, 2); return __half2float(h); }
    if (dtype == FL_BF16) { __nv_bfloat16 h; memcpy(&h, p, 2); return __bfloat162float(h); }
    float f; memcpy(&f, p, 4); return f;
}

/* ---- inputs ------------------------------------------------------------------------------------ */
void fl_case_make_inputs(const fl_gpu_case *c, int N, int Nk, fl_case_inputs *in)
{
    const int d = c->k->d, dt = c->k->dtype;
    const long Nd = (long)N * d, Nkd = (long)Nk * d;
    in->dt = dt;
    in->Q.assign(Nd, 0.0);
    in->K.assign(Nkd, 0.0);
    in->V.assign(Nkd, 0.0);
    in->G.assign(c->k->s->bwd ? Nd : 0, 0.0);
    uint64_t st = c->seed;
    fl_rng_fill(&st, in->Q.data(), Nd, -1.0, 1.0);
    fl_rng_fill(&st, in->K.data(), Nkd, -1.0, 1.0);
    fl_rng_fill(&st, in->V.data(), Nkd, -1.0, 1.0);
    if (!in->G.empty()) fl_rng_fill(&st, in->G.data(), Nd, -1.0, 1.0); /* dO */
    for (std::vector<double> *x : {&in->Q, &in->K, &in->V, &in->G})
        for (double &v : *x) v = round_to(dt, v);
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

/* ---- the values ---------------------------------------------------------------------------- */
/* Device buffer t of b, n bytes, on the host. */
static std::vector<unsigned char> fetch(const fl_case_buffers &b, int t)
{
    std::vector<unsigned char> h(b.bytes[t]);
    CUDA_CHECK(cudaMemcpy(h.data(), b.t[t], b.bytes[t], cudaMemcpyDeviceToHost));
    return h;
}

int fl_case_check_output(const fl_gpu_case *c, int Nk, const fl_case_inputs &in, const fl_case_buffers &b,
                         fl_gpu_outcome *o)
{
    const fl_kernel_info *k = c->k;
    const int N = c->N, d = k->d, dt = k->dtype, odt = k->o_dtype, ob = fl_dtype_bytes[odt];
    const long Nd = (long)N * d;
    const long off = c->causal == 2 ? (long)Nk - N : 0; /* bottom-right: j <= i + Nk - Nq */
    const bool has_L = k->s->hbm & FL_BIT(FL_T_L);      /* flash2's logsumexp, checked too */
    const std::vector<unsigned char> hO = fetch(b, FL_T_O);
    std::vector<float> hL(has_L ? N : 0);
    if (has_L) CUDA_CHECK(cudaMemcpy(hL.data(), b.t[FL_T_L], N * sizeof(float), cudaMemcpyDeviceToHost));
    for (long i = 0; i < Nd; i++)
        if (isnan(unpack1(odt, &hO[i * ob]))) o->unwritten++;

    o->max_err = o->naive_err = o->tol = o->L_err = NAN;
    o->acc_ok = 0;
    if (!c->check) return 0;
    std::vector<int> rows = sample_rows(N, c->seed);
    const int ns = (int)rows.size();
    std::vector<double> Qs((long)ns * d), Oref((long)ns * d), Lref(ns), on(d);
    for (int r = 0; r < ns; r++)
        for (int t = 0; t < d; t++) Qs[(long)r * d + t] = in.Q[(long)rows[r] * d + t];
    keep_ctx kc = {&rows, off};
    if (fl_ref_attention(ns, Nk, d, d, Qs.data(), in.K.data(), in.V.data(), 1.0 / sqrt((double)d),
                         c->causal ? keep_causal : NULL, &kc, Oref.data(), Lref.data()) != FL_OK) {
        fprintf(stderr, "flashlab-gpu: reference: %s\n", fl_last_error());
        return 1;
    }
    std::vector<float> srow(Nk);
    double ek = 0.0, en = 0.0, scale = 0.0, el = 0.0;
    for (int r = 0; r < ns; r++) {
        naive_row(dt, Nk, d, c->causal, off, rows[r], in.Q.data(), in.K.data(), in.V.data(), srow, on.data());
        for (int t = 0; t < d; t++) {
            const double ref = Oref[(long)r * d + t];
            const double got = unpack1(odt, &hO[((long)rows[r] * d + t) * ob]);
            ek = isnan(got) ? NAN : fmax(ek, fabs(got - ref));
            en = fmax(en, fabs(on[t] - ref));
            scale = fmax(scale, fabs(ref));
            if (isnan(ek)) break;
        }
        if (has_L && isfinite(Lref[r])) el = fmax(el, fabs((double)hL[rows[r]] - Lref[r]));
    }
    o->max_err = ek;
    o->naive_err = en;
    o->tol = 2.0 * en + 0.5 * dtype_eps(dt) * scale;
    o->L_err = has_L ? el : NAN;
    o->acc_ok = !isnan(ek) && ek <= o->tol && o->unwritten == 0;
    return 0;
}

int fl_case_check_grads(const fl_gpu_case *c, const fl_case_inputs &in, const fl_case_buffers &b, fl_gpu_outcome *o)
{
    const fl_kernel_info *k = c->k;
    const int N = c->N, d = k->d, dt = k->dtype, eb = fl_dtype_bytes[dt];
    const long Nd = (long)N * d;
    std::vector<float> hdQ(Nd); /* the fp32 accumulator */
    CUDA_CHECK(cudaMemcpy(hdQ.data(), b.t[FL_T_dQ], Nd * sizeof(float), cudaMemcpyDeviceToHost));
    const std::vector<unsigned char> hdK = fetch(b, FL_T_dK), hdV = fetch(b, FL_T_dV);
    for (long i = 0; i < Nd; i++)
        o->unwritten += isnan(hdQ[i]) + isnan(unpack1(dt, &hdK[i * eb])) + isnan(unpack1(dt, &hdV[i * eb]));
    o->max_err = o->naive_err = o->tol = o->L_err = NAN;
    o->acc_ok = 0;
    if (!c->check) return 0;
    std::vector<double> rQ(Nd), rK(Nd), rV(Nd), nQ(Nd), nK(Nd), nV(Nd);
    if (fl_ref_attention_bwd(N, N, d, d, in.Q.data(), in.K.data(), in.V.data(), in.G.data(), 1.0 / sqrt((double)d),
                             c->causal ? keep_lower : NULL, NULL, rQ.data(), rK.data(), rV.data(), NULL, NULL, NULL,
                             NULL) != FL_OK) {
        fprintf(stderr, "flashlab-gpu: reference backward: %s\n", fl_last_error());
        return 1;
    }
    naive_bwd(dt, N, d, c->causal, in.Q, in.K, in.V, in.G, nQ, nK, nV);
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
    return 0;
}
