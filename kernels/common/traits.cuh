/* traits.cuh: a kernel's on-chip buffers, listed once; its shared memory and the model's
 * footprint both come from the list.
 *
 * Each kernel of the ladder has a constexpr function returning its fl_tiles: one fl_tile_buf per
 * buffer, in the order the kernel carves them out of its shared memory.  The lists of versions
 * 1-6 are plain C, in include/flashlab/kernel_tiles.h, which the model of the GPU order
 * (src/analysis/gpu_order.c) reads too; so is the arithmetic below.  From that one list:
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

#include <flashlab/kernel_tiles.h> /* fl_tile_buf, fl_where, the layouts of versions 1-6, the arithmetic */

/* What the harness records of a kernel's tiles (host side, no templates). */
struct fl_tile_info {
    const char *kernel;
    long footprint;
    size_t dyn_bytes, static_bytes, smem_model_bytes;
};

template <int NB> struct fl_tiles {
    fl_tile_buf b[NB];

    __host__ __device__ constexpr long footprint() const { return fl_tiles_footprint(b, NB); }
    __host__ __device__ constexpr size_t bytes_of(int i) const { return fl_tile_bytes(&b[i]); }
    /* Byte offset of buffer k in the dynamic shared memory (FL_SMEM buffers only). */
    __host__ __device__ constexpr size_t offset(int k) const { return fl_tiles_offset(b, NB, k); }
    __host__ __device__ constexpr size_t dyn_bytes() const { return fl_tiles_dyn_bytes(b, NB); }
    __host__ __device__ constexpr size_t static_bytes() const { return fl_tiles_static_bytes(b, NB); }
    __host__ __device__ constexpr size_t smem_model_bytes() const { return fl_tiles_smem_model_bytes(b, NB); }
    fl_tile_info info(const char *kernel) const
    {
        return {kernel, footprint(), dyn_bytes(), static_bytes(), smem_model_bytes()};
    }
};

/* The traits of a list of buffers, its length deduced: fl_make_tiles({FL_TILES_FLASH2_FWD(D, BR, BC)}). */
template <int NB> __host__ __device__ constexpr fl_tiles<NB> fl_make_tiles(const fl_tile_buf (&b)[NB])
{
    fl_tiles<NB> t{};
    for (int i = 0; i < NB; i++) t.b[i] = b[i];
    return t;
}

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
