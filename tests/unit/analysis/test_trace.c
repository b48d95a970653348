/* test_trace.c: the trace writer (include/flashlab/trace.h) and `flashlab trace`.  The trace must agree with
 * the machine: summing its tiles gives every tensor's counts as fl_run reports them, its running
 * counters end at the run's totals, and its tile indices point at the tile that moved. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "run.h"
#include "trace.h"

typedef struct {
    char algo[32], event[16], tensor[16], buf[16];
    long long step, r0, c0, nr, nc, tr, tc, used, cap, treads, twrites, reads, writes;
} row;

static int parse_row(const char *line, row *x)
{
    return sscanf(line, "%31[^,],%lld,%15[^,],%15[^,],%15[^,],%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld",
                  x->algo, &x->step, x->event, x->tensor, x->buf, &x->r0, &x->c0, &x->nr, &x->nc,
                  &x->tr, &x->tc, &x->used, &x->cap, &x->treads, &x->twrites, &x->reads,
                  &x->writes) == 17;
}

/* Runs p with a CSV trace into a temporary file and checks it against fl_run's result. */
static void check_against_machine(fl_problem p)
{
    FILE *f = tmpfile();
    cr_assert(f);
    fl_trace_writer w;
    fl_result r;
    fl_trace_init(&w, f, FL_TRACE_CSV);
    fl_trace_begin_run(&w, fl_algo_name(p.algo), p.M);
    cr_assert_eq(fl_run(&p, FL_COUNT, fl_trace_event, &w, &r), FL_OK, "%s", fl_last_error());
    cr_assert_eq(fl_trace_finish(&w), FL_OK);
    rewind(f);

    char line[512];
    cr_assert(fgets(line, sizeof line, f));
    cr_assert_str_eq(line, "algo,step,event,tensor,buf,r0,c0,nr,nc,tile_r,tile_c,sram_used,sram_capacity,"
                           "tensor_reads,tensor_writes,reads,writes\n");
    long long reads[FL_MAX_TENSORS] = {0}, writes[FL_MAX_TENSORS] = {0}, tiles = 0, n = 0, peak = 0;
    long long buf_rows[64] = {0}, buf_cols[64] = {0};
    char buf_name[64][16];
    int nbuf = 0;
    row x, last = {0};
    while (fgets(line, sizeof line, f)) {
        cr_assert(parse_row(line, &x), "unparsable trace line: %s", line);
        cr_assert_eq(x.step, ++n, "steps count 1, 2, ...");
        cr_assert_str_eq(x.algo, fl_algo_name(p.algo));
        cr_assert_eq(x.cap, p.M);
        cr_assert_leq(x.used, p.M, "SRAM use above M in the trace");
        if (x.used > peak) peak = x.used;
        if (strcmp(x.event, "alloc") == 0) { /* the latest allocation of each buffer name */
            int slot = 0;
            while (slot < nbuf && strcmp(buf_name[slot], x.buf) != 0) slot++;
            cr_assert_lt(slot, 64);
            if (slot == nbuf) nbuf++;
            snprintf(buf_name[slot], 16, "%s", x.buf);
            buf_rows[slot] = x.nr;
            buf_cols[slot] = x.nc;
            cr_assert_eq(x.tr, -1);
            continue;
        }
        if (strcmp(x.event, "free") == 0) continue;
        tiles++;
        int t = -1;
        for (int k = 0; k < r.ntensors; k++)
            if (strcmp(r.t[k].name, x.tensor) == 0) t = k;
        cr_assert_geq(t, 0, "trace names a tensor the run does not have: %s", x.tensor);
        if (strcmp(x.event, "load") == 0) reads[t] += x.nr * x.nc;
        else writes[t] += x.nr * x.nc;
        cr_assert_eq(x.treads, reads[t], "tensor_reads of %s at step %lld", x.tensor, x.step);
        cr_assert_eq(x.twrites, writes[t], "tensor_writes of %s at step %lld", x.tensor, x.step);
        /* the tile index points at the tile: r0 lies in tile tile_r of the buffer's shape */
        int b = -1;
        for (int k = 0; k < nbuf; k++)
            if (strcmp(buf_name[k], x.buf) == 0) b = k;
        cr_assert_geq(b, 0, "a tile moved through buffer %s before it was allocated", x.buf);
        cr_assert_eq(x.tr, x.r0 / buf_rows[b]);
        cr_assert_eq(x.tc, x.c0 / buf_cols[b]);
        last = x;
    }
    fclose(f);
    for (int k = 0; k < r.ntensors; k++) {
        cr_assert_eq(reads[k], r.t[k].reads, "%s: trace reads %lld, machine %lld", r.t[k].name,
                     reads[k], (long long)r.t[k].reads);
        cr_assert_eq(writes[k], r.t[k].writes, "%s: trace writes", r.t[k].name);
    }
    cr_assert_eq(tiles, r.events, "one trace line per tile event");
    cr_assert_eq(last.reads, r.reads);
    cr_assert_eq(last.writes, r.writes);
    cr_assert_eq(peak, r.sram_peak);
}

