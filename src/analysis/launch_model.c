/* launch_model.c: whole launches over batch x heads in grid order through the L2
 * (launch_model.h).  Each CTA's accesses are listed as its loop runs them; the resident CTA slots
 * advance in lock step, each taking the next work item when its own ends (rule S1), or the items
 * run when a measured timing says (rule S2); every access goes through the partitioned L2 of
 * l2_parts.h. */
#include <flashlab/launch_model.h>

#include <stdlib.h>
#include <string.h>

#include <flashlab/l2_parts.h>

enum { RD = 0, WR = 1, RED = 2 };

typedef struct {
    int t, kind;
    int64_t slice, r0, nr; /* rows [r0, r0 + nr) of slice `slice` (a head, or a head's split) */
    int64_t deliver;       /* SMs that receive a read (multicast: > 1); 0: delivered, not looked up */
} acc;

typedef struct {
    acc *a;
    int64_t n, cap;
} list;

typedef struct {
    const fl_launch *L;
    int64_t BH, Tr, Tc, items;
    int32_t *arrived;   /* BWD_MEMEFF: key tiles done per (head, query tile), in listing order */
    int64_t cols[FL_LT_COUNT], eb[FL_LT_COUNT], rows[FL_LT_COUNT];
    uint64_t base[FL_LT_COUNT];
} ctx;

static const char *const family_names[] = {"fwd-q", "fwd-qkv", "bwd-kv", "bwd-twopass", "bwd-memeff", "pre", "convert",
                                            "combine"};
static const char *const tensor_names[] = {"Q", "K", "V", "O", "L", "dO", "D", "dQacc", "dQ", "dK", "dV", "Opart", "Lpart"};

const char *fl_launch_family_name(fl_launch_family f) { return family_names[f]; }
const char *fl_launch_tensor_name(fl_launch_tensor t) { return tensor_names[t]; }

fl_status fl_launch_family_parse(const char *s, fl_launch_family *out)
{
    for (int f = 0; f <= FL_LF_COMBINE; f++)
        if (s && strcmp(s, family_names[f]) == 0) {
            *out = (fl_launch_family)f;
            return FL_OK;
        }
    return fl_fail(FL_EINVAL, "{launch}: unknown family '%s' (choose fwd-q, fwd-qkv, bwd-kv, bwd-twopass, bwd-memeff, "
                              "pre, convert or combine)", s ? s : "");
}

fl_launch fl_launch_default(fl_launch_family f, int64_t B, int64_t H, int64_t N, int64_t d, int64_t Br, int64_t Bc)
{
    fl_launch L;
    memset(&L, 0, sizeof L);
    L.family = f, L.batch = B, L.heads = H, L.N = N, L.d = d, L.Br = Br, L.Bc = Bc, L.Br2 = Br, L.Bc2 = Bc;
    L.elem_bytes = 2, L.order = FL_GO_TILE_FASTEST, L.cluster = 1, L.splits = 1, L.sms = 132, L.ctas_per_sm = 1, L.l2_parts = 2;
    return L;
}

static int push(list *l, int t, int kind, int64_t slice, int64_t r0, int64_t nr, int64_t deliver)
{
    if (nr <= 0) return 0;
    if (l->n == l->cap) {
        const int64_t cap = l->cap ? 2 * l->cap : 256;
        acc *a = realloc(l->a, (size_t)cap * sizeof *a);
        if (!a) return -1;
        l->a = a, l->cap = cap;
    }
    l->a[l->n++] = (acc){t, kind, slice, r0, nr, deliver};
    return 0;
}

/* the last key row + 1 that query rows [q0, q0 + nq) keep (causal: the lower triangle) */
static int64_t key_end(const fl_launch *L, int64_t q0, int64_t nq)
{
    return L->causal ? fl_min64(L->N, q0 + nq) : L->N;
}

/* work item -> (head, tile, split) as the grid orders them */
static void item_of(const ctx *c, int64_t item, int64_t ntiles, int64_t nsplit, int64_t *bh, int64_t *tile, int64_t *s)
{
    if (c->L->order == FL_GO_TILE_FASTEST) {
        *tile = item % ntiles, item /= ntiles;
        *s = item % nsplit, *bh = item / nsplit;
    } else {
        *bh = item % c->BH, item /= c->BH;
        *tile = item % ntiles, *s = item / ntiles;
    }
}

