#!/usr/bin/env python3
"""How far the yardstick's floor moves against itself: two echo-json servers measured
alternately with `zcbench fanout` (64 connections x 500 calls, as scripts/perf.py runs it),
the ratio of every round and the medians of 5 rounds, as perf.py takes them. The share of
those medians below 0.9 is what a server as fast as the floor would miss by chance.

usage: scripts/floor-noise.py [--rounds N]
       (zcbench from scripts/perf.py's build, in ~/.cache/zcbench-target)
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

from bench_servers import stop, wait_sockets, zcbench


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=100)
    args = ap.parse_args()
    zcb = zcbench()
    tmp = tempfile.mkdtemp(prefix="zc-floor-")
    socks = [os.path.join(tmp, "a.sock"), os.path.join(tmp, "b.sock")]
    procs = [subprocess.Popen([zcb + "-echo", "--socket", s, "--mode", "json"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for s in socks]
    try:
        wait_sockets(socks)

        def rate(sock):
            out = subprocess.run([zcb, "fanout", "--socket", sock, "--conns", "64", "--per-conn", "500"], capture_output=True, text=True).stdout
            return json.loads(out.strip().splitlines()[-1])["calls_per_s"]

        for s in socks:  # warm-up
            rate(s)
        ratios = []
        for r in range(args.rounds):
            first, second = (socks[0], socks[1]) if r % 2 else (socks[1], socks[0])
            got = {first: rate(first), second: rate(second)}
            ratios.append(got[socks[0]] / got[socks[1]])
        medians = [statistics.median(ratios[i:i + 5]) for i in range(0, len(ratios) - 4, 5)]
        print(f"rounds: {len(ratios)}, ratio {min(ratios):.2f}..{max(ratios):.2f}")
        print("medians of 5:", " ".join(f"{m:.2f}" for m in medians))
        print(f"medians below 0.9: {sum(m < 0.9 for m in medians)} of {len(medians)}")
    finally:
        stop(procs, tmp)


if __name__ == "__main__":
    main()
