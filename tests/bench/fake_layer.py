"""fake_layer.py: a device layer for bench/gpu_sdpa.py without torch or a GPU (the interface of
bench/sdpa_torch.py's TorchLayer), on a virtual clock, that logs every call, event, flush and
accuracy request in order, so that tests/bench/test_gpu_sdpa.py can check the benchmark's logic.

Time: every call of an implementation advances the clock by its duration (ms), every flush by
FLUSH_MS; an event records the clock, so elapsed_time is exactly the durations between.
Errors: every head of every output of every implementation has the max error `err` (per head
`planted` overrides: (impl, head) -> error, NaN allowed) and the naive attention `pt_err`; a head's
"sum of squared errors" is err^2 x ELEMENTS and its "sum ref^2" ELEMENTS, so rel_err = err.
"""
import math

from gpu_sdpa import Impl

FLUSH_MS = 7.0
ELEMENTS = 100


class Event:
    def __init__(self, layer):
        self.layer, self.t = layer, None

    def record(self):
        self.t = self.layer.now
        self.layer.log.append(("event",))

    def elapsed_time(self, other):
        assert self.t is not None and other.t is not None, "elapsed_time of an unrecorded event"
        return other.t - self.t


OUTS = {"fwd": ("o",), "bwd": ("dq", "dk", "dv")}


class FakeLayer:
    """durations: impl name -> ms a call, or a function (call index of that impl) -> ms;
    refuse: {name: why} refused at set-up; fail_first: names whose first call raises."""

    def __init__(self, durations=None, err=5e-4, pt_err=1e-3, planted=None, kernels=None, refuse=None,
                 fail_first=(), name="NVIDIA H200"):
        self.now, self.log = 0.0, []
        self.durations = durations or {}
        self.err, self.pt_err, self.planted = err, pt_err, planted or {}
        self.refuse = refuse if refuse is not None else {"fa4": "flash_attn.cute does not import (fake)"}
        self.fail_first = set(fail_first)
        self.kernels = kernels if kernels is not None else [
            dict(i=0, algo="flash2", version=12, bwd=0, dtype=1, d=64, Br=128, Bc=128),
            dict(i=1, algo="flash2", version=13, bwd=1, dtype=1, d=64, Br=64, Bc=128)]
        self.skipped = []
        self.gpu = dict(name=name, sms=132, l2_bytes=60 * 2 ** 20, cc="9.0", uuid="GPU-00000000-fake", driver="")
        self.versions = dict(python="3.12.3", torch="2.11.0+cu130", cuda="13.0", cudnn="91500", flash_attn_4=None,
                             nvidia_cutlass_dsl=None, pynvml="13.580.82")
        self.calls = {}

    # timing
    def event(self):
        return Event(self)

    def synchronize(self):
        self.log.append(("sync",))

    def flush(self):
        self.log.append(("flush",))
        self.now += FLUSH_MS

    # implementations
    def inputs(self, shape):
        self.log.append(("inputs", shape))
        return {"shape": shape}

    def duration(self, name):
        i = self.calls.get(name, 0)
        self.calls[name] = i + 1
        d = self.durations.get(name, 1.0)
        return d(i) if callable(d) else d

    def _impl(self, name, pass_, kern=None, version=""):
        first = [name in self.fail_first]

        def call():
            if first[0]:
                first[0] = False
                raise RuntimeError(f"{name}: no kernel for this shape (fake)")
            self.log.append(("call", name))
            self.now += self.duration(name)

        def outputs(heads):
            self.log.append(("outputs", name, heads.start, heads.stop))
            return {o: ("out", name, o, heads) for o in OUTS[pass_]}
        return Impl(name, call, outputs, version, kern)

    def impls(self, shape, x, pass_, backends, kernels):
        self.log.append(("impls", pass_, tuple(backends), tuple(k["version"] for k in kernels)))
        out, refused = [], []
        for b in backends:
            if b in self.refuse:
                refused.append((b, self.refuse[b]))
            elif b == "fa4-det" and pass_ == "fwd":
                continue
            else:
                out.append(self._impl(b, pass_))
        for k in kernels:
            out.append(self._impl(f"ours-v{k['version']}-{k['algo']}", pass_, k, k["version"]))
        return out, refused

    # accuracy
    def ref_bytes_per_head(self, shape, pass_):
        return 1000

    def reference(self, shape, x, pass_, heads):
        self.log.append(("reference", pass_, heads.start, heads.stop))
        return ({o: ("ref", o, heads) for o in OUTS[pass_]}, {o: ("pt", o, heads) for o in OUTS[pass_]})

    def err_stats(self, x, ref):
        kind, heads = x[0], x[-1]
        if kind == "pt":
            errs = [self.pt_err for _ in heads]
        else:
            errs = [self.planted.get((x[1], h), self.err) for h in heads]
        if any(math.isnan(e) for e in errs):
            return float("nan"), float("nan"), float("nan")
        return max(errs), sum(e * e * ELEMENTS for e in errs), float(ELEMENTS * len(errs))

    def release(self):
        self.log.append(("release",))


class FakeClocks:
    """A clock source (gpu_clocks' interface): fixed readings, counted."""
    describe = "NVML (fake)"

    def __init__(self, sm=1980.0):
        self.reads, self.sm = 0, sm

    def read(self):
        self.reads += 1
        return dict(sm_mhz=self.sm - self.reads % 3, mem_mhz=3201.0, power_w=650.0, temp_c=55.0, reasons=4)

    def info(self):
        return dict(uuid="GPU-00000000-fake", driver="580.159.04", name="NVIDIA H200")
