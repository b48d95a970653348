/* schedules.h: the attention schedules, each written against the machine (machine.h) in a file
 * of its own, to be read beside the algorithm it implements:
 *
 *   sched_standard.c  FlashAttention paper, Algorithm 0 (S and P materialized in HBM)
 *   sched_flash1.c    FlashAttention paper, Algorithm 1 (outer loop over K/V blocks)
 *   sched_flash2.c    FlashAttention-2, Algorithm 1 (forward, query-owned loop)
 *
 * Contract shared by all: the caller has added the HBM tensors Q, K, V (N x d, filled in compute
 * mode) and O (N x d); the schedule adds its own HBM tensors (S, P; l, m; L), allocates its
 * SRAM buffers, writes O, and frees every buffer it allocated before returning FL_OK.  Scores
 * are scaled by 1/sqrt(d).  A non-OK return leaves the machine's counters as they were at the
 * failure and fl_last_error() explaining it.
 */
#ifndef FL_SCHEDULES_H
#define FL_SCHEDULES_H

#include "machine.h"
#include "problem.h"

typedef struct {
    int Q, K, V, O; /* tensor ids */
} fl_qkvo;

typedef fl_status (*fl_schedule_fn)(fl_machine *m, const fl_problem *p, const fl_blocks *b,
                                    fl_qkvo io);

fl_status fl_schedule_standard(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io);
fl_status fl_schedule_flash1(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io);
fl_status fl_schedule_flash2(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io);

/* issue 4 items 5-7 (contracts in their files: decode and softmax take other tensors) */
fl_status fl_schedule_decode(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io);
fl_status fl_schedule_blocksparse(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io);
fl_status fl_schedule_memeff(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io);
fl_status fl_schedule_softmax_safe(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io);
fl_status fl_schedule_softmax_online(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io);

/* The schedule function for an algorithm (NULL if unknown). */
fl_schedule_fn fl_schedule_for(fl_algo a);

#endif
