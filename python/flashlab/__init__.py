"""flashlab: a thin ctypes binding over libflashlab.so, for scripts and the course labs.

Nothing of the model lives here: every count comes from the C machine (machine.h), every
schedule from fl_run (run.h), every online-softmax step from fl_osm_step (ops.h).  This file
converts and checks arguments, converts results, and runs the `flashlab` CLI for the commands
that print (example, count --explain, trace, optimize).

Safety contract.  Every failure is a FlashlabError (a RuntimeError) carrying the C library's own
one-line message where the library produced it, else a line naming the argument and the rule:
integers are range-checked here before they reach ctypes (int64, uint64, C int; a bool is not
an integer), names (algo, causal, pass, mode) are checked against the choices, array lengths are
checked against the sizes they go with, a closed Machine (and its tensors and buffers) refuses
every call, a buffer or tensor of another machine (or one made by hand) is refused, text with
no UTF-8 form (a lone surrogate) is refused, and an exception raised by a trace callback stops
the caller's run at the next event and is re-raised to the caller (the run's result is
discarded).  No input reaches C that the C side could read out of bounds.  Objects that own C
memory or point into it (Machine, Tensor, Buffer) refuse copy, deepcopy and pickle (a copy would
free it twice); an OsmState is copied deeply.  Their sizes and names are fixed at creation
(setting dv, id, name or mode is refused).  A Machine's calls hold its lock (calls from several
threads take turns; a close from another thread waits for the running call), and close() or
set_trace() from its own trace callback is refused.  A FLASHLAB_LIB that is not libflashlab is
a FlashlabError at import.  tests/hostile/binding.py checks each of these, also under the
sanitizer build (its --sanitizer-runtime).

Where the library is found: $FLASHLAB_LIB; else libflashlab.so beside this file (the installed
package: pip install, docs/install.md); else, in the repository (python/flashlab/), build*/src/
or build*/.  The CLI: $FLASHLAB_CLI, a `flashlab` beside this file, or
build*/flashlab.  The figure style and the recorded GPU data: figures/ beside this file (the
installed package), else the repository's figures/.  The package also holds flmachine (the
machine a student's schedule programs), labkit (the labs' checks) and __main__ (python -m
flashlab runs the CLI).

The ctypes structures mirror machine.h, problem.h, run.h and masks.h, and every C function is
declared once, as its C prototype (PROTOTYPES below), from which the ctypes signature is derived.
`python3 -m flashlab.abi ABI_PROGRAM [--cc CC --include-dirs D1|D2]` (abi.py) compares the
structures' sizes, field offsets and field sizes with the C compiler's (notebooks/abi.c) and, with
--cc, compiles the prototypes against the headers (a changed signature is a compile error).

Quick tour:
    import flashlab as fl
    r = fl.run("flash2", N=1024, d=64, M=98304)        # count-only machine
    r.total, r.tensors["K"], r.Br, r.closed_total
    with fl.Machine(M=1000) as m:                      # your own schedule, by hand
        Q = m.tensor("Q", 64, 8); buf = m.alloc("Q_i", 16, 8)
        m.load(buf, Q, 0, 0, 16, 8); m.reads           # -> 128
"""
import contextlib
import csv
import ctypes as C
import io
import json
import math
import numbers
import os
import pathlib
import re
import subprocess
import threading
from collections import namedtuple

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent   # the repository, where this is python/flashlab/
STATUS = {0: "ok", 1: "invalid argument", 2: "capacity exceeded", 3: "overflow",
          4: "out of memory", 5: "i/o error", 6: "out of bounds", 7: "stopped by the trace callback"}


class FlashlabError(RuntimeError):
    """A call into flashlab failed.  .status is the fl_status code (1, invalid argument, for a
    refusal made here before calling C), .kind its name, str() the one-line message."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.kind = STATUS.get(status, "error")


def _fail(message, status=1):
    raise FlashlabError(status, message)


def _utf8(what, v):
    """v as UTF-8 bytes for C; a string that has none (a lone surrogate) is refused."""
    try:
        return v.encode()
    except UnicodeEncodeError:
        _fail(f"{what} {v!r}: not valid text (a lone surrogate has no UTF-8 form)")


class _Fixed:
    """Public attributes fixed at creation: setting or deleting one is refused (an OsmState's dv,
    a tensor's id, a machine's mode).  Sizes that C reads must not change under it."""

    def __setattr__(self, k, v):
        if not k.startswith("_"):
            _fail(f"{type(self).__name__}.{k} is fixed at creation; make a new {type(self).__name__}")
        object.__setattr__(self, k, v)

    def __delattr__(self, k):
        if not k.startswith("_"):
            _fail(f"{type(self).__name__}.{k} is fixed at creation")
        object.__delattr__(self, k)


class _OwnsC(_Fixed):
    """Objects that own C memory or point into it (Machine, Tensor, Buffer): a copy would share
    it, so that closing one copy frees what the other still uses (or both free it at exit).
    copy.copy, copy.deepcopy and pickle are refused."""

    def __copy__(self):
        _fail(f"a {type(self).__name__} owns C memory and cannot be copied; create a new one")

    def __deepcopy__(self, memo):
        self.__copy__()

    def __reduce_ex__(self, protocol):
        _fail(f"a {type(self).__name__} owns C memory and cannot be pickled; save its counts or values instead")


# ----------------------------------------------------------------------------------------------
# Finding the library, the CLI and the figure files

def _in_repository(root):
    return (root / "CMakeLists.txt").exists() and (root / "notebooks").is_dir()


def _find(env, names, builds):
    """$env, else the first of names beside this file, else the first build*/<rel> in the
    repository above this file.  Raises FlashlabError saying what was searched."""
    if os.environ.get(env):
        p = pathlib.Path(os.environ[env])
        if not p.exists():
            _fail(f"{env}={p}: no such file")
        return p
    for n in names:
        if (HERE / n).is_file():
            return HERE / n
    if _in_repository(ROOT):
        for build in sorted(ROOT.glob("build*")):
            for rel in builds:
                if (build / rel).is_file():
                    return build / rel
    _fail(f"{env} is not set, no {names[0]} is beside {HERE}, and no build*/{builds[0]} was found "
          f"in the repository: build flashlab first (cmake -S . -B build && cmake --build build -j2) "
          f"or set {env}")


def lib_path():
    return _find("FLASHLAB_LIB", ["libflashlab.so"],
                 ["src/libflashlab.so", "libflashlab.so"])


def cli_path():
    """The `flashlab` CLI: $FLASHLAB_CLI, beside this file, or build*/flashlab."""
    return _find("FLASHLAB_CLI", ["flashlab"], ["flashlab", "cli/flashlab"])


def figures_dir():
    """The folder holding style.gp (and the trace scripts): figures/ beside this file in the
    installed package, else the repository's figures/."""
    for d in (HERE / "figures", ROOT / "figures"):
        if (d / "style.gp").is_file():
            return d
    _fail(f"no figures/style.gp beside {HERE} or in {ROOT}: reinstall flashlab (pip install), "
          f"whose package holds them")


def data_dir():
    """The recorded measurements (gpu_*.csv): figures/data beside this file, else the
    repository's figures/data (which may not exist)."""
    for d in (HERE / "figures" / "data", ROOT / "figures" / "data"):
        if d.is_dir():
            return d
    return HERE / "figures" / "data"


LIB_PATH = lib_path()
try:
    _lib = C.CDLL(str(LIB_PATH))
except OSError as e:
    _fail(f"{LIB_PATH}: cannot be loaded as libflashlab ({e}); set FLASHLAB_LIB to the built "
          f"libflashlab.so")

# ----------------------------------------------------------------------------------------------
# Mirrors of the C structures (status.h, machine.h, problem.h, run.h, masks.h)

NAME_LEN = 16
MAX_TENSORS = 24
MAX_BUFS = 32
MODES = {"count": 0, "compute": 1}
CAUSAL = {"none": 0, "top-left": 1, "bottom-right": 2}
PASSES = {"fwd": 1, "bwd": 2, "fwd+bwd": 3}
EVENT_KINDS = ("load", "store", "alloc", "free")
TILE_KINDS = ("empty", "full", "partial")
INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1
UINT64_MAX = 2 ** 64 - 1
CINT_MIN, CINT_MAX = -2 ** 31, 2 ** 31 - 1


