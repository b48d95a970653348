"""sdpa_torch.py: bench/gpu_sdpa.py's device layer on PyTorch and CUDA: the inputs, the
implementations of a pass (SDPA's backends, FlashAttention-4 where it imports, our fast kernels
through libflashlab_kernels.so), the fp32 reference and the error statistics, the events and the L2
flush; and what the benchmark's provenance says of the GPU and the packages.

The layer's interface (tests/bench/fake_layer.py implements the same on the CPU, without torch):
  gpu, versions                  dicts for sdpa_provenance's gpu and versions lines
  kernels, skipped, lib_path     our kernels that run here (fast_kernels.py), those that do not
  event(), synchronize(), flush()   for sdpa_timing
  inputs(shape)                  Q, K, V, dO drawn from N(0, 1), (B, H, N, d), never zeros
  impls(shape, inputs, pass_, backends, kernels) -> ([Impl], [(name, why)])
  reference(shape, inputs, pass_, heads), err_stats(x, ref), ref_bytes_per_head(shape, pass_)
                                 for sdpa_accuracy
  release()                      frees what a shape held
An Impl is one implementation of one pass at one shape: call() runs it once on the current stream;
outputs(heads) gives what its last call wrote for a range of the B x H heads (flattened b * H + h).

Needs PyTorch; running anything needs a CUDA GPU.
"""
import importlib
import importlib.metadata
import math
import platform
import sys
import time
import torch
import torch.nn.functional as F
from fast_kernels import FastKernels
from gpu_sdpa import Impl
from torch.nn.attention import SDPBackend, sdpa_kernel

DTYPES = {"fp16": (torch.float16, 1), "bf16": (torch.bfloat16, 2)}  # name -> (torch dtype, fl_dtype)
SDPA = {"sdpa-fa2": SDPBackend.FLASH_ATTENTION, "sdpa-cudnn": SDPBackend.CUDNN_ATTENTION,
        "sdpa-efficient": SDPBackend.EFFICIENT_ATTENTION, "sdpa-math": SDPBackend.MATH}
# FlashAttention-4 (the flash-attn-4 package, CuTe DSL; sm_90 and sm_100): the default backward and
# the deterministic one (fixed-order dQ accumulation).
FA4 = ("fa4", "fa4-det")
BACKENDS = tuple(SDPA) + FA4


def fail(msg):
    print(f"gpu_sdpa: {msg}", file=sys.stderr)
    sys.exit(2)


class Lib(FastKernels):
    """The fast kernels (fast_kernels.py); a refusal ends the benchmark with one line, exit 2."""

    def __init__(self, path):
        try:
            super().__init__(path)
        except OSError as e:
            fail(f"--lib: cannot load {path} ({e}); build it with cmake (kernels/CMakeLists.txt)")

    def run(self, k, nbh, N, causal, **t):
        try:
            super().run(k, nbh, N, causal, torch.cuda.current_stream().cuda_stream, **t)
        except RuntimeError as e:
            fail(str(e))


def _pkg_version(*names):
    for n in names:
        try:
            return importlib.metadata.version(n)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def fa4_function():
    """FlashAttention-4's flash_attn_func, or (None, why) where flash_attn.cute does not import."""
    try:
        return importlib.import_module("flash_attn.cute").flash_attn_func, None
    except Exception as e:  # noqa: BLE001 -- ImportError, or the DSL failing to load its libraries
        return None, f"{type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}"


def heads_of(t, nbh, N, d, heads):
    """The heads [heads.start, heads.stop) of a (B, H, N, d) tensor (any strides) as (k, N, d)."""
    return t.reshape(nbh, N, d)[heads.start:heads.stop]


class CpuEvent:
    """A timing event on the CPU, where every operation has finished when it returns."""

    def record(self):
        self.t = time.perf_counter()

    def elapsed_time(self, other):
        return (other.t - self.t) * 1e3


