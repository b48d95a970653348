/* wgmma.cuh: Hopper's warpgroup matrix instructions (sm_90a) for versions 10 and 12: wgmma.mma_async
 * with both operands in shared memory (S = Q K^T) or A in registers (O += P V), the shared-memory
 * matrix descriptors, stmatrix, and the fences they need (HOPPER.md).
 *
 * Layout: every operand tile in shared memory is K-major (the reduction dimension contiguous),
 * cut into sub-tiles of 64 16-bit elements (128 bytes) a row, each sub-tile ROWS x 64 with the
 * 128-byte swizzle (16-byte chunk c of row r stored at chunk c ^ (r mod 8): fl_swz<64>), based
 * on a 1024-byte boundary.  A descriptor then has stride byte offset 1024 (8 rows of 128 bytes),
 * leading byte offset 16 (unused with this swizzle), swizzle mode 1 (128 B); stepping k by 16
 * elements inside a sub-tile adds 32 bytes to the start address.
 *
 * Accumulators (f32, m64nN): warp w of the warpgroup holds rows 16w..16w+15, and its lanes hold
 * them exactly as an mma.sync m16n8 C fragment repeated over the N/8 column chunks: d[4j + e] is
 * fragment (chunk j, element e).  So the online softmax of version 7 works on them unchanged,
 * and two chunks of P make one A fragment of the second product, as with mma.sync.
 */
#ifndef FL_KERNELS_WGMMA_CUH
#define FL_KERNELS_WGMMA_CUH

#include <stdint.h>

#include "arch.cuh"
#include "mma.cuh"

/* Offset (elements) of (row r, column c) in a tile of 64-column sub-tiles of ROWS rows. */
template <int ROWS> __device__ __forceinline__ int fl_sub_off(int r, int c)
{
    return (c >> 6) * ROWS * 64 + fl_swz<64>(r, (c & 63) >> 3) + (c & 7);
}

/* The descriptor of a K-major, 128-byte-swizzled operand starting at p (PTX ISA, "Matrix
 * Descriptor Format"): start address >> 4 (bits 0-13), leading byte offset >> 4 (16-29), stride
 * byte offset >> 4 (32-45), swizzle mode (62-63: 1 = 128 B). */
__device__ __forceinline__ uint64_t fl_desc(const void *p)
{
    const uint64_t a = fl_smem_u32(p);
    return ((a & 0x3FFFF) >> 4) | (uint64_t)(16 >> 4) << 16 | (uint64_t)(1024 >> 4) << 32 | (uint64_t)1 << 62;
}

/* The descriptor of an MN-major (transposed), 128-byte-swizzled B operand starting at p: the
 * operand's N dimension contiguous in rows of 64 elements (128 bytes), its K dimension the rows.
 * Stored as fl_sub_off's sub-tiles (64 N-columns each, one after the other, `lbo` bytes apart), it
 * is exactly what a row-major [K][N] tile loads as: version 12 multiplies by V_j [keys][d] with
 * no transpose.  The fields swap roles (PTX ISA, "Matrix Descriptor Format", MN-major): stride
 * byte offset 1024 (from 8 K-rows to the next 8), leading byte offset lbo (from 64 N-columns to
 * the next 64); stepping k by 16 adds 16 rows, 2048 bytes, to the start address. */
__device__ __forceinline__ uint64_t fl_desc_mn(const void *p, unsigned lbo)
{
    const uint64_t a = fl_smem_u32(p);
    return ((a & 0x3FFFF) >> 4) | (uint64_t)((lbo >> 4) & 0x3FFF) << 16 | (uint64_t)(1024 >> 4) << 32 | (uint64_t)1 << 62;
}

/* The descriptor d (fl_desc or fl_desc_mn) of an operand moved `elems` elements of T further: its
 * start address field advanced, the other fields kept (CUTLASS's descriptor iterator).  Exact when
 * elems * sizeof(T) is a multiple of 16 and the new address stays inside shared memory (below
 * 256 KB, so the 14-bit field does not carry).  Kernels build a descriptor once a tile and step it
 * by constants, so that it stays in uniform registers. */