class _Field(C.Structure):   # fl_field (fields.h): one field of a structure, as data
    _fields_ = [("name", C.c_char_p), ("offset", C.c_size_t), ("size", C.c_size_t), ("kind", C.c_int)]


# fields.h's kinds (FL_FK_*), as ctypes: int, the schedule, int64, uint64, double, an int64 array,
# a pointer to an extension structure
_KIND_CTYPE = (C.c_int, C.c_int, C.c_int64, C.c_uint64, C.c_double, C.POINTER(C.c_int64), C.c_void_p)
_KIND_NAME = ("int", "algo", "int64", "uint64", "double", "array", "ext")


def _structure(cname, table_fn):
    """The ctypes structure of a C structure the library describes as data (fields.h): its fields
    in order, each of its kind's ctype, 'pass' as pass_ (a Python keyword); every offset and size
    checked against the library's, so this binding never restates a field by hand."""
    fn = getattr(_lib, table_fn)
    fn.restype, fn.argtypes = C.POINTER(_Field), [C.POINTER(C.c_int)]
    n = C.c_int()
    t = fn(C.byref(n))
    fields = [(t[i].name.decode(), t[i].kind, t[i].offset, t[i].size) for i in range(n.value)]
    st = type(cname, (C.Structure,), {"_fields_": [(f + "_" if f == "pass" else f, _KIND_CTYPE[k])
                                                   for f, k, _, _ in fields]})
    for f, k, off, size in fields:
        got = getattr(st, f + "_" if f == "pass" else f)
        if got.offset != off or got.size != size:
            _fail(f"{LIB_PATH}: {cname}.{f} is at {off} ({size} bytes) in the library, at {got.offset} "
                  f"({got.size}) here: the binding does not match this libflashlab")
    st.kinds = {f: _KIND_NAME[k] for f, k, _, _ in fields}
    return st


Problem = _structure("Problem", "fl_problem_fields")              # problem.h FL_PROBLEM_FIELDS
KvCache = _structure("KvCache", "fl_kv_cache_fields")             # decode.h FL_KV_CACHE_FIELDS
BlockSparsity = _structure("BlockSparsity", "fl_block_sparsity_fields")   # blocksparse_mask.h


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
                ("dk_rel_err", C.c_double), ("dv_rel_err", C.c_double), ("dsink_rel_err", C.c_double)]


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


TRACE_FN = C.CFUNCTYPE(C.c_int, C.POINTER(Event), C.c_void_p)

# ----------------------------------------------------------------------------------------------
# Every C function this file calls, as its C prototype.  The ctypes signature is derived from it;
# `--check-abi ... --cc CC` compiles these lines against the headers, so a signature changed in C
# is a compile error there instead of garbage here.

PROTOTYPES = """
const char *fl_version(void);
const char *fl_last_error(void);
const char *fl_last_error_raw(void);
const char *fl_algo_name(fl_algo a);
int fl_algos_all(const fl_problem *p, fl_algo *out);
unsigned fl_algo_flags(fl_algo a);
fl_problem fl_problem_default(void);
fl_kv_cache fl_kv_cache_default(void);
fl_block_sparsity fl_block_sparsity_default(void);
fl_status fl_run(const fl_problem *p, fl_mode mode, fl_trace_fn trace, void *trace_ctx, fl_result *r);
fl_status fl_blocks_choose(const fl_problem *p, fl_blocks *b);
fl_status fl_closed_form(const fl_problem *p, const fl_blocks *b, fl_counts *c);
int64_t fl_footprint(fl_algo a, int64_t d, int64_t Br, int64_t Bc, int64_t Bd);
int64_t fl_footprint_pass(fl_algo a, int bwd, int64_t G, int64_t d, int64_t Br, int64_t Bc, int64_t Bd);
fl_machine *fl_machine_alloc(int64_t M, fl_mode mode, const char *schedule);
void fl_machine_free(fl_machine *m);
void fl_machine_set_trace(fl_machine *m, fl_trace_fn fn, void *ctx);
fl_status fl_tensor_add(fl_machine *m, const char *name, int64_t rows, int64_t cols, int elem_bytes, int *id);
fl_tensor *fl_tensor_get(fl_machine *m, int id);
fl_status fl_sram_alloc(fl_machine *m, const char *name, int64_t rows, int64_t cols, fl_buf **out);
void fl_sram_free(fl_machine *m, fl_buf *b);
fl_status fl_load(fl_machine *m, fl_buf *b, int t, int64_t r0, int64_t c0, int64_t nr, int64_t nc);
fl_status fl_store(fl_machine *m, const fl_buf *b, int t, int64_t r0, int64_t c0, int64_t nr, int64_t nc);
int64_t fl_machine_reads(const fl_machine *m);
int64_t fl_machine_writes(const fl_machine *m);
int64_t fl_machine_sram_peak(const fl_machine *m);
int64_t fl_machine_sram_used(const fl_machine *m);
int64_t fl_machine_events(const fl_machine *m);
int64_t fl_machine_capacity(const fl_machine *m);
fl_status fl_osm_step_checked(double *m, double *l, double *u, int64_t u_len, int64_t dv, const double *s, int64_t s_len, const double *v, int64_t v_rows, int64_t ldv, double *p, int64_t p_len, double *a);
void fl_osm_finish(double l, const double *u, int64_t dv, double *out);
fl_status fl_osm_tiled_checked(const double *s, int64_t n, const double *V, int64_t v_len, int64_t dv, int64_t tile, double *out, int64_t out_len);
double fl_ref_softmax_row(const double *s, int64_t n, const double *V, int64_t dv, double *out);
fl_status fl_ref_attention(int64_t Nq, int64_t Nk, int64_t d, int64_t dv, const double *Q, const double *K, const double *V, double scale, fl_keep_fn keep, const void *ctx, double *O, double *L);
fl_status fl_mask_init(fl_mask *mk, int64_t Nq, int64_t Nk, fl_causal causal, int64_t left, int64_t right);
int fl_mask_keep(const fl_mask *mk, int64_t i, int64_t j);
fl_tile_kind fl_mask_tile(const fl_mask *mk, int64_t r0, int64_t nr, int64_t c0, int64_t nc);
int64_t fl_kv_head(int64_t h, int64_t Hq, int64_t Hkv);
fl_status fl_heads_check(int64_t Hq, int64_t Hkv);
fl_status fl_cu_seqlens_check(const char *opt, const int64_t *cu, int64_t n, int64_t batch, int64_t total);
"""

_P = C.POINTER
_CTYPE = {
    "void": None, "int": C.c_int, "int64_t": C.c_int64, "uint64_t": C.c_uint64,
    "double": C.c_double, "fl_status": C.c_int, "fl_algo": C.c_int, "fl_mode": C.c_int,
    "fl_causal": C.c_int, "fl_tile_kind": C.c_int, "fl_trace_fn": TRACE_FN,
    "fl_keep_fn": C.c_void_p, "const char *": C.c_char_p, "void *": C.c_void_p,
    "const void *": C.c_void_p, "fl_machine *": C.c_void_p, "const fl_machine *": C.c_void_p,
    "fl_problem": Problem, "const fl_problem *": _P(Problem), "fl_kv_cache": KvCache,
    "fl_block_sparsity": BlockSparsity, "fl_blocks *": _P(Blocks),
    "const fl_blocks *": _P(Blocks), "fl_counts *": _P(Counts), "fl_result *": _P(Result),
    "fl_tensor *": _P(TensorStruct), "fl_buf *": _P(BufStruct), "const fl_buf *": _P(BufStruct),
    "fl_buf **": _P(_P(BufStruct)), "int *": _P(C.c_int), "double *": _P(C.c_double),
    "const double *": _P(C.c_double), "const int64_t *": _P(C.c_int64),
    "fl_mask *": _P(MaskStruct), "const fl_mask *": _P(MaskStruct), "fl_algo *": _P(C.c_int),
    "unsigned": C.c_uint,
}
_PROTO = re.compile(r"^(.*?)\b(fl_\w+)\((.*)\);$")


