#!/usr/bin/env python3
"""grading_battery.py: the grader against wrong submissions (ctest: notebooks_grading_battery).

    python3 grading_battery.py LIB CLI [--only LAB] [--list]

Builds the student-only layout (make_handout.py --solutions) in a temporary folder, and grades,
with grader/core.py in this process and a fixed test secret: every lab's solution notebook as it
lies in the layout, for two student ids (every check must pass), and every submission of the
battery below (each a solution notebook with answer cells rewritten: a plausible mistake, a
shortcut through the binding, answers typed from the handouts or from another student's numbers,
monkeypatching the checks or the student id, a two-pass softmax, a schedule that keeps no O on
chip, an escape from the grader's process).  Each must fail the check it names; the run fails
(exit 1) on any that passes, on an edit that does not apply to the solution (so the battery
cannot rot silently), and on fewer than MINIMUM entries.
"""
import argparse
import copy
import json
import math
import os
import pathlib
import shutil
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent.parent
MINIMUM = 150
SECRET = bytes.fromhex("5eed" * 16)
IDS = ("s-ada", "s-bob")   # the battery's student; a second one whose numbers get copied

ENTRIES = []


def entry(lab, name, check, student=IDS[0], **cells):
    """A wrong submission of `student`: the solution of `lab` with answer cells rewritten
    (cellN=code: the whole cell; cellN=[(old, new), ...]: replacements in the solution's cell),
    which must fail `check`."""
    ENTRIES.append((lab, name, check, student, {int(k[4:]): v for k, v in cells.items()}))


def student_where(lab, ok):
    """An id whose grading parameters of lab, under the battery's secret, satisfy ok(P)."""
    import importlib
    from grader.core import grading_rng
    spec = importlib.import_module(f"grader.lab{lab}")
    return next(f"s-{lab}-{i}" for i in range(1000) if ok(spec.params(grading_rng(SECRET, lab, f"s-{lab}-{i}"))))


def public(lab, student=IDS[1]):
    """The public parameters of a student (another id by default: copied answers)."""
    import importlib
    return importlib.import_module(f"flashlab.labkit.lab{lab}").params(student)


# ----------------------------------------------------------------------------------------------
# Submissions that escape or fool nothing: one set per lab below, and these, for every lab
ESCAPES = {
    "reads the instructor's secret file": "print(open('/tmp/grader-secret').read())",
    "runs the CLI in a subprocess": "import subprocess; subprocess.run(['flashlab', 'count'])",
    "calls os.system": "import os; os.system('echo hi')",
    "loads the C library with ctypes": "import ctypes; ctypes.CDLL('libflashlab.so')",
    "writes a file": "open('answers.txt', 'w').write('x')",
    "lists /proc": "import os; os.listdir('/proc')",
    "kills its parent": "import os; os.kill(os.getppid(), 9)",
    "loops forever": "while True: pass",
}


def _escape_entries():
    firsts = {1: "m1", 2: "predict_standard", 3: "napkin", 4: "decode_keep", 5: "predict_flash2_bwd",
              6: "model_for_kernel", 7: "floors", 8: "my_schedule", 9: "fa2_tiles", 10: "model_bytes"}
    checks = {1: "lab1.tile-one", 2: "lab2.standard", 3: "lab3.napkin", 4: "lab4.decode-corner", 5: "lab5.flash2-bwd",
              6: "lab6.model", 7: "lab7.floors", 8: "lab8.design", 9: "lab9.tiles", 10: "lab10.same-bytes"}
    for k, (what, code) in enumerate(ESCAPES.items()):
        for lab in (1 + k % 10, 1 + (k + 5) % 10):
            entry(lab, what, checks[lab], cell1=code + f"\n{firsts[lab]} = None")


# ----------------------------------------------------------------------------------------------
# Lab 1

