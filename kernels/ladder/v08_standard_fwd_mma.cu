/* v08_standard_fwd_mma.cu: version 8, standard (materializing) attention on the tensor cores.
 *
 * What changed from version 7: back to version 1's schedule (S and P through HBM), now on the
 * tensor cores and over batch x heads, to show what the schedule alone costs when the arithmetic
 * is fast.  What it costs: the model's bytes, S and P included (26.0 GB at d = 128, N = 4096,
 * batch 8 x 16 heads, 128 x 64 tiles), moved in 7.0 ms on the H200, 3.72 TB/s, 86 % of its 4.3
 * TB/s copy ceiling (3.09 TB/s before S was stored as whole 32-byte sectors, tc_gemm.cuh;
 * figures/data/gpu_sdpa_v8_v9_v10_v11.csv): 3.4-6.3x SDPA's unfused math backend over the
 * benchmark's shapes (figures/data/gpu_sdpa.csv), slower than version 7 by the bytes.
 *
 * Version 1's schedule (src/schedules/standard.c, Algorithm 0; docs/model.md eqs. C0.1-C0.4) with the
 * whole head dimension in one chunk (Bd = d):
 *   step 1  fl_tc_nt         per query block i: load Q_i once; for each key block j: load K_j,
 *                            S_ij = Q_i K_j^T / sqrt(d) (masked entries -inf: the traffic is
 *                            mask-oblivious), write S_ij                       reads Nd + Nd Tr
 *   step 2  fl_fast_softmax  per row: read the row of S once (it fits: N <= M_eff), write P;
 *                            when N > M_eff, the model's three passes (max, sum, write): 3 reads
 *   step 3  fl_tc_nn         per query block i: O_i = 0; for each key block j: load P_ij, V_j,
 *                            O_i += P_ij V_j; write O_i once                   reads N^2 + Nd Tr
 * S and P are stored in the storage type (fp16 / bf16), as version 1 and the model (elem_bytes).
 * Products (kernels/common/tc_gemm.cuh, shared with version 11): mma.sync m16n8k16 through
 * kernels/common/mma.cuh, K_j / (P_ij, V_j) prefetched into a
 * second shared-memory stage by cp.async, 4 warps of WM*16 rows.  This is the "standard
 * attention" of the FlashAttention paper's Figure 2, made as fast as its own schedule allows.
 */
#include "attn.h"
#include "tc_gemm.cuh"

#define FL_V_NEEDS FL_NEED_SM80

/* Tile traits of the softmax: a row of S on chip (Nk <= M_eff) or none, the reduction scratch, and
 * the padding after it that starts the dynamic row buffer (__align__(128)) on a 128-byte boundary:
 * the compiler rounds the static shared memory up to that alignment. */
static fl_tiles<3> v08_softmax_tiles(long row, int esize, int nt)
{
    return {{{"S row", 1, row, 0, esize, 1, 1, FL_SMEM}, {"red", 1, nt / 32, 0, 4, 1, 0, FL_STATIC},
             {"padding to 128 bytes", 1, (128 - (nt / 32 * 4) % 128) % 128, 0, 1, 1, 0, FL_STATIC}}};
}

/* One CTA per row of S (NT threads).  fits: the row is read once into shared memory (Nk
 * elements); else three passes over HBM as the model's chunked safe softmax.  A row with no
 * legal key gets P = 0 (rule M0). */
template <class T, int NT>
__global__ void __launch_bounds__(NT)
fl_fast_softmax(fl_gptr<const T, FL_T_S> S, fl_gptr<T, FL_T_P> P, long rows, int Nk, int fits, fl_csink g)
{
#if FL_CODE_HAS(FL_V_NEEDS)
    extern __shared__ __align__(128) unsigned char fl_smem[];
    T *row = (T *)fl_smem;
    __shared__ float red[NT / 32];
    FlCount c;
    const long r = blockIdx.x + (long)blockIdx.y * gridDim.x;
    if (r >= rows) { fl_cnt_flush(c, g, (int)sizeof(T)); return; }
    const fl_gptr<const T, FL_T_S> s = S + r * Nk;
    const fl_gptr<T, FL_T_P> p = P + r * Nk;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    auto block_reduce = [&](float v, bool is_max) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            const float w = __shfl_xor_sync(0xffffffffu, v, o);
            v = is_max ? fmaxf(v, w) : v + w;
        }
        __syncthreads();
        if (lane == 0) red[warp] = v;
        __syncthreads();
        v = red[0];
        for (int w = 1; w < NT / 32; w++) v = is_max ? fmaxf(v, red[w]) : v + red[w];
        return v;
    };
    const bool vec = (Nk % 8) == 0; /* rows start on 16 bytes */
    /* pass 1 (and the only read when the row fits): the maximum */
    float mx = -INFINITY;
    if (vec) {
        for (int x = threadIdx.x * 8; x < Nk; x += NT * 8) {
            const uint4 u = s.template ld_vec<uint4>(c, x);
            if (fits) *(uint4 *)(row + x) = u;
            const T *e = (const T *)&u;
#pragma unroll
            for (int k = 0; k < 8; k++) mx = fmaxf(mx, fl_to_f(e[k]));
        }
    } else {
        for (int x = threadIdx.x; x < Nk; x += NT) {
            const T e = s.ld_elem(c, x);
            if (fits) row[x] = e;
            mx = fmaxf(mx, fl_to_f(e));
        }
    }
    mx = block_reduce(mx, true);
    const float ms = mx == -INFINITY ? 0.f : mx;
    float sum = 0.f; /* pass 2 and 3 read the row from SRAM, or again from HBM */
    for (int x = threadIdx.x; x < Nk; x += NT) sum += __expf((fits ? fl_to_f(row[x]) : s.ld(c, x)) - ms);
    sum = block_reduce(sum, false);
    const float inv = mx == -INFINITY ? 0.f : 1.f / sum;
    if (vec) {
        for (int x = threadIdx.x * 8; x < Nk; x += NT * 8) {
            const uint4 u = fits ? *(const uint4 *)(row + x) : s.template ld_vec<uint4>(c, x);
            const T *e = (const T *)&u;
            uint4 w;
            unsigned *wp = (unsigned *)&w;
#pragma unroll
            for (int k = 0; k < 4; k++)
                wp[k] = fl_pack2<T>(__expf(fl_to_f(e[2 * k]) - ms) * inv, __expf(fl_to_f(e[2 * k + 1]) - ms) * inv);
            p.st_vec(c, x, w);
        }
    } else {
        for (int x = threadIdx.x; x < Nk; x += NT) {
            const float v = fits ? fl_to_f(row[x]) : s.ld(c, x);
            p.st(c, x, __expf(v - ms) * inv);
        }
    }
    fl_cnt_flush(c, g, (int)sizeof(T));
