#!/bin/bash
# System calls of the daemon and of the echo-json floor during the same 64-connection
# fan-out (issue 27, item 2): both servers run side by side, `strace -f -c` is attached to
# one at a time while `zcbench fanout --conns 64 --per-conn 2000` runs against it (after a
# warm-up run against each). Prints calls/s under strace and the top of each table.
#
# usage: scripts/fanout-syscalls.sh BIN   (zcbench built by scripts/perf.py, in
#                                          ~/.cache/zcbench-target/release; needs strace)
set -euo pipefail
bin=${1:?usage: scripts/fanout-syscalls.sh BIN}
zcb=${XDG_CACHE_HOME:-$HOME/.cache}/zcbench-target/release
dir=$(mktemp -d)
trap 'kill $daemon $echo 2>/dev/null || true; rm -rf "$dir"' EXIT
mkdir -m700 "$dir/cfg"
printf '[limits]\nconnections_per_principal = 4096\nconnections_total = 4096\n' > "$dir/cfg/config.toml"
export ZEROCLAW_CONFIG_DIR=$dir/cfg ZEROCLAW_SOCKET=$dir/d.sock RUST_LOG=warn
"$bin" daemon >/dev/null 2>&1 & daemon=$!
"$zcb/zcbench-echo" --socket "$dir/e.sock" --mode json >/dev/null 2>&1 & echo=$!
for _ in $(seq 100); do [ -S "$dir/d.sock" ] && [ -S "$dir/e.sock" ] && break; sleep 0.1; done
for side in d e; do
  "$zcb/zcbench" fanout --socket "$dir/$side.sock" --conns 64 --per-conn 500 >/dev/null
done
for side in d e; do
  pid=$daemon name=daemon
  [ "$side" = e ] && pid=$echo name=echo-json
  timeout 120 strace -f -c -o "$dir/strace.$side" -p "$pid" 2>/dev/null & tracer=$!
  sleep 0.5
  rate=$("$zcb/zcbench" fanout --socket "$dir/$side.sock" --conns 64 --per-conn 2000 2>/dev/null |
    grep -o '"calls_per_s":[0-9.]*' | cut -d: -f2)
  kill -INT $tracer; wait $tracer 2>/dev/null || true
  echo "== $name: $rate calls/s under strace"
  head -9 "$dir/strace.$side"
done
