#!/usr/bin/env python3
"""The yardstick: the release daemon against the echo-json floor, side by side in one run.

Run it from the project root:

    python3 scripts/perf.py                 # 5 rounds, the goals checked (exit 1 if one is missed)
    python3 scripts/perf.py --quick         # 1 round, shorter latency/pipelined runs: does it work?
    ZC_BIN=target/release/zeroclaw python3 scripts/perf.py   # a binary already built

It does what the shared `../shared/bench/perf.py` does, with the same client, the same
floor, the same counts and the same goals, so its figures compare with that script's:

- builds `cargo build --release -p zeroclaw` (unless `ZC_BIN` names a binary) and the
  shared benchmark client `zcbench` with its echo server `zcbench-echo` (from
  `ZCBENCH_DIR`, default `../shared/bench/zcbench`, into `~/.cache/zcbench-target`);
- starts the daemon on a temp config dir (started once to write the default config, then
  again: `ready` is the second start's time to its socket) and `zcbench-echo --mode json`
  on another socket;
- each round measures both servers, alternating which goes first: latency (two runs of
  20,000 sequential `status` calls, the better p50 and p99), pipelined (100,000 calls, 64
  in flight), fan-out (64 connections x 500 sequential calls each, the clock running from
  the first connect to the last answer); each ratio is the median over the rounds;
- then memory: idle RSS before any connection, and kB per held connection (1,000 held).

What it adds to the shared script: `--fanout-per-conn` measures fan-out at more than one
run length in every round (the first one is the goal's), and the figure line gives each
server's connect+initialize time inside the fan-out run; every child process and every
wait has a time limit. The client and the floor are not this project's code: they stay in
the shared bench directory and are only built and run from here.

Exit: 0 every goal met, 1 a goal missed, 2 the run could not be made.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOALS = {  # issue 27's goals, as the shared script states them
    "p50_ratio_max": 1.1, "p99_ratio_max": 1.5,
    "pipeline_ratio_min": 0.9, "fanout_ratio_min": 0.9,
    "conn_kb_max": 12.0, "idle_rss_kb_max": 10 * 1024, "ready_ms_max": 50.0,
}
BUILD_TIMEOUT = 3600  # a fat-LTO build on two shared cores
RUN_TIMEOUT = 300  # one zcbench run


def sh(cmd, timeout=RUN_TIMEOUT, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)


def last_json(out):
    """zcbench prints its result as the last line that is a JSON object."""
    for line in reversed(out.strip().splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return {}
    return {}


def rss_kb(pid):
    """VmRSS of `pid` in kB; 0 when the process is gone or the line is missing."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def wait_socket(path, proc, limit=10.0):
    """Milliseconds until `path` exists, or None when the process died or time ran out."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        if os.path.exists(path):
            return (time.monotonic() - t0) * 1000
        if proc.poll() is not None:
            return None
        time.sleep(0.002)
    return None


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def bench_rpc(zcb, sock, counts):
    """One round's call figures against one server."""
    r = {}
    lat = [last_json(sh([zcb, "latency", "--socket", sock, "--n", str(counts["latency"])]).stdout) for _ in range(2)]
    r["p50"] = min(x.get("p50_us", 1e9) for x in lat)
    r["p99"] = min(x.get("p99_us", 1e9) for x in lat)
    out = sh([zcb, "pipeline", "--socket", sock, "--n", str(counts["pipeline"])]).stdout
    r["pipeline"] = last_json(out).get("calls_per_s", 0)
    for k in counts["fanout_per_conn"]:
        f = last_json(sh([zcb, "fanout", "--socket", sock, "--conns", "64", "--per-conn", str(k)]).stdout)
        r[f"fanout_{k}"] = f.get("calls_per_s", 0)
        r[f"fanout_{k}_init_p50_us"] = f.get("connect_init_p50_us")
        r[f"fanout_{k}_init_p99_us"] = f.get("connect_init_p99_us")
        r[f"fanout_{k}_elapsed_s"] = f.get("elapsed_s")
        r[f"fanout_{k}_failed"] = f.get("conns_failed")
    r["fanout"] = r[f"fanout_{counts['fanout_per_conn'][0]}"]
    return r


