#!/usr/bin/env python3
"""Drives a cross-built zeroclaw.exe under Wine over its Windows named pipe (issue 15).

Run by scripts/windows-test.sh after the build. From the Linux side it starts the daemon
under Wine with a temporary config dir, then checks, each with a deadline:

  - `zeroclaw.exe status` and `zeroclaw.exe rpc` as pipe clients;
  - `zeroclaw.exe connect` (stdio <-> pipe) driven with NDJSON: the handshake (the pipe
    client is the operator principal), an echo turn with streamed session/update
    notifications, config/set read back with config/get;
  - the `bash` tool on Windows (cmd /C in a Job object), through an agent on a small
    OpenAI-compatible server run here: output, exit code, and the kill of the whole
    process tree when the turn is cancelled;
  - the audit label `pipe:<client pid>` in the daemon's log;
  - a second daemon on the same data dir refused;
  - daemon/shutdown: the daemon exits 0.

Prints one PASS/FAIL line per check and exits 1 if any failed.
"""

import argparse
import http.server
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

# A cmd.exe wait of about n seconds that works without a console (Wine has ping.exe).
SLEEP = "ping -n {n} 127.0.0.1 >NUL"
START_TIMEOUT = 120  # the first daemon start may still be finishing the Wine prefix
STEP_TIMEOUT = 60


class Checks:
    def __init__(self):
        self.failed = []
        self.passed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"PASS {name}", flush=True)
        else:
            self.failed.append(name)
            print(f"FAIL {name}: {detail}", flush=True)
        return ok


def win_path(path):
    """The Windows view of a Linux path (Wine maps Z: to /)."""
    return "Z:" + os.path.abspath(path).replace("/", "\\")


class Zeroclaw:
    """Runs zeroclaw.exe subcommands under Wine with one config dir."""

    def __init__(self, wine, exe, config_dir, env):
        self.wine, self.exe, self.config_dir, self.env = wine, exe, config_dir, env

    def argv(self, *args):
        return [self.wine, self.exe, "--config-dir", win_path(self.config_dir), *args]

    def run(self, *args, timeout=STEP_TIMEOUT):
        """Runs to completion; stdout and stderr go through files (Wine's helper processes
        may inherit pipes and keep them open)."""
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            try:
                rc = subprocess.run(self.argv(*args), stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=err, env=self.env, timeout=timeout).returncode
            except subprocess.TimeoutExpired:
                rc = None
            out.seek(0)
            err.seek(0)
            return rc, out.read().decode(errors="replace"), err.read().decode(errors="replace")

    def spawn(self, *args, log):
        return subprocess.Popen(self.argv(*args), stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, env=self.env)


class Peer:
    """`zeroclaw.exe connect`: NDJSON in on stdin, out on stdout, read on a thread."""

    def __init__(self, zc):
        self.proc = subprocess.Popen(zc.argv("connect"), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=zc.env)
        self.lines = queue.Queue()
        self.next_id = 1
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for raw in self.proc.stdout:
            self.lines.put(raw)
        self.lines.put(None)

    def send(self, obj):
        self.proc.stdin.write((json.dumps(obj) + "\n").encode())
        self.proc.stdin.flush()

    def call(self, method, params, timeout=STEP_TIMEOUT, on_message=None):
        """Sends a request; returns (response, notifications seen before it)."""
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        notes = []
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no answer to {method} within {timeout} s")
            try:
                raw = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if raw is None:
                raise EOFError(f"the pipe closed before the answer to {method}")
            msg = json.loads(raw)
            if msg.get("id") == rid and "method" not in msg:
                return msg, notes
            notes.append(msg)
            if on_message:
                on_message(msg)

    def close(self, timeout=STEP_TIMEOUT):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return None


class FakeOpenAi(http.server.ThreadingHTTPServer):
    """A tiny OpenAI-compatible chat-completions server: answers each request with the next
    scripted tool call (or plain text once the script is used up) and records the bodies."""

    daemon_threads = True

    def __init__(self, script):
        super().__init__(("127.0.0.1", 0), FakeHandler)
        self.script = list(script)
        self.bodies = []
        self.lock = threading.Lock()

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class FakeHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        with self.server.lock:
            self.server.bodies.append(body)
            step = self.server.script.pop(0) if self.server.script else None
        events = []

        def chunk(delta, finish=None):
            return {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        if step is None:
            events.append(chunk({"role": "assistant", "content": "done"}))
            events.append(chunk({}, "stop"))
        else:
            name, args = step
            events.append(chunk({"role": "assistant", "tool_calls": [
                {"index": 0, "id": f"call{len(self.server.bodies)}", "type": "function",
                 "function": {"name": name, "arguments": json.dumps(args)}}]}))
            events.append(chunk({}, "tool_calls"))
        payload = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
        data = payload.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)


