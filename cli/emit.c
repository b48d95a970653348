/* emit.c: results as a table, CSV or JSON (see emit.h). */
#include "emit.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include <flashlab/blocksparse_mask.h>
#include <flashlab/decode.h>

fl_status fl_format_parse(const char *s, fl_format *out)
{
    if (strcmp(s, "table") == 0) *out = FL_FMT_TABLE;
    else if (strcmp(s, "csv") == 0) *out = FL_FMT_CSV;
    else if (strcmp(s, "json") == 0) *out = FL_FMT_JSON;
    else return fl_fail(FL_EINVAL, "--format: unknown format '%s' (choose table, csv or json)", s);
    return FL_OK;
}

void fl_emit_begin(fl_emitter *e, FILE *out, fl_format fmt, int with_errors)
{
    e->out = out;
    e->fmt = fmt;
    e->with_errors = with_errors;
    e->rows = 0;
    if (fmt == FL_FMT_CSV) {
        fputs("algo,N,d,M,Br,Bc,hbm_reads,hbm_writes,hbm_total,sram_peak,closed_form_total,"
              "hbm_bytes,tile_events,Bd", out);
        fputs(with_errors ? ",max_abs_err,rel_err" : "", out);
        fputs(",pass,Nk,causal,window_left,window_right,batch,heads,kv_heads,varlen,fwd_total,bwd_total", out);
        fputs(with_errors ? ",dq_rel_err,dk_rel_err,dv_rel_err" : "", out);
        fputs(",splits,page_size,density", out); /* decode, blocksparse (docs/model.md §8) */
        fputs(",d_v,sinks,softcap,alibi,dropout,elem_bytes,scale_block,deterministic", out); /* §14 */
        fputs(with_errors ? ",dsink_rel_err\n" : "\n", out);
    } else if (fmt == FL_FMT_JSON) {
        fputs("[", out);
    } else {
        fprintf(out, "%-14s %7s %5s %9s %6s %6s %15s %15s %15s %15s %9s", "schedule", "N", "d", "M",
                "Br", "Bc", "HBM reads", "HBM writes", "HBM total", "closed form", "SRAM peak");
        fputs(with_errors ? "  rel. error\n" : "\n", out);
    }
}

static const char *pass_name(fl_pass p)
{
    return p == FL_PASS_BWD ? "bwd" : p == FL_PASS_FWD_BWD ? "fwd+bwd" : "fwd";
}

/* Nonzero when the problem uses a variant of docs/model.md §14 (d_v, sinks, softcap, ALiBi,
 * dropout, fp8, a deterministic backward): the table then prints them. */
static int has_score_variant(const fl_problem *p)
{
    return (p->d_v && p->d_v != p->d) || p->sinks || p->softcap != 0.0 || p->alibi || p->dropout != 0.0 ||
           p->elem_bytes == 1 || p->deterministic;
}

/* The §14 variants of p in words, into buf. */
static const char *variants_text(const fl_problem *p, char *buf, size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "d_qk = %" PRId64 ", d_v = %" PRId64, p->d, fl_problem_dv(p));
    if (p->sinks && k < n) k += (size_t)snprintf(buf + k, n - k, "; sinks");
    if (p->softcap != 0.0 && k < n) k += (size_t)snprintf(buf + k, n - k, "; softcap %g", p->softcap);
    if (p->alibi && k < n) k += (size_t)snprintf(buf + k, n - k, "; ALiBi");
    if (p->dropout != 0.0 && k < n) k += (size_t)snprintf(buf + k, n - k, "; dropout %g", p->dropout);
    if (p->elem_bytes == 1 && k < n)
        k += p->scale_block ? (size_t)snprintf(buf + k, n - k, "; fp8, a scale per %" PRId64 " rows", p->scale_block)
                            : (size_t)snprintf(buf + k, n - k, "; fp8, a scale per sequence and head");
    if (p->deterministic && k < n) snprintf(buf + k, n - k, "; deterministic dQ");
    return buf;
}

