"""kernel_describe.py: kernel descriptions, the data from which scripts/explain_kernels.py knows a
kernel it did not write (docs/your_kernel.md §1): its schedule family, tiles, grid mapping and
the rest of what `flashlab l2 --launch` needs.  The descriptions of the libraries of
docs/third_party.md are shipped in scripts/kernel_descriptions/; a user's own go in a file given
with --describe, read before them.

A description file is JSON: {"description": TEXT, "kernels": [ENTRY, ...]}.  An ENTRY applies to
a profiled kernel when its `kernel` regex is found in the kernel's base name (the function name
without namespaces, template arguments or parameters) and, when given, its `name` regex in the
demangled name; the first entry that applies, over the files in order, describes the kernel.

  kernel     regex searched in the base name                                          (required)
  name       regex searched in the demangled name; the entry applies only if found
  notes      regex searched in the region's notes (the program's JSON line); need not match
  library    the label of the `lib` column                                            (required)
  family     the launch model's family (flashlab l2 --launch --help), or "none": a
             kernel that is not part of attention's schedule (listed, not modelled)   (required)
  Br, Bc     query and key tile rows: expressions                                     (required)
  Br2, Bc2   bwd-twopass's dQ pass: BLOCK_M2, BLOCK_N2                                [Br, Bc]
  grid       what grid x, y, z run: "tiles" (the work items of a head: query tiles, or key
             tiles for the key-outer backwards), "heads", "batch", "batch*heads", "splits"
             (split-KV: the key ranges), "ctas" (a persistent grid: CTAs that take work
             items in turn), "1", or "any" (not checked: a grid-stride loop)
                                                                  [["tiles", "heads", "batch"]]
  splits     split-KV: the key ranges per query tile (fwd-q, combine)  [the grid's splits axis, 1]
  order      "tile" or "head": which index the grid runs fastest       [from grid: tiles first]
  gqa        how query heads map onto K/V heads: "consecutive" (the only mapping the
             model has)                                                        [consecutive]
  atomic_dq  bwd-kv: dQ reduced in L2 (atomics)                                      [false]
  zero_dq    pre: also writes the fp32 dQ accumulator = 0                            [false]
  consumers, wg_tile   warpgroups of a warp-specialized CTA that share the resident tile
             (an expression) and which tile they share ("Br" or "Bc"): match tries the
             tile times consumers when the name's tile misses                   [1, none]
  static, longest_first, pairs   the persistent and causal orders of l2 --launch    [false]
  dtype      fp16, bf16 or fp32: the kernel's element type        [the problem's dtype]
  defaults   {capture: expression} for captures of `notes` that did not match
  source     where these facts come from (the library's source, its naming); {name}
             is replaced by the value of name                                         (required)

Expressions are integer arithmetic (+ - * // %, comparisons, `a if c else b`) over: the problem
B, H, Hkv, N, d, causal; the launch gx, gy, gz, ctas (= gx gy gz), threads (per CTA), cluster;
the named groups of the regexes (integers); the tiles evaluated before (Br, Bc, Br2, Bc2); and the
functions min, max, cdiv(a, b) and pow2_tile(n, tiles): the power of two p with cdiv(n, p) =
tiles (a Triton grid cdiv(N, BLOCK_M) for any N), at most n.
"""
import ast
import json
import os
import re

KEYS = {"kernel", "name", "notes", "library", "family", "Br", "Bc", "Br2", "Bc2", "splits", "grid", "order", "gqa", "atomic_dq",
        "zero_dq", "consumers", "wg_tile", "static", "longest_first", "pairs", "dtype", "defaults", "source"}
ROLES = {"tiles", "heads", "batch", "batch*heads", "heads*batch", "splits", "ctas", "1", "any"}
RESERVED = {"B", "H", "Hkv", "N", "d", "causal", "gx", "gy", "gz", "ctas", "threads", "cluster", "Br", "Bc", "Br2",
            "Bc2", "splits", "consumers"}
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernel_descriptions")


class DescriptionError(ValueError):
    """A description that breaks a rule: the message names the file, the entry and the rule."""


