/* counted.cuh: the only way kernel code reaches global memory, and every access counted.
 *
 * A kernel receives its HBM tensors as counted pointers, fl_gptr<T, TENSOR> (T the element type,
 * const for a tensor the kernel only reads; TENSOR its number in common.cuh, a compile-time
 * constant), never as raw pointers.  The raw address is private: the only ways to touch the
 * memory behind it are the member functions below, and each adds what it moves to the thread's
 * counts (FlCount) at the access itself:
 *
 *   ld, ld_elem, ld_vec<U>      loads through L2 (ld.global.cg): 1 element, or sizeof(U)/sizeof(T)
 *   st, st_vec<U>               stores: 1 element, or sizeof(U)/sizeof(T)
 *   cp16                        cp.async.cg of 16 bytes into shared memory: nbytes/sizeof(T) read
 *                               (cp.async exists from sm_80; only versions that need sm_80 use it)
 *   red_add, red_add2           red.global.add of 1 or 2 fp32 values: each element one read and
 *                               one write (the L2 reads and writes it: the model's load and store)
 *   ld_acquire, st_release,     synchronisation words (tensor "flags"): each one read or write
 *   ld_volatile, exch
 *
 * and, for the bulk tensor copy engine (TMA, sm_90), the counted tensor map fl_gtmap<T, TENSOR>:
 *
 *   load                        one box (64 or 128 bytes' worth of columns x box rows) into shared
 *                               memory, completing on an mbarrier: the elements of the box inside
 *                               the tensor are read (the engine fills the rest with zeros and
 *                               reads nothing for them)
 *
 * A kernel takes a tensor map as a __grid_constant__ parameter; the map is opaque (the driver
 * encodes the address in it) and its one device operation is the counted load.
 *
 * Loads go through L2, not L1 (.cg): the model's SRAM is the kernel's shared memory and registers;
 * an L1 hit would be a load the model counts but that the SM<->L2 counters of Nsight Compute miss.
 *
 * Counts.  Each thread keeps, in registers, a 64-bit element count per tensor for reads and one for
 * writes (only the tensors a kernel touches cost registers: the others are the constant 0).  At the
 * end of a kernel fl_cnt_flush sums them over the warp and lane 0 adds them, with their bytes, to
 * the launch's fl_gpu_counters (the sink, a kernel parameter).  Built without FL_COUNTERS the
 * counts are empty and every count and the flush compile to nothing: the loads and stores stay.
 *
 * scripts/check_counted_access.py fails on any global access outside this header: the intrinsics
 * (__ldg, __ldcg, ..., atomics), the PTX (ld.global, st.global, red.global, atom.global,
 * cp.async, cp.async.bulk), raw pointers among a kernel's parameters and __device__ variables.
 * The bulk tensor copy (cp.async.bulk.tensor) is allowed here only, in fl_gtmap::load and ::store.
 */
#ifndef FL_KERNELS_COUNTED_CUH
#define FL_KERNELS_COUNTED_CUH

#include <stdint.h>

#include <type_traits>

#include <cuda.h>          /* CUtensorMap (the type; the encoder is fetched from the driver) */
#include <cudaTypedefs.h>  /* PFN_cuTensorMapEncodeTiled */

#include <flashlab/footprint.h>

#include "arch.cuh"
#include "common.cuh"

/* ---- the byte rule ------------------------------------------------------------------------- */
/* The per-row statistics l, m, L, D (fp32 whatever the storage type: docs/model.md rule R8). */
__host__ __device__ constexpr bool fl_is_stat(int t) { return t == FL_T_l || t == FL_T_m || t == FL_T_L || t == FL_T_D; }

/* Bytes of one element of tensor t (docs/model.md rule R8, include/flashlab/footprint.h): the
 * statistics FL_STAT_BYTES, the dQ accumulator FL_ACCUM_BYTES, the synchronisation words 4, O
 * osize when nonzero (flash1's running O is an fp32 accumulator), every other tensor esize (the
 * storage type). */
__host__ __device__ constexpr int fl_tensor_bytes(int t, int esize, int osize)
{
    return fl_is_stat(t) ? FL_STAT_BYTES
           : t == FL_T_dQ ? FL_ACCUM_BYTES
           : t == FL_T_FLAGS ? 4
           : (t == FL_T_O && osize) ? osize
                                    : esize;
}

