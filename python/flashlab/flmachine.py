"""flmachine.py: the machine a student's schedule programs, its values kept in the C machine.

A schedule is a function that receives a Chip `m` and the HBM tensors of its problem, and calls
the machine's operations: allocate and free SRAM buffers, load and store tiles (the only moves,
each element counted once: rules R1, R2), and compute on the buffers with the tile ops below
(free: rule R3).  Values never come back to the schedule: a Buf is a handle (name, rows, cols),
and what a schedule computed is seen only after it stored it to HBM and returned (the outputs of
run()).  So a schedule's traffic, SRAM peak and result are what the machine saw: a two-pass
softmax loads its scores twice and its count says so, and a row of scores cannot sit in a Python
list.

    def my_schedule(m, S, V, O):                    # S: 1 x n scores, V: n x dv, O: 1 x dv
        s, v = m.alloc("s", 1, 4), m.alloc("v", 4, 2)
        ...
        m.load(s, S, 0, 0, 1, 4)                    # tile (r0, c0, nr, nc) of S into s
        m.max_rescale(mx, s, 1, 4, l, o)            # running max absorbs s; l, o rescaled
        ...
        m.store(o, O, 0, 0, 1, 2)

    r = flmachine.run(my_schedule, M=20, inputs={"S": [[1, 2, 3, 0]], "V": [[1, 0]] * 4},
                      outputs={"O": (1, 2)})
    r.outputs["O"], r.counts, r.sram_peak, r.events

The tile ops (top-left tiles of buffers; a "row vector" is a buffer whose first column holds one
value per row; -inf is a masked score):

    m.fill(b, value, nr=None, nc=None)            b[:nr, :nc] = value (default: all of b)
    m.copy(dst, src, nr, nc)                      dst[:nr, :nc] = src[:nr, :nc]
    m.matmul(C, A, B, nr, nc, k, transpose_b=False, alpha=1.0, accumulate=False)
                                                  C[:nr, :nc] (+)= alpha A[:nr, :k] B[:k, :nc]
                                                  (B[:nc, :k] transposed with transpose_b)
    m.row_max(dst, src, nr, nc, accumulate=False) dst[r] = max of row r of src (max with dst)
    m.row_sum(dst, src, nr, nc, accumulate=False) dst[r] = sum of row r of src (+ dst)
    m.exp_diff(dst, x, mx, nr, nc)                dst[r, c] = exp(x[r, c] - mx[r]) (0 where -inf)
    m.scale_rows(dst, f, nr, nc)                  dst[r, c] *= f[r]
    m.div_rows(dst, l, nr, nc)                    dst[r, c] /= l[r]  (0 where l[r] = 0: rule M0)
    m.lse(dst, mx, l, nr)                         dst[r] = mx[r] + log(l[r])  (-inf where l = 0)
    m.max_rescale(mx, s, nr, nc, *acc)            mx[r] = max(mx[r], max of row r of s), and each
                                                  buffer of acc has its row r multiplied by
                                                  e^(old mx[r] - new mx[r]) (eq. (OS))
    m.mask(s, q0, k0, nr, nc, row=0)              s[row + i, j] = -inf where the problem's mask
                                                  drops query q0 + i, key k0 + j
    m.tile_kind(q0, nr, k0, nc)                   'empty', 'full' or 'partial' under that mask

load and store take row=... too: the tile goes to (comes from) rows row, row + 1, ... of the
buffer (a GQA group's query tiles stacked in one buffer).  Every call is checked by the C side
(include/flashlab/ops.h, fl_tile_*): a buffer that is freed or another machine's, a tile larger
than its buffer, an operand that is also the op's output where that would read overwritten values
(a FlashlabError naming the op, the buffer and the rule; nothing changes).

A Chip talks to its machine through one method, backend.do(op, args) with plain values: here a
LocalChip (the C machine in this process, loaded only when one is made); in the grader the same
Chip forwards each operation to the grader's own process, where the machine and its values live.
"""
import math
import numbers

