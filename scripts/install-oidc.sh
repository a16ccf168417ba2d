#!/usr/bin/env bash
# Installs the OpenID provider the resource-server tests (crates/portico/tests/auth_server.rs)
# run against, pinned, under .ci-cache/oidc: oidc-provider 9.13.3 and Node 22 from the npm
# package `node` (oidc-provider 9 supports Node 22 LTS and later; the machines have Node 20).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=.ci-cache/oidc
mkdir -p "$dir"
if [ ! -f "$dir/node_modules/oidc-provider/lib/index.js" ] || [ ! -x "$dir/node_modules/.bin/node" ]; then
  npm install --prefix "$dir" --no-audit --no-fund --silent \
    oidc-provider@9.13.3 node@22.23.3
fi
echo "oidc-provider: $("$dir/node_modules/.bin/node" -p "require('./$dir/node_modules/oidc-provider/package.json').version") on node $("$dir/node_modules/.bin/node" --version)"
