/* mma.cuh: the tensor-core building blocks of the fast kernels (versions 7-11), plain sm_80+ PTX:
 * cp.async tile copies into swizzled shared memory, ldmatrix, and mma.sync m16n8k16 (fp16 or
 * bf16 in, fp32 accumulate).  Every fast kernel is one of three warp-level products built from
 * these pieces:
 *
 *   fl_warp_qk   S[WM*16 x BC] = A[rows] B[BC rows]^T     A, B row-major tiles in shared memory
 *   fl_warp_pv   O[WM*16 x D] += P V                      P in registers (the S accumulators) or
 *                                                          in shared memory; V row-major
 *
 * Fragment layouts (PTX ISA, "mma.m16n8k16"): g = lane / 4, t = lane % 4.
 *   A 16x16: a0 (g, 2t..2t+1)  a1 (g+8, 2t..)  a2 (g, 2t+8..)  a3 (g+8, 2t+8..)
 *   B 16x8:  b0 (k = 2t..2t+1, n = g)           b1 (k = 2t+8.., n = g)
 *   C 16x8:  c0 c1 (g, 2t..2t+1)                c2 c3 (g+8, 2t..2t+1)
 * Two C tiles side by side (16 x 16, fp32) are, rounded to 16 bits, exactly one A fragment: this
 * is how P = exp(S - m) goes from the first product into the second without touching memory.
 *
 * Shared-memory tiles are row-major with COLS >= 64 elements per row (16-bit types), stored in
 * 16-byte chunks whose index is XORed with (row mod 8): the eight row addresses of one ldmatrix
 * phase then fall in eight different chunks, so no bank is hit twice (HOPPER.md, "Banks").
 */
#ifndef FL_KERNELS_MMA_CUH
#define FL_KERNELS_MMA_CUH

#include "arch.cuh"
#include "common.cuh"
#include "counted.cuh"

/* ---- shared memory layout ------------------------------------------------------------------ */
/* Element offset of (row r, 16-byte chunk ch) in a swizzled tile of COLS 16-bit elements a row. */
template <int COLS> __device__ __forceinline__ int fl_swz(int r, int ch)
{
    static_assert(COLS % 64 == 0, "swizzled tiles need rows of a multiple of 64 elements");
    return r * COLS + ((ch ^ (r & 7)) << 3);
}

