/* flash_bwd_loop.cuh: the wavefront backward loop of versions 4 (FlashAttention-2, Algorithm 2)
 * and 5 (FlashAttention, Algorithm 4): one kernel, its tile traits and its cooperative launch.
 *
 * One CTA per key block j (line 5): load K_j, V_j; dK_j = dV_j = 0 on chip; for each query block i
 * that sees block j (causal: i >= j's first), after CTA j-1 has handed dQ_i over (flags[i] == j):
 * load Q_i, dO_i and the forward's statistics (FA2: L_i, D_i; FA1: O_i, l_i, m_i, and D_i =
 * rowsum(dO_i o O_i) on chip, line 17); recompute P; dV_j += P^T dO_i; dP = dO_i V_j^T;
 * dS = P o (dP - D_i); dQ_i += dS K_j / sqrt d read and written in HBM (line 15); dK_j += dS^T Q_i
 * / sqrt d; release flags[i] = j + 1.  Line 18: write dK_j, dV_j.  The grid is launched
 * cooperatively with at most as many CTAs as are resident (each takes j = blockIdx.x,
 * blockIdx.x + gridDim.x, ...), so the wait cannot deadlock; a wait that exceeds ~2 s sets *error
 * and every wait gives up rather than hang the GPU.
 *
 * On chip (shared memory, fp32): K_j, V_j, dK_j, dV_j, Q_i, dO_i, S_ij/P_ij, dP_ij/dS_ij, L_i
 * (FA1: m_i), D_i, and for FA1 l_i and O_i; dQ_i passes through registers.  The model's
 * footprints, (F2b) 4 Bc d + 3 Br d + 2 Br Bc + 2 Br and (F1b) 4 Bc d + 4 Br d + 2 Br Bc + 3 Br,
 * count dQ_i as a tile (FL_REGS below); rows of K, V, Q, dO, S and dP are padded by a word.
 */
#ifndef FL_KERNELS_FLASH_BWD_LOOP_CUH
#define FL_KERNELS_FLASH_BWD_LOOP_CUH

#include "attn.h"

enum { FA1 = 1, FA2 = 2 };

/* Tile traits (traits.cuh) from include/flashlab/kernel_tiles.h's layout: the buffers in the order
 * they are carved; FA2 has no l_i, O_i. */
template <int D, int BR, int BC, int STYLE> __host__ __device__ constexpr auto fl_flash_bwd_tiles()
{
    return fl_make_tiles({FL_TILES_FLASH_BWD(D, BR, BC, STYLE == FA1)});
}

/* STYLE FA2: FlashAttention-2 Algorithm 2 (L and D from HBM).  STYLE FA1: FlashAttention
 * Algorithm 4 (O_i, l_i, m_i from HBM, D_i = rowsum(dO_i o O_i) on chip; O is flash1's fp32). */