def _c_type(decl, named=True):
    """The type of a C declaration: 'const double *s' -> 'const double *', 'fl_buf **out' ->
    'fl_buf **', 'int64_t n' -> 'int64_t' (named=False: the declaration is a bare type)."""
    toks = decl.replace("*", " * ").split()
    words = [t for t in toks if t != "*"]
    if named and len(words) > 1:
        words = words[:-1]
    stars = toks.count("*")
    return " ".join(words) + (" " + "*" * stars if stars else "")


def _declare(prototypes, ctype=None):
    """{name: ctypes function} for C prototypes, one a line; ctype maps each C type written there
    to its ctypes type (default _CTYPE; a module declaring more of the library's functions passes
    _CTYPE extended with its own types)."""
    ctype = _CTYPE if ctype is None else ctype
    fns = {}
    for line in prototypes.strip().splitlines():
        m = _PROTO.match(line.strip())
        ret, name, args = _c_type(m.group(1), named=False), m.group(2), m.group(3)
        params = [] if args.strip() == "void" else [_c_type(a) for a in args.split(",")]
        try:
            f = getattr(_lib, name)
        except AttributeError:
            _fail(f"{LIB_PATH} is not libflashlab, or not this version of it: it has no {name}")
        f.restype = ctype[ret]
        f.argtypes = [ctype[p] for p in params]
        fns[name] = f
    return fns


_fn = _declare(PROTOTYPES)


def _algo_names():
    names = []
    while _fn["fl_algo_name"](len(names)) is not None:
        names.append(_fn["fl_algo_name"](len(names)).decode())
    return tuple(names)


ALGO_MAX = 64   # FL_ALGO_MAX (problem.h; checked by check_abi): the most schedules a list holds


def _algos_all():
    out = (C.c_int * ALGO_MAX)()
    return tuple(ALGOS[out[i]] for i in range(_fn["fl_algos_all"](None, out)))


ALGOS = _algo_names()   # the schedules the library knows, in fl_algo order
CLASSIC = _algos_all()  # "all": the schedules compared side by side (the registry's flag)
DEFAULT = ALGOS[_fn["fl_problem_default"]().algo]   # the schedule of fl_problem_default()
SCHED_STACKS_GROUP = 4  # FL_SCHED_STACKS_GROUP (schedule.h; checked by check_abi)
__version__ = _fn["fl_version"]().decode()   # the loaded library's (version.h: one number)


# How the library's quantities (its messages' {name} tokens, status.h) are spelled here: as the
# keyword of this binding that sets them, where it is not the quantity's own name.
KEYWORDS = {"pass": "pass_", "pad": "pad_value", "dtype": "elem_bytes", "window": "window_left/window_right"}
_TOKEN = re.compile(r"\{\{|\}\}|\{([A-Za-z][A-Za-z0-9_]{0,62})\}")


def _last_error():
    """The library's last message, each quantity it names spelled as this binding's keyword."""
    raw = _fn["fl_last_error_raw"]().decode(errors="replace")
    return _TOKEN.sub(lambda m: KEYWORDS.get(m.group(1), m.group(1)) if m.group(1) else m.group(0)[0], raw)


def _ok(status):
    if status != 0:
        raise FlashlabError(status, _last_error())


# ----------------------------------------------------------------------------------------------
# Argument checks: everything is checked here before it reaches ctypes

def _int(name, v, lo=INT64_MIN, hi=INT64_MAX):
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        _fail(f"{name} = {v!r}: must be an integer (got {type(v).__name__})")
    v = int(v)
    if not lo <= v <= hi:
        _fail(f"{name} = {v}: must be between {lo} and {hi}")
    return v


def _u64(name, v):
    return _int(name, v, 0, UINT64_MAX)


def _cint(name, v, lo=CINT_MIN, hi=CINT_MAX):
    return _int(name, v, lo, hi)


def _real(name, v):
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        _fail(f"{name} = {v!r}: must be a real number (got {type(v).__name__})")
    return float(v)


def _choice(name, v, choices):
    if not isinstance(v, str) or v not in choices:
        _fail(f"{name} = {v!r}: must be one of {', '.join(choices)}")
    return v


def _algo(v):
    if isinstance(v, str):
        return ALGOS.index(_choice("algo", v, ALGOS))
    return _int("algo", v, 0, len(ALGOS) - 1)


def _name(what, v):
    if not isinstance(v, str) or not v or len(_utf8(f"{what} name", v)) >= NAME_LEN or "\0" in v or not v.isprintable():
        _fail(f"{what} name {v!r}: must be a printable string of 1 to {NAME_LEN - 1} bytes")
    return v


def _reals(name, xs):
    try:
        xs = list(xs)
    except TypeError:
        _fail(f"{name}: must be a list of numbers (got {type(xs).__name__})")
    return [_real(f"{name}[{i}]", x) for i, x in enumerate(xs)]


def _matrix(name, rows, width=None):
    """A list of equally long lists of numbers -> (flat list, nrows, ncols)."""
    try:
        rows = [list(r) for r in rows]
    except TypeError:
        _fail(f"{name}: must be a list of rows (lists of numbers)")
    if not rows:
        _fail(f"{name}: has no rows")
    w = len(rows[0]) if width is None else width
    flat = []
    for i, r in enumerate(rows):
        if len(r) != w or w < 1:
            _fail(f"{name}: row {i} has {len(r)} values, expected {w}")
        flat += _reals(f"{name}[{i}]", r)
    return flat, len(rows), w


def _doubles(xs):
    return (C.c_double * max(1, len(xs)))(*xs)


def _int64s(name, xs):
    try:
        xs = list(xs)
    except TypeError:
        _fail(f"{name}: must be a list of integers (got {type(xs).__name__})")
    return [_int(f"{name}[{i}]", x) for i, x in enumerate(xs)]


# ----------------------------------------------------------------------------------------------
# Runs of the project's schedules (fl_run)

_BASIC = ("algo", "N", "d", "M", "Br", "Bc", "seed", "elem_bytes")   # problem()'s own parameters
_CHOICES = {"causal": CAUSAL, "pass_": PASSES}                      # the enum fields, by name
# The variants: every other field of the problem and of its extensions (the lengths of arrays
# are set from the lists; an extension is attached when one of its fields is given, even at its
# default value: it asks for the schedule that reads it).  All from the library's field tables.
_EXT = {"kv_cache": KvCache, "block_mask": BlockSparsity}
_OWNER = {f: "" for f, k in Problem.kinds.items()
          if f not in _BASIC and k != "ext" and not f.endswith("_len")}
_OWNER = {("pass_" if f == "pass" else f): o for f, o in _OWNER.items()}
for _ext, _st in _EXT.items():
    _OWNER.update({f: _ext for f in _st.kinds if not f.endswith("_len")})
VARIANTS = tuple(_OWNER)


def _kind(owner, k):
    return (_EXT[owner] if owner else Problem).kinds["pass" if k == "pass_" else k]


