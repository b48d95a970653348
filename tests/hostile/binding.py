#!/usr/bin/env python3
"""Hostile cases for the Python binding (the package flashlab, python/flashlab/, over libflashlab.so).

usage: PYTHONPATH=tests/support binding.py CLI LIB [--only SUBSTR] [--list] [--sanitizer-runtime LIBASAN]

Each case is a snippet run in a child interpreter (RLIMIT_AS 4 GiB, a time limit) with
`fl` the binding.  Expectations:
  refuse   the snippet raises flashlab.FlashlabError (the binding's one failure type: it raises
           it for refusals made in Python before C too, status 1).  TypeError, ValueError,
           ctypes.ArgumentError, OverflowError, IndexError, a crash or no exception all fail.
  raises:X the snippet raises the exception named X (a trace callback's own exception).
  ok       the snippet runs without an exception (its asserts check the answer).
One child runs the cases in turn and reports each; a child that dies (segfault, abort, a
sanitizer's report) is blamed on the case it was running and a new child carries on.

Under the sanitizer build (LIB built with -fsanitize=address,undefined), --sanitizer-runtime
names the AddressSanitizer runtime (gcc -print-file-name=libasan.so), which the children load
first (LD_PRELOAD): an ASan library cannot be loaded into a plain Python otherwise, because the
runtime must come before every other library.  There the children run without their RLIMIT_AS
(ASan reserves terabytes of address space for its shadow memory at start), with
allocator_may_return_null=1 (a huge allocation is an out-of-memory status, as without ASan) and
without leak detection (CPython keeps much of its memory until exit by design).  Prints one line per failing
case and a summary; exits 1 when a case fails.
"""
import math
import os
import subprocess
import sys

from time_scale import time_scale   # tests/support, on PYTHONPATH (ctest sets it)

PRELUDE = """
import math
import flashlab as fl
def mach(M=4096, mode="compute"):
    return fl.Machine(M, mode=mode)
def setup(M=4096, mode="compute"):
    m = mach(M, mode)
    t = m.tensor("Q", 64, 8)
    b = m.alloc("q", 8, 8)
    return m, t, b
"""

BAD_INTS = [("2**64+64", "huge"), ("-1", "negative"), ("2**63", "2**63"), ("1.5", "float"),
            ("8.0", "integral float"), ("True", "bool"), ("None", "None"), ("'8'", "str"),
            ("float('nan')", "nan"), ("10**100", "googol"), ("-2**63", "INT64_MIN")]


