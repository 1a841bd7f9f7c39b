#!/usr/bin/env python3
"""Regenerates crates/zeroclaw/link-order.txt, the order in which the linker lays out the
functions of the release binary (issue 27: idle RSS).

The kernel maps a program's code 64 KiB around every page it first touches, so a start that
runs 2 MiB of functions scattered over 14 MiB of code keeps ~6 MiB of it resident. Listing
those functions first in the link order puts them side by side. The list is the functions a
release daemon runs while starting on the default config (first quiet, with RUST_LOG=warn as
../shared/bench/perf.py runs it; then what a start at its own log level adds, as a user
runs it: formatting the startup log lines is code of its own), then while serving a client's
usual calls (initialize, status, an echo session's prompt, list, messages, config), then
while streaming two turns from an OpenAI-compatible provider (this script's own fake, on
127.0.0.1: the code a first real turn pages in), recorded with callgrind. Symbols that later
disappear or change are skipped by the linker: a stale list only loses its benefit, which
`scripts/check-memory.sh` (idle RSS) then reports.

usage: scripts/link-order.py   (from anywhere; builds the release binary, needs valgrind;
                                takes a few minutes; then build again to link with the list)
"""
import http.server, json, os, re, shutil, signal, socket, subprocess, sys, tempfile, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "crates", "zeroclaw", "link-order.txt")


def run(cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kw)


def wait_for(path, proc, limit=120.0):
    t0 = time.monotonic()
    while not os.path.exists(path):
        if proc.poll() is not None or time.monotonic() - t0 > limit:
            sys.exit(f"link-order: no socket at {path}")
        time.sleep(0.05)


class Client:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.s.settimeout(120)
        self.f = self.s.makefile("rb")
        self.next = 0

    def call(self, method, params=None):
        self.next += 1
        msg = {"jsonrpc": "2.0", "id": self.next, "method": method}
        if params is not None:
            msg["params"] = params
        self.s.sendall((json.dumps(msg) + "\n").encode())
        while True:
            line = self.f.readline()
            if not line:
                sys.exit(f"link-order: connection closed during {method}")
            reply = json.loads(line)
            if reply.get("id") == self.next and "method" not in reply:
                if "error" in reply:
                    sys.exit(f"link-order: {method} failed: {reply['error']}")
                return reply["result"]


def the_usual_calls(path):
    c = Client(path)
    c.call("initialize", {"protocolVersion": 1})
    for _ in range(3):
        c.call("status")
    c.call("config/get", {})
    c.call("session/new", {"agentAlias": "echo", "sessionId": "order"})
    other = Client(path)
    other.call("initialize", {"protocolVersion": 1})
    other.call("session/subscribe", {"sessionId": "order"})
    for words in ("hello", "a second turn " * 50):
        c.call("session/prompt", {"sessionId": "order", "prompt": words})
    c.call("session/list", {})
    c.call("session/messages", {"sessionId": "order"})
    c.call("session/status", {"sessionId": "order"})


class FakeOpenAi(http.server.BaseHTTPRequestHandler):
    """`POST /v1/chat/completions`: a streamed answer of many small deltas, then the finish
    reason, the usage and `[DONE]`, as server-sent events in chunked HTTP/1.1."""
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        events = [{"role": "assistant", "content": ""}] + [{"content": f"w{i} "} for i in range(2000)]
        for delta in events + [{}]:
            self.event({"choices": [{"index": 0, "delta": delta, "finish_reason": None if delta else "stop"}]})
        self.event({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 2000, "total_tokens": 2010}})
        self.chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")

    def event(self, value):
        self.chunk(("data: " + json.dumps({"id": "c", "object": "chat.completion.chunk", "model": "m", **value})
                    + "\n\n").encode())

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def log_message(self, *args):
        pass


def provider_turns(path):
    c = Client(path)
    c.call("initialize", {"protocolVersion": 1})
    c.call("session/new", {"agentAlias": "fake", "sessionId": "streamed"})
    for words in ("stream me an answer", "and another"):
        c.call("session/prompt", {"sessionId": "streamed", "prompt": words})
    c.call("session/messages", {"sessionId": "streamed"})


