#!/usr/bin/env python3
"""Memory over a long life (issue 27, "memory that stays small"): the daemon's RSS while one
session takes many turns, then while many sessions are each started, prompted once, closed
and deleted, then while many connections come and go. Everything on the built-in echo
provider. A daemon whose memory stays small levels off in each phase; one that keeps
something per turn, per session or per connection grows in a line.

usage: scripts/soak-memory.py BIN [--mode acp|chat] [--turns N] [--sessions N] [--conns N]
prints one line per sixth of each phase: phase, count, VmRSS kB, RssAnon kB
"""
import argparse, json, os, shutil, socket, subprocess, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("bin")
ap.add_argument("--mode", default="acp")
ap.add_argument("--turns", type=int, default=6000)
ap.add_argument("--sessions", type=int, default=6000)
ap.add_argument("--conns", type=int, default=3000)
args = ap.parse_args()

home = tempfile.mkdtemp()
os.mkdir(home + "/cfg", 0o700)
sock = home + "/s.sock"
env = dict(os.environ, ZEROCLAW_CONFIG_DIR=home + "/cfg", ZEROCLAW_SOCKET=sock, RUST_LOG="warn")
daemon = subprocess.Popen([args.bin, "daemon"], env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
t0 = time.monotonic()
while not os.path.exists(sock):
    if daemon.poll() is not None or time.monotonic() - t0 > 30:
        raise SystemExit("soak: the daemon did not start")
    time.sleep(0.02)


def rss():
    fields = dict(l.split(":", 1) for l in open(f"/proc/{daemon.pid}/status") if ":" in l)
    return int(fields["VmRSS"].split()[0]), int(fields["RssAnon"].split()[0])


class Client:
    def __init__(self):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(sock)
        self.s.settimeout(30)
        self.f = self.s.makefile("rb")
        self.n = 0

    def call(self, method, params=None):
        self.n += 1
        msg = {"jsonrpc": "2.0", "id": self.n, "method": method}
        if params is not None:
            msg["params"] = params
        self.s.sendall((json.dumps(msg) + "\n").encode())
        while True:
            reply = json.loads(self.f.readline())
            if reply.get("id") == self.n and "method" not in reply:
                if "error" in reply:
                    raise SystemExit(f"soak: {method} failed: {reply['error']}")
                return reply["result"]


def report(phase, i, n):
    if n >= 6 and (i + 1) % (n // 6) == 0:
        print(phase, i + 1, *rss(), flush=True)


try:
    c = Client()
    c.call("initialize", {"protocolVersion": 1})
    print("start", 0, *rss(), flush=True)
    mode = args.mode
    c.call("session/new", {"agentAlias": "default", "sessionId": "long", "mode": mode})
    for i in range(args.turns):
        c.call("session/prompt", {"sessionId": "long", "mode": mode,
                                  "prompt": f"turn {i} " + "word " * 50})
        report("turns", i, args.turns)
    for i in range(args.sessions):
        sid = f"s{i}"
        c.call("session/new", {"agentAlias": "default", "sessionId": sid, "mode": mode})
        c.call("session/prompt", {"sessionId": sid, "mode": mode, "prompt": "hello there"})
        c.call("session/close", {"sessionId": sid, "mode": mode})
        c.call("session/delete", {"sessionId": sid, "mode": mode})
        report("sessions", i, args.sessions)
    for i in range(args.conns):
        other = Client()
        other.call("initialize", {"protocolVersion": 1})
        other.call("session/list", {})
        other.s.close()
        report("connections", i, args.conns)
finally:
    daemon.terminate()
    daemon.wait()
    shutil.rmtree(home, ignore_errors=True)
