"""flashlab.py: a thin ctypes binding over libflashlab.so for the course labs.

Nothing of the model lives here: every count comes from the C machine (sim/machine.h), every
schedule from sim/sched_*.c through fl_run (sim/run.h), every online-softmax step from
fl_osm_step (sim/ops.h).  This file only converts arguments and results, raises FlashlabError
with the library's own one-line message when a call fails, and runs the `flashlab` CLI for the
commands that print (example, count --explain, trace).

Where the library is found: $FLASHLAB_LIB (the ctest tests set it), else build*/sim/libflashlab.so
above this file.  The CLI: $FLASHLAB_CLI, else build*/flashlab.

The ctypes structures mirror sim/machine.h, sim/problem.h and sim/run.h.  `python3 flashlab.py
--check-abi ABI_PROGRAM` compares their sizes and offsets with what the C compiler says
(notebooks/abi.c; a ctest test), so a field added in C cannot silently shift them.

Quick tour:
    import flashlab as fl
    r = fl.run("flash2", N=1024, d=64, M=98304)        # count-only machine
    r.total, r.tensors["K"], r.Br, r.closed_total
    with fl.Machine(M=1000) as m:                      # your own schedule, by hand
        Q = m.tensor("Q", 64, 8); buf = m.alloc("Q_i", 16, 8)
        m.load(buf, Q, 0, 0, 16, 8); m.reads           # -> 128
"""
import ctypes as C
import csv
import io
import json
import os
import pathlib
import subprocess
import sys

# ----------------------------------------------------------------------------------------------
# Finding the library and the CLI

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent


def _find(env, rel):
    if os.environ.get(env):
        return pathlib.Path(os.environ[env])
    for build in sorted(ROOT.glob("build*")):
        p = build / rel
        if p.exists():
            return p
    raise FileNotFoundError(
        f"{env} is not set and no {rel} was found under {ROOT}/build*: build flashlab first "
        f"(cmake -S . -B build && cmake --build build -j2) or set {env}")


LIB_PATH = _find("FLASHLAB_LIB", "sim/libflashlab.so")
_lib = C.CDLL(str(LIB_PATH))

# ----------------------------------------------------------------------------------------------
# Mirrors of the C structures (sim/status.h, machine.h, problem.h, run.h)

NAME_LEN = 16
MAX_TENSORS = 16
COUNT, COMPUTE = 0, 1
CAUSAL = {"none": 0, "top-left": 1, "bottom-right": 2}
PASSES = {"fwd": 1, "bwd": 2, "fwd+bwd": 3}
EVENT_KINDS = ("load", "store", "alloc", "free")
STATUS = {0: "ok", 1: "invalid argument", 2: "capacity exceeded", 3: "overflow",
          4: "out of memory", 5: "i/o error", 6: "out of bounds"}


class Problem(C.Structure):
    _fields_ = [("algo", C.c_int), ("N", C.c_int64), ("d", C.c_int64), ("M", C.c_int64),
                ("Br", C.c_int64), ("Bc", C.c_int64), ("seed", C.c_uint64),
                ("elem_bytes", C.c_int), ("max_events", C.c_int64),
                ("Nk", C.c_int64), ("causal", C.c_int), ("window_left", C.c_int64),
                ("window_right", C.c_int64), ("batch", C.c_int64), ("heads", C.c_int64),
                ("kv_heads", C.c_int64), ("pass_", C.c_int),
                ("cu_seqlens_q", C.POINTER(C.c_int64)), ("cu_seqlens_k", C.POINTER(C.c_int64)),
                # issue 4 items 5-7 (sim/problem.h): decode, block-sparse
                ("page_size", C.c_int64), ("pool_pages", C.c_int64), ("page_seed", C.c_uint64),
                ("block_table", C.POINTER(C.c_int64)), ("block_table_len", C.c_int64),
                ("splits", C.c_int64), ("pad_value", C.c_double), ("density", C.c_double),
                ("mask_seed", C.c_uint64), ("cu_seqlens_q_len", C.c_int64),
                ("cu_seqlens_k_len", C.c_int64)]


