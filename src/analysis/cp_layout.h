/* cp_layout.h: where the tokens and heads of a context-parallel problem live, and the problem
 * each step gives a device (docs/context_parallel.md §2).  Private to the cp module. */
#ifndef FL_CP_LAYOUT_H
#define FL_CP_LAYOUT_H

#include <flashlab/cp.h>

/* The position in the sequence of local token i of device r (n tokens per device): ring
 * r n + i, striped r + P i. */
int64_t fl_cp_pos(const fl_cp_spec *s, int64_t n, int64_t r, int64_t i);

/* One step of a ring: the queries of device r against the keys of block src.  Under a causal
 * mask, query i keeps key j when pos(src, j) <= pos(r, i), which for both layouts is the band
 * j - i <= delta (delta from the positions, rule CP-L): every pair (delta >= n - 1), the
 * top-left causal mask (delta = 0), a band above the diagonal (0 < delta < n - 1: the window
 * (-1, delta)), the causal mask of the last n - k queries against the first n - k keys
 * (delta = -k, -n < delta < 0: what stripe attention passes to the kernel as q[k:], k[:n-k]),
 * or nothing (delta <= -n). */
typedef struct {
    int empty;             /* nothing kept: the step launches no kernel */
    int64_t rows;          /* the kernel's queries and keys (rows x rows) */
    int64_t q_off, k_off;  /* the first local query and key row it covers */
    fl_causal causal;      /* FL_CAUSAL_NONE or FL_CAUSAL_TOP_LEFT */
    int64_t window_right;  /* -1, or delta for a band above the diagonal */
} fl_cp_step;

void fl_cp_step_of(const fl_cp_spec *s, int64_t n, int64_t r, int64_t src, fl_cp_step *st);

/* Ulysses: device r's query heads [*q0, *q0 + *hq) and the K/V heads they use [*k0, *k0 + *hk)
 * (query head h uses K/V head h / (H / Hkv), docs/model.md §heads). */
void fl_cp_heads(const fl_cp_spec *s, int64_t r, int64_t *q0, int64_t *hq, int64_t *k0, int64_t *hk);

/* The single-device problem of a kernel: s->p with N = Nk = rows, the step's mask, heads and K/V
 * heads as given, and the pass. */
fl_problem fl_cp_kernel_problem(const fl_cp_spec *s, int64_t rows, fl_causal causal, int64_t window_right,
                                int64_t heads, int64_t kv_heads, int bwd);

/* The (query, key) pairs one head of one sequence keeps in a rows x rows problem with this mask,
 * summed row by row from the mask module (fl_mask_row_range). */
fl_status fl_cp_pairs(int64_t rows, fl_causal causal, int64_t window_right, int64_t *pairs);

#endif
