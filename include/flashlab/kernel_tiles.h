/* kernel_tiles.h: the readable rungs' kernels (versions 1-6 of kernels/ladder/ladder.def) as the
 * CUDA code launches them, in plain C: each kernel's on-chip buffers (its shared-memory layout)
 * and its grid, defined once.
 *
 * Included by the kernels (kernels/common/traits.cuh builds each kernel's constexpr tile traits
 * from these lists, and its launch takes its grid from these functions) and by the model of the
 * GPU order (src/analysis/gpu_order.c, which walks the same kernels' CTAs), so neither retypes
 * the other's numbers.  No library, no allocation.
 *
 * A buffer is {name, rows, cols, pad, esize, stages, model, where}: a rows x cols tile (what the
 * model counts), pad extra columns a row in shared memory (bank conflicts), esize bytes an
 * element on chip, stages copies, model = 1 when it is part of the model's footprint (docs/model.md
 * F0-F2b), where it lives.  A kernel's buffers are listed in the order it carves them out of its
 * dynamic shared memory; each buffer starts on its element size's boundary.
 */
#ifndef FLASHLAB_KERNEL_TILES_H
#define FLASHLAB_KERNEL_TILES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define FL_TILES_FN __host__ __device__ static inline constexpr
#elif defined(__cplusplus)
#define FL_TILES_FN static inline constexpr
#else
#define FL_TILES_FN static inline
#endif

/* Threads per CTA of every kernel of versions 1-6 (4 warps); their element-wise kernels (softmax,
 * inits) move one element a thread a step. */
#define FL_THREADS 128

typedef enum {
    FL_SMEM,   /* dynamic shared memory, at the offset fl_tiles_offset gives */
    FL_STATIC, /* a __shared__ array of the kernel */
    FL_REGS    /* registers: in the model's footprint, not in shared memory */
} fl_where;

typedef struct {
    const char *name;
    long rows, cols;
    int pad, esize, stages, model;
    fl_where where;
} fl_tile_buf;

/* ---- the layouts ----------------------------------------------------------------------------- */
/* C = A B^T (version 1's fl_std_scores, version 6's fl_std_nt): BO rows of A, BS rows of B (both
 * padded by a word), the C tile in registers; (F0) with Bd = d. */
#define FL_TILES_PRODUCT_NT(D, BO, BS) \
    {"A_i", BO, D, 1, 4, 1, 1, FL_SMEM}, {"B_j", BS, D, 1, 4, 1, 1, FL_SMEM}, {"C_ij", BO, BS, 0, 4, 1, 1, FL_REGS}
/* O = P V or P^T V (version 1's fl_std_pv, version 6's fl_std_nn): the P tile (BO x BS, or its
 * transpose), BS rows of V, BO rows of O. */
#define FL_TILES_PRODUCT_NN(D, BO, BS) \
    {"P tile", BO, BS, 0, 4, 1, 1, FL_SMEM}, {"V rows", BS, D, 0, 4, 1, 1, FL_SMEM}, {"O rows", BO, D, 0, 4, 1, 1, FL_SMEM}
/* A CTA per row (version 1's softmax, ROW = N or 0; version 6's dsoftmax, ROW = 2N or 0): the
 * row(s) on chip when they fit (fl_row_fits), and the block reduction's scratch. */
#define FL_TILES_ROW(ROW) {"row", 1, ROW, 0, 4, 1, 1, FL_SMEM}, {"red", 1, FL_THREADS / 32, 0, 4, 1, 0, FL_STATIC}
/* Version 2's fl_flash1_fwd: (F1) 2 Br d + 2 Bc d + Br Bc + 6 Br; the row statistics of the
 * running and the new block (mt, lt, mnew, lnew) are the model's per-row buffers. */
