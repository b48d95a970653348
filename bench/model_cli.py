"""model_cli.py: the model's counts for a GPU kernel, through the flashlab CLI (fl_run), for the
GPU scripts (gpu_sdpa.py, fig2.py) and tests/check_gpu_records.py.  No torch, no GPU.

A kernel is modelled as its schedule with its tiles forced, on an SRAM of exactly the tiles'
footprint M_eff (docs/model.md F0, F2, F2b), which the model itself reports (`flashlab count
--explain`: the footprint of the chosen tiles); the harness checks the kernels' M_eff equal to
the model's fl_footprint, so these are the same numbers.
"""
import functools
import re
import subprocess


@functools.lru_cache(maxsize=None)
def kernel_footprint(cli, algo, d, Br, Bc, bwd=False):
    """M_eff of a kernel's tiles Br x Bc at head dimension d, forward or backward (F0, F1, F2, F1b,
    F2b): the footprint `flashlab count --explain` reports for those tiles forced (raises
    RuntimeError when the CLI refuses them or reports no footprint)."""
    big = 1 << 40  # an SRAM that holds any tile: the forced tiles are taken as given
    cmd = [cli, "count", "--algo", algo, "--N", str(max(int(Br), int(Bc))), "--d", str(d), "--Br", str(Br),
           "--Bc", str(Bc), "--M", str(big), "--pass", "bwd" if bwd else "fwd", "--explain"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise RuntimeError(f"{cli}: {e}") from e
    pattern = r"^  backward chosen.*; footprint (\d+) of M" if bwd else r"^  chosen.*; footprint (\d+) of M"
    m = re.search(pattern, out.stdout, re.M)
    if out.returncode != 0 or not m:
        raise RuntimeError(f"{' '.join(cmd)}: no footprint in its explanation: {out.stderr.strip() or out.stdout[:300]}")
    return int(m.group(1))


def count(cli, algo, N, d, Br, Bc, M, dtype="fp16", pass_="fwd", causal=None, Nk=None, batch=1, heads=1):
    """`flashlab count` of one configuration: its CSV row as a dict (raises RuntimeError, with
    the CLI's message, when the CLI refuses it or cannot be run)."""
    cmd = [cli, "count", "--algo", algo, "--N", str(N), "--d", str(d), "--Br", str(Br), "--Bc", str(Bc),
           "--M", str(M), "--dtype", dtype, "--pass", pass_, "--batch", str(batch), "--heads", str(heads),
           "--format", "csv"]
    if Nk and int(Nk) != int(N):
        cmd += ["--Nk", str(Nk)]
    if causal:
        cmd += ["--causal", causal]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise RuntimeError(f"{cli}: {e}") from e
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {out.stderr.strip()}")
    lines = out.stdout.strip().splitlines()
    return dict(zip(lines[0].split(","), lines[1].split(",")))
