/* gpu_case.cu: one validation case (gpu_case.h): the model's counts, the workspace, the counted and
 * timed launch, the tiles and counters against the model, the values (gpu_values.cu). */
#include "gpu_case_parts.h"

#include <algorithm>
#include <string.h>

extern "C" {
#include "run.h"
}

/* ---- the model ------------------------------------------------------------------------------ */
void fl_gpu_case_model(const fl_gpu_case *c, fl_gpu_outcome *o)
{
    const fl_kernel_info *k = c->k;
    fl_algo algo;
    o->model_ok = 0;
    if (fl_algo_parse(k->s->algo, &algo) != FL_OK) {
        snprintf(o->model_msg, sizeof o->model_msg, "model: %s", fl_last_error());
        return;
    }
    const int64_t fp = k->s->bwd ? fl_footprint_pass(algo, 1, 1, k->d, k->Br, k->Bc, k->d)
                              : fl_footprint(algo, k->d, k->Br, k->Bc, k->d);
    if (fp != k->m_eff) {
        snprintf(o->model_msg, sizeof o->model_msg,
                 "kernel footprint %ld != model footprint %lld (docs/model.md F0-F2)", k->m_eff,
                 (long long)fp);
        return;
    }
    fl_problem p = fl_problem_default();
    p.algo = algo;
    p.N = c->N;
    p.d = k->d;
    p.M = fp;
    p.Br = k->Br;
    p.Bc = k->Bc;
    p.elem_bytes = fl_dtype_bytes[k->dtype];
    p.max_events = 0;
    p.causal = (fl_causal)c->causal; /* 0 none, 1 top-left, 2 bottom-right: the model's values */
    p.Nk = c->Nk && c->Nk != c->N ? c->Nk : 0;
    p.pass = k->s->bwd ? FL_PASS_BWD : FL_PASS_FWD; /* BWD: the backward's traffic alone */
    fl_result r;
    if (fl_run(&p, FL_COUNT, NULL, NULL, &r) != FL_OK) { /* e.g. a variant the model lacks yet */
        snprintf(o->model_msg, sizeof o->model_msg, "model: %s", fl_last_error());
        return;
    }
    if (!k->s->bwd && r.b.Bd != p.d) {
        snprintf(o->model_msg, sizeof o->model_msg, "model chose Bd = %lld != d", (long long)r.b.Bd);
        return;
    }
    o->model_ok = 1;
    for (int i = 0; i < r.ntensors; i++) {
        int t = -1;
        for (int u = 0; u < FL_NT; u++)
            if (strcmp(r.t[i].name, fl_tensor_names[u]) == 0) t = u;
        if (t < 0) { /* a tensor the kernels do not know: cannot be equal */
            o->model_ok = 0;
            snprintf(o->model_msg, sizeof o->model_msg, "model tensor '%s' unknown to the kernels", r.t[i].name);
            return;
        }
        if ((r.t[i].reads || r.t[i].writes) && !(k->s->hbm & FL_BIT(t))) { /* the descriptor is the model's */
            o->model_ok = 0;
            snprintf(o->model_msg, sizeof o->model_msg, "the model moves tensor %s, which %s's pass (attn.h) does not hold",
                     r.t[i].name, k->s->algo);
            return;
        }
        o->model_rd[t] = r.t[i].reads;
        o->model_wr[t] = r.t[i].writes;
        o->model_rd_bytes += r.t[i].reads * r.t[i].elem_bytes;
        o->model_wr_bytes += r.t[i].writes * r.t[i].elem_bytes;
    }
    o->model_reads = r.reads;
    o->model_writes = r.writes;
    o->model_bytes = r.bytes;
}

/* ---- the tiles against the launched kernels --------------------------------------------------- */
/* Step 4 of gpu_case.h: for every launched kernel, its static shared memory (cudaFuncGetAttributes)
 * equals its traits' __shared__ arrays, its dynamic shared-memory limit the traits' bytes, and the
 * model's buffers fit in what it has; the largest footprint of the schedule's kernels is M_eff. */
