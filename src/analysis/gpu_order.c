/* gpu_order.c: the kernels of versions 1-6 of the ladder (kernels/ladder/v01_standard_fwd.cu to
 * v06_standard_bwd.cu; the backward loop of versions 4 and 5 in kernels/common/flash_bwd_loop.cuh)
 * as grids of CTAs with per-CTA tile-access lists, and their GPU order (gpu_order.h,
 * docs/l2_model.md rules G1-G3).  Their grids and shared memory come from the kernels' own plain-C
 * layouts, include/flashlab/kernel_tiles.h. */
#include <flashlab/gpu_order.h>
#include <flashlab/kernel_tiles.h>
#include <flashlab/schedule.h>

#include <string.h>

#define CHUNK FL_THREADS       /* the softmax and init kernels move one element per thread per step */
#define PRE_ROWS (FL_THREADS / 32) /* flash2's backward preprocessing: a warp a row */

/* Shared memory of a CTA whose buffers are the list given (kernel_tiles.h), dynamic + static, bytes. */
static int64_t smem_of(const fl_tile_buf *b, int n)
{
    return (int64_t)(fl_tiles_dyn_bytes(b, n) + fl_tiles_static_bytes(b, n));
}
#define SMEM(...) \
    smem_of((const fl_tile_buf[]){__VA_ARGS__}, (int)(sizeof((const fl_tile_buf[]){__VA_ARGS__}) / sizeof(fl_tile_buf)))

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

fl_gpu_machine fl_gpu_machine_h200(void)
{
    fl_gpu_machine m = {132, 228 * 1024, 1024, 2048, 32, CHUNK, 0};
    return m;
}

static void tensor(fl_gpu_sched *s, fl_gt id, const char *name, int64_t rows, int64_t cols, int eb)
{
    s->t[id] = (fl_gpu_tensor){name, rows, cols, eb, 0, 1};
}

/* rule G3: CTAs per SM from threads, the CTA limit and shared memory (registers are not modelled) */
static fl_status occupancy(const fl_gpu_machine *mc, fl_gpu_kernel *k)
{
    int64_t n = min64(mc->max_ctas_per_sm, mc->threads_per_sm / mc->threads);
    n = min64(n, mc->smem_per_sm / (k->smem + mc->smem_reserved));
    if (mc->ctas_per_sm > 0) n = mc->ctas_per_sm;
    if (n < 1)
        return fl_fail(FL_EINVAL, "{Br}/{Bc}: kernel %s needs %lld bytes of shared memory per CTA, more than an SM has",
                       k->name, (long long)k->smem);
    k->per_sm = n;
    return FL_OK;
}

static void kernel(fl_gpu_sched *s, fl_gk_kind kind, const char *name, int64_t ctas, int64_t smem, int64_t skew)
{
    s->k[s->nkernels++] = (fl_gpu_kernel){kind, name, ctas, smem, 0, skew, 0, 0, 0, 0, 0, 0};
}

/* a product kernel: NT (C = A B^T, CTA per bo rows of A, B in steps of bs) */
static void nt(fl_gpu_sched *s, const char *name, int A, int B, int C, int64_t bo, int64_t bs)
{
    kernel(s, FL_GK_NT, name, fl_grid_blocks(s->N, bo), SMEM(FL_TILES_PRODUCT_NT(s->d, bo, bs)), 0);
    fl_gpu_kernel *k = &s->k[s->nkernels - 1];
    k->ta = A, k->tb = B, k->tc = C, k->bo = bo, k->bs = bs;
}

/* NN: O = P V (transp = 0) or P^T V, a CTA per bo rows of O, the sum in steps of bs */
static void nn(fl_gpu_sched *s, const char *name, int P, int V, int O, int64_t bo, int64_t bs, int transp)
{
    kernel(s, FL_GK_NN, name, fl_grid_blocks(s->N, bo), SMEM(FL_TILES_PRODUCT_NN(s->d, bo, bs)), 0);
    fl_gpu_kernel *k = &s->k[s->nkernels - 1];
    k->ta = P, k->tb = V, k->tc = O, k->bo = bo, k->bs = bs, k->transp = transp;
}

