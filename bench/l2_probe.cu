// l2_probe.cu: how much data the L2 keeps between two sweeps, when every SM reads all of it
// (shared) and when each SM reads its own slice (private).  Measured under Nsight Compute by
// bench/l2_probe.py (dram__bytes_read per launch); docs/third_party.md §6 uses it to test the
// launch model's single 60 MiB LRU against the H200's two L2 partitions.
//
//   l2_probe MIB...   for each size X MiB: one launch "shared" (each of SMs CTAs reads the whole
//                     buffer twice), one launch "private" (CTA b reads its 1/SMs of it twice),
//                     in that order; prints one line per launch: "launch K mode BYTES", BYTES the
//                     distinct bytes it reads (each read twice).
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

static int check(cudaError_t e, const char *what)
{
    if (e == cudaSuccess) return 0;
    fprintf(stderr, "l2_probe: %s: %s\n", what, cudaGetErrorString(e));
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "l2_probe: MIB: give one or more buffer sizes in MiB (1 to 4096)\n");
        return 2;
    }
    long long maxb = 0;
    for (int a = 1; a < argc; a++) {
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
    for (int a = 1; a < argc; a++) {
        const long long bytes = strtoll(argv[a], nullptr, 10) << 20;
        const long long n = bytes / 16;
        for (int shared = 1; shared >= 0; shared--) {
            l2_probe_sweep<<<prop.multiProcessorCount, 1024>>>(buf, n, 2, shared, sink);
            if (check(cudaGetLastError(), "launch") || check(cudaDeviceSynchronize(), "sweep")) return 1;
            const long long distinct = shared ? n * 16 : n / prop.multiProcessorCount * prop.multiProcessorCount * 16;
            printf("launch %d %s %lld\n", k++, shared ? "shared" : "private", distinct);
        }
    }
    return 0;
}