#else
    fl_arch_missing();
#endif
}

template <class T, int D, int WM, int BC> static void launch_fast_std(const fl_gpu_args *a)
{
    constexpr int BR = (FL_THREADS / 32) * WM * 16, SMT = 256;
    constexpr auto t1 = fl_tc_nt_tiles<D, BR, BC>();
    constexpr auto t3 = fl_tc_nn_tiles<D, BR, BC>();
    static_assert(t1.footprint() == fl_fp_eval(fl_fp_coef FL_FP_STANDARD, BR, BC, D) && t3.footprint() == t1.footprint(),
                  "the tiles are the model's (F0) with Bd = d");
    static_assert(t1.dyn_bytes() <= FL_SMEM_MAX && t3.dyn_bytes() <= FL_SMEM_MAX, "tiles do not fit in shared memory");
    const int N = a->N, Nk = a->Nk ? a->Nk : a->N, nbh = a->nbh > 0 ? a->nbh : 1;
    const long off = a->causal == 2 ? (long)Nk - N : 0;
    const int fits = Nk <= t1.footprint(); /* eq. (C0.3): the row fits in M */
    if (fits && (size_t)Nk * sizeof(T) > 200 * 1024) {
        fprintf(stderr, "flashlab-gpu: standard (v8): a row of %d keys does not fit in shared memory\n", Nk);
        exit(2);
    }
    const dim3 grid(FL_CDIV(N, BR), nbh);
    fl_launch(fl_tc_nt<T, D, WM, BC, FL_T_Q, FL_T_K, FL_T_S>, t1.info("fl_tc_nt (S)"), grid, dim3(FL_THREADS), a->stream, a->log,
              (const T *)a->Q, (const T *)a->K, (T *)a->S, N, Nk, a->causal, off, 1.0f / sqrtf((float)D), a->cnt);
    const long rows = (long)N * nbh;
    const dim3 g2((unsigned)min(rows, 65535L), (unsigned)FL_CDIV(rows, 65535L));
    fl_launch(fl_fast_softmax<T, SMT>, v08_softmax_tiles(fits ? Nk : 0, (int)sizeof(T), SMT).info("fl_fast_softmax"), g2,
              dim3(SMT), a->stream, a->log, (const T *)a->S, (T *)a->P, rows, Nk, fits, a->cnt);
    fl_launch(fl_tc_nn<T, T, D, WM, BC, FL_T_P, FL_T_V, FL_T_O>, t3.info("fl_tc_nn (O)"), grid, dim3(FL_THREADS), a->stream,
              a->log, (const T *)a->P, (const T *)a->V, (T *)a->O, N, Nk, 1.f, a->cnt);
}

#define K8(T, DT, D, WM, BC)                                                                                           \
    {&FL_STANDARD_FWD, 8, DT, DT, D, (FL_THREADS / 32) * WM * 16, BC, fl_tc_nt_tiles<D, (FL_THREADS / 32) * WM * 16, BC>().footprint(), \
     1, launch_fast_std<T, D, WM, BC>,                                                                              \
     (long)(fl_tc_nn_tiles<D, (FL_THREADS / 32) * WM * 16, BC>().dyn_bytes() >                                        \
                    fl_tc_nt_tiles<D, (FL_THREADS / 32) * WM * 16, BC>().dyn_bytes()                                   \
                ? fl_tc_nn_tiles<D, (FL_THREADS / 32) * WM * 16, BC>().dyn_bytes()                                     \
                : fl_tc_nt_tiles<D, (FL_THREADS / 32) * WM * 16, BC>().dyn_bytes())}
#define K8_SET(T, DT) K8(T, DT, 64, 1, 64), K8(T, DT, 64, 2, 128), K8(T, DT, 128, 1, 64), K8(T, DT, 128, 2, 64)

static constexpr fl_kernel_info fast_std_table[] = {K8_SET(__half, FL_F16), K8_SET(__nv_bfloat16, FL_BF16)};

FL_LADDER_FILE(08, fast_std_table, FL_V_NEEDS)
