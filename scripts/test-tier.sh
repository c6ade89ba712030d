#!/usr/bin/env bash
# Runs one tier of the test suite: `scripts/test-tier.sh NAME`, or `--list` for the names.
# scripts/test.sh runs every tier at once, each in its own process: the end-to-end tiers spend
# much of their time waiting on agents, Letta, Synapse and leases, so one tier's waits are
# another's CPU. The tiers split the end-to-end binary `all` by module prefix; together with
# `crates` they run every test exactly once (`every_test_is_in_one_tier` below checks it).
# Services: `services` needs HANDOFF_TEST_LETTA_URL and HANDOFF_TEST_SYNAPSE_URL (+ _SECRET_FILE),
# `scale` HANDOFF_TEST_DATABASE_URL (`scripts/*/up.sh` print them).
set -euo pipefail
cd "$(dirname "$0")/.."

# Module prefixes of the end-to-end suite (crates/handoff/tests/suite/) per tier.
services=(suite::letta suite::matrix suite::synapse suite::scale_letta)
scale=(suite::scale suite::postgres suite::pg_cluster)
# The Claude Code and Codex sessions run in the `scale` tier's process once its own tests are
# done: that tier ends minutes before `agents`, and these start no OpenCode. Run after the
# several-instance tests, never beside them, they shorten the longest tier without adding a
# process or load to any test.
after_scale=(suite::agent_homes suite::executors::claude_code suite::executors::codex
  suite::completion::claude_code suite::completion::codex)

skips() {
  local prefix
  for prefix in "$@"; do printf -- '--skip\n%s\n' "$prefix"; done
}

tier() {
  case "$1" in
    # Real coding agents (OpenCode, Claude Code, Codex, ACP adapters) and real MCP clients.
    agents)
      mapfile -t skip < <(skips "${services[@]}" "${scale[@]}" "${after_scale[@]}")
      cargo test -p handoff --test all -- "${skip[@]}"
      ;;
    # The real Letta and Synapse.
    services)
      cargo test -p handoff --test all -- "${services[@]}"
      ;;
    # Several instances on the shared PostgreSQL, faults included; then Claude Code and Codex.
    scale)
      local rc=0
      cargo test -p handoff --test all -- "${scale[@]}" --skip suite::scale_letta || rc=$?
      cargo test -p handoff --test all -- "${after_scale[@]}" || rc=$?
      return "$rc"
      ;;
    # Every other crate's tests, and the rest of the `handoff` crate's.
    crates)
      # Both run whatever the first found: one failing crate must not hide another's result.
      local rc=0
      cargo test --no-fail-fast --workspace --exclude handoff || rc=$?
      cargo test --no-fail-fast -p handoff --bins --test bench --test startup_order || rc=$?
      return "$rc"
      ;;
    *)
      echo "unknown tier '$1'; tiers: agents services scale crates" >&2
      return 2
      ;;
  esac
}

every_test_is_in_one_tier() {
  local all listed
  all=$(cargo test -q -p handoff --test all -- --list 2>/dev/null | grep -c ': test$')
  listed=0
  for name in agents services scale; do
    listed=$((listed + $(tier_list "$name" | grep -c ': test$')))
  done
  if [ "$all" != "$listed" ]; then
    echo "the end-to-end tiers list $listed tests, the suite has $all" >&2
    return 1
  fi
}

# The tests a tier would run (its filters, with --list).
tier_list() {
  case "$1" in
    agents)
      mapfile -t skip < <(skips "${services[@]}" "${scale[@]}" "${after_scale[@]}")
      cargo test -q -p handoff --test all -- "${skip[@]}" --list 2>/dev/null
      ;;
    services) cargo test -q -p handoff --test all -- "${services[@]}" --list 2>/dev/null ;;
    scale)
      cargo test -q -p handoff --test all -- "${scale[@]}" --skip suite::scale_letta --list 2>/dev/null
      cargo test -q -p handoff --test all -- "${after_scale[@]}" --list 2>/dev/null
      ;;
  esac
}

case "${1:-}" in
  --list) echo "agents services scale crates" ;;
  --check) every_test_is_in_one_tier ;;
  "") echo "usage: scripts/test-tier.sh NAME | --list | --check" >&2; exit 2 ;;
  *) tier "$1" ;;
esac