def bench_conn(zcb, sock, pid):
    c = last_json(sh([zcb, "connect", "--socket", sock, "--conns", "1000", "--pid", str(pid)]).stdout)
    return {"conn_kb": c.get("rss_per_conn_kb", 1e9), "conn_ok": c.get("alive", 0)}


def build(args):
    """The daemon binary and the zcbench client and floor; None (said why) on failure."""
    zbin = os.environ.get("ZC_BIN")
    if zbin:
        zbin = os.path.abspath(zbin)
    else:
        print("building the release daemon (cargo build --release -p zeroclaw)...", file=sys.stderr)
        if sh(["cargo", "build", "--release", "--quiet", "-p", "zeroclaw"], timeout=BUILD_TIMEOUT, cwd=ROOT).returncode:
            print("release build failed", file=sys.stderr)
            return None
        meta = sh(["cargo", "metadata", "--format-version", "1", "--no-deps"], cwd=ROOT)
        try:
            zbin = os.path.join(json.loads(meta.stdout)["target_directory"], "release", "zeroclaw")
        except (ValueError, KeyError):
            print("cargo metadata gave no target directory", file=sys.stderr)
            return None
    if not os.access(zbin, os.X_OK):
        print(f"no daemon binary at {zbin}", file=sys.stderr)
        return None
    zdir = os.path.abspath(os.environ.get("ZCBENCH_DIR") or os.path.join(ROOT, "..", "shared", "bench", "zcbench"))
    if not os.path.exists(os.path.join(zdir, "Cargo.toml")):
        print(f"no zcbench at {zdir}: set ZCBENCH_DIR to the shared bench's zcbench directory", file=sys.stderr)
        return None
    tgt = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "zcbench-target")
    if sh(["cargo", "build", "--release", "--quiet", "--target-dir", tgt], timeout=BUILD_TIMEOUT, cwd=zdir).returncode:
        print("zcbench build failed", file=sys.stderr)
        return None
    return zbin, os.path.join(tgt, "release", "zcbench"), os.path.join(tgt, "release", "zcbench-echo")


def stop(procs):
    for pr in procs:
        if pr.poll() is None:
            pr.send_signal(signal.SIGTERM)
            try:
                pr.wait(5)
            except subprocess.TimeoutExpired:
                pr.kill()
                pr.wait(5)