def cdiv(a, b):
    return -(-a // b)


def pow2_tile(n, tiles):
    """The power of two p with cdiv(n, p) == tiles, at most n (so that a tile fits the sequence);
    tiles = 1: n.  ValueError when none exists (the grid is not cdiv(n, a power of two))."""
    if tiles == 1:
        return n
    p = 1
    while p < n:
        if cdiv(n, p) == tiles:
            return p
        p *= 2
    raise ValueError(f"no power of two p has cdiv({n}, p) = {tiles}")


FUNCS = {"min": min, "max": max, "cdiv": cdiv, "pow2_tile": pow2_tile}
BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
          ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b}
CMPS = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
        ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b}


def compile_expr(text, where):
    """Parses an expression (an int, or a string of the grammar above); DescriptionError if it is not one."""
    if isinstance(text, bool) or not isinstance(text, (int, str)):
        raise DescriptionError(f"{where}: an integer or an expression, not {json.dumps(text)}")
    if isinstance(text, int):
        return ast.Expression(body=ast.Constant(text))
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise DescriptionError(f"{where}: '{text}' is not an expression") from None
    for node in ast.walk(tree):
        ok = isinstance(node, (ast.Expression, ast.Constant, ast.Name, ast.Load, ast.BinOp, ast.UnaryOp, ast.USub,
                               ast.Compare, ast.IfExp, ast.BoolOp, ast.And, ast.Or, ast.Call)) or \
            type(node) in BINOPS or type(node) in CMPS
        if isinstance(node, ast.Constant) and (isinstance(node.value, bool) or not isinstance(node.value, int)):
            ok = False
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in FUNCS
                                               and not node.keywords):
            ok = False
        if not ok:
            raise DescriptionError(f"{where}: '{text}': only integers, names, + - * // %, comparisons, "
                                   f"'a if c else b' and min, max, cdiv, pow2_tile")
    return tree


def evaluate(tree, env, where, defaults=None, used=None):
    """The integer value of a compiled expression; DescriptionError naming a missing name.  A name
    missing from env that `defaults` has is evaluated from it when first needed (added to env, and
    its name to `used`)."""
    def ev(n):
        if isinstance(n, ast.Expression):
            return ev(n.body)
        if isinstance(n, ast.Constant):
            return n.value
        if isinstance(n, ast.Name):
            if n.id not in env and defaults and n.id in defaults:
                env[n.id] = evaluate(defaults[n.id], env, f"{where}: defaults: {n.id}")
                if used is not None:
                    used.append(n.id)
            if n.id not in env and n.id in ("gx", "gy", "gz", "ctas", "threads"):
                raise DescriptionError(f"{where}: '{n.id}' is the launch's, which was not given (--grid, --threads)")
            if n.id not in env:
                raise DescriptionError(f"{where}: '{n.id}' is not known here (the problem, the launch, the regexes' "
                                       f"groups and the tiles before it are)")
            return env[n.id]
        if isinstance(n, ast.BinOp):
            a, b = ev(n.left), ev(n.right)
            if type(n.op) in (ast.FloorDiv, ast.Mod) and b == 0:
                raise DescriptionError(f"{where}: division by zero")
            return BINOPS[type(n.op)](a, b)
        if isinstance(n, ast.UnaryOp):
            return -ev(n.operand)
        if isinstance(n, ast.Compare):
            a = ev(n.left)
            for op, c in zip(n.ops, n.comparators):
                b = ev(c)
                if not CMPS[type(op)](a, b):
                    return False
                a = b
            return True
        if isinstance(n, ast.BoolOp):
            vals = [ev(v) for v in n.values]
            return all(vals) if isinstance(n.op, ast.And) else any(vals)
        if isinstance(n, ast.IfExp):
            return ev(n.body) if ev(n.test) else ev(n.orelse)
        args = [ev(x) for x in n.args]
        try:
            return FUNCS[n.func.id](*args)
        except (ValueError, TypeError) as e:
            raise DescriptionError(f"{where}: {n.func.id}: {e}") from None
    return int(ev(tree))


def _bool(e, key, where):
    v = e.get(key, False)
    if not isinstance(v, bool):
        raise DescriptionError(f"{where}: {key}: true or false, not {json.dumps(v)}")
    return v


