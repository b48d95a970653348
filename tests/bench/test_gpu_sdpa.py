#!/usr/bin/env python3
"""test_gpu_sdpa.py: bench/gpu_sdpa.py's logic without a GPU, through the fake device layer
(tests/bench/fake_layer.py): the order of the calls (interleaved and rotated, or sequential), the
cold mode's flush before every call and outside its events, the calls counted from the time
budget, medians and p95, the provenance lines (GPU, versions, peak, clocks, kernel source, timing),
the accuracy checked on every head after the timing, the CSV's columns and ratios, the clock
columns, bad input, and the clock sources.  Then planted faults in the benchmark (mutants: no
rotation, the flush inside the events, two heads checked, the budget ignored, a cold run described
as warm, a ratio inverted), each of which some test must catch.

  python3 tests/bench/test_gpu_sdpa.py SOURCE_DIR
"""
import contextlib
import csv
import io
import os
import shutil
import subprocess
import sys
import tempfile
import traceback

import fake_layer   # beside this file
import gpu_clocks   # bench/, on PYTHONPATH (ctest sets it)
import gpu_sdpa
import kernel_source
import sdpa_accuracy
import sdpa_rules
import sdpa_timing

SRC = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))

TMP = tempfile.mkdtemp(prefix="fl_bench_")
BASE = ["--shapes", "recorded", "--N", "1024", "--dtypes", "fp16", "--d", "64", "--causal", "0",
        "--backends", "sdpa-fa2,sdpa-cudnn,fa4", "--clock-period-ms", "0"]
FA2, CU, V12, V13 = "sdpa-fa2", "sdpa-cudnn", "ours-v12-flash2", "ours-v13-flash2"


class Run:
    """One gpu_sdpa.main run on a fake layer: status, rows, provenance lines, the layer's log, stderr."""

    def __init__(self, args, layer=None, clocks="none"):
        self.layer = layer or fake_layer.FakeLayer()
        path = os.path.join(TMP, "out.csv")
        if os.path.exists(path):
            os.remove(path)
        if clocks == "none":
            opener = lambda i, u: (None, "NVML: ImportError: no pynvml (fake); nvidia-smi: FileNotFoundError: (fake)")  # noqa: E731
        else:
            opener = lambda i, u: (clocks, None)  # noqa: E731
        err, out = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            try:
                self.status = gpu_sdpa.main(BASE + args + ["--csv", path], layer_factory=lambda a: self.layer,
                                            open_clocks=opener)
            except SystemExit as e:
                self.status = e.code
        self.stderr, self.stdout, self.log = err.getvalue(), out.getvalue(), self.layer.log
        self.prov, self.rows = [], []
        if os.path.exists(path):
            with open(path) as f:
                lines = f.readlines()
            self.prov = [line[2:].rstrip("\n") for line in lines if line.startswith("# ")]
            self.header = next(line for line in lines if not line.startswith("#")).strip().split(",")
            self.rows = list(csv.DictReader(line for line in lines if not line.startswith("#")))

    def row(self, impl, pass_="fwd"):
        hit = [r for r in self.rows if r["impl"] == impl and r["pass"] == pass_]
        assert len(hit) == 1, (impl, pass_, len(hit))
        return hit[0]

    def phase(self, pass_):
        """The log of one pass: from its ("impls", pass_) entry to the next pass's."""
        i = next(k for k, e in enumerate(self.log) if e[0] == "impls" and e[1] == pass_)
        j = next((k for k in range(i + 1, len(self.log)) if self.log[k][0] in ("impls", "release")), len(self.log))
        return self.log[i:j]


def calls(entries):
    return [e[1] for e in entries if e[0] == "call"]


def timing_calls(run, pass_, n_impls):
    """The calls of a pass after each implementation's first call."""
    return calls(run.phase(pass_))[n_impls:]


# ---- the tests: each raises AssertionError on a difference
def test_interleaved_rotation():
    r = Run(["--reps", "4", "--warmup", "2"])
    assert r.status == 0, r.stderr
    n = [FA2, CU, V12]
    want = [n[(j + k) % 3] for k in (0, 1) for j in range(3)] + [n[(j + k) % 3] for k in range(4) for j in range(3)]
    got = timing_calls(r, "fwd", 3)
    assert got == want, f"interleaved order {got} != {want}"
    assert calls(r.phase("fwd"))[:3] == n, "each implementation called once first, in order"


