"""kernel_source.py: the hash of a kernel version's source, defined once: bench/gpu_sdpa.py writes it
into a record's provenance (`# kernel source:` line) and tests/check_gpu_records.py recomputes it,
from today's tree and from the commit the record names, to tie the record to the code it measured.
No torch, no GPU.

A version's source: its ladder file kernels/ladder/vNN_*.cu and every file it includes, transitively,
found where the kernels' build finds them (the including file's folder, then kernels/common,
kernels/harness and include: FL_KERNEL_INCLUDES of kernels/CMakeLists.txt, and kernels/ladder for
files the ladder keeps); a header found in none of them (the system's, CUDA's) is not part of it,
nor is kernels/ladder/ladder.def, the list of the rungs, which every rung includes (through attn.h)
for the other rungs' declarations only: adding a rung is a line there and leaves every other
rung's source as it was (scripts/check_ladder.py keeps the file to FL_RUNG lines).
Its hash: the sha256 of the sorted sha256 hex digests of the files' contents, so moving or renaming
a file leaves it alone and any change to the contents changes it.

  python3 bench/kernel_source.py VERSION [COMMIT]   prints the provenance line (today's tree, or COMMIT's)
"""
import hashlib
import os
import re
import subprocess
import sys

INCLUDE_DIRS = ("kernels/common", "kernels/harness", "include", "kernels/ladder")
LIST = "kernels/ladder/ladder.def"  # the rungs' list: no rung's code (module docstring)
INCLUDE_RE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]+)[>"]', re.M)
LINE_RE = re.compile(r"kernel source: version (\d+) sha256 ([0-9a-f]{64}) of (\d+) files .*?at commit ([0-9a-f]{7,40}(?:\+dirty)?|unknown)")


class WorkingTree:
    """Files of a checkout on disk, by path relative to its root."""

    def __init__(self, root):
        self.root = root

    def read(self, path):
        try:
            with open(os.path.join(self.root, path), "rb") as f:
                return f.read()
        except OSError:
            return None

    def ladder(self):
        try:
            return ["kernels/ladder/" + f for f in os.listdir(os.path.join(self.root, "kernels", "ladder"))]
        except OSError:
            return []


class GitTree:
    """Files of one commit of the repository at root (git show), by path.  .ok is False when git
    cannot read the commit (not a repository, a shallow clone without it, an unknown commit)."""

    def __init__(self, root, commit):
        self.root, self.commit = root, commit
        ls = self._git("ls-tree", "-r", "--name-only", commit)
        self.ok = ls is not None
        self.paths = set(ls.decode().split("\n")) - {""} if ls is not None else set()

    def _git(self, *args):
        try:
            p = subprocess.run(["git", "-C", self.root, *args], capture_output=True)
        except OSError:
            return None
        return p.stdout if p.returncode == 0 else None

    def read(self, path):
        return self._git("show", f"{self.commit}:{path}") if path in self.paths else None

    def ladder(self):
        return [p for p in self.paths if p.startswith("kernels/ladder/")]


def ladder_file(tree, version):
    """The ladder file of version (kernels/ladder/vNN_*.cu), or None."""
    hits = sorted(p for p in tree.ladder() if re.fullmatch(rf"kernels/ladder/v{int(version):02d}_\w+\.cu", p))
    return hits[0] if hits else None


def source_files(tree, version):
    """{path: contents} of the version's source (module docstring), or {} without its ladder file."""
    first = ladder_file(tree, version)
    if first is None:
        return {}
    files, todo = {}, [first]
    while todo:
        p = todo.pop()
        if p in files:
            continue
        text = tree.read(p)
        if text is None or p == LIST:
            continue
        files[p] = text
        for m in INCLUDE_RE.finditer(text):
            inc = m.group(1).decode()
            for d in (os.path.dirname(p),) + INCLUDE_DIRS:
                q = os.path.normpath(os.path.join(d, inc))
                if q not in files and tree.read(q) is not None:
                    todo.append(q)
                    break
    return files


def source_hash(tree, version):
    """(sha256 hex, sorted paths) of the version's source in tree; (None, []) without its ladder file."""
    files = source_files(tree, version)
    if not files:
        return None, []
    digests = sorted(hashlib.sha256(t).hexdigest() for t in files.values())
    return hashlib.sha256("".join(digests).encode()).hexdigest(), sorted(files)


def provenance_line(version, digest, paths, commit):
    """The `# kernel source:` line (without "# ") a record carries for one version of ours."""
    first = next((p for p in paths if p.startswith("kernels/ladder/")), "?")
    return (f"kernel source: version {int(version)} sha256 {digest} of {len(paths)} files ({first} and what it "
            f"includes, bench/kernel_source.py) at commit {commit or 'unknown'}")


def parse(lines):
    """{version: (sha256, commit)} of the `# kernel source:` lines among lines."""
    out = {}
    for line in lines:
        m = LINE_RE.search(line) if line.startswith("#") else None
        if m:
            out[int(m.group(1))] = (m.group(2), m.group(4))
    return out


def main(argv):
    if len(argv) not in (2, 3) or not argv[1].isdigit():
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    tree = GitTree(root, argv[2]) if len(argv) == 3 else WorkingTree(root)
    if len(argv) == 3 and not tree.ok:
        print(f"kernel_source: commit {argv[2]}: git cannot read it here", file=sys.stderr)
        return 2
    digest, paths = source_hash(tree, argv[1])
    if digest is None:
        print(f"kernel_source: version {argv[1]}: no kernels/ladder/v{int(argv[1]):02d}_*.cu", file=sys.stderr)
        return 2
    print(provenance_line(argv[1], digest, paths, argv[2] if len(argv) == 3 else None))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