fl_status fl_gpu_sched_build(fl_algo algo, int bwd, int64_t N, int64_t d, int64_t Br, int64_t Bc, int elem_bytes,
                             const fl_gpu_machine *mc, fl_gpu_sched *s)
{
    if (N < 1 || d < 1 || Br < 1 || Bc < 1)
        return fl_fail(FL_EINVAL, "{N}/{d}/{Br}/{Bc}: must be >= 1");
    if (elem_bytes != 2 && elem_bytes != 4) return fl_fail(FL_EINVAL, "{dtype}: 2- or 4-byte elements only");
    if (mc->sms < 1 || mc->threads < 1 || mc->ctas_per_sm < 0)
        return fl_fail(FL_EINVAL, "{sms}/{ctas_per_sm}: must be >= 1 (ctas-per-sm: 0 = from occupancy)");
    memset(s, 0, sizeof *s);
    s->algo = algo;
    s->bwd = bwd;
    s->sms = mc->sms;
    s->N = N, s->d = d, s->Br = Br, s->Bc = Bc, s->elem_bytes = elem_bytes;
    s->Tr = cdiv(N, Br), s->Tc = cdiv(N, Bc);
    s->M_eff = fl_footprint_pass(algo, bwd, 1, d, Br, Bc, d); /* (F0), (F1), (F2), (F2b) */
    const int eb = elem_bytes;
    tensor(s, FL_GT_Q, "Q", N, d, eb);
    tensor(s, FL_GT_K, "K", N, d, eb);
    tensor(s, FL_GT_V, "V", N, d, eb);
    switch (algo) {
    case FL_ALGO_STANDARD:
        tensor(s, FL_GT_P, "P", N, N, eb);
        if (!bwd) { /* version 1, kernels/ladder/v01_standard_fwd.cu launch_standard */
            tensor(s, FL_GT_O, "O", N, d, eb);
            tensor(s, FL_GT_S, "S", N, N, eb);
            nt(s, "fl_std_scores", FL_GT_Q, FL_GT_K, FL_GT_S, Br, Bc);
            if (fl_row_fits(N, s->M_eff)) kernel(s, FL_GK_STD_SOFTMAX_ROW, "fl_std_softmax_row", N, SMEM(FL_TILES_ROW(N)), 0);
            else kernel(s, FL_GK_STD_SOFTMAX_3PASS, "fl_std_softmax_3pass", N, SMEM(FL_TILES_ROW(0)), 0);
            nn(s, "fl_std_pv", FL_GT_P, FL_GT_V, FL_GT_O, Br, Bc, 0);
        } else { /* version 6, kernels/ladder/v06_standard_bwd.cu launch_standard_bwd; dQ in fp32 */
            tensor(s, FL_GT_dO, "dO", N, d, eb);
            tensor(s, FL_GT_dP, "dP", N, N, eb);
            tensor(s, FL_GT_dS, "dS", N, N, eb);
            tensor(s, FL_GT_dQ, "dQ", N, d, 4);
            tensor(s, FL_GT_dK, "dK", N, d, eb);
            tensor(s, FL_GT_dV, "dV", N, d, eb);
            nn(s, "fl_std_nn (dV)", FL_GT_P, FL_GT_dO, FL_GT_dV, Bc, Br, 1);
            nt(s, "fl_std_nt (dP)", FL_GT_dO, FL_GT_V, FL_GT_dP, Br, Bc);
            if (fl_row_fits(2 * N, s->M_eff))
                kernel(s, FL_GK_STD_DSOFTMAX_ROW, "fl_std_dsoftmax_row", N, SMEM(FL_TILES_ROW(2 * N)), 0);
            else kernel(s, FL_GK_STD_DSOFTMAX_2PASS, "fl_std_dsoftmax_2pass", N, SMEM(FL_TILES_ROW(0)), 0);
            nn(s, "fl_std_nn (dQ)", FL_GT_dS, FL_GT_K, FL_GT_dQ, Br, Bc, 0);
            nn(s, "fl_std_nn (dK)", FL_GT_dS, FL_GT_Q, FL_GT_dK, Bc, Br, 1);
        }
        break;
    case FL_ALGO_FLASH1: { /* version 2, kernels/ladder/v02_flash1_fwd.cu launch_flash1: running O, l, m in fp32 */
        tensor(s, FL_GT_O, "O", N, d, 4);
        tensor(s, FL_GT_l, "l", N, 1, 4);
        tensor(s, FL_GT_m, "m", N, 1, 4);
        if (bwd) { /* version 5, kernels/ladder/v05_flash1_bwd.cu (flash_bwd_loop.cuh, FA1): dQ in fp32 */
            tensor(s, FL_GT_dO, "dO", N, d, eb);
            tensor(s, FL_GT_dQ, "dQ", N, d, 4);
            tensor(s, FL_GT_dK, "dK", N, d, eb);
            tensor(s, FL_GT_dV, "dV", N, d, eb);
            kernel(s, FL_GK_FLASH1_BWD_INIT, "fl_flash1_bwd_init", fl_grid_stride(N * d, FL_THREADS), SMEM(FL_TILES_NONE), 0);
            kernel(s, FL_GK_FLASH1_BWD, "fl_flash_bwd (FA1)", 0, SMEM(FL_TILES_FLASH_BWD(d, Br, Bc, 1)), 7);
            break;
        }
        kernel(s, FL_GK_FLASH1_INIT, "fl_flash1_init", fl_grid_stride(N * d, FL_THREADS), SMEM(FL_TILES_NONE), 0);
        /* skew: one query-block step (7 accesses) */
        kernel(s, FL_GK_FLASH1, "fl_flash1_fwd", 0, SMEM(FL_TILES_FLASH1_FWD(d, Br, Bc)), 7);
        break;
    }
    case FL_ALGO_FLASH2: /* version 3, kernels/ladder/v03_flash2_fwd.cu launch_flash2 */
        tensor(s, FL_GT_O, "O", N, d, eb);
        tensor(s, FL_GT_L, "L", N, 1, 4);
        if (bwd) { /* version 4, kernels/ladder/v04_flash2_bwd.cu (flash_bwd_loop.cuh, FA2): dQ and D in fp32 */
            tensor(s, FL_GT_dO, "dO", N, d, eb);
            tensor(s, FL_GT_D, "D", N, 1, 4);
            tensor(s, FL_GT_dQ, "dQ", N, d, 4);
            tensor(s, FL_GT_dK, "dK", N, d, eb);
            tensor(s, FL_GT_dV, "dV", N, d, eb);
            /* a warp a row */
            kernel(s, FL_GK_FLASH2_BWD_PRE, "fl_flash2_bwd_pre", fl_grid_stride(N, PRE_ROWS), SMEM(FL_TILES_NONE), 0);
            kernel(s, FL_GK_FLASH2_BWD, "fl_flash_bwd", 0, SMEM(FL_TILES_FLASH_BWD(d, Br, Bc, 0)), 6);
            break;
        }
        kernel(s, FL_GK_FLASH2, "fl_flash2_fwd", fl_grid_blocks(N, Br), SMEM(FL_TILES_FLASH2_FWD(d, Br, Bc)), 0);
        break;
    default:
        return fl_fail(FL_EINVAL, "{algo}: the L2 model describes the kernels of standard, flash1 and flash2 only");
    }
    for (int k = 0; k < s->nkernels; k++) FL_TRY(occupancy(mc, &s->k[k]));
    for (int k = 0; k < s->nkernels; k++) /* the wavefronts are cooperative: at most what is resident */
        if (s->k[k].kind == FL_GK_FLASH1 || s->k[k].kind == FL_GK_FLASH2_BWD || s->k[k].kind == FL_GK_FLASH1_BWD)
            s->k[k].ctas = fl_grid_wavefront(s->Tc, s->k[k].per_sm * mc->sms);
    uint64_t at = 0; /* 2 MiB-aligned bases, in the order above */
    for (int t = 0; t < FL_GT_COUNT; t++) {
        if (!s->t[t].used) continue;
        s->t[t].base = at;
        const uint64_t bytes = (uint64_t)s->t[t].rows * (uint64_t)s->t[t].cols * (uint64_t)s->t[t].elem_bytes;
        at += (bytes + (UINT64_C(1) << 21) - 1) & ~((UINT64_C(1) << 21) - 1);
    }
    return FL_OK;
}

