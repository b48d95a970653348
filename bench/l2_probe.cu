// l2_probe.cu: how much data the L2 keeps between two sweeps, when every SM reads all of it
// (shared) and when each SM reads its own slice (private); and whether it keeps data that
// reductions made dirty longer than data that was only read (reduce, mixed).  Measured under
// Nsight Compute by bench/l2_probe.py (dram__bytes_read and the lookup misses per launch);
// docs/l2_model.md §6 uses it to test the launch model's L2 against the H200's.
//
//   l2_probe MIB...            for each size X MiB: one launch "shared" (each of SMs CTAs reads the
//                              whole buffer twice), one launch "private" (CTA b reads its 1/SMs of it
//                              twice), in that order;
//   l2_probe --reduce MIB...   for each size X MiB: one launch "reduce" (CTA b adds 1.0f to every
//                              float of its 1/SMs slice, twice: red.global.add, dirty in L2), one
//                              launch "mixed" (X split in halves R and C; CTA b, step by step, adds to
//                              its slice of R and reads its slice of C, twice);
//                              prints one line per launch: "launch K mode BYTES", BYTES the distinct
//                              bytes it touches (each twice).
// Exit status 2 on a bad size, 1 on a CUDA error.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

// Reads [lo, hi) `passes` times, 16 bytes a thread a step, through L2 only (ld.global.cg: L1 is
// not allocated, so every sweep reaches L2).  The xor keeps the loads; the write never happens.
__global__ void l2_probe_sweep(const uint4 *buf, long long n, int passes, int shared, unsigned *sink)
{
    long long lo = 0, hi = n;
    if (!shared) {
        const long long per = n / gridDim.x;
        lo = (long long)blockIdx.x * per, hi = lo + per;
    }
    unsigned acc = 0;
    for (int p = 0; p < passes; p++)
        for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x) {
            const uint4 v = __ldcg(buf + i);
            acc ^= v.x ^ v.y ^ v.z ^ v.w;
        }
    if (acc == 0x9e3779b9u) sink[0] = acc;
}

// CTA b's slice of R (reduced: 16 bytes, four red.global.add.f32, a thread a step) and, when `c` is
// not null, the same slice of C read at the same step (ld.global.cg), `passes` times.
__global__ void l2_probe_reduce(float4 *r, const uint4 *c, long long n, int passes, unsigned *sink)
{
    const long long per = n / gridDim.x, lo = (long long)blockIdx.x * per, hi = lo + per;
    unsigned acc = 0;
    for (int p = 0; p < passes; p++)
        for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x) {
            float *f = reinterpret_cast<float *>(r + i);
            atomicAdd(f, 1.0f), atomicAdd(f + 1, 1.0f), atomicAdd(f + 2, 1.0f), atomicAdd(f + 3, 1.0f);
            if (c) {
                const uint4 v = __ldcg(c + i);
                acc ^= v.x ^ v.y ^ v.z ^ v.w;
            }
        }
    if (acc == 0x9e3779b9u) sink[0] = acc;
}

static int check(cudaError_t e, const char *what)
{
    if (e == cudaSuccess) return 0;
    fprintf(stderr, "l2_probe: %s: %s\n", what, cudaGetErrorString(e));
    return 1;
}

int main(int argc, char **argv)
{
    const int reduce = argc > 1 && strcmp(argv[1], "--reduce") == 0, first = 1 + reduce;
    if (argc < first + 1) {
        fprintf(stderr, "l2_probe: MIB: give one or more buffer sizes in MiB (1 to 4096)\n");
        return 2;
    }
    long long maxb = 0;
    for (int a = first; a < argc; a++) {
        char *end;
        const long v = strtol(argv[a], &end, 10);
        if (*argv[a] == '\0' || *end || v < 1 || v > 4096) {
            fprintf(stderr, "l2_probe: MIB '%s': a whole number of MiB from 1 to 4096\n", argv[a]);
            return 2;
        }
        if ((v << 20) > maxb) maxb = v << 20;
    }
    cudaDeviceProp prop;
    if (check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties")) return 1;
    printf("# device: %s, %d SMs, L2 %d bytes\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize);
    uint4 *buf;
    unsigned *sink;
    if (check(cudaMalloc(&buf, (size_t)maxb), "cudaMalloc") || check(cudaMalloc(&sink, 4), "cudaMalloc")) return 1;
    if (check(cudaMemset(buf, 1, (size_t)maxb), "cudaMemset")) return 1;
    int k = 0;
    for (int a = first; a < argc; a++) {
        const long long bytes = strtoll(argv[a], nullptr, 10) << 20;
        const long long n = bytes / 16;
        if (reduce) {
            const long long sms = prop.multiProcessorCount, half = n / 2;
            l2_probe_reduce<<<prop.multiProcessorCount, 1024>>>(reinterpret_cast<float4 *>(buf), nullptr, n, 2, sink);
            if (check(cudaGetLastError(), "launch") || check(cudaDeviceSynchronize(), "reduce")) return 1;
            printf("launch %d reduce %lld\n", k++, n / sms * sms * 16);
            l2_probe_reduce<<<prop.multiProcessorCount, 1024>>>(reinterpret_cast<float4 *>(buf), buf + half, half, 2, sink);
            if (check(cudaGetLastError(), "launch") || check(cudaDeviceSynchronize(), "mixed")) return 1;
            printf("launch %d mixed %lld\n", k++, 2 * (half / sms * sms * 16));
            continue;
        }
        for (int shared = 1; shared >= 0; shared--) {
            l2_probe_sweep<<<prop.multiProcessorCount, 1024>>>(buf, n, 2, shared, sink);
            if (check(cudaGetLastError(), "launch") || check(cudaDeviceSynchronize(), "sweep")) return 1;
            const long long distinct = shared ? n * 16 : n / prop.multiProcessorCount * prop.multiProcessorCount * 16;
            printf("launch %d %s %lld\n", k++, shared ? "shared" : "private", distinct);
        }
    }
    return 0;
}