def tool_results(body):
    return [m.get("content", "") for m in body.get("messages", []) if m.get("role") == "tool"]


def wait_until(predicate, timeout, interval=0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wine", required=True, help="the wine64 loader")
    ap.add_argument("--exe", required=True, help="zeroclaw.exe (with the stub DLL beside it)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary config dir")
    opts = ap.parse_args()

    checks = Checks()
    # ZEROCLAW_SHELL=cmd: Wine's powershell.exe is a stub that runs nothing.
    env = dict(os.environ, WINEDEBUG="-all", WINEDLLOVERRIDES="bcryptprimitives=n,b",
               ZEROCLAW_SHELL="cmd",
               RUST_LOG=os.environ.get("RUST_LOG", "info"), NO_COLOR="1")
    env.pop("ZEROCLAW_SOCKET", None)
    env.pop("ZEROCLAW_CONFIG_DIR", None)
    env.pop("ZEROCLAW_DATA_DIR", None)
    work = tempfile.mkdtemp(prefix="zeroclaw-wine-")
    config_dir = os.path.join(work, "config")
    log_path = os.path.join(work, "daemon.log")
    zc = Zeroclaw(opts.wine, opts.exe, config_dir, env)
    fake = FakeOpenAi([])
    threading.Thread(target=fake.serve_forever, daemon=True).start()
    daemon = None
    try:
        daemon = run_checks(checks, zc, fake, work, log_path)
    except Exception as e:  # a broken step must still print FAIL and clean up
        checks.check("driver ran to the end", False, f"{type(e).__name__}: {e}")
    finally:
        if daemon is not None and daemon.poll() is None:
            daemon.kill()
            daemon.wait(timeout=10)
        fake.shutdown()
        if checks.failed and os.path.exists(log_path):
            with open(log_path, errors="replace") as f:
                tail = f.read()[-4000:]
            print("---- daemon log (tail) ----\n" + tail + "\n---- end of daemon log ----")
        if opts.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{checks.passed} passed, {len(checks.failed)} failed"
          + (f": {', '.join(checks.failed)}" if checks.failed else ""))
    return 1 if checks.failed else 0


def write_config(config_dir, fake):
    """The echo agent `default`, and a shell agent `shell` on the fake OpenAI server
    (autonomy full: no approval round trip)."""
    os.makedirs(config_dir)
    with open(os.path.join(config_dir, "config.toml"), "w") as f:
        f.write(f"""[providers.echo]
kind = "echo"

[providers.fake]
kind = "openai"
base_url = "{fake.base_url}"
api_key = "test"
model = "fake"

[agents.default]
provider = "echo"

[agents.shell]
provider = "fake"
tools = ["bash"]
autonomy = "full"
""")


def run_checks(checks, zc, fake, work, log_path):
    write_config(zc.config_dir, fake)
    log = open(log_path, "wb")
    daemon = zc.spawn("daemon", log=log)

    def daemon_log():
        with open(log_path, errors="replace") as f:
            return f.read()

    # status: the first success also tells us the pipe is up.
    status = {}

    def status_ok():
        rc, out, _ = zc.run("status", "--json", timeout=30)
        if rc == 0:
            try:
                status.update(json.loads(out))
            except ValueError:
                return False
            return True
        return daemon.poll() is not None

    up = wait_until(status_ok, START_TIMEOUT, interval=1)
    if not checks.check("daemon serves the named pipe; `zeroclaw.exe status` answers",
                        up and bool(status), f"daemon exit code {daemon.poll()}"):
        return daemon
    endpoint = status.get("endpoint", "")
    checks.check("endpoint is \\\\.\\pipe\\zeroclaw-<16 hex>",
                 re.fullmatch(r"\\\\\.\\pipe\\zeroclaw-[0-9a-f]{16}", endpoint) is not None,
                 repr(endpoint))

    rc, out, err = zc.run("rpc", "session/list", "{}")
    try:
        listed = json.loads(out) if rc == 0 else None
    except ValueError:
        listed = None
    checks.check("`zeroclaw.exe rpc session/list` answers",
                 isinstance(listed, dict) and "sessions" in listed, f"rc={rc} {out}{err}")

    rc, out, err = zc.run("daemon")
    checks.check("a second daemon on the same data dir is refused",
                 rc not in (0, None) and "another daemon owns" in out + err,
                 f"rc={rc} {out}{err}")

    peer = Peer(zc)
    try:
        connect_checks(checks, peer, fake, os.path.join(work, "escaped.txt"))
        # Shut down over the same connection.
        resp, _ = peer.call("daemon/shutdown", {})
        checks.check("daemon/shutdown answers shuttingDown",
                     resp.get("result", {}).get("shuttingDown") is True, json.dumps(resp))
    finally:
        peer.close(timeout=30)

    # The audit log names the pipe client by its process id.
    labels = re.findall(r"pipe:(\d+)", daemon_log())
    checks.check("audit label pipe:<client pid> in the daemon log", bool(labels),
                 "no pipe:<pid> label logged")

    try:
        code = daemon.wait(timeout=STEP_TIMEOUT)
    except subprocess.TimeoutExpired:
        code = None
    checks.check("daemon exits 0 after daemon/shutdown", code == 0, f"exit code {code}")
    log.close()
    return daemon


