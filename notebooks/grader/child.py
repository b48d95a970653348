"""child.py: the process in which the grader runs a student's code (python3 -I child.py R W PACKAGE:
the pipes to read and write, the folder of the package flashlab).

It holds nothing the grade depends on: no instructor secret, no expected value, no machine.  It
runs the lab's given cells and the student's answer cells, and calls the student's functions when
the grader asks; everything they ask of the library goes back to the grader as a request
(flashlab's functions through the proxy module below, a Chip's operations through RemoteBackend),
which the grader answers or refuses (a call that would answer the exercise).  Whatever the code
does here, it can change only what this process sends back, which the grader checks.

After its own imports it installs an audit hook (sys.addaudithook: it cannot be removed) that
refuses to load C code (ctypes), to start processes, open sockets, send signals, change files,
write any file, or read files outside the standard library, site-packages and the recorded data.

Protocol (grader -> here; each answered with a message carrying the same "id"):
    {"op": "init", "params": P, "student": id, "lab": name, "read": [folders]}
    {"op": "exec", "code": text, "label": name}          -> {"ok", "error", "out"}
    {"op": "get", "names": [..]}                         -> {"values": {name: value or missing}}
    {"op": "call", "name": fn, "args": [..], "kwargs": {..}} -> {"ok", "value" or "error", "out"}
and here -> grader, while exec or call runs: {"req": k, "kind": "fl"|"chip", ...} answered by
{"re": k, "ok", "value" or "error"}.
"""
import builtins
import io
import os
import pathlib
import sys
import traceback
import types

HERE = pathlib.Path(__file__).resolve().parent
RFD, WFD = int(sys.argv[1]), int(sys.argv[2])
PACKAGE = pathlib.Path(sys.argv[3])   # the folder of the package flashlab (session.py names it)


def _load(name, path):
    """The module in the file path, imported under name (python3 -I puts neither this folder nor
    the package's on sys.path, and the package's __init__, the binding, must not run here)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


wire = _load("grader.wire", HERE / "wire.py")
flmachine = _load("flashlab.flmachine", PACKAGE / "flmachine.py")   # the Chip front end: no C library here
OUT_LIMIT = 4000


class FlashlabError(RuntimeError):
    """The grader refused a request, or the library refused it there (the message says which)."""

    def __init__(self, message, status=1):
        super().__init__(message)
        self.status = status
        self.kind = "refused"


_req = [0]


def request(msg):
    """Sends a request to the grader and waits for its answer; FlashlabError when refused."""
    _req[0] += 1
    msg["req"] = _req[0]
    wire.send(WFD, msg)
    while True:
        r = wire.recv(RFD)
        if r.get("re") == _req[0]:
            break
    if not r.get("ok"):
        raise FlashlabError(str(r.get("error", "refused")))
    return wire.decode(r.get("value"), unref)


class RemoteBackend:
    """A Chip's backend here: each operation is a request to the grader's machine."""

    def __init__(self, token):
        self.token = token

    def do(self, op, args):
        return request({"kind": "chip", "token": self.token, "op": op,
                        "args": wire.encode(args, ref)})


class Mask:
    """A mask made by the grader's library (fl.mask): a handle with its sizes."""

    def __init__(self, mid, Nq, Nk):
        self.id, self.Nq, self.Nk = mid, Nq, Nk


class RunResult:
    """What fl.run returned, as plain attributes (counts in elements)."""

    def __init__(self, attrs):
        self.__dict__.update(attrs)

    def __repr__(self):
        return (f"<{getattr(self, 'algo', '?')} N={getattr(self, 'N', '?')} d={getattr(self, 'd', '?')}: "
                f"reads={getattr(self, 'reads', '?')} writes={getattr(self, 'writes', '?')}>")


_chips = {}


def unref(items):
    kind, *rest = items
    if kind == "chip":
        token = rest[0]
        if token not in _chips:
            _chips[token] = flmachine.Chip(RemoteBackend(token))
        return _chips[token]
    if kind == "tensor":
        token, name, rows, cols = rest
        return unref(["chip", token]).tensor(name, rows, cols)
    if kind == "mask":
        return Mask(*rest)
    if kind == "run":
        return RunResult(rest[0])
    if kind == "path":
        return pathlib.Path(rest[0])
    raise wire.WireError(f"an unknown handle {kind!r}")


