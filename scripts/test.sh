#!/usr/bin/env bash
# The test command: every crate, every feature. Interop tests use the peers that
# scripts/install-interop.sh installs (and fail when PORTICO_REQUIRE_INTEROP=1 and they are missing).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .ci-cache/npm/node_modules/.bin/mcp-server-everything ] || bash scripts/install-interop.sh || true
cargo test --workspace --all-features
