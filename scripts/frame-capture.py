#!/usr/bin/env python3
"""A scripted session against a zeroclaw binary, every frame it answers written down.

Run it with two builds and diff the outputs to see what a change did to the wire:

    python3 scripts/frame-capture.py OLD/zeroclaw > before.txt
    python3 scripts/frame-capture.py NEW/zeroclaw > after.txt
    diff before.txt after.txt

The daemon runs on a fresh temporary config dir with its default configuration (the
offline `echo` agent). The script sends a fixed list of calls over the local socket,
good ones and bad ones, one at a time, and prints each request followed by every frame
received until its answer (session updates included). What differs from run to run even
on one build is replaced by a placeholder: ids the daemon makes (numbered by first
appearance), the temporary directory, times, durations, sizes of the running process.
"""

import base64
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

VOLATILE_KEYS = {
    "pid", "serverPid", "lastActivity", "uptimeMs", "uptime_ms", "uptimeSecs", "rssBytes", "rss_bytes", "startedAt",
    "createdAt", "updatedAt", "lastActiveAt", "expiresAt", "at", "ts", "timestamp",
    "durationMs", "elapsedMs", "connections", "version", "replayBytes",
}
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?")
# Ids the daemon makes for turns, calls and uploads (a digit in them: `turn_complete`, an
# event type, is not one).
MADE_ID = re.compile(r"\b(up|turn|call|tc)[-_][0-9a-zA-Z-]*[0-9][0-9a-zA-Z-]*\b")


class Normalizer:
    def __init__(self, tmp):
        self.tmp = os.path.realpath(tmp)
        self.raw_tmp = tmp
        self.ids = {}

    def name(self, value, kind):
        key = (kind, value)
        if key not in self.ids:
            self.ids[key] = f"<{kind}-{sum(1 for k in self.ids if k[0] == kind) + 1}>"
        return self.ids[key]

    def text(self, s):
        s = s.replace(self.tmp, "<tmp>").replace(self.raw_tmp, "<tmp>")
        s = UUID.sub(lambda m: self.name(m.group(0), "uuid"), s)
        s = MADE_ID.sub(lambda m: self.name(m.group(0), "id"), s)
        return TIME.sub("<time>", s)

    def value(self, v, key=None):
        if key in VOLATILE_KEYS and isinstance(v, (int, float, str)):
            return "<volatile>"
        if isinstance(v, dict):
            return {k: self.value(x, k) for k, x in sorted(v.items())}
        if isinstance(v, list):
            return [self.value(x) for x in v]
        if isinstance(v, str):
            return self.text(v)
        return v


