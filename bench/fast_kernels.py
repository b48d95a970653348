"""fast_kernels.py: the ctypes binding of libflashlab_kernels.so (kernels/harness/fast_api.cu), for
the GPU scripts that run our fast kernels on PyTorch tensors (bench/gpu_sdpa.py,
scripts/third_party_attn.py).  Importing it needs neither torch nor a GPU; running a kernel needs
both.
"""
import ctypes

TENSORS = ("Q", "K", "V", "O", "L", "S", "P", "dO", "dQacc", "Dv", "dQ", "dK", "dV", "dP", "dS")


class FastKernels:
    """The kernels the library lists (fl_fast_describe), each a dict i, algo, version, bwd, dtype
    (fl_dtype: 1 fp16, 2 bf16), d, Br, Bc.  .kernels: those that run on this GPU
    (fl_fast_runs_here); .skipped: (kernel, why) of the others.  Raises OSError when the library
    cannot be loaded."""

    def __init__(self, path):
        self.h = ctypes.CDLL(path)
        self.h.fl_fast_run.restype = ctypes.c_int
        self.h.fl_fast_run.argtypes = [ctypes.c_int] * 4 + [ctypes.c_void_p] * (len(TENSORS) + 1)
        self.h.fl_fast_runs_here.restype = ctypes.c_int
        self.h.fl_fast_runs_here.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        self.kernels, self.skipped = [], []
        i = 0
        while True:
            algo = ctypes.create_string_buffer(16)
            f = [ctypes.c_int() for _ in range(6)]
            if self.h.fl_fast_describe(i, algo, *[ctypes.byref(x) for x in f]) != 0:
                break
            k = dict(i=i, algo=algo.value.decode(), version=f[0].value, bwd=f[1].value, dtype=f[2].value,
                     d=f[3].value, Br=f[4].value, Bc=f[5].value)
            why = ctypes.create_string_buffer(256)
            if self.h.fl_fast_runs_here(i, why, 256) == 1:
                self.kernels.append(k)
            else:  # e.g. version 10 (wgmma) on a GPU other than sm_90a
                self.skipped.append((k, why.value.decode()))
            i += 1

    def find(self, version, fdt, d, Br=None, Bc=None):
        """The first kernel of this version, fl_dtype and d (and tiles Br x Bc when given) that runs
        here, or None."""
        for k in self.kernels:
            if k["version"] == version and k["dtype"] == fdt and k["d"] == d and (Br is None or (k["Br"], k["Bc"]) == (Br, Bc)):
                return k
        return None

    def run(self, k, nbh, N, causal, stream, **t):
        """Launches kernel k over nbh = batch x heads heads of length N on the CUDA stream handle
        stream (torch.cuda.current_stream().cuda_stream), with the named tensors of TENSORS (torch
        tensors; the others are passed as NULL).  Raises RuntimeError when fl_fast_run refuses."""
        unknown = set(t) - set(TENSORS)
        if unknown:
            raise ValueError(f"fast kernel run: unknown tensors {sorted(unknown)}")
        ptrs = [ctypes.c_void_p(t[n].data_ptr()) if t.get(n) is not None else None for n in TENSORS]
        if self.h.fl_fast_run(k["i"], nbh, N, causal, *ptrs, ctypes.c_void_p(stream)) != 0:
            raise RuntimeError(f"fl_fast_run refused kernel {k}")