#define FL_TILES_FLASH1_FWD(D, BR, BC)                                                                             \
    {"K_j", BC, D, 1, 4, 1, 1, FL_SMEM}, {"V_j", BC, D, 0, 4, 1, 1, FL_SMEM}, {"Q_i", BR, D, 1, 4, 1, 1, FL_SMEM},  \
        {"O_i", BR, D, 0, 4, 1, 1, FL_SMEM}, {"S_ij", BR, BC, 1, 4, 1, 1, FL_SMEM}, {"l_i", BR, 1, 0, 4, 1, 1, FL_SMEM}, \
        {"m_i", BR, 1, 0, 4, 1, 1, FL_SMEM}, {"mt", BR, 1, 0, 4, 1, 1, FL_SMEM}, {"lt", BR, 1, 0, 4, 1, 1, FL_SMEM},    \
        {"mnew", BR, 1, 0, 4, 1, 1, FL_SMEM}, {"lnew", BR, 1, 0, 4, 1, 1, FL_SMEM}
/* Version 3's fl_flash2_fwd: (F2) 2 Br d + 2 Bc d + Br Bc + 2 Br; the rescale row is the model's
 * per-row register of rule R3, not a buffer of (F2). */
#define FL_TILES_FLASH2_FWD(D, BR, BC)                                                                             \
    {"Q_i", BR, D, 1, 4, 1, 1, FL_SMEM}, {"K_j", BC, D, 1, 4, 1, 1, FL_SMEM}, {"V_j", BC, D, 0, 4, 1, 1, FL_SMEM},  \
        {"S_ij", BR, BC, 1, 4, 1, 1, FL_SMEM}, {"O_i", BR, D, 0, 4, 1, 1, FL_SMEM}, {"m_i", BR, 1, 0, 4, 1, 1, FL_SMEM}, \
        {"l_i", BR, 1, 0, 4, 1, 1, FL_SMEM}, {"alpha", BR, 1, 0, 4, 1, 0, FL_SMEM}
/* Versions 4 (FA1 = 0, FlashAttention-2) and 5 (FA1 = 1, FlashAttention) fl_flash_bwd: (F2b)
 * 4 Bc d + 3 Br d + 2 Br Bc + 2 Br and (F1b) 4 Bc d + 4 Br d + 2 Br Bc + 3 Br; dQ_i passes
 * through registers; FA2 has no l_i, O_i (rows 0). */
#define FL_TILES_FLASH_BWD(D, BR, BC, FA1)                                                                           \
    {"K_j", BC, D, 1, 4, 1, 1, FL_SMEM}, {"V_j", BC, D, 1, 4, 1, 1, FL_SMEM}, {"dK_j", BC, D, 0, 4, 1, 1, FL_SMEM},     \
        {"dV_j", BC, D, 0, 4, 1, 1, FL_SMEM}, {"Q_i", BR, D, 1, 4, 1, 1, FL_SMEM}, {"dO_i", BR, D, 1, 4, 1, 1, FL_SMEM}, \
        {"S_ij/P_ij", BR, BC, 1, 4, 1, 1, FL_SMEM}, {"dP_ij/dS_ij", BR, BC, 1, 4, 1, 1, FL_SMEM},                      \
        {(FA1) ? "m_i" : "L_i", BR, 1, 0, 4, 1, 1, FL_SMEM}, {"D_i", BR, 1, 0, 4, 1, 1, FL_SMEM},                      \
        {"l_i", (FA1) ? (BR) : 0, 1, 0, 4, 1, 1, FL_SMEM}, {"O_i", (FA1) ? (BR) : 0, D, 0, 4, 1, 1, FL_SMEM},          \
        {"dQ_i", BR, D, 0, 4, 1, 1, FL_REGS}
/* The element-wise kernels (flash1's inits, flash2's backward preprocessing): no buffer. */
#define FL_TILES_NONE {"none", 0, 0, 0, 4, 1, 0, FL_SMEM}

/* ---- what a layout takes ---------------------------------------------------------------------- */
/* Bytes of buffer b in shared memory (all its stages and padding). */
FL_TILES_FN size_t fl_tile_bytes(const fl_tile_buf *b)
{
    return (size_t)b->rows * (size_t)(b->cols + b->pad) * (size_t)b->esize * (size_t)b->stages;
}

