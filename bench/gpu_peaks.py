"""gpu_peaks.py: the dense fp16/bf16 tensor-core peak of a GPU, by its name, for the benchmark's MFU
(model FLOP utilization: achieved TFLOP/s over this peak).  No torch, no GPU.

Each peak is the vendor's datasheet figure for dense fp16/bf16 matrix math with fp32 accumulation
(half the "with sparsity" figure the datasheets print first).  A name matching none gives no MFU,
and the provenance line says so.
"""
import re

# (pattern on the name the driver reports, TFLOP/s, source); the first match wins, so the more
# specific names come first ("H200 NVL" before "H200", "A100" is not "A10").
PEAKS = (
    (r"\bGH200\b", 989.4, "NVIDIA GH200 datasheet: 1,979 TFLOP/s fp16/bf16 with sparsity"),
    (r"\bH200 NVL\b", 835.5, "NVIDIA H200 NVL datasheet: 1,671 TFLOP/s fp16/bf16 with sparsity"),
    (r"\bH200\b", 989.4, "NVIDIA H200 SXM datasheet: 1,979 TFLOP/s fp16/bf16 with sparsity"),
    (r"\bH100 PCIe\b", 756.5, "NVIDIA H100 PCIe datasheet: 1,513 TFLOP/s fp16/bf16 with sparsity"),
    (r"\bH100 NVL\b", 835.5, "NVIDIA H100 NVL datasheet: 1,671 TFLOP/s fp16/bf16 with sparsity"),
    (r"\bH100\b", 989.4, "NVIDIA H100 SXM datasheet: 1,979 TFLOP/s fp16/bf16 with sparsity"),
    (r"\bB200\b", 2250.0, "NVIDIA HGX B200 datasheet: 4.5 PFLOP/s fp16/bf16 with sparsity per GPU"),
    (r"\bA100\b", 312.0, "NVIDIA A100 datasheet: 624 TFLOP/s fp16/bf16 with sparsity"),
    (r"\bL40S\b", 362.05, "NVIDIA L40S datasheet: 733 TFLOP/s fp16/bf16 with sparsity"),
    (r"\bL4\b", 121.0, "NVIDIA L4 datasheet: 242 TFLOP/s fp16/bf16 with sparsity"),
    (r"\bA10\b", 125.0, "NVIDIA A10 datasheet: 250 TFLOP/s fp16/bf16 with sparsity"),
    (r"\bT4\b", 65.0, "NVIDIA T4 datasheet: 65 TFLOP/s fp16 mixed precision"),
    (r"RTX 4090\b", 165.2, "NVIDIA Ada whitepaper: RTX 4090 fp16 with fp32 accumulate, 330.3 with sparsity"),
    (r"RTX 3090\b", 71.0, "NVIDIA Ampere GA102 whitepaper: RTX 3090 fp16 with fp32 accumulate, 142 with sparsity"),
)


def peak(name):
    """(TFLOP/s, source) of the GPU named name, or (None, why) when the table has no such GPU."""
    for pat, tf, src in PEAKS:
        if re.search(pat, name or ""):
            return tf, src
    return None, f"no dense peak known for {name!r} (bench/gpu_peaks.py): mfu left empty"


def mfu(tflops, peak_tflops):
    """Achieved over peak, or None where either is missing."""
    return tflops / peak_tflops if tflops and peak_tflops else None
