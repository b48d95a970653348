#!/usr/bin/env python3
"""test_flmachine.py: the machine a student's schedule programs (python/flashlab/flmachine.py; unittest;
ctest: notebooks_flmachine).  A schedule written with its operations computes what the library's
schedule computes and is counted as the library counts it (flash2, square and non-square blocks,
a mask, a GQA group stacked in one buffer); values never reach the schedule (a buffer is a
handle); every bad call is refused with a FlashlabError or MachineError naming it, and leaves the
machine usable; and the prototypes and the structure it declares match the C headers."""
import os
import pathlib
import random
import unittest

HERE = pathlib.Path(__file__).resolve().parent.parent
import flashlab as fl  # noqa: E402
from flashlab import flmachine  # noqa: E402
from solutions_again import design, solution  # noqa: E402


def rows(g, n, d):
    return [[g.uniform(-1, 1) for _ in range(d)] for _ in range(n)]


class Schedules(unittest.TestCase):
    def test_flash2_as_the_library_counts_and_computes_it(self):
        my_flash2 = solution(2)["my_flash2"]
        g = random.Random(3)
        for N, d, Br, Bc in ((97, 8, 13, 13), (97, 8, 9, 21), (64, 16, 24, 7)):
            q, k, v = rows(g, N, d), rows(g, N, d), rows(g, N, d)
            M = fl.footprint("flash2", d, Br, Bc)
            r = flmachine.run(my_flash2, M, {"Q": q, "K": k, "V": v}, {"O": (N, d), "L": (N, 1, 4)}, N, d, Br, Bc)
            ref = fl.run("flash2", N=N, d=d, M=M, Br=Br, Bc=Bc)
            self.assertEqual(r.counts, ref.tensors)
            self.assertEqual(r.sram_peak, ref.sram_peak)
            O, L = fl.attention_ref(q, k, v)
            self.assertLess(max(abs(a - b) for x, y in zip(r.outputs["O"], O) for a, b in zip(x, y)), 1e-12)
            self.assertLess(max(abs(a[0] - b) for a, b in zip(r.outputs["L"], L)), 1e-12)

    def test_masked_and_grouped_schedules_against_the_reference(self):
        from flashlab.labkit import lab8
        for case in (dict(kind="causal", Nq=96, Nk=96, d=16, M=3000, heads=1, kv_heads=1, causal="bottom-right"),
                     dict(kind="decode", Nq=16, Nk=384, d=32, M=3900, heads=1, kv_heads=1, causal="bottom-right"),
                     dict(kind="gqa", Nq=40, Nk=0, d=16, M=4000, heads=4, kv_heads=2, causal="none")):
            r, ins = lab8.run_schedule(case, design, 11)
            self.assertEqual(lab8.validity(case, r, ins), [], case)
            self.assertEqual(r.total, lab8.optimum(case)[0], case)

    def test_the_reference_masks(self):
        g = random.Random(5)
        q, k, v = rows(g, 6, 4), rows(g, 9, 4), rows(g, 9, 3)
        O, _ = flmachine.reference(q, k, v, "bottom-right")
        s = [sum(a * b for a, b in zip(q[0], k[j])) / 2 for j in range(4)]   # row 0 keeps keys 0..3
        self.assertLess(max(abs(a - b) for a, b in zip(O[0], fl.softmax_row(s, v[:4]))), 1e-14)