#define P(...) \
    do { if (push(l, __VA_ARGS__)) return -1; } while (0)

/* The accesses of query tile t of head bh, key range s of the split (FWD families), appended to
 * l.  -1: out of memory. */
static int fwd_tile(const ctx *c, list *l, int64_t bh, int64_t t, int64_t s)
{
    const fl_launch *L = c->L;
    const int64_t N = L->N, Br = L->Br, Bc = L->Bc;
    const int64_t q0 = t * Br, nq = fl_min64(Br, N - q0), kend = key_end(L, q0, nq);
    const int64_t per = fl_cdiv(c->Tc, L->splits), j0 = s * per, j1 = fl_min64(c->Tc, j0 + per);
    const int64_t lead = t - t % L->cluster, members = fl_min64(L->cluster, c->Tr - lead);
    const int64_t kv = t == lead ? members : 0; /* the cluster's leader reads K_j, V_j for all */
    if (L->family == FL_LF_FWD_Q) P(FL_LT_Q, RD, bh, q0, nq, 1);
    for (int64_t j = j0; j < j1 && j * Bc < kend; j++) {
        const int64_t k0 = j * Bc, nk = fl_min64(Bc, N - k0);
        if (L->family == FL_LF_FWD_QKV) P(FL_LT_Q, RD, bh, q0, nq, 1);
        P(FL_LT_K, RD, bh, k0, nk, kv);
        P(FL_LT_V, RD, bh, k0, nk, kv);
    }
    if (L->splits > 1) {
        P(FL_LT_Opart, WR, bh * L->splits + s, q0, nq, 0);
        P(FL_LT_Lpart, WR, bh * L->splits + s, q0, nq, 0);
    } else {
        P(FL_LT_O, WR, bh, q0, nq, 0);
        P(FL_LT_L, WR, bh, q0, nq, 0);
    }
    return 0;
}