/* ---- asynchronous copies (the copies themselves: fl_gptr::cp16, counted.cuh) --------------- */
__device__ __forceinline__ void fl_cp_commit()
{
#if FL_CODE_HAS(FL_NEED_SM80)
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}
template <int N> __device__ __forceinline__ void fl_cp_wait()
{
#if FL_CODE_HAS(FL_NEED_SM80)
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

/* Element offset of (row r, 16-byte chunk ch) in a ROWS x COLS tile: one swizzled tile of COLS
 * columns, or (SUB) COLS/64 swizzled sub-tiles of ROWS x 64 one after the other (wgmma.cuh). */
template <int ROWS, int COLS, bool SUB> __device__ __forceinline__ int fl_tile_off(int r, int ch)
{
    if constexpr (SUB) return (ch >> 3) * ROWS * 64 + fl_swz<64>(r, ch & 7);
    else return fl_swz<COLS>(r, ch);
}

/* Copies rows [0, rows) x columns [0, cols) of a row-major global matrix g (leading dimension ld
 * elements) into a ROWS x COLS swizzled tile; everything outside is zero-filled.  Chunks that
 * are whole and 16-byte aligned go by cp.async (the caller commits and waits); a ragged edge
 * (cols not a multiple of 8, or rows not 16-byte aligned) is copied element by element.  Each
 * element read is counted once (counted.cuh).  All NT threads of the CTA call it.  SUB: the tile
 * is stored as 64-column sub-tiles (the wgmma layout, fl_tile_off). */

template <class T, int ROWS, int COLS, int NT, bool SUB = false, int TT>
__device__ __forceinline__ void fl_load_tile(T *s, fl_gptr<const T, TT> g, long ld, int rows, int cols, FlCount &c)
{
    constexpr int CH = COLS / 8;
    const bool aligned = (ld % 8) == 0 && g.aligned16();
    if constexpr ((ROWS * CH) % NT == 0 && (NT / CH) % 8 == 0) {
        if (rows == ROWS && cols == COLS && aligned) {
            /* a whole tile (all but a ragged last one): each thread's chunks lie NT/CH rows apart,
             * a multiple of 8, so they share one swizzle and the addresses advance by constants */
            const int r = threadIdx.x / CH, ch = threadIdx.x % CH;
            const fl_gptr<const T, TT> src = g + (long)r * ld + ch * 8;
            T *dst = s + fl_tile_off<ROWS, COLS, SUB>(r, ch);
#pragma unroll
            for (int it = 0; it < ROWS * CH / NT; it++)
                src.cp16(c, dst + it * (NT / CH) * (SUB ? 64 : COLS), (long)it * (NT / CH) * ld, 16);
            return;
        }
    }
    for (int x = threadIdx.x; x < ROWS * CH; x += NT) {
        const int r = x / CH, ch = x % CH, c0 = ch * 8;
        T *dst = s + fl_tile_off<ROWS, COLS, SUB>(r, ch);
        const int n = (r < rows) ? max(0, min(8, cols - c0)) : 0;
        if (n == 8 && aligned) {
            (g + (long)r * ld + c0).cp16(c, dst, 0, 16);
        } else if (n == 0) {
            g.cp16(c, dst, 0, 0); /* zero fill, nothing read */
        } else {
            const fl_gptr<const T, TT> src = g + (long)r * ld + c0;
#pragma unroll
            for (int e = 0; e < 8; e++) dst[e] = e < n ? src.ld_elem(c, e) : fl_from_f<T>(0.f);
        }
    }
}

/* ---- ldmatrix and mma ---------------------------------------------------------------------- */
/* (ldmatrix exists from sm_75, mma.sync m16n8k16 from sm_80: every caller needs FL_NEED_SM80, and
 * on an older target these compile to fl_arch_missing, never executed: see arch.cuh.) */
__device__ __forceinline__ void fl_ldsm4(unsigned (&r)[4], const void *p)
{
#if FL_CODE_HAS(FL_NEED_SM80)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(fl_smem_u32(p)));
#else
    fl_arch_missing();
#endif
}
__device__ __forceinline__ void fl_ldsm4t(unsigned (&r)[4], const void *p)
{
#if FL_CODE_HAS(FL_NEED_SM80)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(fl_smem_u32(p)));
#else
    fl_arch_missing();
#endif
}

/* c += a b for one 16x8x16 tile (fp32 accumulators). */
template <class T> __device__ __forceinline__ void fl_mma(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1);
template <> __device__ __forceinline__ void fl_mma<__half>(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1)
{
#if FL_CODE_HAS(FL_NEED_SM80)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
    fl_arch_missing();
#endif
}
template <> __device__ __forceinline__ void fl_mma<__nv_bfloat16>(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1)
{
#if FL_CODE_HAS(FL_NEED_SM80)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
    fl_arch_missing();
#endif
}

/* Two fp32 values rounded into one register of two 16-bit values (x in the low half). */
template <class T> __device__ __forceinline__ unsigned fl_pack2(float x, float y);
template <> __device__ __forceinline__ unsigned fl_pack2<__half>(float x, float y)
{
    __half2 h = __floats2half2_rn(x, y);
    return *(unsigned *)&h;
}
template <> __device__ __forceinline__ unsigned fl_pack2<__nv_bfloat16>(float x, float y)
{
    __nv_bfloat162 h = __floats2bfloat162_rn(x, y);
    return *(unsigned *)&h;
}

/* 2^x by the special-function unit (flush to zero; 2^-inf = 0): exp2f without fast math adds a
 * range reduction around the same instruction. */
__device__ __forceinline__ float fl_ex2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

/* Sets every accumulator of a fragment array to 0. */
template <int A, int B> __device__ __forceinline__ void fl_zero(float (&x)[A][B][4])
{
#pragma unroll
    for (int i = 0; i < A; i++)
#pragma unroll
        for (int j = 0; j < B; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) x[i][j][e] = 0.f;
}

/* ---- warp-level products --------------------------------------------------------------------- */
/* s = A B^T for this warp's WM*16 rows: A is a swizzled tile of KD columns whose rows start at
 * A (the warp's first row), B a swizzled BC x KD tile.  s[m][n] is the C fragment of rows
 * m*16.., keys n*8..; s is overwritten. */
template <class T, int KD, int WM, int BC>
__device__ __forceinline__ void fl_warp_qk(float (&s)[WM][BC / 8][4], const T *A, const T *B)
{
    const int lane = threadIdx.x & 31;
    fl_zero(s);
#pragma unroll
    for (int kk = 0; kk < KD / 16; kk++) {
        unsigned a[WM][4];
#pragma unroll
        for (int m = 0; m < WM; m++) /* matrices (rows 0-7 | 8-15) x (cols kk*16 | +8) */
            fl_ldsm4(a[m], A + fl_swz<KD>(m * 16 + (lane & 15), kk * 2 + (lane >> 4)));
#pragma unroll
        for (int np = 0; np < BC / 16; np++) {
            unsigned b[4]; /* keys np*16 + (0-7 | 8-15) x cols (kk*16 | +8): b0 b1 of two n tiles */
            fl_ldsm4(b, B + fl_swz<KD>(np * 16 + (lane & 7) + ((lane >> 4) << 3), kk * 2 + ((lane >> 3) & 1)));
#pragma unroll
            for (int m = 0; m < WM; m++) {
                fl_mma<T>(s[m][2 * np], a[m], b[0], b[1]);
                fl_mma<T>(s[m][2 * np + 1], a[m], b[2], b[3]);
            }
        }
    }
}

/* o += a V_k for one 16-key slice kk of a BC x D swizzled V tile, a[m] the A fragments of the
 * warp's rows over keys kk*16..kk*16+15. */
template <class T, int D, int WM>
__device__ __forceinline__ void fl_warp_pv_step(float (&o)[WM][D / 8][4], const unsigned (&a)[WM][4], const T *Vt, int kk)
{
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int dp = 0; dp < D / 16; dp++) {
        unsigned b[4]; /* keys kk*16 + (0-7 | 8-15) x columns (dp*16 | +8), transposed */
        fl_ldsm4t(b, Vt + fl_swz<D>(kk * 16 + (lane & 7) + (((lane >> 3) & 1) << 3), dp * 2 + (lane >> 4)));
#pragma unroll
        for (int m = 0; m < WM; m++) {
            fl_mma<T>(o[m][2 * dp], a[m], b[0], b[1]);
            fl_mma<T>(o[m][2 * dp + 1], a[m], b[2], b[3]);
        }
    }
}

