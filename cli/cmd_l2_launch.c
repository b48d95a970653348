/* cmd_l2_launch.c: `flashlab l2 --launch FAMILY ...`: one whole kernel launch over batch x heads
 * in its grid's order through the L2 (launch_model.h, docs/third_party.md §3).  A model, not a
 * measurement: scripts/explain_kernels.py compares it with Nsight Compute. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include <flashlab/l2_parts.h>
#include <flashlab/launch_model.h>

#include <flashlab/output.h>
#include <flashlab/presets.h>
#include <flashlab/run.h>
#include <flashlab/version.h>
#include "cli.h"

static const char *usage =
    "usage: flashlab l2 --launch FAMILY --batch B --heads H --N N --d D --Br BR --Bc BC [options]\n"
    "One kernel launch over B x H heads, its work items in grid order, CTAs in waves of\n"
    "SMs x CTAs-per-SM advancing in lock step, through a fully associative LRU L2 emptied first\n"
    "(ncu --cache-control all): SM<-L2 bytes, L2 lookups, writes, reductions, DRAM reads and\n"
    "sectors crossing between the L2's partitions\n"
    "(docs/third_party.md).\n\n"
    "  --launch F        fwd-q (Q kept, K/V streamed), fwd-qkv (Q re-read per key tile),\n"
    "                    bwd-kv (K/V kept, query tiles streamed, dQ accumulated), bwd-twopass\n"
    "                    (Triton's tutorial), bwd-memeff (CUTLASS's: D per CTA, operands re-read\n"
    "                    per product), pre (D = rowsum(dO o O)), convert (dQ acc -> dQ),\n"
    "                    combine (split-KV partials -> O)\n"
    "  --batch, --heads  B, H                                                  [1, 1]\n"
    "  --kv-heads K      GQA: K/V heads, a divisor of H; query head h reads those of\n"
    "                    K/V head h / (H / K); dK, dV written per query head  [H]\n"
    "  --N, --d          sequence length, head dimension\n"
    "  --Br, --Bc        query and key tile rows (bwd-twopass: BLOCK_M1, BLOCK_N1)\n"
    "  --Br2, --Bc2      bwd-twopass: BLOCK_M2, BLOCK_N2                       [Br, Bc]\n"
    "  --causal          the lower triangle (Nq = Nk)\n"
    "  --atomic-dq       bwd-kv: dQ reduced in L2 (atomics), not read by the SM\n"
    "  --zero-dq         pre: also writes the fp32 dQ accumulator = 0\n"
    "  --order O         tile (the tile index fastest in the grid) or head      [tile]\n"
    "  --persistent P    P CTAs, each taking the next work item in grid order\n"
    "                    when its own ends (a tile scheduler); 0: a CTA each   [0]\n"
    "  --static          with --persistent: CTA b takes items b, b + P, ...\n"
    "                    (a static round robin, as flashlab's version 12)\n"
    "  --longest-first   forward, --causal: a head's query tiles from the last\n"
    "                    (the longest) to the first (flashlab's versions 10, 12)\n"
    "  --pairs           fwd-q, --causal: a work item is the tiles at positions\n"
    "                    p and Tr-1-p of a head, longest first (version 12)\n"
    "  --cluster C       C CTAs share K and V by multicast (forward, no mask)   [1]\n"
    "  --splits S        split-KV: key ranges per query tile (fwd-q, combine)   [1]\n"
    "  --dtype T         fp16, bf16 or fp32                                    [fp16]\n"
    "  --gpu G           a GPU preset (flashlab gpus): its SMs, L2 and partitions,\n"
    "                    each overridden by --sms, --l2-mb, --l2-partitions   [h200]\n"
    "  --sms S           SMs                                            [--gpu's: 132]\n"
    "  --ctas-per-sm K   CTAs resident per SM (from the launch: ncu's occupancy) [1]\n"
    "  --cta-timing FILE measured: each work item's SM, start and end (CSV of\n"
    "                    scripts/triton_cta_timing.py): the walk runs the items when they\n"
    "                    ran, not in lock step (rule S2 of docs/third_party.md)\n"
    "  --l2-mb X         L2 capacity in MiB                              [--gpu's: 60]\n"
    "  --l2-partitions P 2: two halves, each SM's reads copied into its own [--gpu's: 2]\n"
    "                    (measured on the H200: docs/l2_model.md); 1: one LRU\n"
    "  --sector B        sector bytes                                          [32]\n"
    "  --format F        table or csv                                          [table]\n"
    "  --max-work W      refuse a walk estimated at more than W steps (sectors it may\n"
    "                    touch, weighted by the family's cost; 0: no limit)    [3e9]\n"
    "  --max-memory MB   refuse an L2 model of more than MB MiB                   [2048]\n"
    "  --output FILE     write to FILE (atomically)\n";

/* An upper bound on the sectors a launch's walk touches, saturating: the tile rows each family
 * reads and writes with no mask (docs/third_party.md §3; a mask only skips), each row of d
 * elements of at most 4 bytes touching at most ceil(4 d / sector) + 1 sectors.  Measured on the
 * build machine with two L2 partitions: about 4 ns a bounded sector where CTAs read a tile one
 * after another (skipped repeats: fwd-q at B x H = 32, N = 16384, d = 128, 128x64, bound 2.3e9, in
 * 9.6 s), about 70 ns where they do not (bwd-memeff, whose CTAs start at different query tiles:
 * B x H = 128, N = 1024, d = 64, bound 2.7e8, in 18 s); family_weight below turns the bound
 * into steps of about the same cost. */