/* The accesses of one work item, appended to l, K and V of its query head.  -1: out of memory. */
static int item_accesses_q(const ctx *c, int64_t item, list *l)
{
    const fl_launch *L = c->L;
    const int64_t N = L->N, Br = L->Br, Bc = L->Bc;
    int64_t bh, t, s;
    switch (L->family) {
    case FL_LF_FWD_Q:
    case FL_LF_FWD_QKV: {
        if (L->pairs) { /* positions p and Tr - 1 - p, each run as its tile from the end */
            item_of(c, item, (c->Tr + 1) / 2, 1, &bh, &t, &s);
            if (fwd_tile(c, l, bh, c->Tr - 1 - t, 0)) return -1;
            return c->Tr - 1 - t != t && fwd_tile(c, l, bh, t, 0) ? -1 : 0;
        }
        item_of(c, item, c->Tr, L->splits, &bh, &t, &s);
        return fwd_tile(c, l, bh, L->longest_first ? c->Tr - 1 - t : t, s);
    }
    case FL_LF_BWD_KV: {
        item_of(c, item, c->Tc, 1, &bh, &t, &s);
        const int64_t k0 = t * Bc, nk = fl_min64(Bc, N - k0);
        P(FL_LT_K, RD, bh, k0, nk, 1);
        P(FL_LT_V, RD, bh, k0, nk, 1);
        for (int64_t i = L->causal ? k0 / Br : 0; i < c->Tr; i++) {
            const int64_t q0 = i * Br, nq = fl_min64(Br, N - q0);
            P(FL_LT_Q, RD, bh, q0, nq, 1);
            P(FL_LT_dO, RD, bh, q0, nq, 1);
            P(FL_LT_L, RD, bh, q0, nq, 1);
            P(FL_LT_D, RD, bh, q0, nq, 1);
            if (L->atomic_dq) P(FL_LT_dQacc, RED, bh, q0, nq, 0);
            else {
                P(FL_LT_dQacc, RD, bh, q0, nq, 1);
                P(FL_LT_dQacc, WR, bh, q0, nq, 0);
            }
        }
        P(FL_LT_dK, WR, bh, k0, nk, 0);
        P(FL_LT_dV, WR, bh, k0, nk, 0);
        return 0;
    }
    case FL_LF_BWD_MEMEFF: { /* kernel_backward.h of PyTorch's mem_eff_attention, with num_splits_key = Tc */
        item_of(c, item, c->Tc, 1, &bh, &t, &s);
        const int64_t k0 = t * Bc, nk = fl_min64(Bc, N - k0), reload_k = L->d > 64;
        for (int64_t q0 = 0; q0 < N; q0 += Br) { /* every CTA computes D for the whole head */
            P(FL_LT_O, RD, bh, q0, fl_min64(Br, N - q0), 1);
            P(FL_LT_dO, RD, bh, q0, fl_min64(Br, N - q0), 1);
            P(FL_LT_D, WR, bh, q0, fl_min64(Br, N - q0), 0);
        }
        if (!reload_k) P(FL_LT_K, RD, bh, k0, nk, 1);
        const int64_t first = L->causal ? k0 / Br : 0, shift = L->causal ? 0 : t % c->Tr;
        for (int64_t n = 0; n < c->Tr - first; n++) {
            const int64_t i = first + (n + shift) % (c->Tr - first), q0 = i * Br, nq = fl_min64(Br, N - q0);
            P(FL_LT_Q, RD, bh, q0, nq, 1); /* S = Q K^T */
            if (reload_k) P(FL_LT_K, RD, bh, k0, nk, 1);
            P(FL_LT_L, RD, bh, q0, nq, 1);
            P(FL_LT_dO, RD, bh, q0, nq, 1); /* dV += P^T dO */
            P(FL_LT_dO, RD, bh, q0, nq, 1); /* dP = dO V^T */
            P(FL_LT_V, RD, bh, k0, nk, 1);
            P(FL_LT_D, RD, bh, q0, nq, 1);
            P(FL_LT_dQacc, RD, bh, q0, nq, 1);
            P(FL_LT_K, RD, bh, k0, nk, 1); /* dQ += dS K */
            const int64_t feeding = L->causal ? fl_min64(c->Tc, (q0 + nq - 1) / Bc + 1) : c->Tc;
            if (++c->arrived[bh * c->Tr + i] == feeding) P(FL_LT_dQ, WR, bh, q0, nq, 0);
            else P(FL_LT_dQacc, WR, bh, q0, nq, 0);
            P(FL_LT_Q, RD, bh, q0, nq, 1); /* dK += dS^T Q */
        }
        P(FL_LT_dK, WR, bh, k0, nk, 0);
        P(FL_LT_dV, WR, bh, k0, nk, 0);
        return 0;
    }
    case FL_LF_BWD_TWOPASS: { /* the tutorial's _attn_bwd: BLOCK_M1 = Br, BLOCK_N1 = Bc, BLOCK_M2 = Br2, BLOCK_N2 = Bc2 */
        item_of(c, item, N / Bc, 1, &bh, &t, &s);
        const int64_t n0 = t * Bc;
        P(FL_LT_K, RD, bh, n0, Bc, 1);
        P(FL_LT_V, RD, bh, n0, Bc, 1);
        int64_t m = 0;
        if (L->causal) /* the diagonal block in steps of Br / 2 (BLK_SLICE_FACTOR = 2), masked */
            for (m = n0; m < n0 + Bc; m += Br / 2) {
                P(FL_LT_Q, RD, bh, m, Br / 2, 1);
                P(FL_LT_L, RD, bh, m, Br / 2, 1);
                P(FL_LT_dO, RD, bh, m, Br / 2, 1);
                P(FL_LT_D, RD, bh, m, Br / 2, 1);
            }
        for (; m + Br <= N; m += Br) {
            P(FL_LT_Q, RD, bh, m, Br, 1);
            P(FL_LT_L, RD, bh, m, Br, 1);
            P(FL_LT_dO, RD, bh, m, Br, 1);
            P(FL_LT_D, RD, bh, m, Br, 1);
        }
        P(FL_LT_dV, WR, bh, n0, Bc, 0);
        P(FL_LT_dK, WR, bh, n0, Bc, 0);
        const int64_t m0 = t * L->Br2; /* the dQ pass of the same program */
        P(FL_LT_Q, RD, bh, m0, L->Br2, 1);
        P(FL_LT_dO, RD, bh, m0, L->Br2, 1);
        P(FL_LT_L, RD, bh, m0, L->Br2, 1);
        P(FL_LT_D, RD, bh, m0, L->Br2, 1);
        int64_t end = N;
        if (L->causal) {
            for (int64_t k = m0; k < m0 + L->Br2; k += L->Bc2 / 2) {
                P(FL_LT_K, RD, bh, k, L->Bc2 / 2, 1);
                P(FL_LT_V, RD, bh, k, L->Bc2 / 2, 1);
            }
            end = m0;
        }
        for (int64_t k = end % L->Bc2; k + L->Bc2 <= end; k += L->Bc2) {
            P(FL_LT_K, RD, bh, k, L->Bc2, 1);
            P(FL_LT_V, RD, bh, k, L->Bc2, 1);
        }
        P(FL_LT_dQ, WR, bh, m0, L->Br2, 0);
        return 0;
    }
    case FL_LF_PRE:
    case FL_LF_CONVERT: {
        item_of(c, item, fl_cdiv(N, Br), 1, &bh, &t, &s);
        const int64_t q0 = t * Br, nq = fl_min64(Br, N - q0);
        if (L->family == FL_LF_PRE) {
            P(FL_LT_O, RD, bh, q0, nq, 1);
            P(FL_LT_dO, RD, bh, q0, nq, 1);
            P(FL_LT_D, WR, bh, q0, nq, 0);
            if (L->zero_dq) P(FL_LT_dQacc, WR, bh, q0, nq, 0);
        } else {
            P(FL_LT_dQacc, RD, bh, q0, nq, 1);
            P(FL_LT_dQ, WR, bh, q0, nq, 0);
        }
        return 0;
    }
    case FL_LF_COMBINE: {
        item_of(c, item, c->Tr, 1, &bh, &t, &s);
        const int64_t q0 = t * Br, nq = fl_min64(Br, N - q0);
        for (int64_t k = 0; k < L->splits; k++) {
            P(FL_LT_Lpart, RD, bh * L->splits + k, q0, nq, 1);
            P(FL_LT_Opart, RD, bh * L->splits + k, q0, nq, 1);
        }
        P(FL_LT_O, WR, bh, q0, nq, 0);
        P(FL_LT_L, WR, bh, q0, nq, 0);
        return 0;
    }
    }
    return 0;
}

