"""sdpa_accuracy.py: how bench/gpu_sdpa.py checks every implementation of a pass on every head,
after the timing, against an fp32 reference.  No torch: the device layer (`layer`,
bench/sdpa_torch.py or the tests' fake) computes, this module decides what and in which order.

For the heads of a shape in chunks (as many as --ref-mem-gib holds of the reference's working set):
  layer.reference(shape, inputs, pass_, heads) -> (ref, pt): dicts output -> the fp32 reference of
      those heads (FlashAttention's attention_ref, upcast) and a naive attention computed in the
      storage type (attention_ref(upcast=False), the tests' out_pt);
  impl.outputs(heads) -> dict output -> what the implementation's LAST timed call wrote for them;
  layer.err_stats(x, ref) -> (max |x - ref|, sum (x - ref)^2, sum ref^2), NaN max when x is not
      finite everywhere.
Per implementation and output: maxerr = the max over all heads, and rel_err = sqrt(sum / sum);
per output, pterr = the naive attention's max error.  sdpa_rules.acc_ok gives the verdict.
"""
import math

from sdpa_rules import OUTPUTS


def chunk_heads(n_heads, bytes_per_head, budget_bytes):
    """The head ranges to check in turn: range(0, k), range(k, 2k), ..., covering 0..n_heads-1
    once, k the most heads whose working set fits the budget (at least 1)."""
    k = max(1, min(n_heads, int(budget_bytes // max(1, bytes_per_head))))
    return [range(h, min(n_heads, h + k)) for h in range(0, n_heads, k)]


def check_all_heads(layer, shape, inputs, pass_, impls, budget_bytes):
    """{impl.name: {"rel_err", "heads", "maxerr_<o>", "pterr_<o>" for each output o of pass_}}
    over all B x H heads of the shape (module docstring)."""
    outs = OUTPUTS[pass_]
    acc = {i.name: {o: [0.0, 0.0, 0.0] for o in outs} for i in impls}  # max, sum of squared errors, sum ref^2
    pt = {o: 0.0 for o in outs}
    n = shape.B * shape.H
    for heads in chunk_heads(n, layer.ref_bytes_per_head(shape, pass_), budget_bytes):
        ref, naive = layer.reference(shape, inputs, pass_, heads)
        for o in outs:
            pt[o] = _max(pt[o], layer.err_stats(naive[o], ref[o])[0])
        for impl in impls:
            got = impl.outputs(heads)
            for o in outs:
                mx, se, sr = layer.err_stats(got[o], ref[o])
                a = acc[impl.name][o]
                a[0], a[1], a[2] = _max(a[0], mx), a[1] + se, a[2] + sr
        ref = naive = got = None
    res = {}
    for impl in impls:
        r = {"heads": n}
        rel = 0.0
        for o in outs:
            mx, se, sr = acc[impl.name][o]
            r[f"maxerr_{o}"], r[f"pterr_{o}"] = mx, pt[o]
            e = math.sqrt(se / sr) if sr > 0 and not math.isnan(mx) else float("nan")
            rel = _max(rel, e)
        r["rel_err"] = rel
        res[impl.name] = r
    return res


def _max(a, b):
    """max that keeps NaN (an output with a NaN anywhere stays NaN)."""
    if math.isnan(a) or math.isnan(b):
        return float("nan")
    return max(a, b)