OPS = ("alloc", "free", "load", "store", "fill", "copy", "matmul", "row_max", "row_sum", "exp_diff",
       "scale_rows", "div_rows", "lse", "max_rescale", "mask", "tile_kind", "info")


class MachineError(RuntimeError):
    """What a Chip refuses on its own side (a handle of another machine, a wrong type); the
    machine's own refusals are flashlab.FlashlabError."""


def _whole(name, v):
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise MachineError(f"{name} = {v!r}: must be an integer (got {type(v).__name__})")
    return int(v)


def _real(name, v):
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise MachineError(f"{name} = {v!r}: must be a number (got {type(v).__name__})")
    return float(v)


def _flag(name, v):
    if not isinstance(v, bool):
        raise MachineError(f"{name} = {v!r}: must be True or False")
    return v


class Buf:
    """An SRAM buffer of a Chip: a handle (name, rows, cols), never its values."""
    __slots__ = ("chip", "id", "name", "rows", "cols")

    def __init__(self, chip, bid, name, rows, cols):
        self.chip, self.id, self.name, self.rows, self.cols = chip, bid, name, rows, cols

    def __repr__(self):
        return f"<SRAM buffer {self.name} {self.rows}x{self.cols}>"


class Tensor:
    """An HBM tensor of a Chip: a handle (name, rows, cols); its values are moved by load/store."""
    __slots__ = ("chip", "name", "rows", "cols")

    def __init__(self, chip, name, rows, cols):
        self.chip, self.name, self.rows, self.cols = chip, name, rows, cols

    def __repr__(self):
        return f"<HBM tensor {self.name} {self.rows}x{self.cols}>"