/* ---- per-thread counts --------------------------------------------------------------------- */
#ifdef FL_COUNTERS
struct FlCount {
    unsigned long long rd[FL_NT], wr[FL_NT];
    __device__ FlCount()
    {
#pragma unroll
        for (int t = 0; t < FL_NT; t++) rd[t] = wr[t] = 0;
    }
    template <int t> __device__ __forceinline__ void read(long long n) { rd[t] += (unsigned long long)n; }
    template <int t> __device__ __forceinline__ void write(long long n) { wr[t] += (unsigned long long)n; }
};
#else
struct FlCount {
    template <int t> __device__ __forceinline__ void read(long long) {}
    template <int t> __device__ __forceinline__ void write(long long) {}
};
#endif

/* Where a launch's counts go: the harness's fl_gpu_counters in device memory, or NULL (not
 * counted: the benchmark, the forward run before a backward). */
__device__ __forceinline__ void fl_cnt_flush(FlCount &c, class fl_csink g, int esize, int osize = 0);
class fl_csink {
    fl_gpu_counters *p;
    friend __device__ __forceinline__ void fl_cnt_flush(FlCount &c, fl_csink g, int esize, int osize);

  public:
    __host__ __device__ fl_csink(fl_gpu_counters *q = nullptr) : p(q) {}
};

/* Adds this thread's counts to the launch totals.  esize: bytes per element of the storage type;
 * osize: bytes per element of O when it is not the storage type (0: it is).  Every thread of the
 * CTA must call it (warp shuffles). */
__device__ __forceinline__ void fl_cnt_flush(FlCount &c, fl_csink g, int esize, int osize)
{
#ifdef FL_COUNTERS
    if (!g.p) return;
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int t = 0; t < FL_NT; t++) {
        unsigned long long r = c.rd[t], w = c.wr[t];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            r += __shfl_down_sync(0xffffffffu, r, o);
            w += __shfl_down_sync(0xffffffffu, w, o);
        }
        const unsigned long long b = (unsigned long long)fl_tensor_bytes(t, esize, osize);
        if (lane == 0 && r) {
            atomicAdd(&g.p->rd_elems[t], r);
            atomicAdd(&g.p->rd_bytes[t], r * b);
        }
        if (lane == 0 && w) {
            atomicAdd(&g.p->wr_elems[t], w);
            atomicAdd(&g.p->wr_bytes[t], w * b);
        }
    }
#else
    (void)c; (void)g; (void)esize; (void)osize;
#endif
}

