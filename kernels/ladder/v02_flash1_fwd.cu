/* v02_flash1_fwd.cu: version 2, FlashAttention (Dao et al. 2022) Algorithm 1, literally.
 *
 * What changed from version 1: S and P never reach HBM; the softmax is computed online, tile by
 * tile, with the running statistics l, m.  What it costs: Algorithm 1 keeps the key blocks in the
 * outer loop, so the running O_i, l_i, m_i cross HBM twice per key block (below); at N = 4096,
 * d = 64 that is 52 MB read and 36 MB written at 64 x 128 tiles (fp16, O fp32) against version
 * 1's 135 MB and 68 MB (64 x 64; docs/validation.md).  Time on the H200 (fp16, d = 128,
 * 64 x 128, one counted launch): 13.9 ms at N = 4096, 53.0 ms at N = 16384, against version 1's
 * 5.3 and 22.8 ms at 64 x 64 (figures/data/gpu_validate_all.csv, column ms): fewer bytes, more
 * time, because these scalar kernels are bound by their arithmetic and the wavefront's
 * hand-offs, not by HBM.
 *
 * The schedule is src/schedules/flash1.c line for line:
 *   line 2   O = 0, l = 0, m = -inf written to HBM          fl_flash1_init: Nd + 2N writes
 *   line 5   for each key block j (outer):
 *   line 6     load K_j, V_j                                 2*Bc*d reads, once per j
 *   line 7     for each query block i (inner):
 *   line 8       load Q_i, O_i, l_i, m_i                     2*Br*d + 2*Br reads
 *   line 9-11    S = Q_i K_j^T / sqrt(d); mt, P, lt; mnew, lnew
 *   line 12-13   write O_i, l_i, m_i                         Br*d + 2*Br writes
 * Napkin math: reads = 2Nd + Tc(2Nd + 2N), writes = (Nd + 2N) + Tc(Nd + 2N) (docs/model.md
 * eq. C1): O crosses HBM twice per key block.  At N = 4096, d = 64, Bc = 64, fp16 that is
 * 64 x 1 MB of O traffic against 1 MB of K, V: this is the schedule FlashAttention-2 fixed.
 *
 * Parallel and still literal: the wavefront.  K_j and V_j must be read once each, so one CTA
 * owns key block j for its whole inner loop; O_i is then a value handed from CTA j-1 to CTA j
 * through HBM.  CTA j processes query blocks i = 0, 1, ... in order and, before loading O_i,
 * waits until flags[i] == j (CTA j-1 has written O_i, l_i, m_i and released the flag); after
 * writing them it sets flags[i] = j + 1.  So every O_i receives its updates in the order
 * j = 0, 1, ..., Tc-1, exactly Algorithm 1's order, while up to Tc CTAs work on different i at
 * once (a pipeline).  The grid is launched cooperatively with at most as many CTAs as can be
 * resident (each takes j = blockIdx.x, blockIdx.x + gridDim.x, ...), so the wait cannot
 * deadlock; a wait that exceeds ~2 s sets *error and every wait gives up rather than hang the GPU.
 * O, l, m are loaded through L2 (counted.cuh), never from a possibly stale L1 line.  The flags
 * are synchronisation, not data: the counters count each poll (a read) and each release (a
 * write) under "flags", reported apart from the model's tensors (which have no such thing); the
 * launcher zeroes them with cudaMemsetAsync before the kernel.
 *
 * On chip (tile traits below; shared memory, fp32): K_j, V_j, Q_i, O_i, S_ij (P_ij overwrites
 * it) and six rows l_i, m_i, mt, lt, mnew, lnew: the model's footprint (F1)
 * 2*Bc*d + 2*Br*d + Br*Bc + 6*Br; rows of K, Q and S are padded by a word (not in the model).
 *
 * The running O is fp32 in HBM whatever the storage type of Q, K, V (as FlashAttention-1's own
 * kernel kept its o_tmp accumulator in fp32): stored in fp16 it would be rounded Tc times, and
 * the first hardware run measured errors 3-10x the naive fp16 attention's, failing the accuracy
 * rule.  Element counts are unchanged; O's bytes are 4 per element (docs/validation.md).
 *
 * Causal (lower triangle, Nq = Nk): a tile (i, j) whose keys all come after block i's last query
 * is skipped: no loads, no stores; the flag is still handed on.
 */
#include "attn.h"

#define FL_V_NEEDS FL_NEED_BASE

/* Tile traits (traits.cuh): the buffers in the order they are carved. */
template <int D, int BR, int BC> __host__ __device__ constexpr auto v02_tiles()
{
    return fl_make_tiles({FL_TILES_FLASH1_FWD(D, BR, BC)});
}
/* the initialisation streams: no tiles */
static fl_tiles<1> v02_init_tiles() { return fl_make_tiles({FL_TILES_NONE}); }

