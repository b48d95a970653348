#!/usr/bin/env python3
"""test_jupyterlab.py: the labs under JupyterLab's own server, with ipywidgets installed.

    python3 test_jupyterlab.py LIB CLI [NOTEBOOK_STEM ...]

Builds the student's folder (make_handout.py --solutions) in a temporary folder, starts
`python3 -m jupyterlab` there headless (127.0.0.1, a free port, a random token, no browser,
private runtime and config folders, the repository's package flashlab on PYTHONPATH with LIB
and CLI as FLASHLAB_LIB and FLASHLAB_CLI, nothing else of the environment's FLASHLAB_* or
PYTHONPATH; --allow-root when run as root, which JupyterLab otherwise refuses), and drives it as
the JupyterLab front end does: the REST API (/api/status, /lab and its page config, the widget
manager's front-end code, /api/contents, /api/sessions) and each kernel's websocket (/api/kernels/ID/channels), sending one
execute_request per code cell of the notebook as the server stores it.  Each solution notebook
must run without an error and every check must print PASS (no SKIP: the recorded data is there); each
untouched exercise must run without an error and every check print FAIL.  Where a lab calls the
step viewer (labs 1 and 2), the kernel must open ipywidgets' comms (an IntSlider, an Output, a
VBox) and display the widget view: the viewer's widget path ran.  Labs 3-8 must display their
figures (image/png).  The page /lab must list ipywidgets' front end
(@jupyter-widgets/jupyterlab-manager) among its extensions and serve its code.

Exit 77 (ctest: skipped) when jupyterlab, ipywidgets or jupyter_server cannot be imported: CI
does not install them (scripts/install-deps.sh --lab does).  ctest: notebooks_jupyterlab.
"""
import asyncio
import json
import os
import pathlib
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid

SKIP = 77
HERE = pathlib.Path(__file__).resolve().parent.parent
WIDGET_LABS = ("lab1", "lab2")            # stepview.show: the ipywidgets slider
FIGURE_LABS = ("lab3", "lab4", "lab5", "lab6", "lab7", "lab8")
CELL_TIMEOUT = 300


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def deserialize(frame):
    """A message from the kernel websocket: JSON text, or the binary framing of a message with
    buffers (uint32 count, uint32 offsets, JSON first)."""
    if isinstance(frame, str):
        return json.loads(frame)
    n = int.from_bytes(frame[:4], "big")
    offsets = [int.from_bytes(frame[4 + 4 * i:8 + 4 * i], "big") for i in range(n)]
    end = offsets[1] if n > 1 else len(frame)
    return json.loads(frame[offsets[0]:end].decode())


