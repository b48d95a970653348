"""model_cli.py: the model's counts for a GPU kernel, through the flashlab CLI (fl_run), for the
GPU scripts (gpu_sdpa.py, fig2.py) and tests/check_gpu_records.py.  No torch, no GPU.

A kernel is modelled as its schedule with its tiles forced, on an SRAM of exactly the tiles'
footprint M_eff (docs/model.md F0, F2, F2b; the harness checks the kernels' M_eff equal to
fl_footprint, so these are the same numbers).
"""
import pathlib
import re
import subprocess

FOOTPRINT_H = pathlib.Path(__file__).resolve().parent.parent / "include" / "flashlab" / "footprint.h"


def _footprint_coefficients():
    """The FL_FP_* coefficient rows {rd, cd, rc, r} of include/flashlab/footprint.h, the one
    definition the model and the kernels share, read from the header itself."""
    rows = dict((name, tuple(int(x) for x in nums.split(",")))
                for name, nums in re.findall(r"#define FL_FP_(\w+) \{([-\d, ]+)\}", FOOTPRINT_H.read_text()))
    for need in ("STANDARD", "FLASH2_FWD", "FLASH2_BWD"):
        if need not in rows or len(rows[need]) != 4:
            raise RuntimeError(f"{FOOTPRINT_H}: no FL_FP_{need} {{rd, cd, rc, r}}")
    return rows


FP = _footprint_coefficients()


def kernel_footprint(algo, d, Br, Bc, bwd=False):
    """M_eff of a kernel's tiles: F0 (standard, both passes), F2 (flash2 forward), F2b (backward),
    footprint(R, C, D) = rd*R*D + cd*C*D + rc*R*C + r*R with footprint.h's coefficients"""
    rd, cd, rc, r = FP["STANDARD" if algo == "standard" else "FLASH2_BWD" if bwd else "FLASH2_FWD"]
    return rd * Br * d + cd * Bc * d + rc * Br * Bc + r * Br


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