def functions(dump, binary):
    """Mangled names of the functions of `binary` in a callgrind dump, in the dump's order."""
    names, found = {}, []
    ob = cob = None
    for line in open(dump, errors="replace"):
        m = re.match(r"^(ob|fn|cob|cfn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if not m:
            continue
        kind, ident, name = m.groups()
        key = ("ob" if kind in ("ob", "cob") else "fn", ident)
        if name:
            names[key] = name
        name = names.get(key)
        if kind == "ob":
            ob, cob = name, None
        elif kind == "cob":
            cob = name
        else:
            owner = (cob or ob) if kind == "cfn" else ob
            cob = None
            if owner == binary and name and not name.startswith("0x"):
                found.append(re.sub(r"'\d+$", "", name))
    return found


def main():
    if not shutil.which("valgrind"):
        sys.exit("link-order: needs valgrind (apt-get install valgrind)")
    # Built exactly as the shipped binary (the release profile keeps the symbol table):
    # any other flag would change the symbols' hashes, and the list would name nothing.
    run(["cargo", "build", "--release", "-p", "zeroclaw"], cwd=ROOT)
    meta = json.loads(subprocess.run(["cargo", "metadata", "--format-version", "1", "--no-deps"], cwd=ROOT,
                                     check=True, capture_output=True, text=True).stdout)
    tmp = tempfile.mkdtemp(prefix="zc-link-order-")
    try:
        binary = os.path.join(tmp, "zeroclaw")
        shutil.copy(os.path.join(meta["target_directory"], "release", "zeroclaw"), binary)
        cfg = os.path.join(tmp, "cfg")
        os.makedirs(cfg, mode=0o700)
        fake = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeOpenAi)
        threading.Thread(target=fake.serve_forever, daemon=True).start()
        # The daemon at its own log level (no RUST_LOG), as a user runs it: the lines it
        # logs while starting are code it runs at every start; and quiet (RUST_LOG=warn),
        # as ../shared/bench/perf.py runs it.
        env = {k: v for k, v in os.environ.items() if not k.startswith("ZEROCLAW_") and k != "RUST_LOG"}
        quiet = dict(env, RUST_LOG="warn")
        sock = os.path.join(cfg, "data", "daemon.sock")
        # The first start writes the default config and the store; the recorded ones come
        # after, like every start after the first, on the defaults (every section a
        # newcomer's config has: reading each is code of its own) and the fake provider.
        first = subprocess.Popen([binary, "daemon", "--config-dir", cfg], env=env, stderr=subprocess.DEVNULL)
        wait_for(sock, first)
        first.send_signal(signal.SIGTERM)
        first.wait(30)
        with open(os.path.join(cfg, "config.toml"), "a") as f:
            f.write('\n[agents.echo]\nprovider = "echo"\n\n'
                    f'[providers.fake]\nkind = "openai"\nbase_url = "http://127.0.0.1:{fake.server_port}/v1"\n'
                    'model = "m"\n\n[agents.fake]\nprovider = "fake"\ntools = []\n')

        def recorded(name, env):
            """A daemon started under callgrind, recording into `name`.N, once its socket is up."""
            daemon = subprocess.Popen(["valgrind", "--tool=callgrind", "--demangle=no",
                                       f"--callgrind-out-file={os.path.join(tmp, name)}",
                                       binary, "daemon", "--config-dir", cfg], env=env, stderr=subprocess.DEVNULL)
            wait_for(sock, daemon)
            time.sleep(2)
            return daemon

        def dump(daemon, what):
            run(["callgrind_control", f"--dump={what}", str(daemon.pid)], stdout=subprocess.DEVNULL)
            time.sleep(1)

        def stop(daemon):
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(60)

        daemon = recorded("quiet.out", quiet)
        dump(daemon, "started")
        stop(daemon)
        daemon = recorded("logged.out", env)
        dump(daemon, "started")
        the_usual_calls(sock)
        dump(daemon, "served")
        provider_turns(sock)
        dump(daemon, "streamed")
        stop(daemon)
        dumps = [os.path.join(tmp, p) for p in ("quiet.out.1", "logged.out.1", "logged.out.2", "logged.out.3")]
        missing = [p for p in dumps if not os.path.exists(p)]
        if missing:
            sys.exit(f"link-order: callgrind dumps missing: {missing}")
        # Parts in that order: a quiet start, what a logged start adds, the usual calls, the
        # provider's turns. Each part sorted by name: the dump's own order varies from run
        # to run, and a sorted list changes only where the functions do.
        order, seen = [], set()
        for path in dumps:
            part = set(functions(path, binary)) - seen
            seen |= part
            order += sorted(part)
        with open(OUT, "w") as f:
            f.write("# Generated by scripts/link-order.py: functions the release daemon runs while starting\n"
                    "# (quiet, then logging), then while serving the usual calls, then while streaming a\n"
                    "# provider's turns, laid out first by the linker (crates/zeroclaw/build.rs).\n")
            f.write("\n".join(order) + "\n")
        print(f"link-order: {len(order)} functions written to {os.path.relpath(OUT, ROOT)}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