class Server:
    def __init__(self, root, env):
        self.root = root
        self.port, self.token = free_port(), secrets.token_hex(16)
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = open(root.parent / "jupyterlab.log", "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
             f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
             f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={root}"]
            + (["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []),
            cwd=root, env=env, stdout=self.log, stderr=subprocess.STDOUT)

    async def request(self, method, path, body=None):
        from tornado.httpclient import AsyncHTTPClient, HTTPRequest
        req = HTTPRequest(self.base + path, method=method, request_timeout=120,
                          headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
                          body=None if body is None else json.dumps(body), allow_nonstandard_methods=True)
        r = await AsyncHTTPClient().fetch(req, raise_error=False)
        if r.code >= 400:
            raise RuntimeError(f"{method} {path}: HTTP {r.code} {r.body[:300]!r}")
        return r

    async def wait(self, timeout=120):
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if self.proc.poll() is not None:
                self.log.flush()
                tail = (self.root.parent / "jupyterlab.log").read_text().splitlines()[-15:]
                raise RuntimeError(f"jupyterlab exited with {self.proc.returncode}:\n" + "\n".join(tail))
            try:
                await self.request("GET", "/api/status")
                return time.monotonic() - t0
            except Exception:
                await asyncio.sleep(0.5)
        raise RuntimeError(f"jupyterlab did not answer within {timeout} s")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


async def run_notebook(srv, name):
    """Runs every code cell of the notebook the server stores under name in a fresh kernel of a
    new session.  Returns (cells, seconds): per code cell its tags and what the kernel sent
    (stream text, error, mime types displayed, widget models opened)."""
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect
    nb = json.loads((await srv.request("GET", f"/api/contents/{name}?content=1")).body)["content"]
    sess = json.loads((await srv.request("POST", "/api/sessions", {
        "path": name, "name": name, "type": "notebook", "kernel": {"name": "python3"}})).body)
    kid, sid = sess["kernel"]["id"], uuid.uuid4().hex
    ws = await websocket_connect(HTTPRequest(
        f"ws://127.0.0.1:{srv.port}/api/kernels/{kid}/channels?session_id={sid}",
        headers={"Authorization": f"token {srv.token}"}), max_message_size=256 * 2**20)
    t0, cells = time.monotonic(), []
    try:
        for cell in nb["cells"]:
            if cell["cell_type"] != "code":
                continue
            src = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            mid = uuid.uuid4().hex
            await ws.write_message(json.dumps({
                "header": {"msg_id": mid, "msg_type": "execute_request", "username": "test", "session": sid,
                           "date": "", "version": "5.3"},
                "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
                "content": {"code": src, "silent": False, "store_history": True, "user_expressions": {},
                            "allow_stdin": False, "stop_on_error": True}}))
            got = {"tags": cell.get("metadata", {}).get("tags", []), "text": "", "error": None,
                   "mime": [], "widgets": [], "reply": None}
            idle = False
            while not (idle and got["reply"]):
                frame = await asyncio.wait_for(ws.read_message(), CELL_TIMEOUT)
                if frame is None:
                    raise RuntimeError(f"{name}: the kernel websocket closed")
                msg = deserialize(frame)
                if msg.get("parent_header", {}).get("msg_id") != mid:
                    continue
                kind, content = msg["header"]["msg_type"], msg["content"]
                if kind == "stream":
                    got["text"] += content["text"]
                elif kind == "error":
                    got["error"] = f"{content['ename']}: {content['evalue']}"
                elif kind in ("display_data", "execute_result"):
                    got["mime"] += list(content.get("data", {}))
                elif kind == "comm_open" and content.get("target_name") == "jupyter.widget":
                    got["widgets"].append(content.get("data", {}).get("state", {}).get("_model_name"))
                elif kind == "status" and content["execution_state"] == "idle":
                    idle = True
                elif kind == "execute_reply":
                    got["reply"] = content["status"]
            cells.append(got)
            if got["reply"] != "ok":
                break
    finally:
        ws.close()
        await srv.request("DELETE", f"/api/sessions/{sess['id']}")
    return cells, time.monotonic() - t0


def judge(name, cells, expect):
    """Problems with a notebook's run: errors, checks not as expected, widgets or figures
    missing."""
    import re
    check = re.compile(r"^CHECK (\S+): (PASS|FAIL|SKIP)\s*$", re.M)
    problems = [f"cell raised {c['error']}" for c in cells if c["error"] or c["reply"] != "ok"]
    verdicts = [v for c in cells if "check" in c["tags"] for _, v in check.findall(c["text"])]
    if not verdicts:
        problems.append("no CHECK line")
    if expect == "pass" and any(v == "FAIL" for v in verdicts):
        problems.append(f"checks {verdicts}: a solution check FAILS")
    if any(v == "SKIP" for v in verdicts):   # the recorded data is there
        problems.append(f"checks {verdicts}: a check SKIPS though its data is there")
    if expect == "fail" and any(v != "FAIL" for v in verdicts):
        problems.append(f"checks {verdicts}: an untouched exercise's check does not FAIL")
    lab = name.split("_")[0]
    models = {m for c in cells for m in c["widgets"]}
    views = sum("application/vnd.jupyter.widget-view+json" in c["mime"] for c in cells)
    images = sum(c["mime"].count("image/png") for c in cells)
    if lab in WIDGET_LABS and (not {"IntSliderModel", "OutputModel", "VBoxModel"} <= models or not views):
        problems.append(f"the step viewer's widgets did not open (models {sorted(models)}, {views} views)")
    if lab in FIGURE_LABS and expect == "pass" and not images:
        problems.append("no figure (image/png) displayed")
    return problems, verdicts, sorted(models), views, images


async def front_end(srv):
    """What a browser gets: the /lab page, its page config's federated extensions, and the
    widget manager's code (ipywidgets' front end).  Returns the number of problems."""
    import re
    page = (await srv.request("GET", "/lab")).body.decode(errors="replace")
    m = re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>', page, re.S)
    if "JupyterLab" not in page or not m:
        print("FAIL: /lab did not serve the JupyterLab application")
        return 1
    cfg = json.loads(m.group(1))
    fed = {e["name"]: e for e in cfg.get("federated_extensions", [])}
    wm = fed.get("@jupyter-widgets/jupyterlab-manager")
    if not wm:
        print(f"FAIL: the JupyterLab widget manager is not among the page's extensions {sorted(fed)}")
        return 1
    js = await srv.request("GET", f"/lab/extensions/@jupyter-widgets/jupyterlab-manager/{wm['load']}")
    print(f"/lab served (JupyterLab {cfg.get('appVersion')}); front-end extensions {sorted(fed)}; "
          f"the widget manager's code: {len(js.body)} bytes")
    return 0


async def main_async(dest, names, lib, cli):
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLASHLAB_") and k != "PYTHONPATH"}
    env.update(PYTHONPATH=str(HERE.parent / "python"), FLASHLAB_LIB=str(pathlib.Path(lib).resolve()),
               FLASHLAB_CLI=str(pathlib.Path(cli).resolve()), FLASHLAB_STUDENT="ada", JUPYTER_RUNTIME_DIR=str(dest.parent / "runtime"),
               JUPYTER_CONFIG_DIR=str(dest.parent / "config"), JUPYTERLAB_SETTINGS_DIR=str(dest.parent / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(dest.parent / "workspaces"), OMP_NUM_THREADS="1")
    srv = Server(dest, env)
    failed = 0
    try:
        up = await srv.wait()
        from jupyterlab import __version__ as jl
        import ipywidgets
        import jupyter_server
        print(f"jupyterlab {jl} (jupyter_server {jupyter_server.__version__}, ipywidgets {ipywidgets.__version__}) "
              f"answered on 127.0.0.1:{srv.port} after {up:.1f} s")
        failed += await front_end(srv)
        for name in names:
            expect = "pass" if name.endswith("_solution.ipynb") else "fail"
            cells, secs = await run_notebook(srv, name)
            problems, verdicts, models, views, images = judge(name, cells, expect)
            print(f"{name}: {secs:.1f} s, {len(cells)} cells, checks {''.join(v[0] for v in verdicts)} "
                  f"(expected {expect}), widgets {models or '-'} ({views} views), figures {images} -> "
                  f"{'OK' if not problems else 'FAILED'}")
            for p in problems:
                print("   ", p)
            failed += bool(problems)
    finally:
        srv.stop()
    if failed:
        print("--- jupyterlab.log (last 40 lines) ---")
        print("\n".join((dest.parent / "jupyterlab.log").read_text().splitlines()[-40:]))
    return failed


def main(argv):
    try:
        import ipywidgets  # noqa: F401
        import jupyter_server  # noqa: F401
        import jupyterlab  # noqa: F401
        import tornado  # noqa: F401
    except ImportError as e:
        print(f"SKIP: {e.name} is not installed (bash scripts/install-deps.sh --lab installs JupyterLab "
              f"and ipywidgets)")
        return SKIP
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    import make_handout   # notebooks/, on PYTHONPATH (ctest sets it)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="fl_jlab_"))
    try:
        dest = make_handout.make(tmp / "handout", solutions=True)
        stems = argv[2:]
        names = [p.name for p in sorted(dest.glob("lab*_solution.ipynb")) + sorted(
            p for p in dest.glob("lab*.ipynb") if not p.name.endswith("_solution.ipynb"))
            if not stems or any(p.name.startswith(s) for s in stems)]
        failed = asyncio.run(main_async(dest, names, argv[0], argv[1]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"jupyterlab: {len(names) - failed if failed <= len(names) else 0} of {len(names)} notebooks as expected"
          if not failed else f"jupyterlab: FAILED ({failed} problem(s))")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
