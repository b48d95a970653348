/* arch.cuh: which GPU architecture the device code being compiled is for, and what each rung of
 * the ladder needs from it.
 *
 * nvcc compiles every .cu once for the host and once per target architecture (CMake's
 * CMAKE_CUDA_ARCHITECTURES: sm_75 ... sm_90a).  A version whose instructions do not exist on a
 * target compiles there to a stub that traps (fl_arch_missing), and the harness never launches
 * it: each ladder file's probe kernel (FL_LADDER_PROBE, attn.h) reports at run time whether the
 * code the driver loaded for this GPU holds the real kernels.
 *
 *   FL_NEED_BASE   sm_75 and up: scalar loads and stores, ld.acquire / st.release, __nanosleep,
 *                  cooperative launch (versions 1-6)
 *   FL_NEED_SM80   cp.async, mma.sync m16n8k16 (fp16 and bf16 in, fp32 accumulate), ldmatrix,
 *                  bf16 conversions in hardware (versions 7, 8, 9, 11)
 *   FL_NEED_SM90A  wgmma.mma_async and the fence.proxy.async it needs: the architecture-specific
 *                  feature set of sm_90a only (version 10), and with them TMA tensor
 *                  copies, mbarrier transactions and setmaxnreg (version 12); sm_100 has no wgmma
 *
 * Inside a kernel body:   #if FL_CODE_HAS(FL_NEED_SM80) ... #else fl_arch_missing(); #endif
 * In the host pass every body is kept (it is parsed, never compiled into host code).
 */
#ifndef FL_KERNELS_ARCH_CUH
#define FL_KERNELS_ARCH_CUH

#define FL_NEED_BASE 750
#define FL_NEED_SM80 800
#define FL_NEED_SM90A 901 /* 900 with the 'a' feature set (__CUDA_ARCH_FEAT_SM90_ALL) */

#ifdef __CUDA_ARCH__
#define FL_CODE_ARCH __CUDA_ARCH__
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
#define FL_CODE_FEAT_90A 1
#else
#define FL_CODE_FEAT_90A 0
#endif
#else
#define FL_CODE_ARCH 9999 /* host pass */
#define FL_CODE_FEAT_90A 1
#endif

/* 1 when the code being compiled has what `need` names (a preprocessor expression). */
#define FL_CODE_HAS(need) \
    ((need) == FL_NEED_SM90A ? (FL_CODE_ARCH == 900 || FL_CODE_ARCH == 9999) && FL_CODE_FEAT_90A : FL_CODE_ARCH >= (need))

/* The body of a kernel compiled for a target that lacks its instructions: never launched (the
 * probe says so first); if it is, the launch fails with an illegal-instruction error. */
__device__ __forceinline__ void fl_arch_missing() { __trap(); }

/* An asm statement of sm_90a's instructions (wgmma, TMA, mbarrier transactions, setmaxnreg): on
 * other targets it compiles to fl_arch_missing (never executed: the versions that use it are stubs
 * there, and their probes say so). */
#if FL_CODE_HAS(FL_NEED_SM90A)
#define FL_SM90A_ASM(...) asm volatile(__VA_ARGS__)
#else
#define FL_SM90A_ASM(...) fl_arch_missing()
#endif

/* "sm_80", "sm_90a", ...: the name of a need, for messages. */
static inline const char *fl_need_name(int need)
{
    return need == FL_NEED_SM90A ? "sm_90a" : need == FL_NEED_SM80 ? "sm_80" : "sm_75";
}

#endif