/* The accesses of one work item, appended to l: K and V read from the K/V head of each query head
 * (launch_model.h: kv_heads).  -1: out of memory. */
static int item_accesses(const ctx *c, int64_t item, list *l)
{
    const int64_t n0 = l->n, H = c->L->heads, Hkv = c->L->kv_heads ? c->L->kv_heads : H, group = H / Hkv;
    if (item_accesses_q(c, item, l)) return -1;
    for (int64_t i = n0; group > 1 && i < l->n; i++)
        if (l->a[i].t == FL_LT_K || l->a[i].t == FL_LT_V) l->a[i].slice = l->a[i].slice / H * Hkv + l->a[i].slice % H / group;
    return 0;
}

static fl_status check(const fl_launch *L)
{
    if (L->batch < 1 || L->heads < 1 || L->N < 1 || L->d < 1)
        return fl_fail(FL_EINVAL, "{batch}/{heads}/{N}/{d}: must be >= 1");
    if (L->kv_heads < 0 || (L->kv_heads && L->heads % L->kv_heads))
        return fl_fail(FL_EINVAL, "{kv_heads}: must divide {heads} (a whole number of query heads per K/V head)");
    if (L->Br < 1 || L->Bc < 1 || L->Br > L->N || L->Bc > L->N)
        return fl_fail(FL_EINVAL, "{Br}/{Bc}: tile rows must be >= 1 and at most N");
    if (L->elem_bytes != 2 && L->elem_bytes != 4) return fl_fail(FL_EINVAL, "{dtype}: 2- or 4-byte elements only");
    if (L->sms < 1 || L->ctas_per_sm < 1) return fl_fail(FL_EINVAL, "{sms}/{ctas_per_sm}: must be >= 1");
    if (L->l2_parts != 1 && L->l2_parts != 2)
        return fl_fail(FL_EINVAL, "{l2_partitions}: 1 (one LRU) or 2 (the H100's and H200's two halves)");
    if (L->persistent < 0) return fl_fail(FL_EINVAL, "{persistent}: must be >= 0 (0: a CTA per work item)");
    if (L->cluster < 1 || L->splits < 1) return fl_fail(FL_EINVAL, "{cluster}/{splits}: must be >= 1");
    if (L->cluster > 1 && (L->family > FL_LF_FWD_QKV || L->causal))
        return fl_fail(FL_EINVAL, "{cluster}: multicast of K and V is modelled for the forward families without a mask");
    if (L->splits > 1 && L->family != FL_LF_FWD_Q && L->family != FL_LF_COMBINE)
        return fl_fail(FL_EINVAL, "{splits}: split-KV applies to fwd-q and combine only");
    if (L->splits > fl_cdiv(L->N, L->Bc)) return fl_fail(FL_EINVAL, "{splits}: at most one split per key tile");
    if (L->static_rr && (L->persistent < 1 || L->timing))
        return fl_fail(FL_EINVAL, "{static}: a static round robin needs {persistent} P >= 1 (and no {cta_timing})");
    if (L->pairs && (L->family != FL_LF_FWD_Q || !L->causal || L->splits > 1 || L->cluster > 1))
        return fl_fail(FL_EINVAL, "{pairs}: applies to fwd-q with {causal}, without {splits} or {cluster}");
    if (L->longest_first && (L->family > FL_LF_FWD_QKV || !L->causal))
        return fl_fail(FL_EINVAL, "{longest_first}: applies to the forward families with {causal} (tiles of one length otherwise)");
    if (L->family == FL_LF_BWD_TWOPASS) {
        if (L->Br2 < 1 || L->Bc2 < 1 || L->Bc % L->Br || L->Br2 % L->Bc2 || L->Bc != L->Br2 || L->N % L->Bc ||
            L->Br % 2 || L->Bc2 % 2)
            return fl_fail(FL_EINVAL, "{Br}/{Bc}/{Br2}/{Bc2}: bwd-twopass needs Bc a multiple of Br, Br2 = Bc a multiple "
                                      "of Bc2, N a multiple of Bc, Br and Bc2 even (the tutorial's asserts)");
    }
    return FL_OK;
}