def _lab1():
    P = public(1)
    s, v = P["row"]
    m1 = max(s[:2])
    l1 = sum(math.exp(x - m1) for x in s[:2])
    u1 = [sum(math.exp(x - m1) * r[c] for x, r in zip(s[:2], v[:2])) for c in range(2)]
    entry(1, "typed from another student's numbers", "lab1.tile-one", cell1=f"m1, l1, u1 = {m1!r}, {l1!r}, {u1!r}")
    entry(1, "typed from the handout's worked example", "lab1.tile-one",
          cell1="m1, l1, u1 = 2.0, 1.3679, [3.6788, 10.0]")
    entry(1, "STUDENT = '' and the worked example", "lab1.tile-one",
          cell1="STUDENT = ''\nP = lab1.params('')\nscores, values = P['row']\nm1, l1, u1 = 2.0, 1.367879, [3.678794, 10.0]")
    entry(1, "replaces labkit.report and the check", "lab1.tile-one",
          cell1="from flashlab import labkit\nlabkit.report = lambda *a, **k: print('CHECK lab1.tile-one: PASS')\n"
                "lab1.tile_one = lambda *a, **k: None\nm1 = l1 = u1 = 0.0")
    entry(1, "l1 as the sum of e^s, unshifted", "lab1.tile-one", cell1=[("math.exp(s - m1) for s", "math.exp(s) for s")])
    entry(1, "u1 divided by l1", "lab1.tile-one",
          cell1=[("for c in range(2)]", "for c in range(2)]\nu1 = [x / l1 for x in u1]")])
    entry(1, "the state from fl.osm_step", "lab1.tile-one",
          cell1="st = fl.OsmState(2)\nfl.osm_step(st, scores[0:2], values[0:2])\nm1, l1, u1 = st.m, st.l, st.u")
    entry(1, "the maximum of the whole row", "lab1.tile-one", cell1=[("m1 = max(scores[0:2])", "m1 = max(scores)")])
    entry(1, "l2 without rescaling l1", "lab1.tile-two", cell2=[("l2 = a2 * l1 +", "l2 = l1 +")])
    entry(1, "a2 inverted", "lab1.tile-two", cell2=[("a2 = math.exp(m1 - m2)", "a2 = math.exp(m2 - m1)")])
    entry(1, "O is u2 itself", "lab1.tile-two", cell2=[("O = [x / l2 for x in u2]", "O = list(u2)")])
    entry(1, "factors: 1 for the first tile", "lab1.rescales",
          cell3=[("0.0 if seen == float(\"-inf\") else", "1.0 if seen == float(\"-inf\") else")])
    entry(1, "factors from fl.osm_step", "lab1.rescales",
          cell3="st = fl.OsmState(2)\nfactors = [fl.osm_step(st, [x], [y]) for x, y in zip(stream_scores, stream_values)]")
    entry(1, "factors typed from the handout", "lab1.rescales", cell3="factors = [0.0, 1.0, math.exp(-2), 1.0]")
    entry(1, "a two-pass softmax", "lab1.own-tiling", cell4=[(
        "    c0 = 0\n    for t in tile_sizes:\n",
        "    c0 = 0\n    for t in tile_sizes:\n        m.load(s, S, 0, c0, 1, t)\n        m.row_max(mx, s, 1, t, accumulate=True)\n"
        "        c0 += t\n    c0 = 0\n    for t in tile_sizes:\n")])
    entry(1, "o not rescaled", "lab1.own-tiling", cell4=[("m.max_rescale(mx, s, 1, t, l, o)", "m.max_rescale(mx, s, 1, t, l)")])
    entry(1, "no running maximum: row_max of each tile", "lab1.own-tiling",
          cell4=[("m.max_rescale(mx, s, 1, t, l, o)", "m.row_max(mx, s, 1, t)")])
    entry(1, "O stored after every tile", "lab1.own-tiling",
          cell4=[("        m.matmul(o, s, v, 1, dv, t, accumulate=True)\n",
                  "        m.matmul(o, s, v, 1, dv, t, accumulate=True)\n        m.store(o, O, 0, 0, 1, dv)\n")])
    entry(1, "reads the scores from HBM through the backend", "lab1.own-tiling",
          cell4=[("    dv, T = V.cols, max(tile_sizes)", "    row = m._b.machine.tensors['S'].read()\n    dv, T = V.cols, max(tile_sizes)")])
    entry(1, "the whole row as one tile", "lab1.own-tiling",
          cell4=[("def my_online_softmax(m, S, V, O, tile_sizes):", "def my_online_softmax(m, S, V, O, tile_sizes):\n    tile_sizes = [sum(tile_sizes)]")])


# ----------------------------------------------------------------------------------------------
# Lab 2