template <class T> __device__ __forceinline__ uint64_t fl_desc_add(uint64_t d, int elems)
{
    return d + (uint64_t)((elems * (int)sizeof(T)) >> 4);
}

/* Every instruction below exists on sm_90a only (FL_SM90A_ASM, arch.cuh). */

__device__ __forceinline__ void fl_wgmma_fence() { FL_SM90A_ASM("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void fl_wgmma_commit() { FL_SM90A_ASM("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
/* Waits until at most N of this warpgroup's committed groups are still running. */
template <int N> __device__ __forceinline__ void fl_wgmma_wait() { FL_SM90A_ASM("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }
__device__ __forceinline__ void fl_wgmma_wait0() { fl_wgmma_wait<0>(); }
/* Shared memory written by this thread (cp.async, st.shared, stmatrix) becomes visible to the
 * tensor cores' async proxy; a barrier must follow before they read it. */
__device__ __forceinline__ void fl_fence_proxy_async() { FL_SM90A_ASM("fence.proxy.async.shared::cta;\n" ::: "memory"); }
/* This thread's bulk copies issued since the last commit become one bulk group (fl_gtmap::store). */
__device__ __forceinline__ void fl_bulk_commit() { FL_SM90A_ASM("cp.async.bulk.commit_group;\n" ::: "memory"); }
/* Waits until at most N of this thread's bulk groups still read their shared memory. */
template <int N> __device__ __forceinline__ void fl_bulk_wait_read() { FL_SM90A_ASM("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory"); }
/* Waits until at most N of this thread's bulk groups are incomplete (their writes done). */
template <int N> __device__ __forceinline__ void fl_bulk_wait() { FL_SM90A_ASM("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory"); }
/* Keeps the compiler from moving accesses to an accumulator across the wait (CUTLASS's
 * warpgroup_fence_operand). */
__device__ __forceinline__ void fl_reg_fence(float &x) { asm volatile("" : "+f"(x)::"memory"); }
/* The same for every element of an accumulator array. */
template <int N> __device__ __forceinline__ void fl_reg_fence(float (&x)[N])
{
#pragma unroll
    for (int i = 0; i < N; i++) fl_reg_fence(x[i]);
}

__device__ __forceinline__ void fl_stsm4(void *p, const unsigned (&r)[4])
{
    FL_SM90A_ASM("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1,%2,%3,%4};\n" ::"r"(fl_smem_u32(p)), "r"(r[0]), "r"(r[1]),
                 "r"(r[2]), "r"(r[3]));
}

/* d (m64 x N, f32) = or += A B^T, A and B by descriptor; acc = 0 overwrites d.  TA = 1: A is
 * MN-major (fl_desc_mn: the m64 rows contiguous, stored [k][m]); TB = 1: B is MN-major (stored
 * [k][N]), so d += A B.  Version 13's dQ_i = dS_ij K_j reads dS^T [keys][queries] and K_j
 * [keys][d] so, with no transpose in shared memory. */
template <class T, int N, int TA = 0, int TB = 0>
__device__ __forceinline__ void fl_wgmma_ss(float (&d)[N / 2], uint64_t da, uint64_t db, int acc);
/* d (m64 x N, f32) += A B^T, A (m64 x k16) in registers as mma.sync A fragments; TB = 1: B is
 * MN-major (fl_desc_mn), d += A B with B stored [k][N]. */
template <class T, int N, int TB = 0>
__device__ __forceinline__ void fl_wgmma_rs(float (&d)[N / 2], const unsigned (&a)[4], uint64_t db);

/* A score tile (this warp's 16 rows x NC columns of a wgmma accumulator, fp32) rounded to T as
 * wgmma A fragments, one a 16-column step: the accumulator's chunk pair (2kk, 2kk + 1) is the A
 * fragment of step kk, as with mma.sync (version 12's P, version 13's P^T and dS^T). */
template <class T, int NC> __device__ __forceinline__ void fl_pack_afrag(const float (&s)[1][NC / 8][4], unsigned (&p)[NC / 16][4])
{
#pragma unroll
    for (int kk = 0; kk < NC / 16; kk++) {
        p[kk][0] = fl_pack2<T>(s[0][2 * kk][0], s[0][2 * kk][1]);
        p[kk][1] = fl_pack2<T>(s[0][2 * kk][2], s[0][2 * kk][3]);
        p[kk][2] = fl_pack2<T>(s[0][2 * kk + 1][0], s[0][2 * kk + 1][1]);
        p[kk][3] = fl_pack2<T>(s[0][2 * kk + 1][2], s[0][2 * kk + 1][3]);
    }
}

/* The wrappers, for fp16 and bf16 (TY: the PTX type) and N = 64 or 128 (N/2 accumulators a
 * thread, operands %0..%(N/2-1)); the other operands follow them (I0 = "N/2", I1 = "N/2+1", ...).
 * scale-d is a predicate: acc = 0 overwrites d (the first k step). */
#define FL_WGMMA_SS(T, TY, N, TA, TB, I0, I1, I2, REGS, OUTS)                                           \
    template <> __device__ __forceinline__ void fl_wgmma_ss<T, N, TA, TB>(float (&d)[N / 2], uint64_t da, uint64_t db, int acc) \
    {                                                                                                   \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" I2 ", 0;\n"                                     \
                     "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TY "." TY " {" REGS "}, %" I0 ", %" I1 \
                     ", p, 1, 1, " #TA ", " #TB ";\n}\n"                                                    \
                     : OUTS : "l"(da), "l"(db), "r"(acc));                                            \
    }
#define FL_WGMMA_RS(T, TY, N, TB, I0, I1, I2, I3, I4, I5, REGS, OUTS)                                   \
    template <> __device__ __forceinline__ void fl_wgmma_rs<T, N, TB>(float (&d)[N / 2], const unsigned (&a)[4], uint64_t db) \
    {                                                                                                   \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" I5 ", 0;\n"                                     \
                     "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TY "." TY " {" REGS "}, {%" I0 ",%" I1 \
                     ",%" I2 ",%" I3 "}, %" I4 ", p, 1, 1, " #TB ";\n}\n"                                   \
                     : OUTS : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));             \
    }
#define FL_R32 "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31"
#define FL_R64 "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63"
#define FL_O32 "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define FL_O64 "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define FL_WGMMA_ALL(T, TY)                                                                     \
    FL_WGMMA_SS(T, TY, 64, 0, 0, "32", "33", "34", FL_R32, FL_O32)                                      \
    FL_WGMMA_SS(T, TY, 128, 0, 0, "64", "65", "66", FL_R64, FL_O64)                                     \
    FL_WGMMA_SS(T, TY, 64, 1, 1, "32", "33", "34", FL_R32, FL_O32)                                      \
    FL_WGMMA_RS(T, TY, 64, 0, "32", "33", "34", "35", "36", "37", FL_R32, FL_O32)                       \
    FL_WGMMA_RS(T, TY, 128, 0, "64", "65", "66", "67", "68", "69", FL_R64, FL_O64)                      \
    FL_WGMMA_RS(T, TY, 64, 1, "32", "33", "34", "35", "36", "37", FL_R32, FL_O32)                       \
    FL_WGMMA_RS(T, TY, 128, 1, "64", "65", "66", "67", "68", "69", FL_R64, FL_O64)
#if FL_CODE_HAS(FL_NEED_SM90A)
FL_WGMMA_ALL(__half, "f16")
FL_WGMMA_ALL(__nv_bfloat16, "bf16")
#else
template <class T, int N, int TA, int TB>
__device__ __forceinline__ void fl_wgmma_ss(float (&d)[N / 2], uint64_t da, uint64_t db, int acc)
{
    fl_arch_missing();
}
template <class T, int N, int TB>
__device__ __forceinline__ void fl_wgmma_rs(float (&d)[N / 2], const unsigned (&a)[4], uint64_t db)
{
    fl_arch_missing();
}
#endif

#endif
