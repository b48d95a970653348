/* cmd_l2.c: `flashlab l2`: a schedule's kernels (forward or backward) in GPU order through an L2 of given
 * capacity: the DRAM bytes they read, beside the SM<->L2 bytes and the model's HBM bytes
 * (docs/l2_model.md).  A model, not a measurement. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include <flashlab/l2.h>
#include <flashlab/l2_predict.h>
#include <flashlab/output.h>
#include <flashlab/run.h>
#include <flashlab/version.h>

static const char *usage =
    "usage: flashlab l2 --algo A --N N --d D --Br BR --Bc BC [options]\n"
    "Runs the kernels of versions 1-6 of kernels/ladder/ (one head, no mask) in GPU order - CTAs in\n"
    "launch order, in waves of SMs x CTAs-per-SM, their tile accesses interleaved - through a\n"
    "fully associative LRU L2 of 32-byte sectors, and prints the DRAM bytes read per kernel beside\n"
    "the SM<->L2 bytes and the two-level model's HBM bytes (docs/l2_model.md).\n\n"
    "  --algo A          standard, flash1 or flash2\n"
    "  --N, --d          sequence length, head dimension\n"
    "  --Br, --Bc        the kernel's tile sizes\n"
    "  --pass P          fwd, or bwd (the backward alone)                     [fwd]\n"
    "  --dtype T         fp16, bf16 or fp32                                  [fp16]\n"
    "  --l2-mb X         L2 capacity in MiB                                  [60]\n"
    "  --sector B        sector bytes                                        [32]\n"
    "  --sms S           SMs                                                 [132]\n"
    "  --ctas-per-sm K   CTAs resident per SM, every kernel; 0 = occupancy   [0]\n"
    "  --no-flush        keep L2 between kernels (default: empty before each, as ncu --cache-control all)\n"
    "  --format F        table or csv                                        [table]\n"
    "  --output FILE     write to FILE (atomically)\n"
    "  --max-work W      refuse predictions of more than W steps of work: the GPU-order walk's\n"
    "                    CTA slots plus the L2's sector lookups (0: no limit) [3e8]\n"
    "  --max-memory MB   refuse an L2 whose model needs more than MB MiB (24 bytes a sector and\n"
    "                    its hash table; 0: no limit)                        [2048]\n"
    "  --help            this text\n";

/* Default limits: 3 x 10^8 steps of work (every row of scripts/l2_validation.sh is below it;
 * 80 to 150 ns a step on the machine of fuzz/RESULTS.md); 2 GiB of cache model. */
#define L2_MAX_WORK INT64_C(300000000)
#define L2_MAX_MEMORY_MB INT64_C(2048)

/* The model's counts for the same problem (M = the kernel's footprint), and a check that the GPU
 * order moved the same elements of every tensor. */
static fl_status model(const fl_gpu_sched *s, const fl_l2_pred *pr, int64_t *read_B, int64_t *write_B)
{
    fl_problem p = fl_problem_default();
    p.algo = s->algo, p.N = s->N, p.d = s->d, p.Br = s->Br, p.Bc = s->Bc, p.M = s->M_eff;
    p.elem_bytes = s->elem_bytes;
    p.pass = s->bwd ? FL_PASS_BWD : FL_PASS_FWD;
    fl_result r;
    FL_TRY(fl_run(&p, FL_COUNT, NULL, NULL, &r));
    *read_B = *write_B = 0;
    for (int i = 0; i < r.ntensors; i++) {
        *read_B += r.t[i].reads * r.t[i].elem_bytes, *write_B += r.t[i].writes * r.t[i].elem_bytes;
        int t = -1;
        for (int g = 0; g < FL_GT_COUNT; g++)
            if (s->t[g].used && strcmp(s->t[g].name, r.t[i].name) == 0) t = g;
        const int64_t gr = t < 0 ? 0 : pr->total.reads[t], gw = t < 0 ? 0 : pr->total.writes[t];
        if (gr != r.t[i].reads || gw != r.t[i].writes)
            return fl_fail(FL_EBOUNDS, "l2: GPU order moved %" PRId64 "/%" PRId64 " elements of %s, the model %" PRId64
                                       "/%" PRId64 " (a gpu_order bug)", gr, gw, r.t[i].name, r.t[i].reads, r.t[i].writes);
    }
    return FL_OK;
}