/* line 2: O = 0, l = 0, m = -inf in HBM. */
__global__ void __launch_bounds__(FL_THREADS)
fl_flash1_init(fl_gptr<float, FL_T_O> O, fl_gptr<float, FL_T_l> l, fl_gptr<float, FL_T_m> m, int N, int D, fl_csink g)
{
    FlCount c;
    const long stride = (long)gridDim.x * FL_THREADS;
    for (long x = (long)blockIdx.x * FL_THREADS + threadIdx.x; x < (long)N * D; x += stride)
        O.st(c, x, 0.f);
    for (long x = (long)blockIdx.x * FL_THREADS + threadIdx.x; x < N; x += stride) {
        l.st(c, x, 0.f);
        m.st(c, x, -INFINITY);
    }
    fl_cnt_flush(c, g, 4, 4);
}

template <class T, int D, int BR, int BC>
__global__ void __launch_bounds__(FL_THREADS)
fl_flash1_fwd(fl_gptr<const T, FL_T_Q> Q, fl_gptr<const T, FL_T_K> K, fl_gptr<const T, FL_T_V> V,
              fl_gptr<float, FL_T_O> O, fl_gptr<float, FL_T_l> l, fl_gptr<float, FL_T_m> m,
              fl_gptr<unsigned, FL_T_FLAGS> flags, fl_gptr<int, FL_T_FLAGS> error, int N, int causal, float scale,
              fl_csink g)
{
    constexpr auto tl = v02_tiles<D, BR, BC>();
    extern __shared__ float sm[];
    float *Ks = FL_TILE(float, sm, tl, 0);   /* BC x (D+1) */
    float *Vs = FL_TILE(float, sm, tl, 1);   /* BC x D */
    float *Qs = FL_TILE(float, sm, tl, 2);   /* BR x (D+1) */
    float *Os = FL_TILE(float, sm, tl, 3);   /* BR x D */
    float *Ss = FL_TILE(float, sm, tl, 4);   /* BR x (BC+1), P overwrites S */
    float *li = FL_TILE(float, sm, tl, 5), *mi = FL_TILE(float, sm, tl, 6);
    float *mt = FL_TILE(float, sm, tl, 7), *lt = FL_TILE(float, sm, tl, 8);
    float *mnew = FL_TILE(float, sm, tl, 9), *lnew = FL_TILE(float, sm, tl, 10);
    FlCount c;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int Tr = FL_CDIV(N, BR), Tc = FL_CDIV(N, BC);

    for (int jb = blockIdx.x; jb < Tc; jb += gridDim.x) { /* line 5 */
        const long c0 = (long)jb * BC;
        const int bc = (int)min((long)BC, N - c0);
        __syncthreads();
        for (int x = tid; x < bc * D; x += FL_THREADS) { /* line 6 */
            const int r = x / D, k = x % D;
            Ks[r * (D + 1) + k] = K.ld(c, (c0 + r) * D + k);
            Vs[r * D + k] = V.ld(c, (c0 + r) * D + k);
        }
        for (int ib = 0; ib < Tr; ib++) { /* line 7 */
            const long r0 = (long)ib * BR;
            const int br = (int)min((long)BR, N - r0);
            const bool skip = causal && c0 > r0 + br - 1;
            if (tid == 0) { /* wait for CTA j-1 to hand O_i over */
                long spins = 0;
                while (flags.ld_acquire(c, ib) != (unsigned)jb) {
                    if (error.ld_volatile(c, 0)) break; /* another CTA gave up: do not wait */
                    __nanosleep(128);
                    if (++spins > (1L << 24)) { error.exch(c, 0, 1); break; }
                }
            }
            __syncthreads();
            if (!skip) {
                for (int x = tid; x < br * D; x += FL_THREADS) { /* line 8 */
                    const int r = x / D, k = x % D;
                    Qs[r * (D + 1) + k] = Q.ld(c, (r0 + r) * D + k);
                    Os[r * D + k] = O.ld(c, (r0 + r) * D + k);
                }
                for (int r = tid; r < br; r += FL_THREADS) {
                    li[r] = l.ld(c, r0 + r);
                    mi[r] = m.ld(c, r0 + r);
                }
                __syncthreads();
                for (int x = tid; x < BR * BC; x += FL_THREADS) { /* line 9 */
                    const int r = x / BC, j = x % BC;
                    float s = -INFINITY;
                    if (r < br && j < bc && (!causal || fl_causal_keep(r0 + r, c0 + j, 0))) {
                        float acc = 0.f;
#pragma unroll 16
                        for (int k = 0; k < D; k++) acc += Qs[r * (D + 1) + k] * Ks[j * (D + 1) + k];
                        s = acc * scale;
                    }
                    Ss[r * (BC + 1) + j] = s;
                }
                __syncthreads();
                for (int r = warp; r < br; r += FL_THREADS / 32) { /* lines 10-11, warp per row */
                    float mx = -INFINITY;
                    for (int j = lane; j < BC; j += 32) mx = fmaxf(mx, Ss[r * (BC + 1) + j]);
                    mx = fl_warp_max(mx);
                    float sum = 0.f;
                    for (int j = lane; j < BC; j += 32) {
                        const float s = Ss[r * (BC + 1) + j];
                        const float p = (s == -INFINITY) ? 0.f : expf(s - mx);
                        Ss[r * (BC + 1) + j] = p;
                        sum += p;
                    }
                    sum = fl_warp_sum(sum);
                    if (lane == 0) {
                        const float mo = mi[r], mn = fmaxf(mo, mx);
                        const float eo = (mo == -INFINITY) ? 0.f : expf(mo - mn);
                        const float et = (mx == -INFINITY) ? 0.f : expf(mx - mn);
                        mt[r] = mx;
                        lt[r] = sum;
                        mnew[r] = mn;
                        lnew[r] = eo * li[r] + et * sum;
                    }
                }
                __syncthreads();
                for (int x = tid; x < br * D; x += FL_THREADS) { /* line 12 */
                    const int r = x / D, k = x % D;
                    const float ln = lnew[r];
                    float o = 0.f;
                    if (ln > 0.f) {
                        const float a = (mi[r] == -INFINITY) ? 0.f : li[r] * expf(mi[r] - mnew[r]) / ln;
                        const float e = (mt[r] == -INFINITY) ? 0.f : expf(mt[r] - mnew[r]) / ln;
                        float pv = 0.f;
#pragma unroll 8
                        for (int j = 0; j < bc; j++) pv += Ss[r * (BC + 1) + j] * Vs[j * D + k];
                        o = a * Os[r * D + k] + e * pv;
                    }
                    O.st(c, (r0 + r) * D + k, o);
                }
                for (int r = tid; r < br; r += FL_THREADS) { /* line 13 */
                    l.st(c, r0 + r, lnew[r]);
                    m.st(c, r0 + r, mnew[r]);
                }
                __threadfence();
            }
            __syncthreads();
            if (tid == 0) flags.st_release(c, ib, (unsigned)jb + 1u); /* hand O_i to CTA j+1 */
        }
    }
    fl_cnt_flush(c, g, (int)sizeof(T), 4);
}