static void setup(ctx *c, const fl_launch *L)
{
    memset(c, 0, sizeof *c);
    c->L = L;
    c->BH = L->batch * L->heads;
    c->Tr = fl_cdiv(L->N, L->Br), c->Tc = fl_cdiv(L->N, L->Bc);
    for (int t = 0; t < FL_LT_COUNT; t++) c->cols[t] = L->d, c->eb[t] = L->elem_bytes, c->rows[t] = c->BH * L->N;
    c->cols[FL_LT_L] = c->cols[FL_LT_D] = c->cols[FL_LT_Lpart] = 1;
    c->eb[FL_LT_L] = c->eb[FL_LT_D] = c->eb[FL_LT_Lpart] = c->eb[FL_LT_dQacc] = c->eb[FL_LT_Opart] = 4;
    c->rows[FL_LT_Opart] = c->rows[FL_LT_Lpart] = c->BH * L->splits * L->N;
    c->rows[FL_LT_K] = c->rows[FL_LT_V] = L->batch * (L->kv_heads ? L->kv_heads : L->heads) * L->N;
    uint64_t at = 0;
    for (int t = 0; t < FL_LT_COUNT; t++) { /* 2 MiB-aligned bases (cudaMalloc of large buffers) */
        c->base[t] = at;
        const uint64_t bytes = (uint64_t)c->rows[t] * (uint64_t)c->cols[t] * (uint64_t)c->eb[t];
        at += (bytes + (UINT64_C(1) << 21) - 1) & ~((UINT64_C(1) << 21) - 1);
    }
    switch (L->family) {
    case FL_LF_FWD_Q:
    case FL_LF_FWD_QKV: c->items = c->BH * (L->pairs ? (c->Tr + 1) / 2 : c->Tr * L->splits); break;
    case FL_LF_BWD_KV:
    case FL_LF_BWD_MEMEFF: c->items = c->BH * c->Tc; break;
    case FL_LF_BWD_TWOPASS: c->items = c->BH * (L->N / L->Bc); break;
    case FL_LF_PRE:
    case FL_LF_CONVERT:
    case FL_LF_COMBINE: c->items = c->BH * c->Tr; break;
    }
}

