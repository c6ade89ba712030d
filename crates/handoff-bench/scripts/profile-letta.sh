#!/usr/bin/env bash
# Where the Letta pattern's CPU goes: one server, a fixed number of whole tool calls, each in a
# fresh session as Letta's client opens it (initialize, initialized, GET stream, tools/call
# get_task_status, DELETE), nothing else measured.
#
#   crates/handoff-bench/scripts/profile-letta.sh callgrind|perf [handoff|floor] [calls] [--no-get]
#
# callgrind: instructions per call, counted (reproducible where CPU time is not — shared
#   machines — and where `perf stat -e instructions` has no counter — most VMs). Valgrind runs
#   the server ~50x slower: 100 calls take a minute or two.
# perf: a sampled profile (`cpu-clock`, so it works without hardware counters) with frame-
#   pointer call graphs; build with frame pointers first (see docs/benchmarks/profiling.md).
#
# `handoff` is `handoff serve` with the `command` executor, as `handoff bench` runs it; `floor`
# is `handoff bench-floor`. `--no-get` leaves the stream out. HANDOFF_BIN picks the binary
# (default target/release/handoff); results stay in target/profile-letta/.
set -euo pipefail

tool=${1:?usage: $0 callgrind|perf [handoff|floor] [calls] [--no-get]}
target=${2:-handoff}
calls=${3:-100}
stream=${4:-}
bin=${HANDOFF_BIN:-target/release/handoff}
out=target/profile-letta
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
server=
trap '[ -z "$server" ] || kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT

case $target in
  handoff) args=(serve --port 0 --log-format json) ;;
  floor) args=(bench-floor) ;;
  *) echo "unknown target $target (handoff or floor)" >&2; exit 2 ;;
esac
case $tool in
  # Off until the warm-up is done; on for the counted calls only.
  callgrind) wrap=(valgrind --tool=callgrind --instr-atstart=no
                   "--callgrind-out-file=$out/callgrind.out.$target") ;;
  perf) mkfifo "$work/ctl" "$work/ack"
        wrap=(perf record -F 999 -e cpu-clock --call-graph fp -D -1
              --control "fifo:$work/ctl,$work/ack" -o "$out/perf.data.$target" --) ;;
  *) echo "unknown tool $tool (callgrind or perf)" >&2; exit 2 ;;
esac
HANDOFF_DATA_DIR=$work/data HANDOFF_COMMAND_ARGV='["true"]' HANDOFF_DEFAULT_EXECUTOR=command \
  RUST_LOG=warn,handoff=info,handoff::audit=warn,rmcp=warn \
  "${wrap[@]}" "$bin" "${args[@]}" 2>"$work/server.err" &
server=$!
for _ in $(seq 600); do
  url=$(grep -o 'http://127.0.0.1:[0-9]*/mcp' "$work/server.err" | head -n1 || true)
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { echo "no address from the server:" >&2; cat "$work/server.err" >&2; exit 1; }

json=(-sS -H 'content-type: application/json' -H 'accept: application/json, text/event-stream'
      -H 'x-agent-id: bench')

# Sets `opts` to the curl options of a request in session $1.
in_session() {
  opts=("${json[@]}" -H 'mcp-protocol-version: 2025-06-18' -H "mcp-session-id: $1")
}

# Opens a session (initialize, initialized); prints its id.
open_session() {
  local sid
  sid=$(curl "${json[@]}" -o /dev/null -D - "$url" -d '{"jsonrpc":"2.0","id":0,"method":"initialize",
    "params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}' \
    | tr -d '\r' | awk -F': ' 'tolower($1) == "mcp-session-id" { print $2 }')
  in_session "$sid"
  curl "${opts[@]}" -o /dev/null "$url" -d '{"jsonrpc":"2.0","method":"notifications/initialized"}'
  echo "$sid"
}

# tools/call in session $1: tool $2 with arguments $3; prints the reply.
call() {
  in_session "$1"
  curl "${opts[@]}" "$url" \
    -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"$2\",\"arguments\":$3}}"
}

# One whole Letta call; the stream is answered before the call is sent.
letta_call() {
  local sid get=
  sid=$(open_session)
  in_session "$sid"
  if [ "$stream" != --no-get ]; then
    : >"$work/get.h"
    curl "${opts[@]}" -o /dev/null -N -D "$work/get.h" "$url" &
    get=$!
    until grep -q '^HTTP' "$work/get.h"; do sleep 0.01; done
    grep -q '^HTTP/[0-9.]* 200' "$work/get.h" \
      || { echo "GET stream refused:" >&2; cat "$work/get.h" >&2; exit 1; }
  fi
  call "$sid" get_task_status "{\"task_id\":\"$task\"}" >/dev/null
  curl "${opts[@]}" -o /dev/null -X DELETE "$url"
  # Handoff ends the stream with the session; the floor's stays open until the client leaves.
  if [ -n "$get" ]; then kill "$get" 2>/dev/null || true; wait "$get" 2>/dev/null || true; fi
}

task=none
if [ "$target" = handoff ]; then
  task=$(call "$(open_session)" execute_task '{"task_description":"profile"}' \
    | grep -o 'task_[a-z0-9]\{20,\}' | head -n1)
  [ -n "$task" ] || { echo "execute_task returned no task id" >&2; exit 1; }
fi
for _ in 1 2 3 4 5; do letta_call; done

case $tool in
  callgrind) callgrind_control -i on "$server" >/dev/null 2>&1 ;;
  perf) echo enable >"$work/ctl"; read -r _ <"$work/ack" ;;
esac
for _ in $(seq "$calls"); do letta_call; done
case $tool in
  callgrind) callgrind_control -i off "$server" >/dev/null 2>&1 ;;
  perf) echo disable >"$work/ctl"; read -r _ <"$work/ack" ;;
esac
kill -TERM "$server"
wait "$server" 2>/dev/null || true
server=

if [ "$tool" = callgrind ]; then
  total=$(callgrind_annotate "$out/callgrind.out.$target" 2>/dev/null \
    | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
  echo "$target: $calls calls${stream:+ ($stream)}, $total instructions, $((total / calls)) per call"
  echo "functions: callgrind_annotate $out/callgrind.out.$target | head -40"
else
  echo "$target: $calls calls${stream:+ ($stream)} sampled into $out/perf.data.$target"
  echo "report: perf report -i $out/perf.data.$target --no-children --percent-limit 1"
fi
