#!/usr/bin/env python3
"""bwd_order_probe.py: measures, from a backward kernel's own output, the order in which each of its
key-tile work items visits the query tiles (docs/third_party.md §6).

A key-tile backward (the `bwd-kv` family) accumulates dK_j = scale * sum_i dS_ij^T Q_i over the query
tiles i in fp32, in the order its loop visits them.  fp32 addition is not associative, so crafted
inputs make that order visible in dK, for kernels whose source we cannot read (cuDNN's):

  K = 0, so S = 0 and every P_ij = p (the same for all i, j);  V[:, 0] = +1, -1, +1, ... and
  dO[:, 0] = 1, so D = rowsum(dO o O) = 0 and dS_ij = p * V[j, 0] = +-p: dK[j, c] = +-scale * p *
  (the fp32 sum, in loop order, of the column c of Q over the query rows).

The query rows are cut into U units of G rows (G a multiple of the kernel's query tile).  Each
column c of Q is a channel of its own: +BIG on every row of one unit, -BIG on every row of another
(the pair), and 1 on the first row of a third (the marker); BIG = 2^20 (bf16), so a pair unit's sum
is 2^27 times the marker's.  If the loop adds the marker after both pair units, it survives
exactly (big - big + marker = marker); if before either, the accumulator's rounding absorbs it
(marker + big - big leaves 0 in fp32, or a rounding residue that is not the marker: the H200's
tensor cores leave 8 x the marker).  So dK[j, c] = +-marker says: for key tile j, the loop visited
the marker's unit after the pair's two units.

Channels 0 .. d/2-1 (forward thermometer): pair units 0 and 1, markers at units spread over 2 .. U-1.
Channels d/2 .. d-1 (reverse thermometer): pair units U-1 and U-2, markers spread over U-3 .. 0.
Each loop that starts at a unit s and runs up (or down), wrapping, leaves its own bits (a loop
from unit 0 upward keeps every forward marker and no reverse one); the decoder lists the loops
that fit the measured bits: order "forward" (or "reverse") with the starts that fit ("0-0": a
plain forward loop), or "other" when none or both directions fit; the bits are recorded.  The
decoding is tested against an fp32 emulation of each order, with the absorbed markers left as 0
and as a residue (--self-test, run by tests/explain/test_explain.py).

  PYTHONPATH=bench python3 scripts/bwd_order_probe.py --backend cudnn --shapes s6 --out order.csv   (needs a GPU)
  python3 scripts/bwd_order_probe.py --self-test                                 (no GPU)  
"""
import argparse
import functools
import math
import os
import struct
import subprocess
import sys

BIG = 2.0 ** 20  # bf16-exact; 128 rows x BIG = 2^27 x the marker (absorbed in fp32's 24 bits)


def channels(U, d):
    """[(pair unit a, pair unit b, marker unit)] for the d columns (d even, U >= 4)."""
    h = d // 2
    span = U - 3  # forward markers 2..U-1, reverse markers U-3..0: U-2 units each
    out = []
    for k in range(h):
        out.append((0, 1, 2 + round(k * span / max(1, h - 1))))
    for k in range(h):
        out.append((U - 1, U - 2, U - 3 - round(k * span / max(1, h - 1))))
    return out


def f32(x):
    """x rounded to fp32 (round to nearest even), as the accumulator does"""
    return struct.unpack("f", struct.pack("f", x))[0]


def make_inputs(N, d, G):
    """Q, K, V, dO of one head as N x d lists of floats, each exactly representable in bf16."""
    if d < 4 or d % 2:
        raise ValueError(f"--d {d}: the probe needs an even head dimension >= 4")
    if N % G or N // G < 4:
        raise ValueError(f"N = {N}: must be a multiple of the unit G = {G}, with at least 4 units")
    U = N // G
    q = [[0.0] * d for _ in range(N)]
    for c, (a, b, m) in enumerate(channels(U, d)):
        for r in range(G):
            q[a * G + r][c] = BIG
            q[b * G + r][c] = -BIG
        q[m * G][c] = 1.0
    k = [[0.0] * d for _ in range(N)]
    v = [[(1.0 if r % 2 == 0 else -1.0) if c == 0 else 0.0 for c in range(d)] for r in range(N)]
    do = [[1.0 if c == 0 else 0.0 for c in range(d)] for _ in range(N)]
    return q, k, v, do


def predicted_bits(order, U, d):
    """The d bits a loop visiting the units in `order` leaves: a marker survives when its unit comes
    after both of its channel's pair units."""
    pos = [0] * U
    for n, u in enumerate(order):
        pos[u] = n
    return [pos[m] > max(pos[a], pos[b]) for a, b, m in channels(U, d)]


def rotation(U, direction, s):
    """units from s upward (direction +1) or downward (-1), wrapping"""
    return [(s + direction * n) % U for n in range(U)]


