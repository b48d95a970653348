/* flash2_rev.c: a test-only schedule, registered by one line (tests/extra/schedules.def) in a test
 * build (cmake -DFLASHLAB_TEST_SCHEDULES=tests/extra): flash2 with its inner loop reversed, the
 * key blocks of a row block visited from the last to the first.  It moves exactly what flash2
 * moves (so flash2's closed form is its closed form) and computes the same attention in another
 * order of the online softmax (the reference checks it to 1e-12).  It exists to prove that a new
 * schedule is one file plus one registry line: tests/extra/check_one_line.py builds a tree with
 * it and finds it in count, sweep --algo all, optimize's family, report, the binding and the
 * conformance suite. */
#include <math.h>

#include <flashlab/ops.h>

#include "schedules/schedules.h"

extern const fl_schedule fl_sched_flash2;

static fl_status fwd_reversed(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io)
{
    const int64_t d = p->d, Br = b->Br, Bc = b->Bc;
    const double scale = 1.0 / sqrt((double)d);
    int L_t;
    FL_TRY(fl_tensor_add(m, "L", io.q_rows, 1, 4, &L_t));
    fl_buf *Qi, *Oi, *Kj, *Vj, *Sij, *mi, *li;
    FL_TRY(fl_sram_alloc(m, "Q_i", Br, d, &Qi));
    FL_TRY(fl_sram_alloc(m, "O_i", Br, d, &Oi));
    FL_TRY(fl_sram_alloc(m, "K_j", Bc, d, &Kj));
    FL_TRY(fl_sram_alloc(m, "V_j", Bc, d, &Vj));
    FL_TRY(fl_sram_alloc(m, "S_ij", Br, Bc, &Sij));
    FL_TRY(fl_sram_alloc(m, "m_i", Br, 1, &mi));
    FL_TRY(fl_sram_alloc(m, "l_i", Br, 1, &li));
    for (int64_t s = 0; s < io.nseg; s++) {
        fl_seg sg;
        fl_segment_at(io.segs, s, &sg);
        for (int64_t r0 = 0; r0 < sg.Nq; r0 += Br) {
            const int64_t br = fl_min64(Br, sg.Nq - r0);
            int64_t j0, j1;
            fl_mask_block_range(&sg.mask, r0, br, Bc, &j0, &j1);
            if (j0 < j1) FL_TRY(fl_load(m, Qi, io.Q, sg.q0 + r0, 0, br, d));
            fl_op_fill(Oi, br, d, 0.0);
            fl_op_fill(li, br, 1, 0.0);
            fl_op_fill(mi, br, 1, -INFINITY);
            for (int64_t j = j1 - 1; j >= j0; j--) { /* flash2's line 6, last block first */
                const int64_t c0 = j * Bc, bc = fl_min64(Bc, sg.Nk - c0);
                FL_TRY(fl_load(m, Kj, io.K, sg.k0 + c0, 0, bc, d));
                FL_TRY(fl_load(m, Vj, io.V, sg.k0 + c0, 0, bc, d));
                fl_op_matmul(Sij, Qi, Kj, br, bc, d, 1, scale, 0);
                if (fl_mask_tile(&sg.mask, r0, br, c0, bc) == FL_TILE_PARTIAL)
                    fl_tile_mask(Sij, &sg.mask, r0, br, br, c0, bc);
                if (fl_computes(m))
                    for (int64_t r = 0; r < br; r++)
                        fl_osm_step(&mi->x[r], &li->x[r], Oi->x + r * d, d, Sij->x + r * Bc, bc, Vj->x, d,
                                    Sij->x + r * Bc);
            }
            if (fl_computes(m))
                for (int64_t r = 0; r < br; r++) {
                    fl_osm_finish(li->x[r], Oi->x + r * d, d, Oi->x + r * d);
                    mi->x[r] = li->x[r] > 0.0 ? mi->x[r] + log(li->x[r]) : -INFINITY;
                }
            FL_TRY(fl_store(m, Oi, io.O, sg.q0 + r0, 0, br, d));
            FL_TRY(fl_store(m, mi, L_t, sg.q0 + r0, 0, br, 1));
        }
    }
    fl_buf *all[] = {Qi, Oi, Kj, Vj, Sij, mi, li};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) fl_sram_free(m, all[k]);
    return FL_OK;
}

/* Everything else is flash2's, called through its descriptor. */
static fl_status blocks(const fl_problem *p, int bwd, fl_blocks *b) { return fl_sched_flash2.blocks(p, bwd, b); }
static int64_t footprint(const fl_problem *p, int bwd, int64_t G, int64_t Br, int64_t Bc, int64_t Bd)
{
    return fl_sched_flash2.footprint(p, bwd, G, Br, Bc, Bd);
}
static fl_status closed_form(const fl_problem *p, int bwd, const fl_blocks *b, fl_counts *c)
{
    return fl_sched_flash2.closed_form(p, bwd, b, c);
}
static int64_t events_floor(const fl_problem *p, const fl_blocks *b, const fl_blocks *bb)
{
    return fl_sched_flash2.events_floor(p, b, bb);
}
static int64_t terms(int bwd, int dense, int64_t nq, int64_t nk, int64_t Br, int64_t Bc)
{
    return fl_sched_flash2.closed_form_terms(bwd, dense, nq, nk, Br, Bc);
}
static fl_status bwd(fl_machine *m, const fl_problem *p, const fl_blocks *b, fl_qkvo io)
{
    return fl_sched_flash2.bwd(m, p, b, io);
}
static void explain(FILE *out, const fl_problem *p, const fl_blocks *b)
{
    fprintf(out, "  flash2's rule B2, key blocks visited last to first\n");
}

const fl_schedule fl_sched_flash2_rev = {
    .name = "flash2-rev",
    .summary = "test only: flash2 with its key blocks visited last to first",
    .flags = FL_SCHED_IN_ALL,
    .accepts = FL_ACCEPT_NK | FL_ACCEPT_MASK | FL_ACCEPT_HEADS | FL_ACCEPT_VARLEN | FL_ACCEPT_BWD,
    .blocks = blocks,
    .footprint = footprint,
    .closed_form = closed_form,
    .events_floor = events_floor,
    .fwd = fwd_reversed,
    .bwd = bwd,
    .explain = explain,
    .explain_bwd = "flash2's rule B2b",
    .search = {FL_SEARCH_COLS_FREE, FL_SEARCH_ROWS_FREE},
    .closed_form_terms = terms,
};