template <class T, int D, int BR, int BC, int STYLE>
__global__ void __launch_bounds__(FL_THREADS)
fl_flash_bwd(fl_gptr<const T, FL_T_Q> Q, fl_gptr<const T, FL_T_K> K, fl_gptr<const T, FL_T_V> V,
             fl_gptr<const T, FL_T_dO> dO, fl_gptr<const float, FL_T_L> L, fl_gptr<const float, FL_T_D> Dv,
             fl_gptr<const float, FL_T_O> O1, fl_gptr<const float, FL_T_l> l1, fl_gptr<const float, FL_T_m> m1,
             fl_gptr<float, FL_T_dQ> dQ, fl_gptr<T, FL_T_dK> dK, fl_gptr<T, FL_T_dV> dV,
             fl_gptr<unsigned, FL_T_FLAGS> flags, fl_gptr<int, FL_T_FLAGS> error, int N, int causal, float scale,
             fl_csink g)
{
    constexpr auto tl = fl_flash_bwd_tiles<D, BR, BC, STYLE>();
    extern __shared__ float sm[];
    float *Ks = FL_TILE(float, sm, tl, 0);  /* BC x (D+1) */
    float *Vs = FL_TILE(float, sm, tl, 1);  /* BC x (D+1) */
    float *dKs = FL_TILE(float, sm, tl, 2); /* BC x D */
    float *dVs = FL_TILE(float, sm, tl, 3); /* BC x D */
    float *Qs = FL_TILE(float, sm, tl, 4);  /* BR x (D+1) */
    float *dOs = FL_TILE(float, sm, tl, 5); /* BR x (D+1) */
    float *Ps = FL_TILE(float, sm, tl, 6);  /* BR x (BC+1): S, then P */
    float *dSs = FL_TILE(float, sm, tl, 7); /* BR x (BC+1): dP, then dS */
    float *Ls = FL_TILE(float, sm, tl, 8), *Ds = FL_TILE(float, sm, tl, 9); /* FA1: Ls holds m_i */
    float *l1s = FL_TILE(float, sm, tl, 10);                               /* FA1: l_i */
    float *Os = FL_TILE(float, sm, tl, 11);                                /* FA1: O_i, BR x D */
    FlCount c;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int tid = threadIdx.x;
    const int Tr = FL_CDIV(N, BR), Tc = FL_CDIV(N, BC);

    for (int jb = blockIdx.x; jb < Tc; jb += gridDim.x) { /* line 5 */
        const long c0 = (long)jb * BC;
        const int bc = (int)min((long)BC, N - c0);
        const int i0 = causal ? (int)(c0 / BR) : 0; /* first row block with a query >= c0 */
        __syncthreads();
        for (int x = tid; x < bc * D; x += FL_THREADS) { /* line 6 */
            const int r = x / D, k = x % D;
            Ks[r * (D + 1) + k] = K.ld(c, (c0 + r) * D + k);
            Vs[r * (D + 1) + k] = V.ld(c, (c0 + r) * D + k);
        }
        for (int x = tid; x < BC * D; x += FL_THREADS) dKs[x] = dVs[x] = 0.f; /* line 7 */
        for (int ib = 0; ib < Tr; ib++) { /* line 8 */
            const long r0 = (long)ib * BR;
            const int br = (int)min((long)BR, N - r0);
            if (tid == 0) { /* wait for CTA j-1 to hand dQ_i over */
                long spins = 0;
                while (flags.ld_acquire(c, ib) != (unsigned)jb) {
                    if (error.ld_volatile(c, 0)) break;
                    __nanosleep(128);
                    if (++spins > (1L << 24)) { error.exch(c, 0, 1); break; }
                }
            }
            __syncthreads();
            if (ib >= i0) {
                for (int x = tid; x < br * D; x += FL_THREADS) { /* line 9 */
                    const int r = x / D, k = x % D;
                    Qs[r * (D + 1) + k] = Q.ld(c, (r0 + r) * D + k);
                    dOs[r * (D + 1) + k] = dO.ld(c, (r0 + r) * D + k);
                }
                if (STYLE == FA2) {
                    for (int r = tid; r < br; r += FL_THREADS) {
                        Ls[r] = L.ld(c, r0 + r);
                        Ds[r] = Dv.ld(c, r0 + r);
                    }
                } else {
                    for (int x = tid; x < br * D; x += FL_THREADS)
                        Os[x] = O1.ld(c, r0 * D + x);
                    for (int r = tid; r < br; r += FL_THREADS) {
                        l1s[r] = l1.ld(c, r0 + r);
                        Ls[r] = m1.ld(c, r0 + r);
                    }
                    __syncthreads();
                    for (int r = warp; r < br; r += FL_THREADS / 32) { /* line 17: D_i on chip */
                        float acc = 0.f;
                        for (int k = lane; k < D; k += 32) acc += dOs[r * (D + 1) + k] * Os[r * D + k];
                        acc = fl_warp_sum(acc);
                        if (lane == 0) Ds[r] = acc;
                    }
                }
                __syncthreads();
                for (int x = tid; x < BR * BC; x += FL_THREADS) { /* lines 10-11, 13-14 */
                    const int r = x / BC, j = x % BC;
                    float p = 0.f, ds = 0.f;
                    if (r < br && j < bc && (!causal || fl_causal_keep(r0 + r, c0 + j, 0)) && Ls[r] != -INFINITY) {
                        float s = 0.f, dp = 0.f;
#pragma unroll 16
                        for (int k = 0; k < D; k++) {
                            s += Qs[r * (D + 1) + k] * Ks[j * (D + 1) + k];
                            dp += dOs[r * (D + 1) + k] * Vs[j * (D + 1) + k];
                        }
                        p = STYLE == FA2 ? expf(s * scale - Ls[r]) : expf(s * scale - Ls[r]) / l1s[r];
                        ds = p * (dp - Ds[r]);
                    }
                    Ps[r * (BC + 1) + j] = p;
                    dSs[r * (BC + 1) + j] = ds;
                }
                __syncthreads();
                for (int x = tid; x < bc * D; x += FL_THREADS) { /* lines 12, 16 */
                    const int j = x / D, k = x % D;
                    float dv = 0.f, dk = 0.f;
                    for (int r = 0; r < br; r++) {
                        dv += Ps[r * (BC + 1) + j] * dOs[r * (D + 1) + k];
                        dk += dSs[r * (BC + 1) + j] * Qs[r * (D + 1) + k];
                    }
                    dVs[j * D + k] += dv;
                    dKs[j * D + k] += scale * dk;
                }
                for (int x = tid; x < br * D; x += FL_THREADS) { /* line 15 */
                    const int r = x / D, k = x % D;
                    float acc = 0.f;
                    for (int j = 0; j < bc; j++) acc += dSs[r * (BC + 1) + j] * Ks[j * (D + 1) + k];
                    const float old = dQ.ld(c, (r0 + r) * D + k);
                    dQ.st(c, (r0 + r) * D + k, old + scale * acc);
                }
                __threadfence();
            }
            __syncthreads();
            if (tid == 0) flags.st_release(c, ib, (unsigned)jb + 1u); /* hand dQ_i to CTA j+1 */
        }
        __syncthreads();
        for (int x = tid; x < bc * D; x += FL_THREADS) { /* line 18 */
            dK.st(c, c0 * D + x, dKs[x]);
            dV.st(c, c0 * D + x, dVs[x]);
        }
    }
    fl_cnt_flush(c, g, (int)sizeof(T), STYLE == FA1 ? 4 : 0);
}