def _lab2():
    P = public(2)
    entry(2, "counts from fl.run", "lab2.standard", cell1="def predict_standard(N, d, Br, Bc):\n"
          "    return fl.run('standard', N=N, d=d, M=60000, Br=Br, Bc=Bc).tensors")
    entry(2, "Bc counts the row blocks", "lab2.standard", cell1=[("Tr = cdiv(N, Br)", "Tr = cdiv(N, Bc)")])
    entry(2, "V read once", "lab2.standard", cell1=[('"V": (N * d * Tr, 0)', '"V": (N * d, 0)')])
    entry(2, "S written twice", "lab2.standard", cell1=[('"S": (N * N, N * N)', '"S": (N * N, 2 * N * N)')])
    entry(2, "flash2 counts from fl.run", "lab2.flash2", cell2="def predict_flash2(N, d, Br, Bc):\n"
          "    return fl.run('flash2', N=N, d=d, M=60000, Br=Br, Bc=Bc).tensors")
    entry(2, "flash2 without L", "lab2.flash2", cell2=[(', "L": (0, N)}', "}")])
    entry(2, "flash2 reads K once", "lab2.flash2", cell2=[('"K": (N * d * Tr, 0)', '"K": (N * d, 0)')])
    entry(2, "flash2 with Bc", "lab2.flash2", cell2=[("Tr = cdiv(N, Br)", "Tr = cdiv(N, Bc)")])
    N, d, M = P["trace"]
    entry(2, "trace answers typed from another student's run", "lab2.trace",
          cell3="flash2_K_loads, flash1_Q_loads, flash1_O_stores = 8, 8, 9")
    entry(2, "trace answers from fl.trace", "lab2.trace", cell3=(
        "ev = fl.trace('flash1,flash2', N=P['trace'][0], d=P['trace'][1], M=P['trace'][2])\n"
        "from collections import Counter\n"
        "k = lambda a, kind, t: max(Counter((e['tile_r'], e['tile_c']) for e in ev if e['algo'] == a and e['event'] == kind and e['tensor'] == t).values())\n"
        "flash2_K_loads, flash1_Q_loads, flash1_O_stores = k('flash2', 'load', 'K'), k('flash1', 'load', 'Q'), k('flash1', 'store', 'O')"))
    entry(2, "flash1's line 2 forgotten", "lab2.trace", cell3=[("flash1_O_stores = flash1_Q_loads + 1", "flash1_O_stores = flash1_Q_loads")])
    entry(2, "flash1's Q loads from Br", "lab2.trace", cell3=[('flash1_Q_loads = cdiv(N_t, b1["Bc"])', 'flash1_Q_loads = cdiv(N_t, b1["Br"])')])
    entry(2, "B typed", "lab2.own-schedule", cell4=[("B = max(b for b in range(1, N + 1) if fl.footprint(\"flash2\", d, b, b) <= M)", "B = 22")])
    entry(2, "B without the row vectors", "lab2.own-schedule",
          cell4=[("fl.footprint(\"flash2\", d, b, b) <= M)", "4 * b * d + b * b <= M)")])
    entry(2, "row blocks of Bc rows", "lab2.own-schedule",
          cell4=[("    for r0 in range(0, N, Br):\n        br = min(Br, N - r0)", "    for r0 in range(0, N, Bc):\n        br = min(Bc, N - r0)")])
    entry(2, "O_i stored inside the key loop", "lab2.own-schedule",
          cell4=[("            m.matmul(Oi, S, Vj, br, d, bc, accumulate=True)\n",
                  "            m.matmul(Oi, S, Vj, br, d, bc, accumulate=True)\n            m.store(Oi, O, r0, 0, br, d)\n")])
    entry(2, "O_i not rescaled", "lab2.own-schedule", cell4=[("m.max_rescale(mi, S, br, bc, li, Oi)", "m.max_rescale(mi, S, br, bc, li)")])
    entry(2, "a two-pass row block (K read twice)", "lab2.own-schedule", cell4=[(
        "        for c0 in range(0, N, Bc):\n            bc = min(Bc, N - c0)\n            m.load(Kj, K, c0, 0, bc, d)",
        "        for c0 in range(0, N, Bc):\n            bc = min(Bc, N - c0)\n            m.load(Kj, K, c0, 0, bc, d)\n"
        "            m.matmul(S, Qi, Kj, br, bc, d, transpose_b=True, alpha=1 / math.sqrt(d))\n"
        "            m.row_max(mi, S, br, bc, accumulate=True)\n"
        "        for c0 in range(0, N, Bc):\n            bc = min(Bc, N - c0)\n            m.load(Kj, K, c0, 0, bc, d)")])
    entry(2, "no scale 1/sqrt(d)", "lab2.own-schedule", cell4=[("alpha=1 / math.sqrt(d)", "alpha=1.0")])
    entry(2, "full-size last block", "lab2.own-schedule", cell4=[("        br = min(Br, N - r0)", "        br = Br")])
    entry(2, "no O accumulator: partial O stored per key block", "lab2.own-schedule", cell4=[
        ("            m.matmul(Oi, S, Vj, br, d, bc, accumulate=True)\n",
         "            m.matmul(Oi, S, Vj, br, d, bc)\n            m.store(Oi, O, r0, 0, br, d)\n"),
        ("        m.div_rows(Oi, li, br, d)\n", ""), ("        m.store(Oi, O, r0, 0, br, d)\n        m.store(mi, L", "        m.store(mi, L")])
    entry(2, "L is m_i, not its logsumexp", "lab2.own-schedule", cell4=[("        m.lse(mi, mi, li, br)\n", "")])


# ----------------------------------------------------------------------------------------------
# Lab 3

