#!/usr/bin/env python3
"""check_example.py: examples/my_attention.cu's counters against `flashlab count`'s model.

    python3 examples/check_example.py MY_ATTENTION FLASHLAB      run the example (a GPU) and compare
    python3 examples/check_example.py --self-test FLASHLAB        the comparison against planted
                                                                  faults (no GPU)

For each problem of PROBLEMS (ragged tiles, several heads and batches, d = 64 and 128) it runs the
example, which prints the elements and bytes it read and wrote per tensor, and `flashlab count
--algo flash2 --Br 64 --Bc 64 --dtype fp16 --format json` for the same problem, and prints them side
by side.  Every tensor the model moves must be moved by the kernel exactly (elements and bytes,
reads and writes) and the kernel must move no other.  Exit 0 all equal, 1 a difference, 2 bad
usage, 77 no GPU (the example's own 77: ctest reports a skip).

--self-test needs no GPU: the example's expected output, written from the kernel's own arithmetic
(per head Q N*d reads, K and V cdiv(N, 64)*N*d each, O N*d writes, L N fp32 writes), must pass, and
plausible wrong outputs must fail: a key tile read once too few, L counted as fp16, a tensor
missing, a tensor the model does not move, and the model of a different query tile (Br = 32).
"""
import json
import subprocess
import sys

PROBLEMS = [(1, 1, 1024, 64), (2, 3, 1000, 64), (1, 2, 300, 128)]  # B, H, N, d
BR = BC = 64


def model(flashlab, B, H, N, d, br=BR):
    """flashlab count's per-tensor {name: (reads, writes, read_B, write_B)} of flash2's forward."""
    cmd = [flashlab, "count", "--algo", "flash2", "--batch", str(B), "--heads", str(H), "--N", str(N), "--d",
           str(d), "--Br", str(br), "--Bc", str(BC), "--dtype", "fp16", "--format", "json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"check_example: {' '.join(cmd)} failed: {r.stderr.strip()}")
    t = json.loads(r.stdout)[0]["tensors"]
    return {k: (v["reads"], v["writes"], v["reads"] * v["bytes_per_element"], v["writes"] * v["bytes_per_element"])
            for k, v in t.items() if v["reads"] or v["writes"]}


def parse(text):
    """The example's CSV (lines after its # comments) as {tensor: (reads, writes, read_B, write_B)}."""
    lines = [l for l in text.splitlines() if l and not l.startswith("#")]
    if not lines or lines[0] != "tensor,reads,writes,read_B,write_B":
        raise ValueError("no CSV header tensor,reads,writes,read_B,write_B")
    out = {}
    for l in lines[1:]:
        f = l.split(",")
        if len(f) != 5:
            raise ValueError(f"not 5 fields: {l!r}")
        out[f[0]] = tuple(int(x) for x in f[1:])
    return out


def compare(measured, modelled, label):
    """Prints the side-by-side table; returns the number of differing tensors."""
    bad = 0
    print(f"{label}\n  {'tensor':<6} {'kernel reads':>14} {'model':>14} {'kernel writes':>14} {'model':>14}"
          f" {'kernel B':>14} {'model B':>14}")
    for t in sorted(set(measured) | set(modelled)):
        a, b = measured.get(t, (0, 0, 0, 0)), modelled.get(t, (0, 0, 0, 0))
        ok = a == b
        bad += not ok
        print(f"  {t:<6} {a[0]:>14} {b[0]:>14} {a[1]:>14} {b[1]:>14} {a[2] + a[3]:>14} {b[2] + b[3]:>14}"
              + ("" if ok else "  DIFFERS"))
    return bad


def by_hand(B, H, N, d):
    """The example kernel's traffic from its loops (examples/my_attention.cu's header)."""
    tr, heads = -(-N // BR), B * H
    nd = heads * N * d
    return {"Q": (nd, 0, 2 * nd, 0), "K": (tr * nd, 0, 2 * tr * nd, 0), "V": (tr * nd, 0, 2 * tr * nd, 0),
            "O": (0, nd, 0, 2 * nd), "L": (0, heads * N, 0, 4 * heads * N)}


def csv_of(counts):
    return "# planted\ntensor,reads,writes,read_B,write_B\n" + "".join(
        f"{t},{','.join(str(x) for x in v)}\n" for t, v in counts.items())


def self_test(flashlab):
    bad = 0
    for B, H, N, d in PROBLEMS:
        right = by_hand(B, H, N, d)
        mod = model(flashlab, B, H, N, d)
        if compare(parse(csv_of(right)), mod, f"self-test B={B} H={H} N={N} d={d}: the kernel's arithmetic") != 0:
            print("self-test: FAIL: the kernel's own arithmetic differs from the model")
            bad += 1
        nd, heads = B * H * N * d, B * H
        wrong = {
            "a key tile too few": dict(right, K=(right["K"][0] - BC * d * heads, 0, right["K"][2] - 2 * BC * d * heads, 0)),
            "L as fp16": dict(right, L=(0, heads * N, 0, 2 * heads * N)),
            "L missing": {k: v for k, v in right.items() if k != "L"},
            "S written": dict(right, S=(0, nd, 0, 2 * nd)),
        }
        for what, counts in wrong.items():
            if compare(parse(csv_of(counts)), mod, f"planted: {what}") == 0:
                print(f"self-test: FAIL: planted '{what}' passed")
                bad += 1
        if compare(parse(csv_of(right)), model(flashlab, B, H, N, d, br=32), "planted: the model at Br = 32") == 0:
            print("self-test: FAIL: the model of Br = 32 passed")
            bad += 1
    for text in ("", "tensor,reads\nQ,1\n", "tensor,reads,writes,read_B,write_B\nQ,1,2,x,4\n"):
        try:
            parse(text)
            print(f"self-test: FAIL: {text!r} parsed")
            bad += 1
        except ValueError:
            pass
    print(f"check_example: self-test: {len(PROBLEMS)} problems, 5 planted faults each, 3 bad outputs: "
          + ("all caught" if not bad else f"{bad} FAILED"))
    return 1 if bad else 0


def main(argv):
    if len(argv) == 2 and argv[0] == "--self-test":
        return self_test(argv[1])
    if len(argv) != 2 or argv[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    example, flashlab = argv
    bad = 0
    for B, H, N, d in PROBLEMS:
        r = subprocess.run([example, "--batch", str(B), "--heads", str(H), "--N", str(N), "--d", str(d)],
                           capture_output=True, text=True)
        if r.returncode == 77:
            print(r.stderr.strip())
            return 77
        if r.returncode != 0:
            print(f"check_example: {example} exit {r.returncode}: {r.stderr.strip()}", file=sys.stderr)
            return 1
        print(r.stdout.splitlines()[0])
        try:
            measured = parse(r.stdout)
        except ValueError as e:
            print(f"check_example: {example}'s output: {e}", file=sys.stderr)
            return 1
        bad += compare(measured, model(flashlab, B, H, N, d), f"B={B} H={H} N={N} d={d}: the kernel's counters, flashlab count")
    print(f"check_example: {len(PROBLEMS)} problems, " + ("every tensor equal to the model" if not bad else f"{bad} tensors differ"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