Test(trace, agrees_with_the_machine_for_every_schedule)
{
    /* sizes that leave partial last blocks (N not a multiple of the blocks) */
    const long long sizes[][3] = {{64, 8, 384}, {100, 16, 1500}, {37, 5, 300}, {130, 8, 3000}};
    for (int a = 0; a < fl_schedule_count(); a++)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            fl_problem p = fl_problem_default();
            p.algo = (fl_algo)a;
            p.N = sizes[s][0];
            p.d = sizes[s][1];
            p.M = sizes[s][2];
            check_against_machine(p);
        }
}

Test(trace, agrees_with_the_machine_for_masks_and_the_backward)
{
    for (int a = 0; a < 3; a++) {
        fl_problem p = fl_problem_default();
        p.algo = (fl_algo)a;
        p.N = 70;
        p.Nk = 150;
        p.d = 8;
        p.M = 3000;
        p.causal = FL_CAUSAL_BOTTOM_RIGHT;
        check_against_machine(p); /* masked tiles skipped: the trace shows only what moved */
        p.causal = FL_CAUSAL_NONE;
        p.window_left = 20;
        p.window_right = 3;
        check_against_machine(p);
        p.window_left = p.window_right = -1;
        p.Nk = 0;
        p.pass = FL_PASS_BWD; /* counters restart at the backward: its inputs are in HBM */
        check_against_machine(p);
        p.pass = FL_PASS_FWD_BWD;
        check_against_machine(p);
    }
}

Test(trace, jsonl_has_one_object_per_event_with_the_same_keys)
{
    FILE *f = tmpfile();
    fl_trace_writer w;
    fl_result r;
    fl_problem p = fl_problem_default();
    p.algo = FL_ALGO_FLASH1;
    p.N = 50;
    p.d = 6;
    p.M = 400;
    fl_trace_init(&w, f, FL_TRACE_JSONL);
    fl_trace_begin_run(&w, "flash1", p.M);
    cr_assert_eq(fl_run(&p, FL_COMPUTE, fl_trace_event, &w, &r), FL_OK, "%s", fl_last_error());
    rewind(f);
    char line[1024];
    long long lines = 0, nulls = 0;
    while (fgets(line, sizeof line, f)) {
        lines++;
        cr_assert_eq(line[0], '{');
        cr_assert(strstr(line, "}\n"));
        const char *keys[] = {"\"algo\": \"flash1\"", "\"step\": ", "\"event\": ", "\"tensor\": ",
                              "\"buf\": ", "\"tile_r\": ", "\"sram_used\": ", "\"tensor_reads\": ",
                              "\"reads\": ", "\"writes\": "};
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            cr_assert(strstr(line, keys[k]), "missing %s in %s", keys[k], line);
        if (strstr(line, "\"tensor\": null")) nulls++;
    }
    fclose(f);
    cr_assert_eq(lines - nulls, r.events, "tile events carry a tensor");
    cr_assert_eq(nulls, 2 * 11, "flash1 allocates and frees 11 buffers");
    cr_assert_lt(r.rel_err, 1e-12, "a traced compute run is still exact");
}

Test(trace, format_names)
{
    fl_trace_format f;
    cr_assert_eq(fl_trace_format_parse("csv", &f), FL_OK);
    cr_assert_eq(f, FL_TRACE_CSV);
    cr_assert_eq(fl_trace_format_parse("jsonl", &f), FL_OK);
    cr_assert_eq(f, FL_TRACE_JSONL);
    cr_assert_eq(fl_trace_format_parse("xml", &f), FL_EINVAL);
    cr_assert(strstr(fl_last_error_raw(), "{format}"));
    /* JSON lines are not one JSON document: "json" is not a name for them */
    cr_assert_eq(fl_trace_format_parse("json", &f), FL_EINVAL);
    cr_assert_str_eq(fl_last_error(), "format: unknown trace format 'json' (choose csv or jsonl)");
}
