#!/usr/bin/env bash
# The test command: every crate, every feature. Interop tests use the peers that
# scripts/install-interop.sh installs (server-everything, oidc-provider through
# scripts/install-oidc.sh, the Python and TypeScript SDKs through scripts/install-host-interop.sh),
# and fail when PORTICO_REQUIRE_INTEROP=1 and they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
{ [ -x .ci-cache/npm/node_modules/.bin/mcp-server-everything ] && [ -f .ci-cache/oidc/node_modules/oidc-provider/lib/index.js ] \
  && [ -x .ci-cache/py/bin/python ] && [ -d .ci-cache/ts/node_modules/@modelcontextprotocol/sdk ]; } \
  || bash scripts/install-interop.sh || true
# The web UI's browser tests need Chromium and playwright-core (scripts/install-ui-test.sh);
# without them they skip unless PORTICO_REQUIRE_UI=1.
[ -f .ci-cache/ui/node_modules/playwright-core/package.json ] && [ -x /usr/bin/chromium ] \
  || bash scripts/install-ui-test.sh || true
cargo test --workspace --all-features
