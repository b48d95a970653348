/* common.cuh: what every flashlab kernel shares.
 *
 *   CUDA_CHECK(call)      the one error macro: prints file, line and the CUDA error, exits 1
 *   storage types         float (the tight-comparison build), __half, __nv_bfloat16; arithmetic is
 *                         always fp32 (fl_to_f / fl_from_f convert at the HBM boundary)
 *   fl_ld / fl_st         the only way a kernel touches an HBM tensor: one element, counted
 *   byte counters         compiled in with -DFL_COUNTERS (off by default: the macros vanish)
 *
 * Loads go through __ldcg (cache in L2, not in L1).  The model's SRAM is the kernel's shared
 * memory; an L1 hit would be a load the model counts but the SM<->L2 counters of Nsight Compute
 * would not see, so L1 is kept out of the way and ncu's lts__t_sectors_srcunit_tex_op_read
 * measures the same loads the byte counters count.
 *
 * Counters.  Each thread keeps, in registers, one element count per tensor for reads and one
 * for writes (FlCount), adding 1 at each fl_ld / fl_st.  At the end of a kernel fl_cnt_flush
 * sums them over the warp and lane 0 adds them, with their bytes (elements x the tensor's
 * element size, known at compile time), to the launch's fl_gpu_counters in global memory.  With
 * FL_COUNTERS undefined FlCount is empty, the adds are no-ops and the flush compiles to nothing.
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

/* Threads per CTA for every kernel: 4 warps. */
#define FL_THREADS 128

/* HBM tensors a kernel may touch, in one numbering shared with the harness (names as in the
 * model's fl_result.t[].name).  The last, "flags", is not data: it counts flash1's polls of its
 * hand-off flags (synchronisation the model does not have), reported apart, never compared. */
enum { FL_T_Q, FL_T_K, FL_T_V, FL_T_O, FL_T_S, FL_T_P, FL_T_l, FL_T_m, FL_T_L,
       FL_T_dO, FL_T_dQ, FL_T_dK, FL_T_dV, FL_T_D, FL_T_dP, FL_T_dS, FL_T_FLAGS, FL_NT };
#define FL_NT_DATA FL_T_FLAGS
static const char *const fl_tensor_names[FL_NT] = {"Q", "K", "V", "O", "S", "P", "l", "m", "L",
                                                   "dO", "dQ", "dK", "dV", "D", "dP", "dS", "flags"};

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

/* ---- counters ----------------------------------------------------------------------------- */
#ifdef FL_COUNTERS
struct FlCount {
    unsigned rd[FL_NT], wr[FL_NT];
    __device__ FlCount()
    {
#pragma unroll
        for (int t = 0; t < FL_NT; t++) rd[t] = wr[t] = 0;
    }
};
#define FL_CNT_RD(c, t) ((c).rd[t] += 1u)
#define FL_CNT_WR(c, t) ((c).wr[t] += 1u)
#else
struct FlCount {};
#define FL_CNT_RD(c, t) ((void)0)
#define FL_CNT_WR(c, t) ((void)0)
#endif

/* One counted load of element i of tensor t (read HBM -> SRAM/registers), returned as fp32. */
#define fl_ld(c, t, ptr, i) (FL_CNT_RD(c, t), fl_to_f(__ldcg((ptr) + (i))))
/* One counted store of the fp32 value v to element i of tensor t, rounded to its type. */
template <class E> __device__ __forceinline__ void fl_store_elem(E *p, long i, float v) { p[i] = fl_from_f<E>(v); }
#define fl_st(c, t, ptr, i, v) (FL_CNT_WR(c, t), fl_store_elem((ptr), (long)(i), (v)))

/* Adds this thread's counts to the launch totals.  esize: bytes per element of Q..P (the
 * storage type; also dO, dK, dV); osize: bytes per element of O (flash1 keeps its running O
 * in fp32); the statistics l, m, L, D, the flags and the dQ accumulator are 4 bytes.  Every thread of the CTA must call it. */
__device__ __forceinline__ void fl_cnt_flush(FlCount &c, fl_gpu_counters *g, int esize, int osize = 0)
{
#ifdef FL_COUNTERS
    if (!g) return;
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int t = 0; t < FL_NT; t++) {
        unsigned long long r = c.rd[t], w = c.wr[t];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            r += __shfl_down_sync(0xffffffffu, r, o);
            w += __shfl_down_sync(0xffffffffu, w, o);
        }
        /* fp32 (4 bytes): the statistics l, m, L, D, the flags and the dQ accumulator */
        const bool f32 = t == FL_T_l || t == FL_T_m || t == FL_T_L || t == FL_T_D || t == FL_T_FLAGS || t == FL_T_dQ;
        const unsigned long long b = f32 ? 4 : (t == FL_T_O && osize) ? (unsigned long long)osize
                                                                      : (unsigned long long)esize;
        if (lane == 0 && r) {
            atomicAdd(&g->rd_elems[t], r);
            atomicAdd(&g->rd_bytes[t], r * b);
        }
        if (lane == 0 && w) {
            atomicAdd(&g->wr_elems[t], w);
            atomicAdd(&g->wr_bytes[t], w * b);
        }
    }
#else
    (void)c; (void)g; (void)esize; (void)osize;
#endif
}

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

/* The wavefront's hand-off flags (versions 2, 4, 5): a load that acquires and a store that
 * releases at GPU scope, so what a CTA wrote before the release is seen after the acquire. */
__device__ __forceinline__ unsigned fl_ld_acquire(const unsigned *p)
{
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void fl_st_release(unsigned *p, unsigned v)
{
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

/* The grid of a wavefront kernel (versions 2, 4, 5): Tc CTAs, or as many as are resident at once
 * when fewer (every CTA of the wavefront must be running: the hand-off waits for its
 * predecessor).  Raises the kernel's dynamic shared-memory limit to smem first. */
template <class Kern>
static int fl_wavefront_grid(Kern kern, size_t smem, int Tc, const char *what, int BR, int BC, int D)
{
    CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    int dev, nsm, per_sm;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, dev));
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, FL_THREADS, smem));
    if (per_sm < 1) {
        fprintf(stderr, "flashlab-gpu: %s Br=%d Bc=%d d=%d: no CTA fits on an SM\n", what, BR, BC, D);
        exit(1);
    }
    return Tc < per_sm * nsm ? Tc : per_sm * nsm;
}

/* Causal mask, bottom-right aligned (FlashAttention >= 2.1): with Nq queries over Nk keys,
 * query i keeps key j iff j <= i + (Nk - Nq).  For Nq = Nk (every kernel here) it is the lower
 * triangle j <= i, the same as top-left.  A row with no kept key outputs zeros. */
__device__ __host__ __forceinline__ bool fl_causal_keep(long i, long j, long off) { return j <= i + off; }

#endif