def problem(algo=None, N=1024, d=64, M=98304, Br=0, Bc=0, seed=1, elem_bytes=2, **variants):
    """An fl_problem from fl_problem_default() with the given fields, each checked for type and
    range.  Variants (VARIANTS: Nk, causal='none'|'top-left'|'bottom-right', window_left,
    window_right, batch, heads, kv_heads, pass_='fwd'|'bwd'|'fwd+bwd', cu_seqlens_q /
    cu_seqlens_k / block_table as lists, decode's cache and blocksparse's mask fields, ...) are
    passed through; None leaves a field at its default.  The library checks the values' meaning
    and refuses what it does not implement."""
    p = _fn["fl_problem_default"]()
    p.algo = _algo(DEFAULT if algo is None else algo)
    p.N, p.d, p.M = _int("N", N), _int("d", d), _int("M", M)
    p.Br, p.Bc = _int("Br", Br), _int("Bc", Bc)
    p.seed = _u64("seed", seed)
    p.elem_bytes = _cint("elem_bytes", elem_bytes)
    p._arrays = {}   # the Python lists behind the problem's pointers (set by _attach_arrays)
    p._exts = {}     # the extensions it points at
    for k, v in variants.items():
        if k not in VARIANTS:
            _fail(f"problem: no field {k!r}; the fields are {', '.join(VARIANTS)}")
        if v is None:
            continue
        owner = _OWNER[k]
        if owner and owner not in p._exts:
            p._exts[owner] = _fn["fl_kv_cache_default" if owner == "kv_cache" else "fl_block_sparsity_default"]()
        target, kind = (p._exts[owner] if owner else p), _kind(owner, k)
        if k in _CHOICES:
            setattr(p, k, _CHOICES[k][_choice(k, v, tuple(_CHOICES[k]))])
        elif kind == "int64":
            setattr(target, k, _int(k, v))
        elif kind == "int":   # the switches (sinks, alibi, deterministic) take True/False too
            setattr(target, k, _cint(k, int(v) if isinstance(v, bool) else v))
        elif kind == "uint64":
            setattr(target, k, _u64(k, v))
        elif kind == "double":
            setattr(target, k, _real(k, v))
        else:
            p._arrays[k] = (owner, _int64s(k, v))
    _attach_arrays(p)
    for owner, ext in p._exts.items():
        setattr(p, owner, C.cast(C.pointer(ext), C.c_void_p))
    return p


def _attach_arrays(p):
    """Points p's array fields (and its extensions') at C copies of its lists, after checking
    each length against the size it goes with (cu_seqlens: batch + 1 entries; block_table: its
    own length is passed).  The one place arrays enter fl_problem; the copies live as long as p."""
    p._keep = []
    for k, (owner, xs) in p._arrays.items():
        target = p._exts[owner] if owner else p
        if k in ("cu_seqlens_q", "cu_seqlens_k") and len(xs) != p.batch + 1:
            _fail(f"{k}: {len(xs)} entries, but batch = {p.batch} needs batch + 1 = {p.batch + 1}")
        if k == "block_table" and not xs:
            _fail("block_table: must not be empty")
        setattr(target, k + "_len", len(xs))  # the C library checks each array against its length
        arr = (C.c_int64 * len(xs))(*xs)
        p._keep.append(arr)
        setattr(target, k, C.cast(arr, _P(C.c_int64)))


TraceEvent = namedtuple("TraceEvent", "kind tensor buf r0 c0 nr nc sram_used reads writes")
TraceEvent.__doc__ = """One tile event as the machine reported it: kind ('load', 'store', 'alloc',
'free'), tensor (None for alloc/free), buf, the tile r0 c0 nr nc, SRAM in use after it, and the
machine's total reads and writes so far."""


def _event(ev):
    return TraceEvent(EVENT_KINDS[ev.kind], ev.tensor.decode() if ev.tensor else None,
                      ev.buf.decode(), ev.r0, ev.c0, ev.nr, ev.nc, ev.sram_used, ev.reads, ev.writes)


class _Relay:
    """Calls fn(TraceEvent) from a C trace callback.  An exception fn raises is kept (C cannot
    unwind through ctypes) and the callback tells the C machine to stop (it then refuses every
    further move with status 7, so the run ends at that event); raise_pending() re-raises it."""

    def __init__(self, fn):
        if not callable(fn):
            _fail(f"trace = {fn!r}: must be a callable taking one event")
        self.fn, self.error = fn, None
        self.c = TRACE_FN(self._call)

    def _call(self, ev, ctx):
        if self.error is not None:
            return 1
        try:
            self.fn(_event(ev.contents))
        except BaseException as e:   # KeyboardInterrupt too: it must reach the caller
            self.error = e
            return 1
        return 0

    def raise_pending(self):
        if self.error is not None:
            e, self.error = self.error, None
            raise e


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
        n = max(0, min(r.ntensors, MAX_TENSORS))
        self.tensors = {r.t[i].name.decode(): (r.t[i].reads, r.t[i].writes) for i in range(n)}
        self.elem_bytes = {r.t[i].name.decode(): r.t[i].elem_bytes for i in range(n)}
        self.read_bytes = sum(rd * self.elem_bytes[t] for t, (rd, _) in self.tensors.items())
        self.write_bytes = sum(wr * self.elem_bytes[t] for t, (_, wr) in self.tensors.items())
        self.computed = bool(r.computed)
        self.rel_err = r.rel_err if r.computed else None
        self.max_abs_err = r.max_abs_err if r.computed else None
        self.grad_rel_err = (r.dq_rel_err, r.dk_rel_err, r.dv_rel_err) if r.computed else None
        self.dsink_rel_err = r.dsink_rel_err if r.computed and r.p.sinks and r.p.pass_ & 2 else None
        self.d_v = r.p.d_v or r.p.d

    def __repr__(self):
        return (f"<{self.algo} N={self.N} d={self.d} M={self.M} Br={self.Br} Bc={self.Bc}: "
                f"reads={self.reads} writes={self.writes} total={self.total}>")


def _c_run(p, mode, relay):
    """fl_run on a checked problem; the one call that passes p's arrays to fl_run."""
    r = Result()
    status = _fn["fl_run"](C.byref(p), mode, relay.c if relay else TRACE_FN(), None, C.byref(r))
    if relay:
        relay.raise_pending()   # the callback's exception wins; the result is discarded
    _ok(status)
    return r


def run(algo=None, N=1024, d=64, M=98304, Br=0, Bc=0, mode="count", trace=None, **kw):
    """Runs one schedule through fl_run.  mode: 'count' (no arithmetic) or 'compute' (real
    values, checked against the reference: .rel_err).  trace: a callable receiving a TraceEvent
    per tile event; if it raises, the C run stops at that event and the exception is re-raised
    here."""
    m = MODES[_choice("mode", mode, tuple(MODES))]
    p = problem(algo, N, d, M, Br, Bc, **kw)
    return RunResult(_c_run(p, m, _Relay(trace) if trace is not None else None))


def blocks(algo=None, N=1024, d=64, M=98304, Br=0, Bc=0, **kw):
    """The blocks fl_blocks_choose picks (rule B0/B1/B2), with the paper's flash1 sizes."""
    p = problem(algo, N, d, M, Br, Bc, **kw)
    b = Blocks()
    _ok(_fn["fl_blocks_choose"](C.byref(p), C.byref(b)))
    return {k: getattr(b, k) for k, _ in Blocks._fields_}


def footprint(algo, d, Br, Bc, Bd=None, bwd=False, G=1):
    """SRAM elements a schedule's buffers take for these blocks: the forward's (docs/model.md
    F0/F1/F2, fl_footprint) or, with bwd=True, the backward's (F1b/F2b, fl_footprint_pass; G query
    heads stacked for flash2-gqa).  Sizes must be positive integers."""
    a = _algo(algo)
    d, Br, Bc = _int("d", d, 1), _int("Br", Br, 1), _int("Bc", Bc, 1)
    Bd = d if Bd is None else _int("Bd", Bd, 1)
    G = _int("G", G, 1)
    if G != 1 and not _fn["fl_algo_flags"](a) & SCHED_STACKS_GROUP:
        stacking = " or ".join(n for i, n in enumerate(ALGOS) if _fn["fl_algo_flags"](i) & SCHED_STACKS_GROUP)
        _fail(f"G = {G}: only {stacking} stacks query heads (G is 1 for {ALGOS[a]})")
    if not isinstance(bwd, bool):
        _fail(f"bwd = {bwd!r}: must be True or False")
    if bwd or G != 1:
        f = _fn["fl_footprint_pass"](a, int(bwd), G, d, Br, Bc, Bd)
    else:
        f = _fn["fl_footprint"](a, d, Br, Bc, Bd)
    if f < 0:
        _fail(f"footprint of {ALGOS[a]} at d={d}, Br={Br}, Bc={Bc}, Bd={Bd}, G={G}: does not fit "
              f"in 64 bits", 3)
    return f


