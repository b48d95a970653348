/* abi.c: prints, as JSON, the size, the field offsets and the field sizes of every C structure
 * the binding (python/flashlab/) mirrors with ctypes.  `python3 -m flashlab.abi <this program>`
 * compares them (ctest: notebooks_abi), so a field added to a header, or one whose type changes,
 * cannot silently shift the binding's view.  The function signatures are checked by compiling the
 * binding's prototypes against the headers (python3 -m flashlab.abi ... --cc). */
#include <stddef.h>
#include <stdio.h>

#include "machine.h"
#include "problem.h"
#include "run.h"
#include "blocksparse_mask.h"
#include "decode.h"
#include "masks.h"
#include "schedule.h"

static int first;
#define BEGIN(T) (printf("%s\"%s\": {\"sizeof\": %zu", first++ ? ", " : "", #T, sizeof(T)))
#define FIELD(T, f) \
    printf(", \"%s\": %zu, \"sizeof %s\": %zu", #f, offsetof(T, f), #f, sizeof(((T *)0)->f))
#define END() fputs("}", stdout)

int main(void)
{
    fputs("{", stdout);
    /* the structures whose fields are one list (fields.h): from the list itself */
#define FIELD_OF_PROBLEM(kind, type, name, dflt, what) FIELD(fl_problem, name);
#define FIELD_OF_KV_CACHE(kind, type, name, dflt, what) FIELD(fl_kv_cache, name);
#define FIELD_OF_BLOCK_SPARSITY(kind, type, name, dflt, what) FIELD(fl_block_sparsity, name);
    BEGIN(fl_problem);
    FL_PROBLEM_FIELDS(FIELD_OF_PROBLEM)
    END();
    BEGIN(fl_kv_cache);
    FL_KV_CACHE_FIELDS(FIELD_OF_KV_CACHE)
    END();
    BEGIN(fl_block_sparsity);
    FL_BLOCK_SPARSITY_FIELDS(FIELD_OF_BLOCK_SPARSITY)
    END();
    BEGIN(fl_blocks);
    FIELD(fl_blocks, Br); FIELD(fl_blocks, Bc); FIELD(fl_blocks, Bd); FIELD(fl_blocks, footprint);
    FIELD(fl_blocks, overridden); FIELD(fl_blocks, paper_Br); FIELD(fl_blocks, paper_Bc);
    FIELD(fl_blocks, paper_footprint);
    END();
    BEGIN(fl_counts);
    FIELD(fl_counts, reads); FIELD(fl_counts, writes); FIELD(fl_counts, total);
    FIELD(fl_counts, events); FIELD(fl_counts, sram_peak);
    END();
    BEGIN(fl_tensor_counts);
    FIELD(fl_tensor_counts, name); FIELD(fl_tensor_counts, reads); FIELD(fl_tensor_counts, writes);
    FIELD(fl_tensor_counts, elem_bytes);
    END();
    BEGIN(fl_result);
    FIELD(fl_result, p); FIELD(fl_result, b); FIELD(fl_result, b_bwd); FIELD(fl_result, ntensors);
    FIELD(fl_result, t);
    FIELD(fl_result, reads); FIELD(fl_result, writes); FIELD(fl_result, total);
    FIELD(fl_result, bytes); FIELD(fl_result, sram_peak); FIELD(fl_result, events);
    FIELD(fl_result, closed); FIELD(fl_result, fwd_total); FIELD(fl_result, bwd_total);
    FIELD(fl_result, segments); FIELD(fl_result, computed); FIELD(fl_result, max_abs_err);
    FIELD(fl_result, rel_err); FIELD(fl_result, lse_rel_err); FIELD(fl_result, dq_rel_err);
    FIELD(fl_result, dk_rel_err); FIELD(fl_result, dv_rel_err); FIELD(fl_result, dsink_rel_err);
    END();
    BEGIN(fl_event);
    FIELD(fl_event, kind); FIELD(fl_event, tensor); FIELD(fl_event, buf); FIELD(fl_event, r0);
    FIELD(fl_event, c0); FIELD(fl_event, nr); FIELD(fl_event, nc); FIELD(fl_event, sram_used);
    FIELD(fl_event, reads); FIELD(fl_event, writes);
    END();
    BEGIN(fl_tensor);
    FIELD(fl_tensor, name); FIELD(fl_tensor, rows); FIELD(fl_tensor, cols);
    FIELD(fl_tensor, elem_bytes); FIELD(fl_tensor, data); FIELD(fl_tensor, reads);
    FIELD(fl_tensor, writes);
    END();
    BEGIN(fl_buf);
    FIELD(fl_buf, name); FIELD(fl_buf, rows); FIELD(fl_buf, cols); FIELD(fl_buf, x);
    FIELD(fl_buf, live);
    END();
    BEGIN(fl_mask);
    FIELD(fl_mask, Nq); FIELD(fl_mask, Nk); FIELD(fl_mask, causal); FIELD(fl_mask, left);
    FIELD(fl_mask, right); FIELD(fl_mask, has_a); FIELD(fl_mask, has_b); FIELD(fl_mask, a);
    FIELD(fl_mask, b);
    END();
    /* the constants the binding restates: a pseudo-structure of their values */
    printf(", \"constants\": {\"FL_ALGO_MAX\": %u, \"FL_SCHED_STACKS_GROUP\": %u}", (unsigned)FL_ALGO_MAX,
           (unsigned)FL_SCHED_STACKS_GROUP);
    puts("}");
    return 0;
}
