/* cp.h: context parallelism, the fourth level: P devices, each holding N/P of the sequence, and
 * the links between them (docs/context_parallel.md).
 *
 * Three schedules of the devices:
 *
 *   FL_CP_RING     device r holds the tokens [r n, (r+1) n), n = N/P (Liu et al. 2310.01889).
 *                  In P steps every device attends its queries to the K/V block it holds and
 *                  passes that block to device r+1 (mod P); a causal step whose block lies
 *                  wholly in the future is skipped, so device P-1 works P times as long as
 *                  device 0 on the diagonal alone.
 *   FL_CP_STRIPED  device r holds the tokens r, r+P, r+2P, ... (Brandon et al. 2311.09431):
 *                  the same ring, but every causal step keeps about half of its block.
 *   FL_CP_ULYSSES  all-to-all (DeepSpeed-Ulysses, Jacobs et al. 2309.14509): Q, K, V are
 *                  exchanged so that device r holds every token of H/P query heads (and the
 *                  K/V heads they use), attends, and O is exchanged back.
 *
 * What a device moves, per pass:
 *   - HBM: the attention kernels, each EXECUTED on the machine (fl_run, count-only) on the
 *     device's own problem of that step (a shard of queries against a shard of keys, with the
 *     local mask the layout gives), plus the merges of partial outputs and the accumulations of
 *     partial gradients, each executed as a tile loop on a machine of the same M;
 *   - links: every message of the schedule (a K/V block, a dK/dV accumulator, a piece of an
 *     all-to-all) executed as a send of its elements between two devices, counted at both ends.
 * Nothing is taken from a formula; the closed forms of docs/context_parallel.md (fl_cp_closed)
 * are compared with these counts by the tests.
 *
 * The whole problem p: self-attention (Nk = N), every sequence of the batch N tokens long (no
 * varlen), no window, causal none or either corner (the same mask when Nq = Nk), any heads and
 * K/V heads (GQA), pass fwd, bwd or fwd+bwd, each device's schedule flash2 or flash2-gqa (the
 * kernels every context-parallel implementation calls: they save the logsumexp the merge needs).
 */
#ifndef FL_CP_H
#define FL_CP_H

#include <stdint.h>
#include <stdio.h>

#include "problem.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { FL_CP_RING = 0, FL_CP_STRIPED = 1, FL_CP_ULYSSES = 2 } fl_cp_kind;

/* "ring", "striped", "ulysses"; NULL for an unknown value. */
const char *fl_cp_name(fl_cp_kind k);

/* Parses a schedule of the devices; FL_EINVAL ("unknown context-parallel schedule 'x' (choose
 * ...)") otherwise, for the caller to prefix with its own name of the quantity. */
fl_status fl_cp_parse(const char *s, fl_cp_kind *out);

/* The most devices a model may hold. */
#define FL_CP_MAX_DEVICES 4096

typedef struct {
    fl_cp_kind kind;
    int64_t P;     /* devices, 1 .. FL_CP_MAX_DEVICES */
    fl_problem p;  /* the whole problem (above) */
    int link_only; /* 1: count the links and FLOPs only, not HBM (no kernel runs); a kernel
                    * problem then has at most FL_CP_MAX_ROWS rows (FL_EINVAL) */
} fl_cp_spec;

/* What one device does in one pass. */
typedef struct {
    int64_t kernels;                    /* attention kernels launched (steps that compute) */
    int64_t kernel_reads, kernel_writes; /* their HBM traffic (elements), executed */
    int64_t merge_reads, merge_writes;   /* merges and accumulations (elements), executed */
    int64_t hbm_bytes;                   /* all of the above in bytes */
    int64_t link_sent, link_recv;        /* elements over the links */
    int64_t link_sent_bytes, link_recv_bytes;
    int64_t pairs;                       /* kept (query, key) pairs, over heads and batch */
    int64_t flops;                       /* 4 d FLOPs a pair forward, 10 d backward (eq. CP-F) */
} fl_cp_pass;

/* A pass as a timeline of slots: in slot t the busiest device computes slot_flops[t] FLOPs and
 * the busiest link carries slot_bytes[t] bytes (sent or received), concurrently.  Ring: slot t
 * is step t (the transfer of the block for step t+1, and backward the dK/dV accumulated at step
 * t-1), and the backward has one slot more for the last dK/dV; Ulysses: the all-to-all in, the
 * kernel, the all-to-all out. */
typedef struct {
    int nslots;
    int64_t *slot_flops, *slot_bytes;
} fl_cp_timeline;

typedef struct {
    fl_cp_spec spec;
    int64_t n;              /* tokens per device, N / P */
    int passes;             /* FL_PASS_* the spec asked for */
    fl_cp_pass *dev[2];     /* [0] forward, [1] backward: P devices each (NULL: pass not run) */
    fl_cp_timeline line[2];
} fl_cp_result;