class Blocks(C.Structure):
    _fields_ = [("Br", C.c_int64), ("Bc", C.c_int64), ("Bd", C.c_int64),
                ("footprint", C.c_int64), ("overridden", C.c_int), ("paper_Br", C.c_int64),
                ("paper_Bc", C.c_int64), ("paper_footprint", C.c_int64)]


class Counts(C.Structure):
    _fields_ = [("reads", C.c_int64), ("writes", C.c_int64), ("total", C.c_int64),
                ("events", C.c_int64), ("sram_peak", C.c_int64)]


class TensorCounts(C.Structure):
    _fields_ = [("name", C.c_char * NAME_LEN), ("reads", C.c_int64), ("writes", C.c_int64),
                ("elem_bytes", C.c_int)]


class Result(C.Structure):
    _fields_ = [("p", Problem), ("b", Blocks), ("b_bwd", Blocks), ("ntensors", C.c_int),
                ("t", TensorCounts * MAX_TENSORS), ("reads", C.c_int64), ("writes", C.c_int64),
                ("total", C.c_int64), ("bytes", C.c_int64), ("sram_peak", C.c_int64),
                ("events", C.c_int64), ("closed", Counts), ("fwd_total", C.c_int64),
                ("bwd_total", C.c_int64), ("segments", C.c_int64), ("computed", C.c_int),
                ("max_abs_err", C.c_double), ("rel_err", C.c_double),
                ("lse_rel_err", C.c_double), ("dq_rel_err", C.c_double),
                ("dk_rel_err", C.c_double), ("dv_rel_err", C.c_double)]


class Event(C.Structure):
    _fields_ = [("kind", C.c_int), ("tensor", C.c_char_p), ("buf", C.c_char_p),
                ("r0", C.c_int64), ("c0", C.c_int64), ("nr", C.c_int64), ("nc", C.c_int64),
                ("sram_used", C.c_int64), ("reads", C.c_int64), ("writes", C.c_int64)]


class TensorStruct(C.Structure):
    _fields_ = [("name", C.c_char * NAME_LEN), ("rows", C.c_int64), ("cols", C.c_int64),
                ("elem_bytes", C.c_int), ("data", C.POINTER(C.c_double)),
                ("reads", C.c_int64), ("writes", C.c_int64)]


class BufStruct(C.Structure):
    _fields_ = [("name", C.c_char * NAME_LEN), ("rows", C.c_int64), ("cols", C.c_int64),
                ("x", C.POINTER(C.c_double)), ("live", C.c_int)]


class MaskStruct(C.Structure):
    _fields_ = [("Nq", C.c_int64), ("Nk", C.c_int64), ("causal", C.c_int), ("left", C.c_int64),
                ("right", C.c_int64), ("has_a", C.c_int), ("has_b", C.c_int), ("a", C.c_int64),
                ("b", C.c_int64)]


TRACE_FN = C.CFUNCTYPE(None, C.POINTER(Event), C.c_void_p)
_P = C.POINTER
_D = _P(C.c_double)


def _sig(name, res, *args):
    f = getattr(_lib, name)
    f.restype = res
    f.argtypes = list(args)
    return f


_sig("fl_last_error", C.c_char_p)
_sig("fl_algo_name", C.c_char_p, C.c_int)


def _algo_names():
    names = []
    while _lib.fl_algo_name(len(names)) is not None:
        names.append(_lib.fl_algo_name(len(names)).decode())
    return tuple(names)


