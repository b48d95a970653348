"""session.py: one student's code in its own process (child.py), driven from the grader.

A Session starts python3 -I child.py with two pipes, sends it the lab's parameters (the grader's,
never the notebook's), runs cells in it and calls the student's functions (ChildFunction), and
answers what the child asks meanwhile: flashlab's functions (run here, on this side's library,
unless the current phase does not allow them: then refused and recorded as a violation) and the
operations of a Chip whose machine lives here (flmachine.LocalChip).  Every exec and call has a
time limit; past it, or when the child dies, the child is killed and ChildDied is raised.  The
child gets an address space of at most CHILD_MEMORY bytes and no core files; its audit hook
(child.py) refuses every write.
"""
import os
import pathlib
import secrets
import select
import subprocess
import sys
import sysconfig
import tempfile
import time

import flashlab as fl
from flashlab import flmachine

from . import wire

HERE = pathlib.Path(__file__).resolve().parent
CHILD_MEMORY = 4 << 30
FL_CALLS = ("ALGOS",) + ("run", "blocks", "footprint", "mask", "mask_keep", "mask_tile", "mask_matrix", "kv_head",
                         "cu_seqlens_check", "cli", "trace", "softmax_row", "attention_ref", "osm_tiled")
_CACHE = {}   # (fn, encoded arguments) -> encoded result: the library's answers do not change


class ChildDied(RuntimeError):
    """The student's process ended (time limit, crash, or a message that is not the protocol)."""


class ChildError(RuntimeError):
    """The student's code raised: the message names the exception (and the cell's line)."""


class ChildRun:
    """An fl.run result the student's code handed back: its attributes, as plain values."""

    def __init__(self, attrs):
        if not isinstance(attrs, dict):
            raise wire.WireError("a run result that is not a set of attributes")
        self.__dict__.update({str(k): v for k, v in attrs.items()})


def _limits():
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY, CHILD_MEMORY))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    os.setsid()


def readable_roots():
    """The folders the child may read: Python's own library and site-packages, and the data."""
    paths = sysconfig.get_paths()
    roots = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if paths.get(k)}
    return sorted(roots | {str(fl.data_dir())})


class ChildFunction:
    """A function of the student's, called in the child: raises ChildError when it raises there,
    ChildDied when the child dies.  allow: the flashlab functions its calls may use."""

    def __init__(self, session, name, allow=()):
        self.session, self.__name__, self.allow = session, name, allow

    def __call__(self, *args, **kwargs):
        return self.session.call(self.__name__, args, kwargs, self.allow)

    def __repr__(self):
        return f"<the student's function {self.__name__}>"


