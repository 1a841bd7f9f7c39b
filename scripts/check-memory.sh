#!/bin/sh
# Issue 27, item 6: fails when a release build's idle RSS or its memory per idle connection
# regressed by more than 25 %, each measured as a ratio against the NDJSON echo server of
# zeroclaw-load (`zeroclaw-load echo-server`) run in the same job, on the same machine, so
# the check does not depend on the machine's speed or load (memory figures are not
# distorted by load; no time is measured).
#
# The reference ratios are in scripts/memory-baseline (measured on the commit that set
# them; update them there, with the figures, when a change is meant to cost memory).
#
# usage: scripts/check-memory.sh [ZEROCLAW_BIN ZEROCLAW_LOAD_BIN]
#   without arguments it builds both with the release profile first.
# Environment: CHECK_MEMORY_CONNS (default 1000) idle connections held on each server.
set -eu
cd "$(dirname "$0")/.."

if [ $# -ge 2 ]; then
    bin=$1
    load=$2
else
    cargo build --release -p zeroclaw -p zeroclaw-load
    target=$(cargo metadata --format-version 1 --no-deps |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
    bin=$target/release/zeroclaw
    load=$target/release/zeroclaw-load
fi
conns=${CHECK_MEMORY_CONNS:-1000}
. scripts/memory-baseline

dir=$(mktemp -d)
daemon_pid=
echo_pid=
cleanup() {
    for p in $daemon_pid $echo_pid; do
        kill "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    rm -rf "$dir"
}
trap cleanup EXIT

# The file descriptors the held connections need, on both ends.
ulimit -n $((2 * conns + 256)) 2>/dev/null || true

wait_socket() { # path pid
    i=0
    while [ ! -S "$1" ]; do
        i=$((i + 1))
        if [ $i -gt 500 ] || ! kill -0 "$2" 2>/dev/null; then
            echo "check-memory: no socket at $1" >&2
            exit 1
        fi
        sleep 0.01
    done
}

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

# `zeroclaw-load idle` prints "… N KiB per connection".
per_conn() { # socket pid
    "$load" idle --socket "$1" --pid "$2" --conns "$conns" |
        sed -n 's/.*, \([0-9.]*\) KiB per connection.*/\1/p'
}

mkdir -p "$dir/cfg"
cat >"$dir/cfg/config.toml" <<TOML
[limits]
connections_per_principal = $((conns + 100))
connections_total = $((conns + 100))
TOML
# The first start writes the default configuration; the measured one is the second.
"$bin" daemon --config-dir "$dir/cfg" 2>"$dir/daemon.log" &
daemon_pid=$!
wait_socket "$dir/cfg/data/daemon.sock" "$daemon_pid"
kill "$daemon_pid"
wait "$daemon_pid" || true
rm -f "$dir/cfg/data/daemon.sock"
"$bin" daemon --config-dir "$dir/cfg" 2>>"$dir/daemon.log" &
daemon_pid=$!
"$load" echo-server --socket "$dir/echo.sock" 2>"$dir/echo.log" &
echo_pid=$!
wait_socket "$dir/cfg/data/daemon.sock" "$daemon_pid"
wait_socket "$dir/echo.sock" "$echo_pid"
sleep 0.5
daemon_idle=$(rss_kib "$daemon_pid")
echo_idle=$(rss_kib "$echo_pid")
daemon_conn=$(per_conn "$dir/cfg/data/daemon.sock" "$daemon_pid")
echo_conn=$(per_conn "$dir/echo.sock" "$echo_pid")

python3 - "$daemon_idle" "$echo_idle" "$daemon_conn" "$echo_conn" \
    "$IDLE_RSS_RATIO" "$CONN_KIB_RATIO" <<'PY'
import sys
d_idle, e_idle, d_conn, e_conn, ref_idle, ref_conn = map(float, sys.argv[1:])
idle, conn = d_idle / e_idle, d_conn / max(e_conn, 0.1)
print(f"check-memory: idle RSS {d_idle:.0f} KiB (echo {e_idle:.0f}): ratio {idle:.2f}, "
      f"reference {ref_idle:.2f}, limit {1.25 * ref_idle:.2f}")
print(f"check-memory: per idle connection {d_conn:.1f} KiB (echo {e_conn:.1f}): ratio "
      f"{conn:.2f}, reference {ref_conn:.2f}, limit {1.25 * ref_conn:.2f}")
bad = [n for n, v, r in (("idle RSS", idle, ref_idle), ("per-connection memory", conn, ref_conn))
       if v > 1.25 * r]
if bad:
    print("check-memory: FAIL: " + " and ".join(bad) + " regressed by more than 25 %")
    sys.exit(1)
print("check-memory: PASS")
PY
