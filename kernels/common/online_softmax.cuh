/* online_softmax.cuh: what the fast forward kernels (versions 7, 10 and 12) share: the query block
 * and its key range, and the online softmax on score fragments in registers (docs/model.md rule
 * R3: m, l and the rescale of O per row).
 *
 * Fragments: s[m][n][e] is the C fragment (mma.sync m16n8, or a wgmma m64nN accumulator seen by
 * one warp: the same layout) of rows row0 + m*16 + g + 8*(e/2), keys c0 + n*8 + 2t + e%2, with
 * g = lane/4, t = lane%4.  A row's scores are spread over the 4 lanes of a quad: maxima are
 * reduced over the quad at once, sums only at the end (fl_softmax_finish).
 */
#ifndef FL_KERNELS_ONLINE_SOFTMAX_CUH
#define FL_KERNELS_ONLINE_SOFTMAX_CUH

#include "mma.cuh"

/* Query block bx of nbx and the key blocks it sees (docs/model.md rule K2): causal, the last
 * query blocks see the most keys and are started first; a block sees keys [0, kend) and loads
 * nkb blocks of BC.  Tile-local indices are int (N d < 2^31 is checked at launch). */
struct FlQueryBlock {
    int r0, br, nkb;
};
template <int BR, int BC>
__device__ __forceinline__ FlQueryBlock fl_query_block_at(int bx, int nbx, int N, int Nk, int causal, int off)
{
    const int iblk = causal ? nbx - 1 - bx : bx;
    const int r0 = iblk * BR, br = min(BR, N - r0);
    const int kend = causal ? max(0, min(Nk, r0 + br + off)) : Nk;
    return {r0, br, (kend + BC - 1) / BC};
}
/* The same for this CTA of a grid of query blocks (blockIdx.x of gridDim.x). */
template <int BR, int BC>
__device__ __forceinline__ FlQueryBlock fl_query_block(int N, int Nk, int causal, int off)
{
    return fl_query_block_at<BR, BC>((int)blockIdx.x, (int)gridDim.x, N, Nk, causal, off);
}

/* Sets to -inf the scores of keys >= Nk and, causal, of keys j > i + off (rule K4).  Call it
 * only on tiles that cross the diagonal or the end of the keys; row0 is the warp's first row.
 * Per row, the last key it sees is min(Nk - 1, i + off) (causal) or Nk - 1; counted from this
 * thread's first column, a score is masked by one compare with a constant. */
template <int WM, int BC>
__device__ __forceinline__ void fl_mask_frag(float (&s)[WM][BC / 8][4], int row0, int c0, int Nk, int causal, int off)
{
    const int lane = threadIdx.x & 31, g4 = lane >> 2, t4 = lane & 3;
#pragma unroll
    for (int m = 0; m < WM; m++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int row = row0 + m * 16 + g4 + 8 * h;
            const int last = (causal ? min(Nk - 1, row + off) : Nk - 1) - c0 - 2 * t4;
#pragma unroll
            for (int n = 0; n < BC / 8; n++)
#pragma unroll
                for (int e = 0; e < 2; e++)
                    if (n * 8 + e > last) s[m][n][2 * h + e] = -INFINITY;
        }
}

/* The first key block j (of BC keys) whose scores need fl_mask_frag for a warp whose first row is
 * row0: the blocks before it end below Nk and, causal, at or left of the diagonal of row0 (the
 * warp's most restrictive row), that is (j + 1) BC <= Nk and (j + 1) BC <= row0 + off + 1.  The
 * kernels test j against it instead of both conditions each step. */
template <int BC> __device__ __forceinline__ int fl_first_masked_block(int row0, int Nk, int causal, int off)
{
    const int ends = Nk / BC;
    return causal ? min(ends, max(0, row0 + off + 1) / BC) : ends;
}

/* The first half of one step of the online softmax over a tile of BC keys: m_new = max(m,
 * rowmax(s)); s becomes P = 2^(s*c - m_new*c) with c = scale*log2(e) (one FFMA and one EX2 a
 * score; m stays in raw score units); l = alpha*l + rowsum(P) (this thread's part); alpha =
 * 2^((m - m_new)*c) is returned for the rescale of O (fl_rescale_o), which version 12 applies only
 * after the product P_{j-1} V_{j-1} in flight meanwhile has landed in O. */