/* The loop's cooperative launch (after the caller's preprocessing kernel): the flags start at 0. */
template <class T, int D, int BR, int BC, int STYLE> static void fl_launch_flash_bwd_loop(const fl_gpu_args *a)
{
    constexpr auto tl = fl_flash_bwd_tiles<D, BR, BC, STYLE>();
    static_assert(tl.dyn_bytes() <= FL_SMEM_MAX, "backward tiles do not fit in shared memory");
    const fl_tile_info ti = tl.info("fl_flash_bwd");
    auto kern = fl_flash_bwd<T, D, BR, BC, STYLE>;
    const int N = a->N, Tc = FL_CDIV(N, BC), Tr = FL_CDIV(N, BR);
    const int grid = fl_wavefront_grid(kern, ti, Tc);
    CUDA_CHECK(cudaMemsetAsync(a->flags, 0, (size_t)Tr * sizeof(unsigned), a->stream));
    fl_launch_coop(kern, ti, grid, a->stream, a->log, (const T *)a->Q, (const T *)a->K, (const T *)a->V, (const T *)a->dO,
                   (const float *)a->L, (const float *)a->Dv, STYLE == FA1 ? (const float *)a->O : (const float *)NULL,
                   (const float *)a->l, (const float *)a->m, a->dQ, (T *)a->dK, (T *)a->dV, a->flags, a->error, N,
                   a->causal, 1.0f / sqrtf((float)D), a->cnt);
}

#endif
