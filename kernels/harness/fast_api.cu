/* fast_api.cu: the C interface of libflashlab_kernels.so (the fast kernels: the rungs of
 * kernels/ladder/ladder.def marked lib, built without counters), for bench/gpu_sdpa.py: Python loads the library with ctypes and passes
 * PyTorch's device pointers and stream, so that our kernels and PyTorch SDPA's backends run in
 * one process on the same inputs.  Tensors are contiguous (B, H, N, d): nbh = B * H slices.
 * fl_fast_runs_here says which kernels run on the current GPU (attn.h, fl_why_not_here).
 */
#include <string.h>

#include "attn.h"

/* The rungs of ladder.def built into this library (lib = 1), in its order: their kernels are
 * numbered here in that order. */
struct fast_version {
    const fl_kernel_info *(*table)(int *n);
    void (*probe)(fl_probe_result *r);
    int (*needs)(void);
};
#define FL_LIB_0(...)
#define FL_LIB_1(...) __VA_ARGS__,
static const fast_version fast_versions[] = {
#define FL_RUNG(v, stem, lib, fwd, what) FL_LIB_##lib({fl_v##v##_kernels, fl_v##v##_probe, fl_v##v##_needs})
#include "../ladder/ladder.def"
};

/* Kernel i and its version's entry. */
static const fl_kernel_info *fast_kernel(int i, const fast_version **fv = NULL)
{
    if (i < 0) return NULL;
    for (auto &v : fast_versions) {
        int n;
        const fl_kernel_info *k = v.table(&n);
        if (i < n) {
            if (fv) *fv = &v;
            return &k[i];
        }
        i -= n;
    }
    return NULL;
}

extern "C" {
/* Describes kernel i (0, 1, ...): returns 0 and fills the fields, or -1 past the last one.
 * algo receives "flash2" or "standard" (at most 15 characters and the NUL). */
int fl_fast_describe(int i, char *algo, int *version, int *bwd, int *dtype, int *d, int *Br, int *Bc)
{
    const fl_kernel_info *k = fast_kernel(i);
    if (!k) return -1;
    strncpy(algo, k->s->algo, 15);
    algo[15] = 0;
    *version = k->version; *bwd = k->s->bwd; *dtype = k->dtype; *d = k->d; *Br = k->Br; *Bc = k->Bc;
    return 0;
}

/* 1 when kernel i runs on the current GPU, 0 when it does not (why: up to n bytes into why, if
 * not NULL), -1 past the last kernel. */
int fl_fast_runs_here(int i, char *why, int n)
{
    const fast_version *fv;
    const fl_kernel_info *k = fast_kernel(i, &fv);
    if (!k) return -1;
    fl_probe_result p;
    fv->probe(&p);
    char buf[256];
    const char *w = fl_why_not_here(k, p, fv->needs(), buf, sizeof buf);
    if (w && why && n > 0) snprintf(why, (size_t)n, "%s", w);
    return w ? 0 : 1;
}

/* Runs kernel i asynchronously on stream (a cudaStream_t; NULL: the default stream) over nbh
 * heads of N queries and keys.  causal: 0 none, 1 the lower triangle.  Forward: Q, K, V in, O and
 * L (fp32, nbh * N) out; standard also needs S and P (nbh * N * N each, the storage type).
 * Backward: Q, K, V, O, L, dO in; dQacc (fp32, nbh * N * d, zeroed by the kernel), Dv (fp32,
 * nbh * N) workspaces; dQ, dK, dV out (the storage type); the standard backward reads P of its
 * forward and needs dPbuf, dSbuf (nbh * N * N each, the storage type).  Returns 0, or 2 when i names no kernel
 * (CUDA errors print a line and exit, as in the harness). */
int fl_fast_run(int i, int nbh, int N, int causal, const void *Q, const void *K, const void *V, void *O, float *L,
                void *S, void *P, const void *dO, float *dQacc, float *Dv, void *dQ, void *dK, void *dV, void *dPbuf,
                void *dSbuf, void *stream)
{
    const fl_kernel_info *k = fast_kernel(i);
    if (!k || nbh < 1 || N < 1 || (causal != 0 && causal != 1)) return 2;
    fl_gpu_args a;
    memset(&a, 0, sizeof a);
    a.N = N; a.Nk = N; a.d = k->d; a.nbh = nbh; a.causal = causal;
    a.Q = Q; a.K = K; a.V = V; a.O = O; a.L = L; a.S = S; a.P = P;
    a.dO = dO; a.dQ = dQacc; a.Dv = Dv; a.dQout = dQ; a.dK = dK; a.dV = dV; a.dPbuf = dPbuf; a.dSbuf = dSbuf;
    a.stream = (cudaStream_t)stream;
    k->launch(&a);
    return 0;
}
}