/* The limits, before any work: the cache model's memory, then the walk and its lookups. */
static fl_status limits(const fl_gpu_sched *s, int64_t l2_mb, int64_t sector, int64_t max_work, int64_t max_mb)
{
    int64_t bytes, steps, lookups;
    FL_TRY(fl_l2_memory(l2_mb << 20, sector, &bytes));
    if (max_mb > 0 && bytes > max_mb * (INT64_C(1) << 20))
        return fl_fail(FL_EINVAL,
                       "--max-memory: an L2 of %lld MiB in %lld-byte sectors is %lld sectors, whose model takes "
                       "%lld MiB, more than the limit %lld MiB; raise --max-memory, or use larger --sector or "
                       "smaller --l2-mb",
                       (long long)l2_mb, (long long)sector, (long long)((l2_mb << 20) / sector),
                       (long long)((bytes + (1 << 20) - 1) >> 20), (long long)max_mb);
    if (fl_l2_work(s, l2_mb << 20, sector, max_work, &steps, &lookups)) {
        char what[160] = "";
        if (lookups) snprintf(what, sizeof what, " and looks up more than %lld L2 sectors", (long long)lookups);
        return fl_fail(FL_EINVAL,
                       "--max-work: l2 of %s %s at N = %lld, d = %lld with %lldx%lld tiles walks %lld CTA slots "
                       "in GPU order%s: over the limit of %lld in all; raise --max-work, or use a smaller N "
                       "or larger tiles",
                       fl_algo_name(s->algo), s->bwd ? "bwd" : "fwd", (long long)s->N, (long long)s->d,
                       (long long)s->Br, (long long)s->Bc, (long long)steps, what, (long long)max_work);
    }
    return FL_OK;
}