/* Nonzero when the problem uses a variant (masks, heads, varlen, passes): the table then prints it. */
static int is_variant(const fl_problem *p)
{
    return p->pass != FL_PASS_FWD || (p->Nk && p->Nk != p->N) || p->causal != FL_CAUSAL_NONE ||
           p->window_left != -1 || p->window_right != -1 || p->batch != 1 || p->heads != 1 ||
           (p->kv_heads && p->kv_heads != p->heads) || p->cu_seqlens_q;
}

/* JSON has no infinities or NaN: print null for them. */
static void json_num(FILE *out, double v)
{
    if (isfinite(v)) fprintf(out, "%.6e", v);
    else fputs("null", out);
}

/* The blocks of the first pass a result counts: the backward's for a backward-only run (its
 * forward runs to produce the inputs but is not counted), else the forward's. */
static const fl_blocks *counted_blocks(const fl_result *r)
{
    return r->p.pass == FL_PASS_BWD ? &r->b_bwd : &r->b;
}

void fl_emit_row(fl_emitter *e, const fl_result *r)
{
    FILE *out = e->out;
    const fl_problem *p = &r->p;
    const fl_blocks *cb = counted_blocks(r);
    const char *name = fl_algo_name(p->algo);
    switch (e->fmt) {
    case FL_FMT_CSV:
        fprintf(out, "%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
                     ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64,
                name, p->N, p->d, p->M, cb->Br, cb->Bc, r->reads, r->writes, r->total,
                r->sram_peak, r->closed.total, r->bytes, r->events, cb->Bd);
        if (e->with_errors) fprintf(out, ",%.3e,%.3e", r->max_abs_err, r->rel_err);
        fprintf(out, ",%s,%" PRId64 ",%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%d,%" PRId64 ",%" PRId64,
                pass_name(p->pass), p->Nk ? p->Nk : p->N, fl_causal_name(p->causal), p->window_left,
                p->window_right, p->batch, p->heads, p->kv_heads ? p->kv_heads : p->heads,
                p->cu_seqlens_q != NULL, r->fwd_total, r->bwd_total);
        if (e->with_errors) fprintf(out, ",%.3e,%.3e,%.3e", r->dq_rel_err, r->dk_rel_err, r->dv_rel_err);
        fprintf(out, ",%" PRId64 ",%" PRId64 ",%.10g", fl_kv_cache_of(p)->splits, fl_kv_cache_of(p)->page_size,
                fl_block_sparsity_or_default(p->block_mask)->density);
        fprintf(out, ",%" PRId64 ",%d,%.10g,%d,%.10g,%d,%" PRId64 ",%d", fl_problem_dv(p), p->sinks, p->softcap,
                p->alibi, p->dropout, p->elem_bytes, p->scale_block, p->deterministic);
        if (e->with_errors) fprintf(out, ",%.3e", r->dsink_rel_err);
        fputc('\n', out);
        break;
    case FL_FMT_JSON:
        fprintf(out, "%s\n  {\"algo\": \"%s\", \"N\": %" PRId64 ", \"d\": %" PRId64 ", \"M\": %" PRId64
                     ", \"Br\": %" PRId64 ", \"Bc\": %" PRId64 ", \"Bd\": %" PRId64
                     ", \"hbm_reads\": %" PRId64 ", \"hbm_writes\": %" PRId64 ", \"hbm_total\": %" PRId64
                     ", \"hbm_bytes\": %" PRId64 ", \"sram_peak\": %" PRId64 ", \"tile_events\": %" PRId64,
                e->rows ? "," : "", name, p->N, p->d, p->M, cb->Br, cb->Bc, cb->Bd, r->reads,
                r->writes, r->total, r->bytes, r->sram_peak, r->events);
        fprintf(out, ",\n   \"closed_form\": {\"reads\": %" PRId64 ", \"writes\": %" PRId64
                     ", \"total\": %" PRId64 ", \"tile_events\": %" PRId64 ", \"sram_peak\": %" PRId64 "}",
                r->closed.reads, r->closed.writes, r->closed.total, r->closed.events,
                r->closed.sram_peak);
        fprintf(out, ",\n   \"pass\": \"%s\", \"Nk\": %" PRId64 ", \"causal\": \"%s\", \"window\": [%" PRId64
                     ", %" PRId64 "], \"batch\": %" PRId64 ", \"heads\": %" PRId64 ", \"kv_heads\": %" PRId64
                     ", \"varlen\": %s, \"segments\": %" PRId64 ", \"fwd_total\": %" PRId64 ", \"bwd_total\": %" PRId64,
                pass_name(p->pass), p->Nk ? p->Nk : p->N, fl_causal_name(p->causal), p->window_left,
                p->window_right, p->batch, p->heads, p->kv_heads ? p->kv_heads : p->heads,
                p->cu_seqlens_q ? "true" : "false", r->segments, r->fwd_total, r->bwd_total);
        if (p->pass & FL_PASS_BWD)
            fprintf(out, ", \"bwd_blocks\": {\"Br\": %" PRId64 ", \"Bc\": %" PRId64 ", \"Bd\": %" PRId64 "}",
                    r->b_bwd.Br, r->b_bwd.Bc, r->b_bwd.Bd);
        fprintf(out, ", \"splits\": %" PRId64 ", \"page_size\": %" PRId64 ", \"density\": %.10g",
                fl_kv_cache_of(p)->splits, fl_kv_cache_of(p)->page_size,
                fl_block_sparsity_or_default(p->block_mask)->density); /* decode, blocksparse */
        fprintf(out, ", \"d_v\": %" PRId64 ", \"sinks\": %d, \"softcap\": %.10g, \"alibi\": %d, \"dropout\": %.10g"
                     ", \"elem_bytes\": %d, \"scale_block\": %" PRId64 ", \"deterministic\": %d",
                fl_problem_dv(p), p->sinks, p->softcap, p->alibi, p->dropout, p->elem_bytes, p->scale_block,
                p->deterministic); /* docs/model.md §14 */
        fputs(",\n   \"tensors\": {", out);
        for (int t = 0; t < r->ntensors; t++)
            fprintf(out, "%s\"%s\": {\"reads\": %" PRId64 ", \"writes\": %" PRId64
                         ", \"bytes_per_element\": %d}",
                    t ? ", " : "", r->t[t].name, r->t[t].reads, r->t[t].writes, r->t[t].elem_bytes);
        fputc('}', out);
        if (e->with_errors) {
            fputs(", \"max_abs_err\": ", out);
            json_num(out, r->max_abs_err);
            fputs(", \"rel_err\": ", out);
            json_num(out, r->rel_err);
            fputs(", \"dq_rel_err\": ", out);
            json_num(out, r->dq_rel_err);
            fputs(", \"dk_rel_err\": ", out);
            json_num(out, r->dk_rel_err);
            fputs(", \"dv_rel_err\": ", out);
            json_num(out, r->dv_rel_err);
            fputs(", \"dsink_rel_err\": ", out);
            json_num(out, r->dsink_rel_err);
        }
        fputc('}', out);
        break;
    case FL_FMT_TABLE:
        fprintf(out, "%-14s %7" PRId64 " %5" PRId64 " %9" PRId64 " %6" PRId64 " %6" PRId64 " %15" PRId64
                     " %15" PRId64 " %15" PRId64 " %15" PRId64 " %9" PRId64,
                name, p->N, p->d, p->M, cb->Br, cb->Bc, r->reads, r->writes, r->total,
                r->closed.total, r->sram_peak);
        if (e->with_errors) fprintf(out, "  %10.3e", r->rel_err);
        fputs("\n          per tensor (reads/writes):", out);
        for (int t = 0; t < r->ntensors; t++)
            fprintf(out, " %s %" PRId64 "/%" PRId64, r->t[t].name, r->t[t].reads, r->t[t].writes);
        fprintf(out, "; %.4g MB\n", (double)r->bytes / 1e6);
        if (is_variant(p)) {
            fprintf(out, "          %s pass; Nq = %" PRId64 ", Nk = %" PRId64 ", causal %s, window %" PRId64 ",%" PRId64
                         "; batch %" PRId64 " x %" PRId64 " query heads over %" PRId64 " K/V heads%s; %" PRId64 " segments\n",
                    pass_name(p->pass), p->N, p->Nk ? p->Nk : p->N, fl_causal_name(p->causal),
                    p->window_left, p->window_right, p->batch, p->heads,
                    p->kv_heads ? p->kv_heads : p->heads, p->cu_seqlens_q ? " (varlen)" : "", r->segments);
            if (p->pass == FL_PASS_FWD_BWD)
                fprintf(out, "          forward %" PRId64 " + backward %" PRId64 " elements\n", r->fwd_total, r->bwd_total);
            if (p->pass & FL_PASS_BWD)
                fprintf(out, "          backward blocks Br = %" PRId64 ", Bc = %" PRId64 "%s", r->b_bwd.Br, r->b_bwd.Bc,
                        e->with_errors ? "" : "\n");
            if ((p->pass & FL_PASS_BWD) && e->with_errors)
                fprintf(out, "; gradients rel. error dQ %.3e, dK %.3e, dV %.3e\n", r->dq_rel_err,
                        r->dk_rel_err, r->dv_rel_err);
        }
        if (has_score_variant(p)) {
            char v[256];
            fprintf(out, "          %s", variants_text(p, v, sizeof v));
            if (e->with_errors && p->sinks && (p->pass & FL_PASS_BWD))
                fprintf(out, "; dsink rel. error %.3e", r->dsink_rel_err);
            fputc('\n', out);
        }
        break;
    }
    e->rows++;
}