static void check_tiles(const fl_kernel_info *k, const fl_launch_log &log, fl_gpu_outcome *o)
{
    long fp = 0;
    o->tiles_ok = 1;
    o->tiles_msg[0] = 0;
    if (log.n == 0) {
        o->tiles_ok = 0;
        snprintf(o->tiles_msg, sizeof o->tiles_msg, "no launch was recorded");
        return;
    }
    for (int i = 0; i < log.n; i++) {
        const fl_launch_rec &r = log.r[i];
        const long have = (long)r.attr.sharedSizeBytes + (long)r.dyn_launched;
        if (have > o->smem_bytes) o->smem_bytes = have;
        if ((long)r.attr.localSizeBytes > o->local_bytes) o->local_bytes = (long)r.attr.localSizeBytes;
        if (r.tiles.footprint > fp) fp = r.tiles.footprint;
        const char *why = (size_t)r.attr.sharedSizeBytes != r.tiles.static_bytes ? "static shared memory != its traits'"
                          : (size_t)r.attr.maxDynamicSharedSizeBytes != r.tiles.dyn_bytes ? "dynamic shared memory != its traits'"
                          : r.tiles.smem_model_bytes > (size_t)have ? "the model's buffers exceed its shared memory"
                          : r.tiles.footprint > k->m_eff ? "a footprint above M_eff"
                                                         : NULL;
        if (why && o->tiles_ok) {
            o->tiles_ok = 0;
            snprintf(o->tiles_msg, sizeof o->tiles_msg, "%s: %s (attributes: %zu static + %d dynamic bytes; traits: %zu + %zu)",
                     r.tiles.kernel, why, r.attr.sharedSizeBytes, r.attr.maxDynamicSharedSizeBytes, r.tiles.static_bytes,
                     r.tiles.dyn_bytes);
        }
    }
    if (o->tiles_ok && fp != k->m_eff) {
        o->tiles_ok = 0;
        snprintf(o->tiles_msg, sizeof o->tiles_msg, "largest footprint of the launched kernels %ld != M_eff %ld", fp, k->m_eff);
    }
}

/* The verdict: the model ran, the tiles passed, the counts equal the model's (counters build),
 * every output was written and, when checked, accurate, and no hand-off timed out. */
static int case_ok(const fl_gpu_case *c, const fl_gpu_outcome *o)
{
    return o->model_ok && o->tiles_ok && (!o->counted || o->tensors_equal) &&
           (c->check ? o->acc_ok : o->unwritten == 0) && !o->wait_timeout;
}

/* ---- the launch ------------------------------------------------------------------------------ */
/* A backward's forward run (uncounted): the kernel of ladder.def's forward rung for k's rung with
 * k's storage type and d, the same tiles if built, else the first; NULL when none. */
static const fl_kernel_info *forward_for(const fl_kernel_info *k)
{
    const fl_version_info *v = fl_version(k->version), *fv = v && v->fwd ? fl_version(v->fwd) : NULL;
    if (!fv) return NULL;
    int nf;
    const fl_kernel_info *tab = fv->table(&nf), *f = NULL;
    for (int i = 0; i < nf; i++)
        if (tab[i].dtype == k->dtype && tab[i].d == k->d && (!f || (tab[i].Br == k->Br && tab[i].Bc == k->Bc))) f = &tab[i];
    return f;
}

/* One launch of k on a, recorded (log) and timed with CUDA events; ms receives the time. */
static void timed_launch(const fl_kernel_info *k, fl_gpu_args *a, fl_launch_log *log, float *ms)
{
    cudaEvent_t e0, e1;
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    a->log = log;
    CUDA_CHECK(cudaEventRecord(e0));
    k->launch(a);
    CUDA_CHECK(cudaEventRecord(e1));
    CUDA_CHECK(cudaEventSynchronize(e1));
    CUDA_CHECK(cudaGetLastError());
    a->log = NULL;
    CUDA_CHECK(cudaEventElapsedTime(ms, e0, e1));
    CUDA_CHECK(cudaEventDestroy(e0));
    CUDA_CHECK(cudaEventDestroy(e1));
}

/* ---- the counters ------------------------------------------------------------------------------ */
/* The launch's counters and hand-off error word into o; with counters built in, each tensor
 * compared with the model's counts. */
