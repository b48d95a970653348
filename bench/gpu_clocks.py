"""gpu_clocks.py: the GPU's SM and memory clocks, board power and temperature during a benchmark,
from NVML (the pynvml module of the nvidia-ml-py package) where it imports, else from nvidia-smi
queries; with neither the clocks are recorded as absent.  It only reads: it never sets a clock,
a power limit or any other setting (the device README's rule).  No torch.

A Sampler reads the GPU every period in a thread of its own, and once more, synchronously, at every
mark(); window(t0, t1) summarizes the readings between two marks (the host's monotonic clock).
"""
import subprocess
import threading
import time

FIELDS = ("sm_mhz", "mem_mhz", "power_w", "temp_c")
# The CSV columns of a window's summary (gpu_sdpa.py).
# clock_reasons: the OR of NVML's clock-event (throttle) reason bits over the window.
COLUMNS = ("sm_mhz_min", "sm_mhz_mean", "mem_mhz_mean", "power_w_mean", "temp_c_max", "clock_reasons", "clock_samples")


class NvmlSource:
    """NVML through pynvml: read() -> dict of FIELDS (and "reasons", the clock-event or throttle
    reason bits, where the library has them).  Raises on any NVML failure at construction."""

    def __init__(self, pynvml, index=0, uuid=None):
        self.nv = pynvml
        pynvml.nvmlInit()
        h = None
        if uuid:
            try:
                h = pynvml.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith("GPU-") else "GPU-" + uuid)
            except Exception:  # noqa: BLE001 -- any NVML error: fall back on the index
                h = None
        self.h = h if h is not None else pynvml.nvmlDeviceGetHandleByIndex(index)
        self.reasons = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            getattr(pynvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None)
        self.describe = f"NVML (pynvml {getattr(pynvml, '__version__', '?')})"

    def read(self):
        nv, h = self.nv, self.h
        r = dict(sm_mhz=float(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)),
                 mem_mhz=float(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)),
                 power_w=nv.nvmlDeviceGetPowerUsage(h) / 1000.0,
                 temp_c=float(nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)))
        if self.reasons:
            try:
                r["reasons"] = int(self.reasons(h))
            except Exception:  # noqa: BLE001 -- optional
                pass
        return r

    def info(self):
        """{uuid, driver, name} as NVML reports them ('' where it does not)."""
        def s(f, *a):
            try:
                v = f(*a)
                return v.decode() if isinstance(v, bytes) else str(v)
            except Exception:  # noqa: BLE001
                return ""
        return dict(uuid=s(self.nv.nvmlDeviceGetUUID, self.h), driver=s(self.nv.nvmlSystemGetDriverVersion),
                    name=s(self.nv.nvmlDeviceGetName, self.h))


class SmiSource:
    """nvidia-smi, one query a read (about 20-50 ms of the host's time, none of the GPU's)."""
    QUERY = "clocks.sm,clocks.mem,power.draw,temperature.gpu"

    def __init__(self, index=0, smi="nvidia-smi", run=subprocess.run):
        self.cmd = [smi, f"--query-gpu={self.QUERY}", "--format=csv,noheader,nounits", "-i", str(index)]
        self.smi, self.index, self.run = smi, index, run
        self.read()  # raises when nvidia-smi cannot be run or says nothing readable
        self.describe = "nvidia-smi queries"

    def read(self):
        out = self.run(self.cmd, capture_output=True, text=True, timeout=10)
        vals = [v.strip() for v in out.stdout.strip().splitlines()[0].split(",")]
        return {k: float(v) for k, v in zip(FIELDS, vals) if _is_num(v)}

    def info(self):
        try:
            out = self.run([self.smi, "--query-gpu=uuid,driver_version,name", "--format=csv,noheader", "-i", str(self.index)],
                           capture_output=True, text=True, timeout=10)
            uuid, driver, name = (v.strip() for v in out.stdout.strip().splitlines()[0].split(",", 2))
            return dict(uuid=uuid, driver=driver, name=name)
        except (OSError, ValueError, IndexError, subprocess.SubprocessError):
            return dict(uuid="", driver="", name="")


def _is_num(v):
    try:
        float(v)
        return True
    except ValueError:
        return False


def open_source(index=0, uuid=None, import_nvml=None, smi="nvidia-smi", run=subprocess.run):
    """(source, description): NVML where pynvml imports and initializes, else nvidia-smi where it
    answers, else (None, why neither)."""
    why = []
    try:
        nv = import_nvml() if import_nvml else __import__("pynvml")
        return NvmlSource(nv, index, uuid), None
    except Exception as e:  # noqa: BLE001 -- ImportError, NVMLError, ...: try the next
        why.append(f"NVML: {type(e).__name__}: {str(e)[:80]}")
    try:
        return SmiSource(index, smi, run), None
    except (OSError, ValueError, IndexError, subprocess.SubprocessError) as e:
        why.append(f"nvidia-smi: {type(e).__name__}: {str(e)[:80]}")
    return None, "; ".join(why)


class Sampler:
    """Readings of a source every period_s in a thread, plus one at every mark()."""

    def __init__(self, source, period_s=0.05, clock=time.monotonic):
        self.src, self.period, self.clock = source, period_s, clock
        self.samples, self.lock, self.stop_ev = [], threading.Lock(), threading.Event()
        self.thread = None

    def _read(self, t=None):
        t = self.clock() if t is None else t
        try:
            r = self.src.read()
        except Exception:  # noqa: BLE001 -- a failed reading is skipped, not fatal
            return
        with self.lock:
            self.samples.append((t, r))

    def _loop(self):
        while not self.stop_ev.wait(self.period):
            self._read()

    def start(self):
        if self.period > 0:
            self.thread = threading.Thread(target=self._loop, daemon=True)
            self.thread.start()
        return self

    def stop(self):
        self.stop_ev.set()
        if self.thread:
            self.thread.join(timeout=5)

    def mark(self):
        """Reads once now and returns the time stamp of that reading (a window's end)."""
        t = self.clock()
        self._read(t)
        return t

    def window(self, t0, t1):
        """The summary of the readings stamped in [t0, t1] (marks included) as COLUMNS, or None
        without readings."""
        with self.lock:
            s = [r for t, r in self.samples if t0 <= t <= t1 + 1e-9]
        if not s:
            return None

        def vals(k):
            return [r[k] for r in s if k in r]
        out = dict(clock_samples=len(s))
        sm, mem, pw, tc = vals("sm_mhz"), vals("mem_mhz"), vals("power_w"), vals("temp_c")
        out["sm_mhz_min"] = min(sm) if sm else None
        out["sm_mhz_mean"] = sum(sm) / len(sm) if sm else None
        out["mem_mhz_mean"] = sum(mem) / len(mem) if mem else None
        out["power_w_mean"] = sum(pw) / len(pw) if pw else None
        out["temp_c_max"] = max(tc) if tc else None
        rs = vals("reasons")
        if rs:
            acc = 0
            for x in rs:
                acc |= x
            out["clock_reasons"] = acc
        return out
