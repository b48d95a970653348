#!/usr/bin/env python3
"""test_figures.py: the figures of labs 4-8 (labkit.figures and figures/lab*.gp).  The data
behind each figure is what the lab says it is (the tiles the machine loaded under a mask are the
non-empty ones and account for every K read; the GQA sweep, the passes sweep, the counters and
Nsight Compute tables come from the C library and the recorded data); every script draws PNG,
PDF and SVG; a figure drawn from a student's answer prints why and draws nothing when the answer
is unusable, and never raises; without gnuplot nothing is drawn and the reason is printed
(unittest; ctest: notebooks_figures).  The right answers the figures are drawn from are the
grader's models (grader/lab6.py, grader/lab7.py) and the solutions' functions written again
(tests/solutions_again.py).  Drawing is tested where gnuplot is installed (CI installs
it); the data tests run everywhere."""
import contextlib
import io
import pathlib
import shutil
import tempfile
import unittest
from unittest import mock

import flashlab as fl  # noqa: E402
from flashlab.labkit import figures, lab4, lab5, lab6, lab7, lab8  # noqa: E402
from grader import lab6 as key6, lab7 as key7  # noqa: E402

from solutions_again import design  # noqa: E402

HAVE_GNUPLOT = shutil.which("gnuplot") is not None