# ----------------------------------------------------------------------------------------------
# Your own schedule on the C machine

class Tensor(_OwnsC):
    """An HBM tensor of a Machine.  Its counters are the machine's.  read()/write() reach its
    values without counting: they are for setting up inputs and checking outputs of a compute
    machine, and are refused while the machine is sealed (a schedule reaches HBM only through
    load and store).  Made by Machine.tensor(); one made by hand is refused by the machine."""

    def __init__(self, machine, tid, name):
        self._m, self._id, self._name = machine, tid, name

    id = property(lambda self: self._id)
    name = property(lambda self: self._name)
    machine = property(lambda self: self._m)

    def _field(self, f):
        with self._m._use() as h:
            return getattr(self._struct(h), f)

    def _struct(self, h):
        """The C tensor (call with the machine in use)."""
        if not isinstance(self._id, int) or not 0 <= self._id < MAX_TENSORS:
            _fail(f"tensor {self._name}: id {self._id!r} is not a tensor of this machine")
        p = _fn["fl_tensor_get"](h, self._id)
        if not p:
            _fail(f"tensor {self._name}: id {self._id} is not a tensor of this machine")
        return p.contents

    rows = property(lambda self: self._field("rows"))
    cols = property(lambda self: self._field("cols"))
    reads = property(lambda self: self._field("reads"))
    writes = property(lambda self: self._field("writes"))

    def _values(self, h, why):
        self._m._peek_allowed(why)
        s = self._struct(h)
        if not s.data:
            _fail(f"tensor {self._name}: values exist only on a compute machine (mode='compute')")
        n = s.rows * s.cols
        return C.cast(s.data, _P(C.c_double * n)).contents, s.rows, s.cols

    def read(self):
        """All values as a list of rows (uncounted; compute machine; not while sealed)."""
        with self._m._use() as h:
            arr, rows, cols = self._values(h, "read")
            flat = arr[:]
        return [flat[r * cols:(r + 1) * cols] for r in range(rows)]

    def write(self, rows):
        """Sets all values from a list of rows (uncounted; compute machine; not while sealed)."""
        with self._m._use() as h:
            arr, nr, nc = self._values(h, "write")
            flat, r, c = _matrix(f"tensor {self._name}", rows, nc)
            if r != nr:
                _fail(f"tensor {self._name}: {r} rows given, it has {nr}")
            arr[:] = flat

    def __repr__(self):
        if self._m._h is None:
            return f"<tensor {self._name} of a closed machine>"
        return f"<tensor {self._name} {self.rows}x{self.cols}: reads={self.reads} writes={self.writes}>"


class Buffer(_OwnsC):
    """An SRAM buffer of a Machine.  On a compute machine its values can be read and written
    (b.read(nr, nc), b.write(rows), b[r, c], b[r, c] = v, b.fill(v)): that is on-chip work,
    which the machine does not count (rule R3).  A tile of nr x nc sits in its top-left corner.
    Invalid after m.free(b) or m.close().  Made by Machine.alloc(); one made by hand is refused
    by the machine."""

    def __init__(self, machine, ptr, name):
        self._m, self._p, self._name, self._live = machine, ptr, name, True

    name = property(lambda self: self._name)
    machine = property(lambda self: self._m)
    live = property(lambda self: self._live and self._m._h is not None)

    def _c(self):
        """The C buffer (call with the machine in use)."""
        if not self._live:
            _fail(f"SRAM buffer {self._name} was freed: allocate a new one")
        if self not in self._m._live_bufs:
            _fail(f"SRAM buffer {self._name} is not a buffer of this machine (made by Machine.alloc)")
        return self._p

    def _field(self, f):
        with self._m._use():
            return getattr(self._c().contents, f)

    rows = property(lambda self: self._field("rows"))
    cols = property(lambda self: self._field("cols"))

    def _array(self):
        b = self._c().contents
        if not b.x:
            _fail(f"SRAM buffer {self._name}: values exist only on a compute machine (mode='compute')")
        return C.cast(b.x, _P(C.c_double * (b.rows * b.cols))).contents, b.rows, b.cols

    def _tile(self, nr, nc):
        arr, rows, cols = self._array()
        nr = rows if nr is None else _int("nr", nr, 1, rows)
        nc = cols if nc is None else _int("nc", nc, 1, cols)
        return arr, nr, nc, cols

    def read(self, nr=None, nc=None):
        """The top-left nr x nc values (default: the whole buffer) as a list of rows."""
        with self._m._use():
            arr, nr, nc, cols = self._tile(nr, nc)
            return [arr[r * cols:r * cols + nc] for r in range(nr)]

    def write(self, rows):
        """Writes a list of rows into the top-left corner."""
        with self._m._use():
            arr, nr, nc, cols = self._tile(None, None)
            flat, r, c = _matrix(f"buffer {self._name}", rows)
            if r > nr or c > nc:
                _fail(f"buffer {self._name}: a {r}x{c} tile does not fit in {nr}x{nc}")
            for i in range(r):
                arr[i * cols:i * cols + c] = flat[i * c:(i + 1) * c]

    def fill(self, v, nr=None, nc=None):
        """Sets the top-left nr x nc values (default: all) to v."""
        v = _real("value", v)
        with self._m._use():
            arr, nr, nc, cols = self._tile(nr, nc)
            for i in range(nr):
                arr[i * cols:i * cols + nc] = [v] * nc

    def _index(self, key):
        if not (isinstance(key, tuple) and len(key) == 2):
            _fail(f"buffer {self._name}: index with [row, col]")
        arr, rows, cols = self._array()
        r, c = _int("row", key[0], 0, rows - 1), _int("col", key[1], 0, cols - 1)
        return arr, r * cols + c

    def __getitem__(self, key):
        with self._m._use():
            arr, i = self._index(key)
            return arr[i]

    def __setitem__(self, key, v):
        v = _real("value", v)
        with self._m._use():
            arr, i = self._index(key)
            arr[i] = v

    def __repr__(self):
        if not self.live:
            return f"<SRAM buffer {self._name}, freed>"
        return f"<SRAM buffer {self._name} {self.rows}x{self.cols}>"


class _InUse:
    """Machine._use(): holds the machine's lock for one call and counts it as running."""
    __slots__ = ("m",)

    def __init__(self, m):
        self.m = m

    def __enter__(self):
        m = self.m
        m._lock.acquire()
        if m._h is None:
            m._lock.release()
            m._handle()   # raises: closed
        m._busy += 1
        return m._h

    def __exit__(self, *exc):
        m = self.m
        m._busy -= 1
        m._lock.release()