/* A step of the walk is about 10 ns here; a bounded sector costs the family's weight in steps,
 * measured on the 2-core build machine (ns a bounded sector at B x H = 64, N = 1024, d = 64,
 * 64x64, CPU time: fwd-q 11.5, fwd-qkv 19.4, bwd-kv 8.2, bwd-twopass 10.8, bwd-memeff 55, whose
 * CTAs start at different query tiles so that few reads repeat; pre, convert and combine, whose
 * walks are short, about 0.1 s whatever their bound).  The default, 3e9 steps, is about 30 s. */
#define L2L_STEPS_PER_SECOND 1e8
#define L2L_MAX_WORK INT64_C(3000000000)
static int64_t family_weight(fl_launch_family f)
{
    switch (f) {
    case FL_LF_FWD_QKV: return 2;
    case FL_LF_BWD_MEMEFF: return 6;
    default: return 1;
    }
}

static int64_t work_bound(const fl_launch *L, int64_t sector)
{
    const int64_t N = L->N, Tr = fl_cdiv(N, L->Br), Tc = fl_cdiv(N, L->Bc), S = L->splits;
    const int64_t Br2 = L->Br2 ? L->Br2 : L->Br, Tr2 = fl_cdiv(N, Br2);
    int64_t bh, rows = 0, t = 0;
    if (!fl_mul_ok(L->batch, L->heads, &bh)) return INT64_MAX;
    int ok = 1;
#define ADD(a, b) (ok = ok && fl_mul_ok((a), (b), &t) && fl_add_ok(rows, t, &rows))
    switch (L->family) {
    case FL_LF_FWD_Q: ADD(Tr, 2 * N + S * (2 * L->Br + 1)); break;                  /* K, V; Q, O, L per split */
    case FL_LF_FWD_QKV: ADD(Tr, 2 * N + L->Br + 1), ADD(Tr * Tc, L->Br); break;     /* Q once per key tile */
    case FL_LF_BWD_KV: ADD(Tc, 4 * L->Bc + 8 * N); break;                          /* Q, dO, L, D, dQ r+w */
    case FL_LF_BWD_TWOPASS: ADD(Tc, 4 * L->Bc + 4 * N), ADD(Tr2, 3 * Br2 + 2 * N + 2 * Br2); break;
    case FL_LF_BWD_MEMEFF: ADD(Tc, 3 * N + 4 * L->Bc), ADD(Tc, Tr * (8 * L->Br + 3 * L->Bc)); break; /* D pass; pairs */
    case FL_LF_PRE: ADD(N, 4); break;
    case FL_LF_CONVERT: ADD(N, 2); break;
    case FL_LF_COMBINE: ADD(N, 2 * S + 2); break;
    }
#undef ADD
    const int64_t per_row = fl_cdiv(L->d * 4, sector) + 1;
    if (!ok || !fl_mul_ok(rows, bh, &t) || !fl_mul_ok(t, per_row, &t)) return INT64_MAX;
    return t;
}

