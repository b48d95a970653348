/* launch.cuh: every kernel of the ladder is launched here, with the shared memory its tile traits
 * give (traits.cuh), and, when the caller asks, what the launched kernel really has is recorded
 * (cudaFuncGetAttributes) for the harness to compare with the traits and the model.
 *
 *   fl_launch       an ordinary launch
 *   fl_launch_coop  a cooperative launch (every CTA resident: the wavefront of versions 2, 4, 5),
 *                   its grid sized by fl_wavefront_grid
 *   fl_sm_count     the SMs of this GPU (the wavefront's and version 12's persistent grid)
 */
#ifndef FL_KERNELS_LAUNCH_CUH
#define FL_KERNELS_LAUNCH_CUH

#include <tuple>
#include <utility>

#include "common.cuh"
#include "traits.cuh"

/* One launched kernel as the harness sees it. */
struct fl_launch_rec {
    fl_tile_info tiles;       /* what the traits say */
    size_t dyn_launched;      /* dynamic shared memory passed to the launch */
    cudaFuncAttributes attr;  /* what the driver says of the loaded kernel */
};
#define FL_LAUNCH_LOG_MAX 16
/* The launches of one schedule run (fl_gpu_args.log; NULL: not recorded). */
struct fl_launch_log {
    int n;
    fl_launch_rec r[FL_LAUNCH_LOG_MAX];
};

/* The shared memory a CTA may have on this GPU (opt-in limit), bytes. */
static inline size_t fl_device_smem_optin()
{
    int dev, v;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    return (size_t)v;
}

/* The SMs of the current GPU (a wavefront's or a persistent grid's size). */
static inline int fl_sm_count()
{
    int dev, n;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    return n;
}

/* Raises kern's dynamic shared-memory limit to ti.dyn_bytes and records it in log (if any).
 * Exits with a one-line message when the GPU has less shared memory than the tiles need (the
 * harness leaves such tiles out before it gets here). */
template <class Kern> static void fl_prepare(Kern kern, const fl_tile_info &ti, fl_launch_log *log)
{
    if (ti.dyn_bytes + ti.static_bytes > fl_device_smem_optin()) {
        fprintf(stderr, "flashlab-gpu: %s needs %zu bytes of shared memory; this GPU allows %zu a CTA\n", ti.kernel,
                ti.dyn_bytes + ti.static_bytes, fl_device_smem_optin());
        exit(1);
    }
    CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)ti.dyn_bytes));
    if (log && log->n < FL_LAUNCH_LOG_MAX) {
        fl_launch_rec &r = log->r[log->n++];
        r.tiles = ti;
        r.dyn_launched = ti.dyn_bytes;
        CUDA_CHECK(cudaFuncGetAttributes(&r.attr, kern));
    }
}

/* kern<<<grid, block, ti.dyn_bytes, stream>>>(args...), checked. */
template <class... P, class... A>
static void fl_launch(void (*kern)(P...), const fl_tile_info &ti, dim3 grid, dim3 block, cudaStream_t stream,
                      fl_launch_log *log, A &&...args)
{
    fl_prepare(kern, ti, log);
    kern<<<grid, block, ti.dyn_bytes, stream>>>(std::forward<A>(args)...);
    CUDA_CHECK(cudaGetLastError());
}

/* The grid of a wavefront kernel (versions 2, 4, 5): Tc CTAs, or as many as are resident at once
 * when fewer (every CTA of the wavefront must be running: the hand-off waits for its
 * predecessor). */
template <class... P> static int fl_wavefront_grid(void (*kern)(P...), const fl_tile_info &ti, int Tc)
{
    CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)ti.dyn_bytes));
    int per_sm;
    const int nsm = fl_sm_count();
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, FL_THREADS, ti.dyn_bytes));
    if (per_sm < 1) {
        fprintf(stderr, "flashlab-gpu: %s: no CTA fits on an SM\n", ti.kernel);
        exit(1);
    }
    return (int)fl_grid_wavefront(Tc, (int64_t)per_sm * nsm);
}

/* A cooperative launch of kern over grid CTAs of FL_THREADS threads, the arguments converted to
 * the kernel's parameter types first (the driver copies them by address). */
template <class... P, class... A>
static void fl_launch_coop(void (*kern)(P...), const fl_tile_info &ti, int grid, cudaStream_t stream,
                           fl_launch_log *log, A &&...args)
{
    static_assert(sizeof...(P) == sizeof...(A), "one argument per kernel parameter");
    fl_prepare(kern, ti, log);
    std::tuple<P...> held(std::forward<A>(args)...);
    void *ptrs[sizeof...(P)];
    std::apply([&](auto &...x) {
        int i = 0;
        ((ptrs[i++] = (void *)&x), ...);
    }, held);
    CUDA_CHECK(cudaLaunchCooperativeKernel((const void *)kern, dim3(grid), dim3(FL_THREADS), ptrs, ti.dyn_bytes,
                                           stream));
    CUDA_CHECK(cudaGetLastError());
}

#endif