class Session:
    """One child running one student's code for one lab.  timeout: seconds per exec or call."""

    def __init__(self, lab, student, params, timeout=30.0):
        self.lab, self.student, self.params, self.timeout = lab, student, params, timeout
        self.proc = None
        self.violations = []           # (phase, what) of every refused flashlab call
        self.phase, self.allow = "setup", None
        self._chips, self._masks, self._ids = {}, {}, 0
        self._start()

    # -- process
    def _start(self):
        r1, w1 = os.pipe()   # grader -> child
        r2, w2 = os.pipe()   # child -> grader
        self._err = tempfile.TemporaryFile()
        cwd = tempfile.mkdtemp(prefix="fl_grade_")
        self._cwd = cwd
        self.proc = subprocess.Popen([sys.executable, "-I", str(HERE / "child.py"), str(r1), str(w2),
                                      str(pathlib.Path(flmachine.__file__).parent)],
                                     pass_fds=(r1, w2), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=self._err, cwd=cwd, env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"},
                                     preexec_fn=_limits)
        os.close(r1)
        os.close(w2)
        self._w, self._r = w1, r2
        self._request({"op": "init", "params": wire.encode(self.params, self._ref), "student": self.student,
                       "lab": self.lab, "data_dir": str(fl.data_dir()), "read": readable_roots()}, 60.0)

    def close(self):
        if self.proc is not None:
            for fd in (self._w, self._r):
                try:
                    os.close(fd)
                except OSError:
                    pass
            if self.proc.poll() is None:
                try:
                    os.killpg(self.proc.pid, 9)
                except OSError:
                    pass
            self.proc.wait()
            self._err.close()
            import shutil
            shutil.rmtree(self._cwd, ignore_errors=True)
            self.proc = None
        for c in self._chips.values():
            c.close()
        self._chips.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def _die(self, why):
        err = b""
        if self.proc is not None:
            try:
                self._err.seek(0)
                err = self._err.read()[-300:]
            except (OSError, ValueError):
                pass
        self.close()
        tail = err.decode(errors="replace").strip().splitlines()[-1:] if err else []
        raise ChildDied(why + (f" ({tail[0]})" if tail else ""))

    # -- messages
    def _recv(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([self._r], [], [], left)[0]:
            self._die(f"over the time limit of {self._limit:g} s")
        try:
            return wire.recv(self._r)
        except (EOFError, wire.WireError, OSError) as e:
            self._die(f"the process running your code ended ({type(e).__name__}: {e})")

    def _request(self, msg, timeout=None):
        """Sends msg with a fresh id; serves the child's requests until the answer to it comes."""
        if not self.alive:
            raise ChildDied("the process running your code has ended")
        self._ids += 1
        msg["id"] = self._ids
        self._limit = timeout or self.timeout
        deadline = time.monotonic() + self._limit
        try:
            wire.send(self._w, msg)
        except (OSError, wire.WireError) as e:
            self._die(f"could not reach the process running your code ({e})")
        while True:
            r = self._recv(deadline)
            if "req" in r:
                self._serve(r)
            elif r.get("id") == self._ids:
                return r

    def _reply(self, k, ok, value=None, error=None):
        try:
            wire.send(self._w, {"re": k, "ok": ok, "value": value, "error": error})
        except (OSError, wire.WireError) as e:
            self._die(f"could not answer the process running your code ({e})")

    # -- handles
    def _ref(self, v):
        if isinstance(v, flmachine.Chip) and isinstance(v._b, flmachine.LocalChip):
            token = next((t for t, c in self._chips.items() if c is v._b), None)
            if token is None:
                token = secrets.token_hex(8)
                self._chips[token] = v._b
            return ["chip", token]
        if isinstance(v, flmachine.Tensor):
            return ["tensor", self._ref(v.chip)[1], v.name, v.rows, v.cols]
        if isinstance(v, fl.MaskStruct):
            mid = next((k for k, m in self._masks.items() if m is v), None)
            if mid is None:
                mid = len(self._masks) + 1
                self._masks[mid] = v
            return ["mask", mid, v.Nq, v.Nk]
        if isinstance(v, fl.RunResult):
            return ["run", {k: x for k, x in vars(v).items() if not k.startswith("_")}]
        if isinstance(v, pathlib.PurePath):
            return ["path", str(v)]
        return None

    def _unref(self, items):
        kind, *rest = items
        if kind == "run":
            return ChildRun(rest[0])
        if kind == "mask" and rest and rest[0] in self._masks:
            return self._masks[rest[0]]
        if kind == "path" and rest and isinstance(rest[0], str):
            return pathlib.Path(rest[0])
        raise wire.WireError(f"a handle of kind {kind!r} that cannot come back")

    # -- the child's requests
    def _serve(self, r):
        k = r.get("req")
        try:
            if r.get("kind") == "chip":
                chip = self._chips.get(r.get("token"))
                if chip is None:
                    raise fl.FlashlabError(1, "this machine is no longer running (its call has returned)")
                args = wire.decode(r.get("args"), self._unref)
                value = chip.do(r.get("op"), args)
            elif r.get("kind") == "fl":
                self._reply(k, True, self._fl(r.get("fn"), r.get("args"), r.get("kwargs")))
                return
            else:
                raise fl.FlashlabError(1, "an unknown request")
            self._reply(k, True, wire.encode(value, self._ref))
        except ChildDied:
            raise
        except (fl.FlashlabError, flmachine.MachineError) as e:
            self._reply(k, False, error=str(e))
        except (wire.WireError, TypeError, ValueError, KeyError, IndexError, AttributeError) as e:
            self._reply(k, False, error=f"{type(e).__name__}: {e}")

    def _fl(self, name, args, kwargs):
        """The encoded result of fl.<name>(*args, **kwargs), or FlashlabError when refused."""
        if name == "ALGOS":
            return wire.encode(list(fl.ALGOS))
        if self.allow is not None and name not in self.allow:
            self.violations.append((self.phase, name))
            raise fl.FlashlabError(1, f"fl.{name} is not available in this answer: the grader refuses the "
                                      f"library's functions that give what the exercise asks for")
        if name not in FL_CALLS:
            raise fl.FlashlabError(1, f"fl.{name} is not available while grading")
        key = (name, repr(args), repr(kwargs))
        if name != "mask" and key in _CACHE:
            return _CACHE[key]
        a = wire.decode(args, self._unref)
        kw = wire.decode(kwargs, self._unref)
        if not isinstance(a, list) or not isinstance(kw, dict) or not all(isinstance(x, str) for x in kw):
            raise fl.FlashlabError(1, f"fl.{name}: malformed arguments")
        if name == "trace" and "out" in kw:
            raise fl.FlashlabError(1, "fl.trace: no files while grading")
        value = wire.encode(getattr(fl, name)(*a, **kw), self._ref)
        if name != "mask":
            _CACHE[key] = value
        return value

    # -- what the grader asks
    def exec(self, code, label, allow=None, timeout=None):
        """Runs code in the child under `label`; allow: the flashlab functions it may call (None:
        all).  Returns (error or None, output)."""
        self.phase, self.allow = label, allow
        try:
            r = self._request({"op": "exec", "code": code, "label": label}, timeout)
        finally:
            self.phase, self.allow = "between", ()
        return (None if r.get("ok") else str(r.get("error"))), str(r.get("out") or "")

    def get(self, names, allow=()):
        """{name: value, ChildFunction, or a _Missing} of the child's variables."""
        r = self._request({"op": "get", "names": list(names)})
        out = {}
        for n, v in (r.get("values") or {}).items():
            if v.get("missing"):
                out[n] = MISSING
            elif v.get("function"):
                out[n] = ChildFunction(self, n, allow)
            elif "error" in v:
                out[n] = Unsendable(str(v["error"]))
            else:
                try:
                    out[n] = wire.decode(v.get("value"), self._unref)
                except wire.WireError as e:
                    out[n] = Unsendable(str(e))
        return out

    def call(self, name, args, kwargs, allow=()):
        self.phase, self.allow = f"call {name}", allow
        try:
            r = self._request({"op": "call", "name": name, "args": wire.encode(list(args), self._ref),
                               "kwargs": wire.encode(dict(kwargs), self._ref)})
        finally:
            self.phase, self.allow = "between", ()
        if not r.get("ok"):
            raise ChildError(str(r.get("error")))
        try:
            return wire.decode(r.get("value"), self._unref)
        except wire.WireError as e:
            raise ChildError(f"its result cannot be checked: {e}")


class _Missing:
    def __repr__(self):
        return "(not defined)"


MISSING = _Missing()


class Unsendable:
    """A variable whose value cannot cross (a type the grader does not take)."""

    def __init__(self, why):
        self.why = why

    def __repr__(self):
        return f"(a value that cannot be checked: {self.why})"
