#!/usr/bin/env python3
"""What a client pays to list and open long sessions (issue 27, a long life): the round trip
of `session/list`, `session/messages` and a resuming `session/new` once the sessions hold
many messages, and of `session/list` when each session's first prompt is large.

Each session is made by the daemon itself (echo provider, one real turn, then closed); the
long histories are then grown by copying rows in SQL with the daemon stopped, which is
what thousands of real turns would leave, in seconds.

usage: scripts/list-bench.py BIN [--sessions N] [--messages M] [--large N] [--large-mib K]
prints one line per measure: the median of 7 calls in ms
"""
import argparse, json, os, socket, sqlite3, statistics, subprocess, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("bin")
ap.add_argument("--sessions", type=int, default=64)
ap.add_argument("--messages", type=int, default=3000)
ap.add_argument("--large", type=int, default=20)
ap.add_argument("--large-mib", type=int, default=4)
args = ap.parse_args()


class Daemon:
    def __init__(self, home):
        self.sock = home + "/s.sock"
        env = dict(os.environ, ZEROCLAW_CONFIG_DIR=home + "/cfg", ZEROCLAW_SOCKET=self.sock,
                   RUST_LOG="warn")
        self.proc = subprocess.Popen([args.bin, "daemon"], env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        t0 = time.monotonic()
        while not os.path.exists(self.sock):
            if self.proc.poll() is not None or time.monotonic() - t0 > 30:
                raise SystemExit("list-bench: the daemon did not start")
            time.sleep(0.02)
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(self.sock)
        self.s.settimeout(120)
        self.f = self.s.makefile("rb")
        self.n = 0
        self.call("initialize", {"protocolVersion": 1})

    def call(self, method, params):
        self.n += 1
        msg = {"jsonrpc": "2.0", "id": self.n, "method": method, "params": params}
        self.s.sendall((json.dumps(msg) + "\n").encode())
        while True:
            reply = json.loads(self.f.readline())
            if reply.get("id") == self.n and "method" not in reply:
                if "error" in reply:
                    raise SystemExit(f"list-bench: {method} failed: {reply['error']}")
                return reply["result"]

    def timed(self, method, params):
        took = []
        for _ in range(7):
            t0 = time.perf_counter()
            result = self.call(method, params)
            took.append(time.perf_counter() - t0)
        return statistics.median(took) * 1000, result

    def stop(self):
        self.s.close()
        self.proc.terminate()
        self.proc.wait(30)


def made(home, prompts):
    """Starts a daemon in `home`, makes one closed session per prompt, stops it."""
    os.mkdir(home + "/cfg", 0o700)
    d = Daemon(home)
    for i, prompt in enumerate(prompts):
        d.call("session/new", {"agentAlias": "default", "sessionId": f"s{i}"})
        d.call("session/prompt", {"sessionId": f"s{i}", "prompt": prompt})
        d.call("session/close", {"sessionId": f"s{i}"})
    d.stop()


long_home, large_home = tempfile.mkdtemp(), tempfile.mkdtemp()
made(long_home, [f"hello {i}" for i in range(args.sessions)])
db = sqlite3.connect(long_home + "/cfg/data/zeroclaw.db")
db.execute(
    "INSERT INTO transcript (session, seq, role, created_at, content) "
    "WITH RECURSIVE n(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM n WHERE k < ?1) "
    "SELECT s.pk, 1000 + n.k, CASE n.k % 2 WHEN 0 THEN 'user' ELSE 'assistant' END, 0, "
    "printf('%.*c', 300, 'y') FROM sessions s, n",
    (args.messages,),
)
db.commit()
db.close()
d = Daemon(long_home)
ms, r = d.timed("session/list", {})
print(f"session/list, {len(r['sessions'])} sessions of {r['sessions'][0]['messageCount']} "
      f"messages: {ms:.2f} ms")
ms, _ = d.timed("session/list", {"limit": 20})
print(f"session/list, limit 20: {ms:.2f} ms")
ms, _ = d.timed("session/messages", {"sessionId": "s0", "limit": 50})
print(f"session/messages, limit 50: {ms:.2f} ms")
ms, _ = d.timed("session/new", {"agentAlias": "default", "sessionId": "s1"})
print(f"session/new of a session with that history (resumed, then open): {ms:.2f} ms")
d.stop()

big = "A large first prompt\n" + "z" * (args.large_mib << 20)
made(large_home, [big] * args.large)
d = Daemon(large_home)
ms, r = d.timed("session/list", {})
print(f"session/list, {len(r['sessions'])} sessions whose first prompt is {args.large_mib} MiB "
      f"(title {r['sessions'][0]['title']!r}): {ms:.2f} ms")
d.stop()
