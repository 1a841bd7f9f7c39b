#!/bin/bash
# Issue 27, item 1: both pipelined clients (perf.py's `zcbench pipeline` and `zeroclaw-load
# pipelined`) and perf.py's `zcbench fanout` against the daemon and both floors
# (`zcbench-echo --mode json` and `zeroclaw-load echo-server`), ROUNDS rounds; prints calls/s.
# Not for CI: zcbench comes from the shared bench (../shared/bench, built by scripts/perf.py into
# ~/.cache/zcbench-target).
#
# usage: scripts/compare-floors.sh ZEROCLAW_BIN ZEROCLAW_LOAD_BIN [ROUNDS]
set -u
bin=$1
load=$2
rounds=${3:-3}
tgt=${ZCBENCH_TARGET:-${XDG_CACHE_HOME:-$HOME/.cache}/zcbench-target}/release
d=$(mktemp -d)
mkdir -p "$d/cfg"
printf '[limits]\nconnections_per_principal = 4096\nconnections_total = 4096\n' >"$d/cfg/config.toml"
RUST_LOG=warn "$bin" daemon --config-dir "$d/cfg" 2>/dev/null &
dp=$!
"$tgt/zcbench-echo" --socket "$d/ej.sock" --mode json >/dev/null 2>&1 &
ep=$!
"$load" echo-server --socket "$d/le.sock" >/dev/null 2>&1 &
lp=$!
trap 'kill $dp $ep $lp 2>/dev/null; wait 2>/dev/null; rm -rf "$d"' EXIT
sleep 1
declare -A sock=([daemon]=$d/cfg/data/daemon.sock [echo-json]=$d/ej.sock [load-echo]=$d/le.sock)
rate() { python3 -c 'import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])["calls_per_s"])'; }
for r in $(seq "$rounds"); do
    for s in daemon echo-json load-echo; do
        a=$("$tgt/zcbench" pipeline --socket "${sock[$s]}" --n 100000 2>/dev/null | rate)
        b=$("$load" pipelined --socket "${sock[$s]}" --calls 200000 2>/dev/null | grep -o '[0-9]* calls/s' | head -1)
        c=$("$tgt/zcbench" fanout --socket "${sock[$s]}" --conns 64 --per-conn 500 2>/dev/null | rate)
        echo "round $r $s: zcbench pipeline $a | zeroclaw-load pipelined $b | zcbench fanout $c"
    done
done
