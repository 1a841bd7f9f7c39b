#!/usr/bin/env python3
"""Whether a pipelining client and the daemon work at once or take turns.

Runs `zcbench pipeline` (one connection, 100,000 `status` calls, 64 in flight) against each
daemon binary given and against echo-json, rounds rotating over the servers, and prints per
server the median calls/s, wall time, client CPU (the client's `wait4` rusage) and server
CPU (`/proc/PID/task/*/schedstat`). When client CPU + server CPU is the wall time, the two
take turns; when the wall time is less, they overlap.

usage: scripts/pipeline-turns.py BIN [BIN2] [--rounds N]
       (zcbench from scripts/perf.py's build, in ~/.cache/zcbench-target)
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

from bench_servers import stop, wait_sockets, zcbench

LIMITS = "[limits]\nconnections_per_principal = 4096\nconnections_total = 4096\n"


def server_cpu_s(pid):
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except OSError:
            pass  # a thread that ended between the listing and the read
    return total / 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bins", nargs="+")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=100_000)
    args = ap.parse_args()
    zcb = zcbench()
    tmp = tempfile.mkdtemp(prefix="zc-turns-")
    servers, procs = [], []
    try:
        for i, binary in enumerate(args.bins):
            cfg = os.path.join(tmp, f"cfg{i}")
            os.makedirs(cfg, 0o700)
            with open(os.path.join(cfg, "config.toml"), "w") as f:
                f.write(LIMITS)
            sock = os.path.join(tmp, f"d{i}.sock")
            env = dict(os.environ, ZEROCLAW_CONFIG_DIR=cfg, ZEROCLAW_SOCKET=sock, RUST_LOG="warn")
            procs.append(subprocess.Popen([binary, "daemon"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            servers.append((binary, sock, procs[-1].pid))
        sock = os.path.join(tmp, "e.sock")
        procs.append(subprocess.Popen([zcb + "-echo", "--socket", sock, "--mode", "json"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        servers.append(("echo-json", sock, procs[-1].pid))
        wait_sockets(sock for _, sock, _ in servers)

        def one_round(sock, pid):
            before = server_cpu_s(pid)
            p = subprocess.Popen([zcb, "pipeline", "--socket", sock, "--n", str(args.calls)], stdout=subprocess.PIPE, text=True)
            out = p.stdout.read()
            _, _, usage = os.wait4(p.pid, 0)
            result = json.loads(out.strip().splitlines()[-1])
            return (result["calls_per_s"], result["elapsed_s"], usage.ru_utime + usage.ru_stime, server_cpu_s(pid) - before)

        for _, sock, pid in servers:  # warm-up
            one_round(sock, pid)
        rows = [[] for _ in servers]
        for r in range(args.rounds):
            for k in range(len(servers)):
                j = (r + k) % len(servers)
                rows[j].append(one_round(servers[j][1], servers[j][2]))
        floor = rows[-1]
        print("server: calls/s, wall s, client CPU s, server CPU s (medians); calls/s against echo-json (median of paired rounds)")
        for (name, _, _), row in zip(servers, rows):
            med = [statistics.median(x[i] for x in row) for i in range(4)]
            ratio = statistics.median(a[0] / b[0] for a, b in zip(row, floor))
            print(f"{name}: {med[0]:.0f}, {med[1]:.3f}, {med[2]:.3f}, {med[3]:.3f}; {ratio:.2f}")
    finally:
        stop(procs, tmp)


if __name__ == "__main__":
    main()
