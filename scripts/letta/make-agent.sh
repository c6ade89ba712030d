#!/usr/bin/env bash
# Creates a Letta agent that runs on the scripted model, on the server scripts/letta/up.sh
# started, and prints its id (only that, on stdout).
#
#   scripts/letta/make-agent.sh [NAME]            # agent id on stdout
#   scripts/letta/make-agent.sh --verify [NAME]   # also checks an agent turn (sync and async),
#                                                 # the message list and the block calls Handoff
#                                                 # uses, as the reference describes them
#
# The agent is Letta's default type (letta_v1_agent): it answers with plain assistant text
# (no send_message tool; tool_choice "auto"), which is what the fake's default reply is.
# Needs curl and python3 (for JSON).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)/tests/letta
verify=false
if [ "${1:-}" = --verify ]; then
  verify=true
  shift
fi
name=${1:-handoff-test-$(date +%s)-$$}

[ -f "$root/run/env" ] || { echo "make-agent: no $root/run/env; run scripts/letta/up.sh first" >&2; exit 1; }
# shellcheck disable=SC1091
. "$root/run/env"
: "${LETTA_URL:?}"

# call METHOD PATH [JSON]: prints the body; fails unless the status is 2xx.
call() {
  local method=$1 path=$2 body=${3:-} out status
  out=$(mktemp)
  status=$(curl -s -m 120 -o "$out" -w '%{http_code}' -X "$method" "$LETTA_URL$path" \
    -H 'content-type: application/json' ${body:+--data "$body"})
  cat "$out"
  rm -f "$out"
  case $status in 2*) ;; *) echo "make-agent: $method $path -> $status" >&2; return 1 ;; esac
}
# status METHOD PATH [JSON]: prints only the HTTP status.
status() {
  local method=$1 path=$2 body=${3:-}
  curl -s -m 120 -o /dev/null -w '%{http_code}' -X "$method" "$LETTA_URL$path" \
    -H 'content-type: application/json' ${body:+--data "$body"}
}
# field EXPR: evaluates a Python expression over the JSON on stdin (bound to `j`).
field() { python3 -c "import json, sys; j = json.load(sys.stdin); print($1)"; }

agent_json=$(python3 -c 'import json, sys; print(json.dumps({
    "name": sys.argv[1],
    "model": "openai-proxy/gpt-4o-mini",
    "embedding": "openai/text-embedding-3-small",
    "include_base_tools": True,
}))' "$name")
agent_id=$(call POST /v1/agents/ "$agent_json" | field 'j["id"]')

if [ "$verify" = true ]; then
  check() { echo "verify: $*" >&2; }
  expect() { # expect WANT GOT WHAT
    [ "$1" = "$2" ] || { echo "verify FAILED: $3: want $1, got $2" >&2; exit 1; }
    check "$3: $2"
  }

  # Synchronous turn, system role.
  reply=$(call POST "/v1/agents/$agent_id/messages" \
    '{"messages":[{"role":"system","content":"HANDOFF-VERIFY-SYNC: task t1 finished"}]}')
  expect end_turn "$(field 'j["stop_reason"]["stop_reason"]' <<<"$reply")" "sync turn stop reason"
  expect "Noted." "$(field '[m["content"] for m in j["messages"] if m["message_type"] == "assistant_message"][0]' <<<"$reply")" \
    "sync turn assistant reply"

  # Asynchronous turn: a run, polled until it completes.
  run_id=$(call POST "/v1/agents/$agent_id/messages/async" \
    '{"messages":[{"role":"system","content":[{"type":"text","text":"HANDOFF-VERIFY-ASYNC: task t2 finished"}]}]}' |
    field 'j["id"]')
  for _ in $(seq 120); do
    run_status=$(call GET "/v1/runs/$run_id" | field 'j["status"]')
    case $run_status in completed | failed | cancelled) break ;; esac
    sleep 0.5
  done
  expect completed "$run_status" "async run $run_id"

  # Both notifications are in the agent's history.
  listed=$(call GET "/v1/agents/$agent_id/messages?limit=50")
  for marker in HANDOFF-VERIFY-SYNC HANDOFF-VERIFY-ASYNC; do
    expect True "$(field "any('$marker' in json.dumps(m) for m in j)" <<<"$listed")" "message list has $marker"
  done

  # Blocks: create, attach (twice: 200), same label again (409), update (limit not enforced),
  # read after detach, detach twice (404), delete twice (404).
  block=$(call POST /v1/blocks/ '{"label":"handoff_task_verify","description":"verify","value":"v1","limit":10,"metadata":{"by":"make-agent"}}')
  block_id=$(field 'j["id"]' <<<"$block")
  expect 200 "$(status PATCH "/v1/agents/$agent_id/core-memory/blocks/attach/$block_id")" "attach"
  expect 200 "$(status PATCH "/v1/agents/$agent_id/core-memory/blocks/attach/$block_id")" "attach again"
  twin_id=$(call POST /v1/blocks/ '{"label":"handoff_task_verify","value":"twin"}' | field 'j["id"]')
  expect 409 "$(status PATCH "/v1/agents/$agent_id/core-memory/blocks/attach/$twin_id")" "attach a second block with the same label"
  long=$(printf 'x%.0s' $(seq 50))
  expect 200 "$(status PATCH "/v1/blocks/$block_id" "{\"value\":\"$long\"}")" "update past limit"
  expect 50 "$(call GET "/v1/blocks/$block_id" | field 'len(j["value"])')" "value length after update (limit 10 not enforced)"
  expect 200 "$(status PATCH "/v1/agents/$agent_id/core-memory/blocks/handoff_task_verify" '{"value":"by label"}')" "update by label"
  expect True "$(call GET "/v1/agents/$agent_id" | field "any(b['id'] == '$block_id' for b in j['memory']['blocks'])")" "agent lists the block"
  expect 200 "$(status PATCH "/v1/agents/$agent_id/core-memory/blocks/detach/$block_id")" "detach"
  expect "by label" "$(call GET "/v1/blocks/$block_id" | field 'j["value"]')" "read by id after detach"
  expect 404 "$(status PATCH "/v1/agents/$agent_id/core-memory/blocks/detach/$block_id")" "detach again"
  expect 200 "$(status DELETE "/v1/blocks/$block_id")" "delete"
  expect 404 "$(status DELETE "/v1/blocks/$block_id")" "delete again"
  expect 404 "$(status GET "/v1/blocks/$block_id")" "read deleted block"
  expect 200 "$(status DELETE "/v1/blocks/$twin_id")" "delete the twin"
  expect 422 "$(status POST /v1/blocks/ '{"value":"no label"}')" "create without label"
  expect 404 "$(status GET /v1/agents/agent-00000000-0000-4000-8000-000000000000)" "unknown agent"

  # Archival memory goes through the fake's embeddings endpoint.
  expect 1 "$(call POST "/v1/agents/$agent_id/archival-memory" '{"text":"handoff verify passage"}' | field 'len(j)')" \
    "archival insert (embeddings)"
  check "all good"
fi

echo "$agent_id"