def cases():
    cs = []

    def add(name, code, expect="refuse"):
        cs.append((name, code, expect))

    # integers of the run/problem/blocks entry points
    for fn in ("run", "blocks"):
        for field in ("N", "d", "M", "Br", "Bc"):
            for v, what in BAD_INTS:
                if field in ("Br", "Bc") and what == "None":
                    continue
                add(f"{fn}({field}={what})", f"fl.{fn}(algo='flash2', **{{'N': 64, 'd': 8, 'M': 4096, '{field}': {v}}})")
        for field in ("batch", "heads", "kv_heads", "Nk", "seed", "max_events"):
            for v, what in BAD_INTS:
                if what in ("None",) or (field == "max_events" and what in ("huge", "2**63", "googol")):
                    continue
                if field == "seed" and what == "2**63":   # seeds are unsigned 64-bit
                    continue
                add(f"{fn}({field}={what})", f"fl.{fn}(algo='flash2', N=64, d=8, M=4096, {field}={v})")
    for v in ("'Count'", "''", "'compute '", "None", "1", "'count,compute'"):
        add(f"run(mode={v})", f"fl.run(algo='flash2', N=64, d=8, M=4096, mode={v})")
    for v in ("'nope'", "''", "99", "-1", "True", "'flash2 '", "b'flash2'", "'\\ud800'"):
        add(f"run(algo={v})", f"fl.run(algo={v}, N=64, d=8, M=4096)")
    add("run(algo=None) is the default schedule", "assert fl.run(algo=None, N=64, d=8, M=4096).algo == fl.DEFAULT", "ok")
    for v in ("'up'", "''", "True", "1"):
        add(f"run(causal={v})", f"fl.run(algo='flash2', N=64, d=8, M=4096, causal={v})")
    for v in ("'forward'", "''", "0"):
        add(f"run(pass_={v})", f"fl.run(algo='flash2', N=64, d=8, M=4096, pass_={v})")
    add("run(bogus field)", "fl.run(algo='flash2', N=64, d=8, M=4096, bogus=1)")
    add("run(density=nan)", "fl.run(algo='blocksparse', N=64, d=8, M=4096, density=float('nan'))")
    add("run(density=inf)", "fl.run(algo='blocksparse', N=64, d=8, M=4096, density=float('inf'))")
    add("run(density='0.5')", "fl.run(algo='blocksparse', N=64, d=8, M=4096, density='0.5')")
    add("run(density=True)", "fl.run(algo='blocksparse', N=64, d=8, M=4096, density=True)")
    add("run(density=0)", "fl.run(algo='blocksparse', N=64, d=8, M=4096, density=0)")
    # arrays too short, too long, of the wrong type
    add("cu_seqlens_q too short", "fl.run(algo='flash2', N=64, d=8, M=4096, batch=2, cu_seqlens_q=[0, 64])")
    add("cu_seqlens_q too long", "fl.run(algo='flash2', N=64, d=8, M=4096, batch=1, cu_seqlens_q=[0, 32, 64])")
    add("cu_seqlens_q not ending at N", "fl.run(algo='flash2', N=64, d=8, M=4096, batch=1, cu_seqlens_q=[0, 32])")
    add("cu_seqlens_q decreasing", "fl.run(algo='flash2', N=64, d=8, M=4096, batch=2, cu_seqlens_q=[0, 40, 32])")
    add("cu_seqlens_q huge", "fl.run(algo='flash2', N=64, d=8, M=4096, batch=1, cu_seqlens_q=[0, 2**64])")
    add("cu_seqlens_q None entries", "fl.run(algo='flash2', N=64, d=8, M=4096, batch=1, cu_seqlens_q=[0, None])")
    add("cu_seqlens_q a string", "fl.run(algo='flash2', N=64, d=8, M=4096, batch=1, cu_seqlens_q='0,64')")
    add("cu_seqlens_q floats", "fl.run(algo='flash2', N=64, d=8, M=4096, batch=1, cu_seqlens_q=[0.0, 64.0])")
    add("cu_seqlens_k too short", "fl.run(algo='flash2', N=64, d=8, M=4096, batch=2, cu_seqlens_q=[0, 32, 64], cu_seqlens_k=[0, 64])")
    add("block_table too short", "fl.run(algo='decode', N=1, Nk=256, d=8, M=4096, page_size=16, block_table=[0, 1])")
    add("block_table empty", "fl.run(algo='decode', N=1, Nk=256, d=8, M=4096, page_size=16, block_table=[])")
    add("block_table out of the pool", "fl.run(algo='decode', N=1, Nk=32, d=8, M=4096, page_size=16, pool_pages=2, block_table=[0, 5])")
    add("block_table repeated page", "fl.run(algo='decode', N=1, Nk=32, d=8, M=4096, page_size=16, pool_pages=2, block_table=[1, 1])")
    add("block_table negative", "fl.run(algo='decode', N=1, Nk=32, d=8, M=4096, page_size=16, pool_pages=2, block_table=[0, -1])")
    add("block_table huge", "fl.run(algo='decode', N=1, Nk=32, d=8, M=4096, page_size=16, pool_pages=2, block_table=[0, 2**63])")
    add("block_table without page_size", "fl.run(algo='decode', N=1, Nk=32, d=8, M=4096, block_table=[0, 1])")
    add("block_table for flash2", "fl.run(algo='flash2', N=64, d=8, M=4096, block_table=[0, 1])")
    # work limits before the work
    add("run compute N=131072 refused fast", "fl.run(algo='flash2', N=131072, d=64, mode='compute')")
    add("run count N=2**40 refused fast", "fl.run(algo='flash2', N=2**40, d=64)")
    add("run decode Nk=2**40 page_size=1", "fl.run(algo='decode', N=1, Nk=2**40, d=8, M=4096, page_size=1)")
    add("run blocksparse N=2**40", "fl.run(algo='blocksparse', N=2**40, d=8, M=4096, density=0.5)")
    # footprint
    for arg in ("d", "Br", "Bc", "Bd", "G"):
        for v, what in BAD_INTS:
            if what == "None" and arg == "Bd":
                continue
            kw = {"d": "64", "Br": "16", "Bc": "16", "Bd": "None", "G": "1"}
            kw[arg] = v
            add(f"footprint({arg}={what})", "fl.footprint('flash2', " + ", ".join(f"{k}={x}" for k, x in kw.items()) + ")")
    add("footprint(algo='nope')", "fl.footprint('nope', 64, 16, 16)")
    add("footprint(bwd='yes')", "fl.footprint('flash2', 64, 16, 16, bwd='yes')")
    add("footprint(bwd=None)", "fl.footprint('flash2', 64, 16, 16, bwd=None)")
    add("footprint overflow", "fl.footprint('flash2', 2**40, 2**40, 2**40)")
    add("footprint G for flash2", "fl.footprint('flash2', 64, 16, 16, G=4)")
    # the machine
    for v, what in BAD_INTS:
        add(f"Machine(M={what})", f"fl.Machine({v})")
    for v in ("'bogus'", "''", "None", "'Count'", "1"):
        add(f"Machine(mode={v})", f"fl.Machine(4096, mode={v})")
    add("Machine(name=None)", "fl.Machine(4096, name=None)")
    add("Machine(name with NUL)", "fl.Machine(4096, name='a\\0b')")
    add("Machine(name=bytes)", "fl.Machine(4096, name=b'x')")
    add("Machine huge M compute", "m = fl.Machine(2**62, mode='compute'); m.alloc('b', 2**31, 2**31)")
    add("tensor huge compute", "m = mach(2**40); m.tensor('Q', 2**40, 2**40)")
    add("tensor huge rows*cols overflow", "m = mach(2**40, 'count'); m.tensor('Q', 2**62, 2**62)")
    for arg in ("rows", "cols"):
        for v, what in BAD_INTS:
            kw = {"rows": "64", "cols": "8"}
            kw[arg] = v
            add(f"tensor({arg}={what})", f"m = mach(); m.tensor('Q', {kw['rows']}, {kw['cols']})")
            add(f"alloc({arg}={what})", f"m = mach(); m.alloc('b', {kw['rows']}, {kw['cols']})")
    for v in ("3", "0", "16", "True", "2.0", "None"):
        add(f"tensor(elem_bytes={v})", f"m = mach(); m.tensor('Q', 64, 8, elem_bytes={v})")
    for v in ("''", "None", "'a\\0b'", "'x' * 300", "'a\\nb'", "1"):
        add(f"tensor(name={v[:12]})", f"m = mach(); m.tensor({v}, 64, 8)")
        add(f"alloc(name={v[:12]})", f"m = mach(); m.alloc({v}, 8, 8)")
    add("tensor name twice", "m = mach(); m.tensor('Q', 64, 8); m.tensor('Q', 64, 8)")
    add("alloc over capacity", "m = mach(64); m.alloc('b', 8, 9)")
    for arg in ("r0", "c0", "nr", "nc"):
        for v, what in BAD_INTS + [("64", "past the end"), ("0", "zero")]:
            if what == "zero" and arg in ("r0", "c0"):
                continue
            kw = {"r0": "0", "c0": "0", "nr": "8", "nc": "8"}
            kw[arg] = v
            args = ", ".join(kw[k] for k in ("r0", "c0", "nr", "nc"))
            add(f"load({arg}={what})", f"m, t, b = setup(); m.load(b, t, {args})")
            add(f"store({arg}={what})", f"m, t, b = setup(); m.store(b, t, {args})")
    add("load a tile larger than the buffer", "m, t, b = setup(); m.load(b, t, 0, 0, 16, 8)")
    add("load a tile past the tensor", "m, t, b = setup(); m.load(b, t, 60, 0, 8, 8)")
    add("load r0+nr overflow", "m, t, b = setup(); m.load(b, t, 2**63-4, 0, 8, 8)")
    add("load c0+nc overflow", "m, t, b = setup(); m.load(b, t, 0, 2**63-4, 8, 8)")
    add("load with a tensor id", "m, t, b = setup(); m.load(b, 0, 0, 0, 8, 8)")
    add("load with buffer and tensor swapped", "m, t, b = setup(); m.load(t, b, 0, 0, 8, 8)")
    add("load into a buffer of another machine", "m, t, b = setup(); m2, t2, b2 = setup(); m.load(b2, t, 0, 0, 8, 8)")
    add("load from a tensor of another machine", "m, t, b = setup(); m2, t2, b2 = setup(); m.load(b, t2, 0, 0, 8, 8)")
    add("store into a tensor of another machine", "m, t, b = setup(); m2, t2, b2 = setup(); m.store(b, t2, 0, 0, 8, 8)")
    add("free a buffer of another machine", "m, t, b = setup(); m2, t2, b2 = setup(); m.free(b2)")
    add("free twice", "m, t, b = setup(); m.free(b); m.free(b)")
    add("free None", "m, t, b = setup(); m.free(None)")
    add("load into a freed buffer", "m, t, b = setup(); m.free(b); m.load(b, t, 0, 0, 8, 8)")
    add("read a freed buffer", "m, t, b = setup(); m.free(b); b.read()")
    add("index a freed buffer", "m, t, b = setup(); m.free(b); b[0, 0]")
    add("fill a freed buffer", "m, t, b = setup(); m.free(b); b.fill(1.0)")
    # after close
    for what, code in (("tensor", "m.tensor('K', 8, 8)"), ("alloc", "m.alloc('k', 8, 8)"),
                       ("load", "m.load(b, t, 0, 0, 8, 8)"), ("store", "m.store(b, t, 0, 0, 8, 8)"),
                       ("free", "m.free(b)"), ("buffer read", "b.read()"), ("buffer write", "b.write([[1.0]])"),
                       ("buffer fill", "b.fill(1.0)"), ("buffer index", "b[0, 0]"), ("buffer set", "b.__setitem__((0, 0), 1.0)"),
                       ("buffer rows", "b.rows"), ("tensor read", "t.read()"), ("tensor write", "t.write([[0.0] * 8] * 64)"),
                       ("tensor reads", "t.reads"), ("tensor rows", "t.rows"), ("counts", "m.counts()"),
                       ("reads", "m.reads"), ("sram_used", "m.sram_used"), ("events", "m.events"),
                       ("set_trace", "m.set_trace(print)"), ("buffers", "m.buffers"), ("capacity", "m.capacity")):
        add(f"{what} after close", f"m, t, b = setup(); m.close(); {code}")
        add(f"{what} after with", f"with mach() as m:\n    t = m.tensor('Q', 64, 8); b = m.alloc('q', 8, 8)\n{code}")
    add("close twice then use", "m, t, b = setup(); m.close(); m.close(); m.alloc('x', 1, 1)")
    # buffer and tensor helpers: out-of-range and malformed
    for v, what in [x for x in BAD_INTS if x[1] != "None"] + [("9", "past the end"), ("0", "zero")]:
        add(f"buffer read(nr={what})", f"m, t, b = setup(); b.read(nr={v})")
        add(f"buffer fill(nc={what})", f"m, t, b = setup(); b.fill(1.0, nc={v})")
    for key in ("(8, 0)", "(0, 8)", "(-1, 0)", "(0, -1)", "(2**64, 0)", "(0,)", "0", "(0, 0, 0)", "('0', 0)",
                "(0.0, 0)", "(True, 0)", "None", "slice(0, 2)"):
        add(f"buffer[{key}]", f"m, t, b = setup(); b[{key}]")
        add(f"buffer[{key}] = 1", f"m, t, b = setup(); b[{key}] = 1.0")
    for v in ("None", "'x'", "[1.0]", "True"):
        add(f"buffer fill({v})", f"m, t, b = setup(); b.fill({v})")
        add(f"buffer[0,0] = {v}", f"m, t, b = setup(); b[0, 0] = {v}")
    add("buffer write too wide", "m, t, b = setup(); b.write([[1.0] * 9])")
    add("buffer write too tall", "m, t, b = setup(); b.write([[1.0] * 8] * 9)")
    add("buffer write ragged", "m, t, b = setup(); b.write([[1.0] * 8, [1.0] * 7])")
    add("buffer write empty", "m, t, b = setup(); b.write([])")
    add("buffer write strings", "m, t, b = setup(); b.write([['a'] * 8])")
    add("buffer write None", "m, t, b = setup(); b.write(None)")
    add("buffer write empty row", "m, t, b = setup(); b.write([[]])")
    add("buffer read on a count machine", "m, t, b = setup(mode='count'); b.read()")
    add("tensor read on a count machine", "m, t, b = setup(mode='count'); t.read()")
    add("tensor write too short", "m, t, b = setup(); t.write([[0.0] * 8] * 63)")
    add("tensor write too wide", "m, t, b = setup(); t.write([[0.0] * 9] * 64)")
    add("tensor write while sealed", "m, t, b = setup()\nwith m.sealed():\n    t.write([[0.0] * 8] * 64)")
    add("tensor read while sealed", "m, t, b = setup()\nwith m.sealed():\n    t.read()")
    # trace callbacks
    add("run trace raising", "fl.run(algo='flash2', N=64, d=8, M=4096, trace=lambda e: 1 / 0)", "raises:ZeroDivisionError")
    add("run trace KeyboardInterrupt", "def f(e):\n    raise KeyboardInterrupt\nfl.run(algo='flash2', N=64, d=8, M=4096, trace=f)",
        "raises:KeyboardInterrupt")
    add("run trace SystemExit", "def f(e):\n    raise SystemExit(3)\nfl.run(algo='flash2', N=64, d=8, M=4096, trace=f)",
        "raises:SystemExit")
    add("run trace not callable", "fl.run(algo='flash2', N=64, d=8, M=4096, trace=5)")
    add("run trace wrong arity", "fl.run(algo='flash2', N=64, d=8, M=4096, trace=lambda: None)", "raises:TypeError")
    add("run trace raising on the 5th event", "n = [0]\ndef f(e):\n    n[0] += 1\n    if n[0] == 5: raise ValueError('x')\n"
        "fl.run(algo='flash2', N=64, d=8, M=4096, mode='compute', trace=f)", "raises:ValueError")
    add("machine trace raising on load", "m, t, b = setup(); m.set_trace(lambda e: 1 / 0); m.load(b, t, 0, 0, 8, 8)",
        "raises:ZeroDivisionError")
    add("machine trace raising, then the machine again",
        "m, t, b = setup(); m.set_trace(lambda e: 1 / 0)\ntry:\n    m.load(b, t, 0, 0, 8, 8)\nexcept ZeroDivisionError:\n    pass\n"
        "m.set_trace(None); m.load(b, t, 0, 0, 8, 8)")
    add("machine trace raising on alloc", "m, t, b = setup(); m.set_trace(lambda e: 1 / 0); m.alloc('k', 8, 8)",
        "raises:ZeroDivisionError")
    add("machine trace raising on free", "m, t, b = setup(); m.set_trace(lambda e: 1 / 0); m.free(b)",
        "raises:ZeroDivisionError")
    add("machine trace closing the machine", "m, t, b = setup()\ndef f(e):\n    m.close()\nm.set_trace(f); m.load(b, t, 0, 0, 8, 8); b.read()")
    add("machine trace freeing the buffer", "m, t, b = setup()\ndef f(e):\n    m.free(b)\nm.set_trace(f); m.load(b, t, 0, 0, 8, 8); b.read()")
    add("machine trace loading again", "m, t, b = setup()\nk = [0]\ndef f(e):\n    k[0] += 1\n    if k[0] < 50: m.load(b, t, 0, 0, 8, 8)\n"
        "m.set_trace(f); m.load(b, t, 0, 0, 8, 8)\nassert m.reads == 64 * k[0], (m.reads, k)", "ok")
    add("machine trace not callable", "m, t, b = setup(); m.set_trace('print')")
    add("machine trace wrong arity", "m, t, b = setup(); m.set_trace(lambda: None); m.load(b, t, 0, 0, 8, 8)", "raises:TypeError")
    # objects that own C memory: no copy, no pickle (a copy would free it twice); an OsmState
    # is copied deeply (it owns no C memory but its own arrays)
    owners = {"machine": "m", "tensor": "t", "buffer": "b"}
    for what, var in owners.items():
        for how in ("copy.copy({v})", "copy.deepcopy({v})", "pickle.dumps({v})", "copy.deepcopy([{v}])",
                    "pickle.dumps({{'x': {v}}})"):
            code = how.format(v=var)
            add(f"{what}: {code}", f"import copy, pickle\nm, t, b = setup()\n{code}")
    add("machine copy refused, then both closed", "import copy\nm, t, b = setup()\ntry:\n    copy.copy(m)\n"
        "except fl.FlashlabError:\n    pass\nm.close(); m.close(); del m\nimport gc; gc.collect()", "ok")
    add("OsmState copy is deep", "import copy\ns = fl.OsmState(2); fl.osm_step(s, [1.0], [[1.0, 2.0]])\n"
        "c = copy.copy(s); fl.osm_step(c, [3.0], [[5.0, 6.0]])\nassert s.u == [1.0, 2.0] and c.u != s.u, (s.u, c.u)\n"
        "assert fl.osm_finish(copy.deepcopy(s)) == fl.osm_finish(s)", "ok")
    add("OsmState pickle round trip", "import pickle\ns = fl.OsmState(3); fl.osm_step(s, [0.5, 2.0], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])\n"
        "r = pickle.loads(pickle.dumps(s))\nassert (r.m, r.l, r.u, r.dv) == (s.m, s.l, s.u, 3)\n"
        "assert fl.osm_finish(r) == fl.osm_finish(s)", "ok")
    add("OsmState restored from a pickle with no u", "fl._osm_restore(0.0, 1.0, [])")
    add("OsmState restored from a pickle with u of strings", "fl._osm_restore(0.0, 1.0, ['a'])")
    # sizes and names fixed at creation
    for code in ("s = fl.OsmState(4); s.dv = 1000", "s = fl.OsmState(4); del s.dv", "s = fl.OsmState(4); s.dv = 1",
                 "m, t, b = setup(); t.id = 99", "m, t, b = setup(); t.name = 'K'", "m, t, b = setup(); b.name = 'x'",
                 "m, t, b = setup(); m.mode = 'compute'",
                 "m, t, b = setup(); m.tensors = {}", "m, t, b = setup(); b.rows = 1000"):
        add(f"fixed: {code.split('; ', 1)[-1]}", code)
    add("OsmState dv fixed: finish reads its own size", "s = fl.OsmState(4)\ntry:\n    s.dv = 100000\n"
        "except fl.FlashlabError:\n    pass\nassert len(fl.osm_finish(s)) == 4 and s.dv == 4", "ok")
    add("machine.tensors is a copy", "m, t, b = setup(); d = m.tensors; d['Q'] = None; d['K'] = t\n"
        "assert m.tensors == {'Q': t}, m.tensors; m.load(b, t, 0, 0, 8, 8)", "ok")
    # hand-built tensors and buffers: refused, never a NULL or foreign pointer reaching C
    for code in ("fl.Tensor(m, 99, 'Q').rows", "fl.Tensor(m, -1, 'Q').read()", "fl.Tensor(m, 'x', 'Q').reads",
                 "fl.Tensor(m, 99, 'Q').write([[0.0]])", "m.load(b, fl.Tensor(m, 99, 'Q'), 0, 0, 8, 8)",
                 "m.load(b, fl.Tensor(m, 0, 'Q'), 0, 0, 8, 8)", "m.store(b, fl.Tensor(m, 1, 'K'), 0, 0, 8, 8)",
                 "m.load(fl.Buffer(m, b._p, 'q'), t, 0, 0, 8, 8)", "fl.Buffer(m, b._p, 'q').read()",
                 "m.free(fl.Buffer(m, b._p, 'q'))", "repr(fl.Tensor(m, 99, 'Q'))"):
        add(f"hand-built: {code}", f"m, t, b = setup()\n{code}")
    # re-entrant calls from a trace callback: close and set_trace refused, the machine intact
    add("machine trace closing the machine, then the machine again",
        "m, t, b = setup()\ndef f(e):\n    m.close()\nm.set_trace(f)\ntry:\n    m.load(b, t, 0, 0, 8, 8)\n"
        "except fl.FlashlabError as e:\n    assert 'refused while a call' in str(e), e\n"
        "assert m.reads == 64 and b.read()[0] == t.read()[0]; m.close()", "ok")   # stopped, not freed
    add("machine trace setting the trace", "m, t, b = setup()\ndef f(e):\n    m.set_trace(None)\n"
        "m.set_trace(f); m.load(b, t, 0, 0, 8, 8)")
    add("machine trace closing through with", "m, t, b = setup()\ndef f(e):\n    m.__exit__(None, None, None)\n"
        "m.set_trace(f); m.alloc('k', 8, 8)")
    add("run trace closing a machine in use", "m, t, b = setup()\ndef f(e):\n    m.close()\n"
        "m.set_trace(lambda e: fl.run(algo='flash2', N=64, d=8, M=4096, trace=f)); m.load(b, t, 0, 0, 8, 8)")
    # several threads: calls take turns; a close from another thread waits for the running call
    add("threads: close while another thread loads",
        "import threading, time\nm, t, b = setup()\nstarted = threading.Event()\n"
        "def slow(e):\n    started.set(); time.sleep(0.02)\nm.set_trace(slow)\nerrs = []\n"
        "def loader():\n    try:\n        for _ in range(50):\n            m.load(b, t, 0, 0, 8, 8); b.read()\n"
        "    except fl.FlashlabError as e:\n        errs.append(e)\n"
        "th = threading.Thread(target=loader); th.start()\nassert started.wait(10)\nm.close(); th.join(20)\n"
        "assert not th.is_alive() and errs and 'closed' in str(errs[0]), errs", "ok")
    add("threads: loads from four threads all counted",
        "import threading\nm, t, b = setup()\n"
        "def loader():\n    for _ in range(200):\n        m.load(b, t, 0, 0, 8, 8); t.reads; b[0, 0]\n"
        "ths = [threading.Thread(target=loader) for _ in range(4)]\n[x.start() for x in ths]; [x.join() for x in ths]\n"
        "assert m.reads == 4 * 200 * 64, m.reads", "ok")
    add("threads: read a buffer while another thread frees and allocates",
        "import threading\nm = mach()\nt = m.tensor('Q', 64, 8)\nstop = []\nerrs = []\n"
        "def churn():\n    for _ in range(300):\n        x = m.alloc('x', 8, 8); m.load(x, t, 0, 0, 8, 8); m.free(x)\n    stop.append(1)\n"
        "def reader():\n    while not stop:\n        for x in m.buffers:\n            try:\n                x.read()\n"
        "            except fl.FlashlabError as e:\n                assert 'freed' in str(e), e\n"
        "th = [threading.Thread(target=churn), threading.Thread(target=reader)]\n[x.start() for x in th]; [x.join() for x in th]", "ok")
    # text that has no UTF-8 form (a lone surrogate)
    for code in ("fl.Machine(4096, name='\\ud800')", "m = mach(); m.tensor('\\ud800', 8, 8)",
                 "m = mach(); m.alloc('\\udfff', 8, 8)", "fl.cu_seqlens_check([0, 64], 1, 64, opt='\\ud800')",
                 "fl.cli('count', '--algo', '\\ud800')", "fl.trace(algo='\\ud800')", "fl.run(algo='fl\\ud800', N=64)",
                 "fl.mask(4, 4, '\\ud800')"):
        add(f"lone surrogate: {code}", code)
    # trace's window is a pair
    for v in ("5", "(1,)", "None", "(1, 2, 3)", "'ab'", "{1: 2}"):
        add(f"trace(window={v})", f"fl.trace(window={v})")
    add("trace(window=(1, 1)) works", "assert fl.trace(window=(1, 1))", "ok")
    # a library that is not libflashlab: FlashlabError at import, naming it
    for what, path in (("a text file", "'/etc/hostname'"), ("/dev/null", "'/dev/null'"), ("a directory", "'/'"),
                       ("libc (no fl_ functions)", "ctypes.util.find_library('c')"), ("missing", "'/nonexistent.so'")):
        add(f"FLASHLAB_LIB = {what}",
            "import ctypes.util, os, subprocess, sys\n"
            f"r = subprocess.run([sys.executable, '-c', 'import flashlab'], capture_output=True, text=True, "
            f"cwd=os.path.dirname(fl.__file__), env=dict(os.environ, FLASHLAB_LIB={path}))\n"
            "last = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ''\n"
            "assert r.returncode == 1 and last.startswith('flashlab.FlashlabError: '), r.stderr[-400:]", "ok")
    # online softmax and the reference
    for v, what in BAD_INTS:
        add(f"OsmState(dv={what})", f"fl.OsmState({v})")
        add(f"osm_tiled(tile={what})", f"fl.osm_tiled([1.0, 2.0], [[1.0], [2.0]], {v})")
    add("OsmState(dv=0)", "fl.OsmState(0)")
    add("OsmState u too short", "fl.OsmState(4, m=0.0, l=1.0, u=[1.0])")
    add("OsmState m=nan", "fl.OsmState(1, m=float('nan'), l=1.0, u=[1.0])")
    add("OsmState l negative", "fl.OsmState(1, m=0.0, l=-1.0, u=[1.0])")
    add("osm_step values too short", "s = fl.OsmState(2); fl.osm_step(s, [1.0, 2.0], [1.0, 2.0])")
    add("osm_step values rows of the wrong width", "s = fl.OsmState(2); fl.osm_step(s, [1.0, 2.0], [[1.0], [2.0]])")
    add("osm_step scores None", "s = fl.OsmState(1); fl.osm_step(s, None, [1.0])")
    add("osm_step state None", "fl.osm_step(None, [1.0], [1.0])")
    add("osm_step scores strings", "s = fl.OsmState(1); fl.osm_step(s, ['a'], [1.0])")
    add("osm_step scores +inf", "s = fl.OsmState(1); fl.osm_step(s, [float('inf')], [1.0])")
    add("osm_step scores nan", "s = fl.OsmState(1); fl.osm_step(s, [float('nan')], [1.0])")
    add("osm_finish None", "fl.osm_finish(None)")
    add("osm_tiled too few values", "fl.osm_tiled([1.0, 2.0, 3.0], [[1.0], [2.0]], 2)")
    add("osm_tiled ragged values", "fl.osm_tiled([1.0, 2.0], [[1.0, 2.0], [2.0]], 1)")
    add("softmax_row too few values", "fl.softmax_row([1.0, 2.0], [[1.0]])")
    add("softmax_row empty", "fl.softmax_row([], [])")
    add("attention_ref ragged Q", "fl.attention_ref([[1.0, 2.0], [1.0]], [[1.0, 2.0]], [[1.0]])")
    add("attention_ref K of another d", "fl.attention_ref([[1.0, 2.0]], [[1.0, 2.0, 3.0]], [[1.0]])")
    add("attention_ref V of other rows", "fl.attention_ref([[1.0, 2.0]], [[1.0, 2.0]], [[1.0], [2.0]])")
    add("attention_ref empty", "fl.attention_ref([], [], [])")
    add("attention_ref scale str", "fl.attention_ref([[1.0]], [[1.0]], [[1.0]], scale='x')")
    add("attention_ref scale nan", "fl.attention_ref([[1.0]], [[1.0]], [[1.0]], scale=float('nan'))")
    add("attention_ref None", "fl.attention_ref(None, None, None)")
    # masks, heads, varlen
    for arg in ("Nq", "Nk", "left", "right"):
        for v, what in BAD_INTS:
            if arg in ("left", "right") and what == "negative":
                continue
            kw = {"Nq": "4", "Nk": "4", "left": "-1", "right": "-1"}
            kw[arg] = v
            add(f"mask({arg}={what})", f"fl.mask({kw['Nq']}, {kw['Nk']}, 'none', {kw['left']}, {kw['right']})")
    add("mask(left=-2)", "fl.mask(4, 4, 'none', -2, -1)")
    add("mask(causal='up')", "fl.mask(4, 4, 'up')")
    add("mask(causal=None)", "fl.mask(4, 4, None)")
    add("mask(Nq=0)", "fl.mask(0, 4)")
    add("mask_matrix huge", "fl.mask_matrix(2**40, 2**40)")
    add("mask_matrix 2**31 x 2**31", "fl.mask_matrix(2**31, 2**31)")
    add("mask_matrix 100000 x 100000", "fl.mask_matrix(100000, 100000)")
    for i, j in (("4", "0"), ("0", "4"), ("-1", "0"), ("0", "-1"), ("2**64", "0"), ("0", "2**63"), ("1.0", "0"),
                 ("True", "0"), ("None", "0"), ("'0'", "0")):
        add(f"mask_keep({i}, {j})", f"mk = fl.mask(4, 4); fl.mask_keep(mk, {i}, {j})")
    add("mask_keep on None", "fl.mask_keep(None, 0, 0)")
    add("mask_keep on a string", "fl.mask_keep('mask', 0, 0)")
    add("mask_keep on a Machine", "fl.mask_keep(mach(), 0, 0)")
    for args in ("4, 1, 0, 1", "0, 1, 4, 1", "0, 5, 0, 1", "0, 1, 0, 5", "0, 0, 0, 1", "0, 1, 0, 0", "-1, 1, 0, 1",
                 "3, 2, 0, 1", "0, 2**63, 0, 1", "2**63-1, 2, 0, 1", "0, 1, 2**63-1, 2", "0.0, 1, 0, 1", "None, 1, 0, 1",
                 "True, 1, 0, 1", "0, -1, 0, 1", "2**64, 1, 0, 1"):
        add(f"mask_tile({args})", f"mk = fl.mask(4, 4); fl.mask_tile(mk, {args})")
    add("mask_tile on None", "fl.mask_tile(None, 0, 1, 0, 1)")
    for args in ("6, 6, 2", "-1, 6, 2", "0, 6, 4", "0, 6, 0", "0, 0, 0", "0, -6, -2", "2**63, 6, 2", "0, 2**64, 2",
                 "0, 6, 12", "1.0, 6, 2", "True, 6, 2", "None, 6, 2", "'0', 6, 2", "0, 6, 2**63"):
        add(f"kv_head({args})", f"fl.kv_head({args})")
    add("kv_head(5, 6, 2) = 1", "assert fl.kv_head(5, 6, 2) == 1, fl.kv_head(5, 6, 2)", "ok")
    for args in ("[0, 64], 2, 64", "[1, 64], 1, 64", "[0, 32], 1, 64", "[0, 40, 32], 2, 32", "[0, -1], 1, -1",
                 "[0, 2**64], 1, 2**64", "[0, 64], 1, 2**63", "[], 0, 0", "None, 1, 64", "[0, 64], 0, 64",
                 "[0, 64], -1, 64", "[0, 64.0], 1, 64", "[0, 64], True, 64", "'0,64', 1, 64", "[0, 64], 2**62, 64"):
        add(f"cu_seqlens_check({args})", f"fl.cu_seqlens_check({args})")
    add("cu_seqlens_check opt None", "fl.cu_seqlens_check([0, 32], 1, 64, opt=None)")
    # the CLI through the binding
    add("cli bad option", "fl.cli('count', '--N', 'x')")
    add("cli unknown command", "fl.cli('nope')")
    add("cli NUL in an argument", "fl.cli('count', '--algo', 'fl\\0ash2')")
    for kw in ("N=-1", "N=2**64", "N='64'", "N=True", "algo='nope'", "bogus=1", "M=0", "N=2**40", "format='xml'",
               "compute='yes'", "causal='up'", "max_events=-1", "Br=1.5"):
        add(f"trace({kw})", f"fl.trace({kw})")
    add("trace_rows of garbage", "fl.trace_rows('a,b\\n1')")
    add("trace_rows None", "fl.trace_rows(None)")
    # answers are right where the input is fine
    add("run counts match the CLI", "r = fl.run(algo='flash2', N=64, d=8, M=4096)\n"
        "out = fl.cli('count', '--algo', 'flash2', '--N', '64', '--d', '8', '--M', '4096', '--format', 'csv')\n"
        "row = dict(zip(*[l.split(',') for l in out.strip().splitlines()[:2]]))\n"
        "assert int(row['hbm_total']) == r.total, (row['hbm_total'], r.total)", "ok")
    add("mask_keep top-left", "mk = fl.mask(2, 4, 'top-left'); assert [fl.mask_keep(mk, 0, j) for j in range(4)] == [True, False, False, False]", "ok")
    add("mask_keep bottom-right", "mk = fl.mask(2, 4, 'bottom-right'); assert [fl.mask_keep(mk, 0, j) for j in range(4)] == [True, True, True, False]", "ok")
    return cs