@functools.lru_cache(maxsize=None)
def _fits_table(U, d):
    """bits (a tuple) -> [(direction, start)] of every wrapping loop that leaves them"""
    table = {}
    for dn in (+1, -1):
        for s in range(U):
            table.setdefault(tuple(predicted_bits(rotation(U, dn, s), U, d)), []).append((dn, s))
    return table


def decode(bits, U, d):
    """bits: d booleans (dK[j, c] != 0) of one key row.  Returns (order, starts): order 'forward'
    or 'reverse' when every loop consistent with the bits runs that way from a start s that wraps
    (starts: 'lo-hi', the consistent s; '0-0' is a plain forward loop, 'U-1'-'U-1' a plain reverse
    one), else 'other' ('-')."""
    fits = _fits_table(U, d).get(tuple(bool(b) for b in bits), [])
    dirs = {dn for dn, _ in fits}
    if len(dirs) != 1:
        return "other", "-"
    ss = [s for _, s in fits]
    return ("forward" if +1 in dirs else "reverse"), f"{min(ss)}-{max(ss)}"


def emulate(q, order_of_tile, N, d, G, Bc):
    """dK (N/Bc rows, one per key tile: its rows are equal) of an fp32 accumulation of the query
    units in order_of_tile(j) for key tile j, with the probe's dS = p = 1/N; the reference the
    decoder is tested against."""
    p = 1.0 / N
    U = N // G
    unit_sum = [[f32(sum(q[u * G + r][c] * p for r in range(G))) for c in range(d)] for u in range(U)]
    out = []
    for j in range(N // Bc):
        acc = [0.0] * d
        for u in order_of_tile(j):
            acc = [f32(x + y) for x, y in zip(acc, unit_sum[u])]
        out.append(acc)
    return out


def kept(x, marker):
    """dK[j, c] is the marker's own contribution (the marker came after its pair): within 2 % of
    it.  Absorbed, it leaves 0 (fp32 round to nearest) or a residue of the accumulator's rounding
    (the H200's tensor cores leave 8 x the marker at N = 1024): never the marker itself."""
    return abs(abs(x) / marker - 1.0) < 0.02


def classify(first_rows, agreeing, N, d, G, marker):
    """[(key tile, order, starts, bits as a 0/1 string, rows agreeing)]: first_rows[j] is the first
    dK row of key tile j (d values), agreeing[j] how many of its rows have the same bits, marker
    the value a kept marker leaves in dK."""
    U = N // G
    out = []
    for j, row in enumerate(first_rows):
        first = [kept(x, marker) for x in row]
        cls, start = decode(first, U, d)
        out.append((j, cls, start, "".join("1" if x else "0" for x in first), agreeing[j]))
    return out


def self_test():
    """The decoder against emulated orders; a wrong decoding fails (exit 1)."""
    N, d, G, Bc = 4096, 16, 128, 128
    U = N // G
    q = make_inputs(N, d, G)[0]
    spacing = math.ceil((U - 3) / (d // 2 - 1))

    def in_range(s, starts, width):  # s among the consistent starts, and these no wider than the markers' spacing
        lo, hi = (int(x) for x in starts.split("-"))
        return lo <= s <= hi and hi - lo < width
    cases = [
        ("forward", lambda j: range(U), lambda c, s: (c, s) == ("forward", "0-0")),
        ("reverse", lambda j: range(U - 1, -1, -1), lambda c, s: (c, s) == ("reverse", f"{U - 1}-{U - 1}")),
        ("forward from 20", lambda j: rotation(U, 1, 20), lambda c, s: c == "forward" and in_range(20, s, spacing)),
        ("reverse from 9", lambda j: rotation(U, -1, 9), lambda c, s: c == "reverse" and in_range(9, s, spacing)),
        ("odd tiles reverse", lambda j: range(U - 1, -1, -1) if j % 2 else range(U), None),
        ("shuffled", lambda j: [(7 * n + 3) % U for n in range(U)], lambda c, s: c == "other"),
    ]
    bad = 0
    for name, order, want in cases:
        dk = emulate(q, order, N, d, G, Bc)
        marker = f32(1.0 / N)
        got = classify(dk, [Bc] * len(dk), N, d, G, marker)
        residue = [[8 * marker if x == 0 else x for x in row] for row in dk]  # the H200's absorbed markers
        if classify(residue, [Bc] * len(dk), N, d, G, marker) != got:
            print(f"self-test: {name}: a residue of 8 x the marker decoded differently from 0", file=sys.stderr)
            bad += 1
        for j, cls, start, bits, agree in got:
            if want is None:  # odd tiles reverse
                ok = (cls, start) == (("reverse", f"{U - 1}-{U - 1}") if j % 2 else ("forward", "0-0"))
            else:
                ok = want(cls, start)
            if not ok:
                print(f"self-test: {name}: key tile {j} decoded {cls} {start} ({bits})", file=sys.stderr)
                bad += 1
    print(f"self-test: {'ok' if not bad else f'{bad} failures'}")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--self-test", action="store_true", help="test the decoder on emulated orders (no GPU)")
    ap.add_argument("--backend", default="cudnn", help="SDPA backend: cudnn, flash or efficient")
    ap.add_argument("--shapes", default="s6", help="comma-separated names of third_party_attn.py's SHAPES "
                    "(non-causal only: a causal loop starts at the diagonal)")
    ap.add_argument("--G", type=int, default=128, help="rows per unit (a multiple of the query tile)")
    ap.add_argument("--Bc", type=int, default=128, help="key rows per work item, for the per-item table")
    ap.add_argument("--sms", type=int, default=132, help="persistent CTAs: wave = item // sms in the table")
    ap.add_argument("--out", required=False, help="CSV to write (one row per head and key tile)")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    if not a.out:
        print("bwd_order_probe: --out: required unless --self-test", file=sys.stderr)
        return 2
    from third_party_attn import SHAPES   # beside this file; it imports bench/fast_kernels.py
    if a.backend not in ("cudnn", "flash", "efficient"):
        print(f"bwd_order_probe: --backend {a.backend}: choose cudnn, flash or efficient", file=sys.stderr)
        return 2
    table = {s[0]: s for s in SHAPES}
    for name in a.shapes.split(","):
        if name not in table:
            print(f"bwd_order_probe: --shapes: unknown shape '{name}' (choose among {', '.join(table)})", file=sys.stderr)
            return 2
        _, _, B, H, N, d, causal = table[name]
        if causal:
            print(f"bwd_order_probe: --shapes {name}: causal; the probe reads non-causal loops only", file=sys.stderr)
            return 2
        if a.G < 1 or a.Bc < 1 or N % a.G or N // a.G < 4 or N % a.Bc or d < 4 or d % 2:
            print(f"bwd_order_probe: --G/--Bc: shape {name} (N = {N}, d = {d}) needs N a multiple of G and of Bc, "
                  f"N / G >= 4, d even and >= 4", file=sys.stderr)
            return 2
    if os.path.lexists(a.out):
        print(f"bwd_order_probe: --out: {a.out} exists (choose a new path)", file=sys.stderr)
        return 2
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backends = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
                "efficient": SDPBackend.EFFICIENT_ATTENTION}
    rows, kernels = [], []
    for name in a.shapes.split(","):
        _, _, B, H, N, d, causal = table[name]
        q1, k1, v1, do1 = make_inputs(N, d, a.G)
        t = lambda x: torch.tensor(x, dtype=torch.bfloat16, device="cuda").expand(B, H, N, d).contiguous()
        q, k, v, do = t(q1), t(k1), t(v1), t(do1)
        for x in (q, k, v):
            x.requires_grad_()
        with sdpa_kernel([backends[a.backend]]):
            o = torch.nn.functional.scaled_dot_product_attention(q, k, v)
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                o.backward(do)
                torch.cuda.synchronize()
        names = sorted({e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA})
        kernels.append(f"{name}: {' '.join(names)}")
        dk = k.grad.float()
        # the marker's own contribution: softmax scale x dS (p = 1/N, as the kernel's bf16 dS) x 1
        marker = float(torch.tensor(1.0 / N, dtype=torch.bfloat16)) / math.sqrt(d)
        Tc = N // a.Bc
        for b in range(B):
            for h in range(H):
                bits = ((dk[b, h].abs() / marker - 1).abs() < 0.02).reshape(Tc, a.Bc, d)
                agreeing = (bits == bits[:, :1]).all(-1).sum(-1).tolist()
                first = dk[b, h].reshape(Tc, a.Bc, d)[:, 0].tolist()
                for j, cls, start, bits, agree in classify(first, agreeing, N, d, a.G, marker):
                    item = (b * H + h) * Tc + j
                    rows.append((a.backend, name, "bf16", B, H, N, d, b, h, j, item, item // a.sms, cls, start,
                                 agree, bits))
    commit = os.environ.get("FLASHLAB_COMMIT") or subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    tmp = a.out + ".part"
    with open(tmp, "x") as f:
        f.write(f"# bwd_order_probe.py: query-loop order of each key-tile item, read from dK (flashlab {commit}; "
                f"torch {torch.__version__}; {torch.cuda.get_device_name()}; G = {a.G}, Bc = {a.Bc}; backward kernels {'; '.join(kernels)})\n")
        f.write("backend,shape,dtype,B,H,N,d,b,h,key_tile,item,wave,order,start,rows_agreeing,bits\n")
        for r in rows:
            f.write(",".join(str(x) for x in r) + "\n")
    os.replace(tmp, a.out)
    counts = {}
    for r in rows:
        counts[(r[1], r[12])] = counts.get((r[1], r[12]), 0) + 1
    for (s, c), n in sorted(counts.items()):
        print(f"bwd_order_probe: {a.backend} {s}: {n} items {c}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