def connect_checks(checks, peer, fake, marker):
    resp, _ = peer.call("initialize", {"protocolVersion": 1,
                                       "clientInfo": {"name": "wine-test", "version": "1"}})
    result = resp.get("result", {})
    checks.check("connect: initialize over the pipe; the client is the operator principal",
                 result.get("principal") == {"id": "operator", "admin": True}
                 and result.get("protocolVersion") == 1, json.dumps(resp))

    resp, _ = peer.call("session/new", {"agentAlias": "default"})
    sid = resp.get("result", {}).get("sessionId")
    checks.check("connect: session/new on the echo agent", bool(sid), json.dumps(resp))
    prompt = "hello over the windows pipe"
    resp, notes = peer.call("session/prompt", {"sessionId": sid, "prompt": prompt})
    chunks = [n["params"].get("text", "") for n in notes
              if n.get("method") == "session/update"
              and n["params"].get("type") == "agent_message_chunk"]
    checks.check("connect: echo turn streams session/update chunks and completes",
                 len(chunks) >= 2 and "".join(chunks) == prompt
                 and resp.get("result", {}).get("outcome") == "completed",
                 f"chunks={chunks} answer={json.dumps(resp)}")

    resp, _ = peer.call("config/set", {"prop": "agents.default.max_tool_iterations",
                                       "value": 7})
    got, _ = peer.call("config/get", {"prop": "agents.default.max_tool_iterations"})
    checks.check("connect: config/set, read back with config/get",
                 resp.get("result", {}).get("set") is True
                 and got.get("result", {}).get("value") == 7,
                 f"{json.dumps(resp)} {json.dumps(got)}")

    # The shell tool: cmd /C with the exit code reported.
    fake.script.append(("bash", {"command": "echo shell-says-hi& exit 3"}))
    resp, _ = peer.call("session/new", {"agentAlias": "shell"})
    shell_sid = resp.get("result", {}).get("sessionId")
    resp, _ = peer.call("session/prompt", {"sessionId": shell_sid, "prompt": "run it"})
    results = [r for body in fake.bodies for r in tool_results(body)]
    checks.check("bash tool on Windows: output and exit code come back",
                 resp.get("result", {}).get("outcome") == "completed"
                 and any("shell-says-hi" in r and "[exit code: 3]" in r for r in results),
                 f"tool results={results} answer={json.dumps(resp)}")

    # Cancel while a command runs: the Job object takes its children down too. The
    # command starts a detached child (which writes `started`, waits, then writes the
    # marker) and then waits itself; the turn is cancelled once `started` exists.
    started_file = os.path.join(os.path.dirname(marker), "started.txt")
    child = (f"echo up> {win_path(started_file)}& {SLEEP.format(n=6)}"
             f"& echo escaped> {win_path(marker)}")
    fake.script.append(("bash", {"command": f"start /B cmd /C \"{child}\"& {SLEEP.format(n=60)}"}))
    rid = peer.next_id
    peer.next_id += 1
    peer.send({"jsonrpc": "2.0", "id": rid, "method": "session/prompt",
               "params": {"sessionId": shell_sid, "prompt": "sleep"}})
    started = wait_until(lambda: os.path.exists(started_file), STEP_TIMEOUT, interval=0.2)
    cancel_id = peer.next_id
    peer.next_id += 1
    peer.send({"jsonrpc": "2.0", "id": cancel_id, "method": "session/cancel",
               "params": {"sessionId": shell_sid}})
    answers = {}
    deadline = time.monotonic() + STEP_TIMEOUT
    while len(answers) < 2 and time.monotonic() < deadline:
        try:
            raw = peer.lines.get(timeout=1)
        except queue.Empty:
            continue
        if raw is None:
            break
        msg = json.loads(raw)
        if msg.get("id") in (rid, cancel_id) and "method" not in msg:
            answers[msg["id"]] = msg
    outcome = answers.get(rid, {}).get("result", {}).get("outcome")
    # A negative can only be observed by waiting: past the moment a surviving child would
    # have written the marker (its own wait plus slack).
    escaped = wait_until(lambda: os.path.exists(marker), 10, interval=0.5)
    checks.check("bash tool on Windows: cancel kills the command's whole process tree",
                 started and outcome == "cancelled" and not escaped,
                 f"started={started} outcome={outcome} marker written={escaped}")


if __name__ == "__main__":
    sys.exit(main())
