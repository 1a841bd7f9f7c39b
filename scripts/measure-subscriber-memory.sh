#!/bin/sh
# Issue 21, finding 5 (SPEC §17.1 "Queued output is bounded per principal"), measured:
# a daemon started here as root on a temporary config dir; a non-admin user (users.attacker,
# uid $ATTACKER_UID) opens 32 connections that each subscribe 4 times, with a replay, to
# sessions holding a large echoed turn, and read nothing (`zeroclaw-load subscribers`).
# Prints the daemon's RSS before, at peak and after the connections are dropped.
#
# usage: sudo scripts/measure-subscriber-memory.sh ZEROCLAW_BIN ZEROCLAW_LOAD_BIN [subscribers args…]
set -eu
bin=$1
load=$2
shift 2
uid=${ATTACKER_UID:-54321}
dir=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
cat >"$dir/config.toml" <<TOML
[providers.echo]
kind = "echo"

[agents.default]
provider = "echo"

[permission_profiles.watcher]
grants = { sessions = ["create", "read", "execute"], system = ["read"] }
allowed_agents = ["default"]

[users.attacker]
uid = $uid
permission_profiles = ["watcher"]

# The 32 silent connections, and the one that sets up and watches.
[limits]
connections_per_principal = 33
TOML
"$bin" daemon --config-dir "$dir" 2>"$dir/daemon.log" &
pid=$!
i=0
while [ ! -S "$dir/data/daemon.sock" ]; do
    i=$((i + 1))
    [ $i -lt 200 ] || { echo "daemon did not start"; cat "$dir/daemon.log"; exit 1; }
    sleep 0.05
done
chmod 711 "$dir" "$dir/data"
chmod 666 "$dir/data/daemon.sock"
setpriv --reuid "$uid" --regid "$uid" --clear-groups \
    "$load" subscribers --socket "$dir/data/daemon.sock" "$@"