def _lab3():
    entry(3, "the constant the machine measures", "lab3.napkin", cell1=[("return 8 *", "return 9 *")])
    entry(3, "only K or V re-read", "lab3.napkin", cell1=[("return 8 *", "return 4 *")])
    entry(3, "the napkin from fl.run", "lab3.napkin",
          cell1="def napkin(N, d, M):\n    return fl.run('flash2', N=N, d=d, M=M).total")
    entry(3, "the napkin typed for one case", "lab3.napkin", cell1="def napkin(N, d, M):\n    return 144183296")
    entry(3, "the fit over every point", "lab3.fit", cell2=[("for M in regime) / len(regime)", "for M in Ms) / len(Ms)")])
    entry(3, "a geometric mean", "lab3.fit", cell2=[(
        "c_fit = {a: sum(sweep[a, M].total / law(M) for M in regime) / len(regime) for a in (\"flash1\", \"flash2\")}",
        "c_fit = {a: math.exp(sum(math.log(sweep[a, M].total / law(M)) for M in regime) / len(regime)) for a in (\"flash1\", \"flash2\")}")])
    entry(3, "the spread inverted", "lab3.fit", cell2=[("spread = max(r2) / min(r2)", "spread = min(r2) / max(r2)")])
    entry(3, "the fit typed from the handout", "lab3.fit", cell2="c_fit = {'flash1': 14.3, 'flash2': 12.8}\nspread = 2.8")
    entry(3, "a sweep of its own, made up", "lab3.fit",
          cell2="sweep = {k: type('R', (), {'total': 1})() for k in sweep}\nc_fit = {'flash1': 1.0, 'flash2': 1.0}\nspread = 1.0")
    entry(3, "M_flat without the row vectors", "lab3.flat", cell3=[("M_flat = 4 * n_f * d_f + n_f * n_f + 2 * n_f", "M_flat = 4 * n_f * d_f + n_f * n_f")])
    entry(3, "M_flat from fl.footprint", "lab3.flat", cell3=[("M_flat = 4 * n_f * d_f + n_f * n_f + 2 * n_f",
                                                              "M_flat = fl.footprint('flash2', d_f, n_f, n_f)")])
    entry(3, "M_flat by a search on fl.blocks", "lab3.flat", cell3=[("M_flat = 4 * n_f * d_f + n_f * n_f + 2 * n_f",
          "M_flat = next(M for M in range(4 * n_f * d_f, 10**8, 1) if fl.blocks('flash2', N=n_f, d=d_f, M=M)['Br'] >= n_f)")])
    entry(3, "M_flat typed from the handout", "lab3.flat", cell3="M_flat = 1312768")
    entry(3, "M_flat = N d", "lab3.flat", cell3="M_flat = P['flat'][0] * P['flat'][1]")
    entry(3, "the paper's blocks from fl.blocks", "lab3.paper-blocks", cell4="b = fl.blocks('flash1', N=1024, d=P['paper'][0], M=P['paper'][1])\n"
          "paper_Bc, paper_Br, paper_need = b['paper_Bc'], b['paper_Br'], b['paper_footprint']\npaper_fits = paper_need <= P['paper'][1]")
    entry(3, "B_c rounded down", "lab3.paper-blocks", cell4=[("paper_Bc = math.ceil(M_p / (4 * d_p))", "paper_Bc = M_p // (4 * d_p)")])
    entry(3, "the paper's blocks typed from the handout", "lab3.paper-blocks",
          cell4="paper_Bc, paper_Br, paper_need, paper_fits = 192, 128, 107264, False")


# ----------------------------------------------------------------------------------------------
# Lab 4

def _lab4():
    entry(4, "the top-left corner", "lab4.decode-corner", cell1=[("j <= i + nk - nq", "j <= i")])
    entry(4, "the corner from fl.mask_matrix", "lab4.decode-corner",
          cell1="def decode_keep(nq, nk):\n    return fl.mask_matrix(nq, nk, 'bottom-right')")
    entry(4, "the offset's absolute value", "lab4.decode-corner", cell1=[("j <= i + nk - nq", "j <= i + abs(nk - nq)")])
    entry(4, "blind shapes typed from the handout", "lab4.blind-tests", cell2=[(
        "blind_shapes = {(nq, nk) for nq, nk in candidates if nq == nk}", "blind_shapes = {(1, 1), (4, 4)}")])
    entry(4, "blind shapes with Nq <= Nk", "lab4.blind-tests", cell2=[("if nq == nk}", "if nq <= nk}")])
    entry(4, "blind shapes from fl.mask_matrix", "lab4.blind-tests", cell2=[("if nq == nk}",
          "if fl.mask_matrix(nq, nk, 'top-left') == fl.mask_matrix(nq, nk, 'bottom-right')}")])
    entry(4, "the window not shifted", "lab4.window", cell3=[("shift = nk - nq", "shift = 0")])
    entry(4, "the window from fl.mask_matrix", "lab4.window",
          cell3="def window_keep(nq, nk, left, right):\n    return fl.mask_matrix(nq, nk, 'none', left, right)")
    entry(4, "the window's sides swapped", "lab4.window", cell3=[("i + shift - left", "i + shift - right"), ("i + shift + right", "i + shift + left")])
    entry(4, "cu_seqlens without the leading 0", "lab4.varlen", cell4=[("return [0] + list(", "return list(")])
    entry(4, "cu_seqlens typed for the handout's batch", "lab4.varlen", cell4="def cu_seqlens(lengths):\n    return [0, 100, 400, 400, 650]")
    entry(4, "heads interleaved", "lab4.gqa", cell5=[("return h // (Hq // Hkv)", "return h % Hkv")])
    entry(4, "heads from fl.kv_head", "lab4.gqa", cell5="def kv_head(h, Hq, Hkv):\n    return fl.kv_head(h, Hq, Hkv)")
    entry(4, "heads by Hkv", "lab4.gqa", cell5=[("return h // (Hq // Hkv)", "return h // Hkv")])


# ----------------------------------------------------------------------------------------------
# Lab 5