template <int WM, int BC>
__device__ __forceinline__ void fl_softmax_p(float (&s)[WM][BC / 8][4], float (&mrow)[WM][2], float (&lrow)[WM][2],
                                             float scale_log2, float (&alpha)[WM][2])
{
#pragma unroll
    for (int m = 0; m < WM; m++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            float mx = mrow[m][h];
#pragma unroll
            for (int n = 0; n < BC / 8; n++) mx = fmaxf(mx, fmaxf(s[m][n][2 * h], s[m][n][2 * h + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float ms = mx == -INFINITY ? 0.f : mx * scale_log2; /* no key yet: 2^-inf = 0 */
            alpha[m][h] = fl_ex2(fmaf(mrow[m][h], scale_log2, -ms));
            mrow[m][h] = mx;
            float sum = 0.f;
#pragma unroll
            for (int n = 0; n < BC / 8; n++) {
                s[m][n][2 * h] = fl_ex2(fmaf(s[m][n][2 * h], scale_log2, -ms));
                s[m][n][2 * h + 1] = fl_ex2(fmaf(s[m][n][2 * h + 1], scale_log2, -ms));
                sum += s[m][n][2 * h] + s[m][n][2 * h + 1];
            }
            lrow[m][h] = lrow[m][h] * alpha[m][h] + sum;
        }
}

/* The second half: o *= alpha, row by row (docs/model.md rule R3's rescale of O). */
template <int WM, int D>
__device__ __forceinline__ void fl_rescale_o(float (&o)[WM][D / 8][4], const float (&alpha)[WM][2])
{
#pragma unroll
    for (int m = 0; m < WM; m++)
#pragma unroll
        for (int h = 0; h < 2; h++)
#pragma unroll
            for (int n = 0; n < D / 8; n++) {
                o[m][n][2 * h] *= alpha[m][h];
                o[m][n][2 * h + 1] *= alpha[m][h];
            }
}

/* One whole step (versions 7 and 10): fl_softmax_p, then the rescale of O at once. */
template <int WM, int BC, int D>
__device__ __forceinline__ void fl_softmax_step(float (&s)[WM][BC / 8][4], float (&o)[WM][D / 8][4], float (&mrow)[WM][2],
                                                float (&lrow)[WM][2], float scale_log2)
{
    float alpha[WM][2];
    fl_softmax_p<WM, BC>(s, mrow, lrow, scale_log2, alpha);
    fl_rescale_o<WM, D>(o, alpha);
}

/* The end of the row block: rs = 1/l (0 for a row that saw no key), L = m*scale + log l
 * (natural log; -inf for a row that saw no key) written for rows row0.. below N, counted. */
template <int WM>
__device__ __forceinline__ void fl_softmax_finish(const float (&mrow)[WM][2], const float (&lrow)[WM][2], float scale_log2,
                                                  float (&rs)[WM][2], fl_gptr<float, FL_T_L> L, int row0, int N, FlCount &c)
{
    const int lane = threadIdx.x & 31, g4 = lane >> 2, t4 = lane & 3;
#pragma unroll
    for (int m = 0; m < WM; m++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            float l = lrow[m][h];
            l += __shfl_xor_sync(0xffffffffu, l, 1);
            l += __shfl_xor_sync(0xffffffffu, l, 2);
            /* l >= 1 when a row saw a key (its maximum contributes 2^0): the hardware's
             * approximate reciprocal and logarithm (MUFU, relative errors near 2^-22), without
             * the IEEE division's and logf's special-case branches */
            rs[m][h] = l > 0.f ? __fdividef(1.f, l) : 0.f;
            const int row = row0 + m * 16 + g4 + 8 * h;
            if (t4 == 0 && row < N) L.st(c, row, l > 0.f ? mrow[m][h] * scale_log2 * 0.6931471805599453f + __logf(l) : -INFINITY);
        }
}

#endif