def script(tmp):
    """The calls, in order: (method, params) or a raw line (str)."""
    data = b"hello from the frame capture\n"
    sha = hashlib.sha256(data).hexdigest()
    b64 = base64.b64encode(data).decode()
    local = os.path.join(tmp, "local.txt")
    with open(local, "wb") as f:
        f.write(data)
    return [
        ("initialize", {"protocolVersion": 1, "clientInfo": {"name": "capture", "version": "1"}}),
        ("status", {}),
        ("config/get", {"prop": "agents.default.autonomy"}),
        ("config/set", {"prop": "agents.default.max_context_tokens", "value": 64000}),
        ("config/set", {"prop": "agents.default.provider", "value": "nope"}),
        ("config/set-many", {"sets": [{"prop": "agents.default.max_context_tokens", "value": 32000}]}),
        ("config/delete", {"prop": "agents.default.max_context_tokens"}),
        ("models/list", {}),
        ("session/new", {"agentAlias": "default", "sessionId": "cap-acp", "mode": "acp"}),
        ("session/new", {"agentAlias": "default", "sessionId": "cap-chat", "mode": "chat"}),
        ("session/subscribe", {"sessionId": "cap-acp"}),
        ("session/prompt", {"sessionId": "cap-acp", "prompt": "first turn of the capture"}),
        ("session/prompt", {"sessionId": "cap-acp", "prompt": [{"type": "text", "text": "second turn"}]}),
        ("session/prompt", {"sessionId": "cap-chat", "mode": "chat", "prompt": "a chat turn"}),
        ("session/messages", {"sessionId": "cap-acp"}),
        ("session/list", {}),
        ("session/list", {"search": "capture"}),
        ("session/status", {"sessionId": "cap-acp"}),
        ("session/configure", {"sessionId": "cap-acp", "autonomy": "full"}),
        ("session/configure", {"sessionId": "cap-acp", "autonomy": "wild"}),
        ("session/approve", {"sessionId": "cap-acp", "requestId": "x", "decision": "allow_once"}),
        ("session/approve", {"sessionId": "cap-acp", "requestId": "x", "decision": "maybe"}),
        ("session/set_title", {"sessionId": "cap-acp", "title": "The capture"}),
        ("session/fork", {"sessionId": "cap-acp"}),
        ("session/compact", {"sessionId": "cap-acp"}),
        ("session/rewind", {"sessionId": "cap-acp", "turnId": "nope"}),
        ("file/attach", {"sessionId": "cap-acp", "files": [{"dataB64": b64, "filename": "a.txt"}]}),
        ("file/attach", {"sessionId": "cap-acp", "files": [{"path": local}]}),
        ("file/attach", {"sessionId": "cap-acp", "files": [{"dataB64": "!!"}]}),
        ("file/upload/begin", {"session_id": "cap-acp", "size_bytes": len(data), "filename": "u.txt", "sha256": sha}),
        ("file/upload/chunk", {"upload_id": "<last upload>", "offset": 0, "data_b64": b64}),
        ("file/upload/commit", {"upload_id": "<last upload>"}),
        ("session/unsubscribe", {"sessionId": "cap-acp"}),
        ("no/such/method", {}),
        ("session/prompt", {"sessionId": "cap-acp"}),
        ("session/prompt", {"sessionId": 7, "prompt": "x"}),
        ("session/messages", {"sessionId": "missing"}),
        '{"jsonrpc":"2.0","id":900,"method":"status"',  # cut short: a parse error
        '{"jsonrpc":"2.0","method":"status"}',
        '[]',
        ("session/cancel", {"sessionId": "cap-acp"}),
        ("session/close", {"sessionId": "cap-chat", "mode": "chat"}),
        ("session/kill", {"sessionId": "cap-acp"}),
        ("session/delete", {"sessionId": "cap-acp"}),
        ("daemon/shutdown", {}),
    ]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: frame-capture.py PATH/TO/zeroclaw")
    tmp = tempfile.mkdtemp(prefix="zc-capture-")
    norm = Normalizer(tmp)
    log = open(os.path.join(tmp, "daemon.log"), "wb")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZEROCLAW_")}
    daemon = subprocess.Popen([sys.argv[1], "daemon", "--config-dir", tmp],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, env=env)
    try:
        path = os.path.join(tmp, "data", "daemon.sock")
        for _ in range(200):
            if os.path.exists(path):
                break
            time.sleep(0.02)
        sock = socket.socket(socket.AF_UNIX)
        sock.settimeout(10)
        sock.connect(path)
        reader = sock.makefile("rb")
        upload_id = None
        for n, call in enumerate(script(tmp), start=1):
            if isinstance(call, str):
                line, want = call, None
                print(f">>> raw {call}")
            else:
                method, params = call
                params = json.loads(json.dumps(params).replace('"<last upload>"', json.dumps(upload_id)))
                line = json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params})
                want = n
                print(f">>> {method} {json.dumps(norm.value(params), sort_keys=True)}")
            sock.sendall(line.encode() + b"\n")
            if want is None:
                # A raw line: whatever comes back (an error with id null, or nothing for a
                # notification) is read up to the answer of a status sent right after it.
                sock.sendall(b'{"jsonrpc":"2.0","id":"sync","method":"status"}\n')
                want = "sync"
            while True:
                frame = json.loads(reader.readline())
                if frame.get("id") == "sync":
                    break
                if isinstance(frame.get("result"), dict) and "uploadId" in frame["result"]:
                    upload_id = frame["result"]["uploadId"]
                if isinstance(frame.get("result"), dict) and "upload_id" in frame["result"]:
                    upload_id = frame["result"]["upload_id"]
                print("<<< " + json.dumps(norm.value(frame), sort_keys=True))
                if frame.get("id") == want and ("result" in frame or "error" in frame):
                    break
        daemon.wait(timeout=10)
    finally:
        if daemon.poll() is None:
            daemon.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