class Chip:
    """The machine as a schedule sees it: the operations of the module's docstring, each one call
    of backend.do(op, args).  M is the SRAM capacity in elements."""

    def __init__(self, backend):
        self._b = backend
        self.M = backend.do("info", [])["M"]

    # -- handles
    def _buf(self, what, b):
        if not isinstance(b, Buf):
            raise MachineError(f"{what}: expected an SRAM buffer (what m.alloc returns), got {type(b).__name__}")
        if b.chip is not self:
            raise MachineError(f"{what}: buffer {b.name} belongs to another machine")
        return b.id

    def _tensor(self, t):
        if not isinstance(t, Tensor):
            raise MachineError(f"expected an HBM tensor of the problem, got {type(t).__name__}")
        if t.chip is not self:
            raise MachineError(f"tensor {t.name} belongs to another machine")
        return t.name

    def tensor(self, name, rows, cols):
        """The handle of the problem's HBM tensor `name` (made by whoever made the machine)."""
        return Tensor(self, name, rows, cols)

    # -- SRAM and moves
    def alloc(self, name, rows, cols):
        """An SRAM buffer of rows x cols elements; refused (FlashlabError) past M."""
        if not isinstance(name, str):
            raise MachineError(f"buffer name {name!r}: must be a string")
        rows, cols = _whole("rows", rows), _whole("cols", cols)
        return Buf(self, self._b.do("alloc", [name, rows, cols]), name, rows, cols)

    def free(self, b):
        self._b.do("free", [self._buf("free", b)])

    def load(self, b, tensor, r0, c0, nr, nc, row=0):
        """HBM -> SRAM: the nr x nc tile at (r0, c0) of tensor into rows row.. of b (R1)."""
        self._b.do("load", [self._buf("load", b), self._tensor(tensor), *self._ints(r0=r0, c0=c0, nr=nr, nc=nc, row=row)])

    def store(self, b, tensor, r0, c0, nr, nc, row=0):
        """SRAM -> HBM: the nr x nc tile at rows row.. of b to (r0, c0) of tensor (R2)."""
        self._b.do("store", [self._buf("store", b), self._tensor(tensor), *self._ints(r0=r0, c0=c0, nr=nr, nc=nc, row=row)])

    @staticmethod
    def _ints(**kw):
        return [_whole(k, v) for k, v in kw.items()]

    # -- tile ops (rule R3: not counted)
    def fill(self, b, value, nr=None, nc=None):
        nr = b.rows if nr is None and isinstance(b, Buf) else nr
        nc = b.cols if nc is None and isinstance(b, Buf) else nc
        self._b.do("fill", [self._buf("fill", b), _real("value", value), *self._ints(nr=nr, nc=nc)])

    def copy(self, dst, src, nr, nc):
        self._b.do("copy", [self._buf("copy dst", dst), self._buf("copy src", src), *self._ints(nr=nr, nc=nc)])

    def matmul(self, C, A, B, nr, nc, k, transpose_b=False, alpha=1.0, accumulate=False):
        self._b.do("matmul", [self._buf("matmul C", C), self._buf("matmul A", A), self._buf("matmul B", B),
                              *self._ints(nr=nr, nc=nc, k=k), _flag("transpose_b", transpose_b),
                              _real("alpha", alpha), _flag("accumulate", accumulate)])

    def row_max(self, dst, src, nr, nc, accumulate=False):
        self._b.do("row_max", [self._buf("row_max dst", dst), self._buf("row_max src", src),
                               *self._ints(nr=nr, nc=nc), _flag("accumulate", accumulate)])

    def row_sum(self, dst, src, nr, nc, accumulate=False):
        self._b.do("row_sum", [self._buf("row_sum dst", dst), self._buf("row_sum src", src),
                               *self._ints(nr=nr, nc=nc), _flag("accumulate", accumulate)])

    def exp_diff(self, dst, x, mx, nr, nc):
        self._b.do("exp_diff", [self._buf("exp_diff dst", dst), self._buf("exp_diff x", x),
                                self._buf("exp_diff mx", mx), *self._ints(nr=nr, nc=nc)])

    def scale_rows(self, dst, f, nr, nc):
        self._b.do("scale_rows", [self._buf("scale_rows dst", dst), self._buf("scale_rows f", f), *self._ints(nr=nr, nc=nc)])

    def div_rows(self, dst, l, nr, nc):
        self._b.do("div_rows", [self._buf("div_rows dst", dst), self._buf("div_rows l", l), *self._ints(nr=nr, nc=nc)])

    def lse(self, dst, mx, l, nr):
        self._b.do("lse", [self._buf("lse dst", dst), self._buf("lse mx", mx), self._buf("lse l", l),
                           _whole("nr", nr)])

    def max_rescale(self, mx, s, nr, nc, *rescale):
        self._b.do("max_rescale", [self._buf("max_rescale mx", mx), self._buf("max_rescale s", s),
                                   *self._ints(nr=nr, nc=nc), [self._buf("max_rescale", b) for b in rescale]])

    def mask(self, s, q0, k0, nr, nc, row=0):
        self._b.do("mask", [self._buf("mask", s), *self._ints(q0=q0, k0=k0, nr=nr, nc=nc, row=row)])

    def tile_kind(self, q0, nr, k0, nc):
        """'empty' (the mask keeps nothing: skip the tile), 'full' or 'partial' (mask it)."""
        return self._b.do("tile_kind", self._ints(q0=q0, nr=nr, k0=k0, nc=nc))

    # -- what the machine has counted so far
    @property
    def reads(self):
        return self._b.do("info", [])["reads"]

    @property
    def writes(self):
        return self._b.do("info", [])["writes"]

    @property
    def sram_used(self):
        return self._b.do("info", [])["sram_used"]

    @property
    def sram_peak(self):
        return self._b.do("info", [])["sram_peak"]

    def counts(self):
        """{tensor: (reads, writes)} so far."""
        return {k: tuple(v) for k, v in self._b.do("info", [])["counts"].items()}


# ----------------------------------------------------------------------------------------------
# The machine in this process (the trusted side: the notebook's own runs, and the grader's)