class Machine(_OwnsC):
    """The two-level machine of machine.h, driven call by call from Python.  Every method is
    one C call after its arguments are checked: the machine checks capacity (FlashlabError
    'capacity exceeded' naming every live buffer) and bounds, and counts every element moved.
    mode: 'count' or 'compute' (buffers and tensors hold real values).  Use as a context
    manager or call close(); a closed machine, and its tensors and buffers, refuse every call.

    Threads: every call holds the machine's lock, so calls from several threads run one after
    another (a close() from another thread waits for the call running).  A trace callback may
    call the machine again (load, store, alloc, free), but not close() it or set_trace(): those
    are refused while a call on the machine runs.  A machine cannot be copied or pickled."""

    def __init__(self, M, mode="count", name="my schedule"):
        self._h = None
        self._lock = threading.RLock()
        self._busy = 0
        self._in_use = _InUse(self)
        M = _int("M", M)
        m = MODES[_choice("mode", mode, tuple(MODES))]
        if not isinstance(name, str) or "\0" in name:
            _fail(f"name = {name!r}: must be a string")
        self._name = _utf8("name", name)  # must outlive the machine
        self._h = _fn["fl_machine_alloc"](M, m, self._name)
        if not self._h:
            raise FlashlabError(1, _last_error())
        self._mode = mode
        self._relay = None
        self._sealed = 0
        self._bufs = []
        self._live_bufs = set()   # the live Buffer objects (hashed by identity)
        self._tensors = {}

    mode = property(lambda self: self._mode)
    tensors = property(lambda self: dict(self._tensors),
                       doc="{name: Tensor}: a copy (Machine.tensor() adds one)")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _handle(self):
        if self._h is None:
            _fail(f"machine {self._name.decode(errors='replace')!r} is closed")
        return self._h

    def _use(self):
        """`with m._use() as h`: the machine's handle for one call, under its lock, counted as
        running (one object per machine: it keeps no state of its own, so nesting is fine)."""
        return self._in_use

    def _not_running(self, what):
        if self._busy:
            _fail(f"machine {self._name.decode(errors='replace')!r}: {what} is refused while a call on it runs "
                  f"(from its trace callback): do it after the call returns")

    def close(self):
        """Frees the machine; its tensors and buffers become invalid.  Closing twice is fine;
        closing from the machine's own trace callback is refused."""
        lock = getattr(self, "_lock", None)
        if lock is None:
            return
        with lock:
            if self._h is None:
                return
            self._not_running("close()")
            h, self._h = self._h, None
            for b in self._bufs:
                b._live = False
            self._live_bufs.clear()
            _fn["fl_machine_free"](h)

    def __del__(self):
        try:
            self.close()
        except Exception:   # at interpreter exit the module may be half gone
            pass

    def _own(self, obj, kind, cls):
        if not isinstance(obj, cls):
            _fail(f"expected a {kind} of this machine, got {type(obj).__name__}")
        if obj._m is not self:
            _fail(f"{kind} {obj.name} belongs to another machine")
        if cls is Tensor and self._tensors.get(obj.name) is not obj:
            _fail(f"tensor {obj.name} is not a tensor of this machine (made by Machine.tensor)")

    def _peek_allowed(self, why):
        self._handle()
        if self._sealed:
            _fail(f"tensor values cannot be {why} directly while a schedule runs: a schedule "
                  f"reaches HBM only through load and store")

    @contextlib.contextmanager
    def sealed(self):
        """Within this block Tensor.read() and Tensor.write() are refused (checks run a
        schedule sealed, so that it can reach HBM only through load and store)."""
        self._sealed += 1
        try:
            yield self
        finally:
            self._sealed -= 1

    def _after(self, status):
        if self._relay:
            self._relay.raise_pending()
        _ok(status)

    def tensor(self, name, rows, cols, elem_bytes=2):
        """Adds an HBM tensor (fl_tensor_add) of rows x cols elements; elem_bytes 1, 2, 4 or 8."""
        with self._use() as h:
            _name("tensor", name)
            if name in self._tensors:
                _fail(f"tensor {name}: this machine already has a tensor of that name")
            rows, cols = _int("rows", rows), _int("cols", cols)
            if (isinstance(elem_bytes, bool) or not isinstance(elem_bytes, numbers.Integral)
                    or elem_bytes not in (1, 2, 4, 8)):
                _fail(f"elem_bytes = {elem_bytes!r}: must be 1, 2, 4 or 8")
            tid = C.c_int()
            _ok(_fn["fl_tensor_add"](h, name.encode(), rows, cols, elem_bytes, C.byref(tid)))
            self._tensors[name] = Tensor(self, tid.value, name)
            return self._tensors[name]

    def alloc(self, name, rows, cols):
        """Allocates an SRAM buffer (fl_sram_alloc); FlashlabError when it does not fit in M."""
        with self._use() as h:
            _name("buffer", name)
            rows, cols = _int("rows", rows), _int("cols", cols)
            out = _P(BufStruct)()
            status = _fn["fl_sram_alloc"](h, name.encode(), rows, cols, C.byref(out))
            if status == 0 or out:   # allocated (a raising trace callback stops after the allocation)
                self._bufs = [b for b in self._bufs if b._live]
                b = Buffer(self, out, name)
                self._bufs.append(b)
                self._live_bufs.add(b)
            self._after(status)
            return b

    def free(self, buf):
        """Releases a buffer's SRAM (fl_sram_free).  Freeing a freed buffer is refused."""
        with self._use() as h:
            self._own(buf, "SRAM buffer", Buffer)
            p = buf._c()
            buf._live = False
            self._live_bufs.discard(buf)
            _fn["fl_sram_free"](h, p)
            self._after(0)

    def _move(self, fn, buf, tensor, r0, c0, nr, nc):
        with self._use() as h:
            self._own(buf, "SRAM buffer", Buffer)
            self._own(tensor, "tensor", Tensor)
            p = buf._c()
            args = [_int(k, v) for k, v in (("r0", r0), ("c0", c0), ("nr", nr), ("nc", nc))]
            self._after(_fn[fn](h, p, tensor.id, *args))

    def load(self, buf, tensor, r0, c0, nr, nc):
        """HBM -> SRAM: the nr x nc tile at (r0, c0) of tensor into buf (rule R1)."""
        self._move("fl_load", buf, tensor, r0, c0, nr, nc)

    def store(self, buf, tensor, r0, c0, nr, nc):
        """SRAM -> HBM: the top-left nr x nc of buf to (r0, c0) of tensor (rule R2)."""
        self._move("fl_store", buf, tensor, r0, c0, nr, nc)

    def set_trace(self, fn):
        """fn(TraceEvent) for every later event (None removes it).  If fn raises, the call that
        emitted the event (load, store, alloc, free) re-raises it.  Refused from a trace
        callback (the running callback would be freed under the call)."""
        with self._use() as h:
            if self._busy > 1:
                self._not_running("set_trace()")
            relay = _Relay(fn) if fn is not None else None
            _fn["fl_machine_set_trace"](h, relay.c if relay else TRACE_FN(), None)
            self._relay = relay

    def _query(self, fn):
        with self._use() as h:
            return _fn[fn](h)

    reads = property(lambda self: self._query("fl_machine_reads"))
    writes = property(lambda self: self._query("fl_machine_writes"))
    sram_used = property(lambda self: self._query("fl_machine_sram_used"))
    sram_peak = property(lambda self: self._query("fl_machine_sram_peak"))
    events = property(lambda self: self._query("fl_machine_events"))
    capacity = property(lambda self: self._query("fl_machine_capacity"))

    @property
    def buffers(self):
        """The live SRAM buffers, in allocation order."""
        with self._use():
            return [b for b in self._bufs if b._live]

    def counts(self):
        """{tensor name: (reads, writes)} as the machine counted them."""
        with self._use():
            return {n: (t.reads, t.writes) for n, t in self._tensors.items()}


# ----------------------------------------------------------------------------------------------
# Online softmax (ops.h) and the reference (reference/attention_ref.h)

class OsmState(_Fixed):
    """The running state (m, l, u) of one row's online softmax; starts empty (m = -inf,
    l = 0, u = 0), or from given values (OsmState(dv, m=..., l=..., u=[...])).  dv is fixed at
    creation (the C steps read dv numbers of u); copy.copy, copy.deepcopy and pickle make an
    independent state of the same values."""

    def __init__(self, dv, m=None, l=None, u=None):
        dv = _int("dv", dv, 1, 1 << 20)
        m = float("-inf") if m is None else _real("m", m)
        l = 0.0 if l is None else _real("l", l)
        if math.isnan(m) or m == math.inf:
            _fail(f"m = {m}: the running maximum is a score or -inf (the empty state)")
        if not (math.isfinite(l) and l >= 0):
            _fail(f"l = {l}: the running sum of e^(s - m) is finite and >= 0")
        self._m = C.c_double(m)
        self._l = C.c_double(l)
        self._u = (C.c_double * dv)()
        if u is not None:
            u = _reals("u", u)
            if len(u) != dv:
                _fail(f"u: {len(u)} values, the state has dv = {dv}")
            if not all(math.isfinite(x) for x in u):
                _fail("u: the running numerator's values are finite")
            self._u[:] = u
        if m == -math.inf and (l != 0 or any(self._u)):
            _fail(f"m = -inf is the empty state: its l and u are 0 (got l = {l})")

    dv = property(lambda self: len(self._u))
    m = property(lambda self: self._m.value)
    l = property(lambda self: self._l.value)
    u = property(lambda self: list(self._u))

    def __copy__(self):
        return _osm_restore(self.m, self.l, self.u)

    def __deepcopy__(self, memo):
        return self.__copy__()

    def __reduce__(self):
        return (_osm_restore, (self.m, self.l, self.u))

    def __repr__(self):
        return f"OsmState(m={self.m:.6f}, l={self.l:.6f}, u={[round(x, 6) for x in self.u]})"


