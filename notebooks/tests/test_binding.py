#!/usr/bin/env python3
"""test_binding.py: the ctypes binding (the package flashlab, python/flashlab/) refuses what would crash or
silently compute garbage, with a FlashlabError (unittest, standard library only; ctest:
notebooks_binding).

Each case runs its snippet in a fresh python3 process, so a binding that segfaults fails the
case instead of killing the test run.  The binding under test is the package flashlab in the
folder $FLASHLAB_PY_DIR (default: python/), so the same cases can be run against another version:

    FLASHLAB_PY_DIR=/tmp/old FLASHLAB_LIB=build/src/libflashlab.so python3 test_binding.py -v
"""
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = pathlib.Path(__file__).resolve().parent
PY_DIR = pathlib.Path(os.environ.get("FLASHLAB_PY_DIR", HERE.parent.parent / "python")).resolve()
from run_all import time_scale  # noqa: E402  notebooks/run_all.py, notebooks/ on PYTHONPATH (ctest)

SCALE = time_scale()   # a snippet's limit catches a hang only: it grows with the load

PRELUDE = """
import flashlab as fl
def outcome(f):
    try:
        r = f()
    except fl.FlashlabError as e:
        print("OUTCOME FlashlabError:", e)
    except BaseException as e:
        print("OUTCOME", type(e).__name__ + ":", e)
    else:
        print("OUTCOME returned:", repr(r))
"""


