/* gpu_case_parts.h: the pieces of one validation case, which gpu_case.cu runs in order (the
 * contract of the whole is gpu_case.h):
 *
 *   inputs    (gpu_values.cu)   Q, K, V (and dO) uniform in [-1, 1) from include/flashlab/rng.h, rounded to
 *                               the storage type
 *   workspace (gpu_buffers.cu)  one device buffer per HBM tensor of the kernel's schedule and pass
 *                               (fl_sched_pass.hbm), sized by the tensor's shape and byte rule;
 *                               inputs uploaded, every other buffer poisoned
 *   launch, counters (gpu_case.cu)
 *   values    (gpu_values.cu)   the outputs against the fp64 reference and a naive implementation
 *                               in the same precision
 */
#ifndef FL_GPU_CASE_PARTS_H
#define FL_GPU_CASE_PARTS_H

#include <vector>

#include "gpu_case.h"

/* The case's inputs as the reference sees them: already rounded to the storage type dt. */
struct fl_case_inputs {
    int dt;
    std::vector<double> Q, K, V, G; /* G = dO (backward only) */
};

/* Draws the inputs of case c (N queries, Nk keys) from its seed. */
void fl_case_make_inputs(const fl_gpu_case *c, int N, int Nk, fl_case_inputs *in);

/* The bytes of x in storage type dt (fp32, fp16 or bf16, rounded to nearest). */
std::vector<unsigned char> fl_case_pack(int dt, const std::vector<double> &x);

/* The device buffers of a case: t[x] is tensor x's (NULL: not in the schedule's set). */
struct fl_case_buffers {
    void *t[FL_NT];
    size_t bytes[FL_NT];
    int *error;              /* the wavefront's error word, zeroed */
    fl_gpu_counters *cnt;    /* the counters, zeroed */
};

/* Allocates the tensors of set hbm (FL_BIT(FL_T_x)) for kernel k at N queries and Nk keys, uploads
 * the inputs of in (Q, K, V; dO when hbm has it) in k's storage type and poisons every other
 * buffer with 0xFF bytes (NaN in fp32, fp16 and bf16). */
void fl_case_buffers_alloc(fl_case_buffers *b, unsigned hbm, const fl_kernel_info *k, int N, int Nk,
                           const fl_case_inputs &in);

/* Points a's tensors, error word and counters at b's buffers. */
void fl_case_buffers_args(const fl_case_buffers *b, fl_gpu_args *a);

/* Frees what fl_case_buffers_alloc allocated. */
void fl_case_buffers_free(fl_case_buffers *b);

/* Forward outputs: counts unwritten (NaN) elements of O and, when c->check, compares O (and L, when
 * the schedule writes it) on sampled rows with the reference.  Returns nonzero when the reference
 * could not be computed (message printed). */
int fl_case_check_output(const fl_gpu_case *c, int Nk, const fl_case_inputs &in, const fl_case_buffers &b,
                         fl_gpu_outcome *o);

/* Backward outputs dQ, dK, dV, the same way (all rows: c->check only for small N). */
int fl_case_check_grads(const fl_gpu_case *c, const fl_case_inputs &in, const fl_case_buffers &b, fl_gpu_outcome *o);

#endif
