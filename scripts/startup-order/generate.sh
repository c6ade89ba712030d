#!/usr/bin/env bash
# Regenerates crates/handoff/startup.order: the functions a release `handoff serve` runs at
# start-up and for the common requests, traced under callgrind. Rerun it when idle RSS in
# `handoff bench` creeps up (a dependency bump or a new start-up path renames or adds
# functions; stale names are ignored by the linker, so the file only ever loses effect).
#
# Usage: scripts/startup-order/generate.sh [BINARY]   (default: builds target/release/handoff)
# Needs: valgrind (callgrind_control), python3, nm.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
binary=${1:-}
if [ -z "$binary" ]; then
  (cd "$root" && cargo build --release -p handoff)
  binary="$root/target/release/handoff"
fi
work=$(mktemp -d)
server=""
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/data"
# A fresh data dir and HOME; the `command` executor runs `true`, so no agent is needed.
(cd "$work/data" && HOME="$work/data" XDG_CONFIG_HOME="$work/data" HANDOFF_DATA_DIR="$work/data" \
  HANDOFF_COMMAND_ARGV='["true"]' HANDOFF_DEFAULT_EXECUTOR=command \
  exec valgrind --tool=callgrind --demangle=no --dump-instr=no \
    --callgrind-out-file="$work/callgrind.out" \
    "$binary" serve --port 0 > "$work/server.out" 2> "$work/server.err") &
server=$!
port=""
for _ in $(seq 1 600); do
  port=$(grep -o 'http://127.0.0.1:[0-9]*' "$work/server.err" | head -1 | sed 's/.*://' || true)
  [ -n "$port" ] && break
  sleep 0.2
done
[ -n "$port" ] || { cat "$work/server.err" >&2; echo "the server did not start" >&2; exit 1; }
sleep 3  # let start-up's background work (probes, pool refill) finish before the first dump
callgrind_control --dump=startup "$server" > /dev/null 2>&1
python3 "$here/drive.py" "$port"
sleep 2
callgrind_control --dump=requests "$server" > /dev/null 2>&1
kill -INT "$server"
wait "$server" || true
server=""
python3 "$here/order.py" "$binary" "$work/callgrind.out.1" "$work/callgrind.out.2" \
  > "$root/crates/handoff/startup.order"
echo "wrote crates/handoff/startup.order" >&2
