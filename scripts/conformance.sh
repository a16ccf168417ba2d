#!/usr/bin/env bash
# Runs the official MCP conformance suite against Portico and prints "N passed, M failed".
#
# Pinned: @modelcontextprotocol/conformance 0.1.16 and 0.2.0-alpha.12, with Node 22 from the npm
# package `node` (the machines have Node 20; the suite needs 22). Everything comes from npm.
# Server scenarios run against `conformance-server --port`; client scenarios run
# `conformance-client URL` (when that binary exists). conformance/expected-failures.yml lists what
# is known to fail, each entry with its reason; anything else failing (or a listed entry passing)
# fails this script. At the end, scripts/conformance-gateway.sh runs the server scenarios again
# through `portico serve` (its own list: conformance/gateway-expected-failures.yml).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
dir=.ci-cache/conformance
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"

if [ ! -x "$dir/node_modules/.bin/node" ] || [ ! -f "$dir/node_modules/conf20/dist/index.js" ] || [ ! -f "$dir/node_modules/conf16/dist/index.js" ]; then
  mkdir -p "$dir"
  npm install --prefix "$dir" --no-audit --no-fund --silent \
    node@22.23.3 \
    conf16@npm:@modelcontextprotocol/conformance@0.1.16 \
    conf20@npm:@modelcontextprotocol/conformance@0.2.0-alpha.12 || { echo "conformance: npm install failed"; exit 1; }
fi
node="$root/$dir/node_modules/.bin/node"
suite16="$root/$dir/node_modules/conf16/dist/index.js"
suite20="$root/$dir/node_modules/conf20/dist/index.js"
expected="$root/conformance/expected-failures.yml"
[ -f "$expected" ] || { echo "conformance: missing $expected"; exit 1; }

cargo build -q -p portico-conformance --bins || exit 1
bin="$CARGO_TARGET_DIR/debug"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin/conformance-server" --port "$port" 2>"$dir/server.log" &
server_pid=$!
trap 'kill $server_pid 2>/dev/null; wait $server_pid 2>/dev/null' EXIT
for _ in $(seq 1 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done
url="http://localhost:$port/mcp"

passed=0; failed=0; checks_passed=0; checks_failed=0; status=0
out_dir="$dir/results"; rm -rf "$out_dir"; mkdir -p "$out_dir"

# run LABEL ARGS...: runs the suite, counts scenario lines (✓/✗) and the check totals.
run() {
  local label=$1; shift
  local log="$out_dir/${label//\//_}.log"
  "$node" "$@" --expected-failures "$expected" >"$log" 2>&1
  local code=$?
  local p f totals
  if grep -q '^=== SUMMARY ===' "$log" || grep -q '^[✓✗] ' "$log"; then
    # A suite run: one ✓/✗ line per scenario, then "Total: N passed, M failed" checks.
    p=$(grep -c '^✓' "$log"); f=$(grep -c '^✗' "$log")
    totals=$(grep -Eo 'Total: [0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
    if [ -n "$totals" ]; then
      checks_passed=$((checks_passed + $(echo "$totals" | awk '{print $2}')))
      checks_failed=$((checks_failed + $(echo "$totals" | awk '{print $4}')))
    fi
  else
    # One scenario: "Passed: N/T, M failed, W warnings" and an overall verdict.
    totals=$(grep -Eo 'Passed: [0-9]+/[0-9]+, [0-9]+ failed, [0-9]+ warnings' "$log" | tail -1)
    if grep -q 'OVERALL: PASSED' "$log"; then p=1; f=0; else p=0; f=1; fi
    if [ -n "$totals" ]; then
      checks_passed=$((checks_passed + $(echo "$totals" | sed -E 's#Passed: ([0-9]+)/.*#\1#')))
      checks_failed=$((checks_failed + $(echo "$totals" | sed -E 's#.*, ([0-9]+) failed.*#\1#')))
    fi
  fi
  passed=$((passed + p)); failed=$((failed + f))
  printf '%-44s %3d scenarios passed, %3d failed  (%s)%s\n' "$label" "$p" "$f" "${totals:-no totals}" "$([ $code -ne 0 ] && echo '  UNEXPECTED')"
  if [ $code -ne 0 ]; then
    status=1
    grep -E '^✗|OVERALL' "$log" | sed 's/^/    /'
  fi
}

echo "== server scenarios ($url)"
run server-0.1.16-all            "$suite16" server --url "$url" --suite all
run server-0.2.0-req-2025-11-25  "$suite20" server --url "$url" --requirements 2025-11-25
run server-0.2.0-req-2026-07-28  "$suite20" server --url "$url" --requirements 2026-07-28
run server-0.2.0-all             "$suite20" server --url "$url" --suite all

if [ -x "$bin/conformance-client" ]; then
  echo "== client scenarios"
  for suite in 16 20; do
    s=$([ $suite = 16 ] && echo "$suite16" || echo "$suite20")
    for scenario in $("$node" "$s" list --client 2>/dev/null | sed -n 's/^  - \([^ ]*\).*/\1/p'); do
      run "client-0.$([ $suite = 16 ] && echo 1.16 || echo 2.0)-$scenario" "$s" client --command "$bin/conformance-client" --scenario "$scenario"
    done
  done
  # The frozen sets a revision requires, as the suite scores them (in parallel).
  run client-0.2.0-req-2025-11-25 "$suite20" client --command "$bin/conformance-client" --requirements 2025-11-25
  run client-0.2.0-req-2026-07-28 "$suite20" client --command "$bin/conformance-client" --requirements 2026-07-28
else
  echo "== client scenarios: skipped (no conformance-client binary yet)"
fi

echo
echo "conformance: $passed passed, $failed failed (scenario runs; checks: $checks_passed passed, $checks_failed failed)"

# The same server scenarios through the gateway (`portico serve --http`, one stdio upstream).
kill $server_pid 2>/dev/null; wait $server_pid 2>/dev/null
echo
bash scripts/conformance-gateway.sh || status=1
exit $status
