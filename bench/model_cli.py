"""model_cli.py: the model's counts for a GPU kernel, through the flashlab CLI (fl_run), for the
GPU scripts (gpu_sdpa.py, fig2.py) and tests/check_gpu_records.py.  No torch, no GPU.

A kernel is modelled as its schedule with its tiles forced, on an SRAM of exactly the tiles'
footprint M_eff (docs/model.md F0, F2, F2b; the harness checks the kernels' M_eff equal to
fl_footprint, so these are the same numbers).
"""
import subprocess


def kernel_footprint(algo, d, Br, Bc, bwd=False):
    """M_eff of a kernel's tiles: F0 (standard, both passes), F2 (flash2 forward), F2b (backward)"""
    if algo == "standard":
        return Br * d + Bc * d + Br * Bc
    if bwd:
        return 4 * Bc * d + 3 * Br * d + 2 * Br * Bc + 2 * Br
    return 2 * Br * d + 2 * Bc * d + Br * Bc + 2 * Br


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
