#!/usr/bin/env bash
# Instructions per Letta-pattern tool call, counted by callgrind: reproducible where CPU time is
# not (shared machines) and where `perf stat -e instructions` has no counter (most VMs).
#
#   crates/handoff-bench/scripts/instructions.sh [handoff|floor] [calls] [--no-get]
#
# Starts `handoff serve` (the `command` executor, as `handoff bench` does) or `handoff
# bench-floor` under callgrind with instrumentation off, sends a few calls to warm it up, counts
# `calls` calls, each one fresh session as Letta's client opens it (initialize, initialized,
# GET stream, tools/call get_task_status, DELETE; `--no-get` leaves the stream out), and prints
# the instructions per call. `HANDOFF_BIN` picks the binary (default target/release/handoff).
# Slow: valgrind runs the server ~50x slower; 100 calls take a minute or two.
set -euo pipefail

target=${1:-handoff}
calls=${2:-100}
stream=${3:-}
bin=${HANDOFF_BIN:-target/release/handoff}
work=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT

case $target in
  handoff)
    HANDOFF_DATA_DIR=$work/data HANDOFF_COMMAND_ARGV='["true"]' HANDOFF_DEFAULT_EXECUTOR=command \
      RUST_LOG=warn,handoff=info,handoff::audit=warn,rmcp=warn \
      valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$work/cg.out" \
      "$bin" serve --port 0 --log-format json 2>"$work/server.err" &
    ;;
  floor)
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$work/cg.out" \
      "$bin" bench-floor 2>"$work/server.err" &
    ;;
  *) echo "usage: $0 [handoff|floor] [calls] [--no-get]" >&2; exit 2 ;;
esac
server=$!
for _ in $(seq 600); do
  url=$(grep -o 'http://127.0.0.1:[0-9]*/mcp' "$work/server.err" | head -n1 || true)
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { echo "the server did not print its address:" >&2; cat "$work/server.err" >&2; exit 1; }

json=(-sS -H 'content-type: application/json' -H 'accept: application/json, text/event-stream'
      -H 'x-agent-id: bench')

# Opens a session; prints its id.
initialize() {
  curl "${json[@]}" -o /dev/null -D - "$url" -d '{"jsonrpc":"2.0","id":0,"method":"initialize",
    "params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}' \
    | tr -d '\r' | awk -F': ' 'tolower($1) == "mcp-session-id" { print $2 }'
}

# One tools/call in session $1: tool $2, arguments $3; prints the reply.
call() {
  curl "${json[@]}" -H "mcp-session-id: $1" -H 'mcp-protocol-version: 2025-06-18' "$url" \
    -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"$2\",\"arguments\":$3}}"
}

# One whole Letta call: a fresh session, the stream open (headers answered) before the call.
letta_call() {
  local sid get=
  sid=$(initialize)
  local in=("${json[@]}" -o /dev/null -H "mcp-session-id: $sid" -H 'mcp-protocol-version: 2025-06-18')
  curl "${in[@]}" "$url" -d '{"jsonrpc":"2.0","method":"notifications/initialized"}'
  if [ "$stream" != --no-get ]; then
    : >"$work/get.h"
    curl "${in[@]}" -N -D "$work/get.h" "$url" &
    get=$!
    until grep -q '^HTTP' "$work/get.h"; do sleep 0.01; done
    grep -q '^HTTP/[0-9.]* 200' "$work/get.h" || { echo "GET stream refused:" >&2; cat "$work/get.h" >&2; exit 1; }
  fi
  call "$sid" get_task_status "{\"task_id\":\"$task\"}" >/dev/null
  curl "${in[@]}" -X DELETE "$url"
  # Handoff ends the stream with the session; the floor's stays open until the client leaves.
  if [ -n "$get" ]; then kill "$get" 2>/dev/null || true; wait "$get" 2>/dev/null || true; fi
}

task=none
if [ "$target" = handoff ]; then
  sid=$(initialize)
  curl "${json[@]}" -o /dev/null -H "mcp-session-id: $sid" -H 'mcp-protocol-version: 2025-06-18' \
    "$url" -d '{"jsonrpc":"2.0","method":"notifications/initialized"}'
  task=$(call "$sid" execute_task '{"task_description":"instructions"}' \
    | grep -o 'task_[a-z0-9]\{20,\}' | head -n1)
  [ -n "$task" ] || { echo "execute_task returned no task id" >&2; exit 1; }
fi
for _ in 1 2 3 4 5; do letta_call; done

callgrind_control -i on "$server" >/dev/null 2>&1
for _ in $(seq "$calls"); do letta_call; done
callgrind_control -i off "$server" >/dev/null 2>&1
kill -TERM "$server"
wait "$server" 2>/dev/null || true

total=$(callgrind_annotate "$work/cg.out" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
echo "$target: $calls calls${stream:+ ($stream)}, $total instructions, $((total / calls)) per call"
