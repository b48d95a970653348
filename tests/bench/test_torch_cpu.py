#!/usr/bin/env python3
"""test_torch_cpu.py: bench/gpu_sdpa.py's PyTorch device layer (bench/sdpa_torch.py) on the CPU,
where PyTorch is installed (exit 77, skipped, where it is not): one small shape, SDPA's CPU flash
and math backends, both passes; the CSV must hold both implementations' rows, every head checked,
the max-error columns of each pass filled, the stored ratios and verdicts what the raw columns give
(sdpa_rules.recompute), and SDPA's math backend (the same arithmetic as the reference, in the storage
type) accurate; the backends the CPU does not have refused with a line each.

  python3 tests/bench/test_torch_cpu.py SOURCE_DIR
"""
import csv
import importlib.util
import os
import subprocess
import sys
import tempfile

SRC = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
import sdpa_rules   # bench/, on PYTHONPATH (ctest sets it)


def main():
    if importlib.util.find_spec("torch") is None:
        print("test_torch_cpu: PyTorch is not installed: skipped")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cpu.csv")
        p = subprocess.run([sys.executable, os.path.join(SRC, "bench", "gpu_sdpa.py"), "--device", "cpu", "--csv", out,
                            "--shapes", "wide", "--N", "512", "--d", "64", "--dtypes", "bf16", "--batch", "1", "--causal", "1",
                            "--reps", "2", "--warmup", "0", "--backends", "sdpa-fa2,sdpa-cudnn,sdpa-math,fa4"],
                           capture_output=True, text=True, timeout=1200)
        fails = []
        if p.returncode != 0:
            fails.append(f"exit {p.returncode}: {p.stderr[-800:]}")
        rows = []
        if os.path.exists(out):
            with open(out) as f:
                rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
        got = sorted((r["impl"], r["pass"]) for r in rows)
        if got != [("sdpa-fa2", "bwd"), ("sdpa-fa2", "fwd"), ("sdpa-math", "bwd"), ("sdpa-math", "fwd")]:
            fails.append(f"rows {got}")
        derived = sdpa_rules.recompute(rows)
        for r in rows:
            outs = sdpa_rules.OUTPUTS[r["pass"]]
            if r["heads_checked"] != "16" or any(not r[f"maxerr_{o}"] or not r[f"pterr_{o}"] for o in outs):
                fails.append(f"{r['impl']} {r['pass']}: heads {r['heads_checked']}, max errors "
                             f"{[(r[f'maxerr_{o}'], r[f'pterr_{o}']) for o in outs]}")
            want = derived[id(r)]  # the stored medians have 6 digits: a ratio within 1e-4 agrees
            if str(want["acc_ok"]) != r["acc_ok"] or abs(float(r["ratio_vs_fa2"]) - want["ratio_vs_fa2"]) > 1e-4 * want["ratio_vs_fa2"]:
                fails.append(f"{r['impl']} {r['pass']}: acc_ok {r['acc_ok']}, ratio_vs_fa2 {r['ratio_vs_fa2']}; "
                             f"the raw columns give {want['acc_ok']}, {want['ratio_vs_fa2']}")
            if r["impl"] == "sdpa-math" and r["acc_ok"] != "1":
                fails.append(f"sdpa-math {r['pass']} not accurate: {r}")
        for name in ("sdpa-cudnn", "fa4"):
            if f"gpu_sdpa: {name} bf16 d=64 N=512 causal=1 fwd:" not in p.stderr:
                fails.append(f"no refusal line for {name}")
    for f in fails:
        print(f"FAIL {f}")
    print(f"{0 if fails else 1} passed, {1 if fails else 0} failed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