/* What the walker knows of one partition: the last thing that changed it was the access `r`,
 * touching in order every sector of r (full: a read from this side) or every sector of r homed
 * here (a write or reduction: dirty).  Repeating such an access changes nothing. */
typedef struct {
    acc r;
    int valid, full;
} part_state;

typedef struct {
    fl_l2p *l2;
    int64_t sb;
    part_state last[2];
} walker;

static int same_range(const acc *a, const acc *b)
{
    return a->t == b->t && a->slice == b->slice && a->r0 == b->r0 && a->nr == b->nr;
}

/* One access of the CTA on side `side`.  Counted always; played on the L2 unless it is a repeat
 * that cannot change it (the range touched last, CTA after CTA on the same tile: a read whose
 * near partition last saw this very read hits everywhere; a write or reduction that every
 * partition last saw finds its sectors resident and dirty and their copies already dropped). */
static void visit(const ctx *c, walker *w, const acc *a, int side, fl_launch_pred *out)
{
    const int64_t cols = c->cols[a->t], eb = c->eb[a->t], elems = a->nr * cols;
    const uint64_t at = c->base[a->t] + ((uint64_t)(a->slice * c->L->N + a->r0) * (uint64_t)cols) * (uint64_t)eb;
    const int64_t len = elems * eb;
    const int64_t sectors = (int64_t)((at + (uint64_t)len - 1) / (uint64_t)w->sb - at / (uint64_t)w->sb + 1);
    const int parts = fl_l2p_parts(w->l2);
    if (a->kind == RD) {
        if (!a->deliver) return; /* a cluster member's K_j, V_j: its leader's read delivers them */
        out->reads[a->t] += elems * a->deliver;
        out->sm_read_B += sectors * w->sb * a->deliver;
        out->l2_read_B += sectors * w->sb;
    } else {
        out->writes[a->t] += elems;
        if (a->kind == WR) out->sm_write_B += sectors * w->sb;
        else out->red_B += sectors * w->sb;
    }
    const int fits = sectors <= fl_l2p_part_sectors(w->l2);
    int64_t homed[2];
    fl_l2p_homed(w->l2, at, len, homed);
    if (a->kind == RD) {
        const part_state *n = &w->last[side];
        if (fits && n->valid && same_range(&n->r, a) && (n->full || parts == 1)) return;
    } else {
        int repeat = fits; /* an update touches every partition: its home sectors, the others' copies dropped */
        for (int p = 0; p < parts && repeat; p++)
            repeat = w->last[p].valid && !w->last[p].full && same_range(&w->last[p].r, a);
        if (repeat) {
            out->fabric_B += (sectors - homed[side]) * w->sb * (parts > 1);
            return;
        }
    }
    const fl_l2p_stats before = fl_l2p_get_stats(w->l2);
    const unsigned touched = fl_l2p_access(w->l2, side, at, len, a->kind == RD ? FL_L2P_READ
                                                                  : a->kind == WR ? FL_L2P_WRITE : FL_L2P_REDUCE);
    const fl_l2p_stats after = fl_l2p_get_stats(w->l2);
    out->dram_read_B += (after.dram_reads - before.dram_reads) * w->sb;
    out->fabric_B += (after.fabric - before.fabric) * w->sb;
    out->writeback_B += (after.writebacks - before.writebacks) * w->sb;
    out->read_miss_B += (after.read_misses - before.read_misses) * w->sb;
    out->fabric_read_miss_B += (after.fabric_read_misses - before.fabric_read_misses) * w->sb;
    out->red_miss_B += (after.reduce_misses - before.reduce_misses) * w->sb;
    for (int p = 0; p < parts; p++) /* a read's lookups in a home partition are only its near misses */
        if (touched >> p & 1) w->last[p] = (part_state){*a, a->kind != RD || p == side, a->kind == RD};
}