template <class T, int D, int BR, int BC> static void launch_flash1(const fl_gpu_args *a)
{
    constexpr auto tl = v02_tiles<D, BR, BC>();
    static_assert(tl.footprint() == fl_fp_eval(fl_fp_coef FL_FP_FLASH1_FWD, BR, BC, D), "the tiles are the model's (F1)");
    static_assert(tl.dyn_bytes() <= FL_SMEM_MAX, "flash1 tiles do not fit in shared memory");
    const fl_tile_info ti = tl.info("fl_flash1_fwd");
    auto kern = fl_flash1_fwd<T, D, BR, BC>;
    const int Tc = FL_CDIV(a->N, BC), Tr = FL_CDIV(a->N, BR);
    const int grid = fl_wavefront_grid(kern, ti, Tc);
    const long Nd = (long)a->N * D;
    fl_launch(fl_flash1_init, v02_init_tiles().info("fl_flash1_init"), dim3((int)fl_grid_stride(Nd, FL_THREADS)),
              dim3(FL_THREADS), a->stream, a->log, (float *)a->O, a->l, a->m, a->N, D, a->cnt);
    CUDA_CHECK(cudaMemsetAsync(a->flags, 0, (size_t)Tr * sizeof(unsigned), a->stream)); /* the hand-off starts at 0 */
    fl_launch_coop(kern, ti, grid, a->stream, a->log, (const T *)a->Q, (const T *)a->K, (const T *)a->V, (float *)a->O, a->l,
                   a->m, a->flags, a->error, a->N, a->causal, 1.0f / sqrtf((float)D), a->cnt);
}

#define K1(T, DT, D, BR, BC) \
    {&FL_FLASH1_FWD, 2, DT, FL_F32, D, BR, BC, v02_tiles<D, BR, BC>().footprint(), 1, launch_flash1<T, D, BR, BC>, \
     (long)v02_tiles<D, BR, BC>().dyn_bytes()}
#define K1_SWEEP(T, DT, D) K1(T, DT, D, 16, 16), K1(T, DT, D, 32, 32), K1(T, DT, D, 64, 64), K1(T, DT, D, 64, 128)
#define K1_PAIR(T, DT, D) K1(T, DT, D, 32, 32), K1(T, DT, D, 64, 64)

static constexpr fl_kernel_info flash1_table[] = {
    K1_SWEEP(__half, FL_F16, 64), K1_SWEEP(__half, FL_F16, 128),
    K1_PAIR(float, FL_F32, 64), K1_PAIR(float, FL_F32, 128),
    K1_PAIR(__nv_bfloat16, FL_BF16, 64), K1_PAIR(__nv_bfloat16, FL_BF16, 128),
};

FL_LADDER_FILE(02, flash1_table, FL_V_NEEDS)
