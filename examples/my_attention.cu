/* my_attention.cu: a kernel engineer's own attention forward, written plainly, with flashlab's
 * counters added in a few lines, and a host program that prints what it moved per tensor.
 *
 *   build:  cmake -S . -B build && cmake --build build --target flashlab_example_attn
 *           (or: nvcc -std=c++17 -O3 -DFL_COUNTERS -arch=sm_80 -I kernels/common -I include
 *                examples/my_attention.cu -o my-attention; against an installed flashlab,
 *                -I PREFIX/include/flashlab/cuda -I PREFIX/include: examples/check_installed.sh)
 *   run:    ./build/my-attention --batch 2 --heads 3 --N 1000 --d 64
 *   check:  python3 examples/check_example.py build/my-attention build/flashlab
 *           (the per-tensor counts beside `flashlab count --algo flash2 --Br 64 --Bc 64`'s)
 *
 * The kernel: FlashAttention-2's forward, one CTA per (query tile of BR = 64 rows, batch x head),
 * one thread per query row.  The thread keeps its row of Q, its running max m, sum l and output
 * row O in registers; the CTA walks the key tiles of BC = 64 rows, staging K_j and V_j in shared
 * memory; the end writes O and the log-sum-exp L = m + log(l) (fp32).  Non-causal, fp16 storage,
 * fp32 arithmetic.  Per head, with Tr = cdiv(N, BR) query tiles (docs/model.md, flash2's forward):
 * Q read N*d elements, K and V Tr*N*d each, O written N*d, L written N.
 *
 * The counters (kernels/common/counted.cuh).  What changes from the plain kernel:
 *   1. each HBM tensor is a counted pointer fl_gptr<T, FL_T_X> instead of T *, X the model's name
 *      for it (Q, K, V, O, L: common.cuh's numbering);
 *   2. a FlCount c in each thread, and every access written X.ld(c, i) / X.st(c, i, v) in place
 *      of X[i] / X[i] = v;
 *   3. fl_cnt_flush(c, sink, sizeof(T)) at the end: the warp's counts added to the launch totals
 *      (fl_gpu_counters in device memory; the sink is a kernel parameter).
 * Built without -DFL_COUNTERS the counts compile to nothing and the loads and stores stay.
 * scripts/check_counted_access.py checks that no global access bypasses them (examples/ too).
 */
#include "counted.cuh"

#include <string.h>

#define BR 64 /* query rows per CTA: one thread each */
#define BC 64 /* key rows per step */

template <int D>
__global__ void __launch_bounds__(BR)
my_attn_fwd(fl_gptr<const __half, FL_T_Q> Q, fl_gptr<const __half, FL_T_K> K, fl_gptr<const __half, FL_T_V> V,
            fl_gptr<__half, FL_T_O> O, fl_gptr<float, FL_T_L> L, int N, float scale, fl_csink sink)
{
    __shared__ __half Ks[BC][D], Vs[BC][D];        /* every thread reads the same word: a broadcast */
    FlCount c;                                     /* counter line 1 */
    const long head = (long)blockIdx.y * N * D;    /* (B*H, N, d), row-major */
    const int row = blockIdx.x * BR + threadIdx.x;
    const bool live = row < N;                     /* the last tile may be ragged */
    float q[D], o[D], m = -INFINITY, l = 0.f;
    for (int k = 0; k < D; k++) {
        q[k] = live ? Q.ld(c, head + (long)row * D + k) * scale : 0.f; /* Q_i once */
        o[k] = 0.f;
    }
    for (int c0 = 0; c0 < N; c0 += BC) {
        const int bc = min(BC, N - c0);
        __syncthreads();
        for (int x = threadIdx.x; x < bc * D; x += BR) { /* K_j, V_j once per query tile */
            const int r = x / D, k = x % D;
            Ks[r][k] = K.ld_elem(c, head + (long)(c0 + r) * D + k);
            Vs[r][k] = V.ld_elem(c, head + (long)(c0 + r) * D + k);
        }
        __syncthreads();
        for (int j = 0; live && j < bc; j++) { /* online softmax over the tile's keys */
            float s = 0.f;
            for (int k = 0; k < D; k++) s += q[k] * __half2float(Ks[j][k]);
            const float mn = fmaxf(m, s), a = expf(m - mn), p = expf(s - mn);
            l = l * a + p;
            for (int k = 0; k < D; k++) o[k] = o[k] * a + p * __half2float(Vs[j][k]);
            m = mn;
        }
    }
    if (live) {
        for (int k = 0; k < D; k++) O.st(c, head + (long)row * D + k, o[k] / l); /* O_i once */
        L.st(c, (long)blockIdx.y * N + row, m + logf(l));                       /* L_i once */
    }
    fl_cnt_flush(c, sink, (int)sizeof(__half)); /* counter line 2: every thread of the CTA */
}

