#!/usr/bin/env python3
"""A hostile battery for the `flashlab` command line: bad values, output-path attacks, write
errors, work and memory limits, flags given values, partial results, control characters.

usage: PYTHONPATH=tests/support battery.py CLI LIB [--slow] [--jobs N] [--only SUBSTR] [--list] [--verbose]

CLI is the built `flashlab`, LIB the built libflashlab.so (passed to binding.py, the Python
binding's cases, which this script runs as one more case group).  Every case is a row: the
arguments, the environment, a setup in its own temporary directory, and what must hold after:
the exit status, stderr exactly one line naming the input (and no control characters but its
final newline), every file the setup made untouched and no new file but those expected (no temp
leftovers), a ceiling on CPU time (user + system: work done before a refusal shows there, and a
busy machine does not inflate it) and on peak memory (ru_maxrss).  Wall time only catches hangs:
a case still running after kill_after() is killed and fails.  Every time is multiplied by the
time scale (tests/support/time_scale.py: FLASHLAB_TIME_SCALE, else the load per CPU).  Prints one line per failing
case and a summary; exits 1 when a case fails.  --slow adds the cases that run the full
`report` or `plot` (minutes of CPU).
"""
import concurrent.futures
import hashlib
import math
import os
import resource
import signal
import stat
import subprocess
import sys
import tempfile
import time

CLI = LIB = None
HERE = os.path.dirname(os.path.abspath(__file__))
from time_scale import time_scale   # tests/support, on PYTHONPATH (ctest sets it)
DEFAULT_TIME = 3.0       # CPU seconds a refusal may take (times the time scale)
DEFAULT_MEM_MB = 256     # peak resident memory of a refusal
KILL_AFTER = 20.0        # wall seconds of the reference runs some checks make (times the scale)
SCALE = 1.0              # tests/support/time_scale.py's factor, set by main


class Case:
    """One row of the battery.

    argv      the arguments after the CLI
    rc        expected exit status: an int, or 'nonzero' (exited with status >= 1, no signal)
    mention   strings of which at least one must appear in the stderr line (None: no check)
    lines     1: stderr is exactly one line; 'last': the error is the last line (commands with
              progress on stderr); None: not checked
    setup     fn(work) making files in the case's working directory before the run
    creates   paths (relative to work) the run may create; anything else new is a leftover
    changes   pre-existing paths the run may change
    check     fn(work, res) -> list of problems, for what the columns above cannot say
    stdout    'pipe', 'devfull', 'closed' or 'file' (work/../stdout.txt)
    fsize     RLIMIT_FSIZE in bytes (SIGXFSZ left at its default)
    umask     the process umask
    vmem_mb   RLIMIT_AS in MiB
    time      CPU seconds allowed (x the time scale); mem_mb peak resident MiB allowed
    sig       (delay seconds, signal) sent to the CLI mid-run
    core      RLIMIT_CORE in bytes (None: inherited)
    cpu_s     RLIMIT_CPU in seconds (None: inherited; SIGXCPU at the soft limit ends the run)
    stdout_empty  stdout must be empty (a refusal prints nothing else)
    """

    def __init__(self, group, name, argv, rc=2, mention=None, lines=1, setup=None, creates=(),
                 changes=(), check=None, stdout="pipe", fsize=None, umask=0o022, vmem_mb=None,
                 time_limit=DEFAULT_TIME, mem_mb=DEFAULT_MEM_MB, sig=None, stdout_empty=None,
                 env=None, stdin=None, slow=False, runner=None, core=None, cpu_s=None):
        self.group, self.name, self.argv = group, name, list(argv)
        self.rc, self.mention, self.lines = rc, mention, lines
        self.setup, self.creates, self.changes, self.check = setup, set(creates), set(changes), check
        self.stdout, self.fsize, self.umask, self.vmem_mb = stdout, fsize, umask, vmem_mb
        self.time_limit, self.mem_mb, self.sig = time_limit, mem_mb, sig
        self.stdout_empty = (rc == 2) if stdout_empty is None else stdout_empty
        self.env, self.stdin, self.slow, self.runner = env or {}, stdin, slow, runner
        self.core, self.cpu_s = core, cpu_s

    @property
    def id(self):
        return f"{self.group}: {self.name}"


# ----------------------------------------------------------------------------------------------
# Running a case

class Result:
    def __init__(self, rc, out, err, wall, maxrss_kb, cpu=0.0):
        self.rc, self.out, self.err, self.wall, self.maxrss_kb = rc, out, err, wall, maxrss_kb
        self.cpu = cpu   # user + system seconds of the run


def snapshot(root):
    """{relative path: description} of everything under root, symlinks not followed."""
    snap = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root)
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                d = ("link", os.readlink(p))
            elif stat.S_ISREG(st.st_mode):
                d = ("file", stat.S_IMODE(st.st_mode), st.st_size, file_hash(p, st.st_size))
            elif stat.S_ISDIR(st.st_mode):
                d = ("dir", stat.S_IMODE(st.st_mode))
            elif stat.S_ISCHR(st.st_mode):
                d = ("chr", st.st_rdev, stat.S_IMODE(st.st_mode))
            elif stat.S_ISFIFO(st.st_mode):
                d = ("fifo", stat.S_IMODE(st.st_mode))
            else:
                d = ("other",)
            snap[rel] = d
    return snap


def file_hash(p, size):
    """sha256 of a file read in chunks; of its first and last MiB when it is large (the huge
    sparse inputs), so that the battery itself stays small (its peak memory is inherited by
    the children it starts, and counted in their ru_maxrss)."""
    h = hashlib.sha256()
    with open(p, "rb") as f:
        if size <= 64 << 20:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        else:
            h.update(f.read(1 << 20))
            f.seek(size - (1 << 20))
            h.update(f.read(1 << 20))
    return h.hexdigest()


def strip_command(b):
    """Output without its '# command: ...' line (which echoes the output option)."""
    return b"\n".join(l for l in b.split(b"\n") if not l.startswith(b"# command:"))


def launch(argv, work, case, stdout_path):
    """Starts the CLI with the case's limits; returns (Popen, stdout file or None)."""
    env = dict(os.environ)
    env.update(case.env)
    env.pop("FLASHLAB_PROGRESS", None)

    def pre():
        os.umask(case.umask)
        if case.fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (case.fsize, case.fsize))
        if case.core is not None:   # no core file in the case's directory (SIGQUIT, SIGSEGV ...)
            resource.setrlimit(resource.RLIMIT_CORE, (case.core, case.core))
        if case.cpu_s is not None:
            resource.setrlimit(resource.RLIMIT_CPU, (case.cpu_s, case.cpu_s + 1))
        if case.vmem_mb is not None:
            lim = case.vmem_mb << 20
            resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
        if case.stdout == "closed":
            os.close(1)

    out = None
    if case.stdout == "pipe":
        out = subprocess.PIPE
    elif case.stdout == "devfull":
        out = open("/dev/full", "wb")
    elif case.stdout == "file":
        out = open(stdout_path, "wb")
    stdin = subprocess.DEVNULL
    if case.stdin is not None:
        stdin = open(case.stdin if os.path.isabs(case.stdin) else os.path.join(work, case.stdin), "rb")
    p = subprocess.Popen([CLI] + argv, cwd=work, env=env, stdin=stdin, stdout=out,
                         stderr=subprocess.PIPE, preexec_fn=pre)
    return p, out


def wait_rusage(p, deadline, sig=None, start=None):
    """Waits for p (killing it at deadline); returns (status, maxrss_kb, stdout, stderr, cpu
    seconds).
    Reads the pipes in threads so that a chatty child cannot block."""
    import threading
    bufs = {}

    def drain(name, f):
        bufs[name] = f.read() if f else b""

    ts = [threading.Thread(target=drain, args=("out", p.stdout)),
          threading.Thread(target=drain, args=("err", p.stderr))]
    for t in ts:
        t.start()
    sent = False
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        now = time.monotonic()
        if sig and not sent and now - start >= sig[0]:
            os.kill(p.pid, sig[1])
            sent = True
        if now > deadline:
            os.kill(p.pid, signal.SIGKILL)
            pid, status, ru = os.wait4(p.pid, 0)
            break
        time.sleep(0.003)
    p.returncode = os.waitstatus_to_exitcode(status)
    for t in ts:
        t.join()
    return p.returncode, ru.ru_maxrss, bufs["out"], bufs["err"], ru.ru_utime + ru.ru_stime


def run_case(case):
    """Runs one case; returns a list of problems (empty: it passed)."""
    with tempfile.TemporaryDirectory(prefix="flhostile") as tmp:
        work = os.path.join(tmp, "work")
        os.mkdir(work)
        if case.setup:
            case.setup(work)
        if case.runner:
            return case.runner(case, work)
        before = snapshot(work)
        start = time.monotonic()
        p, outf = launch(case.argv, work, case, os.path.join(tmp, "stdout.txt"))
        rc, rss, out, err, cpu = wait_rusage(p, start + kill_after(case), case.sig, start)
        wall = time.monotonic() - start
        if outf not in (None, subprocess.PIPE):
            outf.close()
        res = Result(rc, out, err, wall, rss, cpu)
        problems = expect(case, res)
        problems += files_after(case, work, before)
        if case.check:
            problems += case.check(work, res)
        return problems


def kill_after(case):
    """Wall seconds after which a case still running is killed (a hang): four times its CPU
    limit and at least 30 s more, times the time scale; a run over its CPU limit but not hung
    is reported as slow, with its stderr."""
    return SCALE * max(4 * case.time_limit, case.time_limit + 30)


def short(b, n=160):
    s = b.decode(errors="replace") if isinstance(b, bytes) else str(b)
    s = s.replace("\n", "\\n")
    return s if len(s) <= n else s[:n] + "..."


def expect(case, res):
    pr = []
    if case.rc == "any":
        pass
    elif res.rc < 0:
        pr.append(f"killed by signal {-res.rc}" + (" (timeout)" if res.wall >= kill_after(case) else ""))
    elif case.rc == "nonzero":
        if res.rc == 0:
            pr.append("exit 0, expected a failure")
    elif res.rc != case.rc:
        pr.append(f"exit {res.rc}, expected {case.rc}")
    err = res.err
    if case.lines is not None:
        text = err.decode(errors="replace")
        if res.wall >= kill_after(case):
            pass   # killed: the time line says it
        elif not text.endswith("\n") or (case.lines == 1 and text.count("\n") != 1):
            pr.append(f"stderr is not one line: {short(err)!r}")
        line = text.rstrip("\n").split("\n")[-1] if text else ""
        if any((ord(c) < 32 and c != "\n") or ord(c) == 127 for c in (text if case.lines == 1 else line)):
            pr.append(f"control character on stderr: {short(err)!r}")
        if case.mention and not any(m in line for m in case.mention):
            pr.append(f"stderr does not name {' or '.join(case.mention)}: {short(line)!r}")
    if case.stdout_empty and res.out:
        pr.append(f"stdout not empty: {short(res.out, 80)!r}")
    if res.cpu > case.time_limit * SCALE:
        pr.append(f"used {res.cpu:.1f} s of CPU (limit {case.time_limit} s x time scale {SCALE:.3g})")
    if res.maxrss_kb > case.mem_mb * 1024:
        pr.append(f"peak memory {res.maxrss_kb // 1024} MiB (limit {case.mem_mb} MiB)")
    return pr


