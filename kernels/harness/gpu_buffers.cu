/* gpu_buffers.cu: the device buffers of a validation case (gpu_case_parts.h), one per HBM tensor of
 * the kernel's schedule and pass, each sized by its shape and by the byte rule of counted.cuh. */
#include "gpu_case_parts.h"

#include <string.h>

/* Elements of tensor t at N queries, Nk keys, head dimension d. */
static size_t tensor_elems(int t, size_t N, size_t Nk, size_t d)
{
    switch (t) {
    case FL_T_Q: case FL_T_O: case FL_T_dO: case FL_T_dQ: return N * d;
    case FL_T_K: case FL_T_V: case FL_T_dK: case FL_T_dV: return Nk * d;
    case FL_T_S: case FL_T_P: case FL_T_dP: case FL_T_dS: return N * Nk;
    case FL_T_l: case FL_T_m: case FL_T_L: case FL_T_D: return N;
    case FL_T_FLAGS: return N + 1; /* one word a query block, for any Br */
    default: return 0;             /* dQout: never asked for */
    }
}

/* Uploads host bytes h into tensor t (its size must be the tensor's). */
static void upload(fl_case_buffers *b, int t, const std::vector<unsigned char> &h)
{
    if (h.size() != b->bytes[t]) {
        fprintf(stderr, "flashlab-gpu: %s: %zu bytes for a %zu-byte buffer\n", fl_tensor_names[t], h.size(), b->bytes[t]);
        exit(1);
    }
    CUDA_CHECK(cudaMemcpy(b->t[t], h.data(), h.size(), cudaMemcpyHostToDevice));
}

void fl_case_buffers_alloc(fl_case_buffers *b, unsigned hbm, const fl_kernel_info *k, int N, int Nk,
                           const fl_case_inputs &in)
{
    memset(b, 0, sizeof *b);
    const int eb = fl_dtype_bytes[k->dtype], ob = k->o_dtype != k->dtype ? fl_dtype_bytes[k->o_dtype] : 0;
    for (int t = 0; t < FL_NT; t++) {
        if (!(hbm & FL_BIT(t))) continue;
        b->bytes[t] = tensor_elems(t, N, Nk, k->d) * (size_t)fl_tensor_bytes(t, eb, ob);
        CUDA_CHECK(cudaMalloc(&b->t[t], b->bytes[t]));
        CUDA_CHECK(cudaMemset(b->t[t], 0xFF, b->bytes[t])); /* poison: NaN in every type */
    }
    upload(b, FL_T_Q, fl_case_pack(k->dtype, in.Q));
    upload(b, FL_T_K, fl_case_pack(k->dtype, in.K));
    upload(b, FL_T_V, fl_case_pack(k->dtype, in.V));
    if (hbm & FL_BIT(FL_T_dO)) upload(b, FL_T_dO, fl_case_pack(k->dtype, in.G));
    CUDA_CHECK(cudaMalloc(&b->error, sizeof(int)));
    CUDA_CHECK(cudaMalloc(&b->cnt, sizeof(fl_gpu_counters)));
    CUDA_CHECK(cudaMemset(b->error, 0, sizeof(int)));
    CUDA_CHECK(cudaMemset(b->cnt, 0, sizeof(fl_gpu_counters)));
}

void fl_case_buffers_args(const fl_case_buffers *b, fl_gpu_args *a)
{
    void *const *t = b->t;
    a->Q = t[FL_T_Q], a->K = t[FL_T_K], a->V = t[FL_T_V], a->O = t[FL_T_O];
    a->S = t[FL_T_S], a->P = t[FL_T_P];
    a->l = (float *)t[FL_T_l], a->m = (float *)t[FL_T_m], a->L = (float *)t[FL_T_L];
    a->dO = t[FL_T_dO], a->dQ = (float *)t[FL_T_dQ], a->dK = t[FL_T_dK], a->dV = t[FL_T_dV];
    a->Dv = (float *)t[FL_T_D], a->dPbuf = t[FL_T_dP], a->dSbuf = t[FL_T_dS];
    a->flags = (unsigned *)t[FL_T_FLAGS];
    a->dQout = NULL; /* dQ stays the fp32 accumulator (gpu_case.h) */
    a->error = b->error;
    a->cnt = b->cnt;
}

void fl_case_buffers_free(fl_case_buffers *b)
{
    for (void *p : b->t)
        if (p) CUDA_CHECK(cudaFree(p));
    if (b->error) CUDA_CHECK(cudaFree(b->error));
    if (b->cnt) CUDA_CHECK(cudaFree(b->cnt));
    memset(b, 0, sizeof *b);
}