__device__ __forceinline__ unsigned fl_smem_u32(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

/* ---- the counted pointer -------------------------------------------------------------------- */
template <class T, int TENSOR> class fl_gptr {
    T *p_;

  public:
    using elem = typename std::remove_const<T>::type;
    static constexpr int tensor = TENSOR;
    static_assert(TENSOR >= 0 && TENSOR < FL_NT, "a tensor of common.cuh");
    static_assert(!fl_is_stat(TENSOR) || sizeof(elem) == FL_STAT_BYTES, "statistics are fp32 (rule R8)");
    static_assert(TENSOR != FL_T_dQ || sizeof(elem) == FL_ACCUM_BYTES, "the dQ accumulator is fp32 (rule R8)");

    /* From the device address the host allocated (the launchers build the kernel arguments). */
    __host__ __device__ fl_gptr(T *p = nullptr) : p_(p) {}
    /* The same tensor from element i on (no access). */
    __host__ __device__ fl_gptr operator+(long i) const { return fl_gptr(p_ + i); }
    __host__ __device__ bool null() const { return p_ == nullptr; }
    /* Element i lies on a 16-byte boundary (vector and cp.async paths). */
    __device__ bool aligned16(long i = 0) const { return ((unsigned long)(p_ + i) & 15) == 0; }

    /* Loads (L2, not L1). */
    __device__ __forceinline__ float ld(FlCount &c, long i) const
    {
        c.template read<TENSOR>(1);
        return fl_to_f(__ldcg(p_ + i));
    }
    __device__ __forceinline__ elem ld_elem(FlCount &c, long i) const
    {
        c.template read<TENSOR>(1);
        return __ldcg(p_ + i);
    }
    template <class U> __device__ __forceinline__ U ld_vec(FlCount &c, long i) const
    {
        static_assert(sizeof(U) % sizeof(elem) == 0, "a vector of whole elements");
        c.template read<TENSOR>(sizeof(U) / sizeof(elem));
        return __ldcg((const U *)(p_ + i));
    }

    /* Stores: v rounded to the element type, or a vector of whole elements. */
    __device__ __forceinline__ void st(FlCount &c, long i, float v) const
    {
        c.template write<TENSOR>(1);
        p_[i] = fl_from_f<elem>(v);
    }
    template <class U> __device__ __forceinline__ void st_vec(FlCount &c, long i, const U &v) const
    {
        static_assert(sizeof(U) % sizeof(elem) == 0, "a vector of whole elements");
        c.template write<TENSOR>(sizeof(U) / sizeof(elem));
        *(U *)(p_ + i) = v;
    }

    /* 16 bytes from element i into shared memory s by cp.async.cg (bypassing L1); only nbytes
     * (0 or 16 here) are read, the rest of the 16 are zero-filled.  The caller commits and waits. */
    __device__ __forceinline__ void cp16(FlCount &c, void *s, long i, int nbytes) const
    {
#if FL_CODE_HAS(FL_NEED_SM80)
        c.template read<TENSOR>(nbytes / (int)sizeof(elem));
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(fl_smem_u32(s)), "l"(p_ + i), "r"(nbytes));
#else
        fl_arch_missing();
#endif
    }

    /* dQ += v at element i (i, i + 1) by red.global.add: the L2 reads and writes each element.
     * sm_90 adds two fp32 values in one vector reduction; earlier GPUs add them one at a time. */
    __device__ __forceinline__ void red_add(FlCount &c, long i, float v) const
    {
        c.template read<TENSOR>(1);
        c.template write<TENSOR>(1);
        atomicAdd(p_ + i, v);
    }
    __device__ __forceinline__ void red_add2(FlCount &c, long i, float x, float y) const
    {
        c.template read<TENSOR>(2);
        c.template write<TENSOR>(2);
#if FL_CODE_ARCH >= 900
        atomicAdd((float2 *)(p_ + i), make_float2(x, y));
#else
        atomicAdd(p_ + i, x);
        atomicAdd(p_ + i + 1, y);
#endif
    }

    /* Synchronisation words: a load that acquires and a store that releases at GPU scope (what a
     * CTA wrote before the release is seen after the acquire), a volatile load, an exchange. */
    __device__ __forceinline__ unsigned ld_acquire(FlCount &c, long i) const
    {
        static_assert(sizeof(elem) == 4, "32-bit flags");
        c.template read<TENSOR>(1);
        unsigned v;
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p_ + i) : "memory");
        return v;
    }
    __device__ __forceinline__ void st_release(FlCount &c, long i, unsigned v) const
    {
        static_assert(sizeof(elem) == 4, "32-bit flags");
        c.template write<TENSOR>(1);
        asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p_ + i), "r"(v) : "memory");
    }
    __device__ __forceinline__ elem ld_volatile(FlCount &c, long i) const
    {
        c.template read<TENSOR>(1);
        return *(volatile T *)(p_ + i);
    }
    __device__ __forceinline__ void exch(FlCount &c, long i, elem v) const
    {
        c.template write<TENSOR>(1);
        atomicExch(p_ + i, v);
    }
};

/* ---- the counted tensor map (TMA) ----------------------------------------------------------- */
/* The driver's cuTensorMapEncodeTiled, fetched once through the runtime (no -lcuda).  Exits with
 * one line when the driver has none (older than CUDA 12). */
static inline PFN_cuTensorMapEncodeTiled_v12000 fl_tmap_encoder()
{
    static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
    if (!fn) {
        void *p = nullptr;
        cudaDriverEntryPointQueryResult q;
        const cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q);
        if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !p) {
            fprintf(stderr, "flashlab-gpu: the CUDA driver has no cuTensorMapEncodeTiled (TMA needs a CUDA 12 driver)\n");
            exit(1);
        }
        fn = (PFN_cuTensorMapEncodeTiled_v12000)p;
    }
    return fn;
}

/* A tensor of `slices` matrices of rows x cols 16-bit elements, row-major and contiguous (the
 * (B*H, N, d) layout), seen by the bulk tensor copy engine in boxes of BOX_COLS = 64 columns
 * (128 bytes: the 128-byte swizzle's row) x box_rows rows of one slice.  A box lands in shared
 * memory as a box_rows x 64 sub-tile with the 128-byte swizzle, exactly fl_sub_off's layout
 * (wgmma.cuh).  Rows and columns past the matrix are zero-filled and not read, so a tail needs no
 * padding of the input and a box never reads the next slice. */