def files_after(case, work, before):
    pr = []
    after = snapshot(work)
    for rel, d in before.items():
        if rel in case.changes or any(rel.startswith(c + "/") for c in case.changes):
            continue
        if rel not in after:
            pr.append(f"{rel} removed")
        elif after[rel] != d:
            pr.append(f"{rel} changed: {d[:2]} -> {after[rel][:2]}")
    for rel in after:
        if rel in before:
            continue
        if rel in case.creates or any(rel.startswith(c + "/") for c in case.creates):
            continue
        pr.append(f"left behind: {rel!r}")
    return pr


# ----------------------------------------------------------------------------------------------
# Setups: files an output option is pointed at

PRECIOUS = b"precious data\n"


def mk_file(rel, data=PRECIOUS):
    def f(work):
        p = os.path.join(work, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as fh:
            fh.write(data)
    return f


def mk_many(*fs):
    def f(work):
        for g in fs:
            g(work)
    return f


def mk_chr(rel):
    return lambda work: os.mknod(os.path.join(work, rel), 0o666 | stat.S_IFCHR, os.makedev(1, 3))


def mk_fifo(rel):
    return lambda work: os.mkfifo(os.path.join(work, rel))


def mk_dir(rel):
    return mk_file(rel + "/inside.txt")


def mk_link(rel, target):
    return lambda work: os.symlink(target, os.path.join(work, rel))


# (name, setup, path given to the option)
FILE_ATTACKS = [
    ("character device", mk_chr("dev"), "dev"),
    ("FIFO", mk_fifo("fifo"), "fifo"),
    ("directory", mk_dir("d"), "d"),
    ("directory with a trailing slash", mk_dir("d"), "d/"),
    ("new name with a trailing slash", None, "new.csv/"),
    ("dangling symlink", mk_link("link", "nowhere.txt"), "link"),
    ("symlink to a device", mk_many(mk_chr("dev"), mk_link("link", "dev")), "link"),
    ("symlink to /dev/null", mk_link("link", "/dev/null"), "link"),
    ("symlink to a directory", mk_many(mk_dir("d"), mk_link("link", "d")), "link"),
    ("symlink loop", mk_many(mk_link("a", "b"), mk_link("b", "a")), "a"),
    ("missing parent", None, "missing/out.csv"),
    ("parent is a file", mk_file("file.txt"), "file.txt/out.csv"),
    ("parent is a dangling symlink", mk_link("pl", "nowhere"), "pl/out.csv"),
    ("empty path", None, ""),
    ("the working directory", None, "."),
    ("the root directory", None, "/"),
    ("/dev/full", None, "/dev/full"),
    ("/dev/null", None, "/dev/null"),
    ("a newline in the missing parent", None, "mis\nsing/out.csv"),
]

DIR_ATTACKS = [
    ("character device", mk_chr("dev"), "dev"),
    ("FIFO", mk_fifo("fifo"), "fifo"),
    ("regular file", mk_file("file.txt"), "file.txt"),
    ("symlink to a file", mk_many(mk_file("target.txt"), mk_link("link", "target.txt")), "link"),
    ("dangling symlink", mk_link("link", "nowhere"), "link"),
    ("symlink to a device", mk_many(mk_chr("dev"), mk_link("link", "dev")), "link"),
    ("parent is a file", mk_file("file.txt"), "file.txt/out"),
    ("empty path", None, ""),
    ("/dev/null", None, "/dev/null"),
    ("a newline in a path under a file", mk_file("file.txt"), "file.txt/a\nb"),
]

# The cheap successful run of every command with an output option: (command, argv, option)
FILE_OUTPUTS = [
    ("sweep", ["sweep", "--algo", "flash2", "--N", "64,128", "--d", "8", "--M", "4096"], "--output"),
    ("optimize", ["optimize", "--N", "256", "--d", "64", "--M", "4096"], "--output"),
    ("l2", ["l2", "--algo", "flash2", "--N", "256", "--d", "64", "--Br", "64", "--Bc", "64"], "--output"),
    ("l2 --launch", ["l2", "--launch", "fwd-q", "--N", "256", "--d", "64", "--Br", "64", "--Bc", "64"], "--output"),
    ("trace", ["trace"], "--out"),
    ("trace jsonl", ["trace", "--format", "jsonl"], "--out"),
]
DIR_OUTPUTS = [
    ("report", ["report"], "--out"),
    ("plot", ["plot"], "--out"),
]


def output_cases():
    cs = []
    for cmd, argv, opt in FILE_OUTPUTS:
        for name, setup, path in FILE_ATTACKS:
            cs.append(Case("output path", f"{cmd} {opt} -> {name}", argv + [opt, path], 2,
                           mention=[opt, path.split("\n")[0]] if path else [opt], setup=setup))
        # the output is created complete, with the umask's mode, and nothing else is left
        for um, mode in ((0o077, 0o600), (0o022, 0o644), (0o002, 0o664)):
            cs.append(Case("output mode", f"{cmd} {opt} under umask {um:03o}", argv + [opt, "out.txt"], 0,
                           lines=None, creates={"out.txt"}, umask=um, stdout_empty=True,
                           check=mode_is("out.txt", mode)))
        # a symbolic link to a regular file is written through (docs/errors.md, Outputs): the link
        # stays, its target is replaced whole
        cs.append(Case("output replace", f"{cmd} {opt} through a symlink to a file", argv + [opt, "link"], 0,
                       lines=None, setup=mk_many(mk_file("target.txt"), mk_link("link", "target.txt")),
                       changes={"target.txt"}, check=same_as_stdout(argv, "target.txt")))
        # replacing an existing regular file is allowed: it ends complete, nothing else left
        cs.append(Case("output replace", f"{cmd} {opt} over an existing file", argv + [opt, "out.txt"], 0,
                       lines=None, setup=mk_file("out.txt"), changes={"out.txt"},
                       check=same_as_stdout(argv, "out.txt")))
        # a file of another user (as root): replaced with its owner, group and mode kept; as a
        # user who may not give it away, replaced all the same, then the writer's
        cs.append(Case("output owner", f"{cmd} {opt} over another user's file (as root)", argv + [opt, "out.txt"],
                       0, lines=None, runner=owner_runner(argv, opt, as_user=None)))
        cs.append(Case("output owner", f"{cmd} {opt} over a third user's file, as an unprivileged user",
                       argv + [opt, "out.txt"], 0, lines=None, runner=owner_runner(argv, opt, as_user=OTHER_UID)))
        # a file that cannot grow: nothing is left, the target is untouched
        cs.append(Case("output write error", f"{cmd} {opt} with RLIMIT_FSIZE 16 bytes", argv + [opt, "out.txt"],
                       "nonzero", mention=None, fsize=16, stdout_empty=False))
        cs.append(Case("output write error", f"{cmd} {opt} over a file, RLIMIT_FSIZE 16 bytes",
                       argv + [opt, "out.txt"], "nonzero", fsize=16, setup=mk_file("out.txt"), stdout_empty=False))
    for cmd, argv, opt in DIR_OUTPUTS:
        for name, setup, path in DIR_ATTACKS:
            cs.append(Case("output path", f"{cmd} {opt} -> {name}", argv + [opt, path], 2,
                           mention=[opt, path.split("\n")[0]] if path else [opt], setup=setup))
    # plot --scripts to things that are not a directory of scripts
    for name, setup, path in [("missing", None, "nope"), ("a file", mk_file("s.gp"), "s.gp"),
                              ("an empty directory", lambda w: os.mkdir(os.path.join(w, "e")), "e"),
                              ("a newline", None, "no\npe")]:
        cs.append(Case("output path", f"plot --scripts {name}", ["plot", "--out", "p", "--scripts", path], 2,
                       mention=["--scripts"], setup=setup))
    return cs


OWNER_UID, OWNER_GID, OTHER_UID = 12345, 23456, 12346


def owner_runner(argv, opt, as_user):
    """Runs argv + [opt, out.txt] over a file owned by OWNER_UID:OWNER_GID with mode 0604 in a
    folder anyone may write (the sticky bit off).  As root (as_user None) the new file must keep
    that owner, group and mode; run as as_user, who may not give a file away, it must still be
    replaced whole (then owned by as_user, mode kept).  Its content must be the command's stdout.
    Not root: the files of another user cannot be made, and the case checks nothing (says so
    in its name's group count only)."""
    def run(case, work):
        if os.geteuid() != 0:
            return []
        p = os.path.join(work, "out.txt")
        with open(p, "wb") as fh:
            fh.write(PRECIOUS)
        os.chown(p, OWNER_UID, OWNER_GID)
        os.chmod(p, 0o604)
        os.chmod(work, 0o777)
        os.chmod(os.path.dirname(work), 0o755)

        def pre():
            if as_user is not None:
                os.setgid(as_user)
                os.setuid(as_user)
        r = subprocess.run([CLI] + argv + [opt, "out.txt"], cwd=work, capture_output=True, timeout=KILL_AFTER,
                           preexec_fn=pre)
        if r.returncode != 0:
            return [f"status {r.returncode}: {short(r.stderr)}"]
        st = os.lstat(p)
        want = (OWNER_UID, OWNER_GID) if as_user is None else (as_user, as_user)
        pr = []
        if (st.st_uid, st.st_gid) != want:
            pr.append(f"owner {st.st_uid}:{st.st_gid}, expected {want[0]}:{want[1]}")
        if stat.S_IMODE(st.st_mode) != 0o604:
            pr.append(f"mode {stat.S_IMODE(st.st_mode):o}, expected 604")
        ref = subprocess.run([CLI] + argv, cwd=work, capture_output=True, timeout=KILL_AFTER)
        with open(p, "rb") as fh:
            if strip_command(fh.read()) != strip_command(ref.stdout):
                pr.append("out.txt is not the command's output")
        left = sorted(set(os.listdir(work)) - {"out.txt"})
        if left:
            pr.append(f"left behind: {left}")
        return pr
    return run


def mode_is(rel, mode):
    def f(work, res):
        p = os.path.join(work, rel)
        if not os.path.isfile(p):
            return [f"{rel} not written"]
        m = stat.S_IMODE(os.stat(p).st_mode)
        if m != mode:
            return [f"{rel} has mode {m:03o}, expected {mode:03o}"]
        if os.path.getsize(p) == 0:
            return [f"{rel} is empty"]
        return []
    return f


def same_as_stdout(argv, rel):
    """The file equals what the same command prints on stdout without the output option."""
    def f(work, res):
        p = os.path.join(work, rel)
        if not os.path.isfile(p):
            return [f"{rel} not written"]
        ref = subprocess.run([CLI] + argv, cwd=work, capture_output=True, timeout=KILL_AFTER)
        with open(p, "rb") as fh:
            got = fh.read()
        if strip_command(got) != strip_command(ref.stdout):
            return [f"{rel} ({len(got)} bytes) differs from stdout ({len(ref.stdout)} bytes)"]
        return []
    return f


# ----------------------------------------------------------------------------------------------
# Interrupted and concurrent runs

LONG_SWEEP = ["sweep", "--algo", "all", "--N", "256:16384:x2", "--d", "32,64,128", "--M", "2048:131072:x2",
              "--max-total-events", "0"]
LONG_TRACE = ["trace", "--algo", "all", "--N", "2048", "--d", "16", "--M", "1024", "--max-events", "0"]
# pairs of runs of about a second with different outputs, for the concurrent writers
CONCURRENT = {
    "sweep": (["sweep", "--algo", "all", "--N", "256:4096:x2", "--d", "32,64", "--M", "2048:131072:x2"],
              ["sweep", "--algo", "all", "--N", "512:4096:x2", "--d", "32,64", "--M", "2048:131072:x2"]),
    "trace": (["trace", "--algo", "all", "--N", "1024", "--d", "16", "--M", "1024", "--max-events", "0"],
              ["trace", "--algo", "all", "--N", "1024", "--d", "8", "--M", "1024", "--max-events", "0"]),
    "optimize": (["optimize", "--N", "2048", "--d", "128", "--M", "1024:65536:x2"],
                 ["optimize", "--N", "2048", "--d", "64", "--M", "1024:65536:x2"]),
}
LONG_OPT = ["optimize", "--N", "4096", "--d", "128", "--M", "1024:1048576:x2", "--top", "3"]


def interrupted_cases():
    cs = []
    for cmd, argv, opt in (("sweep", LONG_SWEEP, "--output"), ("trace", LONG_TRACE, "--out"),
                           ("optimize", LONG_OPT, "--output")):
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            for pre in (False, True):
                cs.append(Case("interrupted", f"{cmd} {opt} {signal.Signals(sig).name} at 0.3 s"
                               + (" over an existing file" if pre else ""),
                               argv + [opt, "out.txt"], rc="any", lines=None, stdout_empty=False,
                               setup=mk_file("out.txt") if pre else None, sig=(0.3, sig),
                               creates={"out.txt"}, changes={"out.txt"},
                               time_limit=2.5, mem_mb=1024, check=interrupted_ok(pre)))
        cs.append(Case("concurrent", f"four {cmd} runs writing one {opt}", argv, rc=0, lines=None,
                       stdout_empty=False, runner=concurrent_runner(*CONCURRENT[cmd], opt)))
    # every other signal that ends a process by default and can be caught, sent once the
    # temporary exists (so the case cannot pass by finishing first): the run dies of it, and
    # leaves neither its temporary nor a changed target
    for sig in FATAL_SIGNALS:
        for pre in (False, True):
            cs.append(Case("interrupted", f"sweep --output {sig_name(sig)} once its temporary exists"
                           + (" over an existing file" if pre else ""), LONG_SWEEP + ["--output", "out.txt"],
                           rc="any", lines=None, setup=mk_file("out.txt") if pre else None, time_limit=10,
                           mem_mb=1024, runner=signal_runner(sig, pre)))
    return cs


def sig_name(sig):
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"SIGRTMIN+{sig - signal.SIGRTMIN}"


# SIGINT, SIGTERM and SIGHUP are above, for three commands; SIGXFSZ is ignored by design (a write
# past the limit fails and is reported): sent, it must change nothing and the run completes.
FATAL_SIGNALS = [signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGPIPE, signal.SIGALRM, signal.SIGXCPU,
                 signal.SIGVTALRM, signal.SIGPROF, signal.SIGIO, signal.SIGPWR, signal.SIGSTKFLT, signal.SIGSYS,
                 signal.SIGTRAP, signal.SIGABRT, signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL,
                 signal.SIGRTMIN, signal.SIGRTMAX, signal.SIGXFSZ]


def signal_runner(sig, pre):
    def run(case, work):
        before = snapshot(work)
        start = time.monotonic()
        p, _ = launch(case.argv, work, Case(case.group, case.name, case.argv, stdout="pipe", core=0), None)
        # the temporary must exist before the signal is sent, else the case proves nothing
        tmp = []
        while not tmp and p.poll() is None and time.monotonic() - start < case.time_limit * SCALE:
            tmp = [n for n in os.listdir(work) if ".flashlab-tmp-" in n]
            time.sleep(0.01)
        if not tmp:
            p.kill()
            p.communicate()
            return ["no temporary appeared before the run ended: the signal would prove nothing"]
        os.kill(p.pid, sig)
        pr, want = [], sig
        if sig == signal.SIGXFSZ:   # ignored: still running a moment later; then SIGTERM ends it
            time.sleep(0.3)
            if p.poll() is not None:
                pr.append(f"SIGXFSZ (ignored by design) ended the run: status {p.returncode}")
            else:
                os.kill(p.pid, signal.SIGTERM)
            want = signal.SIGTERM
        rc, rss, out, err, _ = wait_rusage(p, start + kill_after(case))
        if rc != -want and not pr:
            pr.append(f"status {rc}, expected death by {sig_name(want)} ({-want})")
        after = snapshot(work)
        for rel in sorted(set(before) | set(after)):
            if before.get(rel) != after.get(rel):
                pr.append(f"{rel} " + ("left behind" if rel not in before else "removed" if rel not in after
                                       else "changed"))
        return pr
    return run


def interrupted_ok(pre):
    """After a signal: either the run finished first (status 0, the file written) or it died of
    the signal or exited non-zero, leaving the target as it was; no temp file either way
    (files_after).  The run must stop within the time limit."""
    def f(work, res):
        p = os.path.join(work, "out.txt")
        if res.rc == 0:
            return [] if os.path.isfile(p) and os.path.getsize(p) > 0 else ["exit 0 but out.txt not written"]
        if pre:
            with open(p, "rb") as fh:
                return [] if fh.read() == PRECIOUS else ["the existing out.txt was changed by an interrupted run"]
        return ["an interrupted run left out.txt"] if os.path.lexists(p) else []
    return f


def concurrent_runner(a, b, opt):
    def run(case, work):
        # two runs of each of two variants whose outputs differ, all writing out.txt at once:
        # it must end as one of them whole
        want = set()
        for v in (a, b):
            r = subprocess.run([CLI] + v, cwd=work, capture_output=True, timeout=KILL_AFTER)
            if r.returncode != 0:
                return [f"reference run failed: {short(r.stderr)}"]
            want.add(strip_command(r.stdout))
        ps = [subprocess.Popen([CLI] + v + [opt, "out.txt"], cwd=work, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE) for v in (a, b, a, b)]
        pr = []
        for p in ps:
            _, err = p.communicate(timeout=KILL_AFTER * 2)
            if p.returncode != 0:
                pr.append(f"a concurrent run exited {p.returncode}: {short(err)}")
        with open(os.path.join(work, "out.txt"), "rb") as fh:
            got = fh.read()
        if strip_command(got) not in want:
            pr.append(f"out.txt ({len(got)} bytes) is neither run's output")
        left = sorted(set(os.listdir(work)) - {"out.txt"})
        if left:
            pr.append(f"left behind: {left}")
        return pr
    return run


# ----------------------------------------------------------------------------------------------
# Write errors on stdout

def stdout_cases(slow):
    cmds = [
        ("count", ["count", "--algo", "flash2", "--N", "64", "--d", "8", "--M", "4096"]),
        ("count csv", ["count", "--algo", "flash2", "--N", "64", "--d", "8", "--M", "4096", "--format", "csv"]),
        ("count json", ["count", "--algo", "flash2", "--N", "64", "--d", "8", "--M", "4096", "--format", "json"]),
        ("count --explain", ["count", "--algo", "flash2", "--N", "64", "--d", "8", "--M", "4096", "--explain"]),
        ("run", ["run", "--algo", "flash2", "--N", "64", "--d", "8", "--M", "4096"]),
        ("run json", ["run", "--algo", "flash2", "--N", "64", "--d", "8", "--M", "4096", "--format", "json"]),
        ("sweep", ["sweep", "--algo", "flash2", "--N", "64,128", "--d", "8", "--M", "4096"]),
        ("sweep json", ["sweep", "--algo", "flash2", "--N", "64,128", "--d", "8", "--M", "4096", "--format", "json"]),
        ("bound", ["bound", "--N", "512,1024", "--d", "64", "--M", "4096,8192"]),
        ("optimize", ["optimize", "--N", "256", "--d", "64", "--M", "4096"]),
        ("optimize csv", ["optimize", "--N", "256", "--d", "64", "--M", "4096", "--format", "csv"]),
        ("l2", ["l2", "--algo", "flash2", "--N", "256", "--d", "64", "--Br", "64", "--Bc", "64"]),
        ("l2 --launch", ["l2", "--launch", "fwd-q", "--N", "256", "--d", "64", "--Br", "64", "--Bc", "64"]),
        ("trace", ["trace"]),
        ("trace jsonl", ["trace", "--format", "jsonl"]),
        ("example list", ["example", "list"]),
        ("example two-tile", ["example", "two-tile"]),
        ("example gqa-map", ["example", "gqa-map"]),
        ("--help", ["--help"]),
        ("--version", ["--version"]),
    ]
    for c in ("count", "run", "sweep", "bound", "optimize", "l2", "trace", "example", "report", "plot"):
        cmds.append((f"{c} --help", [c, "--help"]))
    cmds.append(("l2 --launch --help", ["l2", "--launch", "fwd-q", "--help"]))
    slow_cmds = [("report --no-figures", ["report", "--no-figures"]), ("plot", ["plot", "--out", "p"])]
    cs = []
    for name, argv, *_ in cmds + [c + (True,) for c in slow_cmds]:
        is_slow = name in dict(slow_cmds)
        if is_slow and not slow:
            continue
        no_args = argv == []
        for how, kw in (("stdout /dev/full", dict(stdout="devfull")),
                        ("stdout closed", dict(stdout="closed")),
                        ("stdout a file, RLIMIT_FSIZE 8 bytes", dict(stdout="file", fsize=8))):
            cs.append(Case("write error", f"{name}: {how}", argv, 2 if no_args else "nonzero",
                           lines="last" if name == "plot" else 1, stdout_empty=False,
                           creates={"p"} if name == "plot" else (),
                           time_limit=300 if is_slow else DEFAULT_TIME, **kw))
    return cs


# ----------------------------------------------------------------------------------------------
# Work and memory limits

G = str(2 ** 40)


def limit_cases():
    L = ["--max"]   # the refusal names the option that raises the limit
    rows = [
        ("count", ["count", "--algo", "flash2", "--N", G, "--d", "64"]),
        ("count", ["count", "--algo", "all", "--N", G, "--d", "64"]),
        ("count", ["count", "--algo", "standard", "--N", G, "--d", "64"]),
        ("count", ["count", "--algo", "flash1", "--N", "1048576", "--d", "64", "--M", "4096"]),
        ("count", ["count", "--algo", "flash2", "--N", "1024", "--batch", G]),
        ("count", ["count", "--algo", "flash2", "--N", "1024", "--heads", G]),
        ("count", ["count", "--algo", "flash2", "--N", "64", "--Nk", G]),
        ("count", ["count", "--algo", "flash2", "--N", "64", "--d", G]),
        ("count", ["count", "--algo", "flash2", "--pass", "fwd+bwd", "--N", G]),
        ("count", ["count", "--algo", "decode", "--N", "1", "--Nk", G, "--page-size", "1"]),
        ("count", ["count", "--algo", "blocksparse", "--N", G, "--density", "1"]),
        ("count", ["count", "--algo", "blocksparse", "--N", str(2 ** 24), "--Br", "1", "--Bc", "1",
                   "--density", "0.001", "--d", "1", "--M", "64"]),
        ("count", ["count", "--algo", "memeff", "--N", G]),
        ("count", ["count", "--algo", "softmax-safe", "--N", G]),
        ("count", ["count", "--algo", "softmax-online", "--N", G]),
        ("count", ["count", "--algo", "flash2-gqa", "--heads", G, "--kv-heads", "1"]),
        ("count", ["count", "--algo", "flash2", "--batch", "1", "--cu-seqlens-q", "0," + G, "--N", G]),
        ("run", ["run", "--algo", "flash2", "--N", "131072"]),
        ("run", ["run", "--algo", "standard", "--N", "131072"]),
        ("run", ["run", "--algo", "all", "--N", "131072"]),
        ("run", ["run", "--algo", "flash2", "--pass", "bwd", "--N", "131072"]),
        ("run", ["run", "--algo", "memeff", "--N", "131072"]),
        ("run", ["run", "--algo", "softmax-safe", "--N", "1048576"]),
        ("run", ["run", "--algo", "softmax-online", "--N", G]),
        ("run", ["run", "--algo", "decode", "--N", "1", "--Nk", str(2 ** 30), "--page-size", "1"]),
        ("run", ["run", "--algo", "blocksparse", "--N", "131072", "--density", "1"]),
        ("run", ["run", "--algo", "flash2", "--N", "64", "--d", str(2 ** 30)]),
        ("run", ["run", "--algo", "flash2", "--N", "1024", "--batch", str(2 ** 20)]),
        ("sweep", ["sweep", "--N", "1:1000000000000000000:x2"]),
        ("sweep", ["sweep", "--N", "1:1000000000000000000:+1"]),
        ("sweep", ["sweep", "--N", "64", "--Br", "1:1000000000000000000:+1"]),
        ("sweep", ["sweep", "--N", "1:1000000:+1", "--d", "1:1000000:+1"]),
        ("bound", ["bound", "--N", "1:1000000000000000000:x2"]),
        ("bound", ["bound", "--N", G, "--d", "64", "--M", "4096"]),
        ("optimize", ["optimize", "--N", "1024", "--M", "1:1000000000000000000:+1"]),
        ("optimize", ["optimize", "--N", G]),
        ("optimize", ["optimize", "--N", "1024", "--top", G]),
        ("l2", ["l2", "--algo", "flash2", "--N", G, "--d", "64", "--Br", "64", "--Bc", "64"]),
        ("l2", ["l2", "--algo", "standard", "--N", "1048576", "--d", "64", "--Br", "64", "--Bc", "64"]),
        ("l2", ["l2", "--algo", "flash2", "--N", "256", "--d", "64", "--Br", "64", "--Bc", "64", "--l2-mb", "1000000000"]),
        ("l2", ["l2", "--algo", "flash2", "--N", "256", "--d", "64", "--Br", "64", "--Bc", "64", "--l2-mb", "1000000000000000"]),
        ("l2", ["l2", "--algo", "flash2", "--N", "256", "--d", "64", "--Br", "64", "--Bc", "64", "--sector", "1",
                "--l2-mb", "4096"]),
        ("l2", ["l2", "--algo", "flash2", "--N", "256", "--d", "64", "--Br", "1", "--Bc", "1", "--sms", G]),
        ("l2", ["l2", "--algo", "flash2", "--N", "256", "--d", "64", "--Br", "64", "--Bc", "64", "--ctas-per-sm", G]),
        ("l2 --launch", ["l2", "--launch", "fwd-q", "--batch", G, "--heads", G, "--N", "1024", "--d", "64",
                         "--Br", "64", "--Bc", "64"]),
        ("l2 --launch", ["l2", "--launch", "fwd-q", "--N", G, "--d", "64", "--Br", "64", "--Bc", "64"]),
        ("l2 --launch", ["l2", "--launch", "fwd-q", "--N", "1024", "--d", "64", "--Br", "64", "--Bc", "64",
                         "--l2-mb", "1000000000"]),
        ("l2 --launch", ["l2", "--launch", "fwd-q", "--N", "1024", "--d", "64", "--Br", "64", "--Bc", "64",
                         "--persistent", G]),
        ("l2 --launch", ["l2", "--launch", "fwd-q", "--N", "1024", "--d", "64", "--Br", "64", "--Bc", "64",
                         "--splits", G]),
        ("l2 --launch", ["l2", "--launch", "combine", "--N", "1024", "--d", "64", "--Br", "64", "--Bc", "64",
                         "--splits", G]),
        ("trace", ["trace", "--N", str(2 ** 20)]),
        ("trace", ["trace", "--N", G]),
        ("trace", ["trace", "--algo", "all", "--N", "4096"]),
        ("trace", ["trace", "--compute", "--N", "65536", "--max-events", "0"]),
        ("trace", ["trace", "--algo", "standard", "--N", "65536", "--M", "1000000000", "--max-events", "0",
                   "--compute"]),
        ("report", ["report", "--N", G]),
        ("report", ["report", "--batch", G, "--heads", G]),
        ("report", ["report", "--no-figures", "--N", "1048576", "--d", "256"]),
    ]
    cs = [Case("work limit", " ".join(a), a, 2, mention=L + ["out of range", "overflow", "more than", "too small",
                                                              "at most", "integer", "can run"], mem_mb=512)
          for name, a in rows]
    # Work under the default limits (--max-events 1e10 tile events, about 2 minutes at the
    # 8e7 events/s measured; docs/errors.md, Work and memory limits): the estimate comes before the work, so a
    # lower limit refuses the same runs at once, naming the option; and they hold no memory that
    # grows with the cache (no block table of 2^30 pages).
    heavy = [
        ["count", "--algo", "decode", "--N", "1", "--Nk", str(2 ** 30), "--page-size", "1"],
        ["count", "--algo", "decode", "--N", "1", "--Nk", G, "--splits", G],
    ]
    cs += [Case("work limit", " ".join(a + ["--max-events", "100000000"]), a + ["--max-events", "100000000"], 2,
                mention=["--max-events"], mem_mb=512) for a in heavy]
    # A sweep whose block choices at huge M are slow but bounded (60 values of M, a few seconds):
    # it runs, within a minute, in bounded memory, and prints its table.
    a = ["sweep", "--N", "1024", "--M", "1:1000000000000000000:x2"]
    cs.append(Case("work limit", " ".join(a) + " (runs)", a, 0, lines=None, stdout_empty=False, time_limit=60,
                   mem_mb=512))
    # Every long command has one budget, estimated before the work (docs/errors.md, Work and
    # memory limits): these ran 70 s to hours under the old limits; each must now be refused
    # at once (the CPU ceiling: the work was not done first), naming the option that raises it.
    budget = [
        (["optimize", "--N", "65536", "--top", "1000"], "--max-work", DEFAULT_TIME),           # 99 s before
        (["optimize", "--N", "65536", "--top", "1000000"], "--max-work", DEFAULT_TIME),        # hours before
        (["optimize", "--N", "32768", "--d", "64", "--M", "512"], "--max-work", DEFAULT_TIME),  # 70 s, flash1's column
        (["optimize", "--N", "1024", "--M", "4352:1052416:+256", "--max-work", "300000000"], "--max-work",
         DEFAULT_TIME),                                                                          # 4,095 M: 135 s before
        (["count", "--algo", "flash2", "--N", "200000", "--d", "64", "--M", "1024"], "--max-events", DEFAULT_TIME),
        (["count", "--algo", "all", "--N", "131072", "--d", "64", "--M", "4096", "--max-events", "200000000"],
         "--max-events", DEFAULT_TIME),
        (["run", "--algo", "all", "--N", "4000"], "--max-macs", DEFAULT_TIME),
        (["l2", "--launch", "bwd-memeff", "--N", "1024", "--d", "64", "--Br", "64", "--Bc", "64", "--heads", "1024"],
         "--max-work", DEFAULT_TIME),                                                            # 109 s before
        (["report", "--no-figures", "--max-events", "1000000000"], "--max-events", DEFAULT_TIME),
    ]
    cs += [Case("work limit", "budget: " + " ".join(a), a, 2, mention=[opt], time_limit=t, mem_mb=512,
                runner=budget_runner(opt))
           for a, opt, t in budget]
    # bound --input: endless or huge inputs are refused quickly
    def sparse(rel, size):
        def f(work):
            with open(os.path.join(work, rel), "wb") as fh:
                fh.truncate(size)
        return f

    def long_line(work):
        with open(os.path.join(work, "line.csv"), "wb") as fh:
            fh.write(b"algo,N,d,M\n" + b"9" * (64 << 20))
    cs += [
        Case("work limit", "bound --input /dev/zero", ["bound", "--input", "/dev/zero"], 2,
             mention=["--input", "/dev/zero"], mem_mb=512),
        Case("work limit", "bound --input /dev/urandom", ["bound", "--input", "/dev/urandom"], 2,
             mention=["--input", "/dev/urandom"], mem_mb=512),
        Case("work limit", "bound --input a 16 GiB sparse file", ["bound", "--input", "big.csv"], 2,
             mention=["--input", "big.csv"], setup=sparse("big.csv", 16 << 30), mem_mb=512),
        Case("work limit", "bound --input - from /dev/zero", ["bound", "--input", "-"], 2,
             mention=["--input", "stdin", "-:"], stdin="/dev/zero", mem_mb=512),
        Case("work limit", "bound --input a 64 MiB line", ["bound", "--input", "line.csv"], 2,
             mention=["--input", "line.csv"], setup=long_line, mem_mb=512),
        Case("work limit", "bound --input a FIFO", ["bound", "--input", "fifo"], 2,
             mention=["--input", "fifo"], setup=mk_fifo("fifo")),
        Case("work limit", "bound --input a directory", ["bound", "--input", "d"], 2,
             mention=["--input", "d"], setup=mk_dir("d")),
        Case("work limit", "bound --input missing", ["bound", "--input", "nope.csv"], 2,
             mention=["--input", "nope.csv"]),
        Case("work limit", "bound --input empty", ["bound", "--input", "e.csv"], 2,
             mention=["--input", "e.csv"], setup=mk_file("e.csv", b"")),
        Case("work limit", "bound --input binary", ["bound", "--input", "b.csv"], 2,
             mention=["--input", "b.csv"], setup=mk_file("b.csv", bytes(range(256)) * 4)),
        Case("work limit", "bound --input a CSV with NUL", ["bound", "--input", "n.csv"], 2,
             mention=["--input", "n.csv"], setup=mk_file("n.csv", b"algo,N,d,M\nflash2,\x00,64,4096\n")),
    ]
    # l2 --launch --cta-timing: the same inputs, refused the same way
    lt = ["l2", "--launch", "fwd-q", "--N", "256", "--d", "64", "--Br", "64", "--Bc", "64", "--cta-timing"]
    for what, path, setup, stdin in (
            ("/dev/zero", "/dev/zero", None, None), ("/dev/urandom", "/dev/urandom", None, None),
            ("a 16 GiB sparse file", "big.csv", sparse("big.csv", 16 << 30), None),
            ("- from /dev/zero", "-", None, "/dev/zero"), ("a 64 MiB line", "line.csv", long_line, None),
            ("a FIFO", "fifo", mk_fifo("fifo"), None), ("a directory", "d", mk_dir("d"), None),
            ("missing", "nope.csv", None, None), ("empty", "e.csv", mk_file("e.csv", b""), None),
            ("binary", "b.csv", mk_file("b.csv", bytes(range(256)) * 4), None),
            ("a row per item too few", "few.csv", mk_file("few.csv", b"item,sm,start_ns,end_ns\n0,0,0,1\n"), None),
            ("an SM past --sms", "sm.csv", mk_file("sm.csv", b"item,sm,start_ns,end_ns\n0,0,0,1\n1,0,0,1\n"
                                                             b"2,0,0,1\n3,999,0,1\n"), None)):
        cs.append(Case("work limit", "l2 --launch --cta-timing " + what, lt + [path], 2,
                       mention=["--cta-timing"], setup=setup, stdin=stdin, mem_mb=512))
    # out of memory is a refusal (2), not a crash or a generic failure
    for a in (["run", "--algo", "standard", "--N", "16384", "--d", "64", "--max-macs", "0"],
              ["run", "--algo", "flash2", "--N", "65536", "--d", "256", "--max-macs", "0", "--batch", "64"],
              ["l2", "--algo", "flash2", "--N", "256", "--d", "64", "--Br", "64", "--Bc", "64", "--l2-mb", "1024"],
              ["sweep", "--N", "64:1048576:+1", "--max-total-events", "0"]):
        oom = a[0] == "l2"   # the cache's allocation fails: status 1 by design (docs/errors.md)
        cs.append(Case("out of memory", " ".join(a) + " under RLIMIT_AS 128 MiB", a, 1 if oom else 2, vmem_mb=128,
                       time_limit=10, mention=["out of memory"] if oom else None, stdout_empty=True))
    return cs


# ----------------------------------------------------------------------------------------------
# Bad values on every option of every command

BASES = {
    "count": ["count", "--algo", "flash2", "--N", "64", "--d", "8", "--M", "4096"],
    "run": ["run", "--algo", "flash2", "--N", "64", "--d", "8", "--M", "4096"],
    "sweep": ["sweep", "--algo", "flash2", "--N", "64", "--d", "8", "--M", "4096"],
    "bound": ["bound", "--N", "512,1024", "--d", "64", "--M", "4096,8192"],
    "optimize": ["optimize", "--N", "256", "--d", "64", "--M", "4096"],
    "l2": ["l2", "--algo", "flash2", "--N", "256", "--d", "64", "--Br", "64", "--Bc", "64"],
    "l2 --launch": ["l2", "--launch", "fwd-q", "--N", "256", "--d", "64", "--Br", "64", "--Bc", "64"],
    "trace": ["trace"],
    "report": ["report", "--no-figures"],
    "plot": ["plot", "--out", "p"],
}
DECODE = ["--algo", "decode", "--N", "1", "--Nk", "256", "--d", "8", "--M", "4096"]
SPARSE = ["--algo", "blocksparse", "--N", "64", "--d", "8", "--M", "4096"]

INT_BAD = ["", "nan", "inf", "1e999", "0x10", " 5", "5 ", "5junk", "5.5", "1,2", "9223372036854775808",
           "-9223372036854775809", "18446744073709551616", "99999999999999999999999999", "\t5", "5\n",
           "\u0665", "--", "-"]
SIZE_BAD = INT_BAD + ["0", "-0", "-1", "-9223372036854775808"]
SEED_BAD = [v for v in INT_BAD if v != "9223372036854775808"] + ["-1"]   # seeds are unsigned 64-bit
LIMIT_BAD = INT_BAD[:4] + [" 5", "5 ", "5junk", "1e10junk", "-1", "-1e10", "1e30", "0x10", "",
                            "1.5e0", "1e-3", "1e", "e9", "1.e9", ".5e1", "9.3e18", "1e10 "]
REAL_BAD = ["", "nan", "inf", "-inf", "1e999", "5junk", " 0.5", "0.5 ", "0x1p-1", "--", "1,2"]
CHOICE_BAD = ["", "nope", "FLASH2", "flash2 ", " flash2", "flash2,", ",", "flash2,,flash1", "flash2\n", "--", "-"]
LIST_BAD = ["", ",", "64,", ",64", "64,,128", "64:1024", "64:1024:x1", "64:1024:x0", "64:1024:+0",
            "64:1024:x-2", "64:1024:+-64", "1024:64:x2", "64:1024:y2", "64:1024:x2:5", "64:1024:x1.5",
            "nan:1024:x2", "64:1e999:x2", "64:1024:x1e999", " 64", "64 ", "64junk", "0x40", "--", "1:1:x2:"]
WINDOW_BAD = ["", "1", "1,2,3", "a,b", "1,", ",1", "1e999,1", "-2,0", "0,-2", "nan,1", " 1,1", "1,1 ",
              "9223372036854775808,1", "1;1", "--"]
CU_BAD = ["", "0,", "0,,64", "64,0", "0,-64", "0,64junk", "0,1e999", " 0,64", "0, 64", "0,64,", "0x0,64",
          "0,9223372036854775808", "--"]
TABLE_BAD = ["", "0,", "0,,1", "-1", "0,-1", "x", "0,1junk", "9223372036854775808", "--"]
PATH_BAD = [""]

# per command: {option: (bad values, base additions)}
def option_table():
    common = {
        "--algo": CHOICE_BAD, "--N": SIZE_BAD, "--d": SIZE_BAD, "--M": SIZE_BAD, "--sram": CHOICE_BAD,
        "--dtype": CHOICE_BAD, "--Br": SIZE_BAD, "--Bc": SIZE_BAD, "--seed": SEED_BAD, "--pass": CHOICE_BAD,
        "--Nk": SIZE_BAD, "--causal": CHOICE_BAD, "--window": WINDOW_BAD, "--batch": SIZE_BAD,
        "--heads": SIZE_BAD, "--kv-heads": SIZE_BAD, "--cu-seqlens-q": CU_BAD, "--cu-seqlens-k": CU_BAD,
        "--max-events": LIMIT_BAD, "--format": CHOICE_BAD,
    }
    decode = {"--splits": SIZE_BAD, "--page-size": SIZE_BAD, "--pool-pages": SIZE_BAD, "--page-seed": SEED_BAD,
              "--block-table": TABLE_BAD}
    sparse = {"--density": REAL_BAD + ["0", "-0.5", "1.5", "-0"], "--mask-seed": SEED_BAD}
    t = {}
    for cmd in ("count", "run"):
        t[cmd] = {o: (v, []) for o, v in common.items()}
        t[cmd].update({o: (v, DECODE) for o, v in decode.items()})
        t[cmd]["--pad"] = (["", "5junk", " 1", "1 ", "--", "1,2"], DECODE)
        t[cmd].update({o: (v, SPARSE) for o, v in sparse.items()})
    t["run"]["--max-macs"] = (LIMIT_BAD, [])
    sw = {o: (v, []) for o, v in common.items() if o not in ("--cu-seqlens-q", "--cu-seqlens-k")}
    for o in ("--N", "--d", "--M", "--Br", "--Bc"):
        sw[o] = (LIST_BAD + ["0", "-1", "-0"], [])
    sw["--max-total-events"] = (LIMIT_BAD, [])
    sw["--output"] = (PATH_BAD, [])
    sw.update({o: (v, DECODE) for o, v in decode.items() if o != "--block-table"})
    sw.update({o: (v, SPARSE) for o, v in sparse.items()})
    t["sweep"] = sw
    t["bound"] = {"--N": (LIST_BAD, []), "--d": (LIST_BAD, []), "--M": (LIST_BAD, []),
                  "--input": (PATH_BAD, []), "--max-total-events": (LIMIT_BAD, [])}
    op = {o: (v, []) for o, v in common.items() if o not in ("--algo", "--Br", "--Bc")}
    op["--M"] = (LIST_BAD + ["0", "-1"], [])
    op["--format"] = (CHOICE_BAD + ["json"], [])
    op.update({"--top": (SIZE_BAD, []), "--max-work": (LIMIT_BAD, []), "--output": (PATH_BAD, [])})
    t["optimize"] = op
    l2 = {"--algo": CHOICE_BAD + ["flash2-gqa", "decode"], "--N": SIZE_BAD, "--d": SIZE_BAD, "--Br": SIZE_BAD,
          "--Bc": SIZE_BAD, "--pass": CHOICE_BAD + ["fwd+bwd"], "--dtype": CHOICE_BAD,
          "--l2-mb": REAL_BAD + ["0", "-1"], "--sector": SIZE_BAD + ["3"], "--sms": SIZE_BAD,
          "--ctas-per-sm": SEED_BAD, "--format": CHOICE_BAD + ["json"], "--output": PATH_BAD,
          "--max-work": LIMIT_BAD, "--max-memory": LIMIT_BAD}
    t["l2"] = {o: (v, []) for o, v in l2.items()}
    ln = dict(l2)
    del ln["--algo"], ln["--pass"]
    ln.update({"--launch": CHOICE_BAD, "--batch": SIZE_BAD, "--heads": SIZE_BAD, "--Br2": SIZE_BAD,
               "--Bc2": SIZE_BAD, "--order": CHOICE_BAD, "--persistent": SEED_BAD, "--cluster": SIZE_BAD,
               "--splits": SIZE_BAD, "--ctas-per-sm": SIZE_BAD})
    t["l2 --launch"] = {o: (v, []) for o, v in ln.items()}
    tr = {o: (common[o], []) for o in ("--algo", "--N", "--d", "--M", "--Br", "--Bc", "--Nk", "--causal",
                                       "--window", "--pass", "--seed", "--format", "--max-events")}
    tr["--format"] = (CHOICE_BAD + ["csv,jsonl", "table"], [])
    tr["--max-macs"] = (LIMIT_BAD, ["--compute"])
    tr["--out"] = (PATH_BAD, [])
    t["trace"] = tr
    t["report"] = {o: (common[o], []) for o in ("--sram", "--dtype", "--M", "--N", "--d", "--batch", "--heads",
                                                "--max-events")}
    t["report"]["--out"] = (PATH_BAD, [])
    t["plot"] = {"--out": (PATH_BAD, []), "--scripts": (PATH_BAD, [])}
    return t


# a good value per option, for the repeated-option cases
GOOD = {"--algo": "flash2", "--N": "64", "--d": "8", "--M": "4096", "--sram": "h100", "--dtype": "fp32",
        "--Br": "8", "--Bc": "8", "--seed": "2", "--pass": "fwd", "--Nk": "64", "--causal": "top-left",
        "--window": "4,4", "--batch": "1", "--heads": "2", "--kv-heads": "1", "--cu-seqlens-q": "0,64",
        "--cu-seqlens-k": "0,64", "--max-events": "1000000", "--format": "csv", "--splits": "2",
        "--page-size": "16", "--pool-pages": "64", "--page-seed": "3", "--block-table": "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15",
        "--pad": "0", "--density": "0.5", "--mask-seed": "3", "--max-macs": "1e9", "--max-total-events": "1e9",
        "--output": "o.txt", "--top": "2", "--max-work": "1e9", "--l2-mb": "40", "--sector": "64", "--sms": "100",
        "--ctas-per-sm": "1", "--max-memory": "1000", "--launch": "fwd-qkv", "--Br2": "32", "--Bc2": "32",
        "--order": "head", "--persistent": "4", "--cluster": "2", "--input": "in.csv", "--out": "o",
        "--scripts": "s"}


def value_cases():
    cs = []
    for cmd, opts in option_table().items():
        base = BASES[cmd]
        for opt, (bads, extra) in opts.items():
            argv0 = (["report"] if (cmd, opt) == ("report", "--out") else base) + extra
            for v in dict.fromkeys(bads):
                cs.append(Case("bad value", f"{cmd} {opt} {v!r}", argv0 + [opt, v], 2, mention=[opt],
                               creates=()))
            cs.append(Case("missing value", f"{cmd} {opt} at the end", argv0 + [opt], 2, mention=[opt]))
            # --opt=value for a valued option: either accepted like --opt value or refused; a bad
            # value through '=' is refused like the other
            if opt not in ("--output", "--out", "--input"):
                cs.append(Case("bad value", f"{cmd} {opt}=5junk", argv0 + [f"{opt}=5junk"], 2, mention=[opt]))
            # an option given twice takes its last value (docs/errors.md), but a bad earlier
            # value is still an error, never silently overridden
            good = GOOD.get(opt)
            if good is not None and opt not in ("--output", "--out", "--input", "--scripts"):
                cs.append(Case("repeated option", f"{cmd} {opt} bad, then good", argv0 + [opt, bads[0] if bads[0] else
                               "5junk", opt, good], 2, mention=[opt]))
    return cs


def eform_defaults():
    """(command, option, default) for every option whose default the command's --help prints in
    scientific form ("[1e10]"), read from the help itself, so a new option is covered too."""
    import re
    found = []
    for cmd, base in BASES.items():
        argv = base[:3] if cmd == "l2 --launch" else base[:1]
        text = subprocess.run([CLI] + argv + ["--help"], capture_output=True, timeout=KILL_AFTER).stdout.decode()
        opt = None
        for line in text.splitlines():
            m = re.match(r"\s{2}(--[a-zA-Z][\w-]*)", line)
            if m:
                opt = m.group(1)
            d = re.search(r"\[(\d+(?:\.\d+)?e\d+)\]\s*$", line)
            if d and opt:
                found.append((cmd, opt, d.group(1)))
    return found


def eform_cases(slow):
    """Numbers in the forms the help prints: each such option takes its default as printed, and
    an exact whole number in that form means its digits (2.5e1 behaves as 25, byte for byte),
    while a fraction (2.55e1) is refused naming the option."""
    found = eform_defaults()
    # the help must yield the options it documents so (else the cases below would be none)
    assert len(found) >= 9, f"only {len(found)} options print a default in scientific form: {found}"
    cs = []
    for cmd, opt, default in found:
        base = BASES[cmd]
        if cmd != "report" or slow:   # report's default run takes half a minute
            cs.append(Case("number form", f"{cmd} {opt} {default} (its default as the help prints it)",
                           base + [opt, default], 0, lines=None, stdout_empty=False,
                           time_limit=120 if cmd == "report" else 10))
        cs.append(Case("number form", f"{cmd} {opt} 2.55e1 (a fraction)", base + [opt, "2.55e1"], 2, mention=[opt]))
        cs.append(Case("number form", f"{cmd} {opt} 2.5e1 is 25", [], runner=same_as_digits(base, opt, "2.5e1", "25")))
    return cs


def format_cases():
    """--format takes exactly the values its help lists: each one works, and json, where listed,
    prints one JSON document (jsonl: one document a line); json where it is not listed, and
    names next to the listed ones, are refused."""
    import re
    cs, seen = [], 0
    for cmd, base in BASES.items():
        argv = base[:3] if cmd == "l2 --launch" else base[:1]
        text = subprocess.run([CLI] + argv + ["--help"], capture_output=True, timeout=KILL_AFTER).stdout.decode()
        m = re.search(r"--format F\s+([a-z, ]+?)\s+\[", text)
        if not m:
            continue
        listed = [v for v in re.split(r",\s*|\s+or\s+", m.group(1).strip()) if v]
        seen += 1
        for v in listed:
            cs.append(Case("format", f"{cmd} --format {v} (listed)", base + ["--format", v], 0, lines=None,
                           stdout_empty=False, check=parses_as(v)))
        for v in ("json", "jsonl", "JSON", "tsv", "csv,json"):
            if v not in listed:
                cs.append(Case("format", f"{cmd} --format {v} (not listed)", base + ["--format", v], 2,
                               mention=["--format"]))
    assert seen >= 7, f"only {seen} commands list their --format values in the help"
    return cs


def parses_as(fmt):
    import json

    def f(work, res):
        try:
            if fmt == "json":
                json.loads(res.out)
            elif fmt == "jsonl":
                for line in res.out.decode().splitlines():
                    json.loads(line)
        except ValueError as e:
            return [f"--format {fmt} printed no valid {fmt}: {e}"]
        return []
    return f


def truncated_csv_runner(case, work):
    """bound --input over a sweep CSV cut at every byte of its last row: each cut is refused
    naming the line; the whole file (the planted check) is read."""
    p = os.path.join(work, "s.csv")
    r = subprocess.run([CLI, "sweep", "--algo", "flash1,flash2", "--N", "256,512", "--d", "16", "--M", "4096,8192",
                        "--output", p], capture_output=True, timeout=KILL_AFTER)
    if r.returncode != 0:
        return [f"the sweep failed: {short(r.stderr)}"]
    data = open(p, "rb").read()
    ok = subprocess.run([CLI, "bound", "--input", p], capture_output=True, timeout=KILL_AFTER)
    if ok.returncode != 0:
        return [f"the whole file is refused: {short(ok.stderr)}"]
    last = data.rstrip(b"\n").rfind(b"\n") + 1
    lineno = data[:last].count(b"\n") + 1
    pr = []
    for cut in range(last + 1, len(data)):   # a row cut anywhere after its first byte
        with open(p, "wb") as fh:
            fh.write(data[:cut])
        r = subprocess.run([CLI, "bound", "--input", p], capture_output=True, timeout=KILL_AFTER)
        if r.returncode != 2 or f"s.csv:{lineno}".encode() not in r.stderr or r.stdout:
            pr.append(f"cut at byte {cut} of {len(data)} ({short(data[last:cut])!r}): status {r.returncode}, "
                      f"{short(r.stderr, 100)!r}")
    return pr[:3] + ([f"... {len(pr) - 3} more"] if len(pr) > 3 else [])


def same_as_digits(base, opt, eform, digits):
    def run(case, work):
        a = subprocess.run([CLI] + base + [opt, eform], cwd=work, capture_output=True, timeout=KILL_AFTER)
        b = subprocess.run([CLI] + base + [opt, digits], cwd=work, capture_output=True, timeout=KILL_AFTER)
        pr = []
        same = lambda x: x.replace(eform.encode(), digits.encode())   # provenance lines quote the value
        if (a.returncode, same(a.stdout), same(a.stderr)) != (b.returncode, b.stdout, b.stderr):
            pr.append(f"{eform} and {digits} differ: status {a.returncode} vs {b.returncode}, "
                      f"stderr {short(a.stderr, 80)!r} vs {short(b.stderr, 80)!r}")
        return pr
    return run


# ----------------------------------------------------------------------------------------------
# Flags take no value; unknown options; options of another command

FLAGS = {
    "count": ["--explain", "--help"], "run": ["--explain", "--help"],
    "sweep": ["--M-upto-Nd", "--progress", "--help"], "bound": ["--all-N", "--help"],
    "optimize": ["--help"], "l2": ["--no-flush", "--help"],
    "l2 --launch": ["--causal", "--atomic-dq", "--zero-dq", "--static", "--longest-first", "--pairs", "--help"],
    "trace": ["--compute", "--help"], "report": ["--no-figures", "--help"], "plot": ["--help"],
    "example": ["--help"],
}


def flag_cases():
    cs = []
    bases = dict(BASES, example=["example", "two-tile"])
    for cmd, flags in FLAGS.items():
        for f in flags:
            for v in ("1", "", "yes", "no", "0", "false"):
                cs.append(Case("flag value", f"{cmd} {f}={v}", bases[cmd] + [f"{f}={v}"], 2, mention=[f]))
    for f in ("--help", "--version"):
        for v in ("1", ""):
            cs.append(Case("flag value", f"flashlab {f}={v}", [f"{f}={v}"], 2, mention=[f]))
    # unknown and misspelt options, stray words, another command's options
    foreign = {
        "count": ["--output", "--top", "--out", "--no-figures", "--compute", "--l2-mb", "--max-total-events",
                  "--M-upto-Nd", "--input", "--launch"],
        "run": ["--output", "--top", "--max-work", "--progress"],
        "sweep": ["--top", "--out", "--explain", "--cu-seqlens-q", "--block-table", "--max-macs", "--compute"],
        "bound": ["--algo", "--format", "--output", "--Br", "--sram", "--explain"],
        "optimize": ["--algo", "--Br", "--Bc", "--explain", "--out", "--max-macs"],
        "l2": ["--M", "--explain", "--batch", "--heads", "--causal", "--sram", "--out", "--seed", "--window"],
        "l2 --launch": ["--M", "--algo", "--pass", "--no-flush", "--explain"],
        "trace": ["--output", "--explain", "--top"],
        "report": ["--algo", "--format", "--output", "--Br", "--scripts", "--explain"],
        "plot": ["--N", "--algo", "--format", "--output", "--no-figures", "--sram"],
    }
    for cmd, opts in foreign.items():
        for o in opts:
            cs.append(Case("foreign option", f"{cmd} {o}", bases[cmd] + [o, GOOD.get(o, "1")], 2, mention=[o]))
    for cmd in list(BASES) + ["example"]:
        for o in ("--bogus", "-N", "--n", "--N64", "-", "stray", "--=", "---N", "--help-me", "-h"):
            if cmd in ("example",) and o == "stray":
                continue
            cs.append(Case("unknown option", f"{cmd} {o}", bases[cmd] + [o], 2, mention=[o]))
    for argv in (["nope"], [""], ["COUNT"], ["count2"], ["--count"], ["-v"], ["--versions"],
                 ["example", "nope"], ["example"], ["example", ""], ["example", "two-tile", "extra"],
                 ["example", "list", "extra"], ["example", "two-tile", "--N", "64"]):
        cs.append(Case("unknown option", "flashlab " + " ".join(map(repr, argv)), argv, 2,
                       mention=[a for a in argv if a] or ["COMMAND", "command"]))
    return cs


# ----------------------------------------------------------------------------------------------
# Control characters, long names, blame, overflow

def misc_cases(slow):
    cs = []
    # the order options of l2 --launch refuse the launches they do not describe
    fq = BASES["l2 --launch"]
    for extra, opt in ((["--pairs"], "--pairs"), (["--pairs", "--causal", "--splits", "2"], "--pairs"),
                       (["--launch", "bwd-kv", "--pairs", "--causal"], "--pairs"), (["--longest-first"], "--longest-first"),
                       (["--launch", "pre", "--causal", "--longest-first"], "--longest-first"), (["--static"], "--static"),
                       (["--static", "--persistent", "0"], "--static")):
        cs.append(Case("rule", f"l2 --launch {' '.join(extra)}", fq + extra, 2, mention=[opt]))
    ctl = ["fl\nash2", "fl\rash2", "fl\x1b[31mash2", "fl\tash2", "fl\x7fash2", "fl\x01ash2"]
    for v in ctl:
        for cmd, opt in (("count", "--algo"), ("count", "--causal"), ("sweep", "--algo"), ("l2", "--algo"),
                         ("trace", "--algo"), ("count", "--sram"), ("l2 --launch", "--launch")):
            cs.append(Case("control chars", f"{cmd} {opt} {v!r}", BASES[cmd] + [opt, v], 2, mention=[opt]))
        cs.append(Case("control chars", f"example {v!r}", ["example", v], 2, mention=["example", "fl"]))
        cs.append(Case("control chars", f"bound --input {v!r}", ["bound", "--input", v], 2, mention=["--input"]))
        cs.append(Case("control chars", f"sweep --output under a missing {v!r}",
                       BASES["sweep"] + ["--output", v + "/o.csv"], 2, mention=["--output"]))
        cs.append(Case("control chars", f"trace --out under a missing {v!r}",
                       BASES["trace"] + ["--out", v + "/o.csv"], 2, mention=["--out"]))
        cs.append(Case("control chars", f"unknown option {v!r}", ["count", "--" + v], 2, mention=["fl"]))
        cs.append(Case("control chars", f"command {v!r}", [v], 2, mention=["fl"]))
    # a long input is not cut before the rule: the line ends with more than the input
    long_dir = "x" * 3000
    for cmd, opt in (("sweep", "--output"), ("trace", "--out"), ("optimize", "--output"), ("l2", "--output")):
        cs.append(Case("long input", f"{cmd} {opt} under a missing 3000-character directory",
                       BASES[cmd] + [opt, long_dir + "/o.csv"], 2, mention=[opt], check=rule_after(long_dir)))
    cs.append(Case("long input", "bound --input a missing 3000-character name", ["bound", "--input", long_dir], 2,
                   mention=["--input"], check=rule_after(long_dir)))
    cs.append(Case("long input", "count --algo a 3000-character name", BASES["count"] + ["--algo", long_dir], 2,
                   mention=["--algo"], check=rule_after(long_dir)))
    cs.append(Case("long input", "count --N a 3000-digit number", BASES["count"] + ["--N", "9" * 3000], 2,
                   mention=["--N"], check=rule_after("9" * 3000)))
    # the quantity blamed is the one at fault
    blame = [
        (["count", "--algo", "flash2", "--N", "64", "--d", "8", "--M", "10"], ["--M"]),
        (["count", "--algo", "flash2", "--N", "64", "--d", "8", "--M", "4096", "--Br", "100000"], ["--Br"]),
        (["count", "--algo", "flash2", "--N", "64", "--d", "8", "--M", "4096", "--Bc", "100000"], ["--Bc"]),
        (["count", "--algo", "flash2-gqa", "--N", "64", "--d", "8", "--heads", "4", "--kv-heads", "3"], ["--kv-heads"]),
        (["count", "--algo", "flash2", "--N", "64", "--d", "8", "--kv-heads", "2"], ["--kv-heads"]),
        (["count", "--algo", "flash2", "--N", "64", "--batch", "2", "--cu-seqlens-q", "0,32"], ["--cu-seqlens-q"]),
        (["count", "--algo", "flash2", "--N", "64", "--batch", "1", "--cu-seqlens-q", "0,32"], ["--cu-seqlens-q", "--N"]),
        (["count", "--algo", "flash2", "--N", "64", "--window", "-5,2"], ["--window"]),
        (["count", "--algo", "decode", "--N", "1", "--Nk", "256", "--page-size", "16", "--pool-pages", "4"],
         ["--pool-pages", "--Nk"]),
        (["count", "--algo", "decode", "--N", "1", "--Nk", "256", "--page-size", "16", "--block-table", "0,1"],
         ["--block-table"]),
        (["count", "--algo", "blocksparse", "--N", "64", "--density", "2"], ["--density"]),
        (["count", "--algo", "flash2", "--N", "64", "--splits", "2"], ["--splits"]),
        (["count", "--algo", "flash2", "--N", "64", "--page-size", "16"], ["--page-size"]),
        (["count", "--algo", "flash2", "--N", "64", "--density", "0.5"], ["--density"]),
        (["count", "--algo", "flash2", "--N", "64", "--pad", "1"], ["--pad"]),
        (["count", "--algo", "flash2", "--N", "64", "--pad", "0"], ["--pad"]),
        (["l2", "--algo", "flash2", "--N", "256", "--d", "64", "--Br", "64", "--Bc", "64", "--sector", "48"], ["--sector"]),
        (["l2", "--algo", "flash2", "--N", "256", "--d", "64", "--Br", "1000", "--Bc", "64"], ["--Br"]),
        (["l2", "--algo", "flash2", "--N", "256", "--d", "64", "--Bc", "64"], ["--Br"]),
        (["trace", "--algo", "flash2", "--M", "10"], ["--M"]),
        (["optimize", "--N", "256", "--d", "64", "--M", "4096", "--top", "0"], ["--top"]),
        (["sweep", "--algo", "flash2", "--N", "64", "--d", "8", "--M", "4096", "--kv-heads", "3", "--heads", "4"],
         ["--kv-heads"]),
        (["report", "--no-figures", "--M", "10"], ["--M", " M"]),
    ]
    for a, m in blame:
        cs.append(Case("blame", " ".join(a), a, 2, mention=m))
    # arithmetic overflow is refused, never printed wrapped
    big = str(3037000500)
    for a in (["count", "--algo", "flash2", "--N", big, "--d", big, "--max-events", "0"],
              ["count", "--algo", "standard", "--N", big, "--d", "64", "--max-events", "0"],
              ["count", "--algo", "flash2", "--N", "4096", "--batch", str(2 ** 62), "--heads", "4", "--max-events", "0"],
              ["count", "--algo", "flash2", "--N", "4096", "--M", str(2 ** 63 - 1), "--max-events", "0",
               "--d", str(2 ** 40)],
              ["count", "--algo", "decode", "--N", "1", "--Nk", str(2 ** 62), "--max-events", "0"],
              ["sweep", "--algo", "flash2", "--N", str(2 ** 62), "--max-total-events", "0", "--max-events", "0"],
              ["l2", "--algo", "flash2", "--N", str(2 ** 40), "--d", str(2 ** 30), "--Br", "64", "--Bc", "64",
               "--max-work", "0"],
              ["optimize", "--N", str(2 ** 62), "--d", "64", "--M", "4096", "--max-work", "0"]):
        cs.append(Case("overflow", " ".join(a), a, 2, mention=None, mem_mb=512, time_limit=5,
                       check=no_negative_numbers))
    # a run that produces nothing is a failure with nothing written, not an empty success
    cs.append(Case("partial", "sweep --output when every configuration is skipped",
                   ["sweep", "--algo", "flash2", "--N", "64", "--d", "8", "--M", "8", "--output", "o.csv"], 2,
                   mention=None))
    cs.append(Case("partial", "bound when every configuration is skipped",
                   ["bound", "--N", str(2 ** 40), "--d", "64", "--M", "4096"], 2, mention=None))
    cs.append(Case("partial", "sweep --output over a file when every configuration is skipped",
                   ["sweep", "--algo", "flash2", "--N", "64", "--d", "8", "--M", "8", "--output", "o.csv"], 2,
                   mention=None, setup=mk_file("o.csv")))
    if slow:
        cs.append(Case("determinism", "plot twice: identical files, only progress on stderr", ["plot", "--out", "p1"],
                       0, lines=None, creates={"p1", "p2"}, time_limit=300, mem_mb=1024, stdout_empty=False,
                       check=plot_again_identical))
    return cs


def rule_after(inp):
    def f(work, res):
        line = res.err.decode(errors="replace").strip()
        i = line.find(inp)
        if i < 0:
            return []   # the input is shortened: fine if the rule is there
        if len(line) - (i + len(inp)) < 8:
            return [f"the line ends at the input, no rule after it: ...{short(line[-60:])!r}"]
        return []
    return f


def no_negative_numbers(work, res):
    import re
    if res.rc == 0 and re.search(rb"(^|[ ,])-\d", res.out, re.M):
        return [f"a negative count printed: {short(res.out)!r}"]
    return []


def plot_again_identical(work, res):
    pr = []
    for line in res.err.decode(errors="replace").splitlines():
        if not line.startswith("figures: "):
            pr.append(f"stderr chatter: {line!r}")
    r = subprocess.run([CLI, "plot", "--out", "p2"], cwd=work, capture_output=True, timeout=300 * SCALE)
    if r.returncode != 0:
        return pr + ["second plot failed"]
    for dirpath, _, files in os.walk(os.path.join(work, "p1")):
        for fn in files:
            a = os.path.join(dirpath, fn)
            b = a.replace(os.sep + "p1", os.sep + "p2", 1)
            with open(a, "rb") as x, open(b, "rb") as y:
                if x.read() != y.read():
                    pr.append(f"{os.path.relpath(a, work)} differs between two runs")
    return pr


# ----------------------------------------------------------------------------------------------
# Figures on a full disk: gnuplot exits 0 when its file cannot be written whole, so flashlab
# checks each figure (fl_output_check_written) before it moves any in.  Over a folder of good
# figures, a run that cannot write them all leaves every old figure as it was.

FIGURES = [f"fig_{n}.{e}" for n in ("a_traffic_vs_M", "b_traffic_vs_N", "c_traffic_vs_Bc", "d_ratio_vs_M",
                                      "g_bounds_vs_M") for e in ("png", "pdf", "svg")]
# a successful plot writes about 700 KiB of figures (measured: 744 KiB with data/ on ext4), so a
# file system with this much free cannot take them
NEARLY_FULL_KIB = 300


def good_figures(root):
    """A folder of 'good figures' (distinct bytes each, 40 KiB) and data files, as a user has them."""
    os.makedirs(os.path.join(root, "data"), exist_ok=True)
    for i, name in enumerate(FIGURES):
        with open(os.path.join(root, name), "wb") as fh:
            fh.write(hashlib.sha256(name.encode()).digest() * (40960 // 32))
    with open(os.path.join(root, "data", "report_sweep.csv"), "wb") as fh:
        fh.write(PRECIOUS)


def free_kib(path):
    v = os.statvfs(path)
    return v.f_bavail * v.f_frsize // 1024


def mount_small_fs(where, kib):
    """A tmpfs of kib KiB at where; False when this process may not mount one."""
    os.makedirs(where, exist_ok=True)
    try:
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={kib}k", "flhostile", where],
                           capture_output=True, timeout=30 * SCALE)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def fill_to(fs, kib_left):
    """Fills fs with one file until kib_left KiB are free (to a page)."""
    need = free_kib(fs) - kib_left
    if need > 0:
        with open(os.path.join(fs, "filler"), "wb") as fh:
            fh.write(b"\0" * (need * 1024))


def gnuplot_shim(work, blocks, trap):
    """FLASHLAB_GNUPLOT for a gnuplot whose writes stop past `blocks` 512-byte blocks (ulimit -f);
    with trap, SIGXFSZ is ignored, so its writes fail and it exits 0 with its files cut short
    (what a full disk does to it); without, the limit's signal ends it."""
    import shutil
    real = shutil.which("gnuplot") or "gnuplot"
    p = os.path.join(work, "gnuplot-shim")
    with open(p, "w") as fh:
        fh.write("#!/bin/sh\n" + (f"ulimit -f {blocks}\n" if blocks is not None else "")
                 + ("trap '' XFSZ\n" if trap else "") + f'exec "{real}" "$@"\n')
    os.chmod(p, 0o755)
    return p


def figures_kept(case, work, target, argv, env, mention):
    """Runs argv writing figures into target over good figures: it must fail (status 1, one last
    line naming the figure or the write) and leave target byte for byte as it was."""
    before = snapshot(target)
    c = Case(case.group, case.name, argv, rc=1, mention=mention, lines=case.lines, env=env,
             time_limit=case.time_limit, mem_mb=case.mem_mb, stdout_empty=True)
    start = time.monotonic()
    p, _ = launch(argv, work, c, None)
    rc, rss, out, err, cpu = wait_rusage(p, start + kill_after(c))
    res = Result(rc, out, err, time.monotonic() - start, rss, cpu)
    pr = expect(c, res)
    after = snapshot(target)
    if after != before:
        pr += [f"{target}: {rel} " + ("removed" if rel not in after else "left behind" if rel not in before
                                       else f"changed {before[rel][:3]} -> {after[rel][:3]}")
               for rel in sorted(set(before) | set(after)) if before.get(rel) != after.get(rel)][:4]
    # planted fault: the comparison above must see one figure emptied (else it checks nothing)
    victim = os.path.join(target, FIGURES[-1])
    if os.path.isfile(victim):
        with open(victim, "r+b") as fh:
            fh.truncate(0)
        if snapshot(target) == before:
            pr.append("planted fault missed: an emptied figure was not seen as changed")
    return pr


def full_disk_runner(cmd, left_kib):
    """cmd --out over good figures on a tmpfs with left_kib KiB free (a gnuplot that cannot write
    past 16 KiB where no tmpfs can be mounted)."""
    def run(case, work):
        fs = os.path.join(work, "fs")
        target = os.path.join(fs, "figs")
        mounted = mount_small_fs(fs, 2048)
        try:
            good_figures(target)
            env = {}
            if mounted:
                fill_to(fs, left_kib)
                free = free_kib(fs)
                if free > max(left_kib, 4) + 8:   # the case would pass vacuously on a roomy disk
                    return [f"the file system has {free} KiB free, not {left_kib}: cannot fill it"]
            else:
                env["FLASHLAB_GNUPLOT"] = gnuplot_shim(work, 32, trap=True)
            argv = [cmd, "--out", target] if cmd == "plot" else ["report", "--out", target]
            return figures_kept(case, work, target, argv, env,
                                ["--out", "figures"] if mounted else ["from gnuplot came out"])
        finally:
            if mounted:
                subprocess.run(["umount", "-l", fs], capture_output=True, timeout=30 * SCALE)
    return run


def shim_runner(cmd, trap, mention):
    """cmd --out over good figures with gnuplot's writes cut at 16 KiB (the shim)."""
    def run(case, work):
        target = os.path.join(work, "figs")
        good_figures(target)
        env = {"FLASHLAB_GNUPLOT": gnuplot_shim(work, 32, trap)}
        return figures_kept(case, work, target, [cmd, "--out", target], env, mention)
    return run


def lifted(argv, opt):
    """argv with its limit opt lifted: 0 (no limit), or for optimize's --max-work (which must be
    >= 1) 1e18; the option's value replaced, else appended."""
    a, v = list(argv), "1000000000000000000" if argv[0] == "optimize" else "0"
    if opt in a:
        a[a.index(opt) + 1] = v
        return a
    return a + [opt, v]


def budget_runner(opt):
    """A budget case: the command is refused (exit 2, one line naming opt) within its CPU
    ceiling; and, the planted fault, the same command with its limit lifted (the build before
    the budget) uses at least the case's CPU ceiling (RLIMIT_CPU caps it there) -- so the case
    fails, on an idle machine, a build that does the work before (or instead of) refusing it.  The
    ceiling is not scaled here: CPU seconds barely grow with the load, and a scaled one would
    cost minutes of CPU on a busy machine."""
    def run(case, work):
        plain = Case(case.group, case.name, case.argv, case.rc, mention=case.mention, lines=case.lines,
                     time_limit=case.time_limit, mem_mb=case.mem_mb)
        pr = run_case(plain)
        ceiling = max(1, math.ceil(case.time_limit))
        c = Case(case.group, case.name, lifted(case.argv, opt), rc="any", lines=None, stdout_empty=False,
                 time_limit=ceiling + 1, mem_mb=4096, cpu_s=ceiling)
        start = time.monotonic()
        p, _ = launch(c.argv, work, c, None)
        rc, rss, out, err, cpu = wait_rusage(p, start + kill_after(c))
        # what counts is the CPU used: the limit only caps the cost (a run that finished past the
        # ceiling, the cap not having struck first, shows the work as well)
        if cpu < 0.9 * ceiling:
            pr.append(f"planted fault missed: with {opt} lifted the command ended (status {rc}) after {cpu:.1f} s "
                      f"of CPU, within the ceiling of {ceiling} s: the refusal is not shown to spare any work")
        return pr
    return run


def cpu_limit_self_check(case, work):
    """Planted fault for the CPU-time ceiling that replaced the wall-clock one: a run of about a
    second of CPU under a ceiling of 0.2 s (after the time scale) must be reported, so a refusal
    that works before it refuses cannot pass on a busy machine."""
    argv = ["count", "--algo", "flash2", "--N", "262144", "--d", "64", "--M", "8192"]
    c = Case(case.group, case.name, argv, rc=0, lines=None, stdout_empty=False, time_limit=0.2 / SCALE)
    start = time.monotonic()
    p, _ = launch(argv, work, c, None)
    rc, rss, out, err, cpu = wait_rusage(p, start + 600 * SCALE)
    pr = expect(c, Result(rc, out, err, time.monotonic() - start, rss, cpu))
    if cpu < 0.4:
        return [f"the run used {cpu:.2f} s of CPU, too little to test the ceiling"]
    if not any("of CPU" in x for x in pr):
        return [f"{cpu:.2f} s of CPU under a ceiling of 0.2 s was not reported: {pr}"]
    return []


def full_disk_cases():
    slow = dict(time_limit=400, mem_mb=1024)
    return [
        Case("full disk", f"report --out over good figures, {NEARLY_FULL_KIB} KiB free", [], lines=1,
             runner=full_disk_runner("report", NEARLY_FULL_KIB), **slow),
        Case("full disk", "plot --out over good figures, a full file system", [], lines="last",
             runner=full_disk_runner("plot", 0), **slow),
        Case("full disk", "plot --out, gnuplot's writes fail past 16 KiB (exit 0, files cut short)", [],
             lines="last", runner=shim_runner("plot", True, ["from gnuplot came out incomplete"]), **slow),
        Case("full disk", "plot --out, gnuplot killed by its file-size limit", [], lines="last",
             runner=shim_runner("plot", False, ["the file-size limit"]), **slow),
    ]


# ----------------------------------------------------------------------------------------------
# The Python binding's cases (binding.py) as one group

def binding_cases():
    def runner(case, work):
        r = subprocess.run([sys.executable, os.path.join(HERE, "binding.py"), CLI, LIB, "--jobs", "1"],
                           capture_output=True, timeout=300 * SCALE)
        if r.returncode != 0:
            return [l for l in r.stdout.decode(errors="replace").splitlines() if l] or [short(r.stderr)]
        return []
    return [Case("binding", "tests/hostile/binding.py", [], runner=runner)]


# ----------------------------------------------------------------------------------------------

def all_cases(slow):
    return (output_cases() + interrupted_cases() + stdout_cases(slow) + limit_cases() + value_cases()
            + flag_cases() + misc_cases(slow) + full_disk_cases() + eform_cases(slow) + format_cases()
            + [Case("truncated input", "bound --input a sweep CSV cut at every byte of its last row", [],
                    runner=truncated_csv_runner, time_limit=60),
               Case("time", "a second of CPU under a ceiling of 0.2 s is reported (planted)", [],
                    runner=cpu_limit_self_check, time_limit=60)])


def main(argv):
    global CLI, LIB, SCALE, KILL_AFTER
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cli")
    ap.add_argument("lib")
    ap.add_argument("--slow", action="store_true")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--only", default=None, help="run the cases whose id contains this")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--no-binding", action="store_true")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args(argv)
    CLI, LIB = os.path.abspath(a.cli), os.path.abspath(a.lib)
    try:
        SCALE = time_scale()
    except ValueError as e:
        print(f"battery: {e}")
        return 2
    KILL_AFTER *= SCALE
    cases = all_cases(a.slow)
    if not a.no_binding:
        cases = binding_cases() + cases
    if a.only:
        cases = [c for c in cases if a.only in c.id]
    if a.list:
        for c in cases:
            print(repr(c.id))
        return 0
    ids = [c.id for c in cases]
    dup = {i for i in ids if ids.count(i) > 1} if len(ids) < 5000 else set()
    assert not dup, f"duplicate case ids: {sorted(dup)[:5]}"
    t0 = time.monotonic()
    failed = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        futs = {ex.submit(run_case, c): c for c in cases}
        for fut in concurrent.futures.as_completed(futs):
            c = futs[fut]
            try:
                pr = fut.result()
            except Exception as e:   # a fault of the battery itself is a failing case too
                pr = [f"battery error: {type(e).__name__}: {e}"]
            if pr:
                failed[c.id] = pr
                print(f"FAIL {c.id!r}: " + "; ".join(pr), flush=True)
            elif a.verbose:
                print(f"ok   {c.id!r}", flush=True)
    groups = {}
    for c in cases:
        n, k = groups.get(c.group, (0, 0))
        groups[c.group] = (n + 1, k + (c.id not in failed))
    print(f"{len(cases)} cases, {len(cases) - len(failed)} pass "
          f"({time.monotonic() - t0:.0f} s, time scale {SCALE:.3g}); by group: "
          + ", ".join(f"{g} {k}/{n}" for g, (n, k) in groups.items()))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