ALGOS = _algo_names()   # the schedules the library knows, in fl_algo order
CLASSIC = ("standard", "flash1", "flash2")
_sig("fl_problem_default", Problem)
_sig("fl_run", C.c_int, _P(Problem), C.c_int, TRACE_FN, C.c_void_p, _P(Result))
_sig("fl_blocks_choose", C.c_int, _P(Problem), _P(Blocks))
_sig("fl_closed_form", C.c_int, _P(Problem), _P(Blocks), _P(Counts))
_sig("fl_footprint", C.c_int64, C.c_int, C.c_int64, C.c_int64, C.c_int64, C.c_int64)
_sig("fl_footprint_pass", C.c_int64, C.c_int, C.c_int, C.c_int64, C.c_int64, C.c_int64, C.c_int64, C.c_int64)
_sig("fl_machine_alloc", C.c_void_p, C.c_int64, C.c_int, C.c_char_p)
_sig("fl_machine_free", None, C.c_void_p)
_sig("fl_machine_set_trace", None, C.c_void_p, TRACE_FN, C.c_void_p)
_sig("fl_tensor_add", C.c_int, C.c_void_p, C.c_char_p, C.c_int64, C.c_int64, C.c_int, _P(C.c_int))
_sig("fl_tensor_get", _P(TensorStruct), C.c_void_p, C.c_int)
_sig("fl_sram_alloc", C.c_int, C.c_void_p, C.c_char_p, C.c_int64, C.c_int64, _P(_P(BufStruct)))
_sig("fl_sram_free", None, C.c_void_p, _P(BufStruct))
_sig("fl_load", C.c_int, C.c_void_p, _P(BufStruct), C.c_int, C.c_int64, C.c_int64, C.c_int64, C.c_int64)
_sig("fl_store", C.c_int, C.c_void_p, _P(BufStruct), C.c_int, C.c_int64, C.c_int64, C.c_int64, C.c_int64)
for _n in ("reads", "writes", "sram_peak", "sram_used", "events", "capacity"):
    _sig("fl_machine_" + _n, C.c_int64, C.c_void_p)
_sig("fl_osm_step", C.c_double, _D, _D, _D, C.c_int64, _D, C.c_int64, _D, C.c_int64, _D)
_sig("fl_osm_finish", None, C.c_double, _D, C.c_int64, _D)
_sig("fl_osm_tiled", C.c_int, _D, C.c_int64, _D, C.c_int64, C.c_int64, _D)
_sig("fl_ref_softmax_row", C.c_double, _D, C.c_int64, _D, C.c_int64, _D)
_sig("fl_mask_init", C.c_int, _P(MaskStruct), C.c_int64, C.c_int64, C.c_int, C.c_int64, C.c_int64)
_sig("fl_mask_keep", C.c_int, _P(MaskStruct), C.c_int64, C.c_int64)
_sig("fl_mask_tile", C.c_int, _P(MaskStruct), C.c_int64, C.c_int64, C.c_int64, C.c_int64)
_sig("fl_kv_head", C.c_int64, C.c_int64, C.c_int64, C.c_int64)
_sig("fl_heads_check", C.c_int, C.c_int64, C.c_int64)
_sig("fl_cu_seqlens_check", C.c_int, C.c_char_p, _P(C.c_int64), C.c_int64, C.c_int64, C.c_int64)