def _osm_restore(m, l, u):
    """An OsmState holding exactly (m, l, u), as a step left it (NaN included): copies and
    pickles.  dv is len(u), so the sizes C reads always agree."""
    u = _reals("u", u)
    if not 1 <= len(u) <= 1 << 20:
        _fail(f"u: {len(u)} values; a state has 1 to {1 << 20}")
    s = OsmState(len(u))
    s._m.value, s._l.value = _real("m", m), _real("l", l)
    s._u[:] = u
    return s


def _c_osm_step(state, s, v):
    """fl_osm_step_checked: the C side checks len(s) scores against len(v) // state.dv value
    rows and the numerator's length."""
    a = C.c_double()
    _ok(_fn["fl_osm_step_checked"](C.byref(state._m), C.byref(state._l), state._u, len(state._u),
                                   state.dv, _doubles(s), len(s), _doubles(v), len(v) // state.dv,
                                   state.dv, None, 0, C.byref(a)))
    return a.value


def osm_step(state, scores, values):
    """One call of fl_osm_step: state absorbs a tile of scores with their value rows (one row of
    state.dv numbers per score).  Returns the rescale factor e^(m_old - m_new) the C step applied
    to the old state (0 when it was empty, 1 when the step was skipped)."""
    if not isinstance(state, OsmState):
        _fail(f"state: must be an OsmState, got {type(state).__name__}")
    s = _reals("scores", scores)
    if not s:
        _fail("scores: a tile needs at least one score")
    v, n, _ = _matrix("values", values, state.dv)
    if n != len(s):
        _fail(f"values: {n} rows for {len(s)} scores (one value row per score)")
    return _c_osm_step(state, s, v)


def osm_finish(state):
    """fl_osm_finish: u / l (zeros for an empty row)."""
    if not isinstance(state, OsmState):
        _fail(f"state: must be an OsmState, got {type(state).__name__}")
    dv = len(state._u)
    out = (C.c_double * dv)()
    _fn["fl_osm_finish"](state.l, state._u, dv, out)
    return list(out)


def _c_osm_tiled(s, v, dv, tile):
    """fl_osm_tiled with len(s) scores and len(s) * dv values (checked by the caller)."""
    out = (C.c_double * dv)()
    _ok(_fn["fl_osm_tiled_checked"](_doubles(s), len(s), _doubles(v), len(v), dv, tile, out, dv))
    return list(out)


def _row_and_values(scores, values):
    s = _reals("scores", scores)
    if not s:
        _fail("scores: a row needs at least one score")
    v, n, dv = _matrix("values", values)
    if n != len(s):
        _fail(f"values: {n} rows for {len(s)} scores (one value row per score)")
    return s, v, dv


def osm_tiled(scores, values, tile):
    """fl_osm_tiled: softmax(scores) @ values computed tile by tile in C."""
    s, v, dv = _row_and_values(scores, values)
    return _c_osm_tiled(s, v, dv, _int("tile", tile, 1))


def _c_softmax_row(s, v, dv):
    out = (C.c_double * dv)()
    _fn["fl_ref_softmax_row"](_doubles(s), len(s), _doubles(v), dv, out)
    return list(out)


def softmax_row(scores, values):
    """The exact reference: softmax(scores) @ values (fl_ref_softmax_row); zeros when every
    score is -inf."""
    s, v, dv = _row_and_values(scores, values)
    return _c_softmax_row(s, v, dv)


def _c_ref_attention(q, k, v, nq, nk, d, dv, scale):
    O, L = (C.c_double * (nq * dv))(), (C.c_double * nq)()
    _ok(_fn["fl_ref_attention"](nq, nk, d, dv, _doubles(q), _doubles(k), _doubles(v), scale,
                                None, None, O, L))
    o = O[:]
    return [o[i * dv:(i + 1) * dv] for i in range(nq)], L[:]


def attention_ref(Q, K, V, scale=None):
    """The exact reference (fl_ref_attention, no mask): (O, L) for lists of rows Q (Nq x d),
    K (Nk x d), V (Nk x dv); scale defaults to 1/sqrt(d), the schedules' scale."""
    q, nq, d = _matrix("Q", Q)
    k, nk, _ = _matrix("K", K, d)
    v, nv, dv = _matrix("V", V)
    if nv != nk:
        _fail(f"V: {nv} rows, K has {nk}")
    scale = 1.0 / math.sqrt(d) if scale is None else _real("scale", scale)
    if not math.isfinite(scale):
        _fail(f"scale = {scale}: must be a finite number")
    return _c_ref_attention(q, k, v, nq, nk, d, dv, scale)


# ----------------------------------------------------------------------------------------------
# Masks, heads, varlen (include/flashlab/masks.h, include/flashlab/heads.h)

def mask(Nq, Nk, causal="none", left=-1, right=-1):
    """An fl_mask (fl_mask_init) of an Nq x Nk score matrix; FlashlabError on bad input."""
    mk = MaskStruct()
    c = CAUSAL[_choice("causal", causal, tuple(CAUSAL))]
    _ok(_fn["fl_mask_init"](C.byref(mk), _int("Nq", Nq), _int("Nk", Nk), c, _int("left", left),
                            _int("right", right)))
    return mk


def _mask_arg(mk):
    if not isinstance(mk, MaskStruct):
        _fail(f"mask: must be what fl.mask() returns, got {type(mk).__name__}")
    return mk


def mask_keep(mk, i, j):
    """fl_mask_keep: True when query i (0 <= i < Nq) may attend to key j (0 <= j < Nk)."""
    mk = _mask_arg(mk)
    i, j = _int("i", i, 0, mk.Nq - 1), _int("j", j, 0, mk.Nk - 1)
    return bool(_fn["fl_mask_keep"](C.byref(mk), i, j))


MASK_MATRIX_MAX = 1 << 22


def mask_matrix(Nq, Nk, causal="none", left=-1, right=-1):
    """The keep matrix (lists of 0/1) as the C mask rule gives it; at most MASK_MATRIX_MAX
    entries (a Python list of lists: larger ones take gigabytes and minutes)."""
    mk = mask(Nq, Nk, causal, left, right)
    if Nq * Nk > MASK_MATRIX_MAX:
        _fail(f"mask_matrix: {Nq} x {Nk} is more than {MASK_MATRIX_MAX} entries; use mask() with "
              f"mask_keep() or mask_tile() for large masks")
    return [[int(mask_keep(mk, i, j)) for j in range(Nk)] for i in range(Nq)]


def mask_tile(mk, r0, nr, c0, nc):
    """fl_mask_tile: 'empty' (skipped), 'full' or 'partial' for rows [r0, r0 + nr) and keys
    [c0, c0 + nc), which must lie inside the mask."""
    mk = _mask_arg(mk)
    r0, c0 = _int("r0", r0, 0, mk.Nq - 1), _int("c0", c0, 0, mk.Nk - 1)
    nr, nc = _int("nr", nr, 1, mk.Nq - r0), _int("nc", nc, 1, mk.Nk - c0)
    k = _fn["fl_mask_tile"](C.byref(mk), r0, nr, c0, nc)
    if not 0 <= k < len(TILE_KINDS):
        _fail(f"fl_mask_tile returned {k}, not a tile kind")
    return TILE_KINDS[k]


def kv_head(h, Hq, Hkv):
    """fl_kv_head: the K/V head query head h (0 <= h < Hq) reads (consecutive grouping)."""
    Hq, Hkv = _int("Hq", Hq), _int("Hkv", Hkv)
    _ok(_fn["fl_heads_check"](Hq, Hkv))
    return _fn["fl_kv_head"](_int("h", h, 0, Hq - 1), Hq, Hkv)


