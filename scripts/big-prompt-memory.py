#!/usr/bin/env python3
"""Peak memory of the daemon for one large echo prompt (issue 27 item 4).

Starts BIN (optionally under a wrapper such as `heaptrack -o FILE`) on a temp config dir
with an echo agent, warms the session up with a small turn, reads the daemon's VmHWM,
sends one 8,384,512-byte prompt of short words (the largest a frame allows, as
hardening_sessions.rs::one_big_echo_prompt_is_not_amplified does), checks the whole
prompt streamed back, reads VmHWM again and stops the daemon with SIGTERM (so a heap
profiler writes its file). Prints the peak growth.

With ZC_MAX_CONTEXT_TOKENS set, the echo agent gets that `max_context_tokens` (a large
value keeps the auto-trim out of the measurement, to see the turn's own peak).

usage: scripts/big-prompt-memory.py BIN [WRAPPER ARGS...]
"""
import json, os, socket, subprocess, sys, tempfile, time, signal
binp = sys.argv[1]; wrap = sys.argv[2:]
d = tempfile.mkdtemp(prefix="zc-big-prompt-")
open(os.path.join(d, "config.toml"), "w").write('''[providers.echo]
kind = "echo"

[agents.default]
provider = "echo"

[agents.echo]
provider = "echo"
''' + (f"max_context_tokens = {int(os.environ['ZC_MAX_CONTEXT_TOKENS'])}\n"
       if os.environ.get("ZC_MAX_CONTEXT_TOKENS") else ""))
log = open(os.path.join(d, "daemon.log"), "w")
p = subprocess.Popen(wrap + [binp, "daemon", "--config-dir", d], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                     env={k: v for k, v in os.environ.items() if not k.startswith("ZEROCLAW_")})
sock = os.path.join(d, "data", "daemon.sock")
t0 = time.time()
while not os.path.exists(sock):
    time.sleep(0.05)
    assert time.time() - t0 < 60
time.sleep(0.3)
def daemon_pid():
    # the zeroclaw process (wrapper's child if wrapped)
    out = subprocess.run(["pgrep", "-f", "--", "daemon --config-dir " + d], capture_output=True, text=True).stdout.split()
    for pid in out:
        try:
            exe = os.readlink(f"/proc/{pid}/exe")
        except OSError:
            continue
        if exe.endswith("zeroclaw") or "zeroclaw" in exe:
            return int(pid)
    return p.pid
def hwm(pid):
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmHWM:"):
            return int(l.split()[1]) * 1024
s = socket.socket(socket.AF_UNIX); s.connect(sock); s.settimeout(300)
f = s.makefile("rb", buffering=1 << 20)
def call(id, method, params, count=None):
    s.sendall((json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": params}) + "\n").encode())
    text = 0
    while True:
        line = f.readline()
        assert line, "closed"
        m = json.loads(line)
        if m.get("id") == id:
            return m, text
        pr = m.get("params", {})
        if isinstance(pr, dict) and pr.get("type") == "agent_message_chunk":
            text += len(pr.get("text", ""))
print(call(1, "initialize", {"protocolVersion": 1})[0].get("result") is not None)
print(call(2, "session/new", {"agentAlias": "echo", "sessionId": "big0"})[0].get("result") is not None)
r, _ = call(3, "session/prompt", {"sessionId": "big0", "prompt": "warm up"})
assert r["result"]["outcome"] == "completed", r
pid = daemon_pid()
base = hwm(pid)
n = 8 * 1024 * 1024 - 4096
pr = "word " * (n // 5)
pr += "x" * (n - len(pr))
t = time.time()
r, text = call(4, "session/prompt", {"sessionId": "big0", "prompt": pr})
assert r["result"]["outcome"] == "completed", str(r)[:300]
assert text == n, text
peak = hwm(pid)
print(f"pid {pid} prompt {n} baseline {base/2**20:.1f} MiB growth {(peak-base)/2**20:.1f} MiB ({(peak-base)/n:.1f}x) in {time.time()-t:.1f}s")
s.close()
os.kill(pid, signal.SIGTERM)
p.wait(timeout=120)
import shutil
shutil.rmtree(d, ignore_errors=True)