def ref(v):
    if isinstance(v, Mask):
        return ["mask", v.id, v.Nq, v.Nk]
    if isinstance(v, RunResult):
        return ["run", dict(v.__dict__)]
    if isinstance(v, pathlib.PurePath):
        return ["path", str(v)]
    if isinstance(v, flmachine.Chip) and isinstance(v._b, RemoteBackend):
        return ["chip", v._b.token]
    if isinstance(v, flmachine.Tensor) and isinstance(v.chip._b, RemoteBackend):
        return ["tensor", v.chip._b.token, v.name, v.rows, v.cols]
    return None


# ----------------------------------------------------------------------------------------------
# flashlab, as the student's code sees it here: every function a request to the grader

FL_FUNCTIONS = ("run", "blocks", "footprint", "mask", "mask_keep", "mask_tile", "mask_matrix", "kv_head",
                "cu_seqlens_check", "cli", "trace", "softmax_row", "attention_ref", "osm_tiled")


def proxy_flashlab(data_dir):
    fl = types.ModuleType("flashlab")
    fl.__doc__ = "flashlab while grading: each call is a request to the grader (some are refused)."
    fl.FlashlabError = FlashlabError
    fl.RunResult = RunResult
    fl.LIB_PATH = "(the grader's)"
    fl.ALGOS = tuple(request({"kind": "fl", "fn": "ALGOS", "args": [], "kwargs": {"$d": []}}))
    fl.CLASSIC = ("standard", "flash1", "flash2")
    fl.data_dir = lambda: pathlib.Path(data_dir)
    fl.flmachine = flmachine

    def make(name):
        def call(*args, **kwargs):
            return request({"kind": "fl", "fn": name, "args": wire.encode(list(args), ref),
                            "kwargs": wire.encode(kwargs, ref)})
        call.__name__ = name
        return call
    for n in FL_FUNCTIONS:
        setattr(fl, n, make(n))
    # every other name of the binding is asked for too, so that the grader sees (and refuses) it
    fl.__getattr__ = lambda name: make(name) if not name.startswith("_") else _no_attr(name)
    return fl


def _no_attr(name):
    raise AttributeError(name)


def _refused(what):
    def f(*a, **k):
        raise FlashlabError(f"{what} is not available while grading")
    return f