PROTOTYPES = """
fl_status fl_tile_load(fl_machine *m, fl_buf *b, int64_t brow, int t, int64_t r0, int64_t c0, int64_t nr, int64_t nc);
fl_status fl_tile_store(fl_machine *m, const fl_buf *b, int64_t brow, int t, int64_t r0, int64_t c0, int64_t nr, int64_t nc);
fl_status fl_tile_fill(fl_machine *m, fl_buf *b, int64_t nr, int64_t nc, double v);
fl_status fl_tile_copy(fl_machine *m, fl_buf *dst, const fl_buf *src, int64_t nr, int64_t nc);
fl_status fl_tile_matmul(fl_machine *m, fl_buf *C, const fl_buf *A, const fl_buf *B, int64_t mm, int64_t n, int64_t k, int transB, double alpha, int accumulate);
fl_status fl_tile_row_max(fl_machine *m, fl_buf *dst, const fl_buf *src, int64_t nr, int64_t nc, int accumulate);
fl_status fl_tile_row_sum(fl_machine *m, fl_buf *dst, const fl_buf *src, int64_t nr, int64_t nc, int accumulate);
fl_status fl_tile_exp_diff(fl_machine *m, fl_buf *dst, const fl_buf *x, const fl_buf *mx, int64_t nr, int64_t nc);
fl_status fl_tile_scale_rows(fl_machine *m, fl_buf *dst, const fl_buf *f, int64_t nr, int64_t nc);
fl_status fl_tile_div_rows(fl_machine *m, fl_buf *dst, const fl_buf *l, int64_t nr, int64_t nc);
fl_status fl_tile_lse(fl_machine *m, fl_buf *dst, const fl_buf *mx, const fl_buf *l, int64_t nr);
fl_status fl_tile_max_rescale(fl_machine *m, fl_buf *mx, const fl_buf *s, int64_t nr, int64_t nc, fl_buf *const *rescale, int nrescale);
fl_status fl_tile_keep(fl_machine *m, fl_buf *b, int64_t nr, int64_t nc, const unsigned char *keep, int64_t keep_len);
int fl_buf_owned(const fl_machine *m, const fl_buf *b);
"""

_C = None


def _c():
    """The fl_tile_* functions, declared on first use (flashlab, and with it the C library and
    ctypes, are loaded only by a LocalChip)."""
    global _C
    if _C is None:
        import ctypes
        import flashlab as fl
        types = dict(fl._CTYPE)
        types["fl_buf const **"] = ctypes.POINTER(ctypes.POINTER(fl.BufStruct))
        types["const unsigned char *"] = ctypes.POINTER(ctypes.c_ubyte)
        _C = fl._declare(PROTOTYPES, types)
    return _C