def run_snippet(code, env=None, cwd=None, py_dir=PY_DIR):
    """(returncode, the OUTCOME line or the last stderr line) of code run after PRELUDE, with the
    package's folder py_dir first on PYTHONPATH."""
    src = textwrap.dedent(PRELUDE) + textwrap.dedent(code)
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = str(py_dir) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    p = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, timeout=60 * SCALE,
                       env=env, cwd=cwd)
    lines = [l for l in p.stdout.splitlines() if l.startswith("OUTCOME")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
        return p.returncode, f"exit {p.returncode}: {tail}"
    return p.returncode, lines[-1][len("OUTCOME "):]


class Case(unittest.TestCase):
    def refused(self, code, *words):
        """The snippet's last outcome is a FlashlabError whose message holds every word."""
        rc, out = run_snippet(code)
        self.assertEqual(rc, 0, f"the process died: {out}")
        self.assertTrue(out.startswith("FlashlabError:"), f"expected a FlashlabError, got {out}")
        for w in words:
            self.assertIn(w, out, f"the message should name {w!r}: {out}")
        return out

    def returns(self, code, value):
        rc, out = run_snippet(code)
        self.assertEqual(rc, 0, f"the process died: {out}")
        self.assertEqual(out, f"returned: {value!r}")


class GivenOptions(Case):
    def test_a_cache_option_at_its_default_asks_for_decode(self):
        self.refused("outcome(lambda: fl.run('flash2', N=64, d=8, M=4000, pad_value=0.0))", "decode", "KV cache")
        self.refused("outcome(lambda: fl.run('flash2', N=64, d=8, M=4000, density=1.0))", "blocksparse")

    def test_decode_takes_them(self):
        self.returns("outcome(lambda: fl.run('decode', N=1, Nk=64, d=8, M=4000, splits=1, pad_value=0.0).reads > 0)",
                     True)


class Variants(Case):
    """The variants are problem fields: the binding takes them as keywords (docs/model.md §14)."""

    def test_every_variant_computes_the_reference(self):
        self.returns("outcome(lambda: (lambda r: (r.rel_err <= 1e-12, r.dsink_rel_err <= 1e-12, r.d_v, "
                     "r.total == r.closed_total))(fl.run('flash2', N=40, d=12, d_v=7, M=3000, mode='compute', "
                     "pass_='fwd+bwd', heads=2, sinks=True, softcap=3.0, alibi=True, dropout=0.2, deterministic=True)))",
                     (True, True, 7, True))
        self.returns("outcome(lambda: fl.run('standard', N=40, d=12, M=3000, mode='compute', elem_bytes=1, "
                     "scale_block=8).rel_err <= 1e-12)", True)

    def test_the_counts_move_with_the_variants(self):
        # d_v = 7 < d = 12 moves fewer V and O elements; the sinks add a read per segment and pass
        self.returns("outcome(lambda: fl.run('flash2', N=40, d=12, d_v=7, M=3000).total < "
                     "fl.run('flash2', N=40, d=12, M=3000).total)", True)
        self.returns("outcome(lambda: fl.run('flash2', N=40, d=12, M=3000, heads=2, sinks=True).total - "
                     "fl.run('flash2', N=40, d=12, M=3000, heads=2).total)", 2)

    def test_a_schedule_without_one_refuses_it(self):
        self.refused("outcome(lambda: fl.run('memeff', N=64, d=8, M=4000, sinks=True))", "sinks:", "memeff")
        self.refused("outcome(lambda: fl.run('flash2', N=64, d=8, M=4000, elem_bytes=1, pass_='bwd'))",
                     "fp8 is forward only")
        self.refused("outcome(lambda: fl.run('flash2', N=64, d=8, M=4000, deterministic=True))", "deterministic:")


class OsmStates(Case):
    def test_a_state_that_no_softmax_reaches(self):
        self.refused("outcome(lambda: fl.OsmState(2, m=float('nan'), l=1.0, u=[0.0, 0.0]))", "m = nan")
        self.refused("outcome(lambda: fl.OsmState(2, m=0.0, l=-1.0, u=[0.0, 0.0]))", "l = -1.0")
        self.refused("outcome(lambda: fl.OsmState(2, m=float('-inf'), l=2.0))", "empty state")
        self.refused("outcome(lambda: fl.OsmState(2, m=0.0, l=1.0, u=[float('inf'), 0.0]))", "finite")

    def test_states_a_softmax_reaches(self):
        self.returns("outcome(lambda: fl.OsmState(2, m=1.5, l=2.0, u=[0.5, -1.0]).l)", 2.0)
        self.returns("outcome(lambda: fl.OsmState(2).l)", 0.0)


class ClosedObjects(Case):
    def test_machine_used_after_close(self):
        self.refused("m = fl.Machine(M=100)\nm.close()\noutcome(lambda: m.reads)", "closed")

    def test_machine_alloc_after_close(self):
        self.refused("m = fl.Machine(M=100)\nm.close()\noutcome(lambda: m.alloc('b', 2, 2))", "closed")

    def test_tensor_used_after_close(self):
        self.refused("m = fl.Machine(M=100)\nt = m.tensor('Q', 4, 4)\nm.close()\n"
                     "outcome(lambda: t.reads)", "closed")

    def test_buffer_used_after_close(self):
        self.refused("m = fl.Machine(M=100, mode='compute')\nb = m.alloc('b', 2, 2)\nm.close()\n"
                     "outcome(lambda: b.read())", "closed")

    def test_freed_buffer_whose_slot_was_reused(self):
        # the C machine reuses the freed slot: the old handle must not reach the new buffer
        self.refused("m = fl.Machine(M=100)\nt = m.tensor('Q', 8, 2)\nb1 = m.alloc('b1', 2, 2)\n"
                     "m.free(b1)\nb2 = m.alloc('b2', 2, 2)\n"
                     "outcome(lambda: m.load(b1, t, 0, 0, 2, 2))", "freed")

    def test_close_twice_is_fine(self):
        self.returns("m = fl.Machine(M=100)\nm.close()\noutcome(lambda: m.close())", None)


class OtherMachines(Case):
    def test_buffer_of_another_machine(self):
        self.refused("a, b = fl.Machine(M=100), fl.Machine(M=100)\nt = a.tensor('Q', 8, 2)\n"
                     "buf = b.alloc('x', 2, 2)\noutcome(lambda: a.load(buf, t, 0, 0, 2, 2))",
                     "another machine")

    def test_tensor_of_another_machine(self):
        self.refused("a, b = fl.Machine(M=100), fl.Machine(M=100)\nt = b.tensor('Q', 8, 2)\n"
                     "buf = a.alloc('x', 2, 2)\noutcome(lambda: a.load(buf, t, 0, 0, 2, 2))",
                     "another machine")

    def test_free_a_buffer_of_another_machine(self):
        self.refused("a, b = fl.Machine(M=100), fl.Machine(M=100)\nbuf = b.alloc('x', 2, 2)\n"
                     "outcome(lambda: a.free(buf))", "another machine")


class ArrayLengths(Case):
    def test_run_cu_seqlens_shorter_than_batch_plus_one(self):
        self.refused("outcome(lambda: fl.run('flash2', N=200, d=16, M=4000, batch=2, "
                     "cu_seqlens_q=[0, 200]))", "cu_seqlens_q", "batch + 1")

    def test_osm_step_more_scores_than_value_rows(self):
        self.refused("s = fl.OsmState(2)\noutcome(lambda: fl.osm_step(s, [1.0, 2.0, 3.0], [[1.0, 2.0]]))",
                     "values", "3 scores")

    def test_osm_step_value_row_wider_than_the_state(self):
        self.refused("s = fl.OsmState(2)\noutcome(lambda: fl.osm_step(s, [1.0], [[1.0, 2.0, 3.0]]))",
                     "values")

    def test_softmax_row_rows_mismatch(self):
        self.refused("outcome(lambda: fl.softmax_row([1.0, 2.0], [[1.0]]))", "values")

    def test_osm_tiled_rows_mismatch(self):
        self.refused("outcome(lambda: fl.osm_tiled([1.0, 2.0, 3.0], [[1.0]], 1))", "values")

    def test_block_table_length_is_not_the_callers(self):
        self.refused("outcome(lambda: fl.run('decode', N=1, Nk=64, d=8, M=4000, page_size=16, "
                     "block_table=[0, 1, 2, 3], block_table_len=100))", "block_table_len")


class IntegerRanges(Case):
    def test_run_N_beyond_int64_does_not_wrap(self):
        self.refused("outcome(lambda: fl.run('flash2', N=2**64 + 64, d=8, M=4000))", "N")

    def test_machine_M_beyond_int64_does_not_wrap(self):
        self.refused("outcome(lambda: fl.Machine(M=2**64 + 5))", "M")

    def test_negative_seed_is_not_2_to_the_64_minus_1(self):
        self.refused("outcome(lambda: fl.run('flash2', N=64, d=8, M=4000, seed=-1))", "seed")

    def test_bool_is_not_an_integer(self):
        self.refused("outcome(lambda: fl.run('flash2', N=True, d=8, M=4000))", "N", "integer")

    def test_float_is_not_an_integer(self):
        self.refused("outcome(lambda: fl.Machine(M=1000.5))", "M", "integer")

    def test_load_offset_beyond_int64(self):
        self.refused("m = fl.Machine(M=100)\nt = m.tensor('Q', 8, 2)\nb = m.alloc('b', 2, 2)\n"
                     "outcome(lambda: m.load(b, t, 2**64, 0, 2, 2))", "r0")

    def test_kv_head_out_of_range(self):
        self.refused("outcome(lambda: fl.kv_head(6, 6, 2))", "h")

    def test_kv_head_negative(self):
        self.refused("outcome(lambda: fl.kv_head(-1, 6, 2))", "h")

    def test_mask_keep_out_of_range(self):
        self.refused("mk = fl.mask(2, 5, 'bottom-right')\noutcome(lambda: fl.mask_keep(mk, 5, 0))", "i")

    def test_mask_tile_out_of_range(self):
        self.refused("mk = fl.mask(4, 4, 'top-left')\noutcome(lambda: fl.mask_tile(mk, 2, 4, 0, 2))", "nr")

    def test_footprint_negative_size(self):
        self.refused("outcome(lambda: fl.footprint('flash2', -1, 4, 4))", "d")

    def test_footprint_overflow(self):
        self.refused("outcome(lambda: fl.footprint('flash2', 2**62, 2**62, 2**62))")


class Names(Case):
    def test_mode_with_a_capital(self):
        self.refused("outcome(lambda: fl.run('flash2', N=64, d=8, M=4000, mode='Compute'))",
                     "mode", "count", "compute")

    def test_machine_mode_with_a_capital(self):
        self.refused("outcome(lambda: fl.Machine(M=100, mode='Compute'))", "mode", "compute")

    def test_unknown_algo_lists_the_choices(self):
        self.refused("outcome(lambda: fl.run('Flash_X', N=64, d=8, M=4000))", "Flash_X", "flash2")

    def test_unknown_causal_lists_the_choices(self):
        self.refused("outcome(lambda: fl.run('flash2', N=64, d=8, M=4000, causal='bottom_right'))",
                     "causal", "bottom-right")

    def test_unknown_pass_lists_the_choices(self):
        self.refused("outcome(lambda: fl.run('flash2', N=64, d=8, M=4000, pass_='backward'))",
                     "pass_", "fwd+bwd")

    def test_unknown_field(self):
        self.refused("outcome(lambda: fl.run('flash2', N=64, d=8, M=4000, heads_kv=2))", "heads_kv")

    def test_mask_unknown_corner(self):
        self.refused("outcome(lambda: fl.mask(4, 4, 'top_left'))", "causal", "top-left")

    def test_long_tensor_name_is_not_truncated(self):
        self.refused("m = fl.Machine(M=100)\noutcome(lambda: m.tensor('a_name_longer_than_15', 4, 4))",
                     "name")

    def test_library_message_is_carried(self):
        out = self.refused("outcome(lambda: fl.run('flash2', N=0, d=8, M=4000))")
        self.assertIn("FlashlabError: N: sequence length", out, "the C library's own line names the keyword N")
        self.assertNotIn("--", out, "the binding speaks its keywords, not the CLI's flags")
        out = self.refused("outcome(lambda: fl.run('flash2', N=64, d=8, M=4000, pass_='bwd', page_size=4))")
        self.assertIn("FlashlabError: page_size/pool_pages/page_seed/block_table/splits/pad_value:", out,
                      "each quantity as its keyword (pad_value, not the CLI's --pad)")


class TraceCallbacks(Case):
    def test_run_reraises_the_callbacks_exception(self):
        rc, out = run_snippet("""
            seen = []
            def cb(ev):
                seen.append(ev)
                if len(seen) == 3:
                    raise ValueError("stop here")
            outcome(lambda: fl.run('flash2', N=64, d=8, M=2000, trace=cb))
            print("OUTCOME events seen:", len(seen))
            """)
        self.assertEqual(rc, 0, out)
        rc, out2 = run_snippet("""
            def cb(ev):
                raise ValueError("stop here")
            outcome(lambda: fl.run('flash2', N=64, d=8, M=2000, trace=cb))
            """)
        self.assertEqual(out2, "ValueError: stop here")
        self.assertEqual(out, "events seen: 3", "no event is passed on after the exception")

    def test_machine_trace_exception_stops_the_schedule(self):
        rc, out = run_snippet("""
            m = fl.Machine(M=100)
            t = m.tensor('Q', 8, 2)
            b = m.alloc('b', 2, 2)
            def cb(ev):
                if ev.kind == 'load':
                    raise KeyError('from the callback')
            m.set_trace(cb)
            outcome(lambda: m.load(b, t, 0, 0, 2, 2))
            """)
        self.assertEqual(rc, 0, out)
        self.assertTrue(out.startswith("KeyError"), out)

    def test_the_c_machine_stops_at_the_exception(self):
        # after the callback raised, the C machine refuses every further move (status 7)
        rc, out = run_snippet("""
            m = fl.Machine(M=100)
            t = m.tensor('Q', 8, 2)
            b = m.alloc('b', 2, 2)
            def cb(ev):
                raise KeyError('from the callback')
            m.set_trace(cb)
            try:
                m.load(b, t, 0, 0, 2, 2)
                first = 'no exception'
            except KeyError:
                first = 'KeyError'
            m.set_trace(None)
            try:
                m.load(b, t, 2, 0, 2, 2)
                second = 'loaded'
            except fl.FlashlabError as e:
                second = 'stopped' if 'stopped the run' in str(e) else str(e)
            print("OUTCOME", first, second, m.reads)
            """)
        self.assertEqual(rc, 0, out)
        self.assertEqual(out, "KeyError stopped 4", "the refused load counts nothing")

    def test_events_are_plain_values(self):
        self.returns("ev = []\nfl.run('flash2', N=16, d=4, M=400, trace=ev.append)\n"
                     "outcome(lambda: (ev[0].kind, type(ev[0].buf).__name__))", ("alloc", "str"))


class BufferValues(Case):
    def test_count_machine_has_no_values(self):
        self.refused("m = fl.Machine(M=100)\nb = m.alloc('b', 2, 2)\noutcome(lambda: b.read())",
                     "compute")

    def test_index_out_of_range(self):
        self.refused("m = fl.Machine(M=100, mode='compute')\nb = m.alloc('b', 2, 3)\n"
                     "outcome(lambda: b[2, 0])", "row")

    def test_load_then_read_the_tile(self):
        self.returns("m = fl.Machine(M=100, mode='compute')\nt = m.tensor('Q', 3, 2)\n"
                     "t.write([[1, 2], [3, 4], [5, 6]])\nb = m.alloc('b', 2, 2)\n"
                     "m.load(b, t, 1, 0, 2, 2)\noutcome(lambda: b.read())", [[3.0, 4.0], [5.0, 6.0]])

    def test_sealed_machine_refuses_hbm_peeks(self):
        self.refused("m = fl.Machine(M=100, mode='compute')\nt = m.tensor('Q', 3, 2)\n"
                     "def f():\n    with m.sealed():\n        return t.read()\noutcome(f)",
                     "load and store")


class StudentLayout(unittest.TestCase):
    def test_library_and_cli_beside_the_binding(self):
        lib = os.environ.get("FLASHLAB_LIB")
        cli = os.environ.get("FLASHLAB_CLI")
        if not lib or not cli:
            self.skipTest("FLASHLAB_LIB and FLASHLAB_CLI name the built library and CLI (ctest sets them)")
        with tempfile.TemporaryDirectory() as tmp:
            d = pathlib.Path(tmp) / "site"   # the package as installed: the library and CLI beside it
            shutil.copytree(PY_DIR / "flashlab", d / "flashlab", ignore=shutil.ignore_patterns("__pycache__"))
            shutil.copy(lib, d / "flashlab" / "libflashlab.so")
            shutil.copy(cli, d / "flashlab" / "flashlab")
            env = {k: v for k, v in os.environ.items() if k not in ("FLASHLAB_LIB", "FLASHLAB_CLI", "PYTHONPATH")}
            rc, out = run_snippet("outcome(lambda: (fl.LIB_PATH.parent == fl.HERE, "
                                  "fl.cli_path().parent == fl.HERE, fl.run('flash2', N=256, d=16, M=2000).total))",
                                  env=env, cwd=tmp, py_dir=d)
            self.assertEqual(out, "returned: (True, True, 106752)")


if __name__ == "__main__":
    unittest.main()