def test_sequential_order():
    r = Run(["--reps", "4", "--warmup", "2", "--timing", "sequential"])
    assert r.status == 0, r.stderr
    got = timing_calls(r, "fwd", 3)
    assert got == [FA2] * 6 + [CU] * 6 + [V12] * 6, got


def _flush_before_every_call(entries):
    for k, e in enumerate(entries):
        if e[0] != "call":
            continue
        prev = [x[0] for x in entries[max(0, k - 2):k]]
        if prev[-1:] != ["flush"] and prev != ["flush", "event"]:
            return False
    return True


def test_cold_flushes_outside_events():
    r = Run(["--reps", "5", "--warmup", "2", "--cold"])
    assert r.status == 0, r.stderr
    ph = r.phase("fwd")
    first = [k for k, e in enumerate(ph) if e[0] == "call"][3]  # after the first calls
    assert _flush_before_every_call(ph[first - 2:]), "a call of the timing without a flush just before it"
    for name in (FA2, CU, V12):  # the flush's 7 ms outside the events: the median is the call's 1 ms
        assert abs(float(r.row(name)["median_ms"]) - 1.0) < 1e-6, (name, r.row(name)["median_ms"])
    w = Run(["--reps", "5", "--warmup", "2"])
    assert not any(e[0] == "flush" for e in w.log), "a warm run flushed"


def test_budget():
    d = {FA2: 1.0, CU: 2.0, V12: 1.0, V13: 3.0}
    r = Run(["--warmup-ms", "25", "--rep-ms", "100"], fake_layer.FakeLayer(durations=d))
    assert r.status == 0, r.stderr
    for name in (FA2, CU, V12):  # a round 4 ms: 7 warm-up rounds, 25 timed; estimates of 3 calls each
        assert r.row(name)["reps"] == "25", (name, r.row(name)["reps"])
        assert calls(r.phase("fwd")).count(name) == 1 + 3 + 7 + 25, calls(r.phase("fwd")).count(name)
    r = Run(["--rep-ms", "1"], fake_layer.FakeLayer(durations=d))
    assert r.row(V12)["reps"] == "10", "at least --min-reps"
    r = Run(["--rep-ms", "1000", "--max-reps", "40"], fake_layer.FakeLayer(durations=d))
    assert r.row(V12)["reps"] == "40", "at most --max-reps"
    r = Run(["--timing", "sequential", "--rep-ms", "100"], fake_layer.FakeLayer(durations=d))
    assert [r.row(x)["reps"] for x in (FA2, CU, V12)] == ["100", "50", "100"], "sequential: a budget each"
    assert r.row(V13, "bwd")["reps"] == "34"


def test_median_p95():
    d = {V12: lambda i: 1.0 + (i % 10) * 0.1}
    r = Run(["--reps", "20", "--warmup", "0"], fake_layer.FakeLayer(durations=d))
    row = r.row(V12)
    assert abs(float(row["median_ms"]) - 1.5) < 1e-6 and abs(float(row["p95_ms"]) - 1.9) < 1e-6, (row["median_ms"], row["p95_ms"])
    assert sdpa_timing.median_p95([3.0, 1.0, 2.0]) == (2.0, 3.0)


def test_provenance():
    os.environ["FLASHLAB_COMMIT"] = "abc1234"
    try:
        r = Run(["--reps", "3"], clocks=fake_layer.FakeClocks())
        c = Run(["--reps", "3", "--cold", "--timing", "sequential"])
    finally:
        del os.environ["FLASHLAB_COMMIT"]
    p = r.prov
    assert p[0].startswith("gpu_sdpa.py:") and p[1] == "commit: abc1234" and p[2].startswith("date: "), p[:3]
    gpu = next(x for x in p if x.startswith("gpu: "))
    assert gpu == "gpu: NVIDIA H200, 132 SMs, L2 60 MiB, compute capability 9.0, uuid GPU-00000000-fake; driver 580.159.04", gpu
    ver = next(x for x in p if x.startswith("versions: "))
    for want in ("torch 2.11.0+cu130", "CUDA 13.0", "cuDNN 91500", "flash-attn-4 absent", "nvidia-cutlass-dsl absent", "pynvml 13.580.82"):
        assert want in ver, (want, ver)
    assert any(x.startswith("peak: 989.4 TFLOP/s dense") for x in p), p
    assert any(x.startswith("clocks: NVML (fake)") for x in p), p
    assert any(x.startswith("clocks: absent (NVML: ImportError") for x in c.prov), c.prov
    srcs = kernel_source.parse(["# " + x for x in p])
    for v in (12, 13):
        digest, _ = kernel_source.source_hash(kernel_source.WorkingTree(SRC), v)
        assert srcs.get(v) == (digest, "abc1234"), (v, srcs.get(v), digest)
    t = [x for x in p if x.startswith("timing: ")]
    assert len(t) == 1 and sdpa_timing.parse("# " + t[0]) == ("interleaved", "warm"), t
    tc = [x for x in c.prov if x.startswith("timing: ")]
    assert sdpa_timing.parse("# " + tc[0]) == ("sequential", "cold"), tc
    assert p[-1].startswith("command: "), p[-1]