int fl_cmd_l2(int argc, char **argv)
{
    for (int i = 0; i < argc; i++) /* a whole launch over batch x heads: cmd_l2_launch.c */
        if (strcmp(argv[i], "--launch") == 0 || strncmp(argv[i], "--launch=", 9) == 0) return fl_cmd_l2_launch(argc, argv);
    fl_gpu_machine mc = fl_gpu_machine_h200();
    int64_t N = 0, d = 0, Br = 0, Bc = 0, l2_mb = 60, sector = 32, max_work = L2_MAX_WORK,
            max_mb = L2_MAX_MEMORY_MB;
    int eb = 2, csv = 0, flush = 1, bwd = 0, k;
    const char *algo = NULL, *dtype = "fp16", *output = NULL, *name, *iv, *v = NULL;
    fl_algo a = fl_algo_with_role(FL_SCHED_DEFAULT);
    fl_status e = FL_OK;
    fl_args ar;
    fl_args_init(&ar, argc, argv);
    while (!e && (k = fl_args_next_option(&ar, &name, &iv)) == 1) {
        if (fl_args_is_flag(name, iv, "--no-flush", &e)) {
            flush = 0;
            continue;
        }
        if ((e = fl_args_value(&ar, name, iv, &v))) break;
        if (strcmp(name, "--algo") == 0) e = fl_algo_parse(v, &a), algo = v; /* every value checked */
        else if (strcmp(name, "--N") == 0) e = fl_parse_i64(name, v, 1, INT64_C(1) << 24, &N);
        else if (strcmp(name, "--d") == 0) e = fl_parse_i64(name, v, 1, 1024, &d);
        else if (strcmp(name, "--Br") == 0) e = fl_parse_i64(name, v, 1, 4096, &Br);
        else if (strcmp(name, "--Bc") == 0) e = fl_parse_i64(name, v, 1, 4096, &Bc);
        else if (strcmp(name, "--dtype") == 0) {
            dtype = v;
            if (strcmp(v, "fp16") && strcmp(v, "bf16") && strcmp(v, "fp32"))
                e = fl_fail(FL_EINVAL, "--dtype: unknown type '%s' (choose fp16, bf16 or fp32)", v);
        }
        else if (strcmp(name, "--pass") == 0) {
            if (strcmp(v, "fwd") == 0) bwd = 0;
            else if (strcmp(v, "bwd") == 0) bwd = 1;
            else e = fl_fail(FL_EINVAL, "--pass: unknown pass '%s' (choose fwd or bwd)", v);
        }
        else if (strcmp(name, "--l2-mb") == 0) e = fl_parse_i64(name, v, 1, 16384, &l2_mb);
        else if (strcmp(name, "--sector") == 0) e = fl_parse_i64(name, v, 1, 4096, &sector);
        else if (strcmp(name, "--sms") == 0) e = fl_parse_i64(name, v, 1, 4096, &mc.sms);
        else if (strcmp(name, "--ctas-per-sm") == 0) e = fl_parse_i64(name, v, 0, 64, &mc.ctas_per_sm);
        else if (strcmp(name, "--output") == 0) output = v;
        else if (strcmp(name, "--max-work") == 0) e = fl_parse_limit(name, v, 0, INT64_MAX, &max_work);
        else if (strcmp(name, "--max-memory") == 0) e = fl_parse_i64(name, v, 0, INT64_C(1) << 40, &max_mb);
        else if (strcmp(name, "--format") == 0) e = fl_parse_table_or_csv(v, &csv);
        else e = fl_fail(FL_EINVAL, "%s: unknown option for l2 (see flashlab l2 --help)", name);
    }
    if (k == FL_ARGS_HELP) {
        fputs(usage, stdout);
        return 0;
    }
    if (!e && k < 0) e = FL_EINVAL;
    if (!e && !algo) e = fl_fail(FL_EINVAL, "--algo: required (standard, flash1 or flash2)");
    if (!e && (!N || !d || !Br || !Bc)) e = fl_fail(FL_EINVAL, "--N, --d, --Br, --Bc: all four are required");
    if (!e) e = fl_algo_parse(algo, &a);
    if (!e) {
        if (strcmp(dtype, "fp16") == 0 || strcmp(dtype, "bf16") == 0) eb = 2;
        else if (strcmp(dtype, "fp32") == 0) eb = 4;
        else e = fl_fail(FL_EINVAL, "--dtype: unknown type '%s' (choose fp16, bf16 or fp32)", dtype);
    }
    fl_gpu_sched s;
    fl_l2_pred pr;
    int64_t mr = 0, mw = 0;
    if (!e) e = fl_gpu_sched_build(a, bwd, N, d, Br, Bc, eb, &mc, &s);
    if (!e) e = limits(&s, l2_mb, sector, max_work, max_mb);
    fl_output *o = NULL;
    FILE *out = stdout;
    if (!e && output && !(e = fl_output_open(output, "--output", &o))) out = fl_output_file(o);
    if (!e) e = fl_l2_predict(&s, l2_mb << 20, sector, flush, &pr);
    if (!e) e = model(&s, &pr, &mr, &mw);
    if (e) {
        fl_output_abort(o);
        return fl_cli_error(e);
    }
    if (csv) {
        fprintf(out, "# flashlab %s l2: predicted by the three-level model (a model, not a measurement)\n",
                FLASHLAB_VERSION);
        fl_cli_command_comment(out, "l2", argc, argv);
        fprintf(out, "# l2 %" PRId64 " MiB, %" PRId64 "-byte sectors, LRU, %" PRId64 " SMs, %s\n", l2_mb, sector, mc.sms,
                flush ? "emptied before each kernel" : "kept across kernels");
        fputs("algo,pass,dtype,N,d,Br,Bc,kernel,ctas,ctas_per_sm,waves,model_read_B,sm_read_B,dram_read_B,writeback_B\n", out);
    } else {
        fprintf(out, "l2 model: %s %s %s N = %" PRId64 ", d = %" PRId64 ", %" PRId64 "x%" PRId64 "; L2 %" PRId64
                     " MiB, %" PRId64 " B sectors, LRU, %" PRId64 " SMs, %s\n",
                algo, bwd ? "bwd" : "fwd", dtype, N, d, Br, Bc, l2_mb, sector, mc.sms, flush ? "emptied before each kernel" : "kept across kernels");
        fprintf(out, "%-22s %7s %6s %6s %15s %15s %15s\n", "kernel", "CTAs", "per SM", "waves", "SM<-L2 read B",
                "DRAM read B", "writeback B");
    }
    for (int i = 0; i <= s.nkernels; i++) {
        const int tot = i == s.nkernels;
        const fl_l2_kpred *kp = tot ? &pr.total : &pr.k[i];
        const fl_gpu_kernel *g = tot ? NULL : &s.k[i];
        const int64_t waves = tot ? 0 : (g->ctas + g->per_sm * mc.sms - 1) / (g->per_sm * mc.sms);
        if (csv)
            fprintf(out, "%s,%s,%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%s,%" PRId64 ",%" PRId64 ",%" PRId64
                         ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 "\n",
                    algo, bwd ? "bwd" : "fwd", dtype, N, d, Br, Bc, tot ? "total" : g->name, tot ? 0 : g->ctas, tot ? 0 : g->per_sm, waves,
                    tot ? mr : 0, kp->sm_read_B, kp->dram_read_B, kp->writeback_B);
        else
            fprintf(out, "%-22s %7" PRId64 " %6" PRId64 " %6" PRId64 " %15" PRId64 " %15" PRId64 " %15" PRId64 "\n",
                    tot ? "total" : g->name, tot ? 0 : g->ctas, tot ? 0 : g->per_sm, waves, kp->sm_read_B,
                    kp->dram_read_B, kp->writeback_B);
    }
    if (!csv)
        fprintf(out, "model (two levels, fl_run, M = %" PRId64 "): HBM read %" PRId64 " B, write %" PRId64
                     " B; the GPU order moves the same elements of every tensor\n",
                s.M_eff, mr, mw);
    if (output && (e = fl_output_commit(o))) return fl_cli_error(e);
    return 0;
}