class TorchLayer:
    """The device layer (module docstring) on the current CUDA device, or with device="cpu" on the
    CPU (SDPA's CPU backends and the reference only: a check of this layer without a GPU).  lib: a
    path to libflashlab_kernels.so, or None for no kernels of ours."""

    def __init__(self, lib=None, device="cuda"):
        torch.backends.cuda.matmul.allow_tf32 = False  # the fp32 reference in fp32, not TF32
        torch.backends.cudnn.allow_tf32 = False
        self.device = device
        self.lib_path = lib
        self.lib = Lib(lib) if lib else None
        self.kernels = self.lib.kernels if self.lib else []
        self.skipped = self.lib.skipped if self.lib else []
        if device == "cuda":
            p = torch.cuda.get_device_properties(0)
            uuid = getattr(p, "uuid", None)
            uuid = str(uuid) if uuid is not None else ""
            if uuid and not uuid.startswith("GPU-"):
                uuid = "GPU-" + uuid
            self.gpu = dict(name=p.name, sms=p.multi_processor_count, l2_bytes=getattr(p, "L2_cache_size", 0),
                            cc=f"{p.major}.{p.minor}", uuid=uuid, driver="")
        else:
            self.gpu = dict(name=f"cpu ({platform.machine()})", sms=None, l2_bytes=0, cc="", uuid="", driver="")
        self.fa4, self.fa4_why = fa4_function()
        self.versions = dict(python=platform.python_version(), torch=torch.__version__, cuda=torch.version.cuda,
                             cudnn=str(torch.backends.cudnn.version()) if torch.backends.cudnn.is_available() else None,
                             flash_attn_4=_pkg_version("flash-attn-4", "fa4"),
                             nvidia_cutlass_dsl=_pkg_version("nvidia-cutlass-dsl"),
                             pynvml=_pkg_version("nvidia-ml-py", "pynvml"))
        self._cache = None

    # ---- timing (sdpa_timing)
    def event(self):
        return torch.cuda.Event(enable_timing=True) if self.device == "cuda" else CpuEvent()

    def synchronize(self):
        if self.device == "cuda":
            torch.cuda.synchronize()

    def flush(self):
        """Zeroes a buffer of 4x the L2 (at least 256 MiB), as Triton's do_bench does."""
        if self._cache is None:
            n = max(256 << 20, 4 * (self.gpu["l2_bytes"] or 0))
            self._cache = torch.empty(n // 4, dtype=torch.int32, device=self.device)
        self._cache.zero_()

    # ---- inputs and implementations
    def inputs(self, shape):
        tdt = DTYPES[shape.dtype][0]
        q, k, v, do = (torch.randn(shape.B, shape.H, shape.N, shape.d, device=self.device, dtype=tdt) for _ in range(4))
        return dict(q=q, k=k, v=v, do=do)

    def impls(self, shape, x, pass_, backends, kernels):
        """([Impl], [(name, why)]) of pass_ at shape: the backends named (BACKENDS) and our kernels
        (dicts of self.kernels).  An implementation that cannot be set up is refused with why;
        one that fails at its first call is gpu_sdpa's to refuse."""
        out, refused = [], []
        for name in backends:
            try:
                if name in SDPA:
                    out.append(self._sdpa(shape, x, pass_, name))
                elif name in FA4:
                    if self.fa4 is None:
                        refused.append((name, f"flash_attn.cute does not import ({self.fa4_why})"))
                    elif not (pass_ == "bwd" or name == "fa4"):
                        continue  # the deterministic variant is a backward's
                    else:
                        out.append(self._fa4(shape, x, pass_, name))
            except (RuntimeError, ValueError, AssertionError, TypeError) as e:
                refused.append((name, str(e).splitlines()[0][:160] if str(e) else type(e).__name__))
        for kern in kernels:
            out.append(self._ours_bwd(shape, x, kern) if pass_ == "bwd" else self._ours_fwd(shape, x, kern))
        return out, refused

    def _sdpa(self, shape, x, pass_, name):
        be, causal = SDPA[name], bool(shape.causal)
        nbh, N, d = shape.B * shape.H, shape.N, shape.d
        last = [None]
        if pass_ == "fwd":
            def call():
                with sdpa_kernel([be]):
                    last[0] = F.scaled_dot_product_attention(x["q"], x["k"], x["v"], is_causal=causal)
            return Impl(name, call, lambda h: {"o": heads_of(last[0], nbh, N, d, h)})
        qg, kg, vg = (x[n].detach().requires_grad_(True) for n in "qkv")
        with sdpa_kernel([be]):
            og = F.scaled_dot_product_attention(qg, kg, vg, is_causal=causal)

        def call():
            last[0] = torch.autograd.grad(og, (qg, kg, vg), x["do"], retain_graph=True)
        return Impl(name, call, lambda h: {o: heads_of(g, nbh, N, d, h) for o, g in zip(("dq", "dk", "dv"), last[0])},
                    keep=[og, qg, kg, vg, last])

    def _fa4(self, shape, x, pass_, name):
        """FlashAttention-4 on (B, N, H, d) copies of the inputs (its layout), made once a shape."""
        causal, det = bool(shape.causal), name == "fa4-det"
        nbh, N, d = shape.B * shape.H, shape.N, shape.d
        if "q_bnhd" not in x:
            for n in ("q", "k", "v", "do"):
                x[n + "_bnhd"] = x[n].transpose(1, 2).contiguous()
        fa4 = self.fa4
        last = [None]

        def back(t):  # (B, N, H, d) -> (B, H, N, d), the heads as the reference has them
            return t.transpose(1, 2)
        if pass_ == "fwd":
            def call():
                r = fa4(x["q_bnhd"], x["k_bnhd"], x["v_bnhd"], causal=causal)
                last[0] = r[0] if isinstance(r, tuple) else r
            return Impl(name, call, lambda h: {"o": heads_of(back(last[0]), nbh, N, d, h)})
        qg, kg, vg = (x[n + "_bnhd"].detach().requires_grad_(True) for n in "qkv")
        r = fa4(qg, kg, vg, causal=causal, deterministic=det)
        og = r[0] if isinstance(r, tuple) else r

        def call():
            last[0] = torch.autograd.grad(og, (qg, kg, vg), x["do_bnhd"], retain_graph=True)
        return Impl(name, call, lambda h: {o: heads_of(back(g), nbh, N, d, h) for o, g in zip(("dq", "dk", "dv"), last[0])},
                    note="deterministic" if det else "", keep=[og, qg, kg, vg, last])

    def _ours_fwd(self, shape, x, kern):
        tdt = DTYPES[shape.dtype][0]
        nbh, N, d = shape.B * shape.H, shape.N, shape.d
        o = torch.full_like(x["q"], float("nan"))  # poisoned: an element no call writes stays NaN
        L = torch.empty(nbh * N, device="cuda", dtype=torch.float32)
        S = P = None
        if kern["algo"] == "standard":
            S = torch.empty(nbh * N * N, device="cuda", dtype=tdt)
            P = torch.empty_like(S)
        lib, causal = self.lib, int(shape.causal)

        def call():
            lib.run(kern, nbh, N, causal, Q=x["q"], K=x["k"], V=x["v"], O=o, L=L, S=S, P=P)
        return Impl(f"ours-v{kern['version']}-{kern['algo']}", call, lambda h: {"o": heads_of(o, nbh, N, d, h)},
                    version=kern["version"], kern=kern, keep=[o, L, S, P])

    def _ours_bwd(self, shape, x, kern):
        """Our backward reads what our own forward saved: O and L (flash2: version 7's forward), or P
        (standard: version 8's), run once here, outside the timing."""
        tdt, fdt = DTYPES[shape.dtype]
        nbh, N, d = shape.B * shape.H, shape.N, shape.d
        fv = 8 if kern["algo"] == "standard" else 7
        fk = next(k for k in self.lib.kernels if k["version"] == fv and k["dtype"] == fdt and k["d"] == d)
        o, L = torch.full_like(x["q"], float("nan")), torch.empty(nbh * N, device="cuda", dtype=torch.float32)
        S = P = dP = dS = None
        if kern["algo"] == "standard":
            S = torch.empty(nbh * N * N, device="cuda", dtype=tdt)
            P, dP, dS = torch.empty_like(S), torch.empty_like(S), torch.empty_like(S)
        lib, causal = self.lib, int(shape.causal)
        lib.run(fk, nbh, N, causal, Q=x["q"], K=x["k"], V=x["v"], O=o, L=L, S=S, P=P)
        dQacc = torch.empty(nbh * N * d, device="cuda", dtype=torch.float32)
        Dv = torch.empty(nbh * N, device="cuda", dtype=torch.float32)
        dq, dk, dv = (torch.full_like(x["q"], float("nan")) for _ in range(3))

        def call():
            lib.run(kern, nbh, N, causal, Q=x["q"], K=x["k"], V=x["v"], O=o, L=L, P=P, dO=x["do"], dQacc=dQacc, Dv=Dv,
                    dQ=dq, dK=dk, dV=dv, dP=dP, dS=dS)
        return Impl(f"ours-v{kern['version']}-{kern['algo']}", call,
                    lambda h: {"dq": heads_of(dq, nbh, N, d, h), "dk": heads_of(dk, nbh, N, d, h), "dv": heads_of(dv, nbh, N, d, h)},
                    version=kern["version"], kern=kern, keep=[o, L, S, P, dP, dS, dQacc, Dv, dq, dk, dv])

    # ---- accuracy (sdpa_accuracy)
    def ref_bytes_per_head(self, shape, pass_):
        """Bytes one head's reference takes at most: S and P (and their gradients, backward) in fp32
        for the reference and in the storage type for the naive one, N^2 each."""
        n2 = shape.N * shape.N
        return n2 * (3 * 4 + 3 * 2) * (2 if pass_ == "bwd" else 1) + 16 * shape.N * shape.d * 4

    def reference(self, shape, x, pass_, heads):
        """(ref, pt) for heads: the fp32 attention (and gradients) and the same computed in the
        storage type (FlashAttention's attention_ref, upcast and not: scores scaled through q
        first, softmax output in the storage type), each a dict output -> (k, N, d)."""
        nbh, N, d = shape.B * shape.H, shape.N, shape.d
        q, k, v, do = (heads_of(x[n], nbh, N, d, heads) for n in ("q", "k", "v", "do"))
        ref = _attention(q.float(), k.float(), v.float(), do.float(), shape.causal, pass_, low=False)
        pt = _attention(q, k, v, do, shape.causal, pass_, low=True)
        return ref, pt

    def err_stats(self, x, ref):
        """(max |x - ref|, sum (x - ref)^2, sum ref^2) as floats; NaN max and sums when x has a
        non-finite element."""
        if not torch.isfinite(x).all():
            return float("nan"), float("nan"), float("nan")
        e = x.float() - ref
        return e.abs().max().item(), e.double().pow(2).sum().item(), ref.double().pow(2).sum().item()

    def release(self):
        if self.device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.empty_cache()


def _attention(q, k, v, do, causal, pass_, low):
    """Attention of (k, N, d) heads with its gradients for pass_ == "bwd": in q's type, scores from
    q pre-scaled (low: the storage type throughout, as attention_ref(upcast=False, reorder_ops=True)),
    or plainly (fp32).  Returns {"o": O}, and backward also {"dq", "dk", "dv"}."""
    with torch.enable_grad():
        q, k, v = (t.detach().requires_grad_(pass_ == "bwd") for t in (q, k, v))
        scale = 1.0 / math.sqrt(q.shape[-1])
        s = (q * scale) @ k.transpose(-1, -2) if low else (q @ k.transpose(-1, -2)) * scale
        if int(causal):
            n = q.shape[1]
            s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
        p = torch.softmax(s, dim=-1).to(v.dtype)
        o = p @ v
        if pass_ == "fwd":
            return {"o": o.detach()}
        dq, dk, dv = torch.autograd.grad(o, (q, k, v), do)
        return {"o": o.detach(), "dq": dq, "dk": dk, "dv": dv}


# ---- the names the other GPU scripts import (ab_fwd.py, clock_probe.py, fig2.py, profile_pair.py)
def time_ms(fn, warmup, reps):
    """median and p95 of reps timed calls (CUDA events around each), after warmup calls"""
    import sdpa_timing
    t = sdpa_timing.time_sequential(_CUDA, [fn], warmup, reps)[0]
    return t.median_ms, t.p95_ms


def time_interleaved(fns, warmup, reps):
    """[(median, p95) ms] of each of fns, timed in rotated rounds (sdpa_timing.time_interleaved)"""
    import sdpa_timing
    return [(t.median_ms, t.p95_ms) for t in sdpa_timing.time_interleaved(_CUDA, fns, warmup, reps)]


class _Cuda:
    def event(self):
        return torch.cuda.Event(enable_timing=True)

    def synchronize(self):
        torch.cuda.synchronize()


_CUDA = _Cuda()


def reference(q, k, v, do, causal, nref):
    """fp32 forward and gradients of the first nref heads of batch 0: (o, dq, dk, dv)"""
    r = _attention(q[0, :nref].float(), k[0, :nref].float(), v[0, :nref].float(), do[0, :nref].float(), causal, "bwd", low=False)
    return r["o"], r["dq"], r["dk"], r["dv"]


def rel_err(x, ref, nref):
    """||x - ref|| / ||ref|| on the first nref heads of batch 0 (NaN when x is not finite there)"""
    x = x[0, :nref].float()
    if not torch.isfinite(x).all():
        return float("nan")
    return ((x - ref).norm() / ref.norm()).item()


def write_rows(path, dev, title, notes, cols, rows):
    """A CSV with the provenance the GPU scripts write (sdpa_provenance.write_csv): title, commit,
    date, the GPU (dev: torch's device properties) and torch, notes, the command line."""
    import os
    import sdpa_provenance
    lines = sdpa_provenance.header(title, sdpa_provenance.commit_of(os.path.dirname(os.path.abspath(__file__))),
                                   [f"gpu: {dev.name}, {dev.multi_processor_count} SMs; torch {torch.__version__}, "
                                    f"CUDA {torch.version.cuda}", *notes])
    sdpa_provenance.write_csv(path, lines, cols, rows)