def _lab5():
    entry(5, "counts from fl.run", "lab5.flash2-bwd", cell1="def predict_flash2_bwd(N, d, Br, Bc):\n"
          "    return fl.run('flash2', N=N, d=d, M=60000, pass_='bwd', Br=Br, Bc=Bc).tensors")
    entry(5, "Br counts the key blocks", "lab5.flash2-bwd", cell1=[("Tc, Nd = cdiv(N, Bc), N * d", "Tc, Nd = cdiv(N, Br), N * d")])
    entry(5, "dQ not initialised", "lab5.flash2-bwd", cell1=[('"dQ": (Tc * Nd, Nd + Tc * Nd)', '"dQ": (Tc * Nd, Tc * Nd)')])
    entry(5, "D read once", "lab5.flash2-bwd", cell1=[('"D": (Tc * N, N)', '"D": (N, N)')])
    entry(5, "saved typed from the handout", "lab5.saved", cell2="saved_standard = {'P': 1048576}\nsaved_flash2 = {'L': 1024}")
    entry(5, "saved from a trace", "lab5.saved", cell2=(
        "r = fl.run('standard', N=P['saved'][0], d=P['saved'][1], M=98304, pass_='bwd')\n"
        "saved_standard = {'P': P['saved'][0] ** 2}\nsaved_flash2 = {'L': P['saved'][0]}"))
    entry(5, "flash2 keeps D too", "lab5.saved", cell2=[('saved_flash2 = {"L": N5}', 'saved_flash2 = {"L": N5, "D": N5}')])
    entry(5, "P of N x d", "lab5.saved", cell2=[('saved_standard = {"P": N5 * N5}', 'saved_standard = {"P": N5 * d5}')])
    entry(5, "the ratio inverted", "lab5.traffic", cell3=[("ratio = f2.total / std.total", "ratio = std.total / f2.total")])
    entry(5, "the forward only", "lab5.traffic", cell3=[("ratio = f2.total / std.total", "ratio = f2.fwd_total / std.fwd_total")])
    entry(5, "the ratio typed from the handout", "lab5.traffic", cell3="ratio, recompute_adds_traffic = 0.216, False")
    entry(5, "fwd and bwd swapped", "lab5.sweep", cell4=[("(r.fwd_total, r.bwd_total)", "(r.bwd_total, r.fwd_total)")])
    entry(5, "M_cross typed as 2 d^2", "lab5.sweep", cell4=[("M_cross = next(", "M_cross = 2 * d4 * d4 or next(")])
    entry(5, "the sweep at the handout's M", "lab5.sweep", cell4=[("Ms = [M0 * 2 ** k for k in range(11)]", "Ms = [1024 * 2 ** k for k in range(11)]")])


# ----------------------------------------------------------------------------------------------
# Lab 6

def _lab6():
    entry(6, "blocks not forced", "lab6.model", cell1=[("M=M_eff, Br=Br, Bc=Bc,", "M=M_eff,")])
    entry(6, "the forward's footprint for a backward kernel", "lab6.model", cell1=[("bwd=(pass_ == \"bwd\")", "bwd=False")])
    entry(6, "mask and Nk not passed", "lab6.model", cell1=[("causal=causal, pass_=pass_, Nk=Nk or N)", "pass_=pass_)")])
    entry(6, "the recorded model columns looked up", "lab6.model", cell1=(
        "class Run:\n    pass\n\ndef model_for_kernel(algo, N, d, Br, Bc, causal='none', elem_bytes=2, pass_='fwd', Nk=None):\n"
        "    for r in P['rows'] + P['kernels']:\n"
        "        if (r['algo'], int(r['N']), int(r['d']), int(r['Br']), int(r['Bc'])) == (algo, N, d, Br, Bc):\n"
        "            x = Run(); x.Br, x.Bc = Br, Bc; x.M = fl.footprint(algo, d, Br, Bc, bwd=pass_ == 'bwd')\n"
        "            x.reads, x.writes = int(r['model_reads']), int(r['model_writes']); x.read_bytes = 2 * x.reads\n"
        "            return x\n    return None"))
    entry(6, "rows_equal = rows_compared", "lab6.counters", cell2=[("rows_equal += (m.reads, m.writes) == (int(r[\"gpu_reads\"]), int(r[\"gpu_writes\"]))",
                                                                    "rows_equal += 1")])
    entry(6, "every row counted", "lab6.counters", cell2=[("for r in counter_rows():", "for r in P['rows']:")])
    entry(6, "counts typed", "lab6.counters", cell2="rows_compared = rows_equal = 74")
    entry(6, "the recorded ratio column", "lab6.ncu", cell3=[("ratio = float(r[\"dram_read_B\"]) / m.read_bytes", "ratio = float(r['dram_read_ratio'])")])
    entry(6, "the largest ratio", "lab6.ncu", cell3=[("if best is None or ratio < best[0]:", "if best is None or ratio > best[0]:")])
    entry(6, "typed from the handout", "lab6.ncu", cell3="min_dram_ratio, min_dram_row = 0.006, ('flash2', 4096, 16, 16)")


# ----------------------------------------------------------------------------------------------
# Lab 7