int fl_cmd_l2_launch(int argc, char **argv)
{
    fl_launch L = fl_launch_default(FL_LF_FWD_Q, 1, 1, 0, 0, 0, 0);
    int64_t l2_mb = 0, parts = 0, sms = 0, sector = 32, Br2 = 0, Bc2 = 0, max_work = L2L_MAX_WORK, max_mb = 2048;
    int csv = 0, k;
    const fl_sram_preset *gpu = NULL;
    const char *family = NULL, *dtype = "fp16", *output = NULL, *timing = NULL, *name, *iv, *v = NULL;
    fl_status e = FL_OK;
    fl_args ar;
    fl_args_init(&ar, argc, argv);
    while (!e && (k = fl_args_next_option(&ar, &name, &iv)) == 1) {
        const int flag = !strcmp(name, "--causal") || !strcmp(name, "--atomic-dq") || !strcmp(name, "--zero-dq") ||
                         !strcmp(name, "--static") || !strcmp(name, "--longest-first") || !strcmp(name, "--pairs");
        if (flag && (e = fl_args_flag(name, iv))) break; /* a flag takes no =value */
        if (strcmp(name, "--causal") == 0) L.causal = 1;
        else if (strcmp(name, "--atomic-dq") == 0) L.atomic_dq = 1;
        else if (strcmp(name, "--zero-dq") == 0) L.zero_dq = 1;
        else if (strcmp(name, "--static") == 0) L.static_rr = 1;
        else if (strcmp(name, "--longest-first") == 0) L.longest_first = 1;
        else if (strcmp(name, "--pairs") == 0) L.pairs = L.longest_first = 1;
        else if ((e = fl_args_value(&ar, name, iv, &v))) break;
        else if (strcmp(name, "--max-work") == 0) e = fl_parse_limit(name, v, 0, INT64_MAX, &max_work);
        else if (strcmp(name, "--max-memory") == 0) e = fl_parse_i64(name, v, 0, INT64_C(1) << 40, &max_mb);
        else if (strcmp(name, "--launch") == 0) e = fl_launch_family_parse(v, &L.family), family = v;
        else if (strcmp(name, "--batch") == 0) e = fl_parse_i64(name, v, 1, INT64_C(1) << 20, &L.batch);
        else if (strcmp(name, "--heads") == 0) e = fl_parse_i64(name, v, 1, INT64_C(1) << 20, &L.heads);
        else if (strcmp(name, "--kv-heads") == 0) e = fl_parse_i64(name, v, 1, INT64_C(1) << 20, &L.kv_heads);
        else if (strcmp(name, "--gpu") == 0) e = fl_gpu_preset_find(v, &gpu);
        else if (strcmp(name, "--N") == 0) e = fl_parse_i64(name, v, 1, INT64_C(1) << 24, &L.N);
        else if (strcmp(name, "--d") == 0) e = fl_parse_i64(name, v, 1, 1024, &L.d);
        else if (strcmp(name, "--Br") == 0) e = fl_parse_i64(name, v, 1, 4096, &L.Br);
        else if (strcmp(name, "--Bc") == 0) e = fl_parse_i64(name, v, 1, 4096, &L.Bc);
        else if (strcmp(name, "--Br2") == 0) e = fl_parse_i64(name, v, 1, 4096, &Br2);
        else if (strcmp(name, "--Bc2") == 0) e = fl_parse_i64(name, v, 1, 4096, &Bc2);
        else if (strcmp(name, "--persistent") == 0) e = fl_parse_i64(name, v, 0, INT64_C(1) << 20, &L.persistent);
        else if (strcmp(name, "--cluster") == 0) e = fl_parse_i64(name, v, 1, 16, &L.cluster);
        else if (strcmp(name, "--splits") == 0) e = fl_parse_i64(name, v, 1, 4096, &L.splits);
        else if (strcmp(name, "--sms") == 0) e = fl_parse_i64(name, v, 1, 4096, &sms);
        else if (strcmp(name, "--ctas-per-sm") == 0) e = fl_parse_i64(name, v, 1, 64, &L.ctas_per_sm);
        else if (strcmp(name, "--l2-mb") == 0) e = fl_parse_i64(name, v, 1, 16384, &l2_mb);
        else if (strcmp(name, "--l2-partitions") == 0) e = fl_parse_i64(name, v, 1, 2, &parts);
        else if (strcmp(name, "--sector") == 0) e = fl_parse_i64(name, v, 1, 4096, &sector);
        else if (strcmp(name, "--dtype") == 0) {
            dtype = v; /* every value checked, not only the last */
            if (strcmp(v, "fp16") && strcmp(v, "bf16") && strcmp(v, "fp32"))
                e = fl_fail(FL_EINVAL, "--dtype: unknown type '%s' (choose fp16, bf16 or fp32)", v);
        }
        else if (strcmp(name, "--output") == 0) output = v;
        else if (strcmp(name, "--cta-timing") == 0) timing = v;
        else if (strcmp(name, "--order") == 0) {
            if (strcmp(v, "tile") == 0) L.order = FL_GO_TILE_FASTEST;
            else if (strcmp(v, "head") == 0) L.order = FL_GO_HEAD_FASTEST;
            else e = fl_fail(FL_EINVAL, "--order: unknown order '%s' (choose tile or head)", v);
        } else if (strcmp(name, "--format") == 0) e = fl_parse_table_or_csv(v, &csv);
        else e = fl_fail(FL_EINVAL, "%s: unknown option for l2 --launch (see flashlab l2 --launch x --help)", name);
    }
    if (k == FL_ARGS_HELP) {
        fputs(usage, stdout);
        return 0;
    }
    if (!e && k < 0) e = FL_EINVAL;
    if (!e) e = fl_launch_family_parse(family, &L.family);
    if (!e && (!L.N || !L.d || !L.Br || !L.Bc)) e = fl_fail(FL_EINVAL, "--N, --d, --Br, --Bc: all four are required");
    if (!e) {
        if (strcmp(dtype, "fp16") == 0 || strcmp(dtype, "bf16") == 0) L.elem_bytes = 2;
        else if (strcmp(dtype, "fp32") == 0) L.elem_bytes = 4;
        else e = fl_fail(FL_EINVAL, "--dtype: unknown type '%s' (choose fp16, bf16 or fp32)", dtype);
    }
    const int gpu_given = gpu != NULL;
    if (!e && !gpu) e = fl_gpu_preset_find("h200", &gpu); /* the GPU measured (presets.h) */
    if (e) return fl_cli_error(e);
    /* the preset's figures where no option gives them */
    L.sms = sms ? sms : gpu->sms, l2_mb = l2_mb ? l2_mb : gpu->l2_mib, parts = parts ? parts : gpu->l2_parts;
    L.Br2 = Br2 ? Br2 : L.Br, L.Bc2 = Bc2 ? Bc2 : L.Bc, L.l2_parts = (int)parts;
    int64_t mem, work = 0;
    if (!e) e = fl_l2p_memory(l2_mb << 20, sector, L.l2_parts, &mem);
    if (!e && max_mb > 0 && mem > max_mb * (INT64_C(1) << 20))
        e = fl_fail(FL_EINVAL, "--max-memory: an L2 of %lld MiB in %lld-byte sectors takes %lld MiB to model, more "
                               "than the limit %lld MiB; raise --max-memory, or use larger --sector or smaller --l2-mb",
                    (long long)l2_mb, (long long)sector, (long long)((mem + (1 << 20) - 1) >> 20), (long long)max_mb);
    int64_t steps = 0;
    if (!e && max_work > 0) {
        work = work_bound(&L, sector);
        if (!fl_mul_ok(work, family_weight(L.family), &steps)) steps = INT64_MAX;
    }
    if (!e && max_work > 0 && steps > max_work)
        e = fl_fail(FL_EINVAL, "--max-work: l2 --launch %s over %lld x %lld heads at N = %lld, d = %lld with %lldx%lld "
                               "tiles may touch %s%lld L2 sectors, %lld step%s each (%s), over the limit of %lld "
                               "steps; raise --max-work, or use fewer heads, a smaller N or larger tiles",
                    fl_launch_family_name(L.family), (long long)L.batch, (long long)L.heads, (long long)L.N,
                    (long long)L.d, (long long)L.Br, (long long)L.Bc, work == INT64_MAX ? "more than " : "up to ",
                    (long long)work, (long long)family_weight(L.family), family_weight(L.family) > 1 ? "s" : "",
                    fl_seconds_of(steps, L2L_STEPS_PER_SECOND), (long long)max_work);
    fl_cta_time *times = NULL;
    if (!e && timing) { /* read whole before the output is opened: a bad file leaves nothing behind */
        FILE *in;
        if (!(e = fl_cli_open_input(timing, "--cta-timing", &in))) {
            e = fl_cta_timing_read(in, fl_shown(timing), "--cta-timing", &times, &L.timing_n);
            fl_cli_close_input(in);
            L.timing = times;
        }
    }
    fl_output *o = NULL;
    FILE *out = stdout;
    if (!e && output && !(e = fl_output_open(output, "--output", &o))) out = fl_output_file(o); /* before the work */
    fl_launch_pred p;
    if (!e) e = fl_launch_predict(&L, l2_mb << 20, sector, &p);
    free(times);
    if (e) {
        fl_output_abort(o);
        return fl_cli_error(e);
    }
    char gpu_note[200] = ""; /* where the machine's figures come from, when a preset was asked for */
    if (gpu_given)
        snprintf(gpu_note, sizeof gpu_note, "; GPU %s (%s figures)", gpu->name, gpu->checked ? "measured" : "published");
    if (csv) {
        fprintf(out, "# flashlab %s l2 --launch: predicted by the launch model (a model, not a measurement)\n",
                FLASHLAB_VERSION);
        fl_cli_command_comment(out, "l2", argc, argv);
        fprintf(out, "# l2 %" PRId64 " MiB in %" PRId64 " LRU partition%s, %" PRId64 "-byte sectors, emptied first; %" PRId64
                     " SMs x %" PRId64 " CTAs%s%s\n", l2_mb, parts, parts > 1 ? "s" : "", sector, L.sms, L.ctas_per_sm,
                timing ? "; work items run when --cta-timing says (rule S2)" : "", gpu_note);
        fputs("family,batch,heads,N,d,Br,Bc,causal,ctas,items,waves,sm_read_B,l2_read_B,sm_write_B,red_B,dram_read_B,"
              "fabric_B,writeback_B,read_miss_B,fabric_read_miss_B,red_miss_B\n", out);
        fprintf(out, "%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%d,%" PRId64 ",%" PRId64
                     ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
                     ",%" PRId64 ",%" PRId64 ",%" PRId64 "\n",
                fl_launch_family_name(L.family), L.batch, L.heads, L.N, L.d, L.Br, L.Bc, L.causal, p.ctas, p.items,
                p.waves, p.sm_read_B, p.l2_read_B, p.sm_write_B, p.red_B, p.dram_read_B, p.fabric_B, p.writeback_B,
                p.read_miss_B, p.fabric_read_miss_B, p.red_miss_B);
    } else {
        fprintf(out, "l2 launch model: %s, B = %" PRId64 ", H = %" PRId64 ", N = %" PRId64 ", d = %" PRId64 ", %" PRId64
                     "x%" PRId64 "%s; %" PRId64 " CTAs for %" PRId64 " work items in %" PRId64 " waves of %" PRId64
                     " x %" PRId64 "; L2 %" PRId64 " MiB in %" PRId64 " partition%s%s%s\n",
                fl_launch_family_name(L.family), L.batch, L.heads, L.N, L.d, L.Br, L.Bc, L.causal ? ", causal" : "",
                p.ctas, p.items, p.waves, L.sms, L.ctas_per_sm, l2_mb, parts, parts > 1 ? "s" : "",
                timing ? "; work items run when --cta-timing says (rule S2), not in waves" : "", gpu_note);
        fprintf(out, "SM<-L2 read B %" PRId64 "\nL2 read lookups B %" PRId64 "\nSM->L2 write B %" PRId64
                     "\nL2 reductions B %" PRId64 "\nDRAM read B %" PRId64 "\nfabric B %" PRId64 "\nwriteback B %" PRId64
                     "\nlookups that missed B: reads %" PRId64 " (of which homed across the fabric and missed there too %"
                     PRId64 "), reductions %" PRId64 "\n",
                p.sm_read_B, p.l2_read_B, p.sm_write_B, p.red_B, p.dram_read_B, p.fabric_B, p.writeback_B,
                p.read_miss_B, p.fabric_read_miss_B, p.red_miss_B);
        for (int t = 0; t < FL_LT_COUNT; t++)
            if (p.reads[t] || p.writes[t])
                fprintf(out, "  %-6s read %" PRId64 " written %" PRId64 " elements\n", fl_launch_tensor_name(t),
                        p.reads[t], p.writes[t]);
    }
    if (output && (e = fl_output_commit(o))) return fl_cli_error(e);
    return 0;
}