def cu_seqlens_check(cu, batch, total, opt="cu_seqlens"):
    """fl_cu_seqlens_check: raises FlashlabError naming the rule cu breaks (batch + 1 offsets,
    starting at 0, nondecreasing, ending at total)."""
    cu = _int64s(opt, cu)
    batch, total = _int("batch", batch), _int("total", total)
    if not isinstance(opt, str):
        _fail(f"opt = {opt!r}: must be a string")
    _c_cu_seqlens_check(opt, cu, batch, total)


def _c_cu_seqlens_check(opt, cu, batch, total):
    arr = (C.c_int64 * max(1, len(cu)))(*cu)
    _ok(_fn["fl_cu_seqlens_check"](_utf8("opt", opt), arr, len(cu), batch, total))


# ----------------------------------------------------------------------------------------------
# The CLI (for what it prints) and the trace

def cli(*args, check=True):
    """Runs `flashlab ARGS...`; returns stdout.  With check, a nonzero exit raises FlashlabError
    carrying the CLI's one-line message."""
    try:
        p = subprocess.run([str(cli_path()), *map(str, args)], capture_output=True, text=True)
    except (OSError, ValueError) as e:   # ValueError: a NUL byte in an argument
        _fail(f"flashlab CLI {cli_path()}: {e}")
    if check and p.returncode != 0:
        raise FlashlabError(p.returncode, p.stderr.strip() or f"flashlab exited {p.returncode}")
    return p.stdout


TRACE_OPTIONS = ("Br", "Bc", "Nk", "causal", "window", "pass_", "max_events", "compute", "seed")


def trace_rows(text):
    """The rows of a `flashlab trace` CSV as dicts (numbers as ints); FlashlabError for text that
    is not one (a short row, a field that is not an integer)."""
    if not isinstance(text, str):
        _fail(f"trace_rows: needs the CSV text of flashlab trace (got {type(text).__name__})")
    rows = list(csv.DictReader(io.StringIO(text)))
    for i, r in enumerate(rows):
        for k, v in r.items():
            if k is None or v is None:
                _fail(f"trace_rows: row {i + 1} does not have the header's columns")
            if k not in ("algo", "event", "tensor", "buf"):
                try:
                    r[k] = int(v)
                except ValueError:
                    _fail(f"trace_rows: row {i + 1}, {k} = {v!r}: not an integer")
    return rows


def trace(algo="classic", N=64, d=8, M=384, **opts):
    """The events of `flashlab trace` as a list of dicts (numbers as ints).  opts (TRACE_OPTIONS):
    Br, Bc, Nk, causal='bottom-right', window=(L, R), pass_='bwd', max_events, compute=True,
    seed."""
    if not isinstance(algo, str):
        _fail(f"algo = {algo!r}: must be a schedule name, a comma list, classic or all")
    args = ["trace", "--algo", algo, "--N", _int("N", N), "--d", _int("d", d), "--M", _int("M", M)]
    for k, v in opts.items():
        if k not in TRACE_OPTIONS:
            _fail(f"trace: no option {k!r}; the options are {', '.join(TRACE_OPTIONS)}")
        if k == "compute":
            if not isinstance(v, bool):
                _fail(f"compute = {v!r}: must be True or False")
            args += ["--compute"] if v else []
        elif k == "window":
            if not isinstance(v, (tuple, list)) or len(v) != 2:
                _fail(f"window = {v!r}: must be a pair (left, right)")
            args += ["--window", f"{_int('window left', v[0])},{_int('window right', v[1])}"]
        elif k == "causal":
            args += ["--causal", _choice("causal", v, tuple(CAUSAL))]
        elif k == "pass_":
            args += ["--pass", _choice("pass_", v, tuple(PASSES))]
        else:
            args += ["--" + k.replace("_", "-"), _int(k, v)]
    return trace_rows(cli(*args))


# ----------------------------------------------------------------------------------------------
# Check lines in the notebooks (kept for notebooks that print their own checks)

def check(cid, problems, skip=None):
    """Prints 'CHECK cid: PASS' when problems is empty, else 'CHECK cid: FAIL' and one line per
    problem; with skip (a reason) 'CHECK cid: SKIP'.  run_all.py reads these lines."""
    if skip:
        print(f"CHECK {cid}: SKIP")
        print("  - " + skip)
        return
    if isinstance(problems, str):
        problems = [problems]
    problems = [p for p in problems if p]
    print(f"CHECK {cid}: {'FAIL' if problems else 'PASS'}")
    for p in problems:
        print("  - " + p)


def close(a, b, rel=1e-9):
    """|a - b| <= rel * max(1, |b|) for a real a (False for anything else)."""
    if isinstance(a, bool) or not isinstance(a, numbers.Real):
        return False
    return abs(a - b) <= rel * max(1.0, abs(b))


# ----------------------------------------------------------------------------------------------
# The structure and signature check (ctest: notebooks_abi)

_STRUCTS = (("fl_problem", Problem), ("fl_kv_cache", KvCache), ("fl_block_sparsity", BlockSparsity),
            ("fl_blocks", Blocks), ("fl_counts", Counts),
            ("fl_tensor_counts", TensorCounts), ("fl_result", Result), ("fl_event", Event),
            ("fl_tensor", TensorStruct), ("fl_buf", BufStruct), ("fl_mask", MaskStruct))


def _abi_python():
    out = {}
    for name, st in _STRUCTS:
        out[name] = {"sizeof": C.sizeof(st)}
        for f, t in st._fields_:
            out[name][f.rstrip("_")] = getattr(st, f).offset
            out[name]["sizeof " + f.rstrip("_")] = C.sizeof(t)
    out["constants"] = {"FL_ALGO_MAX": ALGO_MAX, "FL_SCHED_STACKS_GROUP": SCHED_STACKS_GROUP}
    return out


def check_abi(abi_program):
    """Compares the ctypes layouts (size, field offsets, field sizes) and the restated constants
    with the C compiler's (the abi program prints JSON).  Returns a list of mismatches (empty when they agree)."""
    c = json.loads(subprocess.run([abi_program], capture_output=True, text=True, check=True).stdout)
    py = _abi_python()
    bad = []
    for st, fields in c.items():
        for f, v in fields.items():
            if py.get(st, {}).get(f) != v:
                bad.append(f"{st}.{f}: C says {v}, the binding says {py.get(st, {}).get(f)}")
    for st, fields in py.items():
        for f in fields:
            if f not in c.get(st, {}):
                bad.append(f"{st}.{f}: in the binding but not reported by the C side")
    return bad


PROTOTYPE_HEADERS = ("machine.h", "problem.h", "decode.h", "blocksparse_mask.h", "run.h", "ops.h", "attention_ref.h", "masks.h",
                     "heads.h", "status.h", "flashlab/version.h")


def prototypes_c(prototypes=PROTOTYPES, extra=""):
    """A C file that fails to compile unless every prototype (PROTOTYPES, or another module's) is
    declared by the headers with exactly that type (first a use of the header's declaration, then
    the redeclaration, which C refuses when the types conflict); extra: more C at its end (another
    module's structure checks)."""
    lines = [f'#include "{h}"' for h in PROTOTYPE_HEADERS]
    for line in prototypes.strip().splitlines():
        name = _PROTO.match(line.strip()).group(2)
        lines.append(f"__typeof__({name}) *const flashlab_py_{name} = {name};")
        lines.append(line.strip())
    return "\n".join(lines) + "\n" + extra


def check_prototypes(cc, include_dirs, prototypes=PROTOTYPES, extra=""):
    """Compiles prototypes_c(prototypes, extra) with cc; returns the compiler's complaints (empty
    when the prototypes match the headers)."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        src = pathlib.Path(tmp) / "prototypes.c"
        src.write_text(prototypes_c(prototypes, extra))
        cmd = [cc, "-std=gnu11", "-fsyntax-only", "-Werror", str(src)]
        cmd += [f"-I{d}" for d in include_dirs if d]
        p = subprocess.run(cmd, capture_output=True, text=True)
        return [] if p.returncode == 0 else [l for l in p.stderr.splitlines() if "error" in l]