/* flash1: key blocks of CTA b are b, b + grid, ...; each is K_j, V_j then 7 accesses per i */
static int64_t flash1_nj(const fl_gpu_sched *s, const fl_gpu_kernel *k, int64_t cta)
{
    return cta < s->Tc ? cdiv(s->Tc - cta, k->ctas) : 0;
}

/* flash1_init: grid-stride chunks of 128 elements: O (N*d), then l and m (N each) */
static int64_t init_n(int64_t total, int64_t cta, int64_t grid)
{
    return cta * CHUNK < total ? cdiv(total - cta * CHUNK, grid * CHUNK) : 0;
}

int64_t fl_gpu_cta_len(const fl_gpu_sched *s, int kk, int64_t cta)
{
    const fl_gpu_kernel *k = &s->k[kk];
    const int64_t n = cdiv(s->N, CHUNK);
    switch (k->kind) {
    case FL_GK_NT: return 1 + 2 * cdiv(s->N, k->bs);
    case FL_GK_NN: return 2 * cdiv(s->N, k->bs) + 1;
    case FL_GK_STD_SOFTMAX_ROW: return 2 * n;
    case FL_GK_STD_SOFTMAX_3PASS: return 4 * n;
    case FL_GK_STD_DSOFTMAX_ROW: return 3 * n;
    case FL_GK_STD_DSOFTMAX_2PASS: return 5 * n;
    case FL_GK_FLASH1_INIT: return init_n(s->N * s->d, cta, k->ctas) + 2 * init_n(s->N, cta, k->ctas);
    case FL_GK_FLASH1: return flash1_nj(s, k, cta) * (2 + 7 * s->Tr);
    case FL_GK_FLASH2: return 1 + 2 * s->Tc + 2;
    case FL_GK_FLASH2_BWD_PRE: /* 4 rows (one a warp) per iteration: O, dO read; D, dQ written */
        return 4 * (cta * PRE_ROWS < s->N ? cdiv(s->N - cta * PRE_ROWS, k->ctas * PRE_ROWS) : 0);
    case FL_GK_FLASH2_BWD: return flash1_nj(s, k, cta) * (4 + 6 * s->Tr);
    case FL_GK_FLASH1_BWD_INIT: return 3 * init_n(s->N * s->d, cta, k->ctas);
    case FL_GK_FLASH1_BWD: return flash1_nj(s, k, cta) * (4 + 7 * s->Tr);
    }
    return 0;
}