class FlashlabError(RuntimeError):
    """A call into libflashlab failed; .status is the fl_status code, str() the library's line."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.kind = STATUS.get(status, "error")


def _ok(status):
    if status != 0:
        raise FlashlabError(status, _lib.fl_last_error().decode())


def _doubles(xs):
    xs = [float(x) for x in xs]
    return (C.c_double * max(1, len(xs)))(*xs)


# ----------------------------------------------------------------------------------------------
# Runs of the project's schedules (fl_run)

def problem(algo="flash2", N=1024, d=64, M=98304, Br=0, Bc=0, seed=1, elem_bytes=2, **variants):
    """An fl_problem from fl_problem_default() with the given fields.  Variant fields (Nk,
    causal='none'|'top-left'|'bottom-right', window_left, window_right, batch, heads, kv_heads,
    pass_='fwd'|'bwd'|'fwd+bwd', cu_seqlens_q / cu_seqlens_k as lists) are passed through; the
    library checks them and refuses what it does not implement."""
    p = _lib.fl_problem_default()
    p.algo = ALGOS.index(algo) if isinstance(algo, str) else int(algo)
    p.N, p.d, p.M, p.Br, p.Bc, p.seed, p.elem_bytes = N, d, M, Br, Bc, seed, elem_bytes
    p._keep = []   # arrays the problem points to, kept alive with it
    for k, v in variants.items():
        if k == "causal" and isinstance(v, str):
            v = CAUSAL[v]
        if k == "pass_" and isinstance(v, str):
            v = PASSES[v]
        if k == "block_table":  # decode: a list of physical pages; its length goes with it
            p.block_table_len = len(v)
        if k in ("cu_seqlens_q", "cu_seqlens_k"):  # each array with its number of entries
            setattr(p, k + "_len", len(v))
        if k in ("cu_seqlens_q", "cu_seqlens_k", "block_table"):
            v = (C.c_int64 * len(v))(*v)
            p._keep.append(v)
            v = C.cast(v, C.POINTER(C.c_int64))
        if not hasattr(p, k):
            raise TypeError(f"problem: no field {k!r}")
        setattr(p, k, v)
    return p


class RunResult:
    """What fl_run reported, as plain Python values.  Counts are elements."""

    def __init__(self, r):
        self.algo = ALGOS[r.p.algo]
        self.N, self.d, self.M = r.p.N, r.p.d, r.p.M
        self.Br, self.Bc, self.Bd, self.footprint = r.b.Br, r.b.Bc, r.b.Bd, r.b.footprint
        self.bwd_Br, self.bwd_Bc, self.bwd_footprint = r.b_bwd.Br, r.b_bwd.Bc, r.b_bwd.footprint
        self.fwd_total, self.bwd_total, self.segments = r.fwd_total, r.bwd_total, r.segments
        self.paper_Br, self.paper_Bc = r.b.paper_Br, r.b.paper_Bc
        self.paper_footprint = r.b.paper_footprint
        self.reads, self.writes, self.total = r.reads, r.writes, r.total
        self.bytes, self.sram_peak, self.events = r.bytes, r.sram_peak, r.events
        self.closed_total = r.closed.total
        self.tensors = {r.t[i].name.decode(): (r.t[i].reads, r.t[i].writes)
                        for i in range(r.ntensors)}
        self.elem_bytes = {r.t[i].name.decode(): r.t[i].elem_bytes for i in range(r.ntensors)}
        self.read_bytes = sum(rd * self.elem_bytes[t] for t, (rd, _) in self.tensors.items())
        self.write_bytes = sum(wr * self.elem_bytes[t] for t, (_, wr) in self.tensors.items())
        self.computed = bool(r.computed)
        self.rel_err = r.rel_err if r.computed else None
        self.max_abs_err = r.max_abs_err if r.computed else None
        self.grad_rel_err = (r.dq_rel_err, r.dk_rel_err, r.dv_rel_err) if r.computed else None

    def __repr__(self):
        return (f"<{self.algo} N={self.N} d={self.d} M={self.M} Br={self.Br} Bc={self.Bc}: "
                f"reads={self.reads} writes={self.writes} total={self.total}>")


def run(algo="flash2", N=1024, d=64, M=98304, Br=0, Bc=0, mode="count", trace=None, **kw):
    """Runs one schedule through fl_run.  mode: 'count' (no arithmetic) or 'compute' (real
    values, checked against the reference: .rel_err).  trace: a callable receiving an Event
    (kind, tensor, buf, r0, c0, nr, nc, sram_used, reads, writes) per tile event."""
    p = problem(algo, N, d, M, Br, Bc, **kw)
    r = Result()
    cb = TRACE_FN(lambda ev, ctx: trace(ev.contents)) if trace else TRACE_FN()
    _ok(_lib.fl_run(C.byref(p), COMPUTE if mode == "compute" else COUNT, cb, None, C.byref(r)))
    return RunResult(r)


def blocks(algo="flash2", N=1024, d=64, M=98304, Br=0, Bc=0, **kw):
    """The blocks fl_blocks_choose picks (rule B0/B1/B2), with the paper's flash1 sizes."""
    p = problem(algo, N, d, M, Br, Bc, **kw)
    b = Blocks()
    _ok(_lib.fl_blocks_choose(C.byref(p), C.byref(b)))
    return {k: getattr(b, k) for k, _ in Blocks._fields_}


