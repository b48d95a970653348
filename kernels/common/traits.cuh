/* traits.cuh: a kernel's on-chip buffers, listed once; its shared memory and the model's
 * footprint both come from the list.
 *
 * Each kernel of the ladder has a constexpr function returning its fl_tiles: one fl_tile_buf per
 * buffer, in the order the kernel carves them out of its shared memory.  From that one list:
 *
 *   footprint()     the elements of the buffers the model counts (model = 1), one stage each:
 *                   the kernel's M_eff, static_asserted equal to include/flashlab/footprint.h's
 *                   formula (docs/model.md F0-F2b) and checked by the harness equal to the model's
 *                   fl_footprint before any count is compared
 *   offset(k)       where buffer k starts in the dynamic shared memory (bytes; each buffer on its
 *                   element size's boundary): the kernel's pointers
 *   dyn_bytes()     the dynamic shared memory the launch asks for
 *   static_bytes()  the kernel's __shared__ arrays (FL_STATIC), which the harness checks equal to
 *                   cudaFuncGetAttributes' sharedSizeBytes of the launched kernel
 *   smem_model_bytes()  bytes of the model's buffers that live in shared memory (<= what the
 *                   launched kernel has: checked by the harness)
 *
 * Buffers the model counts but the kernel keeps in registers (a score tile held as mma
 * fragments, the running O of the tensor-core forwards, per-row statistics) are FL_REGS: in the
 * footprint, not in shared memory.  Buffers the kernel adds beyond the model (a second prefetch
 * stage, padding columns against bank conflicts, scratch) are in shared memory and not in the
 * footprint (model = 0, or stages > 1, or pad > 0).
 */
#ifndef FL_KERNELS_TRAITS_CUH
#define FL_KERNELS_TRAITS_CUH

#include <stddef.h>

enum fl_where { FL_SMEM, FL_STATIC, FL_REGS };

struct fl_tile_buf {
    const char *name;
    long rows, cols;  /* the tile the model sees: rows x cols elements */
    int pad;          /* extra columns a row in shared memory (bank conflicts); not in the model */
    int esize;        /* bytes per element on chip */
    int stages;       /* copies in shared memory (2: prefetch); the model counts one */
    int model;        /* 1: part of the model's footprint */
    fl_where where;
};

/* What the harness records of a kernel's tiles (host side, no templates). */
struct fl_tile_info {
    const char *kernel;
    long footprint;
    size_t dyn_bytes, static_bytes, smem_model_bytes;
};

template <int NB> struct fl_tiles {
    fl_tile_buf b[NB];

    __host__ __device__ constexpr long footprint() const
    {
        long s = 0;
        for (int i = 0; i < NB; i++)
            if (b[i].model) s += b[i].rows * b[i].cols;
        return s;
    }
    __host__ __device__ constexpr size_t bytes_of(int i) const
    {
        return (size_t)b[i].rows * (size_t)(b[i].cols + b[i].pad) * (size_t)b[i].esize * (size_t)b[i].stages;
    }
    /* Byte offset of buffer k in the dynamic shared memory (FL_SMEM buffers only). */
    __host__ __device__ constexpr size_t offset(int k) const
    {
        size_t o = 0;
        for (int i = 0; i < k; i++)
            if (b[i].where == FL_SMEM) {
                o = (o + (size_t)b[i].esize - 1) / (size_t)b[i].esize * (size_t)b[i].esize;
                o += bytes_of(i);
            }
        return b[k].where == FL_SMEM ? (o + (size_t)b[k].esize - 1) / (size_t)b[k].esize * (size_t)b[k].esize : o;
    }
    __host__ __device__ constexpr size_t dyn_bytes() const
    {
        size_t o = 0;
        for (int i = 0; i < NB; i++)
            if (b[i].where == FL_SMEM) o = offset(i) + bytes_of(i);
        return o;
    }
    __host__ __device__ constexpr size_t static_bytes() const
    {
        size_t o = 0;
        for (int i = 0; i < NB; i++)
            if (b[i].where == FL_STATIC) o += bytes_of(i);
        return o;
    }
    __host__ __device__ constexpr size_t smem_model_bytes() const
    {
        size_t o = 0;
        for (int i = 0; i < NB; i++)
            if (b[i].model && b[i].where != FL_REGS) o += (size_t)b[i].rows * (size_t)b[i].cols * (size_t)b[i].esize;
        return o;
    }
    fl_tile_info info(const char *kernel) const
    {
        return {kernel, footprint(), dyn_bytes(), static_bytes(), smem_model_bytes()};
    }
};

/* A compile-time constant (forces a constexpr call to be evaluated by the compiler). */
template <class U, U v> struct fl_const {
    static constexpr U value = v;
};
/* Pointer of type `type *` to buffer k of the constexpr tiles tl in the dynamic shared memory at
 * base: how a kernel carves its buffers, at the offsets its traits give. */
#define FL_TILE(type, base, tl, k) ((type *)((unsigned char *)(base) + fl_const<size_t, (tl).offset(k)>::value))

/* The limit every kernel's dynamic shared memory is checked against at compile time: 227 KB, the
 * most a CTA can have on sm_90; a launch on a GPU with less fails with a CUDA error and the
 * harness lists which tiles it cannot run. */
#define FL_SMEM_MAX (227 * 1024)

#endif