template <class T, int TENSOR> class fl_gtmap {
    CUtensorMap map_; /* first: the engine wants it 64-byte aligned */
    int cols_, rows_, box_rows_;

  public:
    using elem = typename std::remove_const<T>::type;
    static constexpr int tensor = TENSOR, BOX_COLS = 128 / (int)sizeof(elem);
    static_assert(sizeof(elem) == 2, "tensor maps of 16-bit storage types (fp16, bf16)");
    static_assert(TENSOR >= 0 && TENSOR < FL_NT, "a tensor of common.cuh");

    fl_gtmap() = default;
    /* Encodes the map of p (the host's device address).  Exits with status 2 and one line naming
     * `what` when the engine cannot describe the tensor: p not 16-byte aligned, cols not a
     * multiple of 8, box_rows outside 1..256. */
    __host__ fl_gtmap(const elem *p, int cols, int rows, int slices, int box_rows, const char *what)
        : cols_(cols), rows_(rows), box_rows_(box_rows)
    {
        const cuuint64_t dim[3] = {(cuuint64_t)cols, (cuuint64_t)rows, (cuuint64_t)slices};
        const cuuint64_t stride[2] = {(cuuint64_t)cols * sizeof(elem), (cuuint64_t)cols * rows * sizeof(elem)};
        const cuuint32_t box[3] = {(cuuint32_t)BOX_COLS, (cuuint32_t)box_rows, 1}, estride[3] = {1, 1, 1};
        const CUtensorMapDataType dt = std::is_same<elem, __half>::value ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                                         : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
        const CUresult r =
            ((uintptr_t)p % 16 || cols % 8 || box_rows < 1 || box_rows > 256)
                ? CUDA_ERROR_INVALID_VALUE
                : fl_tmap_encoder()(&map_, dt, 3, (void *)p, dim, stride, box, estride, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                    CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
        if (r != CUDA_SUCCESS) {
            fprintf(stderr, "flashlab-gpu: %s: the tensor map cannot describe it (TMA needs a 16-byte aligned address, "
                            "rows of a multiple of 16 bytes, boxes of at most 256 rows; error %d)\n", what, (int)r);
            exit(2);
        }
    }
    /* The box of columns [col, col + 64) x rows [row, row + box_rows) of slice `slice` into shared
     * memory at s (1024-byte aligned), completing as transaction bytes on the mbarrier bar (the
     * caller expects BOX_COLS * box_rows * 2 bytes: the engine counts the zero fill too).  One
     * thread issues it; the elements inside the tensor are counted as read. */
    __device__ __forceinline__ void load(FlCount &c, void *s, uint64_t *bar, int col, int row, int slice) const
    {
        const int r = max(0, min(box_rows_, rows_ - row)), k = max(0, min(BOX_COLS, cols_ - col));
        c.template read<TENSOR>((long long)r * k);
        FL_SM90A_ASM("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n"
                     ::"r"(fl_smem_u32(s)), "l"((uint64_t)&map_), "r"(col), "r"(row), "r"(slice), "r"(fl_smem_u32(bar))
                     : "memory");
    }
    /* The other way: the box_rows x 64 sub-tile at s (1024-byte aligned, the 128-byte swizzle)
     * written to columns [col, col + 64) x rows [row, row + box_rows) of slice `slice`; rows and
     * columns past the matrix are not written.  One thread issues it, after the threads that wrote
     * s have made their writes visible to the copy engine (fence.proxy.async, then a barrier among
     * them); it joins this thread's bulk group (fl_bulk_commit), which must be waited for
     * (fl_bulk_wait_read) before s is written again or the CTA ends.  The elements inside the
     * tensor are counted as written. */
    __device__ __forceinline__ void store(FlCount &c, const void *s, int col, int row, int slice) const
    {
        const int r = max(0, min(box_rows_, rows_ - row)), k = max(0, min(BOX_COLS, cols_ - col));
        c.template write<TENSOR>((long long)r * k);
        FL_SM90A_ASM("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];\n"
                     ::"l"((uint64_t)&map_), "r"(col), "r"(row), "r"(slice), "r"(fl_smem_u32(s))
                     : "memory");
    }
};

#endif