def footprint(algo, d, Br, Bc, Bd=None, bwd=False, G=1):
    """SRAM elements a schedule's buffers take for these blocks: the forward's (docs/model.md
    F0/F1/F2, fl_footprint) or, with bwd=True, the backward's (F1b/F2b, fl_footprint_pass; G query
    heads stacked for flash2-gqa)."""
    Bd = d if Bd is None else Bd
    if bwd or G != 1:
        return _lib.fl_footprint_pass(ALGOS.index(algo), int(bwd), G, d, Br, Bc, Bd)
    return _lib.fl_footprint(ALGOS.index(algo), d, Br, Bc, Bd)


# ----------------------------------------------------------------------------------------------
# Your own schedule on the C machine

class Tensor:
    def __init__(self, machine, tid, name):
        self._m, self.id, self.name = machine, tid, name

    @property
    def _s(self):
        return _lib.fl_tensor_get(self._m._h, self.id).contents

    rows = property(lambda self: self._s.rows)
    cols = property(lambda self: self._s.cols)
    reads = property(lambda self: self._s.reads)
    writes = property(lambda self: self._s.writes)

    def __repr__(self):
        return f"<tensor {self.name} {self.rows}x{self.cols}: reads={self.reads} writes={self.writes}>"


class Buffer:
    def __init__(self, ptr):
        self._p = ptr

    name = property(lambda self: self._p.contents.name.decode())
    rows = property(lambda self: self._p.contents.rows)
    cols = property(lambda self: self._p.contents.cols)

    def __repr__(self):
        return f"<SRAM buffer {self.name} {self.rows}x{self.cols}>"


class Machine:
    """The two-level machine of sim/machine.h, driven call by call from Python.  Every method is
    one C call: the machine checks capacity (FlashlabError 'capacity exceeded' naming every live
    buffer) and bounds, and counts every element moved.  Use as a context manager or call
    close()."""

    def __init__(self, M, mode="count", name="my schedule"):
        self._name = name.encode()  # must outlive the machine
        self._h = _lib.fl_machine_alloc(M, COMPUTE if mode == "compute" else COUNT, self._name)
        if not self._h:
            raise FlashlabError(1, _lib.fl_last_error().decode())
        self._cb = None
        self.tensors = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self._h:
            _lib.fl_machine_free(self._h)
            self._h = None

    def __del__(self):
        self.close()

    def tensor(self, name, rows, cols, elem_bytes=2):
        """Adds an HBM tensor (fl_tensor_add)."""
        tid = C.c_int()
        _ok(_lib.fl_tensor_add(self._h, name.encode(), rows, cols, elem_bytes, C.byref(tid)))
        self.tensors[name] = Tensor(self, tid.value, name)
        return self.tensors[name]

    def alloc(self, name, rows, cols):
        """Allocates an SRAM buffer (fl_sram_alloc); FlashlabError when it does not fit in M."""
        out = _P(BufStruct)()
        _ok(_lib.fl_sram_alloc(self._h, name.encode(), rows, cols, C.byref(out)))
        return Buffer(out)

    def free(self, buf):
        _lib.fl_sram_free(self._h, buf._p)

    def load(self, buf, tensor, r0, c0, nr, nc):
        """HBM -> SRAM: the nr x nc tile at (r0, c0) of tensor into buf (rule R1)."""
        _ok(_lib.fl_load(self._h, buf._p, tensor.id, r0, c0, nr, nc))

    def store(self, buf, tensor, r0, c0, nr, nc):
        """SRAM -> HBM: the top-left nr x nc of buf to (r0, c0) of tensor (rule R2)."""
        _ok(_lib.fl_store(self._h, buf._p, tensor.id, r0, c0, nr, nc))

    def set_trace(self, fn):
        """fn(Event) for every later event (None removes it)."""
        self._cb = TRACE_FN(lambda ev, ctx: fn(ev.contents)) if fn else TRACE_FN()
        _lib.fl_machine_set_trace(self._h, self._cb, None)

    reads = property(lambda self: _lib.fl_machine_reads(self._h))
    writes = property(lambda self: _lib.fl_machine_writes(self._h))
    sram_used = property(lambda self: _lib.fl_machine_sram_used(self._h))
    sram_peak = property(lambda self: _lib.fl_machine_sram_peak(self._h))
    events = property(lambda self: _lib.fl_machine_events(self._h))
    capacity = property(lambda self: _lib.fl_machine_capacity(self._h))

    def counts(self):
        """{tensor name: (reads, writes)} as the machine counted them."""
        return {n: (t.reads, t.writes) for n, t in self.tensors.items()}


