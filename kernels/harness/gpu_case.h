/* gpu_case.h: one validation case of the GPU harness: run a kernel once on random inputs and
 * compare it with the model and with the reference.
 *
 * fl_gpu_case_run (gpu_case.cu; its pieces in gpu_case_parts.h)
 *   1. model counts: fl_run(FL_COUNT) on the same schedule, N, d, Br, Bc, with M = the kernel's
 *      footprint M_eff (its tile traits; checked equal to fl_footprint first), elem_bytes of the
 *      storage type; a model that cannot be run is a failure, never a pass;
 *   2. inputs: Q, K, V uniform in [-1, 1) from include/flashlab/rng.h (never zeros), rounded to the
 *      storage type; a buffer for every HBM tensor of the kernel's schedule and pass (attn.h's
 *      fl_sched_pass, checked to hold every tensor the model moves), outputs and workspaces
 *      poisoned with 0xFF bytes (NaN in every type) before the run; a backward runs the forward
 *      of its rung's forward rung (kernels/ladder/ladder.def) first, uncounted;
 *   3. one counted, timed launch of the whole schedule, every kernel of it recorded (launch.cuh);
 *   4. the tiles against the launched kernels: each kernel's static shared memory
 *      (cudaFuncGetAttributes) equal to its traits', its dynamic shared memory the traits', the
 *      model's buffers within it, the largest footprint equal to M_eff;
 *   5. counters against the model, tensor by tensor (elements read and written);
 *   6. accuracy on sampled rows (all rows when N <= 64): the kernel's max error against the fp64
 *      reference (fl_ref_attention on the rounded inputs) must be at most twice the error of a
 *      naive implementation in the same precision (scores, probabilities and output rounded to
 *      the storage type, fp32 accumulation: what a framework's unfused attention does), plus
 *      half an ulp of the output's scale (eps/2 * max|O_ref|: the rounding any stored output
 *      carries); every output element must have been written (no NaN left).
 */
#ifndef FL_GPU_CASE_H
#define FL_GPU_CASE_H

#include <stdint.h>

#include "attn.h"

struct fl_gpu_case {
    const fl_kernel_info *k;
    int N;           /* queries */
    int causal;      /* 0 none, 1 top-left, 2 bottom-right */
    uint64_t seed;
    const char *tag; /* a label for the CSV ("matrix", "ABA-1", ...) */
    int check;       /* compute the reference and the accuracy check */
    int reps;        /* extra timed launches after the counted one (0: none) */
    int Nk;          /* keys; 0 = N (only the flash2 forward takes Nk != N) */
    int ctas = 0;    /* persistent kernels: at most this many CTAs (0: one an SM) */
};

struct fl_gpu_outcome {
    long m_eff;
    int model_ok;                     /* the model has this case (else its columns are -1) */
    char model_msg[256];
    long long model_rd[FL_NT], model_wr[FL_NT], model_reads, model_writes, model_bytes;
    long long gpu_rd[FL_NT], gpu_wr[FL_NT], gpu_reads, gpu_writes, gpu_bytes;
    long long model_rd_bytes, model_wr_bytes, gpu_rd_bytes, gpu_wr_bytes; /* bytes read / written */
    long long gpu_polls;              /* reads of the wavefront's flags and error word (not compared) */
    long long gpu_flag_writes;        /* releases of the wavefront's flags (not compared) */
    long smem_bytes;                  /* the most shared memory a launched kernel had (attributes) */
    long local_bytes;                 /* the most local memory a thread of a launched kernel had */
    int tiles_ok;                     /* step 4 passed */
    char tiles_msg[256];              /* why not */
    int tensors_equal;                /* every tensor's reads and writes equal the model's */
    double ratio, bytes_ratio;        /* gpu / model totals */
    double max_err, naive_err, tol, L_err;
    long long unwritten;              /* output elements still NaN (poison) after the run */
    int acc_ok;
    int wait_timeout;                 /* flash1's hand-off wait gave up */
    double ms, ms_median;             /* counted launch; median of reps extra launches */
    int counted;                      /* the counters build: counts compared */
    int ok;                           /* model run, tiles checked, counts equal (counters build) and
                                       * accuracy passed */
};

/* Step 1 alone (no GPU): the model's counts of case c into o (model_ok, model_msg, model_rd/wr,
 * model totals); model_ok = 0 with the reason when the kernel's footprint is not the model's,
 * the model refuses the case, or the model moves a tensor outside the kernel's pass (attn.h). */
void fl_gpu_case_model(const fl_gpu_case *c, fl_gpu_outcome *o);

/* Runs one case; returns 0 when it ran (ok says whether it passed), nonzero on a setup error
 * (message printed). */
int fl_gpu_case_run(const fl_gpu_case *c, fl_gpu_outcome *o);

#endif