def _lab7():
    entry(7, "the causal mask not halving", "lab7.floors", cell1=[(" * (0.5 if causal else 1.0)", "")])
    entry(7, "elements for bytes", "lab7.floors", cell1=[("min_bytes = 4.0 * B * H * N * d * elem_bytes", "min_bytes = 4.0 * B * H * N * d")])
    entry(7, "the ceilings swapped", "lab7.floors", cell1=[("flops / PEAK_FLOPS * 1e3, min_bytes / PEAK_BYTES * 1e3", "flops / PEAK_BYTES * 1e3, min_bytes / PEAK_FLOPS * 1e3")])
    entry(7, "the recorded model_bytes column", "lab7.bytes", cell2="def schedule_of(row):\n    return 'flash2'\n\ndef model_bytes(row):\n    return int(row['model_bytes'])")
    entry(7, "the forward's footprint for a backward", "lab7.bytes", cell2=[("bwd=bwd)", "bwd=False)")])
    entry(7, "batch and heads left out", "lab7.bytes", cell2=[("batch=int(row[\"B\"]), heads=int(row[\"H\"]), ", "")])
    entry(7, "the speedup inverted", "lab7.floor", cell3=[("speedup = float(std[\"median_ms\"]) / float(tiled[\"median_ms\"])",
                                                         "speedup = float(tiled['median_ms']) / float(std['median_ms'])")])
    entry(7, "tiled_tflops from the recorded column", "lab7.floor", cell3=[("tiled_tflops = f / (float(tiled[\"median_ms\"]) * 1e-3) / 1e12",
                                                                          "tiled_tflops = float(tiled['tflops'])")])
    entry(7, "typed from the handout", "lab7.floor", cell3="speedup, byte_ratio, std_tbps, tiled_tflops = 6.2, 4.55, 2.25, 348.0")
    entry(7, "the best shape, not the worst", "lab7.sdpa", cell4=[("max(ours) / base[0] < worst_ratio", "max(ours) / base[0] > worst_ratio")])
    entry(7, "always against sdpa-fa2", "lab7.sdpa", cell4=[("r[\"impl\"] == bench[\"baseline\"]", "r['impl'] == 'sdpa-fa2'")],
          student=student_where(7, lambda P: P["bench"]["baseline"] != "sdpa-fa2"))
    entry(7, "typed from the handout", "lab7.sdpa", cell4="worst_ratio, worst_shape = 1.14, ('fp16', 128, 1024, 0)")


# ----------------------------------------------------------------------------------------------
# Lab 8

OLD_LAB8 = '''def my_schedule(m, T, case):
    # the count-only schedule of the former rule: tiles of Q, K and V on chip, no O accumulator,
    # no score tile, no row statistics
    Nq, d, H, Hk = case["Nq"], case["d"], case["heads"], case["kv_heads"]
    Nk = case["Nk"] or Nq
    B = 16
    Qi, Kj, Vj = m.alloc("Q_i", B, d), m.alloc("K_j", B, d), m.alloc("V_j", B, d)
    for h in range(H):
        kv = h // (H // Hk)
        for r0 in range(0, Nq, B):
            br = min(B, Nq - r0)
            m.load(Qi, T["Q"], h * Nq + r0, 0, br, d)
            for c0 in range(0, Nk, B):
                bc = min(B, Nk - c0)
                if m.tile_kind(r0, br, c0, bc) == "empty":
                    continue
                m.load(Kj, T["K"], kv * Nk + c0, 0, bc, d)
                m.load(Vj, T["V"], kv * Nk + c0, 0, bc, d)
            m.store(Qi, T["O"], h * Nq + r0, 0, br, d)
'''


def _lab8():
    entry(8, "no O accumulator, score tile or statistics (the former rule's exploit)", "lab8.design", cell1=OLD_LAB8)
    entry(8, "partial tiles not masked", "lab8.design", cell1=[("                if kind == \"partial\":\n                    for g in range(G):\n"
                                                               "                        m.mask(S, r0, c0, br, bc, row=g * br)\n", "")])
    entry(8, "partial tiles skipped too", "lab8.design", cell1=[("if kind == \"empty\":", "if kind != \"full\":")])
    entry(8, "O not rescaled", "lab8.design", cell1=[("m.max_rescale(mi, S, rows, bc, li, Oi)", "m.max_rescale(mi, S, rows, bc, li)")])
    entry(8, "tiny blocks", "lab8.design", cell1=[("    Br, Bc = int(best[\"Br\"]), int(best[\"Bc\"])", "    Br, Bc = 2, 2")])
    entry(8, "blocks larger than M allows", "lab8.design", cell1=[("    Br, Bc = int(best[\"Br\"]), int(best[\"Bc\"])", "    Br, Bc = 4 * int(best['Br']), 4 * int(best['Bc'])")])
    entry(8, "L not stored", "lab8.design", cell1=[("                m.store(mi, T[\"L\"], (h0 + g) * Nq + r0, 0, br, 1, row=g * br)", "")])
    entry(8, "the wrong K/V head", "lab8.design", cell1=[("kv = h0 // (H // Hk)", "kv = h0 % Hk")],
          student=student_where(8, lambda c: c["kind"] == "gqa" and c["kv_heads"] == 2))
    entry(8, "reads Q through the backend", "lab8.design",
          cell1=[("    Nq, d, H, Hk = case[\"Nq\"], case[\"d\"], case[\"heads\"], case[\"kv_heads\"]",
                  "    q = m._b.machine.tensors['Q'].read()\n    Nq, d, H, Hk = case[\"Nq\"], case[\"d\"], case[\"heads\"], case[\"kv_heads\"]")])
    entry(8, "the handout's case typed in", "lab8.design", cell1=[("    Nq, d, H, Hk = case[\"Nq\"], case[\"d\"], case[\"heads\"], case[\"kv_heads\"]",
                                                                  "    case = dict(case, Nq=256, Nk=256, heads=1, kv_heads=1, causal='bottom-right')\n"
                                                                  "    Nq, d, H, Hk = case[\"Nq\"], case[\"d\"], case[\"heads\"], case[\"kv_heads\"]")])