class LocalChip:
    """The C machine in this process, driven by do(op, args): every argument checked here (types,
    handles) and by the C side (buffers, tiles, aliases).  Buffers are numbered; tensors named.
    mask: (Nq, Nk, causal, left, right) of the problem, for the ops mask and tile_kind.  The owner
    (not the schedule) adds tensors, writes inputs and reads outputs through .machine (a
    flashlab.Machine); events holds every load, store, alloc and free; ops counts each op."""

    def __init__(self, M, mode="compute", name="my schedule", mask=None):
        import flashlab as fl
        self._fl = fl
        self.machine = fl.Machine(M, mode=mode, name=name)
        self.events, self.ops, self._bufs, self._next = [], {}, {}, 0
        self.machine.set_trace(self.events.append)
        self._mk = fl.mask(*mask) if mask is not None else None

    def close(self):
        self.machine.close()

    def add_tensor(self, name, rows, cols, elem_bytes=2, values=None):
        t = self.machine.tensor(name, rows, cols, elem_bytes=elem_bytes)
        if values is not None:
            t.write(values)
        return t

    def _b(self, bid):
        fl = self._fl
        b = self._bufs.get(bid) if isinstance(bid, int) and not isinstance(bid, bool) else None
        if b is None or not b.live:
            fl._fail(f"buffer {bid!r}: not a live SRAM buffer of this machine (freed, or never allocated)")
        return b._c()

    def _t(self, name):
        t = self.machine.tensors.get(name) if isinstance(name, str) else None
        if t is None:
            self._fl._fail(f"tensor {name!r}: the problem has no such HBM tensor "
                           f"(it has {', '.join(self.machine.tensors)})")
        return t.id

    def do(self, op, args):
        """One operation of the Chip's vocabulary with plain arguments; returns plain values."""
        fl = self._fl
        if op not in OPS:
            fl._fail(f"operation {op!r}: the machine's operations are {', '.join(OPS)}")
        if not isinstance(args, list):
            fl._fail(f"{op}: arguments must be a list")
        self.ops[op] = self.ops.get(op, 0) + 1
        fn = getattr(self, "_" + op)
        try:
            import inspect
            inspect.signature(fn).bind(*args)
        except TypeError as e:
            fl._fail(f"{op}: {e}")
        return fn(*args)

    def _call(self, fn, *args):
        """fl_tile_<fn>(machine, *args) under the machine's lock; FlashlabError when it fails."""
        with self.machine._use() as h:
            self.machine._after(_c()["fl_tile_" + fn](h, *args))

    def _alloc(self, name, rows, cols):
        b = self.machine.alloc(name, rows, cols)
        self._next += 1
        self._bufs[self._next] = b
        return self._next

    def _free(self, bid):
        self._b(bid)
        self.machine.free(self._bufs.pop(bid))

    def _move(self, fn, bid, tensor, r0, c0, nr, nc, row):
        fl = self._fl
        args = [fl._int(k, v) for k, v in (("r0", r0), ("c0", c0), ("nr", nr), ("nc", nc))]
        self._call(fn, self._b(bid), fl._int("row", row), self._t(tensor), *args)

    def _load(self, bid, tensor, r0, c0, nr, nc, row=0):
        self._move("load", bid, tensor, r0, c0, nr, nc, row)

    def _store(self, bid, tensor, r0, c0, nr, nc, row=0):
        self._move("store", bid, tensor, r0, c0, nr, nc, row)

    def _fill(self, bid, v, nr, nc):
        fl = self._fl
        self._call("fill", self._b(bid), fl._int("nr", nr), fl._int("nc", nc), fl._real("value", v))

    def _copy(self, dst, src, nr, nc):
        fl = self._fl
        self._call("copy", self._b(dst), self._b(src), fl._int("nr", nr), fl._int("nc", nc))

    def _matmul(self, C, A, B, nr, nc, k, transpose_b, alpha, accumulate):
        fl = self._fl
        self._call("matmul", self._b(C), self._b(A), self._b(B), fl._int("nr", nr),
                                           fl._int("nc", nc), fl._int("k", k), int(_flag("transpose_b", transpose_b)),
                                           fl._real("alpha", alpha), int(_flag("accumulate", accumulate)))

    def _reduce(self, fn, dst, src, nr, nc, accumulate):
        fl = self._fl
        self._call(fn, self._b(dst), self._b(src), fl._int("nr", nr), fl._int("nc", nc),
                             int(_flag("accumulate", accumulate)))

    def _row_max(self, dst, src, nr, nc, accumulate):
        self._reduce("row_max", dst, src, nr, nc, accumulate)

    def _row_sum(self, dst, src, nr, nc, accumulate):
        self._reduce("row_sum", dst, src, nr, nc, accumulate)

    def _exp_diff(self, dst, x, mx, nr, nc):
        fl = self._fl
        self._call("exp_diff", self._b(dst), self._b(x), self._b(mx), fl._int("nr", nr),
                                             fl._int("nc", nc))

    def _rows(self, fn, dst, f, nr, nc):
        fl = self._fl
        self._call(fn, self._b(dst), self._b(f), fl._int("nr", nr), fl._int("nc", nc))

    def _scale_rows(self, dst, f, nr, nc):
        self._rows("scale_rows", dst, f, nr, nc)

    def _div_rows(self, dst, l, nr, nc):
        self._rows("div_rows", dst, l, nr, nc)

    def _lse(self, dst, mx, l, nr):
        self._call("lse", self._b(dst), self._b(mx), self._b(l), self._fl._int("nr", nr))

    def _max_rescale(self, mx, s, nr, nc, rescale):
        import ctypes
        fl = self._fl
        if not isinstance(rescale, list):
            fl._fail("max_rescale: the buffers to rescale must be a list")
        ptrs = [self._b(b) for b in rescale]
        arr = (ctypes.POINTER(fl.BufStruct) * max(1, len(ptrs)))(*ptrs)
        self._call("max_rescale", self._b(mx), self._b(s), fl._int("nr", nr),
                                                fl._int("nc", nc), arr, len(ptrs))

    def _mask_of(self, what):
        if self._mk is None:
            self._fl._fail(f"{what}: this problem has no mask")
        return self._mk

    def _mask(self, bid, q0, k0, nr, nc, row=0):
        import ctypes
        fl = self._fl
        mk = self._mask_of("mask")
        q0, k0, nr, nc, row = (fl._int(k, v) for k, v in (("q0", q0), ("k0", k0), ("nr", nr), ("nc", nc), ("row", row)))
        if row < 0 or nr < 1 or nc < 1 or q0 < 0 or k0 < 0 or q0 + nr > mk.Nq or k0 + nc > mk.Nk:
            fl._fail(f"mask: queries {q0}..{q0 + nr - 1} x keys {k0}..{k0 + nc - 1} (from buffer row {row}) "
                     f"lie outside the {mk.Nq} x {mk.Nk} mask")
        keep = [1] * (row * nc) + [int(fl.mask_keep(mk, q0 + i, k0 + j)) for i in range(nr) for j in range(nc)]
        arr = (ctypes.c_ubyte * len(keep))(*keep)
        self._call("keep", self._b(bid), row + nr, nc, arr, len(keep))

    def _tile_kind(self, q0, nr, k0, nc):
        return self._fl.mask_tile(self._mask_of("tile_kind"), q0, nr, k0, nc)

    def _info(self):
        m = self.machine
        return {"M": m.capacity, "reads": m.reads, "writes": m.writes, "sram_used": m.sram_used,
                "sram_peak": m.sram_peak, "counts": {k: list(v) for k, v in m.counts().items()}}


