"""stepview: one frame per tile event of a run, for standard, flash1 and flash2, forward and
backward, from what `flashlab trace` prints (or from a Python Machine's trace, with the values
in SRAM).

A frame holds the event, the pseudocode line that issued it (from the table PSEUDOCODE beside
the pseudocode shown), the loop indices (from the tile's index in units of its buffer), what each
live SRAM buffer holds (which tile of which tensor, and its values when the run was recorded on a
compute machine), and the running counts.  Frames are shown as text, as PNG frames and a GIF
drawn by gnuplot (the script is written by gnuplot_script below), or, where ipywidgets is
installed, in a slider.

    python3 -m flashlab.labkit.stepview trace.csv --algo flash2 --png DIR --gif out.gif
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import flashlab as fl

# The pseudocode each schedule's events are shown against (the headers of its C file), and which
# line issues an event: a rule (kind, tensor, phase) -> line, where phase is the phase the event
# belongs to (see _phase).  Loop indices: the tile index of the event (tile_r, tile_c).
PSEUDOCODE = {
    ("flash2", "fwd"): ["for i in 1..Tr:",
                        "  load Q_i",
                        "  on chip: O_i = 0, l_i = 0, m_i = -inf",
                        "  for j in 1..Tc (key blocks the mask keeps):",
                        "    load K_j, V_j",
                        "    S_ij = Q_i K_j^T; online-softmax step; O_i += P_ij V_j",
                        "  O_i = O_i / l_i;  L_i = m_i + log l_i",
                        "  write O_i",
                        "  write L_i"],
    ("flash1", "fwd"): ["initialize O = 0, l = 0, m = -inf in HBM",
                        "for j in 1..Tc:",
                        "  load K_j, V_j",
                        "  for i in 1..Tr:",
                        "    load Q_i, O_i, l_i, m_i",
                        "    S_ij = Q_i K_j^T; m, l, O updated (lines 9-12)",
                        "    write O_i",
                        "    write l_i, m_i"],
    ("standard", "fwd"): ["step 1: for i, j: load Q_i, K_j; S_ij = Q_i K_j^T",
                          "        write S_ij",
                          "step 2: load rows of S; P = softmax(S)",
                          "        write rows of P",
                          "step 3: for i, j: load P_ij, V_j; O_i += P_ij V_j",
                          "        write O_i"],
    ("flash2", "bwd"): ["initialize dQ = 0 in HBM",
                        "D = rowsum(dO o O): load dO_i, O_i",
                        "                    write D_i",
                        "for j in 1..Tc:",
                        "  load K_j, V_j",
                        "  for i (row blocks that see key block j):",
                        "    load Q_i, dO_i, dQ_i, L_i, D_i",
                        "    recompute S_ij, P_ij; dV_j += P^T dO_i; dS_ij; dQ_i += dS K_j",
                        "    write dQ_i",
                        "  write dK_j, dV_j"],
    ("flash1", "bwd"): ["initialize dQ = 0, dK = 0, dV = 0 in HBM",
                        "for j in 1..Tc:",
                        "  load K_j, V_j",
                        "  for i (row blocks that see key block j):",
                        "    load Q_i, O_i, dO_i, dQ_i, l_i, m_i",
                        "    recompute S_ij, P_ij; D_i on chip; dV_j, dS_ij, dQ_i, dK_j",
                        "    write dQ_i",
                        "  write dK_j, dV_j"],
    ("standard", "bwd"): ["step 1: load P, dO by blocks; dV = P^T dO",
                          "        write dV",
                          "step 2: load dO, V by blocks; dP = dO V^T",
                          "        write dP",
                          "step 3: load rows of P, dP; dS = P o (dP - rowsum(P o dP))",
                          "        write rows of dS",
                          "step 4: load dS, K by blocks; dQ = dS K",
                          "        write dQ",
                          "step 5: load dS, Q by blocks; dK = dS^T Q",
                          "        write dK"],
    ("online-softmax", "fwd"): ["for each tile t of the row:",
                                "  load the scores s_t and value rows V_t",
                                "  (m, l, u) <- one online-softmax step (fl_osm_step)",
                                "O = u / l",
                                "write O"],
}


def _line(algo, ps, e, st):
    """The pseudocode line (index) of event e; st carries the phase across events."""
    k, t = e["event"], e["tensor"]
    if k in ("alloc", "free"):
        return None
    if (algo, ps) == ("flash2", "fwd"):
        return {"Q": 1, "K": 4, "V": 4, "O": 7, "L": 8}.get(t)
    if (algo, ps) == ("flash1", "fwd"):
        if k == "load" and t in "KV":
            st["loop"] = True
            return 2
        if not st.get("loop"):
            return 0
        return 4 if k == "load" else 6 if t == "O" else 7
    if algo in ("flash1", "flash2") and ps == "bwd":
        if k == "load" and t in ("K", "V"):
            st["loop"] = True
            return 3 + (algo == "flash2")
        if not st.get("loop"):
            if algo == "flash1" or (k == "store" and t == "dQ"):
                return 0
            return 1 if k == "load" else 2
        if k == "load":
            return 6 if algo == "flash2" else 4
        if t == "dQ":
            return 8 if algo == "flash2" else 6
        return 9 if algo == "flash2" else 7
    if (algo, ps) == ("standard", "fwd"):
        if k == "load":
            return {"Q": 0, "K": 0, "S": 2, "P": 4, "V": 4}.get(t)
        return {"S": 1, "P": 3, "O": 5}.get(t)
    if (algo, ps) == ("standard", "bwd"):
        step = st.get("step", 1)
        if k == "load":
            if t == "P" and e["buf"].startswith("P_rows"):
                step = 3
            elif t == "dP":
                step = 3
            elif t == "V":
                step = 2
            elif t == "dO" and step >= 2:
                step = 2
            elif t == "K":
                step = 4
            elif t == "Q":
                step = 5
            elif t == "dS":
                step = max(step, 4)
        else:
            step = {"dV": 1, "dP": 2, "dS": 3, "dQ": 4, "dK": 5}.get(t, step)
        st["step"] = step
        return 2 * (step - 1) + (k == "store")
    if algo == "online-softmax":
        return 1 if k == "load" else 4
    return None


def _indices(algo, e):
    """Loop indices shown with a frame (1-based, as in the pseudocode)."""
    k, t = e["event"], e["tensor"]
    if k in ("alloc", "free") or e["tile_r"] < 0:
        return {}
    r, c = e["tile_r"] + 1, e["tile_c"] + 1
    if algo == "standard":
        if t in ("S", "P", "dP", "dS") and e["buf"] in ("Z_ij",):
            return {"i": r, "j": c}
        if t in ("Q", "O", "dO", "dQ"):
            return {"i": r, "k": c}
        return {"j": r, "k": c} if t in ("K", "V", "dK", "dV") else {"rows": r}
    if algo == "online-softmax":
        return {"t": c if t == "S" else r}
    if t in ("K", "V", "dK", "dV"):
        return {"j": r}
    return {"i": r}


def frames(rows, algo=None, ps="fwd", snapshots=None):
    """Frames of one run from trace rows (dicts with the CSV's columns).  algo: which run of a
    multi-run trace (default: the first); snapshots: {step: {buffer: values}} from record()."""
    algo = algo or rows[0]["algo"]
    rows = [r for r in rows if r["algo"] == algo]
    if not rows:
        raise fl.FlashlabError(1, f"stepview: the trace has no run of {algo}")
    key = (algo.replace("-gqa", ""), ps)
    code = PSEUDOCODE.get(key, [])
    held, st, out, loops = {}, {}, [], {}
    for e in rows:
        if e["event"] == "alloc":
            held[e["buf"]] = {"shape": (e["nr"], e["nc"]), "tile": None}
        elif e["event"] == "free":
            held.pop(e["buf"], None)
        elif e["event"] == "load" and e["buf"] in held:
            held[e["buf"]]["tile"] = (e["tensor"], e["r0"], e["c0"], e["nr"], e["nc"])
        line = _line(key[0], ps, e, st) if code else None
        loops.update(_indices(key[0], e))
        snap = (snapshots or {}).get(e["step"], {})
        out.append({"step": e["step"], "n": len(rows), "event": e["event"], "tensor": e["tensor"],
                    "buf": e["buf"], "tile": (e["r0"], e["c0"], e["nr"], e["nc"]),
                    "line": line, "code": code, "loops": dict(loops),
                    "sram": [(b, h["shape"], h["tile"], snap.get(b)) for b, h in held.items()],
                    "sram_used": e["sram_used"], "M": e["sram_capacity"],
                    "reads": e["reads"], "writes": e["writes"], "algo": algo, "pass": ps})
    return out


def text(f):
    """A frame as text: the pseudocode with the current line marked, the indices, SRAM, counts."""
    r0, c0, nr, nc = f["tile"]
    what = (f"{f['event']} {f['tensor']}[{r0}:{r0 + nr}, {c0}:{c0 + nc}] via {f['buf']}"
            if f["tensor"] not in (None, "-") else f"{f['event']} SRAM buffer {f['buf']} ({nr}x{nc})")
    lines = [f"{f['algo']} {f['pass']}  step {f['step']}/{f['n']}: {what}"]
    for i, c in enumerate(f["code"]):
        lines.append(("  > " if i == f["line"] else "    ") + c)
    if f["loops"]:
        lines.append("loop indices: " + ", ".join(f"{k} = {v}" for k, v in f["loops"].items()))
    lines.append(f"SRAM {f['sram_used']} of M = {f['M']}:")
    for b, shape, tile, vals in f["sram"]:
        held = f"{tile[0]}[{tile[1]}:{tile[1] + tile[3]}, {tile[2]}:{tile[2] + tile[4]}]" if tile else "(computed on chip)"
        lines.append(f"  {b:<8} {shape[0]}x{shape[1]:<4} holds {held}" +
                     (f"  values {_fmt(vals)}" if vals is not None else ""))
    lines.append(f"HBM reads {f['reads']}, writes {f['writes']}")
    return "\n".join(lines)


def _fmt(vals):
    flat = [x for row in vals for x in row]
    s = ", ".join(f"{x:.6g}" for x in flat[:8])
    return "[" + s + (", ..." if len(flat) > 8 else "") + "]"


def from_cli(algo="flash2", N=16, d=4, M=200, ps="fwd", **opts):
    """Frames of `flashlab trace --algo ALGO --pass PS` (a small run: every event a frame)."""
    rows = fl.trace(algo=algo, N=N, d=d, M=M, pass_=ps, **opts)
    return frames(rows, algo, ps)


# ----------------------------------------------------------------------------------------------
# Runs recorded from a Python Machine, with the values in SRAM

class Recorder:
    """A trace callback for fl.Machine that keeps trace rows (the CSV's columns) and, on a
    compute machine, a snapshot of every live buffer's values after each event."""

    def __init__(self, machine, label, tiles=None):
        self.m, self.label, self.rows, self.snaps = machine, label, [], {}
        self.shapes = {}

    def __call__(self, e):
        if e.kind == "alloc":
            self.shapes[e.buf] = (e.nr, e.nc)
        shape = self.shapes.get(e.buf, (1, 1))
        step = len(self.rows) + 1
        tile = e.kind in ("load", "store")
        self.rows.append({"algo": self.label, "step": step, "event": e.kind, "tensor": e.tensor or "-",
                          "buf": e.buf, "r0": e.r0, "c0": e.c0, "nr": e.nr, "nc": e.nc,
                          "tile_r": e.r0 // shape[0] if tile else -1, "tile_c": e.c0 // shape[1] if tile else -1,
                          "sram_used": e.sram_used, "sram_capacity": self.m.capacity,
                          "reads": e.reads, "writes": e.writes})
        if self.m.mode == "compute":
            self.snaps[step] = {b.name: b.read() for b in self.m.buffers}


TWO_TILE = ([1.0, 2.0, 3.0, 0.0], [[10.0, 0.0], [0.0, 10.0], [5.0, 5.0], [9.0, 1.0]])


def two_tile_frames(scores=None, values=None, tile=2):
    """The worked two-tile example on a compute machine: S (1 x n), V (n x dv), O (1 x dv); SRAM
    buffers s, v (one tile) and state = [m, l, u...], updated by fl_osm_step after each tile.
    Returns its frames (with the buffers' values)."""
    scores, values = scores or TWO_TILE[0], values or TWO_TILE[1]
    n, dv = len(scores), len(values[0])
    with fl.Machine(M=tile + tile * dv + 2 + dv, mode="compute", name="two tiles") as m:
        S, V, O = m.tensor("S", 1, n), m.tensor("V", n, dv), m.tensor("O", 1, dv)
        S.write([scores])
        V.write(values)
        rec = Recorder(m, "online-softmax")
        m.set_trace(rec)
        s, v, state = m.alloc("s", 1, tile), m.alloc("v", tile, dv), m.alloc("state", 1, 2 + dv)
        st = fl.OsmState(dv)
        state.write([[st.m, st.l] + st.u])
        for c0 in range(0, n, tile):
            t = min(tile, n - c0)
            m.load(s, S, 0, c0, 1, t)
            m.load(v, V, c0, 0, t, dv)
            fl.osm_step(st, s.read(1, t)[0], v.read(t, dv))
            state.write([[st.m, st.l] + st.u])
        m.free(s)
        m.free(v)
        out = m.alloc("o", 1, dv)
        out.write([fl.osm_finish(st)])
        m.store(out, O, 0, 0, 1, dv)
        return frames(rec.rows, "online-softmax", "fwd", rec.snaps)


# ----------------------------------------------------------------------------------------------
# Drawing: gnuplot PNG frames and a GIF; a slider in Jupyter

def _frame_data(f):
    """The rectangles and labels of a frame, as gnuplot data blocks (tensors left, text right)."""
    boxes, labels = [], []
    tensors = {}
    for b, shape, tile, _ in f["sram"]:
        if tile:
            tensors.setdefault(tile[0], []).append((tile, b))
    if f["tensor"] not in (None, "-"):
        tensors.setdefault(f["tensor"], [])
    x = 0
    for name in sorted(tensors):
        tiles = tensors[name]
        extent_r = max([t[1] + t[3] for t, _ in tiles] + [f["tile"][0] + f["tile"][2] if name == f["tensor"] else 1])
        extent_c = max([t[2] + t[4] for t, _ in tiles] + [f["tile"][1] + f["tile"][3] if name == f["tensor"] else 1])
        w = max(4, extent_c)
        labels.append((x + w / 2, -1.5, name))
        for t, b in tiles:
            boxes.append((x + t[2], t[1], t[4], t[3], 0x9ecae1))
        if name == f["tensor"]:
            r0, c0, nr, nc = f["tile"]
            boxes.append((x + c0, r0, nc, nr, 0xe6550d if f["event"] == "store" else 0x3182bd))
        x += w + 3
    return boxes, labels, max(x, 10)


def gnuplot_script(fs, out, fmt="png"):
    """A gnuplot script drawing frames fs: one PNG per frame (out is a folder) or one GIF."""
    style = fl.figures_dir() / "style.gp"
    lines = [f"load '{style}'", "unset key; unset xtics; unset ytics; unset border; unset grid"]
    if fmt == "gif":
        lines.append(f"set terminal gif animate delay 80 size 1200,520 background rgb 'white'")
        lines.append(f"set output '{out}'")
    else:
        lines.append("set terminal pngcairo size 1200,520 background rgb 'white'")
    for k, f in enumerate(fs):
        boxes, labels, width = _frame_data(f)
        rows = max([b[1] + b[3] for b in boxes] + [4])
        if fmt != "gif":
            lines.append(f"set output '{pathlib.Path(out) / f'frame_{k + 1:03d}.png'}'")
        lines.append("unset object; unset label")
        for i, (x, y, w, h, col) in enumerate(boxes, 1):
            lines.append(f"set object {i} rect from {x},{y} to {x + w},{y + h} fc rgb '#{col:06x}' "
                         f"fs solid 0.8 border lc rgb '#333333'")
        for x, y, s in labels:
            lines.append(f"set label '{s}' at {x},{y} center noenhanced font ',11'")
        for i, t in enumerate(text(f).splitlines()):
            t = t.replace("'", "`")
            lines.append(f"set label \"{t}\" at screen 0.52, screen {0.95 - 0.036 * i} left noenhanced font 'DejaVu Sans Mono,9'"
                         + (" tc rgb '#c00000'" if t.startswith("  >") else ""))
        lines.append(f"set xrange [-1:{width}]")
        lines.append(f"set yrange [{rows + 1}:-3]")
        lines.append("set lmargin at screen 0.02; set rmargin at screen 0.5")
        lines.append("plot NaN notitle")
        if fmt != "gif":
            lines.append("unset output")
    if fmt == "gif":
        lines.append("unset output")
    return "\n".join(lines) + "\n"


def render(fs, out, fmt="png"):
    """Draws frames with gnuplot: PNG frames into folder out, or a GIF file out.  Returns the
    paths written.  FlashlabError when gnuplot is missing or fails."""
    if not shutil.which("gnuplot"):
        raise fl.FlashlabError(1, "stepview: gnuplot is not installed")
    out = pathlib.Path(out)
    if fmt == "png":
        out.mkdir(parents=True, exist_ok=True)
    p = subprocess.run(["gnuplot"], input=gnuplot_script(fs, out, fmt), text=True, capture_output=True)
    if p.returncode != 0:
        raise fl.FlashlabError(1, "stepview: gnuplot failed: " + (p.stderr.strip().splitlines() or ["?"])[-1])
    return sorted(out.glob("frame_*.png")) if fmt == "png" else [out]


def show(fs, start=0):
    """In Jupyter: a slider over the frames when ipywidgets is installed (text and drawing of the
    chosen frame), else the text of every frame and one GIF of them (when gnuplot is there)."""
    try:
        import ipywidgets as w
        from IPython.display import Image, clear_output, display
    except ImportError:
        w = None
    if w is not None:
        tmp = pathlib.Path(tempfile.mkdtemp())
        pngs = render(fs, tmp) if shutil.which("gnuplot") else []
        out = w.Output()
        slider = w.IntSlider(value=start + 1, min=1, max=len(fs), description="step")

        def draw(change=None):
            with out:
                clear_output(wait=True)
                k = slider.value - 1
                if pngs:
                    display(Image(filename=str(pngs[k])))
                else:
                    print(text(fs[k]))
        slider.observe(draw, names="value")
        draw()
        display(w.VBox([slider, out]))
        return
    for f in fs:
        print(text(f))
        print()
    if shutil.which("gnuplot"):
        from IPython.display import Image, display
        gif = pathlib.Path(tempfile.mkdtemp()) / "steps.gif"
        render(fs, gif, "gif")
        display(Image(filename=str(gif)))


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace", help="a `flashlab trace` CSV")
    ap.add_argument("--algo", help="which run of the trace (default: the first)")
    ap.add_argument("--pass", dest="ps", default="fwd", choices=("fwd", "bwd"),
                    help="the pass the trace holds (flashlab trace --pass)")
    ap.add_argument("--png", help="folder for one PNG per frame")
    ap.add_argument("--gif", help="a GIF of all frames")
    ap.add_argument("--text", action="store_true", help="print every frame as text")
    a = ap.parse_args(argv)
    try:
        fs = frames(fl.trace_rows(pathlib.Path(a.trace).read_text()), a.algo, a.ps)
        if a.text or not (a.png or a.gif):
            for f in fs:
                print(text(f) + "\n")
        if a.png:
            print(f"stepview: {len(render(fs, a.png))} frames in {a.png}")
        if a.gif:
            render(fs, a.gif, "gif")
            print(f"stepview: {len(fs)} frames in {a.gif}")
    except (fl.FlashlabError, OSError, KeyError, ValueError) as e:
        print(f"stepview: {a.trace}: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
