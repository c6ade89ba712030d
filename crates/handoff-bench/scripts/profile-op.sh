#!/usr/bin/env bash
# Instructions per request of one MCP request sent again and again on one keep-alive
# connection, Handoff against the floor, counted with callgrind (reproducible where CPU time
# is not; see docs/benchmarks/profiling.md).
#
#   crates/handoff-bench/scripts/profile-op.sh [ping|get_task_status|tools/list] [requests]
#
# Prints instructions and allocations per request for both servers; the callgrind files stay
# in target/profile-op/ for `callgrind_annotate --inclusive=yes FILE | head -60`. Valgrind runs
# the servers ~50x slower: 2,000 requests take about a minute each. HANDOFF_BIN picks the
# binary (default target/release/handoff); PROFILE_ERA=stateless sends 2026-07-28 requests with
# no session. Needs valgrind and python3.
set -euo pipefail

op=${1:-ping}
count=${2:-2000}
bin=${HANDOFF_BIN:-target/release/handoff}
here=$(cd "$(dirname "$0")" && pwd)
out=target/profile-op
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
server=
trap '[ -z "$server" ] || kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT

# Runs `bin args…` under callgrind, drives it with profile-op.py, prints per-request figures.
profile() {
  local name=$1 marker=$2; shift 2
  local file="$out/callgrind.out.${op//\//-}${PROFILE_ERA:+.$PROFILE_ERA}.$name" port=
  valgrind --tool=callgrind --instr-atstart=no "--callgrind-out-file=$file" "$@" \
    2>"$work/$name.err" &
  server=$!
  for _ in $(seq 600); do
    port=$(grep "$marker" "$work/$name.err" | grep -o 'http://127.0.0.1:[0-9]*' | head -n1 \
      | sed 's/.*://' || true)
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || { echo "$name printed no address:" >&2; cat "$work/$name.err" >&2; exit 1; }
  mkfifo "$work/$name.go"
  python3 "$here/profile-op.py" "$port" "$op" "$count" "$name" <"$work/$name.go" >"$work/$name.out" &
  exec 3>"$work/$name.go"
  until grep -q ready "$work/$name.out"; do sleep 0.2; done
  callgrind_control -i on "$server" >/dev/null 2>&1
  echo >&3
  until grep -q done "$work/$name.out"; do sleep 0.2; done
  callgrind_control -i off "$server" >/dev/null 2>&1
  callgrind_control -d "$server" >/dev/null 2>&1
  exec 3>&-
  kill "$server"; wait "$server" 2>/dev/null || true; server=
  python3 - "$file".1 "$count" "$name" <<'PY'
import re, sys
names, calls, total, callee = {}, {}, 0, None
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r"^c?fn=\((\d+)\)(?: (.*))?", line)
    if m:
        if m.group(2):
            names[m.group(1)] = m.group(2).strip()
        callee = names.get(m.group(1)) if line.startswith("cfn") else None
    elif line.startswith("calls=") and callee:
        calls[callee] = calls.get(callee, 0) + int(line.split("=")[1].split()[0])
    elif line.startswith("summary:") or line.startswith("totals:"):
        total = int(line.split()[1])
n = int(sys.argv[2])
print(f"{sys.argv[3]:8} {total / n:10,.0f} instructions per request, "
      f"{calls.get('malloc', 0) / n:6.1f} mallocs per request")
PY
}

data="$work/data"
HANDOFF_DATA_DIR=$data HANDOFF_COMMAND_ARGV='["true"]' HANDOFF_DEFAULT_EXECUTOR=command \
  RUST_LOG=warn,handoff=info,handoff::audit=warn,rmcp=warn \
  profile handoff "handoff listening" "$bin" serve --port 0 --log-format json
profile floor "floor listening" "$bin" bench-floor