# ----------------------------------------------------------------------------------------------
# Lab 9

def _lab9():
    entry(9, "the tiles swapped", "lab9.tiles", cell1=[("(int(m[2]), int(m[3]))", "(int(m[3]), int(m[2]))")])
    entry(9, "a table of the recorded names", "lab9.tiles",
          cell1="TILES = {}\nfor n in P['names']:\n    a = re.search(r'traits<(\\d+), (\\d+), (\\d+)', n)\n    TILES[n] = (int(a[2]), int(a[3]))\n"
                "def fa2_tiles(name):\n    return TILES.get(name)")
    entry(9, "d taken for a tile", "lab9.tiles", cell1=[("(int(m[2]), int(m[3]))", "(int(m[1]), int(m[2]))")])
    entry(9, "the DRAM column", "lab9.model", cell2=[('["sm_read_B"])', '["dram_read_B"])')])
    entry(9, "no --causal", "lab9.model", cell2=[("    if r[\"causal\"] == \"1\":\n        args.append(\"--causal\")\n", "")])
    entry(9, "the measured value", "lab9.model", cell2="def model_sm_read(r, Br, Bc, family='fwd-q'):\n    return int(sm_read(r))")
    entry(9, "the name's 64", "lab9.cudnn", cell3=[("return per_group * consumers", "return per_group")])
    entry(9, "the name's rows typed as 64", "lab9.cudnn", cell3=[("return per_group * consumers", "return 64 * consumers")])
    entry(9, "every warpgroup", "lab9.cudnn", cell3=[("consumers = int(r[\"launch__block_dim_x\"]) // 128 - 1", "consumers = int(r['launch__block_dim_x']) // 128")])
    entry(9, "typed 128", "lab9.cudnn", cell3="def cudnn_rows(r):\n    return 128")
    entry(9, "the flash2 order", "lab9.memeff", cell4=[('memeff_family = "fwd-qkv"', 'memeff_family = "fwd-q"')])
    entry(9, "16 typed", "lab9.memeff", cell4=[("    keys = int(re.search(r\"aligned_(\\d+)x(\\d+)\", r[\"kernel\"])[2])\n    return -(-int(r[\"N\"]) // keys)",
                                                "    return 16")])
    entry(9, "the query tile for the key tile", "lab9.memeff", cell4=[("[2])\n    return -(-int", "[1])\n    return -(-int")])
    entry(9, "the raw ratio", "lab9.spills", cell5=[("return (sm_read(r) - spilled) / twopass_model(r)", "return sm_read(r) / twopass_model(r)")])
    entry(9, "sectors for bytes", "lab9.spills", cell5=[(".sum\"]) * SECTOR", ".sum\"])")])
    entry(9, "typed 1.0", "lab9.spills", cell5="def spill_corrected_ratio(r):\n    return 1.0")
    entry(9, "the tex unit's misses only", "lab9.reductions", cell6=[(
        "                     + float(r[\"lts__t_sectors_srcunit_ltcfabric_lookup_miss.sum\"])\n"
        "                     - float(r[\"lts__t_sectors_srcunit_ltcfabric_op_read_lookup_miss.sum\"]))", ")")])
    entry(9, "the split inverted", "lab9.reductions", cell6=[("return red / red_m, (float(r[\"dram__bytes_read.sum\"]) - red) / (dram_m - red_m)",
                                                            "return red_m / red, (dram_m - red_m) / (float(r['dram__bytes_read.sum']) - red)")])
    entry(9, "typed from the handout", "lab9.reductions",
          cell6="def reduction_misses(r):\n    return 213.8e6\n\ndef dram_split(r):\n    return (0.846, 0.941)")


# ----------------------------------------------------------------------------------------------
# Lab 10

