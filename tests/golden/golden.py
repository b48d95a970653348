"""golden.py: the shared half of record.py and check.py (Python 3 standard library only).

A golden file (tests/golden/GROUP.txt) holds, per command, one record:

    #### cmd: flashlab count --N 64 --d 8          the command (shell words; VAR=value first sets
                                                    an environment variable)
    #### setup: mkfifo pipe                         optional: /bin/sh run first in the command's
                                                    directory; $FLASHLAB names the CLI
    #### exit: 0                                    the exit status
    #### stdout                                     then stdout, each line prefixed by "| ";
    | ...                                           "\\ no newline at end" when the last line
    #### stderr                                     has none
    | ...
    #### file: out.csv                              each file the command left in its directory
    | ...                                           (setup's too), in name order

Every command runs in a fresh empty directory, with stdin /dev/null, argv[0] "flashlab" and the
environment PATH, LC_ALL=C, TZ=UTC, HOME=<its directory> plus the command's own VAR=value.

The provenance filter `normalise` is applied to stdout, stderr and files, when recording and
when checking, and does only this:
  1. the command's directory (and its real path)  -> <DIR>
  2. the CLI's path (and its real path)           -> <CLI>
  3. "flashlab X.Y.Z" (the version string)         -> "flashlab <VERSION>"
Nothing else is filtered.
"""
import concurrent.futures
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import tempfile

HEAD = "#### "
ENV_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
VERSION = re.compile(r"flashlab [0-9]+\.[0-9]+\.[0-9]+[0-9A-Za-z.+~-]*")
MAX_TEXT_FILE = 256 * 1024
TIMEOUT_S = 900   # per command: a hang is caught; a sanitizer build on a loaded machine is not


class Command:
    """One recorded command: its words (env assignments first, then flashlab ARGS) and setup."""

    def __init__(self, line, setup=None):
        self.line = line
        self.setup = setup
        words = shlex.split(line)
        self.env = {}
        while words and ENV_WORD.match(words[0]):
            k, v = words.pop(0).split("=", 1)
            self.env[k] = v
        if not words or words[0] != "flashlab":
            raise ValueError("not a flashlab command: " + line)
        self.args = words[1:]


def command(args, env=None, setup=None):
    """A Command from a list of arguments (without 'flashlab') and an env dict."""
    words = ["%s=%s" % (k, shlex.quote(v)) for k, v in (env or {}).items()]
    line = " ".join(words + [shlex.join(["flashlab"] + list(args))])
    c = Command(line, setup)
    assert c.args == list(args) and c.env == (env or {}), line
    return c


def normalise(text, rundir, cli):
    """The provenance filter (see the module comment)."""
    pairs = []
    for path, name in ((rundir, "<DIR>"), (cli, "<CLI>")):
        for p in {path, os.path.realpath(path)}:
            pairs.append((p, name))
    for p, name in sorted(pairs, key=lambda x: -len(x[0])):  # longest first
        text = text.replace(p, name)
    return VERSION.sub("flashlab <VERSION>", text)


def _block(title, data, rundir, cli):
    text = normalise(data.decode("utf-8", errors="backslashreplace"), rundir, cli)
    out = [HEAD + title]
    if text:
        lines = text.split("\n")
        last_open = lines[-1] != ""
        if not last_open:
            lines.pop()
        out += ["| " + ln for ln in lines]
        if last_open:
            out.append("\\ no newline at end")
    return out


def _files(rundir, cli):
    out = []
    for root, dirs, names in os.walk(rundir):
        dirs.sort()
        for n in sorted(names):
            path = os.path.join(root, n)
            rel = os.path.relpath(path, rundir)
            if os.path.islink(path):
                out.append(HEAD + "file: %s -> link to %s" % (rel, os.readlink(path)))
                continue
            if not os.path.isfile(path):
                out.append(HEAD + "file: %s (not a regular file)" % rel)
                continue
            with open(path, "rb") as f:
                data = f.read()
            try:
                data.decode("utf-8")
                text = len(data) <= MAX_TEXT_FILE
            except UnicodeDecodeError:
                text = False
            if text:
                out += _block("file: " + rel, data, rundir, cli)
            else:
                out.append(HEAD + "file: %s (%d bytes, sha256 %s)"
                           % (rel, len(data), hashlib.sha256(data).hexdigest()))
    return out


def run(cmd, cli, tmpbase=None):
    """Runs one Command; returns its record as a list of lines, and whether its setup failed."""
    cli = os.path.abspath(cli)
    rundir = tempfile.mkdtemp(prefix="flgold", dir=tmpbase)
    try:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "TZ": "UTC",
               "HOME": rundir}
        rec = [HEAD + "cmd: " + cmd.line]
        if cmd.setup is not None:
            rec.append(HEAD + "setup: " + cmd.setup)
            s = subprocess.run(["/bin/sh", "-c", cmd.setup], cwd=rundir, env=dict(env, FLASHLAB=cli),
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=TIMEOUT_S)
            if s.returncode != 0:
                rec.append(HEAD + "setup failed: exit %d (the command was not run)" % s.returncode)
                return rec, True
        env.update(cmd.env)
        try:
            p = subprocess.run(["flashlab"] + cmd.args, executable=cli, cwd=rundir, env=env,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=TIMEOUT_S)
            rec.append(HEAD + "exit: %d" % p.returncode)
            out, err = p.stdout, p.stderr
        except subprocess.TimeoutExpired as e:
            rec.append(HEAD + "exit: timeout after %d s" % TIMEOUT_S)
            out, err = e.stdout or b"", e.stderr or b""
        rec += _block("stdout", out, rundir, cli)
        rec += _block("stderr", err, rundir, cli)
        rec += _files(rundir, cli)
        return rec, False
    finally:
        shutil.rmtree(rundir, ignore_errors=True)


def run_all(cmds, cli, jobs=None, tmpbase=None):
    """Runs Commands in parallel (order kept); returns [(record lines, setup_failed)]."""
    jobs = jobs or os.cpu_count() or 2
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
        return list(ex.map(lambda c: run(c, cli, tmpbase), cmds))


def parse(path):
    """The records of a golden file: [(Command, record lines)]."""
    recs = []
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    cur = None
    for ln in lines:
        if ln.startswith(HEAD + "cmd: "):
            cur = [ln]
            recs.append(cur)
        elif cur is None:
            if ln.startswith("#") or not ln.strip():
                continue  # the file's leading comment
            raise ValueError("%s: a line before the first record: %r" % (path, ln))
        else:
            cur.append(ln)
    out = []
    for rec in recs:
        setup = None
        if len(rec) > 1 and rec[1].startswith(HEAD + "setup: "):
            setup = rec[1][len(HEAD + "setup: "):]
        out.append((Command(rec[0][len(HEAD + "cmd: "):], setup), rec))
    return out


def write(path, group, records):
    """Writes a golden file: a comment naming its group and how it was made, then the records."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("# flashlab golden outputs: %s (%d commands).  Written by tests/golden/record.py"
                " --update;\n# checked by tests/golden/check.py.  Format: tests/golden/golden.py."
                "\n" % (group, len(records)))
        for rec in records:
            f.write("\n".join(rec) + "\n")
