#!/usr/bin/env bash
# Runs one tier of the test suite: `scripts/test-tier.sh NAME`, `--list` for the names, `--check`
# to prove every end-to-end test is in exactly one, `--all-binary` for the end-to-end binary.
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
# The Claude Code and Codex sessions, and one OpenCode task pair through the model gateway, run
# in the `scale` tier's process once its own tests are done: that tier ends minutes before
# `agents`. Run after the
# several-instance tests, never beside them, they shorten the longest tier without adding a
# process or load to any test.
after_scale=(suite::agent_homes suite::executors::claude_code suite::executors::codex
  suite::completion::claude_code suite::completion::codex suite::gateway_agents)

# The `crates` tier's two selections: every other package, and the `handoff` package's targets
# but its end-to-end binary.
crates_rest=(--workspace --exclude handoff)
crates_handoff=(-p handoff --bins --test bench --test startup_order)

# The end-to-end binary `all`. The end-to-end tiers run it directly, not through `cargo test`,
# so none waits on cargo's lock while `crates` builds the variants its selections need (a
# selection of other packages than the whole workspace unifies features differently).
# scripts/test.sh finds it once, after the build, and passes it in HANDOFF_TEST_ALL_BIN.
all_binary() {
  if [ -n "${HANDOFF_TEST_ALL_BIN:-}" ]; then
    echo "$HANDOFF_TEST_ALL_BIN"
    return
  fi
  cargo test -q -p handoff --test all --no-run --message-format=json 2>/dev/null \
    | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1
}

# Runs the end-to-end binary with `$@` (libtest's filters and flags) where `cargo test` would:
# in the package's directory.
run_all() {
  local bin
  bin=$(all_binary)
  [ -x "$bin" ] || { echo "no end-to-end test binary (cargo test -p handoff --test all --no-run)" >&2; return 1; }
  (cd crates/handoff && "$bin" "$@")
}

skips() {
  local prefix
  for prefix in "$@"; do printf -- '--skip\n%s\n' "$prefix"; done
}

tier() {
  case "$1" in
    # Real coding agents (OpenCode, Claude Code, Codex, ACP adapters) and real MCP clients.
    agents)
      mapfile -t skip < <(skips "${services[@]}" "${scale[@]}" "${after_scale[@]}")
      run_all "${skip[@]}"
      ;;
    # The real Letta and Synapse.
    services)
      run_all "${services[@]}"
      ;;
    # Several instances on the shared PostgreSQL, faults included; then Claude Code and Codex.
    scale)
      local rc=0
      run_all "${scale[@]}" --skip suite::scale_letta || rc=$?
      run_all "${after_scale[@]}" || rc=$?
      return "$rc"
      ;;
    # Every other crate's tests, and the rest of the `handoff` crate's.
    crates)
      # Both run whatever the first found: one failing crate must not hide another's result.
      local rc=0
      cargo test --no-fail-fast "${crates_rest[@]}" || rc=$?
      cargo test --no-fail-fast "${crates_handoff[@]}" || rc=$?
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
  all=$(run_all --list 2>/dev/null | grep -c ': test$')
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
      run_all "${skip[@]}" --list 2>/dev/null
      ;;
    services) run_all "${services[@]}" --list 2>/dev/null ;;
    scale)
      run_all "${scale[@]}" --skip suite::scale_letta --list 2>/dev/null
      run_all "${after_scale[@]}" --list 2>/dev/null
      ;;
  esac
}

case "${1:-}" in
  --list) echo "agents services scale crates" ;;
  --all-binary) all_binary ;;
  --check) every_test_is_in_one_tier ;;
  "") echo "usage: scripts/test-tier.sh NAME | --list | --check | --all-binary" >&2; exit 2 ;;
  *) tier "$1" ;;
esac
