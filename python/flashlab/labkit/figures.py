"""figures: the labs' figures, drawn by gnuplot from data the lab computed with the C library.

Each figure is a script figures/lab*.gp (flashlab.figures_dir(): in the installed package, else
the repository's figures/), run with its data written to a temporary folder and passed in
variables, so the same script also makes a PDF or SVG for slides:

    gnuplot -e "figdir='figures'; data='passes.dat'; fmt='pdf'; out='passes.pdf'" figures/lab5_passes.gp

(the data file is what `draw` writes: labkit.lab5.figure(..., keep=DIR) leaves it in DIR).
`draw` displays the PNG in a notebook and returns its path; without gnuplot it says so and
returns None (the notebooks print the numbers as text beside every figure).
"""
import pathlib
import shutil
import subprocess
import tempfile

import flashlab as fl


def available():
    """True when a gnuplot is on PATH."""
    return shutil.which("gnuplot") is not None


def script(name):
    """The path of figures/<name>; FlashlabError when it is missing (a broken handout)."""
    p = fl.figures_dir() / name
    if not p.is_file():
        fl._fail(f"figure script {name} is not in {fl.figures_dir()}: reinstall flashlab (pip install), "
                 f"whose package holds the figure scripts")
    return p


def _value(v):
    if isinstance(v, bool) or not isinstance(v, (int, float, str, pathlib.Path)):
        fl._fail(f"figure variable {v!r}: must be a number, a string or a path")
    if isinstance(v, (str, pathlib.Path)):
        s = str(v)
        if "'" in s or "\n" in s:
            fl._fail(f"figure variable {s!r}: no quotes or newlines")
        return f"'{s}'"
    return repr(v)


def draw(name, data, show=True, keep=None, fmt="png", **variables):
    """Runs figures/<name> with gnuplot.  data: {variable: text}, each text written to a file
    whose path the script gets in that variable; variables: numbers and strings passed as they
    are.  Returns the figure's path (in keep, or a temporary folder), or None without gnuplot.
    A script that fails raises FlashlabError with gnuplot's last line."""
    if fmt not in ("png", "pdf", "svg"):
        fl._fail(f"fmt = {fmt!r}: must be 'png', 'pdf' or 'svg'")
    path = script(name)
    values = {k: _value(v) for k, v in variables.items()}
    if not available():
        print(f"(gnuplot is not installed: {name} is not drawn; the numbers are printed above)")
        return None
    folder = pathlib.Path(keep) if keep else pathlib.Path(tempfile.mkdtemp(prefix="fl_fig_"))
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / f"{path.stem}.{fmt}"
    args = {"figdir": _value(fl.figures_dir()), "fmt": _value(fmt), "out": _value(out)}
    for var, text in data.items():
        f = folder / f"{var}.dat"
        f.write_text(text)
        args[var] = _value(f)
    args.update(values)
    cmd = ["gnuplot"]
    for k, v in args.items():
        cmd += ["-e", f"{k} = {v}"]
    p = subprocess.run(cmd + [str(path)], capture_output=True, text=True)
    if p.returncode != 0 or not out.is_file() or out.stat().st_size == 0:
        last = (p.stderr.strip().splitlines() or ["no output written"])[-1]
        fl._fail(f"gnuplot {name}: {last}")
    if show and fmt == "png":
        try:
            from IPython import get_ipython
            from IPython.display import Image, display
            if get_ipython() is not None:
                display(Image(filename=str(out)))
        except ImportError:
            pass
    return out


def table(rows):
    """Whitespace-separated text of rows (numbers and quoted-free strings), one line each."""
    return "".join(" ".join(str(x) for x in r) + "\n" for r in rows)