/* Puts the next work item with any access (*next onwards, in grid order, in steps of `step`) into
 * l; 0 when none is left (or on out of memory: *e set). */
static int load(const ctx *c, list *l, int64_t *next, int64_t step, fl_status *e)
{
    l->n = 0;
    for (; l->n == 0 && *next < c->items; *next += step)
        if (item_accesses(c, *next, l)) {
            *e = fl_fail(FL_ENOMEM, "l2: out of memory listing a CTA's accesses");
            return 0;
        }
    return l->n > 0;
}

/* Rule S1 (docs/third_party.md §3): `slots` CTA slots (SM k mod sms for slot k); each runs its
 * work item's accesses one a step, all slots in lock step, and takes the next work item in grid
 * order when it finishes (the block scheduler; a persistent grid's tile scheduler) or, with
 * static_rr, slot k the items k, k + slots, ... (a persistent grid's static round robin). */
static fl_status walk_s1(const ctx *c, walker *w, int64_t ctas, fl_launch_pred *out)
{
    const fl_launch *L = c->L;
    const int64_t slots = fl_min64(L->persistent > 0 ? ctas : L->sms * L->ctas_per_sm, c->items);
    const int stat = L->static_rr && L->persistent > 0;
    list *ls = calloc((size_t)slots, sizeof *ls);
    int64_t *pos = calloc((size_t)slots, sizeof *pos), *mine = stat ? calloc((size_t)slots, sizeof *mine) : NULL;
    fl_status e = ls && pos && (mine || !stat) ? FL_OK
                                               : fl_fail(FL_ENOMEM, "l2: out of memory for %lld CTA slots", (long long)slots);
    int64_t shared = 0, active = 0;
    /* the next item of slot k: its own sequence (static) or the grid's (dynamic) */
#define NEXT(k) (stat ? &mine[k] : &shared), (stat ? slots : 1)
    for (int64_t k = 0; !e && k < slots; k++) {
        if (stat) mine[k] = k;
        active += load(c, &ls[k], NEXT(k), &e);
    }
    while (!e && active > 0)
        for (int64_t k = 0; !e && k < slots; k++) {
            if (pos[k] >= ls[k].n) continue; /* idle: no work item left */
            visit(c, w, &ls[k].a[pos[k]++], (int)(k % L->sms % L->l2_parts), out);
            if (pos[k] < ls[k].n) continue;
            pos[k] = 0;
            active -= !load(c, &ls[k], NEXT(k), &e);
        }
#undef NEXT
    free(mine);
    free(pos);
    if (ls)
        for (int64_t k = 0; k < slots; k++) free(ls[k].a);
    free(ls);
    return e;
}

/* A running work item of the timed walk: its accesses and the time of the next one. */
typedef struct {
    double t;
    int64_t item, pos;
    list l;
} running;

static int earlier(const running *a, const running *b) { return a->t < b->t || (a->t == b->t && a->item < b->item); }

/* the time of access `pos` of item r: the accesses spread evenly over [start, end) */
static double access_time(const fl_cta_time *m, const running *r)
{
    return (double)m->start + (double)(m->end - m->start) * ((double)r->pos + 0.5) / (double)r->l.n;
}

static void sift_down(running *h, int64_t n, int64_t i)
{
    for (;;) {
        int64_t m = i, a = 2 * i + 1, b = a + 1;
        if (a < n && earlier(&h[a], &h[m])) m = a;
        if (b < n && earlier(&h[b], &h[m])) m = b;
        if (m == i) return;
        const running x = h[i];
        h[i] = h[m], h[m] = x, i = m;
    }
}

typedef struct {
    int64_t start, item;
} start_of;

static int by_start(const void *x, const void *y)
{
    const start_of *a = x, *b = y;
    return a->start != b->start ? (a->start > b->start) - (a->start < b->start) : (a->item > b->item) - (a->item < b->item);
}

/* Rule S2 (docs/third_party.md §3): the measured timing.  Items start in order of their start
 * times; the running items' accesses are visited in time order (a heap on the next access's
 * time), each on the side of its measured SM. */