class Result:
    """What run() saw: outputs {name: rows} (compute mode), counts {tensor: (reads, writes)},
    reads, writes, total, sram_peak, events (loads, stores, allocs, frees in order), ops {op: calls}."""

    def __init__(self, chip, outputs):
        m = chip.machine
        self.counts = m.counts()
        self.reads, self.writes = m.reads, m.writes
        self.total = self.reads + self.writes
        self.sram_peak, self.M = m.sram_peak, m.capacity
        self.events, self.ops = list(chip.events), dict(chip.ops)
        self.outputs = {n: m.tensors[n].read() for n in outputs} if m.mode == "compute" else {}

    def __repr__(self):
        return f"<run: reads={self.reads} writes={self.writes} SRAM peak {self.sram_peak} of {self.M}>"


def _shape(name, v):
    """(rows, cols, values or None, elem_bytes) of a tensor spec: a list of rows, or (rows, cols)
    or (rows, cols, elem_bytes)."""
    if isinstance(v, tuple) and 2 <= len(v) <= 3 and all(isinstance(x, int) for x in v):
        return v[0], v[1], None, v[2] if len(v) == 3 else 2
    rows = [list(r) for r in v]
    return len(rows), len(rows[0]) if rows else 0, rows, 2


def run(schedule, M, inputs, outputs, *args, mode="compute", mask=None, name="my schedule"):
    """Runs schedule(m, *tensors, *args) on a fresh machine of capacity M and returns a Result.
    inputs and outputs map tensor names to a list of rows (written before the run; compute mode)
    or a shape (rows, cols) or (rows, cols, elem_bytes); the schedule receives the tensors in that
    order, inputs first.  mask = (Nq, Nk, causal, left, right) for m.mask and m.tile_kind.
    Anything the schedule raises is raised here, after the machine is freed."""
    local = LocalChip(M, mode=mode, name=name, mask=mask)
    try:
        handles = []
        m = Chip(local)
        for spec in (inputs, outputs):
            for n, v in spec.items():
                rows, cols, values, eb = _shape(n, v)
                local.add_tensor(n, rows, cols, eb, values if mode == "compute" else None)
                handles.append(m.tensor(n, rows, cols))
        schedule(m, *handles, *args)
        return Result(local, outputs)
    finally:
        local.close()