class Refusals(unittest.TestCase):
    def setUp(self):
        self.local = flmachine.LocalChip(100, mode="compute", mask=(4, 6, "bottom-right", -1, -1))
        self.local.add_tensor("T", 4, 6, values=[[float(i + j) for j in range(6)] for i in range(4)])
        self.m = flmachine.Chip(self.local)
        self.T = self.m.tensor("T", 4, 6)

    def tearDown(self):
        self.local.close()

    def refused(self, fn, needle, kind=fl.FlashlabError):
        with self.assertRaises(kind) as e:
            fn()
        self.assertIn(needle, str(e.exception))

    def test_values_never_come_back(self):
        b = self.m.alloc("b", 2, 6)
        self.assertFalse(any(hasattr(b, a) for a in ("read", "x", "values", "__getitem__")))
        self.m.load(b, self.T, 0, 0, 2, 6)
        self.assertEqual(self.m.counts()["T"], (12, 0))

    def test_bad_calls(self):
        a, b = self.m.alloc("a", 2, 6), self.m.alloc("b", 2, 1)
        other = flmachine.Chip(flmachine.LocalChip(10))
        try:
            ob = other.alloc("o", 1, 1)
            self.refused(lambda: self.m.fill(ob, 0.0), "belongs to another machine", flmachine.MachineError)
        finally:
            other._b.close()
        self.refused(lambda: self.m.alloc("big", 10, 10), "SRAM capacity M = 100")
        self.refused(lambda: self.m.load(a, self.T, 3, 0, 2, 6), "out of bounds")
        self.refused(lambda: self.m.load(a, self.T, 0, 0, 2, 6, row=1), "out of bounds")
        self.refused(lambda: self.m.matmul(a, a, a, 2, 2, 2), "C and A are the same buffer")
        self.refused(lambda: self.m.exp_diff(b, b, b, 2, 1), "the row vector m")
        self.refused(lambda: self.m.max_rescale(b, a, 2, 6, a), "the scores are the same buffer")
        self.refused(lambda: self.m.row_max(b, a, 3, 6), "does not fit")
        self.refused(lambda: self.m.load(a, "T", 0, 0, 1, 1), "expected an HBM tensor", flmachine.MachineError)
        self.refused(lambda: self.m.fill(a, "0"), "must be a number", flmachine.MachineError)
        self.refused(lambda: self.m.load(a, self.m.tensor("U", 1, 1), 0, 0, 1, 1), "no such HBM tensor")
        self.refused(lambda: self.m.mask(a, 3, 0, 2, 6), "outside the 4 x 6 mask")
        self.refused(lambda: self.local.do("nope", []), "operations are")
        self.refused(lambda: self.local.do("fill", [a.id]), "fill:")
        self.m.free(b)
        self.refused(lambda: self.m.fill(b, 0.0), "not a live SRAM buffer")
        self.m.fill(a, 1.0)   # still usable
        self.assertEqual(self.m.tile_kind(0, 2, 5, 1), "empty")

    def test_mask_and_stacked_rows(self):
        s = self.m.alloc("s", 4, 6)
        self.m.load(s, self.T, 0, 0, 2, 6, row=2)
        self.m.mask(s, 0, 0, 2, 6, row=2)
        o = self.m.alloc("o", 4, 1)
        self.m.row_max(o, s, 4, 6)
        self.m.store(o, self.T, 0, 0, 4, 1)
        got = [r[0] for r in self.local.machine.tensors["T"].read()]
        self.assertEqual(got[2:], [2.0, 4.0])   # row 0 keeps keys 0..2, row 1 keys 0..3


class Prototypes(unittest.TestCase):
    def test_prototypes_and_structure_match_the_headers(self):
        import shutil
        cc = shutil.which("cc") or shutil.which("gcc")
        if not cc:
            self.skipTest("no C compiler")
        # the library's include path (ctest: FLASHLAB_INCLUDE_DIRS, the generated version.h among them)
        inc = os.environ.get("FLASHLAB_INCLUDE_DIRS", "").split("|") if os.environ.get("FLASHLAB_INCLUDE_DIRS") \
            else [str(HERE.parent / p) for p in ("include/flashlab", "include", "reference", "src")]
        self.assertEqual(flmachine.check_prototypes(cc, inc), [])
        bad = flmachine.PROTOTYPES.replace("int64_t brow, int t", "int brow, int t", 1)
        self.assertTrue(fl.check_prototypes(cc, inc, bad), "a changed prototype must not compile")
        self.assertTrue(fl.check_prototypes(cc, inc, flmachine.PROTOTYPES,
                                            flmachine.STRUCT_CHECKS.replace("== 40", "== 48")))


if __name__ == "__main__":
    unittest.main()