/* Byte offset of buffer k of the n buffers b in the dynamic shared memory (FL_SMEM buffers
 * only; each on its element size's boundary). */
FL_TILES_FN size_t fl_tiles_offset(const fl_tile_buf *b, int n, int k)
{
    size_t o = 0;
    for (int i = 0; i < k && i < n; i++)
        if (b[i].where == FL_SMEM) {
            o = (o + (size_t)b[i].esize - 1) / (size_t)b[i].esize * (size_t)b[i].esize;
            o += fl_tile_bytes(&b[i]);
        }
    return k < n && b[k].where == FL_SMEM ? (o + (size_t)b[k].esize - 1) / (size_t)b[k].esize * (size_t)b[k].esize : o;
}

/* The dynamic shared memory the launch asks for, bytes. */
FL_TILES_FN size_t fl_tiles_dyn_bytes(const fl_tile_buf *b, int n)
{
    size_t o = 0;
    for (int i = 0; i < n; i++)
        if (b[i].where == FL_SMEM) o = fl_tiles_offset(b, n, i) + fl_tile_bytes(&b[i]);
    return o;
}

/* The kernel's __shared__ arrays, bytes. */
FL_TILES_FN size_t fl_tiles_static_bytes(const fl_tile_buf *b, int n)
{
    size_t o = 0;
    for (int i = 0; i < n; i++)
        if (b[i].where == FL_STATIC) o += fl_tile_bytes(&b[i]);
    return o;
}

/* The elements of the buffers the model counts, one stage each: the kernel's M_eff. */
FL_TILES_FN long fl_tiles_footprint(const fl_tile_buf *b, int n)
{
    long s = 0;
    for (int i = 0; i < n; i++)
        if (b[i].model) s += b[i].rows * b[i].cols;
    return s;
}

/* Bytes of the model's buffers that live in shared memory. */
FL_TILES_FN size_t fl_tiles_smem_model_bytes(const fl_tile_buf *b, int n)
{
    size_t o = 0;
    for (int i = 0; i < n; i++)
        if (b[i].model && b[i].where != FL_REGS) o += (size_t)b[i].rows * (size_t)b[i].cols * (size_t)b[i].esize;
    return o;
}

/* ---- the grids -------------------------------------------------------------------------------- */
/* The element-wise kernels stride over their items with at most this many CTAs. */
#define FL_GRID_STRIDE_MAX 1024

/* A CTA per block of `per` rows (the products, the flash2 forward): ceil(rows / per). */
FL_TILES_FN int64_t fl_grid_blocks(int64_t rows, int64_t per) { return (rows + per - 1) / per; }

/* A grid-stride kernel over `items`, `per` items a CTA a step: ceil(items / per) CTAs, at most
 * FL_GRID_STRIDE_MAX (flash1's inits: per = FL_THREADS elements; flash2's backward
 * preprocessing: per = FL_THREADS / 32 rows, a warp a row). */
FL_TILES_FN int64_t fl_grid_stride(int64_t items, int64_t per)
{
    return fl_grid_blocks(items, per) < FL_GRID_STRIDE_MAX ? fl_grid_blocks(items, per) : FL_GRID_STRIDE_MAX;
}

/* The wavefronts of versions 2, 4 and 5 (a cooperative launch): a CTA per key block, at most as
 * many as are resident at once. */
FL_TILES_FN int64_t fl_grid_wavefront(int64_t Tc, int64_t resident) { return Tc < resident ? Tc : resident; }

/* The row kernels of versions 1 and 6 (a CTA per row) keep the row on chip when its elements fit
 * in the footprint M_eff (docs/model.md eq. C0.3: N <= M; the backward's two rows: 2N <= M). */
FL_TILES_FN int fl_row_fits(int64_t row_elems, int64_t m_eff) { return row_elems <= m_eff; }

#endif