static void tile(fl_gpu_access *a, int t, int w, int64_t r0, int64_t c0, int64_t nr, int64_t nc)
{
    *a = (fl_gpu_access){t, w, r0, c0, nr, nc};
}

void fl_gpu_cta_access(const fl_gpu_sched *s, int kk, int64_t cta, int64_t i, fl_gpu_access *a)
{
    const fl_gpu_kernel *k = &s->k[kk];
    const int64_t N = s->N, d = s->d, Br = s->Br, Bc = s->Bc, n = cdiv(N, CHUNK);
    const int64_t r0 = cta * Br, br = min64(Br, N - r0);
    switch (k->kind) {
    case FL_GK_NT: { /* A_i once; per j: B_j, write C_ij */
        const int64_t a0 = cta * k->bo, na = min64(k->bo, N - a0);
        if (i == 0) tile(a, k->ta, 0, a0, 0, na, d);
        else {
            const int64_t c0 = (i - 1) / 2 * k->bs, bc = min64(k->bs, N - c0);
            if ((i - 1) % 2 == 0) tile(a, k->tb, 0, c0, 0, bc, d);
            else tile(a, k->tc, 1, a0, c0, na, bc);
        }
        return;
    }
    case FL_GK_STD_SOFTMAX_ROW: { /* row cta: read it in chunks, write P in chunks */
        const int64_t c0 = (i % n) * CHUNK;
        tile(a, i < n ? FL_GT_S : FL_GT_P, i >= n, cta, c0, 1, min64(CHUNK, N - c0));
        return;
    }
    case FL_GK_STD_SOFTMAX_3PASS: { /* max pass, sum pass, then read S / write P per chunk */
        if (i < 2 * n) {
            const int64_t c0 = (i % n) * CHUNK;
            tile(a, FL_GT_S, 0, cta, c0, 1, min64(CHUNK, N - c0));
        } else {
            const int64_t q = i - 2 * n, c0 = q / 2 * CHUNK;
            tile(a, q % 2 ? FL_GT_P : FL_GT_S, (int)(q % 2), cta, c0, 1, min64(CHUNK, N - c0));
        }
        return;
    }
    case FL_GK_NN: { /* per step q: the P tile (P[r0.., q..] or, transposed, P[q.., r0..]), V_q; then O */
        const int64_t o0 = cta * k->bo, no = min64(k->bo, N - o0);
        if (i == 2 * cdiv(N, k->bs)) tile(a, k->tc, 1, o0, 0, no, d);
        else {
            const int64_t q = i / 2 * k->bs, nq = min64(k->bs, N - q);
            if (i % 2) tile(a, k->tb, 0, q, 0, nq, d);
            else if (k->transp) tile(a, k->ta, 0, q, o0, nq, no);
            else tile(a, k->ta, 0, o0, q, no, nq);
        }
        return;
    }
    case FL_GK_STD_DSOFTMAX_ROW: { /* row cta: P and dP chunks (interleaved), then dS chunks */
        if (i < 2 * n) {
            const int64_t c0 = i / 2 * CHUNK;
            tile(a, i % 2 ? FL_GT_dP : FL_GT_P, 0, cta, c0, 1, min64(CHUNK, N - c0));
        } else {
            const int64_t c0 = (i - 2 * n) * CHUNK;
            tile(a, FL_GT_dS, 1, cta, c0, 1, min64(CHUNK, N - c0));
        }
        return;
    }
    case FL_GK_STD_DSOFTMAX_2PASS: { /* D_i: P, dP chunks; then P, dP read and dS written per chunk */
        if (i < 2 * n) {
            const int64_t c0 = i / 2 * CHUNK;
            tile(a, i % 2 ? FL_GT_dP : FL_GT_P, 0, cta, c0, 1, min64(CHUNK, N - c0));
        } else {
            const int64_t q = i - 2 * n, c0 = q / 3 * CHUNK, e = q % 3;
            tile(a, e == 0 ? FL_GT_P : e == 1 ? FL_GT_dP : FL_GT_dS, e == 2, cta, c0, 1, min64(CHUNK, N - c0));
        }
        return;
    }
    case FL_GK_FLASH1_INIT: {
        const int64_t nO = init_n(N * d, cta, k->ctas), stride = k->ctas * CHUNK;
        if (i < nO) {
            const int64_t x = cta * CHUNK + i * stride;
            tile(a, FL_GT_O, 1, 0, x, 1, min64(CHUNK, N * d - x));
        } else {
            const int64_t x = cta * CHUNK + (i - nO) / 2 * stride;
            tile(a, (i - nO) % 2 ? FL_GT_m : FL_GT_l, 1, 0, x, 1, min64(CHUNK, N - x));
        }
        return;
    }
    case FL_GK_FLASH1: { /* per key block: K_j, V_j; per query block: Q, O, l, m read; O, l, m written */
        const int64_t per = 2 + 7 * s->Tr, j = cta + (i / per) * k->ctas, q = i % per;
        const int64_t c0 = j * Bc, bc = min64(Bc, N - c0);
        if (q < 2) {
            tile(a, q ? FL_GT_V : FL_GT_K, 0, c0, 0, bc, d);
            return;
        }
        const int64_t ib = (q - 2) / 7, e = (q - 2) % 7, q0 = ib * Br, qr = min64(Br, N - q0);
        static const int ts[7] = {FL_GT_Q, FL_GT_O, FL_GT_l, FL_GT_m, FL_GT_O, FL_GT_l, FL_GT_m};
        tile(a, ts[e], e >= 4, q0, 0, qr, ts[e] == FL_GT_Q || ts[e] == FL_GT_O ? d : 1);
        return;
    }
    case FL_GK_FLASH2_BWD_PRE: {
        /* each step: PRE_ROWS rows of O, dO read; D, dQ written (4 accesses) */
        const int64_t q0 = cta * PRE_ROWS + (i / 4) * k->ctas * PRE_ROWS, nq = min64(PRE_ROWS, N - q0), e = i % 4;
        static const int ts[4] = {FL_GT_O, FL_GT_dO, FL_GT_D, FL_GT_dQ};
        tile(a, ts[e], e >= 2, q0, 0, nq, e == 2 ? 1 : d);
        return;
    }
    case FL_GK_FLASH2_BWD: { /* per key block: K_j, V_j; per i: Q, dO, L, D, dQ read, dQ written; dK_j, dV_j */
        const int64_t per = 4 + 6 * s->Tr, j = cta + (i / per) * k->ctas, q = i % per;
        const int64_t c0 = j * Bc, bc = min64(Bc, N - c0);
        if (q < 2 || q >= per - 2) {
            tile(a, q < 2 ? (q ? FL_GT_V : FL_GT_K) : (q == per - 2 ? FL_GT_dK : FL_GT_dV), q >= 2, c0, 0, bc, d);
            return;
        }
        const int64_t ib = (q - 2) / 6, e = (q - 2) % 6, q0 = ib * Br, qr = min64(Br, N - q0);
        static const int ts[6] = {FL_GT_Q, FL_GT_dO, FL_GT_L, FL_GT_D, FL_GT_dQ, FL_GT_dQ};
        tile(a, ts[e], e == 5, q0, 0, qr, ts[e] == FL_GT_L || ts[e] == FL_GT_D ? 1 : d);
        return;
    }
    case FL_GK_FLASH1_BWD_INIT: { /* grid-stride chunks: dQ, dK, dV = 0, element by element */
        const int64_t x = cta * CHUNK + (i / 3) * k->ctas * CHUNK, e = i % 3;
        tile(a, e == 0 ? FL_GT_dQ : e == 1 ? FL_GT_dK : FL_GT_dV, 1, 0, x, 1, min64(CHUNK, N * d - x));
        return;
    }
    case FL_GK_FLASH1_BWD: { /* per key block: K_j, V_j; per i: Q, dO, O, l, m, dQ read, dQ written; dK_j, dV_j */
        const int64_t per = 4 + 7 * s->Tr, j = cta + (i / per) * k->ctas, q = i % per;
        const int64_t c0 = j * Bc, bc = min64(Bc, N - c0);
        if (q < 2 || q >= per - 2) {
            tile(a, q < 2 ? (q ? FL_GT_V : FL_GT_K) : (q == per - 2 ? FL_GT_dK : FL_GT_dV), q >= 2, c0, 0, bc, d);
            return;
        }
        const int64_t ib = (q - 2) / 7, e = (q - 2) % 7, q0 = ib * Br, qr = min64(Br, N - q0);
        static const int ts[7] = {FL_GT_Q, FL_GT_dO, FL_GT_O, FL_GT_l, FL_GT_m, FL_GT_dQ, FL_GT_dQ};
        tile(a, ts[e], e == 6, q0, 0, qr, ts[e] == FL_GT_l || ts[e] == FL_GT_m ? 1 : d);
        return;
    }
    case FL_GK_FLASH2: /* Q_i; per j: K_j, V_j; O_i, L_i */
        if (i == 0) tile(a, FL_GT_Q, 0, r0, 0, br, d);
        else if (i <= 2 * s->Tc) {
            const int64_t c0 = (i - 1) / 2 * Bc, bc = min64(Bc, N - c0);
            tile(a, (i - 1) % 2 ? FL_GT_V : FL_GT_K, 0, c0, 0, bc, d);
        } else if (i == 2 * s->Tc + 1) tile(a, FL_GT_O, 1, r0, 0, br, d);
        else tile(a, FL_GT_L, 1, r0, 0, br, 1);
        return;
    }
}

int64_t fl_gpu_walk(const fl_gpu_sched *s, int kk, fl_gpu_visit fn, void *ctx)
{
    const fl_gpu_kernel *k = &s->k[kk];
    const int64_t wave = k->per_sm * s->sms; /* rule G1: CTAs resident at once */
    int64_t visited = 0;
    fl_gpu_access a;
    for (int64_t w0 = 0; w0 < k->ctas; w0 += wave) {
        const int64_t w1 = min64(k->ctas, w0 + wave);
        int64_t steps = 0;
        for (int64_t c = w0; c < w1; c++) steps = max64(steps, k->skew * (c - w0) + fl_gpu_cta_len(s, kk, c));
        for (int64_t t = 0; t < steps; t++)
            for (int64_t c = w0; c < w1; c++) {
                const int64_t i = t - k->skew * (c - w0);
                if (i < 0 || i >= fl_gpu_cta_len(s, kk, c)) continue;
                fl_gpu_cta_access(s, kk, c, i, &a);
                fn(s, &a, ctx);
                visited++;
            }
    }
    return visited;
}