# ----------------------------------------------------------------------------------------------
# Online softmax (sim/ops.h) and the reference (reference/attention_ref.h)

class OsmState:
    """The running state (m, l, u) of one row's online softmax; starts empty (m = -inf)."""

    def __init__(self, dv):
        self.dv = dv
        self._m, self._l = C.c_double(float("-inf")), C.c_double(0.0)
        self._u = (C.c_double * dv)()

    m = property(lambda self: self._m.value)
    l = property(lambda self: self._l.value)
    u = property(lambda self: list(self._u))

    def __repr__(self):
        return f"OsmState(m={self.m:.6f}, l={self.l:.6f}, u={[round(x, 6) for x in self.u]})"


def osm_step(state, scores, values):
    """One call of fl_osm_step: state absorbs a tile of scores with their value rows.  Returns
    the rescale factor e^(m_old - m_new) the C step applied to the old state."""
    n = len(scores)
    v = _doubles([x for row in values for x in row])
    return _lib.fl_osm_step(C.byref(state._m), C.byref(state._l), state._u, state.dv,
                            _doubles(scores), n, v, state.dv, None)


def osm_finish(state):
    """fl_osm_finish: u / l (zeros for an empty row)."""
    out = (C.c_double * state.dv)()
    _lib.fl_osm_finish(state.l, state._u, state.dv, out)
    return list(out)


def osm_tiled(scores, values, tile):
    """fl_osm_tiled: softmax(scores) @ values computed tile by tile in C."""
    dv = len(values[0])
    out = (C.c_double * dv)()
    _ok(_lib.fl_osm_tiled(_doubles(scores), len(scores),
                          _doubles([x for r in values for x in r]), dv, tile, out))
    return list(out)


def softmax_row(scores, values):
    """The exact reference: softmax(scores) @ values (fl_ref_softmax_row)."""
    dv = len(values[0])
    out = (C.c_double * dv)()
    _lib.fl_ref_softmax_row(_doubles(scores), len(scores),
                            _doubles([x for r in values for x in r]), dv, out)
    return list(out)


# ----------------------------------------------------------------------------------------------
# Masks, heads, varlen (reference/masks.h, reference/heads.h)

def mask(Nq, Nk, causal="none", left=-1, right=-1):
    """An fl_mask (fl_mask_init) of an Nq x Nk score matrix; FlashlabError on bad input."""
    mk = MaskStruct()
    _ok(_lib.fl_mask_init(C.byref(mk), Nq, Nk, CAUSAL[causal] if isinstance(causal, str) else causal,
                          left, right))
    return mk


def mask_keep(mk, i, j):
    """fl_mask_keep: True when query i may attend to key j."""
    return bool(_lib.fl_mask_keep(C.byref(mk), i, j))


def mask_matrix(Nq, Nk, causal="none", left=-1, right=-1):
    """The keep matrix (lists of 0/1) as the C mask rule gives it."""
    mk = mask(Nq, Nk, causal, left, right)
    return [[int(mask_keep(mk, i, j)) for j in range(Nk)] for i in range(Nq)]


TILE_KINDS = ("empty", "full", "partial")


def mask_tile(mk, r0, nr, c0, nc):
    """fl_mask_tile: 'empty' (skipped), 'full' or 'partial' for a tile of rows and keys."""
    return TILE_KINDS[_lib.fl_mask_tile(C.byref(mk), r0, nr, c0, nc)]


def kv_head(h, Hq, Hkv):
    """fl_kv_head: the K/V head query head h reads (FlashAttention's consecutive grouping)."""
    _ok(_lib.fl_heads_check(Hq, Hkv))
    return _lib.fl_kv_head(h, Hq, Hkv)


def cu_seqlens_check(cu, batch, total, opt="cu_seqlens"):
    """fl_cu_seqlens_check: raises FlashlabError naming the rule cu breaks."""
    arr = (C.c_int64 * max(1, len(cu)))(*cu)
    _ok(_lib.fl_cu_seqlens_check(opt.encode(), arr, len(cu), batch, total))