def measure(zbin, zcb, echo, args, counts):
    tmp = tempfile.mkdtemp(prefix="zc-perf-")
    procs = []
    try:
        cfg = os.path.join(tmp, "cfg")
        dsock, esock = os.path.join(tmp, "d.sock"), os.path.join(tmp, "e.sock")
        env = dict(os.environ, ZEROCLAW_CONFIG_DIR=cfg, ZEROCLAW_SOCKET=dsock, RUST_LOG="warn")
        # 1,000 held connections of one uid: the per-principal cap raised (SPEC §3.3)
        os.makedirs(cfg, mode=0o700)
        with open(os.path.join(cfg, "config.toml"), "w") as f:
            f.write("[limits]\nconnections_per_principal = 4096\nconnections_total = 4096\n")
        # the first start writes the default config; readiness is the second start's
        p = subprocess.Popen([zbin, "daemon"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(p)
        if wait_socket(dsock, p) is None:
            print("the daemon did not open its socket", file=sys.stderr)
            return None
        stop([p])
        p = subprocess.Popen([zbin, "daemon"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(p)
        ready = wait_socket(dsock, p)
        if ready is None:
            print("the daemon did not open its socket on its second start", file=sys.stderr)
            return None
        time.sleep(0.5)
        idle = rss_kb(p.pid)
        e = subprocess.Popen([echo, "--socket", esock, "--mode", "json"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(e)
        if wait_socket(esock, e) is None:
            print("zcbench-echo did not open its socket", file=sys.stderr)
            return None
        # Rounds alternate which server goes first, so a machine that slows down or speeds
        # up during the run weighs on both sides.
        per_round = []
        for k in range(args.rounds):
            if k % 2 == 0:
                d, f = bench_rpc(zcb, dsock, counts), bench_rpc(zcb, esock, counts)
            else:
                f, d = bench_rpc(zcb, esock, counts), bench_rpc(zcb, dsock, counts)
            per_round.append({"daemon": d, "echo_json": f})
            print(f"round {k + 1}/{args.rounds} done", file=sys.stderr)
        dconn = bench_conn(zcb, dsock, p.pid)
        econn = bench_conn(zcb, esock, e.pid)
        return {"rounds": per_round, "daemon_conn": dconn, "echo_conn": econn,
                "idle_rss_kb": idle, "ready_ms": round(ready, 1), "counts": counts}
    finally:
        stop(procs)
        shutil.rmtree(tmp, ignore_errors=True)


def summarize(run, args):
    rounds = run["rounds"]

    def ratio(key):
        vals = [r["daemon"][key] / max(r["echo_json"][key], 1e-9) for r in rounds]
        return median(vals), min(vals), max(vals)

    ratios = {key: ratio(key) for key in ("p50", "p99", "pipeline", "fanout")}
    d, f = run["daemon_conn"], run["echo_conn"]
    ok = (ratios["p50"][0] <= GOALS["p50_ratio_max"] and ratios["p99"][0] <= GOALS["p99_ratio_max"]
          and ratios["pipeline"][0] >= GOALS["pipeline_ratio_min"] and ratios["fanout"][0] >= GOALS["fanout_ratio_min"]
          and d["conn_kb"] <= GOALS["conn_kb_max"] and d["conn_ok"] == 1000
          and run["idle_rss_kb"] <= GOALS["idle_rss_kb_max"] and run["ready_ms"] <= GOALS["ready_ms_max"])
    print(json.dumps(dict(run, ratios=ratios)))
    print("perf (median of %d rounds): p50 %.2fx p99 %.2fx pipeline %.2f fanout %.2f of echo-json; "
          "%.1f kB/conn (echo %.1f); idle %d kB; ready %.0f ms" % (
              len(rounds), ratios["p50"][0], ratios["p99"][0], ratios["pipeline"][0], ratios["fanout"][0],
              d["conn_kb"], f["conn_kb"], run["idle_rss_kb"], run["ready_ms"]))
    for k in args.fanout_per_conn:
        key = f"fanout_{k}"
        vals = [r["daemon"][key] / max(r["echo_json"][key], 1e-9) for r in rounds]
        init_d = median([r["daemon"][key + "_init_p50_us"] or 0 for r in rounds])
        init_e = median([r["echo_json"][key + "_init_p50_us"] or 0 for r in rounds])
        print("fan-out 64 x %d: %.2f of echo-json (%.2f-%.2f); daemon %.0f calls/s, echo-json %.0f; "
              "connect+initialize p50 %d us against %d us" % (
                  k, median(vals), min(vals), max(vals),
                  median([r["daemon"][key] for r in rounds]), median([r["echo_json"][key] for r in rounds]),
                  init_d, init_e))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="one round, 5,000 latency and 20,000 pipelined calls: a check that it runs, not a figure")
    ap.add_argument("--rounds", type=int, default=None, help="rounds (default 5, 1 with --quick)")
    ap.add_argument("--fanout-per-conn", default="500",
                    help="calls per fan-out connection, comma-separated; the first is the goal's (default 500)")
    args = ap.parse_args()
    try:
        args.fanout_per_conn = [int(x) for x in args.fanout_per_conn.split(",") if x.strip()]
    except ValueError:
        ap.error("--fanout-per-conn takes numbers, e.g. 500,2000")
    if not args.fanout_per_conn or min(args.fanout_per_conn) < 1:
        ap.error("--fanout-per-conn needs at least one count of 1 or more")
    if args.rounds is None:
        args.rounds = 1 if args.quick else int(os.environ.get("PERF_ROUNDS", "5"))
    args.rounds = max(1, args.rounds)
    counts = {"latency": 5000 if args.quick else 20000, "pipeline": 20000 if args.quick else 100000,
              "fanout_per_conn": args.fanout_per_conn}
    built = build(args)
    if built is None:
        return 2
    try:
        run = measure(*built, args, counts)
    except subprocess.TimeoutExpired as e:
        print(f"timed out: {' '.join(map(str, e.cmd))}", file=sys.stderr)
        return 2
    if run is None:
        return 2
    return summarize(run, args)


if __name__ == "__main__":
    sys.exit(main())