/* One query row of one head in fp64 from the same fp16 inputs: O's row into out (d values). */
static void reference_row(const __half *Q, const __half *K, const __half *V, long head, int N, int d, int row,
                          double *out)
{
    double mx = -INFINITY, sum = 0;
    double *s = (double *)malloc(sizeof(double) * N);
    for (int j = 0; j < N; j++) {
        double x = 0;
        for (int k = 0; k < d; k++)
            x += (double)__half2float(Q[head + (long)row * d + k]) * __half2float(K[head + (long)j * d + k]);
        s[j] = x / sqrt((double)d);
        mx = fmax(mx, s[j]);
    }
    for (int j = 0; j < N; j++) sum += (s[j] = exp(s[j] - mx));
    for (int k = 0; k < d; k++) {
        double x = 0;
        for (int j = 0; j < N; j++) x += s[j] * __half2float(V[head + (long)j * d + k]);
        out[k] = x / sum;
    }
    free(s);
}

/* A positive integer option's value, or one line and status 2. */
static long positive(const char *name, const char *text, long most)
{
    char *end = NULL;
    const long v = strtol(text, &end, 10);
    if (!*text || *end || v < 1 || v > most) {
        fprintf(stderr, "my-attention: %s must be an integer in 1..%ld, got '%s'\n", name, most, text);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    long B = 1, H = 1, N = 1024, d = 64;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help")) {
            printf("usage: my-attention [--batch B] [--heads H] [--N N] [--d 64|128]\n"
                   "Runs examples/my_attention.cu's forward (Br = Bc = %d, fp16) on random inputs, checks O\n"
                   "against an fp64 reference on a few rows, and prints the elements and bytes it read and\n"
                   "wrote per tensor (CSV), and the flashlab count command that models them.\n"
                   "Exit 77 without a CUDA device.\n", BR);
            return 0;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "my-attention: %s needs a value (--help)\n", a);
            return 2;
        }
        const char *v = argv[++i];
        if (!strcmp(a, "--batch")) B = positive(a, v, 1 << 16);
        else if (!strcmp(a, "--heads")) H = positive(a, v, 1 << 16);
        else if (!strcmp(a, "--N")) N = positive(a, v, 1 << 20);
        else if (!strcmp(a, "--d")) d = positive(a, v, 128);
        else {
            fprintf(stderr, "my-attention: unknown option %s (--help)\n", a);
            return 2;
        }
    }
    if (d != 64 && d != 128) {
        fprintf(stderr, "my-attention: --d must be 64 or 128, got %ld\n", d);
        return 2;
    }
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        fprintf(stderr, "my-attention: no CUDA device: nothing to run\n");
        return 77;
    }
    const long n = B * H * N * d, nl = B * H * N;
    __half *hq = (__half *)malloc(n * sizeof(__half) * 3);
    if (!hq) {
        fprintf(stderr, "my-attention: out of host memory for %ld elements\n", 3 * n);
        return 1;
    }
    __half *hk = hq + n, *hv = hk + n;
    unsigned x = 12345u; /* a fixed LCG: the same inputs every run */
    for (long i = 0; i < 3 * n; i++) {
        x = x * 1664525u + 1013904223u;
        hq[i] = __float2half((float)((x >> 8) & 0xffff) / 65536.f * 2.f - 1.f);
    }
    __half *q, *k, *v, *o;
    float *lse;
    fl_gpu_counters *cnt, h;
    CUDA_CHECK(cudaMalloc(&q, n * sizeof(__half)));
    CUDA_CHECK(cudaMalloc(&k, n * sizeof(__half)));
    CUDA_CHECK(cudaMalloc(&v, n * sizeof(__half)));
    CUDA_CHECK(cudaMalloc(&o, n * sizeof(__half)));
    CUDA_CHECK(cudaMalloc(&lse, nl * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&cnt, sizeof(fl_gpu_counters)));
    CUDA_CHECK(cudaMemcpy(q, hq, n * sizeof(__half), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(k, hk, n * sizeof(__half), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(v, hv, n * sizeof(__half), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(cnt, 0, sizeof(fl_gpu_counters)));
    const dim3 grid((unsigned)((N + BR - 1) / BR), (unsigned)(B * H));
    const float scale = 1.f / sqrtf((float)d);
    if (d == 64) /* counter line 3: the sink, a kernel argument */
        my_attn_fwd<64><<<grid, BR>>>(q, k, v, o, lse, (int)N, scale, fl_csink(cnt));
    else
        my_attn_fwd<128><<<grid, BR>>>(q, k, v, o, lse, (int)N, scale, fl_csink(cnt));
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(&h, cnt, sizeof h, cudaMemcpyDeviceToHost));
    /* O against the reference: the first and last row of the first and the last head */
    __half *ho = (__half *)malloc(n * sizeof(__half));
    double *ref = (double *)malloc(d * sizeof(double)), worst = 0;
    CUDA_CHECK(cudaMemcpy(ho, o, n * sizeof(__half), cudaMemcpyDeviceToHost));
    const long heads[2] = {0, (B * H - 1) * N * d};
    const int rows[2] = {0, (int)N - 1};
    for (int a = 0; a < 2; a++)
        for (int r = 0; r < 2; r++) {
            reference_row(hq, hk, hv, heads[a], (int)N, (int)d, rows[r], ref);
            for (int kk = 0; kk < d; kk++)
                worst = fmax(worst, fabs(__half2float(ho[heads[a] + (long)rows[r] * d + kk]) - ref[kk]));
        }
    /* fp16 output of values in [-1, 1]: a few units of its 2^-11 rounding, and the fp32 sums */
    const double tol = 8.0 / 2048;
    printf("# my-attention: B = %ld, H = %ld, N = %ld, d = %ld, Br = Bc = %d, fp16; O max |error| %.2e (tolerance %.2e)\n",
           B, H, N, d, BR, worst, tol);
    printf("# model: flashlab count --algo flash2 --batch %ld --heads %ld --N %ld --d %ld --Br %d --Bc %d --dtype fp16 --format json\n",
           B, H, N, d, BR, BC);
    printf("tensor,reads,writes,read_B,write_B\n");
    for (int t = 0; t < FL_NT_DATA; t++)
        if (h.rd_elems[t] || h.wr_elems[t])
            printf("%s,%llu,%llu,%llu,%llu\n", fl_tensor_names[t], h.rd_elems[t], h.wr_elems[t], h.rd_bytes[t],
                   h.wr_bytes[t]);
    free(hq);
    free(ho);
    free(ref);
    cudaFree(q), cudaFree(k), cudaFree(v), cudaFree(o), cudaFree(lse), cudaFree(cnt);
    if (!(worst <= tol)) {
        fprintf(stderr, "my-attention: O differs from the reference by %.3e > %.3e\n", worst, tol);
        return 1;
    }
    return 0;
}