# ----------------------------------------------------------------------------------------------
# The CLI (for what it prints) and the trace

def cli_path():
    return _find("FLASHLAB_CLI", "flashlab")


def cli(*args, check=True):
    """Runs `flashlab ARGS...`; returns stdout.  With check, a nonzero exit raises FlashlabError
    carrying the CLI's one-line message."""
    p = subprocess.run([str(cli_path()), *map(str, args)], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise FlashlabError(p.returncode, p.stderr.strip())
    return p.stdout


def trace(algo="classic", N=64, d=8, M=384, **opts):
    """The events of `flashlab trace` as a list of dicts (numbers as ints).  opts: Br, Bc, Nk,
    causal='bottom-right', window=(L, R), pass_='bwd', max_events, compute=True."""
    args = ["trace", "--algo", algo, "--N", N, "--d", d, "--M", M]
    for k, v in opts.items():
        if k == "compute":
            args += ["--compute"] if v else []
        elif k == "window":
            args += ["--window", f"{v[0]},{v[1]}"]
        else:
            args += ["--" + k.rstrip("_").replace("_", "-"), v]
    rows = list(csv.DictReader(io.StringIO(cli(*args))))
    for r in rows:
        for k, v in r.items():
            if k not in ("algo", "event", "tensor", "buf"):
                r[k] = int(v)
    return rows


# ----------------------------------------------------------------------------------------------
# Checks in the notebooks

def check(cid, problems, skip=None):
    """Prints one line the runner reads: 'CHECK cid: PASS' when problems is empty, else
    'CHECK cid: FAIL' followed by what is wrong, one line per problem.  skip (a reason) prints
    'CHECK cid: SKIP' instead: only for a check whose data does not exist on this machine (no
    recorded GPU data), never for a wrong answer.  Returns None (so a notebook cell ending in a
    check shows only the printed lines)."""
    if skip:
        print(f"CHECK {cid}: SKIP")
        print("  - " + skip)
        return
    if isinstance(problems, str):
        problems = [problems]
    problems = [p for p in problems if p]
    if not problems:
        print(f"CHECK {cid}: PASS")
    else:
        print(f"CHECK {cid}: FAIL")
        for p in problems:
            print("  - " + p)


def close(a, b, rel=1e-9):
    """|a - b| <= rel * max(1, |b|): answers computed by hand with doubles."""
    return a is not None and abs(a - b) <= rel * max(1.0, abs(b))


# ----------------------------------------------------------------------------------------------
# The structure check (ctest: notebooks_abi)

def _abi_python():
    out = {}
    for name, st in (("fl_problem", Problem), ("fl_blocks", Blocks), ("fl_counts", Counts),
                     ("fl_tensor_counts", TensorCounts), ("fl_result", Result),
                     ("fl_event", Event), ("fl_tensor", TensorStruct), ("fl_buf", BufStruct),
                     ("fl_mask", MaskStruct)):
        out[name] = {"sizeof": C.sizeof(st)}
        for f, _ in st._fields_:
            out[name][f.rstrip("_")] = getattr(st, f).offset
    return out


def check_abi(abi_program):
    """Compares the ctypes layouts with the C compiler's (the abi program prints JSON).
    Returns a list of mismatches (empty when they agree)."""
    c = json.loads(subprocess.run([abi_program], capture_output=True, text=True, check=True).stdout)
    py = _abi_python()
    bad = []
    for st, fields in c.items():
        for f, v in fields.items():
            if py.get(st, {}).get(f) != v:
                bad.append(f"{st}.{f}: C says {v}, flashlab.py says {py.get(st, {}).get(f)}")
    for st, fields in py.items():
        for f in fields:
            if f not in c.get(st, {}):
                bad.append(f"{st}.{f}: in flashlab.py but not reported by the C side")
    return bad


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--check-abi":
        bad = check_abi(sys.argv[2])
        for b in bad:
            print("ABI mismatch:", b)
        print("flashlab.py structures", "DIFFER from" if bad else "match", "the C headers")
        sys.exit(1 if bad else 0)
    print(__doc__)