def quiet(fn, *a, **k):
    """(return value, printed text) of fn(*a, **k)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        v = fn(*a, **k)
    return v, buf.getvalue()


class Drawing(unittest.TestCase):
    def setUp(self):
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix="fl_figtest_"))

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def assertImage(self, path, fmt="png"):
        self.assertIsNotNone(path, "no figure was drawn")
        data = pathlib.Path(path).read_bytes()
        magic = {"png": b"\x89PNG", "pdf": b"%PDF", "svg": b"<?xml"}[fmt]
        self.assertTrue(data.startswith(magic), f"{path}: not a {fmt} file")
        self.assertGreater(len(data), 5000, f"{path}: suspiciously small ({len(data)} bytes)")


class Lab4Data(unittest.TestCase):
    CASES = [("top-left", -1, -1), ("bottom-right", -1, -1), ("none", 40, 0), ("none", 16, 16),
             ("bottom-right", 20, -1), ("none", -1, -1)]

    def test_loaded_tiles_are_the_nonempty_ones(self):
        sh = lab4.FIG
        Nq, Nk, d, B = sh["Nq"], sh["Nk"], sh["d"], sh["B"]
        for causal, L, R in self.CASES:
            r, loaded, cls = lab4.tile_classes(Nq, Nk, d, B, causal, L, R)
            mk = fl.mask(Nq, Nk, causal, L, R)
            nonempty = {(i // B, j // B) for i in range(0, Nq, B) for j in range(0, Nk, B)
                        if fl.mask_tile(mk, i, min(B, Nq - i), j, min(B, Nk - j)) != "empty"}
            self.assertEqual(loaded, nonempty, f"{causal} ({L}, {R})")
            # every K read is a loaded tile's keys
            self.assertEqual(r.tensors["K"][0], sum(min(B, Nk - bj * B) * d for _, bj in loaded))
            keep = fl.mask_matrix(Nq, Nk, causal, L, R)
            for i in range(Nq):
                for j in range(Nk):
                    self.assertEqual(cls[i][j] == 2, keep[i][j] == 1, f"{causal} ({L}, {R}) at {(i, j)}")
                    self.assertEqual(cls[i][j] > 0, (i // B, j // B) in loaded)

    def test_wrong_corner_is_cheaper(self):
        tl = lab4.tile_classes(64, 192, 16, 16, "top-left")[0]
        br = lab4.tile_classes(64, 192, 16, 16, "bottom-right")[0]
        self.assertLess(tl.total, br.total)

    def test_gqa_rows(self):
        rows = lab4.gqa_traffic(N=512, d=64, M=40000, Hq=16)
        self.assertEqual([r[0] for r in rows], [1, 2, 4, 8, 16])
        self.assertEqual(rows[0][2], rows[0][3], "G = 1: flash2-gqa is flash2")
        self.assertEqual(len({r[2] for r in rows}), 1, "flash2's K/V reads do not depend on G")
        for G, Hkv, f2, gqa, B, floor in rows:
            self.assertEqual(Hkv * G, 16)
            self.assertEqual(floor, 2 * Hkv * 512 * 64)
            self.assertLessEqual(floor, gqa)
            self.assertLessEqual(gqa, f2)
            g = fl.run("flash2-gqa", N=512, d=64, M=40000, heads=16, kv_heads=Hkv)
            self.assertEqual((gqa, B), (g.tensors["K"][0] + g.tensors["V"][0], g.Br))
        self.assertEqual([r[3] for r in rows], sorted((r[3] for r in rows), reverse=True))


class Lab5Data(unittest.TestCase):
    def test_sweep_is_the_machines(self):
        s = lab5._sweep(512, 32, [2048, 8192])
        for a in lab5.ALGOS:
            for M, (f, b) in zip([2048, 8192], s[a]):
                r = fl.run(a, N=512, d=32, M=M, pass_="fwd+bwd")
                self.assertEqual((f, b), (r.fwd_total, r.bwd_total))
                self.assertEqual(b, fl.run(a, N=512, d=32, M=M, pass_="bwd").total)

    def test_crossing(self):
        Ms = lab5.grid(1024)
        s = lab5._sweep(1024, 64, Ms)
        c = lab5._crossing(s, Ms)
        k = Ms.index(c)
        self.assertLess(sum(s["flash2"][k]), sum(s["standard"][k]))
        self.assertTrue(all(sum(s["flash2"][i]) >= sum(s["standard"][i]) for i in range(k)))


def model_for_kernel(algo, N, d, Br, Bc, causal="none", elem_bytes=2, pass_="fwd", Nk=None):
    return key6.model_key(dict(algo=algo, N=N, d=d, Br=Br, Bc=Bc, causal=causal, elem_bytes=elem_bytes, pass_=pass_,
                               Nk=Nk or N))


ROWS = [r for rows in lab6.groups().values() for r in rows]


class Lab6Data(unittest.TestCase):
    def test_counter_table(self):
        rows = lab6.counter_table(ROWS, model_for_kernel)
        if not rows:
            self.skipTest("no recorded byte counters in this checkout")
        ok = [r for r in rows if r[2]]
        self.assertEqual(len(ok), len(lab6.comparable(ROWS)))
        self.assertEqual(sum(r[1] == 1.0 for r in ok), len(ok), "every comparable row equals the model")
        self.assertTrue(any(not r[2] and r[1] != 1.0 for r in rows), "the rows recorded FAIL differ from the model")
        ladder = pathlib.Path(__file__).resolve().parents[2] / "kernels" / "ladder"
        vmax = max(int(f.name[1:3]) for f in ladder.glob("v[0-9][0-9]_*.cu"))
        self.assertTrue(all(1 <= r[0] <= vmax for r in rows))


@unittest.skipUnless(HAVE_GNUPLOT, "gnuplot is not installed: drawing not tested")
class Figures(Drawing):
    def test_lab4(self):
        path, out = quiet(lab4.keep_figure, [("top-left", "top-left", -1, -1), ("bottom-right", "bottom-right", -1, -1),
                                             ("window (40, 0)", "none", 40, 0)], show=False, keep=self.tmp)[0]
        self.assertImage(path)
        self.assertEqual([n for _, _, n in out], [10, 42, 16])
        self.assertTrue((self.tmp / "data.dat").read_text().count("\n\n\n") == 2, "three matrices")
        self.assertImage(quiet(lab4.gqa_figure, show=False, keep=self.tmp)[0][0])

    def test_lab5(self):
        Ms = lab5.grid(1024)
        s = lab5._sweep(1024, 64, Ms)
        self.assertImage(quiet(lab5.figure, s, 1024, 64, 1024, lab5._crossing(s, Ms), show=False, keep=self.tmp)[0])
        # an M_cross that is not in the sweep draws no line but still draws
        self.assertImage(quiet(lab5.figure, s, 1024, 64, 1024, "8192", show=False, keep=self.tmp / "b")[0])

    def test_lab5_unusable_answers(self):
        s = lab5._sweep(1024, 64, lab5.grid(1024))
        for bad in (None, {}, {"standard": 3, "flash2": []}, {"standard": s["standard"][:3], "flash2": s["flash2"]},
                    {"standard": [(1, None)] * 11, "flash2": s["flash2"]}, "passes", [1, 2]):
            path, text = quiet(lab5.figure, bad, 1024, 64, 1024, 8192, show=False, keep=self.tmp)
            self.assertIsNone(path, repr(bad))
            self.assertIn("(no figure:", text)

    def test_lab6(self):
        P = lab6.params("ada")
        if not P["rows"]:
            self.skipTest("no recorded GPU data")
        (path, rows), text = quiet(lab6.counter_figure, P["rows"], model_for_kernel, show=False, keep=self.tmp)
        self.assertImage(path)
        self.assertIn("status not ok", text)
        self.assertImage(quiet(lab6.ncu_figure, P["ncu"], model_for_kernel, show=False, keep=self.tmp)[0][0])
        for bad in (None, lambda **k: None, lambda **k: 1 / 0):
            self.assertIsNone(quiet(lab6.counter_figure, P["rows"], bad, show=False, keep=self.tmp)[0][0])

    def test_lab7(self):
        if not lab7.fig2():
            self.skipTest("no recorded Figure-2 data")
        path, text = quiet(lab7.figure, key7.bytes_key, show=False, keep=self.tmp)
        self.assertImage(path)
        self.assertIn("FLOP floor", text)
        for bad in (None, 3, lambda r: None, lambda r: r["nope"], lambda r: "12", lambda: 1):
            path, text = quiet(lab7.figure, bad, show=False, keep=self.tmp)
            self.assertIsNone(path)
            self.assertIn("(no figure:", text)

    def test_lab8(self):
        for st in ("", "ada", "grace"):
            case = lab8.params(st)
            path, text = quiet(lab8.figure, case, design, show=False, keep=self.tmp / st)
            self.assertImage(path)
            rows = (self.tmp / st / "data.dat").read_text().splitlines()
            yours = [int(x) for x in rows[0].split()[1:]]
            best, bound = lab8.optimum(case)[:2]
            self.assertEqual(sum(yours), best, "the solution's schedule equals optimize's best")
            self.assertEqual(int(rows[-1].split()[-1]), bound)
        for bad in (None, lambda m, T, c: None, lambda m, T, c: 1 / 0, 7):
            path, text = quiet(lab8.figure, lab8.params(""), bad, show=False, keep=self.tmp / "bad")
            self.assertIsNone(path)
            self.assertIn("(no figure:", text)

    def test_every_script_draws_pdf_and_svg(self):
        s = lab5._sweep(512, 32, lab5.grid(2048))
        P = lab6.params("ada")
        for fmt in ("pdf", "svg"):
            k = self.tmp / fmt
            self.assertImage(quiet(lab4.keep_figure, [("br", "bottom-right", -1, -1)], show=False, keep=k, fmt=fmt)[0][0], fmt)
            self.assertImage(quiet(lab4.gqa_figure, show=False, keep=k, fmt=fmt)[0][0], fmt)
            self.assertImage(quiet(lab5.figure, s, 512, 32, 2048, 2048, show=False, keep=k, fmt=fmt)[0], fmt)
            if lab7.fig2():
                self.assertImage(quiet(lab7.figure, key7.bytes_key, show=False, keep=k, fmt=fmt)[0], fmt)
            self.assertImage(quiet(lab8.figure, lab8.params(""), design, show=False, keep=k, fmt=fmt)[0], fmt)
            if P["rows"]:
                self.assertImage(quiet(lab6.counter_figure, P["rows"], model_for_kernel, show=False, keep=k, fmt=fmt)[0][0], fmt)
                self.assertImage(quiet(lab6.ncu_figure, P["ncu"], model_for_kernel, show=False, keep=k, fmt=fmt)[0][0], fmt)


class Draw(Drawing):
    def test_without_gnuplot(self):
        with mock.patch("shutil.which", return_value=None):
            path, text = quiet(figures.draw, "lab5_passes.gp", {"data": "1 2 3 4 5\n"}, show=False, keep=self.tmp)
        self.assertIsNone(path)
        self.assertIn("gnuplot is not installed", text)

    def test_missing_script(self):
        with self.assertRaises(fl.FlashlabError) as e:
            figures.script("lab9_nothing.gp")
        self.assertIn("lab9_nothing.gp", str(e.exception))

    @unittest.skipUnless(HAVE_GNUPLOT, "gnuplot is not installed")
    def test_failing_script(self):
        d = self.tmp / "figs"
        d.mkdir()
        (d / "style.gp").write_text("")
        (d / "lab0_bad.gp").write_text("set terminal pngcairo\nset output out\nplot data using 1:2 with nonsense\n")
        with mock.patch.object(fl, "figures_dir", return_value=d):
            with self.assertRaises(fl.FlashlabError) as e:
                figures.draw("lab0_bad.gp", {"data": "1 2\n"}, show=False, keep=self.tmp / "o")
        self.assertIn("gnuplot lab0_bad.gp", str(e.exception))

    def test_variables_are_checked(self):
        for bad in ({"x": True}, {"x": "it's"}, {"x": [1]}):
            with self.assertRaises(fl.FlashlabError):
                figures.draw("lab5_passes.gp", {}, show=False, keep=self.tmp, **bad)


if __name__ == "__main__":
    unittest.main()