static fl_status walk_timed(const ctx *c, walker *w, fl_launch_pred *out)
{
    const fl_launch *L = c->L;
    const fl_cta_time *m = L->timing;
    start_of *order = malloc((size_t)c->items * sizeof *order);
    running *h = malloc((size_t)c->items * sizeof *h);
    fl_status e = order && h ? FL_OK : fl_fail(FL_ENOMEM, "l2: out of memory for %lld timed work items", (long long)c->items);
    for (int64_t i = 0; !e && i < c->items; i++) order[i] = (start_of){m[i].start, i};
    if (!e) qsort(order, (size_t)c->items, sizeof *order, by_start);
    int64_t next = 0, n = 0;
    while (!e && (next < c->items || n > 0)) {
        if (next < c->items && (n == 0 || (double)order[next].start <= h[0].t)) {
            running r = {0, order[next++].item, 0, {NULL, 0, 0}};
            if (item_accesses(c, r.item, &r.l)) {
                free(r.l.a);
                e = fl_fail(FL_ENOMEM, "l2: out of memory listing a CTA's accesses");
                break;
            }
            if (r.l.n == 0) {
                free(r.l.a);
                continue;
            }
            r.t = access_time(&m[r.item], &r);
            int64_t i = n++; /* sift up */
            for (; i > 0 && earlier(&r, &h[(i - 1) / 2]); i = (i - 1) / 2) h[i] = h[(i - 1) / 2];
            h[i] = r;
            continue;
        }
        running *r = &h[0];
        visit(c, w, &r->l.a[r->pos++], (int)(m[r->item].sm % L->l2_parts), out);
        if (r->pos < r->l.n) r->t = access_time(&m[r->item], r);
        else {
            free(r->l.a);
            h[0] = h[--n];
        }
        sift_down(h, n, 0);
    }
    for (int64_t i = 0; h && i < n; i++) free(h[i].l.a);
    free(h);
    free(order);
    return e;
}

fl_status fl_launch_predict(const fl_launch *L, int64_t l2_bytes, int64_t sector, fl_launch_pred *out)
{
    memset(out, 0, sizeof *out);
    FL_TRY(check(L));
    ctx c;
    setup(&c, L);
    if (L->timing && L->timing_n != c.items)
        return fl_fail(FL_EINVAL, "{cta_timing}: %lld rows for a launch of %lld work items (one row per item)",
                       (long long)L->timing_n, (long long)c.items);
    for (int64_t i = 0; L->timing && i < c.items; i++)
        if (L->timing[i].sm < 0 || L->timing[i].sm >= L->sms || L->timing[i].start < 0 ||
            L->timing[i].end < L->timing[i].start)
            return fl_fail(FL_EINVAL, "{cta_timing}: item %lld: its SM must be in [0, {sms} = %lld) and 0 <= start <= end",
                           (long long)i, (long long)L->sms);
    int64_t heads_tiles = 0;
    if (L->family == FL_LF_BWD_MEMEFF &&
        (!fl_mul_ok(c.BH, c.Tr, &heads_tiles) || heads_tiles > (INT64_C(1) << 40) ||
         !(c.arrived = calloc((size_t)heads_tiles, sizeof *c.arrived))))
        return fl_fail(FL_ENOMEM, "l2: out of memory for the dQ arrival counters of %lld x %lld query tiles",
                       (long long)c.BH, (long long)c.Tr);
    fl_l2p *l2;
    const fl_status ea = fl_l2p_alloc(l2_bytes, sector, L->l2_parts, &l2);
    if (ea) {
        free(c.arrived);
        return ea;
    }
    const int64_t ctas = L->persistent > 0 && !L->timing ? fl_min64(L->persistent, c.items) : c.items;
    const int64_t wave = L->sms * L->ctas_per_sm;
    out->ctas = ctas, out->items = c.items, out->waves = fl_cdiv(ctas, wave);
    walker w = {l2, sector, {{{0}, 0, 0}, {{0}, 0, 0}}};
    const fl_status e = L->timing ? walk_timed(&c, &w, out) : walk_s1(&c, &w, ctas, out);
    free(c.arrived);
    fl_l2p_free(l2);
    if (e) memset(out, 0, sizeof *out);
    return e;
}