static void read_counters(const fl_case_buffers &b, fl_gpu_outcome *o)
{
    int herr = 0;
    CUDA_CHECK(cudaMemcpy(&herr, b.error, sizeof(int), cudaMemcpyDeviceToHost));
    o->wait_timeout = herr;
    fl_gpu_counters hc;
    CUDA_CHECK(cudaMemcpy(&hc, b.cnt, sizeof hc, cudaMemcpyDeviceToHost));
    o->gpu_polls = (long long)hc.rd_elems[FL_T_FLAGS];
    o->gpu_flag_writes = (long long)hc.wr_elems[FL_T_FLAGS];
    for (int t = 0; t < FL_NT_DATA; t++) {
        o->gpu_rd[t] = (long long)hc.rd_elems[t];
        o->gpu_wr[t] = (long long)hc.wr_elems[t];
        o->gpu_reads += o->gpu_rd[t];
        o->gpu_writes += o->gpu_wr[t];
        o->gpu_bytes += (long long)(hc.rd_bytes[t] + hc.wr_bytes[t]);
        o->gpu_rd_bytes += (long long)hc.rd_bytes[t];
        o->gpu_wr_bytes += (long long)hc.wr_bytes[t];
    }
#ifdef FL_COUNTERS
    o->counted = 1;
#else
    o->counted = 0; /* a timing build: nothing to compare */
#endif
    if (o->model_ok && o->counted) {
        o->tensors_equal = 1;
        for (int t = 0; t < FL_NT_DATA; t++)
            if (o->gpu_rd[t] != o->model_rd[t] || o->gpu_wr[t] != o->model_wr[t]) o->tensors_equal = 0;
        o->ratio = (double)(o->gpu_reads + o->gpu_writes) / (double)(o->model_reads + o->model_writes);
        o->bytes_ratio = (double)o->gpu_bytes / (double)o->model_bytes;
    }
}

/* ---- one case ---------------------------------------------------------------------------------- */
int fl_gpu_case_run(const fl_gpu_case *c, fl_gpu_outcome *o)
{
    const fl_kernel_info *k = c->k;
    const int N = c->N, Nk = c->Nk ? c->Nk : N; /* keys: rows of K, V */
    memset(o, 0, sizeof *o);
    o->m_eff = k->m_eff;
    fl_gpu_case_model(c, o);
    if (Nk != N && !k->s->nk_ok) {
        fprintf(stderr, "flashlab-gpu: --Nk != --N: only the flash2 forward kernels take it\n");
        return 1;
    }
    const fl_kernel_info *f = k->s->bwd ? forward_for(k) : NULL;
    if (k->s->bwd && !f) {
        fprintf(stderr, "flashlab-gpu: version %d: no forward kernel of its forward rung (ladder.def) for this backward\n",
                k->version);
        return 1;
    }

    fl_case_inputs in;
    fl_case_make_inputs(c, N, Nk, &in);
    fl_case_buffers b;
    fl_case_buffers_alloc(&b, k->s->hbm | (f ? f->s->hbm : 0), k, N, Nk, in);
    fl_gpu_args a;
    memset(&a, 0, sizeof a);
    a.N = N, a.d = k->d, a.causal = c->causal, a.Nk = Nk, a.ctas = c->ctas, a.stream = 0;
    fl_case_buffers_args(&b, &a);
    if (f) { /* the forward first, uncounted: O and its statistics for the backward */
        a.cnt = NULL;
        f->launch(&a);
        CUDA_CHECK(cudaDeviceSynchronize());
        a.cnt = b.cnt;
    }

    fl_launch_log log;
    log.n = 0;
    float ms = 0.f;
    timed_launch(k, &a, &log, &ms);
    o->ms = ms;
    check_tiles(k, log, o);
    read_counters(b, o);
    if (c->reps > 0) { /* extra timed launches, uncounted (outputs are rewritten identically) */
        std::vector<float> t(c->reps);
        a.cnt = NULL;
        for (int r = 0; r < c->reps; r++) timed_launch(k, &a, NULL, &t[r]);
        std::sort(t.begin(), t.end());
        o->ms_median = t[c->reps / 2];
    }

    const int bad = k->s->bwd ? fl_case_check_grads(c, in, b, o) : fl_case_check_output(c, Nk, in, b, o);
    o->ok = !bad && case_ok(c, o);
    fl_case_buffers_free(&b);
    return bad;
}
