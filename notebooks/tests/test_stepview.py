#!/usr/bin/env python3
"""test_stepview.py: the step viewer (labkit/stepview.py) over `flashlab trace` for every
schedule and pass, and the frames of the two-tile example (unittest; ctest: notebooks_stepview)."""
import shutil
import tempfile
import unittest

from flashlab.labkit import stepview  # noqa: E402


class EverySchedule(unittest.TestCase):
    def test_every_schedule_and_pass(self):
        for algo in ("standard", "flash1", "flash2"):
            for ps in ("fwd", "bwd"):
                with self.subTest(algo=algo, ps=ps):
                    fs = stepview.from_cli(algo, N=12, d=4, M=160, ps=ps)
                    self.assertTrue(fs)
                    moves = [f for f in fs if f["event"] in ("load", "store")]
                    unplaced = [f["step"] for f in moves if f["line"] is None]
                    self.assertEqual(unplaced, [], "every load and store has its pseudocode line")
                    for f in fs:
                        self.assertIn(f"step {f['step']}/{len(fs)}", stepview.text(f))
                    if shutil.which("gnuplot"):
                        with tempfile.TemporaryDirectory() as tmp:
                            paths = stepview.render(moves[:6], tmp)
                            self.assertEqual(len(paths), 6)
                            self.assertTrue(all(p.stat().st_size > 1000 for p in paths))

    def test_backward_lines_follow_the_algorithm(self):
        fs = stepview.from_cli("flash2", N=12, d=4, M=160, ps="bwd")
        code = stepview.PSEUDOCODE["flash2", "bwd"]
        d = next(f for f in fs if f["event"] == "store" and f["tensor"] == "D")
        self.assertEqual(code[d["line"]].strip(), "write D_i")
        dq = next(f for f in fs if f["event"] == "store" and f["tensor"] == "dQ")
        self.assertEqual(code[dq["line"]], "initialize dQ = 0 in HBM")
        kv = next(f for f in fs if f["event"] == "load" and f["tensor"] == "K")
        self.assertEqual(code[kv["line"]].strip(), "load K_j, V_j")
        last = [f for f in fs if f["event"] == "store"][-1]
        self.assertEqual(code[last["line"]].strip(), "write dK_j, dV_j")

    def test_loop_indices_of_flash2(self):
        fs = stepview.from_cli("flash2", N=16, d=4, M=200)
        loads = [f for f in fs if f["event"] == "load" and f["tensor"] == "K"]
        self.assertEqual([f["loops"]["j"] for f in loads[:3]], [1, 2, 3])
        self.assertEqual(loads[3]["loops"], {"i": 2, "j": 1})


class TwoTiles(unittest.TestCase):
    """The handout (docs/labs/lab1.md) says: at the load of tile two the state buffer holds
    m = 2, l = 1.367879, u = [3.678794, 10]; before the output is written it holds m = 3,
    l = 1.553002, u = [6.801436, 8.728581]; O = [4.379542, 5.620458] is stored last."""

    def test_the_state_the_handout_describes(self):
        fs = stepview.two_tile_frames()
        load2 = next(f for f in fs if f["event"] == "load" and f["tensor"] == "S" and f["tile"][1] == 2)
        state = {b: v for b, _, _, v in load2["sram"]}["state"][0]
        for got, want in zip(state, [2.0, 1.367879, 3.678794, 10.0]):
            self.assertAlmostEqual(got, want, places=6)
        self.assertEqual(load2["loops"], {"t": 2})
        last = fs[-1]
        self.assertEqual((last["event"], last["tensor"]), ("store", "O"))
        sram = {b: v for b, _, _, v in last["sram"]}
        for got, want in zip(sram["state"][0], [3.0, 1.553002, 6.801436, 8.728581]):
            self.assertAlmostEqual(got, want, places=6)
        for got, want in zip(sram["o"][0], [4.379542, 5.620458]):
            self.assertAlmostEqual(got, want, places=6)


if __name__ == "__main__":
    unittest.main()
