/* pipeline.cuh: the on-chip hand-offs of a warp-specialized kernel (version 12, sm_90a): mbarriers
 * between the producer warp that issues the tensor copies (fl_gtmap::load, counted.cuh) and the
 * consumer warpgroups that compute, named barriers inside a group of warps, and the register
 * reallocation between them.  None of these touches global memory.
 *
 * An mbarrier (PTX ISA, "mbarrier") is a 64-bit word in shared memory with an expected arrival
 * count and a phase bit.  A phase completes when all its arrivals have come and all the bytes
 * announced by arrive.expect_tx have landed; the phase bit then flips.  A ring of S stages uses,
 * for stage s = j mod S at its (j / S)-th use, the parity (j / S) & 1:
 *
 *   full[s]   (1 arrival: the producer's expect_tx; the copy engine's bytes complete it)
 *             consumers wait on parity (j / S) & 1
 *   empty[s]  (one arrival per consumer warp, after its last read of the stage)
 *             the producer waits on parity ((j / S) & 1) ^ 1: a fresh barrier counts as having
 *             completed the phase before its first, so the first S loads do not wait
 */
#ifndef FL_KERNELS_PIPELINE_CUH
#define FL_KERNELS_PIPELINE_CUH

#include <stdint.h>

#include "arch.cuh"
#include "counted.cuh"

/* Initializes the mbarrier at b for `count` arrivals a phase (one thread, before any use; then
 * fl_mbar_init_fence and a CTA barrier). */
__device__ __forceinline__ void fl_mbar_init(uint64_t *b, int count)
{
    FL_SM90A_ASM("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(fl_smem_u32(b)), "r"(count) : "memory");
}
/* Makes the initializations visible to the other threads and to the copy engine. */
__device__ __forceinline__ void fl_mbar_init_fence() { FL_SM90A_ASM("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }

/* One arrival that also announces `bytes` more transaction bytes for the current phase. */
__device__ __forceinline__ void fl_mbar_expect_tx(uint64_t *b, unsigned bytes)
{
    FL_SM90A_ASM("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(fl_smem_u32(b)), "r"(bytes) : "memory");
}
/* One arrival. */
__device__ __forceinline__ void fl_mbar_arrive(uint64_t *b)
{
    FL_SM90A_ASM("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(fl_smem_u32(b)) : "memory");
}
/* Waits until the phase of parity `parity` has completed (acquire: what the copy engine or the
 * arriving threads wrote before it completed is visible after). */
__device__ __forceinline__ void fl_mbar_wait(uint64_t *b, int parity)
{
#if FL_CODE_HAS(FL_NEED_SM90A)
    unsigned done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done) : "r"(fl_smem_u32(b)), "r"(parity) : "memory");
    } while (!done);
#else
    fl_arch_missing();
#endif
}

/* Where a ring of ST stages is: the stage s of the next use and that use's parity ph, (j / ST) & 1
 * for use j as above, stepped one use at a time by next() (no division or remainder a step; in a
 * uniform register when the kernel's loop counters are). */
template <int ST> struct fl_ring {
    int s = 0, ph = 0;
    __device__ __forceinline__ void next()
    {
        if (++s == ST) s = 0, ph ^= 1;
    }
};

/* Named barrier `id` (1-15; 0 is __syncthreads) over `n` threads, a multiple of 32: wait for it,
 * or arrive without waiting (the other side of a hand-off between warpgroups). */
__device__ __forceinline__ void fl_named_sync(int id, int n) { asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(n) : "memory"); }
__device__ __forceinline__ void fl_named_arrive(int id, int n) { asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(n) : "memory"); }

/* The warpgroup gives up registers down to R a thread (the producer), or waits for them up to R
 * (the consumers); every thread of the warpgroup executes it. */
template <int R> __device__ __forceinline__ void fl_setmaxnreg_dec() { FL_SM90A_ASM("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(R)); }
template <int R> __device__ __forceinline__ void fl_setmaxnreg_inc() { FL_SM90A_ASM("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(R)); }

#endif