def test_accuracy_all_heads_after_timing():
    lay = fake_layer.FakeLayer(planted={(V12, 777): 5e-2, (CU, 5): float("nan")})
    r = Run(["--reps", "3", "--ref-mem-gib", str(100000 / 2 ** 30)], lay)
    assert r.status == 0, r.stderr
    ph = r.phase("fwd")
    last_call = max(k for k, e in enumerate(ph) if e[0] == "call")
    refs = [(k, e) for k, e in enumerate(ph) if e[0] == "reference"]
    assert refs and min(k for k, _ in refs) > last_call, "the reference before the last timed call"
    covered = sorted(h for _, e in refs for h in range(e[2], e[3]))
    assert covered == list(range(1024)) and len(refs) > 1, f"heads checked {len(covered)} in {len(refs)} chunks"
    for name in (FA2, CU, V12):
        got = sorted(h for e in ph if e[0] == "outputs" and e[1] == name for h in range(e[2], e[3]))
        assert got == list(range(1024)), name
    assert r.row(V12)["acc_ok"] == "0" and float(r.row(V12)["maxerr_o"]) == 5e-2, r.row(V12)
    assert r.row(CU)["acc_ok"] == "0" and r.row(CU)["rel_err"] == "nan", r.row(CU)
    assert r.row(FA2)["acc_ok"] == "1" and r.row(FA2)["heads_checked"] == "1024"
    b = r.row(V13, "bwd")
    assert b["acc_ok"] == "1" and b["maxerr_dq"] and b["pterr_dv"] and not b["maxerr_o"], b
    assert "NOT ACCURATE" in r.stdout
    # the norm rule alone: every head a little worse than 2x FA2's rel_err, max errors within their rule
    lay = fake_layer.FakeLayer(pt_err=1.0)
    lay.planted = {(V12, h): 1.2e-3 for h in range(1024)}
    r = Run(["--reps", "3", "--no-bwd"], lay)
    assert r.row(V12)["acc_ok"] == "0", "rel_err 1.2e-3 > 2 x 5e-4 + 1e-4 passed"


def test_columns_and_ratios():
    d = {FA2: 1.0, CU: 2.0, V12: 0.5}
    r = Run(["--reps", "3"], fake_layer.FakeLayer(durations=d))
    want = [c.rstrip("_") for c in gpu_sdpa.COLUMNS]
    assert r.header == want, r.header
    v = r.row(V12)
    assert float(v["ratio_vs_fa2"]) == 2.0 and float(v["ratio_vs_cudnn"]) == 4.0 and v["ratio_vs_fa4"] == "", v
    tf = sdpa_rules.flops("fwd", 64, 16, 1024, 64, 0) / 0.5 / 1e9
    assert abs(float(v["tflops"]) - tf) / tf < 1e-5 and abs(float(v["mfu"]) - tf / 989.4) < 1e-5, (v["tflops"], v["mfu"])
    assert "fa4 fp16 d=64 N=1024 causal=0 fwd: flash_attn.cute does not import" in r.stderr, r.stderr
    assert not [x for x in r.rows if x["impl"] == "fa4"]
    r = Run(["--reps", "3"], fake_layer.FakeLayer(fail_first={CU}))
    assert r.row(V12)["ratio_vs_cudnn"] == "" and f"{CU} fp16 d=64 N=1024 causal=0 fwd: " in r.stderr, r.stderr


