/* cmd_l2_launch.c: `flashlab l2 --launch FAMILY ...`: one whole kernel launch over batch x heads
 * in its grid's order through the L2 (launch_model.h, docs/third_party.md §3).  A model, not a
 * measurement: scripts/explain_kernels.py compares it with Nsight Compute. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <flashlab/args.h>
#include <flashlab/launch_model.h>

#include "atomic.h"
#include "cli.h"

static const char *usage =
    "usage: flashlab l2 --launch FAMILY --batch B --heads H --N N --d D --Br BR --Bc BC [options]\n"
    "One kernel launch over B x H heads, its work items in grid order, CTAs in waves of\n"
    "SMs x CTAs-per-SM advancing in lock step, through a fully associative LRU L2 emptied first\n"
    "(ncu --cache-control all): SM<-L2 bytes, L2 lookups, writes, reductions and DRAM reads\n"
    "(docs/third_party.md).\n\n"
    "  --launch F        fwd-q (Q kept, K/V streamed), fwd-qkv (Q re-read per key tile),\n"
    "                    bwd-kv (K/V kept, query tiles streamed, dQ accumulated), bwd-twopass\n"
    "                    (Triton's tutorial), pre (D = rowsum(dO o O)), convert (dQ acc -> dQ),\n"
    "                    combine (split-KV partials -> O)\n"
    "  --batch, --heads  B, H                                                  [1, 1]\n"
    "  --N, --d          sequence length, head dimension\n"
    "  --Br, --Bc        query and key tile rows (bwd-twopass: BLOCK_M1, BLOCK_N1)\n"
    "  --Br2, --Bc2      bwd-twopass: BLOCK_M2, BLOCK_N2                       [Br, Bc]\n"
    "  --causal          the lower triangle (Nq = Nk)\n"
    "  --atomic-dq       bwd-kv: dQ reduced in L2 (atomics), not read by the SM\n"
    "  --zero-dq         pre: also writes the fp32 dQ accumulator = 0\n"
    "  --order O         tile (the tile index fastest in the grid) or head      [tile]\n"
    "  --persistent P    P CTAs take the work items round-robin; 0: one each   [0]\n"
    "  --cluster C       C CTAs share K and V by multicast (forward, no mask)   [1]\n"
    "  --splits S        split-KV: key ranges per query tile (fwd-q, combine)   [1]\n"
    "  --dtype T         fp16, bf16 or fp32                                    [fp16]\n"
    "  --sms S           SMs                                                   [132]\n"
    "  --ctas-per-sm K   CTAs resident per SM (from the launch: ncu's occupancy) [1]\n"
    "  --l2-mb X         L2 capacity in MiB                                    [60]\n"
    "  --sector B        sector bytes                                          [32]\n"
    "  --format F        table or csv                                          [table]\n"
    "  --output FILE     write to FILE (atomically)\n";

int fl_cmd_l2_launch(int argc, char **argv)
{
    fl_launch L = fl_launch_default(FL_LF_FWD_Q, 1, 1, 0, 0, 0, 0);
    int64_t l2_mb = 60, sector = 32, Br2 = 0, Bc2 = 0;
    int csv = 0, k;
    const char *family = NULL, *dtype = "fp16", *output = NULL, *name, *iv, *v = NULL;
    fl_status e = FL_OK;
    fl_args ar;
    fl_args_init(&ar, argc, argv);
    while (!e && (k = fl_args_next(&ar, &name, &iv)) == 1) {
        if (strcmp(name, "--help") == 0) {
            fputs(usage, stdout);
            return 0;
        }
        if (strcmp(name, "--causal") == 0) L.causal = 1;
        else if (strcmp(name, "--atomic-dq") == 0) L.atomic_dq = 1;
        else if (strcmp(name, "--zero-dq") == 0) L.zero_dq = 1;
        else if ((e = fl_args_value(&ar, name, iv, &v))) break;
        else if (strcmp(name, "--launch") == 0) family = v;
        else if (strcmp(name, "--batch") == 0) e = fl_parse_i64(name, v, 1, INT64_C(1) << 20, &L.batch);
        else if (strcmp(name, "--heads") == 0) e = fl_parse_i64(name, v, 1, INT64_C(1) << 20, &L.heads);
        else if (strcmp(name, "--N") == 0) e = fl_parse_i64(name, v, 1, INT64_C(1) << 24, &L.N);
        else if (strcmp(name, "--d") == 0) e = fl_parse_i64(name, v, 1, 1024, &L.d);
        else if (strcmp(name, "--Br") == 0) e = fl_parse_i64(name, v, 1, 4096, &L.Br);
        else if (strcmp(name, "--Bc") == 0) e = fl_parse_i64(name, v, 1, 4096, &L.Bc);
        else if (strcmp(name, "--Br2") == 0) e = fl_parse_i64(name, v, 1, 4096, &Br2);
        else if (strcmp(name, "--Bc2") == 0) e = fl_parse_i64(name, v, 1, 4096, &Bc2);
        else if (strcmp(name, "--persistent") == 0) e = fl_parse_i64(name, v, 0, INT64_C(1) << 20, &L.persistent);
        else if (strcmp(name, "--cluster") == 0) e = fl_parse_i64(name, v, 1, 16, &L.cluster);
        else if (strcmp(name, "--splits") == 0) e = fl_parse_i64(name, v, 1, 4096, &L.splits);
        else if (strcmp(name, "--sms") == 0) e = fl_parse_i64(name, v, 1, 4096, &L.sms);
        else if (strcmp(name, "--ctas-per-sm") == 0) e = fl_parse_i64(name, v, 1, 64, &L.ctas_per_sm);
        else if (strcmp(name, "--l2-mb") == 0) e = fl_parse_i64(name, v, 1, 16384, &l2_mb);
        else if (strcmp(name, "--sector") == 0) e = fl_parse_i64(name, v, 1, 4096, &sector);
        else if (strcmp(name, "--dtype") == 0) dtype = v;
        else if (strcmp(name, "--output") == 0) output = v;
        else if (strcmp(name, "--order") == 0) {
            if (strcmp(v, "tile") == 0) L.order = FL_GO_TILE_FASTEST;
            else if (strcmp(v, "head") == 0) L.order = FL_GO_HEAD_FASTEST;
            else e = fl_fail(FL_EINVAL, "--order: unknown order '%s' (choose tile or head)", v);
        } else if (strcmp(name, "--format") == 0) {
            if (strcmp(v, "csv") == 0) csv = 1;
            else if (strcmp(v, "table") == 0) csv = 0;
            else e = fl_fail(FL_EINVAL, "--format: unknown format '%s' (choose table or csv)", v);
        } else e = fl_fail(FL_EINVAL, "%s: unknown option for l2 --launch (see flashlab l2 --launch x --help)", name);
    }
    if (!e && k < 0) e = FL_EINVAL;
    if (!e) e = fl_launch_family_parse(family, &L.family);
    if (!e && (!L.N || !L.d || !L.Br || !L.Bc)) e = fl_fail(FL_EINVAL, "--N, --d, --Br, --Bc: all four are required");
    if (!e) {
        if (strcmp(dtype, "fp16") == 0 || strcmp(dtype, "bf16") == 0) L.elem_bytes = 2;
        else if (strcmp(dtype, "fp32") == 0) L.elem_bytes = 4;
        else e = fl_fail(FL_EINVAL, "--dtype: unknown type '%s' (choose fp16, bf16 or fp32)", dtype);
    }
    L.Br2 = Br2 ? Br2 : L.Br, L.Bc2 = Bc2 ? Bc2 : L.Bc;
    fl_launch_pred p;
    if (!e) e = fl_launch_predict(&L, l2_mb << 20, sector, &p);
    fl_atomic_file af;
    FILE *out = stdout;
    if (!e && output && !(e = fl_atomic_open(&af, output))) out = af.f;
    if (e) return fl_cli_error(e);
    if (csv) {
        fprintf(out, "# flashlab %s l2 --launch: predicted by the launch model (a model, not a measurement)\n# command: flashlab l2",
                FLASHLAB_VERSION);
        for (int i = 0; i < argc; i++) fprintf(out, " %s", argv[i]);
        fprintf(out, "\n# l2 %" PRId64 " MiB, %" PRId64 "-byte sectors, LRU, emptied first; %" PRId64 " SMs x %" PRId64
                     " CTAs\n", l2_mb, sector, L.sms, L.ctas_per_sm);
        fputs("family,batch,heads,N,d,Br,Bc,causal,ctas,items,waves,sm_read_B,l2_read_B,sm_write_B,red_B,dram_read_B,"
              "writeback_B\n", out);
        fprintf(out, "%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%d,%" PRId64 ",%" PRId64
                     ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 "\n",
                fl_launch_family_name(L.family), L.batch, L.heads, L.N, L.d, L.Br, L.Bc, L.causal, p.ctas, p.items,
                p.waves, p.sm_read_B, p.l2_read_B, p.sm_write_B, p.red_B, p.dram_read_B, p.writeback_B);
    } else {
        fprintf(out, "l2 launch model: %s, B = %" PRId64 ", H = %" PRId64 ", N = %" PRId64 ", d = %" PRId64 ", %" PRId64
                     "x%" PRId64 "%s; %" PRId64 " CTAs for %" PRId64 " work items in %" PRId64 " waves of %" PRId64
                     " x %" PRId64 "; L2 %" PRId64 " MiB\n",
                fl_launch_family_name(L.family), L.batch, L.heads, L.N, L.d, L.Br, L.Bc, L.causal ? ", causal" : "",
                p.ctas, p.items, p.waves, L.sms, L.ctas_per_sm, l2_mb);
        fprintf(out, "SM<-L2 read B %" PRId64 "\nL2 read lookups B %" PRId64 "\nSM->L2 write B %" PRId64
                     "\nL2 reductions B %" PRId64 "\nDRAM read B %" PRId64 "\nwriteback B %" PRId64 "\n",
                p.sm_read_B, p.l2_read_B, p.sm_write_B, p.red_B, p.dram_read_B, p.writeback_B);
        for (int t = 0; t < FL_LT_COUNT; t++)
            if (p.reads[t] || p.writes[t])
                fprintf(out, "  %-6s read %" PRId64 " written %" PRId64 " elements\n", fl_launch_tensor_name(t),
                        p.reads[t], p.writes[t]);
    }
    if (output && (e = fl_atomic_commit(&af))) return fl_cli_error(e);
    return 0;
}