class _Stub(types.ModuleType):
    """labkit while grading: params() gives the grader's parameters whatever it is asked, and
    student() the student's id; nothing else of labkit exists here."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _refused(f"{self.__name__}.{name}")


def stub_labkit(fl, student, params, lab):
    """The modules flashlab.labkit and flashlab.labkit.* while grading, set as fl.labkit too."""
    kit = _Stub("flashlab.labkit")
    kit.student = lambda default="": student
    kit.student_id = lambda s=None: student
    sub = _Stub(f"flashlab.labkit.{lab}")
    sub.params = lambda *a, **k: params
    setattr(kit, lab, sub)
    fl.labkit = kit
    # labkit/data.py itself (it imports flashlab: the proxy, here), not the rest of labkit
    kit.data = data = _load("flashlab.labkit.data", PACKAGE / "labkit" / "data.py")
    mods = {"flashlab.labkit": kit, f"flashlab.labkit.{lab}": sub, "flashlab.labkit.data": data}
    for extra in ("stepview", "figures"):   # imported by setup cells for their demonstrations
        mods[f"flashlab.labkit.{extra}"] = _Stub(f"flashlab.labkit.{extra}")
        setattr(kit, extra, mods[f"flashlab.labkit.{extra}"])
    return mods


# ----------------------------------------------------------------------------------------------
# The audit hook

BLOCKED_IMPORTS = {"ctypes", "_ctypes", "socket", "_socket", "ssl", "_ssl", "multiprocessing",
                   "_posixsubprocess", "pty", "mmap", "_multiprocessing", "resource", "signal", "_signal"}
BLOCKED_PREFIXES = ("subprocess.", "os.exec", "os.spawn", "os.posix_spawn", "os.fork", "os.forkpty",
                    "os.system", "os.popen", "socket.", "ctypes.", "os.kill", "os.killpg", "os.remove",
                    "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.truncate", "os.link",
                    "os.symlink", "os.unlink", "shutil.", "os.putenv", "os.unsetenv", "os.setxattr",
                    "os.removexattr", "os.chdir", "os.chroot", "os.chflags", "os.utime", "os.mkfifo",
                    "os.mknod", "os.startfile", "pty.", "resource.", "signal.", "sys.setprofile",
                    "sys.settrace", "webbrowser.", "urllib.", "ftplib.", "smtplib.", "http.",
                    "sqlite3.", "winreg.", "mmap.", "pdb.", "fcntl.", "os.add_dll_directory",
                    "os.fwalk", "sys._current_frames")


def install_hook(readable):
    roots = tuple(os.path.join(os.path.realpath(r), "") for r in readable)

    def allowed(path):
        try:
            p = os.path.realpath(os.fsdecode(path))
        except Exception:
            return False
        return any(p == r[:-1] or p.startswith(r) for r in roots)

    def hook(event, args):
        if event == "import":
            if args[0].split(".")[0] in BLOCKED_IMPORTS:
                raise ImportError(f"import {args[0]} is not allowed while grading")
        elif event == "open":
            path, mode, flags = args
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or \
                      (isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND))
            if path is None or isinstance(path, int) or writing or not allowed(path):
                raise PermissionError(f"opening {path!r} is not allowed while grading")
        elif event in ("os.listdir", "os.scandir"):
            if args and args[0] is not None and not isinstance(args[0], int) and not allowed(args[0]):
                raise PermissionError(f"listing {args[0]!r} is not allowed while grading")
        elif event.startswith(BLOCKED_PREFIXES):
            raise PermissionError(f"{event} is not allowed while grading")
    sys.addaudithook(hook)


# ----------------------------------------------------------------------------------------------
# The loop

def captured(fn):
    """Runs fn() with stdout and stderr captured: (result, error text or None, output)."""
    buf = io.StringIO()
    old = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = buf
    try:
        return fn(), None, buf.getvalue()[-OUT_LIMIT:]
    except BaseException as e:   # SystemExit, KeyboardInterrupt from student code: reported
        tb = traceback.extract_tb(e.__traceback__)
        where = next((f"{f.filename}, line {f.lineno}" for f in reversed(tb) if f.filename.startswith("<")), "")
        return None, f"{type(e).__name__}: {e}" + (f" ({where})" if where else ""), buf.getvalue()[-OUT_LIMIT:]
    finally:
        sys.stdout, sys.stderr = old


def main():
    init = wire.recv(RFD)
    assert init.get("op") == "init"
    params = wire.decode(init["params"], unref)
    readable = list(init.get("read", []))
    sys.modules["flashlab"] = fl = proxy_flashlab(init["data_dir"])
    sys.modules.update(stub_labkit(fl, init["student"], params, init["lab"]))
    sys.stdin = io.StringIO("")
    builtins.input = _refused("input()")
    ns = {"__name__": "__main__", "__builtins__": builtins}
    install_hook(readable)
    wire.send(WFD, {"id": init.get("id"), "ok": True})
    while True:
        try:
            msg = wire.recv(RFD)
        except EOFError:
            return
        op, mid = msg.get("op"), msg.get("id")
        if op == "exec":
            code = msg.get("code", "")
            _, err, out = captured(lambda: exec(compile(code, f"<{msg.get('label', 'cell')}>", "exec"), ns))
            wire.send(WFD, {"id": mid, "ok": err is None, "error": err, "out": out})
        elif op == "get":
            values = {}
            for n in msg.get("names", []):
                if n not in ns:
                    values[n] = {"missing": True}
                elif callable(ns[n]) and not isinstance(ns[n], type):
                    values[n] = {"function": True}
                else:
                    try:
                        values[n] = {"value": wire.encode(ns[n], ref)}
                    except wire.WireError as e:
                        values[n] = {"error": str(e)}
            wire.send(WFD, {"id": mid, "values": values})
        elif op == "call":
            fn = ns.get(msg.get("name"))
            if not callable(fn):
                wire.send(WFD, {"id": mid, "ok": False, "error": f"{msg.get('name')} is not a function here"})
                continue
            try:
                args = wire.decode(msg.get("args", []), unref)
                kwargs = wire.decode(msg.get("kwargs", {"$d": []}), unref)
            except wire.WireError as e:
                wire.send(WFD, {"id": mid, "ok": False, "error": f"arguments: {e}"})
                continue
            value, err, out = captured(lambda: fn(*args, **kwargs))
            if err is None:
                try:
                    enc = wire.encode(value, ref)
                except wire.WireError as e:
                    err, enc = f"its result cannot be checked: {e}", None
            wire.send(WFD, {"id": mid, "ok": err is None, "value": enc if err is None else None,
                            "error": err, "out": out})
        else:
            wire.send(WFD, {"id": mid, "ok": False, "error": f"unknown op {op!r}"})


if __name__ == "__main__":
    main()