def _regex(e, key, where):
    if key not in e:
        return None
    if not isinstance(e[key], str):
        raise DescriptionError(f"{where}: {key}: a regular expression (a string)")
    try:
        rx = re.compile(e[key])
    except re.error as x:
        raise DescriptionError(f"{where}: {key}: '{e[key]}' is not a regular expression ({x})") from None
    clash = set(rx.groupindex) & RESERVED
    if clash:
        raise DescriptionError(f"{where}: {key}: group '{sorted(clash)[0]}' would hide a quantity of that name; "
                               f"call it otherwise")
    return rx


def _entry(e, where):
    """One entry, checked and compiled."""
    if not isinstance(e, dict):
        raise DescriptionError(f"{where}: an object")
    unknown = sorted(set(e) - KEYS)
    if unknown:
        raise DescriptionError(f"{where}: unknown key '{unknown[0]}' (keys: {', '.join(sorted(KEYS))})")
    for key in ("kernel", "library", "family", "source"):
        if not isinstance(e.get(key), str) or not e[key]:
            raise DescriptionError(f"{where}: {key}: required (a string)")
    where = f"{where} ({e['kernel']})"
    d = dict(kernel=_regex(e, "kernel", where), name=_regex(e, "name", where), notes=_regex(e, "notes", where),
             library=e["library"], family=e["family"], source=e["source"], where=where)
    if d["family"] == "none":
        return d
    for key in ("Br", "Bc"):
        if key not in e:
            raise DescriptionError(f"{where}: {key}: required for family {d['family']}")
    d["exprs"] = {k: compile_expr(e[k], f"{where}: {k}") for k in ("Br", "Bc", "Br2", "Bc2", "splits", "consumers")
                  if k in e}
    grid = e.get("grid", ["tiles", "heads", "batch"])
    if not isinstance(grid, list) or not 1 <= len(grid) <= 3 or any(g not in ROLES for g in grid):
        raise DescriptionError(f"{where}: grid: a list of 1 to 3 of {', '.join(sorted(ROLES))}")
    d["grid"] = grid + ["1"] * (3 - len(grid))
    order = e.get("order")
    if order is None:
        pos = lambda roles: min([i for i, g in enumerate(d["grid"]) if g in roles] or [3])
        order = "tile" if pos({"tiles"}) <= pos({"heads", "batch", "batch*heads", "heads*batch"}) else "head"
    if order not in ("tile", "head"):
        raise DescriptionError(f"{where}: order: tile or head")
    d["order"] = order
    if e.get("gqa", "consecutive") != "consecutive":
        raise DescriptionError(f"{where}: gqa: only 'consecutive' (query heads h G .. h G + G - 1 share K/V head h) "
                               f"is modelled")
    for key in ("atomic_dq", "zero_dq", "static", "longest_first", "pairs"):
        d[key] = _bool(e, key, where)
    d["wg_tile"] = e.get("wg_tile")
    if d["wg_tile"] not in (None, "Br", "Bc") or (("consumers" in e) != (d["wg_tile"] is not None)):
        raise DescriptionError(f"{where}: consumers and wg_tile: both or neither; wg_tile is Br or Bc")
    if e.get("dtype", "fp16") not in ("fp16", "bf16", "fp32"):
        raise DescriptionError(f"{where}: dtype: fp16, bf16 or fp32")
    d["dtype"] = e.get("dtype")
    defaults = e.get("defaults", {})
    if not isinstance(defaults, dict):
        raise DescriptionError(f"{where}: defaults: an object of capture: expression")
    d["defaults"] = {k: compile_expr(v, f"{where}: defaults: {k}") for k, v in defaults.items()}
    return d


def load(path):
    """The entries of one description file, checked; DescriptionError naming the file otherwise."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        raise DescriptionError(f"{path}: cannot be read ({e.strerror})") from None
    except ValueError as e:
        raise DescriptionError(f"{path}: not JSON ({e})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("kernels"), list) or not doc["kernels"]:
        raise DescriptionError(f'{path}: an object {{"description": ..., "kernels": [...]}} with at least one kernel')
    out = []
    for i, e in enumerate(doc["kernels"]):
        d = _entry(e, f"{os.path.basename(path)}: kernels[{i}]")
        d["file"] = os.path.basename(path)
        out.append(d)
    return out


def load_all(user_files=()):
    """The user's files (in order), then the shipped ones (scripts/kernel_descriptions/*.json, by name)."""
    shipped = sorted(os.path.join(HERE, f) for f in os.listdir(HERE) if f.endswith(".json"))
    entries = []
    for p in list(user_files) + shipped:
        entries += load(p)
    return entries