def _lab10():
    entry(10, "the counters' columns", "lab10.same-bytes",
          cell1="def model_bytes(row):\n    return int(row['counter_read_B_per_head']), int(row['counter_write_B_per_head'])")
    entry(10, "tiles not forced", "lab10.same-bytes", cell1=[("Br=Br, Bc=Bc, M=", "M=")])
    entry(10, "one head", "lab10.floor", cell2=[("heads=int(row[\"heads\"]),", "heads=1,")])
    entry(10, "the row's tiles, not one block", "lab10.floor", cell2=[("Br=N, Bc=Bc, M=fl.footprint(\"flash2\", d, N, Bc)", "Br=int(row['Br']), Bc=Bc, M=fl.footprint('flash2', d, int(row['Br']), Bc)")])
    entry(10, "the speedups inverted", "lab10.speed", cell3=[("(t(7, d) / t(10, d), t(10, d) / t(12, d))", "(t(10, d) / t(7, d), t(12, d) / t(10, d))")])
    entry(10, "the speedups typed from the handout", "lab10.speed", cell3="speedups = {64: (1.14, 1.20), 128: (1.19, 1.63)}")
    entry(10, "issue_active_pct as a fraction", "lab10.issue", cell4=[("float(row[\"issue_active_pct\"]) / 100 *", "float(row['issue_active_pct']) *")])
    entry(10, "the parts out of order", "lab10.issue", cell4=[(
        "    return (f(slow, \"inst_executed\") / f(fast, \"inst_executed\"),\n            f(fast, \"issue_active_pct\") / f(slow, \"issue_active_pct\"),",
        "    return (f(fast, \"issue_active_pct\") / f(slow, \"issue_active_pct\"),\n            f(slow, \"inst_executed\") / f(fast, \"inst_executed\"),")])
    entry(10, "the predicted time is the measured one", "lab10.issue", cell4=[(
        "    per_second = float(row[\"issue_active_pct\"]) / 100 * SCHEDULERS * SMS * float(row[\"sm_clock_hz\"])\n"
        "    return float(row[\"inst_executed\"]) / per_second * 1e3", "    return float(row['duration_ns']) / 1e6")])
    entry(10, "not per active cycle", "lab10.tensor", cell5=[("cycles = float(row[\"tensor_active_pct\"]) / 100 *", "cycles =")])
    entry(10, "a percentage, not a fraction", "lab10.tensor", cell5=[("/ PEAK_DENSE", "/ PEAK_DENSE * 100")])
    entry(10, "selected counted as a stall", "lab10.stalls", cell6=[("and k != \"stall_selected\"", "")])
    entry(10, "per instruction, not warp-cycles", "lab10.stalls", cell6=[("cyc = lambda r: float(r[\"stall_barrier\"]) * float(r[\"inst_executed\"])",
                                                                          "cyc = lambda r: float(r['stall_barrier'])")])
    entry(10, "the stalls typed from the handout", "lab10.stalls",
          cell6="def top_stalls(row):\n    return ['barrier', 'wait'] if row['version'] == '10' and row['d'] == '128' else ['wait', 'barrier']\n\n"
                "barrier_drop = {64: 0.57, 128: 0.31}")


for _f in (_lab1, _lab2, _lab3, _lab4, _lab5, _lab6, _lab7, _lab8, _lab9, _lab10, _escape_entries):
    _f()


# ----------------------------------------------------------------------------------------------
# Running it

def answer_cells(nb):
    return [c for c in nb["cells"] if "answer" in c.get("metadata", {}).get("tags", [])]


def mutate(nb, edits, label):
    """A copy of nb with its answer cells rewritten; ValueError when an edit does not apply."""
    nb = copy.deepcopy(nb)
    cells = answer_cells(nb)
    for k, edit in edits.items():
        if not 1 <= k <= len(cells):
            raise ValueError(f"{label}: the solution has no answer cell {k}")
        src = "".join(cells[k - 1]["source"]) if isinstance(cells[k - 1]["source"], list) else cells[k - 1]["source"]
        if isinstance(edit, str):
            src = edit
        else:
            for old, new in edit:
                if old not in src:
                    raise ValueError(f"{label}: {old[:60]!r} is not in answer cell {k} of the solution")
                src = src.replace(old, new, 1)
        cells[k - 1]["source"] = src
    return nb


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lib")
    ap.add_argument("cli")
    ap.add_argument("--only", type=int, help="one lab")
    ap.add_argument("--list", action="store_true", help="list the battery and exit")
    a = ap.parse_args(argv)
    if a.list:
        for lab, name, check, _, _ in ENTRIES:
            print(f"lab {lab:2d} {check:22s} {name}")
        print(len(ENTRIES), "entries")
        return 0
    import make_handout   # notebooks/, on PYTHONPATH (ctest sets it)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="fl_battery_"))
    bad, t0 = [], time.monotonic()
    try:
        dest = make_handout.make(tmp / "handout", solutions=True)
        os.environ.pop("FLASHLAB_STUDENT", None)
        from grader import labs
        from grader.core import grade
        sols = {n: json.loads(next(dest.glob(f"lab{n}_*_solution.ipynb")).read_text()) for n in labs.SPECS}
        for n, spec in labs.SPECS.items():
            if a.only and n != a.only:
                continue
            for sid in IDS:
                res = grade(spec, sols[n], sid, SECRET)
                failed = [f"{o.cid}: {' | '.join(o.feedback)[:300]}" for o in res if not o.passed]
                print(f"solution of lab {n} ({sid}): {sum(o.passed for o in res)} of {len(res)} checks pass")
                bad += [f"the solution of lab {n} fails for {sid}: {f}" for f in failed]
        count = 0
        for lab, name, check, sid, edits in ENTRIES:
            if a.only and lab != a.only:
                continue
            count += 1
            label = f"lab {lab}: {name}"
            try:
                nb = mutate(sols[lab], edits, label)
            except ValueError as e:
                bad.append(str(e))
                continue
            res = {o.cid: o for o in grade(labs.SPECS[lab], nb, sid, SECRET)}
            o = res.get(check)
            if o is None:
                bad.append(f"{label}: no check {check}")
            elif o.passed:
                bad.append(f"{label}: {check} PASSES")
            else:
                print(f"  FAIL as it must: {label} -> {check}: {' | '.join(o.feedback)[:150]}")
        if not a.only and count < MINIMUM:
            bad.append(f"the battery has {count} entries, fewer than {MINIMUM}")
        print(f"grading battery: {count} wrong submissions, {len(bad)} problems, {time.monotonic() - t0:.0f} s")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for b in bad:
        print("PROBLEM:", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