/* FL_EINVAL naming the quantity and the rule when s cannot be modelled: P outside
 * 1 .. FL_CP_MAX_DEVICES, N not a multiple of P (ring, striped), heads not a multiple of P or
 * K/V heads neither a multiple nor a divisor of P (Ulysses), a key length, window, varlen, or a
 * schedule other than flash2 and flash2-gqa; then fl_problem_check of the whole problem. */
fl_status fl_cp_check(const fl_cp_spec *s);

/* Runs the model of s: every device, every step, every message (above).  On FL_OK *r holds the
 * result (free with fl_cp_free); otherwise *r is empty and fl_last_error() says why: a check of
 * fl_cp_check, a step's kernel that cannot run (M too small: FL_ECAPACITY; more than max_events
 * tile events), FL_EOVERFLOW, FL_ENOMEM. */
fl_status fl_cp_run(const fl_cp_spec *s, fl_cp_result *r);

/* Frees what fl_cp_run allocated; r becomes empty.  NULL is a no-op. */
void fl_cp_free(fl_cp_result *r);

/* The closed forms of docs/context_parallel.md for device `dev` in pass `bwd` (0 forward, 1
 * backward): link elements sent (CP-R1, CP-R2, CP-U1, CP-U2), kept pairs (CP-K), and the HBM
 * traffic as the sum of the single-device closed forms (docs/model.md §4) of its steps and the
 * merges (CP-M).  link_only: hbm_* are 0.  FL_EOVERFLOW when a count does not fit. */
typedef struct {
    int64_t link_sent, link_recv, pairs, kernels;
    int64_t kernel_total, merge_total; /* reads + writes */
} fl_cp_closed_counts;
fl_status fl_cp_closed(const fl_cp_spec *s, int64_t dev, int bwd, fl_cp_closed_counts *c);

/* ---- time: hosts, the overlap condition ---- */

/* A host: the FLOP rate of one device and the bandwidth of its link in one direction. */
typedef struct {
    const char *name;    /* "a100-nvlink" */
    int64_t flops;       /* FLOP/s */
    int64_t link_bw;     /* bytes/s, one direction */
    double paper_c;      /* Liu et al. 2310.01889, Table 2: minimal block size (rows); 0: not listed */
    double paper_s;      /* and minimal sequence length per host (6 c) */
    const char *source;
} fl_cp_host;

/* All hosts in listing order; *n receives their number. */
const fl_cp_host *fl_cp_hosts(int *n);

/* The host called name; FL_EINVAL ("unknown host 'x' (choose ...)") otherwise, for the caller to
 * prefix with its own name of the quantity. */
fl_status fl_cp_host_find(const char *name, const fl_cp_host **out);

/* A pass's time at flops FLOP/s and link_bw bytes/s (eq. CP-T): compute = sum over slots of the
 * busiest device's FLOPs / flops; link = sum of the busiest link's bytes / link_bw; pass = sum
 * of the larger of the two in each slot; exposed = pass - compute.  hidden = 1 when in every
 * slot the link's time is at most the compute's (decided exactly, in integers). */
typedef struct {
    double compute_s, link_s, pass_s, exposed_s;
    int hidden;
} fl_cp_time;
void fl_cp_time_of(const fl_cp_result *r, int bwd, int64_t flops, int64_t link_bw, fl_cp_time *t);

/* The fewest tokens per device n (N = n P) for which the forward of s (ring or striped, P >= 2)
 * hides every transfer at flops and link_bw: found by doubling and bisection over runs of the
 * model (link_only), each deciding from its own timeline (fl_cp_time.hidden), which needs
 * hiding to be monotone in n (it is: a step's FLOPs grow as n^2, its bytes as n).  *n_min
 * receives it.  FL_EINVAL for Ulysses or P = 1 (nothing overlaps), rates below 1, or when no
 * n up to FL_CP_MAX_ROWS suffices. */
#define FL_CP_MAX_ROWS (INT64_C(1) << 24)
fl_status fl_cp_min_rows(const fl_cp_spec *s, int64_t flops, int64_t link_bw, int64_t *n_min);

/* The data of figure (i) (docs/context_parallel.md §6) as CSV with provenance lines: one causal
 * layer of 64 heads, 8 K/V heads, d = 128, forward, on h100-nvlink4, for ring, striped and
 * Ulysses; panel P (N = 131072, P = 1, 2, .., 64) and panel N (P = 8, N = 8192 .. 1048576):
 * panel,cp,P,N,link_bytes,flops (the busiest device's), compute_s,link_s,pass_s,exposed_s.
 * FL_EIO when a write fails. */
fl_status fl_cp_figure_csv(FILE *f);

/* ---- values: the schedules' outputs checked ---- */

/* Runs the forward of s with real values (uniform random inputs from p.seed): every device's
 * kernels in compute mode on its shards (fl_run_values), the merges in double, and compares the
 * gathered O with the reference's exact attention of the whole problem.  *rel_err receives
 * max |O - O_ref| / max |O_ref|.  FL_EINVAL as fl_cp_check or for a problem too large for
 * compute runs. */
fl_status fl_cp_check_values(const fl_cp_spec *s, double *rel_err);

#ifdef __cplusplus
}
#endif

#endif
