"""sdpa_provenance.py: the `#` lines at the top of a benchmark CSV (what produced it), and the one
writer of such a CSV.  No torch: the GPU's and the packages' descriptions come in as dicts
(bench/sdpa_torch.py reads them from the device).

The lines a gpu_sdpa.py record carries, in order (tests/check_gpu_records.py reads those marked *):
  title; commit: the tree's commit; date: UTC;
  gpu: name, SMs, L2, compute capability, uuid; driver;
  versions: python, torch, CUDA, cuDNN, flash-attn-4, nvidia-cutlass-dsl, pynvml ("absent" where
      a package is not there);
  peak: the dense peak MFU is taken against (bench/gpu_peaks.py);
  clocks: how the clock and power columns were read, or "absent" and why;
  library: our kernels' shared library and its sha256;
  * kernel source: version V sha256 ... at commit C, one line per version of ours (kernel_source.py);
  * timing: the order and cache state first ("interleaved, warm: ..."; sdpa_timing.describe);
  accuracy: the rules;  command: the command line.
"""
import datetime
import hashlib
import os
import subprocess
import sys
import tempfile

PACKAGES = (("flash-attn-4", "flash_attn_4"), ("nvidia-cutlass-dsl", "nvidia_cutlass_dsl"), ("pynvml", "pynvml"))


def commit_of(src):
    """FLASHLAB_COMMIT from the environment (the device scripts set it: the device has no .git),
    else git's HEAD of src, else "unknown"."""
    c = os.environ.get("FLASHLAB_COMMIT")
    if c:
        return c
    try:
        p = subprocess.run(["git", "-C", src, "rev-parse", "HEAD"], capture_output=True, text=True)
        if p.returncode == 0 and p.stdout.strip():
            return p.stdout.strip()
    except OSError:
        pass
    return "unknown"


def file_sha256(path):
    """sha256 hex of a file's bytes, or None when it cannot be read."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return None
    return h.hexdigest()


def gpu_line(gpu):
    """gpu: name, SMs, L2, compute capability, uuid; driver ('unknown' where not read)."""
    l2 = gpu.get("l2_bytes")
    return (f"gpu: {gpu.get('name') or 'unknown'}, {gpu.get('sms') or '?'} SMs, L2 "
            f"{(l2 / 2 ** 20) if l2 else 0:.0f} MiB, compute capability {gpu.get('cc') or '?'}, uuid "
            f"{gpu.get('uuid') or 'unknown'}; driver {gpu.get('driver') or 'unknown'}")


def versions_line(v):
    """versions: python, torch, CUDA, cuDNN and the optional packages, "absent" for a missing one."""
    def s(k):
        return v.get(k) or "absent"
    return (f"versions: python {s('python')}, torch {s('torch')}, CUDA {s('cuda')}, cuDNN {s('cudnn')}, "
            + ", ".join(f"{name} {s(key)}" for name, key in PACKAGES))


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def header(title, commit, lines, command=None):
    """The provenance lines (without "# "): title, commit, date, then lines, then the command line."""
    return [title, f"commit: {commit}", f"date: {utc_now()}", *lines,
            "command: " + " ".join(command if command is not None else sys.argv)]


def write_csv(path, lines, cols, rows):
    """Writes the provenance lines (each as "# line"), the header (cols, a trailing _ dropped) and
    rows (dicts over cols; floats as %.6g, None empty) to path: through a temporary file of its own
    in path's folder, renamed over path, so a failure leaves path as it was.  Raises OSError."""
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".gpu_sdpa_", suffix=".tmp", dir=d)
    try:
        with os.fdopen(fd, "w") as f:
            for line in lines:
                f.write(f"# {line}\n")
            f.write(",".join(c.rstrip("_") for c in cols) + "\n")
            for r in rows:
                f.write(",".join("" if r.get(c) is None else (f"{r[c]:.6g}" if isinstance(r[c], float) else str(r[c]))
                                 for c in cols) + "\n")
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
