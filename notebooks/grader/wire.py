"""wire.py: what crosses between the grader and the process that runs a student's code.

Messages are JSON objects, each sent as a 4-byte big-endian length and its UTF-8 text, at most
MAX_MESSAGE bytes (a larger one ends the conversation: the reader raises WireError).  Values inside
a message are encoded so that only plain data crosses, never code (no pickle): None, booleans,
integers, strings, finite floats and lists as themselves; everything else as a one-key object:

    {"$f": "inf" | "-inf" | "nan"}     a float that JSON cannot hold
    {"$t": [...]}  {"$s": [...]}       a tuple, a set (or frozenset)
    {"$d": [[key, value], ...]}        a dict (any encodable keys)
    {"$ref": [kind, ...]}              a handle the two sides agree on (a chip, a tensor, a mask,
                                       a function of the student's, a run's result): see refs

encode() takes a function `ref(obj)` returning [kind, ...] for the objects it knows (or None) and
decode() a function `unref(list)` building them back.  Anything else is refused (WireError naming
its type); depth is limited to MAX_DEPTH.
"""
import json
import math
import os
import struct

MAX_MESSAGE = 32 << 20
MAX_DEPTH = 64


class WireError(RuntimeError):
    """A message or a value that cannot cross (too large, too deep, not plain data, malformed)."""


def encode(v, ref=None, depth=0):
    if depth > MAX_DEPTH:
        raise WireError(f"a value nested more than {MAX_DEPTH} deep")
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        if math.isfinite(v):
            return v
        return {"$f": "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")}
    if isinstance(v, list):
        return [encode(x, ref, depth + 1) for x in v]
    if isinstance(v, tuple):
        return {"$t": [encode(x, ref, depth + 1) for x in v]}
    if isinstance(v, (set, frozenset)):
        return {"$s": [encode(x, ref, depth + 1) for x in v]}
    if isinstance(v, dict):
        return {"$d": [[encode(k, ref, depth + 1), encode(x, ref, depth + 1)] for k, x in v.items()]}
    r = ref(v) if ref else None
    if r is not None:
        return {"$ref": [encode(x, None, depth + 1) for x in r]}
    try:   # numbers of other libraries (numpy's) as plain numbers
        import numbers
        if isinstance(v, numbers.Integral):
            return int(v)
        if isinstance(v, numbers.Real):
            return encode(float(v))
    except Exception:
        pass
    raise WireError(f"cannot send a value of type {type(v).__name__}")


def _hashable(x):
    if isinstance(x, list):
        return tuple(_hashable(y) for y in x)
    return x


def decode(v, unref=None, depth=0):
    if depth > MAX_DEPTH:
        raise WireError(f"a value nested more than {MAX_DEPTH} deep")
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, list):
        return [decode(x, unref, depth + 1) for x in v]
    if isinstance(v, dict) and len(v) == 1:
        (tag, x), = v.items()
        if tag == "$f" and x in ("inf", "-inf", "nan"):
            return float(x)
        if tag in ("$t", "$s", "$d", "$ref") and isinstance(x, list):
            items = [decode(y, unref, depth + 1) for y in x]
            if tag == "$t":
                return tuple(items)
            if tag == "$s":
                try:
                    return {_hashable(y) for y in items}
                except TypeError:
                    raise WireError("a set of unhashable values")
            if tag == "$d":
                if not all(isinstance(p, list) and len(p) == 2 for p in items):
                    raise WireError("a dict entry that is not a [key, value] pair")
                try:
                    return {_hashable(k): y for k, y in items}
                except TypeError:
                    raise WireError("a dict with unhashable keys")
            if unref is None:
                raise WireError("a handle where none is expected")
            return unref(items)
    raise WireError(f"a malformed value: {str(v)[:80]}")


def send(fd, msg):
    """Writes one message (a JSON-able dict) to fd."""
    data = json.dumps(msg, allow_nan=False, separators=(",", ":")).encode()
    if len(data) > MAX_MESSAGE:
        raise WireError(f"a message of {len(data)} bytes (the limit is {MAX_MESSAGE})")
    view = memoryview(struct.pack(">I", len(data)) + data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _read_exact(fd, n):
    chunks, got = [], 0
    while got < n:
        b = os.read(fd, min(n - got, 1 << 20))
        if not b:
            raise EOFError("the other side closed the connection")
        chunks.append(b)
        got += len(b)
    return b"".join(chunks)


def recv(fd):
    """Reads one message from fd (blocking): a dict.  EOFError when the other side is gone;
    WireError when what arrives is not a message."""
    (n,) = struct.unpack(">I", _read_exact(fd, 4))
    if n > MAX_MESSAGE:
        raise WireError(f"a message of {n} bytes announced (the limit is {MAX_MESSAGE})")
    try:
        msg = json.loads(_read_exact(fd, n).decode())
    except (UnicodeDecodeError, ValueError) as e:
        raise WireError(f"not a message: {e}")
    if not isinstance(msg, dict):
        raise WireError("a message that is not an object")
    return msg