# ----------------------------------------------------------------------------------------------
# The exact reference with a mask (reference/attention_ref.h with reference/ref_mask.h's rule)

def _ref_mask_type():
    import ctypes
    class RefMask(ctypes.Structure):   # fl_ref_mask (checked by STRUCT_CHECKS)
        _fields_ = [("Nq", ctypes.c_int64), ("Nk", ctypes.c_int64), ("causal", ctypes.c_int),
                    ("left", ctypes.c_int64), ("right", ctypes.c_int64)]
    return RefMask


STRUCT_CHECKS = """#include "ref_mask.h"
#include <stddef.h>
_Static_assert(sizeof(fl_ref_mask) == 40 && offsetof(fl_ref_mask, Nk) == 8 && offsetof(fl_ref_mask, causal) == 16
               && offsetof(fl_ref_mask, left) == 24 && offsetof(fl_ref_mask, right) == 32, "fl_ref_mask changed");
int (*const flmachine_keep)(int64_t, int64_t, const void *) = fl_ref_keep;
"""


def reference(Q, K, V, causal="none", scale=None):
    """The exact reference (fl_ref_attention) of one head under the causal rule of the oracle's
    own mask (fl_ref_keep): (O, L) for lists of rows Q (Nq x d), K (Nk x d), V (Nk x dv); scale
    defaults to 1/sqrt(d)."""
    import ctypes
    import flashlab as fl
    q, nq, d = fl._matrix("Q", Q)
    k, nk, _ = fl._matrix("K", K, d)
    v, nv, dv = fl._matrix("V", V)
    if nv != nk:
        fl._fail(f"V: {nv} rows, K has {nk}")
    mk = _ref_mask_type()(nq, nk, fl.CAUSAL[fl._choice("causal", causal, tuple(fl.CAUSAL))], -1, -1)
    keep = ctypes.cast(fl._lib.fl_ref_keep, ctypes.c_void_p)
    O, L = (ctypes.c_double * (nq * dv))(), (ctypes.c_double * nq)()
    s = 1.0 / math.sqrt(d) if scale is None else fl._real("scale", scale)
    fl._ok(fl._fn["fl_ref_attention"](nq, nk, d, dv, fl._doubles(q), fl._doubles(k), fl._doubles(v), s,
                                      keep, ctypes.cast(ctypes.pointer(mk), ctypes.c_void_p), O, L))
    o = O[:]
    return [o[i * dv:(i + 1) * dv] for i in range(nq)], L[:]


def check_prototypes(cc, include_dirs):
    """Compiles PROTOTYPES and STRUCT_CHECKS against the headers (flashlab.check_prototypes): []
    when they match."""
    import flashlab as fl
    return fl.check_prototypes(cc, include_dirs, PROTOTYPES, STRUCT_CHECKS)


if __name__ == "__main__":
    import sys
    a = sys.argv[1:]
    if len(a) == 4 and a[0] == "--cc" and a[2] == "--include-dirs":
        bad = check_prototypes(a[1], a[3].split("|"))
        for b in bad:
            print("prototype:", b)
        print(f"flmachine.py: {len(PROTOTYPES.strip().splitlines())} prototypes",
              "DIFFER from" if bad else "match", "the C headers")
        sys.exit(1 if bad else 0)
    print(__doc__)