def test_clock_columns():
    r = Run(["--reps", "3"], clocks=fake_layer.FakeClocks())
    v = r.row(V12)
    assert int(v["clock_samples"]) >= 2 and float(v["sm_mhz_min"]) <= float(v["sm_mhz_mean"]) <= 1980, v
    assert v["power_w_mean"] == "650" and v["temp_c_max"] == "55" and v["clock_reasons"] == "4", v
    n = Run(["--reps", "3"])
    assert n.row(V12)["sm_mhz_mean"] == "" and n.row(V12)["clock_samples"] == ""


def test_bad_input():
    for args in (["--rep-ms", "0"], ["--d", "96"], ["--backends", "sdpa-foo"], ["--N", "777"], ["--dtypes", "fp8"],
                 ["--no-fwd", "--no-bwd"], ["--min-reps", "5", "--max-reps", "4"], ["--timing", "random"]):
        r = Run(args)
        assert r.status == 2 and len(r.stderr.strip().splitlines()) == 1 and not r.rows, (args, r.status, r.stderr)
    p = subprocess.run([sys.executable, os.path.join(SRC, "bench", "gpu_sdpa.py"), "--csv", os.path.join(TMP, "no", "x.csv")],
                       capture_output=True, text=True)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, (p.returncode, p.stderr)
    import importlib.util
    if importlib.util.find_spec("torch") is None:
        p = subprocess.run([sys.executable, os.path.join(SRC, "bench", "gpu_sdpa.py"), "--csv", os.path.join(TMP, "x.csv")],
                           capture_output=True, text=True)
        assert p.returncode == 77 and "nothing was run" in p.stderr and not os.path.exists(os.path.join(TMP, "x.csv")), p


def test_clock_sources():
    def no_nvml():
        raise ImportError("no pynvml (fake)")

    def smi(cmd, **kw):
        q = [x for x in cmd if x.startswith("--query-gpu=")][0]
        out = "1980, 3201, 650.25, 55\n" if "clocks.sm" in q else "GPU-1234, 580.159.04, NVIDIA H200\n"
        return subprocess.CompletedProcess(cmd, 0, out, "")
    src, why = gpu_clocks.open_source(import_nvml=no_nvml, run=smi)
    assert src is not None and src.describe == "nvidia-smi queries" and src.read() == dict(
        sm_mhz=1980.0, mem_mhz=3201.0, power_w=650.25, temp_c=55.0), (src, why)
    assert src.info() == dict(uuid="GPU-1234", driver="580.159.04", name="NVIDIA H200")

    def gone(cmd, **kw):
        raise FileNotFoundError("nvidia-smi")
    src, why = gpu_clocks.open_source(import_nvml=no_nvml, run=gone)
    assert src is None and "NVML: ImportError" in why and "nvidia-smi: FileNotFoundError" in why, why
    s = gpu_clocks.Sampler(fake_layer.FakeClocks(), 0.0, clock=iter(range(100)).__next__)
    t0 = s.mark()
    s.mark()
    t1 = s.mark()
    assert s.window(t0, t1)["clock_samples"] == 3 and s.window(t1 + 1, t1 + 2) is None


def test_kernel_source_hash():
    tree = os.path.join(TMP, "tree")
    shutil.rmtree(tree, ignore_errors=True)
    for sub in ("kernels", "include"):
        shutil.copytree(os.path.join(SRC, sub), os.path.join(tree, sub))
    base = kernel_source.source_hash(kernel_source.WorkingTree(SRC), 13)
    assert kernel_source.source_hash(kernel_source.WorkingTree(tree), 13) == base
    os.rename(os.path.join(tree, "kernels", "ladder", "v13_flash2_bwd_ws.cu"), os.path.join(tree, "kernels", "ladder", "v13_renamed.cu"))
    assert kernel_source.source_hash(kernel_source.WorkingTree(tree), 13)[0] == base[0], "a rename changed the hash"
    with open(os.path.join(tree, "kernels", "common", "wgmma.cuh"), "a") as f:
        f.write("// one more line\n")
    assert kernel_source.source_hash(kernel_source.WorkingTree(tree), 13)[0] != base[0], "an included header's change"
    assert "kernels/common/wgmma.cuh" in base[1] and "include/flashlab/footprint.h" in base[1], base[1]