def _int_groups(m):
    out = {}
    for k, v in (m.groupdict() if m else {}).items():
        if v is not None and re.fullmatch(r"-?\d+", v):
            out[k] = int(v)
    return out


def find(entries, base, name):
    """The first entry whose kernel (and name) regexes match, with its regexes' groups; or (None, {})."""
    for d in entries:
        m = d["kernel"].search(base)
        if not m:
            continue
        groups = _int_groups(m)
        if d["name"] is not None:
            n = d["name"].search(name)
            if not n:
                continue
            groups.update(_int_groups(n))
        return d, groups
    return None, {}


def expected_extent(role, fam, v, N, B, H):
    """What a grid axis of this role must be, or None when it is free (splits, ctas, any)."""
    if role == "tiles":
        if fam in ("bwd-kv", "bwd-memeff"):
            return cdiv(N, v["Bc"])
        if fam == "bwd-twopass":
            return N // v["Bc"]
        Tr = cdiv(N, v["Br"])
        return cdiv(Tr, 2) if v.get("pairs") else Tr
    return {"heads": H, "batch": B, "batch*heads": B * H, "heads*batch": B * H, "1": 1}.get(role)


def describe(d, groups, env, notes_text):
    """The identification of one kernel from its entry: lib, family, tiles, order, persistent,
    splits, cluster, atomics, the consumer hypothesis, where it came from and the grid check.
    DescriptionError when an expression cannot be evaluated."""
    env = dict(env, **groups)
    used_defaults = []
    if d.get("notes") is not None:
        m = d["notes"].search(notes_text or "")
        env.update(_int_groups(m))
    if d["family"] == "none":
        return dict(lib=d["library"], family="none", source=f"{d['file']}: {d['source']}")
    v = {}
    for key in ("Br", "Bc", "Br2", "Bc2", "splits", "consumers"):
        if key in d["exprs"]:
            v[key] = evaluate(d["exprs"][key], env, f"{d['where']}: {key}", d["defaults"], used_defaults)
            env[key] = v[key]
    v.setdefault("consumers", 1)
    dims = (env.get("gx"), env.get("gy"), env.get("gz"))  # None: no launch (a prediction before profiling)
    for role in ("ctas", "splits"):
        if role in d["grid"] and dims[0] is None and not (role == "splits" and "splits" in v):
            raise DescriptionError(f"{d['where']}: grid: its '{role}' axis is the launch's: give the grid")
    persistent = env["ctas"] if "ctas" in d["grid"] else 0
    splits = v.get("splits", next((dims[i] for i, g in enumerate(d["grid"]) if g == "splits"), 1))
    check = [] if dims[0] is not None else ["not checked (no grid given)"]
    for axis, role, got in zip("xyz", d["grid"], dims):
        want = expected_extent(role, d["family"], dict(v, pairs=d["pairs"]), env["N"], env["B"], env["H"])
        if got is not None and want is not None and want != got:
            check.append(f"grid {axis} = {got}, the description's {role} = {want}")
    source = re.sub(r"\{(\w+)\}", lambda m: str(env.get(m[1], m[0])), d["source"])
    if used_defaults:
        source += f" ({', '.join(used_defaults)}: the description's default, not in the region's notes)"
    return dict(lib=d["library"], family=d["family"], Br=v["Br"], Bc=v["Bc"], Br2=v.get("Br2", 0), Bc2=v.get("Bc2", 0),
                order=d["order"], persistent=persistent, cluster=env.get("cluster", 1), splits=splits,
                atomic=int(d["atomic_dq"]), zero_dq=int(d["zero_dq"]), static=d["static"],
                longest_first=d["longest_first"], pairs=d["pairs"], dtype=d["dtype"],
                wg_tile=d["wg_tile"], consumers=v["consumers"], source=f"{d['file']}: {source}",
                grid_check="; ".join(check) or "ok")
