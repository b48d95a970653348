/* common.cuh: what every flashlab kernel and the harness share, apart from memory access.
 *
 *   CUDA_CHECK(call)      the one error macro: prints file, line and the CUDA error, exits 1
 *   FL_THREADS            threads per CTA of the kernels that do not choose their own (4 warps)
 *   tensor numbering      the HBM tensors a kernel may touch, named as the model names them
 *   storage types         float (the tight-comparison build), __half, __nv_bfloat16; arithmetic is
 *                         always fp32 (fl_to_f / fl_from_f convert at the HBM boundary)
 *   warp reductions, the causal keep rule
 *
 * Global memory is reached only through kernels/common/counted.cuh (the counted pointer types);
 * scripts/check_counted_access.py fails the build's tests on any other access.
 */
#ifndef FL_KERNELS_COMMON_CUH
#define FL_KERNELS_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define CUDA_CHECK(call)                                                                       \
    do {                                                                                       \
        cudaError_t fl_cuda_e_ = (call);                                                       \
        if (fl_cuda_e_ != cudaSuccess) {                                                       \
            fprintf(stderr, "flashlab-gpu: CUDA error at %s:%d: %s (%s)\n", __FILE__, __LINE__, \
                    cudaGetErrorString(fl_cuda_e_), #call);                                    \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

/* FL_THREADS, the threads per CTA of the kernels that do not choose their own (4 warps), is
 * defined with their tile layouts in include/flashlab/kernel_tiles.h. */
#include <flashlab/kernel_tiles.h>

/* HBM tensors a kernel may touch, in one numbering shared with the harness (names as in the
 * model's fl_result.t[].name).  The last two are not the model's data, reported apart and never
 * compared: "flags" counts the wavefront's synchronisation words (each poll of a hand-off flag or
 * of the error word a read, each release a write: versions 2, 4, 5), "dQout" the rounding of the
 * fp32 dQ accumulator into the storage type that versions 9 and 11 do for PyTorch on request
 * (a pass outside the schedule; the harness never asks for it). */
enum { FL_T_Q, FL_T_K, FL_T_V, FL_T_O, FL_T_S, FL_T_P, FL_T_l, FL_T_m, FL_T_L,
       FL_T_dO, FL_T_dQ, FL_T_dK, FL_T_dV, FL_T_D, FL_T_dP, FL_T_dS, FL_T_FLAGS, FL_T_DQOUT, FL_NT };
#define FL_NT_DATA FL_T_FLAGS
static const char *const fl_tensor_names[FL_NT] = {"Q", "K", "V", "O", "S", "P", "l", "m", "L", "dO", "dQ",
                                                   "dK", "dV", "D", "dP", "dS", "flags", "dQout"};

/* Totals of one launch (or several: they accumulate), in global memory. */
struct fl_gpu_counters {
    unsigned long long rd_elems[FL_NT], wr_elems[FL_NT];
    unsigned long long rd_bytes[FL_NT], wr_bytes[FL_NT];
};

/* ---- storage types ---------------------------------------------------------------------- */
__device__ __host__ __forceinline__ float fl_to_f(float x) { return x; }
__device__ __host__ __forceinline__ float fl_to_f(__half x) { return __half2float(x); }
__device__ __host__ __forceinline__ float fl_to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
template <class T> __device__ __host__ __forceinline__ T fl_from_f(float x);
template <> __device__ __host__ __forceinline__ float fl_from_f<float>(float x) { return x; }
template <> __device__ __host__ __forceinline__ __half fl_from_f<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __host__ __forceinline__ __nv_bfloat16 fl_from_f<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

/* ---- small helpers shared by the kernels -------------------------------------------------- */
__device__ __forceinline__ float fl_warp_max(float x)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
    return x;
}
__device__ __forceinline__ float fl_warp_sum(float x)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}

/* Causal mask, bottom-right aligned (FlashAttention >= 2.1): with Nq queries over Nk keys,
 * query i keeps key j iff j <= i + (Nk - Nq).  For Nq = Nk (every kernel here) it is the lower
 * triangle j <= i, the same as top-left.  A row with no kept key outputs zeros. */
__device__ __host__ __forceinline__ bool fl_causal_keep(long i, long j, long off) { return j <= i + off; }

#endif