def test_summary_tables():
    """summarize_sdpa.py reads a run with FA4's rows: the cuDNN, FA4 and deterministic FA4 tables and
    their summary lines, the ratios from the times (ours 0.5 ms, FA4 1.0, FA4 deterministic 2.0)."""
    d = {FA2: 1.0, CU: 2.0, V12: 0.5, V13: 0.5, "fa4": 1.0, "fa4-det": 2.0}
    r = Run(["--reps", "3", "--backends", "sdpa-fa2,sdpa-cudnn,fa4,fa4-det"], fake_layer.FakeLayer(durations=d, refuse={}))
    path = os.path.join(TMP, "sum.csv")
    shutil.copy(os.path.join(TMP, "out.csv"), path)
    assert r.row("fa4-det", "bwd") and not [x for x in r.rows if x["impl"] == "fa4-det" and x["pass"] == "fwd"]
    p = subprocess.run([sys.executable, os.path.join(SRC, "bench", "summarize_sdpa.py"), path], capture_output=True, text=True)
    out = p.stdout
    for want in ("| FA4 | ratio |", "| FA4 deterministic | ratio |", "fa4-fwd: ratio min 2.000", "fa4-bwd: ratio min 2.000",
                 "fa4det-bwd: ratio min 4.000", "cudnn-fwd: ratio min 4.000"):
        assert want in out, (want, p.returncode, out[-1500:], p.stderr)


TESTS = [test_interleaved_rotation, test_sequential_order, test_cold_flushes_outside_events, test_budget,
         test_median_p95, test_provenance, test_accuracy_all_heads_after_timing, test_columns_and_ratios,
         test_clock_columns, test_bad_input, test_clock_sources, test_kernel_source_hash, test_summary_tables]


def run_tests(quiet=False):
    """(passed, failed names)"""
    failed = []
    for t in TESTS:
        try:
            t()
            if not quiet:
                print(f"PASS {t.__name__}")
        except Exception:  # noqa: BLE001 -- a failing test, reported
            failed.append(t.__name__)
            if not quiet:
                print(f"FAIL {t.__name__}\n{traceback.format_exc()}")
    return len(TESTS) - len(failed), failed


# ---- planted faults in the benchmark: each must make some test fail
def _no_rotation(dev, fns, warmup, reps, cold=False):
    ev = [[None] * reps for _ in fns]
    for r in range(reps):
        for i, fn in enumerate(fns):
            ev[i][r] = sdpa_timing._timed(dev, fn, cold)
    dev.synchronize()
    return [sdpa_timing.Timing(*sdpa_timing.median_p95([a.elapsed_time(b) for a, b in e]), reps) for e in ev]


def _flush_inside(dev, fn, cold):
    a, b = dev.event(), dev.event()
    a.record()
    if cold:
        dev.flush()
    fn()
    b.record()
    return a, b


_describe = sdpa_timing.describe
MUTANTS = [
    ("the order not rotated", sdpa_timing, "time_interleaved", _no_rotation),
    ("the flush inside the events", sdpa_timing, "_timed", _flush_inside),
    ("two heads checked", sdpa_accuracy, "chunk_heads", lambda n, b, budget: [range(0, min(2, n))]),
    ("the budget ignored (5 warm-ups, 30 calls)", sdpa_timing, "plan", lambda est, budget: (5, 30)),
    ("a cold run described as warm", sdpa_timing, "describe", lambda order, cold, budget: _describe(order, False, budget)),
    ("the ratio inverted", sdpa_rules, "ratio",
     lambda ref, row: float(row["median_ms"]) / float(ref["median_ms"]) if ref is not None else None),
]


def main():
    try:
        passed, failed = run_tests()
        caught = 0
        for what, mod, name, fake in MUTANTS:
            real = getattr(mod, name)
            setattr(mod, name, fake)
            try:
                _, f = run_tests(quiet=True)
            finally:
                setattr(mod, name, real)
            f = [x for x in f if x not in failed]  # a test failing anyway catches nothing
            print(f"planted fault, {what}: {'caught by ' + ', '.join(f) if f else 'NOT CAUGHT'}")
            caught += bool(f)
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    bad = len(failed) + len(MUTANTS) - caught
    print(f"{passed + caught} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