/* o += P V with P in registers: p[m][n] the fp32 C fragments of the first product. */
template <class T, int D, int WM, int BC>
__device__ __forceinline__ void fl_warp_pv_regs(float (&o)[WM][D / 8][4], const float (&p)[WM][BC / 8][4], const T *Vt)
{
#pragma unroll
    for (int kk = 0; kk < BC / 16; kk++) {
        unsigned a[WM][4];
#pragma unroll
        for (int m = 0; m < WM; m++) {
            a[m][0] = fl_pack2<T>(p[m][2 * kk][0], p[m][2 * kk][1]);
            a[m][1] = fl_pack2<T>(p[m][2 * kk][2], p[m][2 * kk][3]);
            a[m][2] = fl_pack2<T>(p[m][2 * kk + 1][0], p[m][2 * kk + 1][1]);
            a[m][3] = fl_pack2<T>(p[m][2 * kk + 1][2], p[m][2 * kk + 1][3]);
        }
        fl_warp_pv_step<T, D, WM>(o, a, Vt, kk);
    }
}

/* o += P V with P a swizzled tile of BC columns in shared memory, rows starting at P. */
template <class T, int D, int WM, int BC>
__device__ __forceinline__ void fl_warp_pv_smem(float (&o)[WM][D / 8][4], const T *P, const T *Vt)
{
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int kk = 0; kk < BC / 16; kk++) {
        unsigned a[WM][4];
#pragma unroll
        for (int m = 0; m < WM; m++) fl_ldsm4(a[m], P + fl_swz<BC>(m * 16 + (lane & 15), kk * 2 + (lane >> 4)));
        fl_warp_pv_step<T, D, WM>(o, a, Vt, kk);
    }
}

/* o += X^T V with X a swizzled KS x XC tile stored the other way round (rows = the KS summed
 * rows, XC columns); the warp's output rows are X's columns col0..col0 + WM*16: A fragments by
 * ldmatrix.trans (dQ = dS K from dS^T in version 9; dV = P^T dO, dK = dS^T Q in version 11). */
template <class T, int D, int WM, int KS, int XC>
__device__ __forceinline__ void fl_warp_pv_smem_t(float (&o)[WM][D / 8][4], const T *X, int col0, const T *Vt)
{
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int kk = 0; kk < KS / 16; kk++) {
        unsigned a[WM][4];
#pragma unroll
        for (int m = 0; m < WM; m++)
            fl_ldsm4t(a[m], X + fl_swz<XC>(kk * 16 + (lane & 7) + ((lane >> 4) << 3), (col0 + m * 16) / 8 + ((lane >> 3) & 1)));
        fl_warp_pv_step<T, D, WM>(o, a, Vt, kk);
    }
}

/* Writes this warp's WM*16 x D output rows, each row's fragments multiplied by rs[m][h] (h = 0:
 * row g, 1: row g+8), through the warp's own rows of the swizzled stage tile (no other warp
 * touches them) as 16-byte stores: rows [0, rows) of the global matrix out (ld = D) exist; each
 * element stored is counted once. */
template <class T, int D, int WM, class Out>
__device__ __forceinline__ void fl_warp_store_rows(const float (&o)[WM][D / 8][4], const float (&rs)[WM][2], T *stage,
                                                   Out out, int rows, FlCount &c)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, tq = lane & 3;
    __syncwarp();
#pragma unroll
    for (int m = 0; m < WM; m++)
#pragma unroll
        for (int n = 0; n < D / 8; n++)
#pragma unroll
            for (int h = 0; h < 2; h++)
                *(unsigned *)(stage + fl_swz<D>(m * 16 + g + 8 * h, n) + 2 * tq) =
                    fl_pack2<T>(o[m][n][2 * h] * rs[m][h], o[m][n][2 * h + 1] * rs[m][h]);
    __syncwarp();
    constexpr int CH = D / 8;
    for (int x = lane; x < WM * 16 * CH; x += 32) {
        const int r = x / CH, ch = x % CH;
        if (r < rows) out.st_vec(c, (long)r * D + ch * 8, *(const uint4 *)(stage + fl_swz<D>(r, ch)));
    }
}

#endif
