#!/usr/bin/env bash
# Installs, pinned, the official SDKs the gateway's interop tests (crates/portico-cli/tests/interop.rs)
# use as real peers, under .ci-cache:
#   .ci-cache/py  a Python venv with the official Python SDK, mcp 2.3.0 (a server and a client),
#                 its dependencies pinned too (crates/portico-cli/tests/interop/py-requirements.txt)
#   .ci-cache/ts  the official TypeScript SDK, @modelcontextprotocol/sdk 1.32.2 (a client)
# server-everything, the other upstream, comes from scripts/install-interop.sh.
# Idempotent: a peer already installed at its pinned version is left alone.
set -euo pipefail
cd "$(dirname "$0")/.."

PY_MCP=2.3.0
TS_SDK=1.32.2

py=.ci-cache/py
if ! "$py/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$PY_MCP')" 2>/dev/null; then
  python=$(command -v python3.11 || command -v python3)
  rm -rf "$py"
  "$python" -m venv "$py"
  "$py/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
    -c crates/portico-cli/tests/interop/py-requirements.txt "mcp==$PY_MCP"
fi
echo "python sdk: mcp $("$py/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))') on $("$py/bin/python" --version)"

ts=.ci-cache/ts
pkg="$ts/node_modules/@modelcontextprotocol/sdk/package.json"
if [ "$(node -p "require('./$pkg').version" 2>/dev/null)" != "$TS_SDK" ]; then
  mkdir -p "$ts"
  npm install --prefix "$ts" --no-audit --no-fund --silent --save-exact "@modelcontextprotocol/sdk@$TS_SDK"
fi
echo "typescript sdk: @modelcontextprotocol/sdk $(node -p "require('./$pkg').version") on node $(node --version)"
