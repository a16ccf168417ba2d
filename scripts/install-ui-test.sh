#!/usr/bin/env bash
# Installs what the web UI's browser tests (crates/portico-cli/tests/ui.rs) need:
#   - Chromium from Debian's packages (when running as root and it is missing);
#   - playwright-core, pinned by crates/portico-cli/tests/ui/package-lock.json, under
#     .ci-cache/ui. It drives that Chromium; it never downloads a browser of its own.
# Idempotent: what is installed already is left alone.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! [ -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "install-ui-test: /usr/bin/chromium is missing; as root: apt-get install chromium" >&2
  fi
fi

dir=.ci-cache/ui
src=crates/portico-cli/tests/ui
want=$(node -p "require('./$src/package.json').dependencies['playwright-core']")
have=$(node -p "require('./$dir/node_modules/playwright-core/package.json').version" 2>/dev/null || true)
if [ "$have" != "$want" ]; then
  mkdir -p "$dir"
  cp "$src/package.json" "$src/package-lock.json" "$dir/"
  (cd "$dir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --silent --ignore-scripts)
fi
echo "ui tests: playwright-core $(node -p "require('./$dir/node_modules/playwright-core/package.json').version"), $(/usr/bin/chromium --version 2>/dev/null || echo 'no chromium')"
