#!/usr/bin/env bash
# Installs the real MCP peers the interop tests talk to, pinned, under .ci-cache/npm.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=.ci-cache/npm
mkdir -p "$dir"
if [ ! -x "$dir/node_modules/.bin/mcp-server-everything" ]; then
  npm install --prefix "$dir" --no-audit --no-fund --silent \
    @modelcontextprotocol/server-everything@2026.8.31
fi
echo "server-everything: $("$dir/node_modules/.bin/mcp-server-everything" --version 2>/dev/null || echo installed)"
# The OpenID provider of the resource-server tests.
bash scripts/install-oidc.sh
# The official Python and TypeScript SDKs the gateway's interop tests use (crates/portico-cli/tests/interop.rs).
bash scripts/install-host-interop.sh