CHILD = r"""
import os, sys, resource, signal, traceback
if not os.environ.get("LD_PRELOAD"):   # ASan's shadow memory needs terabytes of address space
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
import flashlab as fl   # the binding's folder is on PYTHONPATH
cases = __CASES__
start = int(sys.argv[1])
for k in range(start, len(cases)):
    name, code, expect = cases[k]
    print(f"START {k}", flush=True)
    signal.alarm(__ALARM__)
    g = {}
    try:
        exec(__PRELUDE__, g)
        exec(code, g)
        got = None
    except BaseException as e:
        got = e
    signal.alarm(0)
    if expect == "ok":
        ok = got is None
    elif expect == "refuse":
        ok = isinstance(got, fl.FlashlabError) and str(got).strip() != "" and "\n" not in str(got).strip()
    else:
        ok = type(got).__name__ == expect.split(":", 1)[1]
    what = "no exception" if got is None else f"{type(got).__name__}: {str(got)[:150]!r}"
    print(("OK " if ok else "BAD ") + f"{k} " + what.replace(chr(10), ' '), flush=True)
    import gc; gc.collect()
print("DONE", flush=True)
"""


def main(argv):
    import argparse
    import time
    ap = argparse.ArgumentParser()
    ap.add_argument("cli")
    ap.add_argument("lib")
    ap.add_argument("--only")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--sanitizer-runtime", help="the ASan runtime to preload (LIB is a sanitizer build)")
    a = ap.parse_args(argv)
    cs = cases()
    names = [c[0] for c in cs]
    dup = {n for n in names if names.count(n) > 1}
    assert not dup, sorted(dup)
    if a.only:
        cs = [c for c in cs if a.only in c[0]]
    if a.list:
        for c in cs:
            print(c[0])
        return 0
    here = os.path.dirname(os.path.abspath(__file__))
    bindir = os.path.join(os.path.dirname(os.path.dirname(here)), "python")   # the package flashlab's folder
    path = os.environ.get("PYTHONPATH")
    env = dict(os.environ, FLASHLAB_LIB=os.path.abspath(a.lib), FLASHLAB_CLI=os.path.abspath(a.cli),
               OMP_NUM_THREADS="1", PYTHONPATH=bindir + (os.pathsep + path if path else ""))
    if a.sanitizer_runtime:
        if not os.path.isfile(a.sanitizer_runtime):
            print(f"binding: --sanitizer-runtime {a.sanitizer_runtime}: no such file")
            return 1
        env["LD_PRELOAD"] = a.sanitizer_runtime
        env["ASAN_OPTIONS"] = "detect_leaks=0:allocator_may_return_null=1:abort_on_error=1"
        env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
    try:
        scale = time_scale()
    except ValueError as e:
        print(f"binding: {e}")
        return 2
    # a case still running after 20 s (times the time scale) is a hang: the alarm ends the child
    code = (CHILD.replace("__CASES__", repr(cs)).replace("__PRELUDE__", repr(PRELUDE))
            .replace("__ALARM__", str(math.ceil(20 * scale))))
    t0 = time.monotonic()
    results = {}
    start = 0
    while start < len(cs):
        p = subprocess.run([sys.executable, "-c", code, str(start)], env=env, capture_output=True,
                           timeout=600 * scale)
        current = None
        for line in p.stdout.decode(errors="replace").splitlines():
            if line.startswith("START "):
                current = int(line.split()[1])
            elif line.startswith(("OK ", "BAD ")):
                tag, k, *rest = line.split(" ", 2)
                results[int(k)] = (tag == "OK", rest[0] if rest else "")
                current = None
        if "DONE" in p.stdout.decode(errors="replace"):
            break
        if current is None:   # died outside a case
            print(f"binding child failed: {p.stderr.decode(errors='replace')[-300:]}")
            return 1
        results[current] = (False, f"the interpreter died (status {p.returncode}): "
                            + p.stderr.decode(errors="replace").strip().splitlines()[-1:][0][:150]
                            if p.stderr.strip() else f"the interpreter died (status {p.returncode})")
        start = current + 1
    bad = 0
    for k, (name, code_, expect) in enumerate(cs):
        ok, what = results.get(k, (False, "not run"))
        if not ok:
            bad += 1
            print(f"FAIL binding {name!r} (expected {expect}): {what}")
    print(f"binding: {len(cs)} cases, {len(cs) - bad} pass "
          f"({time.monotonic() - t0:.0f} s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
