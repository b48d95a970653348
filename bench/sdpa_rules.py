"""sdpa_rules.py: the benchmark's arithmetic and verdicts, defined once.  bench/gpu_sdpa.py writes
them into its CSVs; tests/check_gpu_records.py recomputes them from a record's raw columns
(median_ms, rel_err, the max-error columns) instead of trusting the stored ratio_vs_* and acc_ok.
No torch, no GPU.

Rows are dicts as csv.DictReader gives them (strings; "" for an empty cell) or as gpu_sdpa.py
builds them (numbers; None for an empty cell): every function here reads both.
"""
import math

# The outputs each pass is checked on, and the CSV columns of their errors (gpu_sdpa.py, --help):
# maxerr_<o> = max |x - ref| over every element of every head against the fp32 reference,
# pterr_<o> the same for a naive attention computed in the storage type (FlashAttention's tests'
# "PyTorch implementation", out_pt).
OUTPUTS = {"fwd": ("o",), "bwd": ("dq", "dk", "dv")}
ERR_COLUMNS = tuple(f"{kind}_{o}" for kind in ("maxerr", "pterr") for o in ("o", "dq", "dk", "dv"))

UNIT_ROUNDOFF = {"fp16": 2.0 ** -11, "bf16": 2.0 ** -8}
# FlashAttention's tests: max |x - ref| <= 2 max |out_pt - ref| + atol, atol twice the fp32
# rounding of the reference (~1e-7); 1e-5 here, which at the errors seen in fp16/bf16 (1e-4 to 1e-2)
# loosens the rule by at most 10 %.
MAX_ERR_FACTOR, MAX_ERR_ATOL = 2.0, 1e-5
NORM_FACTOR, NORM_ATOL = 2.0, 1e-4


def num(x):
    """x as a float: None for None, "" or a cell that is not a number."""
    if x is None or x == "":
        return None
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def flops(pass_, B, H, N, d, causal):
    """The FlashAttention papers' count: 4 B H N^2 d forward (two products of 2 N^2 d a head),
    2.5x that backward (five products), halved with the causal mask."""
    f = 4.0 * int(B) * int(H) * int(N) ** 2 * int(d) * (0.5 if int(causal) else 1.0)
    return f * (2.5 if pass_ == "bwd" else 1.0)


def min_bytes(pass_, B, H, N, d, dtype):
    """The fewest HBM bytes: Q, K, V read and O written forward; Q, K, V, O, dO read and dQ, dK,
    dV written backward (elements of the storage type, 2 bytes)."""
    el = 2 if dtype in UNIT_ROUNDOFF else 4
    return (8 if pass_ == "bwd" else 4) * int(B) * int(H) * int(N) * int(d) * el


def tflops(row):
    """TFLOP/s of a row from its shape and median_ms (None without a time)."""
    ms = num(row.get("median_ms"))
    if not ms:
        return None
    return flops(row["pass"] if "pass" in row else row["pass_"], row["B"], row["H"], row["N"], row["d"], row["causal"]) / ms / 1e9


def ratio(ref_row, row):
    """ref's median time over row's (> 1: row is faster), or None where either has no time."""
    if ref_row is None:
        return None
    a, b = num(ref_row.get("median_ms")), num(row.get("median_ms"))
    return a / b if a and b else None


def norm_ok(row, fa2_row):
    """The norm rule: rel_err = ||x - ref|| / ||ref|| (the worst of the pass's outputs) at most
    twice SDPA FA2's on the same inputs + 1e-4; a materializing version (algo standard: S, P, dP,
    dS stored in the storage type, as the model's standard schedule) passes too at most twice the
    type's unit roundoff.  With no FA2 row beside it, only finiteness is asked.  NaN never passes."""
    e = num(row.get("rel_err"))
    if e is None or math.isnan(e):
        return False
    e_fa2 = num(fa2_row.get("rel_err")) if fa2_row else None
    if e_fa2 is None or e <= NORM_FACTOR * e_fa2 + NORM_ATOL:
        return True
    return str(row.get("impl", "")).endswith("standard") and e <= 2 * UNIT_ROUNDOFF[row["dtype"]]


def max_ok(row):
    """The max rule of FlashAttention's tests, on every output of the pass: maxerr_<o> at most
    twice pterr_<o> + 1e-5.  None when the row has no max-error columns (records before them)."""
    p = row["pass"] if "pass" in row else row["pass_"]
    pairs = [(num(row.get(f"maxerr_{o}")), num(row.get(f"pterr_{o}"))) for o in OUTPUTS[p]]
    if all(e is None and pt is None for e, pt in pairs):
        return None
    for e, pt in pairs:
        if e is None or pt is None or math.isnan(e) or math.isnan(pt):
            return False
        if e > MAX_ERR_FACTOR * pt + MAX_ERR_ATOL:
            return False
    return True


def acc_ok(row, fa2_row):
    """1 when the row passes the norm rule and, where it has max-error columns, the max rule; else 0."""
    m = max_ok(row)
    return int(norm_ok(row, fa2_row) and m is not False)


def shape_key(row):
    """(dtype, d, N, causal, pass) of a row: the rows one ratio compares."""
    p = row["pass"] if "pass" in row else row["pass_"]
    return (row["dtype"], int(row["d"]), int(row["N"]), int(row["causal"]), p)


def recompute(rows):
    """For every row, what gpu_sdpa.py derives from the raw columns, recomputed: a dict
    id(row) -> {tflops, ratio_vs_fa2, ratio_vs_cudnn, ratio_vs_fa4, acc_ok}, each ratio against
    that implementation's row of the same shape and pass (None where there is none)."""
    ref = {}
    for r in rows:
        if r["impl"] in ("sdpa-fa2", "sdpa-cudnn", "fa4"):
            ref[(r["impl"], shape_key(r))] = r
    out = {}
    for r in rows:
        k = shape_key(r)
        fa2 = ref.get(("sdpa-fa2", k))
        out[id(r)] = dict(tflops=tflops(r), ratio_vs_fa2=ratio(fa2, r), ratio_vs_cudnn=ratio(ref.get(("sdpa-cudnn", k)), r),
                          ratio_vs_fa4=ratio(ref.get(("fa4", k)), r), acc_ok=acc_ok(r, fa2))
    return out