void fl_emit_end(fl_emitter *e)
{
    if (e->fmt == FL_FMT_JSON) fputs(e->rows ? "\n]\n" : "]\n", e->out);
}

void fl_emit_explain(FILE *out, const fl_result *r)
{
    const fl_problem *p = &r->p;
    const fl_blocks *b = &r->b;
    fprintf(out, "%s at N = %" PRId64 ", d = %" PRId64 ", M = %" PRId64 ":\n", fl_algo_name(p->algo),
            p->N, p->d, p->M);
    const fl_schedule *sc = fl_schedule_get(p->algo);
    const int chunks_d = (sc->flags & FL_SCHED_CHUNKS_D) != 0;
    if (sc->explain) sc->explain(out, p, b);
    if (fl_problem_dv(p) != p->d) /* rule D1: one line serves every schedule's footprint */
        fprintf(out, "  d_v = %" PRId64 " != d: each footprint's d terms split, Q and K tiles d wide, V and O tiles d_v\n"
                     "    wide (docs/model.md rule D1; F2: Br*(d + d_v) + Bc*(d + d_v) + Br*Bc + 2*Br)\n",
                fl_problem_dv(p));
    fprintf(out, "  %schosen%s: Br = %" PRId64 ", Bc = %" PRId64 "%s",
            p->pass == FL_PASS_BWD ? "forward (runs to produce the backward's inputs; not counted) " : "",
            b->overridden ? " (override)" : "",
            b->Br, b->Bc, chunks_d ? ", Bd = " : "");
    if (chunks_d) fprintf(out, "%" PRId64, b->Bd);
    fprintf(out, "; footprint %" PRId64 " of M = %" PRId64 " elements; Tr = %" PRId64 ", Tc = %" PRId64 "\n",
            b->footprint, p->M, (p->N + b->Br - 1) / b->Br,
            ((sc->flags & FL_SCHED_OWN_PROBLEM) ? (p->Nk ? p->Nk : p->N) + b->Bc - 1 : p->N + b->Bc - 1) / b->Bc);
    if (sc->explain_after) sc->explain_after(out, p, b);
    if (p->pass & FL_PASS_BWD) {
        const fl_blocks *bb = &r->b_bwd;
        fprintf(out, "  backward: %s\n", sc->explain_bwd ? sc->explain_bwd : "(no rule of its own)");
        fprintf(out, "  backward chosen%s: Br = %" PRId64 ", Bc = %" PRId64 "; footprint %" PRId64 " of M\n",
                bb->overridden ? " (override)" : "", bb->Br, bb->Bc, bb->footprint);
    }
}
